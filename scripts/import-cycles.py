#!/usr/bin/env python3
"""usage: scripts/import-cycles.py [--check] [--edges] [--arrows] [SRC_DIR]

Measures the layering of a Rust crate's files (default: src/) and prints one
summary line per figure:

- import circles counting re-exports through `mod.rs`: sets of files each of
  which reaches the others;
- import circles without that counting;
- back-up arrows: imports from a file of a lower layer to a file of a higher
  one, in the layer order declared in LAYERS below;
- the layer rules broken: of the rules "layer A does not import layer B",
  one for each pair of layers A below B, those that some import breaks.

An import is a `use` path or an inline `crate::…`/`super::…`/`self::…` path
(and a child module named as in Rust 2018). It ends at the file that holds
what it names: a name a module binds with `use` (`pub use x::Y`,
`use super::{a, b}`, `use … as Z`) is followed to where that `use` leads.
Glob imports (`use x::*`) are not followed.

Counting re-exports through mod.rs, a path that passes a module `m` outside
the importer (it names `m::Y`, and `m` binds `Y` with a `use`) is an import
of `m` itself and of every file `m` re-exports from with `pub use` or
`pub(crate) use` (and those files' own re-exports): the importer of
`m::Y` depends on `m/mod.rs`, whose code and re-exports come with it.
Without that counting only the file holding `Y` is imported. A back-up
arrow counts one import per path: of the file it ends in and the modules it
passes, the one of the highest layer (`stages::Scope` defined in a base file
but named through `stages/mod.rs` is an import of the operations).

A `mod` declaration is not an import; a module's use of its own
submodules is one, like any other (a `mod.rs` that uses its child while
the child uses what the `mod.rs` defines is a circle). Test code is left
out: `#[cfg(test)] mod … {}` blocks and the files of `#[cfg(test)] mod …;`.

- folder circles: sets of folders each of which reaches the others, from
  every file import across two folders, a module's of its own submodules
  included (a parent folder importing its child and the child its parent
  is a circle). A file beside main.rs is a folder of its own.

--edges lists the imports inside each circle, --arrows each back-up arrow.
--check exits 1 when there is a circle (of files counting re-exports, or
of folders), a back-up arrow or a file in no layer (0 otherwise); without
it the script exits 0 whatever it finds.
"""
import os
import re
import sys

# The layer order, lowest first: a file may import its own layer and those
# below it. Each prefix names a file or folder under SRC_DIR (without `.rs`);
# the first in this list that holds a file gives its layer. The layers and
# what each holds: docs/architecture.md.
LAYERS = [
    ("base vocabulary", ["model", "words", "exit"]),
    ("pipeline", ["pipeline"]),
    ("sessions", ["sessions"]),
    ("run", ["run"]),
    ("release", ["release"]),
    ("nodes", ["nodes"]),
    ("plan", ["plan"]),
    ("ops", ["ops"]),
    ("cli", ["cli", "render", "main"]),
]

flags = {a for a in sys.argv[1:] if a.startswith("--")}
unknown = flags - {"--check", "--edges", "--arrows"}
if unknown:
    sys.exit(__doc__.strip().splitlines()[0] + f"\nunknown option {sorted(unknown)[0]}")
args = [a for a in sys.argv[1:] if not a.startswith("--")]
root = args[0] if args else "src"


LEXEMES = re.compile(
    r"//[^\n]*|/\*.*?\*/"  # comments
    r'|(?<!\w)b?r(#*)".*?"\1'  # raw strings
    r'|(?<!\w)b?"(?:\\.|[^"\\])*"'  # strings
    r"|'(?:\\.|[^'\\])'",  # characters (not lifetimes)
    re.S,
)


def strip(text):
    """The code without its comments and the contents of its literals."""
    return LEXEMES.sub(lambda m: "" if m.group(0)[0] == "/" else '""', text)


CFG_TEST = r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*"


def cfg_test_removed(text):
    """Drops `#[cfg(test)] mod tests { … }` (test code may import freely)."""
    m = re.search(CFG_TEST + r"\{", text)
    if not m:
        return text
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[: m.start()] + cfg_test_removed(text[i:])


