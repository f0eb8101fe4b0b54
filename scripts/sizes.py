#!/usr/bin/env python3
"""usage: scripts/sizes.py [--check] [--all]

Prints the production Rust files over 600 code lines and the functions over
150 lines, in `src/` and `crates/*/src` of the repository holding this script.

- A code line is a line that is neither blank nor comment; a line inside a
  string literal is code.
- Test code does not count: `#[cfg(test)]` items (a `mod tests { … }` block,
  a test-only `use` or `fn`), the files of `#[cfg(test)] mod …;`, and files
  named `tests*.rs`.
- A function's lines run from the line of its `fn` to the line of its
  closing brace, both included (braces matched outside comments, strings
  and character literals). A function nested in another counts in both.

ALLOWED lists what another change reshapes; it is printed apart and does
not fail `--check`.

--check exits 1 when a file or function outside ALLOWED is over a limit
(0 otherwise); without it the script exits 0 whatever it finds.
--all prints every file's code lines and every function's lines, largest
first, instead of those over the limits.
"""
import glob
import os
import re
import signal
import sys

FILE_LIMIT = 600
FUNCTION_LIMIT = 150

# What another change reshapes, allowed while it does: a path ending in
# "/" allows every file under it and their functions, a path one file,
# (path, name) one function.
ALLOWED = []


def blanked(text):
    """The text with each comment character turned into a space and each
    character inside a string or character literal into `x`, newlines kept:
    what is left is code, at its original offsets."""
    out, i, n = [], 0, len(text)

    def literal(start, end, open_len, close_len):
        # keeps the quotes, hides the contents
        body = text[start + open_len : end - close_len]
        out.append(text[start : start + open_len])
        out.append(re.sub(r"[^\n]", "x", body))
        out.append(text[end - close_len : end])

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif (m := re.compile(r'(?<![\w])(b|c)?r(#*)"').match(text, i)) and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            close = '"' + m.group(2)
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
            literal(i, j, m.end() - i, len(close))
            i = j
        elif c == '"' or (
            c in "bc"
            and text.startswith('"', i + 1)
            and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))
        ):
            start = i + (0 if c == '"' else 1)
            j = start + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            literal(i, j, start - i + 1, 1)
            i = j
        elif c == "'":
            # a character literal ('x', '\n', '\u{7f}') or a lifetime ('a)
            if text.startswith("\\", i + 1):
                j = i + 2
                while j < n and text[j] != "'":
                    j += 1
                j += 1
                literal(i, j, 1, 1)
                i = j
            elif i + 2 < n and text[i + 2] == "'":
                literal(i, i + 3, 1, 1)
                i += 3
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(code, i):
    """The offset just past the brace that closes the `{` at `i`."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(code)


def item_end(code, i, keyword):
    """The offset just past the item that starts at `i`: its block, or its
    `;` when it has none (`mod tests;`, `use a::{b, c};`)."""
    depth = 0
    for j in range(i, len(code)):
        ch = code[j]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == ";" and depth == 0:
            return j + 1
        elif ch == "{" and depth == 0 and keyword not in ("use", "const", "static", "type"):
            return matching(code, j)
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
    return len(code)


CFG_TEST = re.compile(
    r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|unsafe\s+)?(\w+)(?:\s+(\w+))?"
)
FN = re.compile(r"\bfn\s+(\w+)")


def measure(path):
    """(code lines, [(line, name, lines)], [test module names declared
    with `mod name;`]) of one file, its test code left out."""
    code = blanked(open(path, encoding="utf-8").read())
    starts = [0] + [m.end() for m in re.finditer("\n", code)]

    def line_of(offset):
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    test_spans, test_mods = [], []
    for m in CFG_TEST.finditer(code):
        if test_spans and m.start() < test_spans[-1][1]:
            continue
        end = item_end(code, m.start(1), m.group(1))
        test_spans.append((m.start(), end))
        if m.group(1) == "mod" and code[end - 1] == ";":
            test_mods.append(m.group(2))

    def in_test(offset):
        return any(a <= offset < b for a, b in test_spans)

    lines = code.split("\n")
    test_lines = set()
    for a, b in test_spans:
        test_lines.update(range(line_of(a), line_of(b - 1) + 1))
    code_lines = sum(1 for k, l in enumerate(lines) if l.strip() and k not in test_lines)

    functions = []
    for m in FN.finditer(code):
        if in_test(m.start()):
            continue
        end = item_end(code, m.end(), "fn")
        if code[end - 1] != "}":
            continue  # a declaration without a body
        first, last = line_of(m.start()), line_of(end - 1)
        functions.append((first + 1, m.group(1), last - first + 1))
    return code_lines, functions, test_mods


def production_files():
    """The .rs files under src/ and crates/*/src that are not test files."""
    roots = ["src"] + sorted(glob.glob("crates/*/src"))
    found = []
    for root in roots:
        for d, dirs, names in os.walk(root):
            dirs.sort()
            found += [os.path.join(d, f) for f in sorted(names) if f.endswith(".rs")]
    return [f for f in found if not os.path.basename(f).startswith("tests")]


