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

Before either, it installs an audit hook (sys.addaudithook: it cannot be
removed) that reports tampering with the runner as the tree's code does it
(docs/security.md, "Tampering with the runner is evidence"): source or code
objects of a hidden test file that are not the file's bytes (refused), the
runner's classes and functions changed (checked after each test, in
unittest's TestResult.stopTest and pytest's runtestprotocol, which the hook
wraps, and at exit), a runner method set on a result or test object or
pytest's hooks replaced on config.hook, sys.settrace /
sys.setprofile, ctypes or cffi loaded under the tree's code, and a Python
started from the run that would not load this file (-I, -E, -S, a
PYTHONPATH without it). Each finding is written, the
moment it happens and before the action takes effect, as one line
(_MARK, the event, a tab, the detail) to a private duplicate of
ASSAY_AUDIT_FD (the stderr the test command's shell was started with: the
output pipe assay drains, in which nothing once written can be taken
back), or of stderr without it. A finding the channel can no longer carry
(the descriptor closed or replaced) refuses the action instead.

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


# What starts a finding's line on the run's output (assay reads it back).
_MARK = "[assay-audit] "

# Names of the runner's modules: a change to their classes or functions made
# by the tree's code is a finding. unittest.mock is the tests' own tool.
_RUNNER = ("unittest", "_pytest", "pytest", "pluggy")

# Modules that reach raw memory.
_NATIVE = frozenset(("ctypes", "_ctypes", "cffi", "_cffi_backend"))