files = {}  # module path tuple -> file
for d, _, names in os.walk(root):
    for n in names:
        if not n.endswith(".rs"):
            continue
        rel = os.path.relpath(os.path.join(d, n), root)[:-3].split(os.sep)
        if rel[-1] in ("mod", "main", "lib"):
            rel = rel[:-1]
        files[tuple(rel)] = os.path.join(d, n)

raw = {mod: strip(open(f).read()) for mod, f in files.items()}
test_files = set()
for mod, text in raw.items():
    for m in re.finditer(CFG_TEST + ";", text):
        test_files |= {f for f in files if f[: len(mod) + 1] == mod + (m.group(1),)}
for mod in test_files:
    del files[mod]
sources = {mod: cfg_test_removed(raw[mod]) for mod in files}


def expand(tree):
    """`a::{b, c::{d as e}}` -> [([a, b], b), ([a, c, d], e)]: each path's
    segments and the name it is bound to."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, re.S)
    if not m:
        alias = re.search(r"\s+as\s+(\w+)$", tree)
        t = tree[: alias.start()] if alias else tree
        segs = [s.strip() for s in t.split("::") if s.strip()]
        name = alias.group(1) if alias else (segs[-1] if segs else None)
        return [(segs, name)]
    prefix = [s.strip() for s in m.group(1).split("::") if s.strip()]
    out, depth, cur = [], 0, ""
    for ch in m.group(2) + ",":
        if ch == "," and depth == 0:
            if cur.strip():
                out += [(prefix + p, n) for p, n in expand(cur)]
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    return out


USE = re.compile(r"\b(pub(?:\s*\([^)]*\))?\s+)?use\s+([^;]+);")
uses = {}  # module -> [(segments, bound name, is pub)]
for mod, text in sources.items():
    uses[mod] = [(p, n, bool(m.group(1))) for m in USE.finditer(text) for p, n in expand(m.group(2))]
aliases = {
    mod: {n: p for p, n, _ in us if p and n and n != "self" and p[-1] != "*"}
    for mod, us in uses.items()
}


def absolute(mod, segs):
    if not segs:
        return None
    if segs[0] == "crate":
        return [], segs[1:]
    if segs[0] in ("super", "self"):
        base = list(mod)
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
        return base, segs
    if tuple(mod) + (segs[0],) in files:  # a child module, named as in 2018
        return list(mod), segs
    return None


def resolve(mod, segs, passed=None, seen=0):
    """The module file a path from `mod` ends in, or None (extern crate). A
    name a module binds with `use` is followed to where that `use` leads;
    the modules whose `use` was followed are added to `passed`."""
    start = absolute(mod, segs)
    if start is None:
        return None
    cur, rest = start
    for s in rest:
        if tuple(cur + [s]) in files:
            cur = cur + [s]
        elif s in aliases.get(tuple(cur), {}) and seen < 8:
            via = tuple(cur)
            target = resolve(via, aliases[via][s], passed, seen + 1)
            if target is None:
                break
            if passed is not None:
                passed.add(via)
            cur = list(target)
        else:
            break
    return cur


def inside(a, b):
    return tuple(a)[: len(b)] == tuple(b)


def reexported(m, seen=()):
    """The files a module's `pub use` items re-export from, within the module
    itself, and what those re-export in turn."""
    out = set()
    for p, _, public in uses[m]:
        target = resolve(m, p) if public else None
        if target is None or tuple(target) not in files:
            continue
        target = tuple(target)
        if target != m and inside(target, m) and target not in seen:
            out |= {target} | reexported(target, seen + (m,))
    return out


def imports(through_mod_rs, highest=False, children=False):
    """Each file's imports: the files its paths end in and, counting
    re-exports through mod.rs, the modules (outside the importer) whose
    re-exports its paths pass, with every file those re-export. With
    `highest`, each path gives one import instead: of the file it ends in and
    the modules it passes, the one of the highest layer. With `children`,
    a module's imports of its own submodules count too."""
    edges = {mod: set() for mod in files}
    for mod, text in sources.items():
        paths = [p for p, _, _ in uses[mod]]
        for m in re.finditer(r"(?<![\w:])(\w+(?:::\w+)+)", text):
            paths.append(m.group(1).split("::"))
        for p in paths:
            passed = set()
            target = resolve(mod, p, passed)
            if target is None or tuple(target) not in files:
                continue
            target = tuple(target)
            via = sorted(m for m in passed if not inside(mod, m))
            if highest:
                targets = {max([target] + via, key=lambda m: -1 if layer(m) is None else layer(m))}
            elif through_mod_rs:
                targets = {target}
                for m in [target] + via:
                    if not inside(mod, m):
                        targets |= {m} | reexported(m)
            else:
                targets = {target}
            edges[mod] |= {t for t in targets if children or not inside(t, mod)}
            edges[mod].discard(mod)
    return edges