def test_module_files(path, names):
    """The files of the modules `path` declares with `#[cfg(test)] mod name;`."""
    d, base = os.path.split(path)
    if base not in ("mod.rs", "lib.rs", "main.rs"):
        d = os.path.join(d, base[:-3])
    out = []
    for name in names:
        out += [os.path.join(d, name + ".rs"), os.path.join(d, name, "mod.rs")]
        out += glob.glob(os.path.join(d, name, "**", "*.rs"), recursive=True)
    return out


def allowed(path, name=None):
    for entry in ALLOWED:
        if isinstance(entry, str) and (path == entry or entry.endswith("/") and path.startswith(entry)):
            return True
        if isinstance(entry, tuple) and name is not None and entry == (path, name):
            return True
    return False


def main():
    flags = set(sys.argv[1:])
    unknown = flags - {"--check", "--all"}
    if unknown:
        sys.exit(__doc__.strip().splitlines()[0] + f"\nunknown option {sorted(unknown)[0]}")
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    files = production_files()
    measured, skip = {}, set()
    for f in files:
        measured[f] = measure(f)
        skip.update(test_module_files(f, measured[f][2]))
    sizes = [(lines, f) for f, (lines, _, _) in measured.items() if f not in skip]
    functions = [
        (length, f, line, name)
        for f, (_, fns, _) in measured.items()
        if f not in skip
        for line, name, length in fns
    ]
    sizes.sort(key=lambda s: (-s[0], s[1]))
    functions.sort(key=lambda s: (-s[0], s[1], s[2]))
    if "--all" in flags:
        for lines, f in sizes:
            print(f"{lines:6} {f}")
        for length, f, line, name in functions:
            print(f"{length:6} {f}:{line} {name}")
        return 0

    big_files = [(n, f) for n, f in sizes if n > FILE_LIMIT]
    long_fns = [(n, f, l, name) for n, f, l, name in functions if n > FUNCTION_LIMIT]
    over = [(n, f) for n, f in big_files if not allowed(f)]
    over_fns = [x for x in long_fns if not allowed(x[1], x[3])]
    print(f"files over {FILE_LIMIT} code lines: {len(over)}")
    for n, f in over:
        print(f"  {n:5} {f}")
    print(f"functions over {FUNCTION_LIMIT} lines: {len(over_fns)}")
    for n, f, l, name in over_fns:
        print(f"  {n:5} {f}:{l} {name}")
    held = [(n, f) for n, f in big_files if allowed(f)]
    held_fns = [x for x in long_fns if allowed(x[1], x[3])]
    if held or held_fns:
        print(f"allowed (ALLOWED in {sys.argv[0]}): {len(held)} files, {len(held_fns)} functions")
        for n, f in held:
            print(f"  {n:5} {f}")
        for n, f, l, name in held_fns:
            print(f"  {n:5} {f}:{l} {name}")
    if "--check" in flags and (over or over_fns):
        return 1
    return 0


if __name__ == "__main__":
    # A closed pipe (`| head`) ends the listing quietly.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