def _audit(tree, hidden):
    """Installs the audit hook. `hidden` holds the hidden test files' paths
    relative to `tree` (the run's ASSAY_HIDDEN, one a line: json would
    cost 6 ms of every interpreter's start)."""
    import builtins
    import os

    # The builtins the hook calls, bound now: the tree's code could replace
    # them in the builtins module, and a nested function's free names are
    # looked up there at each call.
    (any, bytes, bytearray, callable, classmethod, compile, dict, getattr, isinstance, len,
     list, map, memoryview, open, property, set, sorted, staticmethod, str, tuple, type,
     vars) = (
        builtins.__dict__[n]
        for n in ("any bytes bytearray callable classmethod compile dict getattr isinstance "
                  "len list map memoryview open property set sorted staticmethod str tuple "
                  "type vars").split()
    )
    import gc
    from itertools import compress, repeat
    from operator import is_not
    from types import FunctionType, MappingProxyType as proxy
    mark, runner_roots, native, rewrite_only = _MARK, _RUNNER, _NATIVE, _rewrite_only
    root = os.path.realpath(tree).rstrip("/") + "/"
    hidden = frozenset(os.path.join(root, h) for h in hidden if h)
    # The channel assay's shell opened before the command (stderr as it
    # started: the output pipe assay drains), else this stderr (a child
    # started without it).
    fd, ident = -1, None
    for given in (os.environ.get("ASSAY_AUDIT_FD"), "2"):
        try:
            fd = os.dup(int(given))
            stat = os.fstat(fd)
            ident = (stat.st_dev, stat.st_ino)
            break
        except (OSError, TypeError, ValueError):
            continue

    # Everything the hook uses is bound here, as default arguments or
    # closed-over locals: a module attribute (os.write) could be replaced
    # by the tree's code, unaudited; a function's __defaults__ cannot.
    said = set()

    def say(event, detail, _write=os.write, _fstat=os.fstat, _fd=fd, _ident=ident):
        if (event, detail) in said:
            return
        said.add((event, detail))
        line = "\n%s%s\t%s\n" % (mark, event, " ".join(str(detail).split()))
        data = line.encode("utf-8", "replace")
        try:
            now = _fstat(_fd)
            if (now.st_dev, now.st_ino) != _ident:
                raise OSError("replaced")
            while data:
                data = data[_write(_fd, data) :]
        except OSError:
            # The channel is gone: what it cannot report does not happen.
            raise RuntimeError("assay audit: refused %s (its channel is gone)" % event)

    def in_tree(_getframe=sys._getframe, _root=root):
        """The first frame of the tree's code on the stack, if any."""
        frame = _getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith(_root):
                return "%s:%d" % (name[len(_root) :], frame.f_lineno)
            frame = frame.f_back
        return None

    def rel(path, _root=root):
        return path[len(_root) :] if path.startswith(_root) else path

    def absolute(path, _join=os.path.join, _getcwd=os.getcwd, _norm=os.path.normpath):
        if not isinstance(path, str):
            try:
                path = os.fsdecode(path)
            except Exception:
                return ""
        if path.startswith("<"):
            return path
        return _norm(_join(_getcwd(), path))

    truth = {}  # hidden path -> its bytes on disk (protected: they cannot change)
    # The last ASTs compiled: CPython's `compile` event names no file for an
    # AST, so whether one is pytest's rewriting of a hidden file is decided
    # when its code object runs (pytest compiles, then runs at once).
    recent = []
    busy = [False]

    def bytes_of(path, _open=open):
        if path not in truth:
            try:
                with _open(path, "rb") as fh:
                    truth[path] = fh.read()
            except OSError:
                truth[path] = None
        return truth[path]

    def same_source(source, data):
        """Whether `source` (what `compile` got: str source reaches the
        event as UTF-8) is the file's `data`: the bytes, or the text as
        text mode reads it (`exec(open(f).read())`: newlines made `\\n`,
        maybe decoded as Latin-1). None for an AST."""
        if isinstance(source, str):
            source = source.encode("utf-8", "surrogateescape")
        elif isinstance(source, (bytes, bytearray, memoryview)):
            source = bytes(source)
        else:
            return None
        if source == data:
            return True

        def lines(raw):
            return raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

        source = lines(source)
        return source == lines(data) or source == lines(data.decode("latin-1").encode("utf-8"))

    def compiled(source, path, _compile=compile):
        busy[0] = True
        try:
            return _compile(source, path, "exec", dont_inherit=True)
        except Exception:
            return None
        finally:
            busy[0] = False

    def check_compile(source, path):
        data = bytes_of(path)
        if data is None or same_source(source, data) is not False:
            return
        say("compile", "source of the hidden test file %s differs from its bytes" % rel(path))
        raise RuntimeError("assay audit: refused to compile a changed %s" % rel(path))

    def check_exec(code, path):
        data = bytes_of(path)
        if data is None or code == compiled(data, path):
            return
        if any(code == compiled(a, path) and rewrite_only(a, data) for a in recent):
            return
        say("exec", "code of the hidden test file %s is not compiled from its bytes" % rel(path))
        raise RuntimeError("assay audit: refused to run changed code of %s" % rel(path))

    runner_pending = []
    taps = []  # the checkpoints: what they hold is the hook's
    snapshots = []  # (owner name, owner, {attr: value} of callables, len(vars(owner)))
    classes = []  # the runner's classes, whose objects verify() looks at too
    class_set = set()
    changed = set()

    def runner_name(name):
        if name == "unittest.mock" or name.startswith("unittest.mock."):
            return False
        return name.split(".", 1)[0] in runner_roots

    def callables(ns):
        return {
            k: v
            for k, v in list(ns.items())
            if callable(v) or isinstance(v, (classmethod, staticmethod, property))
        }

    def snapshot(_busy=busy):
        was, _busy[0] = _busy[0], True
        try:
            take()
        finally:
            _busy[0] = was

    def take(_modules=sys.modules):
        for name in list(runner_pending):
            module = _modules.get(name)
            spec = getattr(module, "__spec__", None)
            if module is None or getattr(spec, "_initializing", False):
                continue
            runner_pending.remove(name)
            if "." not in name:
                path = getattr(module, "__file__", None)
                if isinstance(path, str):
                    runner_dirs.append(os.path.dirname(os.path.realpath(path)) + "/")
            if name == "unittest.result":
                tap(getattr(module, "TestResult", None))
            elif name == "_pytest.runner":
                tap_pytest(module)
            own, start = {}, len(snapshots)
            for k, v in list(vars(module).items()):
                if getattr(v, "__module__", None) != name:
                    continue
                if isinstance(v, type):
                    ns = vars(v)
                    snapshots.append(("%s.%s" % (name, k), v, callables(ns), len(ns)))
                    classes.append(v)
                    class_set.add(v)
                elif callable(v):
                    own[k] = v
            snapshots.append((name, module, own, -1))
            taken_from_tree(snapshots[start:])

    def taken_from_tree(snaps):
        """The runner is taken at the first import or exec after it loaded:
        what the tree's code set on it before then (right after its own
        `import unittest`) is its code, compiled from a file of the tree."""
        for name, _, was, _ in snaps:
            for k, v in was.items():
                v = v.fget if isinstance(v, property) else v
                v = v.__func__ if isinstance(v, (classmethod, staticmethod)) else v
                if isinstance(v, FunctionType) and v.__code__.co_filename.startswith(root):
                    where = "%s.%s" % (name, k)
                    changed.add(where)
                    say("runner.changed", "%s replaced by %s before the guard took it" % (
                        where, rel(v.__code__.co_filename)))

    def flatten(snaps):
        """`snaps` laid out for one pass at C speed at each checkpoint:
        each entry's namespace, name and value; the classes' namespaces
        and sizes."""
        spaces, keys, values, dicts, sizes = [], [], [], [], []
        for _, owner, was, size in snaps:
            ns = vars(owner)
            if size < 0:
                ns = proxy(ns)
            else:
                dicts.append(ns)
                sizes.append(size)
            spaces.extend([ns] * len(was))
            keys.extend(was)
            values.extend(was.values())
        return snaps, (spaces, keys, values, dicts, sizes)

    def current(snaps):
        """`snaps` as the runner is now."""
        out = []
        for name, owner, was, size in snaps:
            ns = vars(owner)
            if size < 0:
                out.append((name, owner, {k: v for k, v in callables(ns).items() if k in was}, -1))
            else:
                out.append((name, owner, callables(ns), len(ns)))
        return out

    flat = [-1, None]  # the snapshots flattened, and how many there were

    def verify(*objects, _base=None, _excuse=None):
        """The runner's classes and module functions as they were when it
        loaded (or as `_base` holds them; a change to a value `_excuse`
        accepts is not reported), and `objects` (the runner's, or the
        tests') holding none of their classes' methods in their own
        dictionary."""
        if _base is None:
            if flat[0] != len(snapshots):
                flat[:] = [len(snapshots), flatten(list(snapshots))]
            _base = flat[1]
        snaps, (spaces, keys, values, dicts, sizes) = _base
        if list(map(len, dicts)) != sizes or any(
            map(is_not, map(proxy.get, spaces, keys), values)
        ):
            for name, owner, was, size in snaps:
                ns = vars(owner)
                now = callables(ns)
                if size < 0:
                    now = {k: v for k, v in now.items() if k in was}
                for k in sorted(set(was) | set(now)):
                    where = "%s.%s" % (name, k)
                    if now.get(k) is was.get(k) or where in changed:
                        continue
                    if _excuse is None or not _excuse(now.get(k)):
                        changed.add(where)
                        say("runner.changed", "%s replaced while the tests ran" % where)
        for obj in objects:
            try:
                shadowed(obj)
            except Exception as error:
                say("runner.object", "a %s object the guard cannot check (%s: %s)" % (
                    type(obj).__qualname__, type(error).__name__, error))

    sortable = [0, ()]  # how many classes were sorted, those isinstance can take

    def instances_of():
        """The runner's classes `isinstance` takes (a TypedDict raises)."""
        if sortable[0] != len(classes):
            ok = []
            for cls in list(classes):
                try:
                    isinstance(None, cls)
                    ok.append(cls)
                except Exception:
                    pass
            sortable[:] = [len(classes), tuple(ok)]
        return sortable[1]

    def shadowed(obj, _methods=(FunctionType, classmethod, staticmethod)):
        """A method of a runner class set on one of its objects (a result's
        `addFailure`): found on the object, it wins over the class's. And
        pluggy's hooks (pytest's report hooks) as pluggy made them."""
        if type(obj) in class_set:
            hooks(obj)
        own = getattr(obj, "__dict__", None)
        if not isinstance(own, dict):
            return
        mro = type.__dict__["__mro__"].__get__(type(obj))
        for k in [k for k, v in list(own.items()) if callable(v)]:
            for cls in mro:
                if cls in class_set and isinstance(vars(cls).get(k), _methods):
                    where = "%s.%s.%s" % (cls.__module__, cls.__qualname__, k)
                    if ("object", where) not in changed:
                        changed.add(("object", where))
                        say("runner.object", "%s replaced on a %s object while the tests ran"
                            % (where, type(obj).__qualname__))
                    break

    def hooks(obj):
        """pytest's hooks: each attribute of a HookRelay (`config.hook`) a
        pluggy hook caller, and the function a caller or the plugin manager
        runs hooks through pluggy's."""
        kind = type(obj).__name__
        found = []
        if kind == "HookRelay":
            callers = instances_of()
            own = getattr(obj, "__dict__", None)
            for k, v in list(own.items()) if isinstance(own, dict) else ():
                if not isinstance(v, callers):
                    found.append("%s.%s" % (kind, k))
                else:
                    runs = getattr(v, "_hookexec", None)
                    if runs is not None and not runner_code(runs):
                        found.append("%s.%s._hookexec" % (kind, k))
        elif kind in ("PluginManager", "PytestPluginManager"):
            runs = getattr(obj, "_inner_hookexec", None)
            if runs is not None and not runner_code(runs):
                found.append("%s._inner_hookexec" % kind)
        for where in found:
            if ("object", where) not in changed:
                changed.add(("object", where))
                say("runner.object", "pluggy's %s replaced while the tests ran" % where)

    def runner_code(value, _id=id):
        """Whether `value` (a function, method, property) is the runner's own
        code: compiled from a file of the runner's packages. (Each function
        found so is kept by identity: pytest's hook callers share one.)"""
        value = getattr(value, "fget", value)
        value = getattr(value, "__func__", value)
        if known.get(_id(value)) is value:
            return True
        code = getattr(value, "__code__", None)
        path = getattr(code, "co_filename", None)
        if isinstance(path, str) and any(map(path.startswith, runner_dirs)):
            known[_id(value)] = value
            return True
        return False

    known = {}  # id -> a function runner_code found to be the runner's

    runner_dirs = []  # the runner's packages' directories, each ending in "/"

    def at_exit(_objects=gc.get_objects, _compress=compress, _repeat=repeat):
        busy[0] = True
        if not classes:
            return verify()
        everything = _objects()
        verify(*_compress(everything, map(isinstance, everything, _repeat(instances_of()))))

    def tap(result):
        """A checkpoint at each test: unittest's result calls stopTest
        after every test (the runner's own result classes call up to it),
        where the runner's classes, the result and the test are compared
        with what they were."""
        original = vars(result).get("stopTest") if isinstance(result, type) else None
        if not isinstance(original, FunctionType):
            return

        def stopTest(self, test, _original=original, _verify=verify, _busy=busy):
            _busy[0] = True
            try:
                _verify(self, test)
            finally:
                _busy[0] = False
            # Only the runner's own method is left in this frame while it runs.
            original = _original
            del _original, _verify, _busy
            return original(self, test)

        stopTest.__qualname__ = original.__qualname__
        stopTest.__module__ = result.__module__
        stopTest.__doc__ = original.__doc__
        setattr(result, "stopTest", stopTest)
        taps.append(stopTest)

    def tap_pytest(module):
        """A checkpoint after each test (and before the first): pytest runs
        every test through `_pytest.runner.runtestprotocol` (looked up in
        its module at each call), where the runner's classes, the item and
        the hooks are compared with what they were. Neither function has a
        closure: what they hold is in their defaults, and reading those is
        a finding."""
        original = vars(module).get("runtestprotocol")
        if not isinstance(original, FunctionType):
            return

        # pytest changes its own classes while it configures (its
        # `legacypath` plugin adds properties, and takes them away when it
        # unconfigures): at the first test, only a change to other code than
        # the runner's is reported, and the tests after it are compared with
        # the runner as it was then; the exit, with the runner as it loaded.
        def check(item, before, _verify=verify, _busy=busy, _getattr=getattr, _base=[],
                  _rebase=lambda: flatten(current(snapshots)), _excuse=runner_code, _say=say):
            if before and _base:
                return
            _busy[0] = True
            try:
                if not _base:
                    _verify(_excuse=_excuse)
                    _base.append(_rebase())
                config = _getattr(item, "config", None)
                manager = _getattr(config, "pluginmanager", None)
                _verify(item, _getattr(config, "hook", None), manager, _base=_base[0])
            except Exception as error:
                _say("runner.object", "a test item the guard cannot check (%s: %s)" % (
                    type(error).__name__, error))
            finally:
                _busy[0] = False

        def runtestprotocol(item, *args, _original=original, _check=check, **kwargs):
            _check(item, True)
            original, check = _original, _check
            del _original, _check
            try:
                return original(item, *args, **kwargs)
            finally:
                check(item, False)

        runtestprotocol.__module__ = module.__name__
        runtestprotocol.__doc__ = original.__doc__
        setattr(module, "runtestprotocol", runtestprotocol)
        taps.extend((check, runtestprotocol))

    def on_setattr(obj, attr):
        owner = obj if isinstance(obj, type(sys)) else None
        name = getattr(obj, "__name__", "") if owner is not None else getattr(obj, "__module__", "")
        if isinstance(name, str) and runner_name(name):
            where = in_tree()
            if where:
                say("object.__setattr__", "%s of %s set by %s" % (attr, name, where))

    # Interpreters started from the run: one that would not load this file
    # (`-I`, `-E`, `-S`, PYTHONPATH without this directory) runs its tests
    # with no guard and no hook, so starting one is a finding.
    spawns = frozenset(("subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system"))
    guard_dir = os.path.dirname(os.path.realpath(__file__))
    environ = dict(os.environ)  # as it started; the C environment follows putenv
    fsdecode, realpath, basename = os.fsdecode, os.path.realpath, os.path.basename
    executable = [realpath(sys.executable) if sys.executable else "", None]
    cwd = [""]  # the directory the program being read starts in

    def text(value):
        try:
            return fsdecode(value)
        except Exception:
            return str(value)

    def started(event, args):
        if event == "os.system":
            path, argv, env = "/bin/sh", ["sh", "-c", text(args[0] if args else "")], None
        elif event == "os.spawn":
            path, argv, env = args[1], args[2], args[3]
        elif event == "subprocess.Popen":
            path, argv, env = args[0], args[1], args[3]
        else:
            path, argv, env = args[0], args[1], args[2]
        argv = [text(a) for a in (argv or ())]
        given = args[2] if event == "subprocess.Popen" else None
        cwd[0] = os.path.join(os.getcwd(), text(given)) if given is not None else os.getcwd()
        if env is None:
            env = environ
        else:
            env = {text(k): text(v) for k, v in dict(env).items()}
        why = command(text(path), argv, dict(env), 0)
        if why:
            line = " ".join(argv)
            say("python.unguarded", "%s started by %s without the guard (%s)" % (
                line if len(line) < 300 else line[:300] + "...",
                in_tree() or "code outside the tree", why))

    def which(name, env, _access=os.access, _isfile=os.path.isfile):
        if "/" in name:
            return name
        for d in (env.get("PATH") or "/usr/bin:/bin").split(":"):
            full = os.path.join(d or ".", name)
            if _isfile(full) and _access(full, os.X_OK):
                return full
        return name

    def head(path, _open=open):
        try:
            with _open(path, "rb") as fh:
                return fh.read(4096)
        except OSError:
            return b""

    def is_python(full, _getsize=os.path.getsize):
        name = basename(full)
        if name.startswith(("python", "pypy")) and name.lstrip("pythony").strip("0123456789.") in ("", "m", "d", "u"):
            return True
        real = realpath(full)
        if real == executable[0]:
            return True
        # A copy of this interpreter under another name.
        try:
            if _getsize(real) != _getsize(executable[0]):
                return False
        except OSError:
            return False
        if executable[1] is None:
            executable[1] = head(executable[0])
        return head(real) == executable[1]

    def command(path, argv, env, depth):
        """Why the program `path` run as `argv` with `env` starts Python
        without the guard, or None."""
        if depth > 8 or not path:
            return None
        full = which(path, env)
        name = basename(full)
        if is_python(full):
            return flags(argv[1:], env)
        start = head(full)[:256]
        if start.startswith(b"#!"):
            words = text(start[2:].split(b"\n", 1)[0]).strip().split(None, 1)
            if words:
                return command(words[0], words + [full] + argv[1:], env, depth + 1)
        if name == "env":
            return env_command(argv, env, depth)
        if name in ("sh", "bash", "dash", "zsh", "ksh", "ash", "busybox") and "-c" in argv[1:]:
            at = argv.index("-c", 1)
            return shell(argv[at + 1] if at + 1 < len(argv) else "", env, depth)
        # A wrapper (timeout, nice, the dynamic loader) running Python.
        for i, word in enumerate(argv[1:], 1):
            if not word.startswith("-") and is_python(which(word, env)):
                return command(word, argv[i:], env, depth + 1)
        return None

    def flags(args, env):
        found = []
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-", "--") or not a.startswith("-"):
                break
            i += 1
            if a.startswith("--"):
                continue
            letters = a[1:]
            for j, c in enumerate(letters):
                if c in "IES":
                    found.append("-" + c)
                if c in "cmWX":
                    if c in "WX" and j == len(letters) - 1:
                        i += 1
                    break
            if any(c in "cm" for c in letters.split("W")[0].split("X")[0]):
                break
        entries = [
            realpath(os.path.join(cwd[0], e))
            for e in (env.get("PYTHONPATH") or "").split(":") if e
        ]
        if guard_dir not in entries:
            found.append("PYTHONPATH without %s" % guard_dir)
        else:
            # `site` imports the first sitecustomize on the path.
            for entry in entries[: entries.index(guard_dir)]:
                try:
                    names = os.listdir(entry)
                except OSError:
                    continue
                if any(n == "sitecustomize" or n.startswith("sitecustomize.") for n in names):
                    found.append("another sitecustomize before the guard, in %s" % entry)
        if env.get("PYTHONHOME") != environ.get("PYTHONHOME"):
            found.append("PYTHONHOME changed")
        return ", ".join(found) or None

    def env_command(argv, env, depth):
        i = 1
        while i < len(argv):
            a = argv[i]
            if a in ("-i", "-", "--ignore-environment"):
                env = {}
            elif a in ("-u", "--unset", "-C", "--chdir") and i + 1 < len(argv):
                if a in ("-u", "--unset"):
                    env.pop(argv[i + 1], None)
                i += 1
            elif a.startswith("--unset="):
                env.pop(a[len("--unset="):], None)
            elif a.startswith("-u") and not a.startswith("--"):
                env.pop(a[2:], None)
            elif a in ("-S", "--split-string") or a.startswith(("-S", "--split-string=")):
                rest = argv[i + 1] if a in ("-S", "--split-string") and i + 1 < len(argv) else a.split("=", 1)[-1] if a.startswith("--") else a[2:]
                skip = 2 if a in ("-S", "--split-string") else 1
                words = rest.split()
                return env_command(["env"] + words + argv[i + skip:], env, depth + 1)
            elif a.startswith("-"):
                pass
            elif "=" in a:
                k, v = a.split("=", 1)
                env[k] = v
            else:
                return command(a, argv[i:], env, depth + 1)
            i += 1
        return None

    def shell(script, env, depth):
        import shlex

        try:
            lex = shlex.shlex(script.replace("\n", ";"), posix=True, punctuation_chars=True)
            lex.whitespace_split = True
            words = list(lex)
        except ValueError:
            words = script.split()
        words.append(";")
        simple = []
        for word in words:
            if word and all(c in ";&|()" for c in word):
                why = shell_command(simple, env, depth)
                if why:
                    return why
                simple = []
            else:
                simple.append(word)
        return None

    def shell_command(words, env, depth):
        local = dict(env)
        while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
            k, v = words[0].split("=", 1)
            local[k] = v
            words = words[1:]
        if not words:
            env.update(local)
            return None
        if words[0] in ("export", "unset"):
            for word in words[1:]:
                if words[0] == "unset":
                    env.pop(word, None)
                elif "=" in word:
                    k, v = word.split("=", 1)
                    env[k] = v
            return None
        while words and words[0] in ("exec", "command", "nohup", "builtin"):
            words = words[1:]
        return command(words[0], words, local, depth + 1) if words else None

    events = frozenset(
        (
            "compile",
            "exec",
            "code.__new__",
            "import",
            "sys.settrace",
            "sys.setprofile",
            "object.__setattr__",
            "ctypes.dlopen",
            "cpython._PySys_ClearAuditHooks",
            "os.putenv",
            "os.unsetenv",
            "object.__getattr__",
            "gc.get_referents",
        )
    ) | spawns

    def hook(event, args, _events=events, _hidden=hidden, _busy=busy):
        if event not in _events or _busy[0]:
            return
        if event == "compile":
            source = args[0] if args else None
            if not isinstance(source, (str, bytes, bytearray, memoryview)):
                recent.append(source)
                del recent[:-8]
            path = absolute(args[1]) if len(args) > 1 and args[1] is not None else ""
            if path in _hidden:
                check_compile(source, path)
        elif event == "exec":
            if runner_pending:
                snapshot()
            code = args[0] if args else None
            path = absolute(getattr(code, "co_filename", ""))
            if path in _hidden:
                check_exec(code, path)
        elif event == "import":
            name = args[0] if args else ""
            if runner_pending:
                snapshot()
            if not isinstance(name, str):
                return
            if runner_name(name):
                runner_pending.append(name)
            elif name in native:
                where = in_tree()
                if where:
                    say("import", "%s loaded by %s" % (name, where))
        elif event == "code.__new__":
            path = absolute(args[1]) if len(args) > 1 else ""
            if path in _hidden:
                say(event, "a code object made for the hidden test file %s" % rel(path))
                raise RuntimeError("assay audit: refused a made code object of %s" % rel(path))
        elif event in ("sys.settrace", "sys.setprofile"):
            say(event, "called by %s" % (in_tree() or "code outside the tree"))
        elif event == "object.__setattr__":
            if len(args) > 1:
                on_setattr(args[0], args[1])
        elif event in ("object.__getattr__", "gc.get_referents"):
            if taps and any(a is f for a in args for f in taps):
                say("guard.read", "the guard's checkpoint %s read by %s" % (
                    args[1] if event == "object.__getattr__" and len(args) > 1 else "referents",
                    in_tree() or "code outside the tree"))
        elif event == "ctypes.dlopen":
            where = in_tree()
            if where:
                say(event, "%r loaded by %s" % (args[0] if args else None, where))
        elif event in spawns:
            _busy[0] = True
            try:
                started(event, args)
            except Exception as error:
                say("python.unguarded", "a program started by %s that the guard cannot read "
                    "(%s: %s)" % (in_tree() or "code outside the tree", type(error).__name__, error))
            finally:
                _busy[0] = False
        elif event == "os.putenv":
            environ[text(args[0])] = text(args[1])
        elif event == "os.unsetenv":
            environ.pop(text(args[0]), None)
        else:
            at_exit()

    sys.addaudithook(hook)
    try:
        import atexit

        atexit.register(at_exit)
    except ImportError:
        pass


