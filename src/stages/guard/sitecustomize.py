"""assay's import guard: the test runner and the standard library cannot be
shadowed from the tree under test (docs/security.md, "The runner out of the
patch's reach").

Python puts the tree (the script's directory, or the working directory for
`-m` and `-c`) first on sys.path, so a `unittest/` package or a `pytest.py`
at the tree's root would be imported in place of the real one. This file is
first on PYTHONPATH, read-only, and imported by `site` at startup, before the
tree is on sys.path. It puts a finder at the front of sys.meta_path that
resolves every top-level name of the standard library
(sys.stdlib_module_names, or before 3.10 what the interpreter's library
directories hold) and of the test framework only from the
directories on sys.path now, outside the tree: the interpreter's own, its
site-packages, a venv's. A guarded name found nowhere else is
ModuleNotFoundError; it never falls back to the tree. Submodules follow
their package's own __path__.

Then the environment's own sitecustomize (the next one on those
directories), if any, runs as it would have.
"""

import sys

# Replaced by assay with the tree's absolute path (a JSON string literal).
_TREE = "/assay/tree"

# Top-level modules of the test framework itself.
_FRAMEWORK = ("pytest", "_pytest", "pluggy", "iniconfig")


def _beneath(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def _trusted_paths(tree):
    import os

    here = os.path.dirname(os.path.realpath(__file__))
    tree = os.path.realpath(tree)
    out = []
    for entry in sys.path:
        if not isinstance(entry, str) or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if real == here or _beneath(real, tree):
            continue
        out.append(entry)
    return out


def _stdlib_names():
    """The standard library's top-level names where Python does not list
    them (before 3.10): the built-in modules and what the interpreter's
    library directories hold (its tests and site-packages left out)."""
    import os
    import sysconfig

    names = set(sys.builtin_module_names)
    paths = sysconfig.get_paths()
    dirs = {paths.get("stdlib"), paths.get("platstdlib")}
    dirs |= {os.path.join(d, "lib-dynload") for d in list(dirs) if d}
    for d in dirs:
        try:
            entries = os.listdir(d)
        except (OSError, TypeError):
            continue
        for entry in entries:
            stem = entry.split(".", 1)[0]
            if entry.endswith((".py", ".so")) or (
                "." not in entry and os.path.isfile(os.path.join(d, entry, "__init__.py"))
            ):
                names.add(stem)
    names.difference_update(("test", "site-packages", "dist-packages"))
    return names


def _install(trusted):
    from importlib.machinery import BuiltinImporter, FrozenImporter, PathFinder

    names = getattr(sys, "stdlib_module_names", None)
    if names is None:
        names = _stdlib_names()
    guarded = frozenset(names).union(_FRAMEWORK)

    class AssayImportGuard:
        """Finds the standard library and the test framework outside the
        tree, or not at all."""

        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if path is not None or name not in guarded:
                return None
            for finder in (BuiltinImporter, FrozenImporter):
                spec = finder.find_spec(name)
                if spec is not None:
                    return spec
            spec = PathFinder.find_spec(name, trusted)
            if spec is None:
                raise ModuleNotFoundError(
                    "No module named %r (assay's import guard: the standard "
                    "library and the test framework are never imported from "
                    "the tree)" % name,
                    name=name,
                )
            return spec

        @classmethod
        def invalidate_caches(cls):
            pass

    sys.meta_path.insert(0, AssayImportGuard)


def _chain(trusted):
    # Not importlib.util: it would import half the standard library at every
    # interpreter start.
    from _frozen_importlib import module_from_spec
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("sitecustomize", trusted)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


# Python 2 and 3 before 3.4 lack the finders used here: unguarded there.
if sys.version_info >= (3, 4):
    _trusted = _trusted_paths(_TREE)
    _install(_trusted)
    _chain(_trusted)