def folder(mod):
    """The folder of a file: a `mod.rs` (or main.rs) is its own folder's."""
    if not mod:
        return ()
    if len(mod) == 1:  # a file beside main.rs is a part of its own
        return mod
    return mod if files[mod].endswith(("/mod.rs", "/main.rs", "/lib.rs")) else mod[:-1]


def folder_edges(edges):
    """The imports between folders: one for every file import across two
    folders, a parent's of its child folder and a child's of its parent
    included."""
    out = {}
    for a, targets in edges.items():
        out.setdefault(folder(a), set())
        for b in targets:
            out.setdefault(folder(b), set())
            if folder(a) != folder(b):
                out[folder(a)].add(folder(b))
    return out


def circles(edges):
    """Tarjan's strongly connected components of more than one file."""
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]

    def connect(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            connect(v)
    return sorted(sccs, key=lambda c: (-len(c), sorted(c)))


def layer(mod):
    path = "/".join(mod) if mod else "main"
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if path == p or path.startswith(p + "/"):
                return i
    return None


name = lambda m: os.path.relpath(files[m], root)
with_re = imports(through_mod_rs=True, children=True)
without_re = imports(through_mod_rs=False, children=True)
named = imports(through_mod_rs=True, highest=True)
found = circles(with_re)
found_without = circles(without_re)

for comp in found:
    print(f"{len(comp)} files: " + ", ".join(sorted(name(m) for m in comp)))
    if "--edges" in flags:
        for a in sorted(comp):
            for b in sorted(with_re[a] & set(comp)):
                print(f"    {name(a)} -> {name(b)}")

unlayered = sorted(name(m) for m in files if layer(m) is None)
arrows = sorted(
    (a, b) for a in named for b in named[a]
    if layer(a) is not None and layer(b) is not None and layer(a) < layer(b)
)
broken = {}
for a, b in arrows:
    broken.setdefault((layer(a), layer(b)), []).append((a, b))
if "--arrows" in flags:
    for a, b in arrows:
        print(f"back-up arrow: {name(a)} ({LAYERS[layer(a)][0]}) -> {name(b)} ({LAYERS[layer(b)][0]})")
for (la, lb), pairs in sorted(broken.items()):
    print(f"broken rule: {LAYERS[la][0]} imports {LAYERS[lb][0]} ({len(pairs)} import(s))")
if unlayered:
    print("in no layer: " + ", ".join(unlayered))

folders = folder_edges(imports(through_mod_rs=False, children=True))
folder_circles = circles(folders)
folder_name = lambda f: "/".join(f) or "(root)"
for comp in folder_circles:
    print(f"{len(comp)} folders: " + ", ".join(sorted(folder_name(f) for f in comp)))
    if "--edges" in flags:
        for a in sorted(comp):
            for b in sorted(folders[a] & set(comp)):
                print(f"    {folder_name(a)} -> {folder_name(b)}")

files_in = lambda cs: sum(len(c) for c in cs)
rules = len(LAYERS) * (len(LAYERS) - 1) // 2
print(f"{len(found)} import circle(s) of {files_in(found)} files among {len(files)} files, counting re-exports through mod.rs")
print(f"{len(found_without)} import circle(s) of {files_in(found_without)} files, without counting re-exports")
print(f"{len(folder_circles)} folder circle(s) of {files_in(folder_circles)} folders among {len(folders)} folders, a parent's import of its child and the child's of its parent counted")
print(f"{len(arrows)} back-up arrow(s): imports from a lower layer to a higher one")
print(f"{len(broken)} of {rules} layer rules broken (" + " < ".join(n for n, _ in LAYERS) + ")")
sys.exit(1 if "--check" in flags and (found or folder_circles or arrows or unlayered) else 0)