def _rewrite_only(given, data):
    """Whether `given`, an AST of a hidden test file, is the file's own
    (`data`) with no more than pytest's assertion rewriting: every
    statement but the asserts the same, and what stands in for the asserts
    (statements naming pytest's `@py` variables) holding no control flow
    of its own."""
    import ast

    try:
        own = ast.parse(data)
    except (SyntaxError, ValueError):
        return False
    if not isinstance(given, ast.AST):
        return False

    def names_py(node):
        return any(
            (isinstance(n, ast.Name) and n.id.startswith("@py"))
            or (isinstance(n, ast.alias) and (n.asname or "").startswith("@py"))
            for n in ast.walk(node)
        )

    def rewrite(stmt):
        # pytest's statements: simple ones naming `@py` variables, and the
        # `if not @py…: raise` that ends each assert. A compound statement
        # of the file's own (a test function) is never one: it is walked.
        if isinstance(stmt, ast.If):
            return names_py(stmt.test)
        if any(isinstance(v, list) and v and isinstance(v[0], ast.stmt)
               for _, v in ast.iter_fields(stmt)):
            return False
        return names_py(stmt)

    escapes = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Break, ast.Continue,
               ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global,
               ast.Nonlocal, ast.Try, ast.Lambda)

    class Strip(ast.NodeTransformer):
        def __init__(self, drop):
            self.drop = drop
            self.bad = False

        def generic_visit(self, node):
            for field, value in ast.iter_fields(node):
                if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    kept = []
                    for stmt in value:
                        if self.drop(stmt):
                            if any(isinstance(n, escapes) for n in ast.walk(stmt)):
                                self.bad = True
                            continue
                        kept.append(self.visit(stmt))
                    setattr(node, field, kept)
                elif isinstance(value, ast.AST):
                    self.visit(value)
                elif isinstance(value, list):
                    for item in value:
                        if isinstance(item, ast.AST):
                            self.visit(item)
            return node

    import copy

    mine = Strip(lambda s: isinstance(s, ast.Assert)).visit(own)
    theirs_strip = Strip(rewrite)
    theirs = theirs_strip.visit(copy.deepcopy(given))
    return not theirs_strip.bad and ast.dump(mine) == ast.dump(theirs)


# Python 2 and 3 before 3.4 lack the finders used here: unguarded there.
if sys.version_info >= (3, 4):
    if hasattr(sys, "addaudithook"):
        import os as _os

        _audit(_TREE, (_os.environ.get("ASSAY_HIDDEN") or "").split("\n"))
    _trusted = _trusted_paths(_TREE)
    _install(_trusted)
    _chain(_trusted)
