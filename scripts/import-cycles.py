#!/usr/bin/env python3
"""usage: scripts/import-cycles.py [--edges] [SRC_DIR]

Lists the import circles between the files of a Rust crate (default: src/):
sets of files each of which reaches the others through `use` paths and
inline `crate::…`/`super::…`/`self::…` paths. A path is followed through the
module files and through the re-exports of a module (`use super::{a, b}` in
`nodes/mod.rs` makes `nodes::a` the module `a`), and ends at the file that
holds the item it names. A `mod` declaration is not an import, nor is a
module's use of its own submodules (that is the module tree: dispatch and
re-exports); a circle is between files neither of which contains the other.
Test modules (`#[cfg(test)] mod … {}`) are left out. Exits 1 when there is
a circle.
"""
import os
import re
import sys

args = [a for a in sys.argv[1:] if a != "--edges"]
show_edges = "--edges" in sys.argv[1:]
root = args[0] if args else "src"
files = {}  # module path tuple -> file
for d, _, names in os.walk(root):
    for n in names:
        if not n.endswith(".rs"):
            continue
        rel = os.path.relpath(os.path.join(d, n), root)[:-3].split(os.sep)
        if rel[-1] in ("mod", "main", "lib"):
            rel = rel[:-1]
        files[tuple(rel)] = os.path.join(d, n)


def strip(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def cfg_test_removed(text):
    """Drops `#[cfg(test)] mod tests { … }` (test code may import freely)."""
    m = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
    if not m:
        return text
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[: m.start()] + cfg_test_removed(text[i:])


def expand(tree):
    """`a::{b, c::{d}}` -> [a::b, a::c::d] (as segment lists)."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, re.S)
    if not m:
        t = re.sub(r"\s+as\s+\w+$", "", tree)
        return [[s for s in t.split("::") if s]]
    prefix = [s for s in m.group(1).split("::") if s]
    out, depth, cur = [], 0, ""
    for ch in m.group(2) + ",":
        if ch == "," and depth == 0:
            if cur.strip():
                out += [prefix + p for p in expand(cur)]
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    return out


sources = {mod: cfg_test_removed(strip(open(f).read())) for mod, f in files.items()}
uses = {}
for mod, text in sources.items():
    uses[mod] = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        uses[mod] += expand(m.group(1))
aliases = {mod: {p[-1]: p for p in ps if p and p[-1] not in ("self", "*")} for mod, ps in uses.items()}


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


def resolve(mod, segs, seen=0):
    """The module file a path from `mod` ends in, or None (extern crate)."""
    start = absolute(mod, segs)
    if start is None:
        return None
    cur, rest = start
    for s in rest:
        if tuple(cur + [s]) in files:
            cur = cur + [s]
        elif s in aliases.get(tuple(cur), {}) and seen < 8:
            target = resolve(tuple(cur), aliases[tuple(cur)][s], seen + 1)
            if target is None or tuple(target) not in files:
                break
            cur = list(target)
        else:
            break
    return cur


edges = {mod: set() for mod in files}
for mod, text in sources.items():
    paths = list(uses[mod])
    for m in re.finditer(r"(?<![\w:])(\w+(?:::\w+)+)", text):
        paths.append(m.group(1).split("::"))
    for p in paths:
        target = resolve(mod, p)
        if target is None or tuple(target) not in files:
            continue
        if tuple(target)[: len(mod)] != mod:
            edges[mod].add(tuple(target))

# Tarjan's strongly connected components.
index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]


def connect(v):
    index[v] = low[v] = n[0]
    n[0] += 1
    stack.append(v)
    on.add(v)
    for w in edges[v]:
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
name = lambda m: os.path.relpath(files[m], root)
for comp in sorted(sccs, key=len, reverse=True):
    print(f"{len(comp)} files: " + ", ".join(sorted(name(m) for m in comp)))
    if show_edges:
        for a in sorted(comp):
            for b in sorted(edges[a] & set(comp)):
                print(f"    {name(a)} -> {name(b)}")
print(f"{len(sccs)} import circle(s) among {len(files)} files")
sys.exit(1 if sccs else 0)
