#!/usr/bin/env bash
# usage: benches/red-reasons.sh [ASSAY] [LANGUAGES...]
#
# Issue 48's measure "for ten red grades, what a person sees first": per
# language (python: examples/calc's task calc-1; go: examples/gocalc's
# gocalc-1; javascript: examples/jscalc's jscalc-1, `node --test`), ten red
# sessions of different kinds are written as patches of the task's base
# (a wrong value, an exception, a compile or syntax error, a vet failure,
# a missing module, a timeout, a crash, a regression...), graded in one
# build, and for each the first lines of the session's section in the
# release's task page (release/tasks/*.html, as text) are printed.
#
# "Names the cause" is checked, not judged: each session carries a regular
# expression of the words that say what went wrong — the exception's own
# message planted by the patch (`agent-boom-py`), the compiler's or vet's
# words (`undefined: undefinedThing`), the runtime's (`index out of
# range`, `is not a function`), a timeout's (`timed out`), or for a wrong
# value the assertion's comparison (`!=`, `want`, `expected`) — and a
# session names its cause when that expression matches within the first
# FIRST_LINES (default 12) lines of its section (as text: one line per
# paragraph, table row or log line; the patch, which holds the planted
# words, is cut off). Prints, per language, N of 10, and the load average.
# KEEP=1 keeps the temporary directory.
#
# Runs in a temporary directory (removed on exit); grading is on the
# machine's default executor. The pipelines are the examples' with one
# screening reading, one arm (`keep`), no rerun, and a 20 s test timeout.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
assay=$(realpath "${1:-$here/target/debug/assay}")
shift || true
languages=("$@")
[ ${#languages[@]} -gt 0 ] || languages=(python go javascript)
first_lines=${FIRST_LINES:-12}
work=$(mktemp -d /tmp/red-reasons.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

# lay_out LANG: the example's files under "$work/LANG", its pipeline's
# sessions emptied; prints the pipeline's path.
lay_out() {
    local lang=$1 dir="$work/$1"
    mkdir -p "$dir/examples"
    cp -r "$here/examples/lib" "$dir/examples/lib"
    case $lang in
    python)
        cp -r "$here/examples/calc" "$dir/examples/calc"
        rm -rf "$dir/examples/calc/repo" "$dir/examples/calc/release"
        cp "$here/pipeline.toml" "$dir/pipeline.toml"
        sed -i 's|^sessions = .*|sessions = "sessions"|' "$dir/pipeline.toml"
        echo "$dir/pipeline.toml"
        ;;
    go | javascript)
        local x=gocalc
        [ "$lang" = javascript ] && x=jscalc
        cp -r "$here/examples/$x" "$dir/examples/$x"
        rm -rf "$dir/examples/$x/repo" "$dir/examples/$x/release"
        echo "$dir/examples/$x/pipeline.toml"
        ;;
    esac
}

laid=()
for l in "${languages[@]}"; do laid+=("$l=$(lay_out "$l")"); done
python3 - "$assay" "$work" "$first_lines" "${laid[@]}" <<'PY'
import json, os, re, subprocess, sys
from pathlib import Path

assay, work, first_lines = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
pipelines = dict(a.split("=", 1) for a in sys.argv[4:])
langs = list(pipelines)

# Per language: the task, the file, the line every edit replaces, and ten
# (kind, replacement, the words that name the cause).
PY_AT = '    return _quotient(a, b)\n'
GO_AT = '\treturn Sum(xs) / float64(len(xs))\n'
JS_AT = '  return sum(xs) / xs.length;\n'
KINDS = {
    "python": ("calc-1", "calc/ops.py", PY_AT, [
        ("empty", None, r"ValueError|ZeroDivisionError|not raised"),
        ("wrong-value", '    return _quotient(a, b) + 1\n', r"!=|AssertionError"),
        ("exception", '    raise RuntimeError("agent-boom-py")\n', r"agent-boom-py"),
        ("syntax-error", '    return _quotient(a, b\n', r"SyntaxError|never closed"),
        ("missing-module", '    import numpy_not_here\n    return _quotient(a, b)\n', r"No module named"),
        ("timeout", '    while True:\n        pass\n', r"timed out|timeout|time limit"),
        ("exit", '    raise SystemExit("agent-exit-py")\n', r"agent-exit-py|SystemExit"),
        ("recursion", '    return divide(a, b)\n', r"RecursionError|recursion"),
        ("wrong-exception", '    if b == 0:\n        raise TypeError("agent-type-py")\n    return _quotient(a, b)\n', r"agent-type-py"),
        ("returns-none", '    return _quotient(a, b) if b else None\n', r"not raised"),
    ]),
    "go": ("gocalc-1", "stats.go", GO_AT, [
        ("empty", None, r"want|got|expected|NaN"),
        ("wrong-value", '\treturn 1\n', r"want|got|expected"),
        ("panic", '\tpanic("agent-boom-go")\n', r"agent-boom-go"),
        ("compile-error", '\treturn undefinedThing\n', r"undefined: undefinedThing"),
        ("vet", '\tvar i int = 65\n\t_ = string(i)\n\treturn 0\n', r"conversion from int to string"),
        ("timeout", '\tfor {\n\t}\n', r"timed out|timeout"),
        ("nil-map", '\tvar m map[string]int\n\tm["x"] = 1\n\treturn 0\n', r"assignment to entry in nil map"),
        ("index", '\treturn xs[len(xs)]\n', r"index out of range"),
        ("unused-variable", '\tunused := 1\n' + GO_AT, r"declared (and|but) not used"),
        ("divide-by-zero", '\tn := 0\n\t_ = 1 / n\n\treturn 0\n', r"divide by zero|division by zero"),
    ]),
    "javascript": ("jscalc-1", "src/stats.js", JS_AT, [
        ("empty", None, r"(?i)expected|strictly equal|NaN"),
        ("wrong-value", '  return 1;\n', r"(?i)expected|strictly equal"),
        ("exception", '  throw new Error("agent-boom-js");\n', r"agent-boom-js"),
        ("syntax-error", '  return sum(xs) / ;\n', r"SyntaxError|Unexpected token"),
        ("missing-module", '  require("agent-missing-module");\n' + JS_AT, r"Cannot find module"),
        ("timeout", '  while (true) {}\n', r"timed out|timeout|cancel"),
        ("type-error", '  return xs.notAFunction();\n', r"is not a function"),
        ("reference-error", '  return undefinedThing;\n', r"undefinedThing is not defined"),
        ("exit", '  process.exit(3);\n', r"process\.exit|exit code 3|exited"),
        ("stack-overflow", '  return mean(xs);\n', r"Maximum call stack"),
    ]),
}


def build(pipeline):
    out = subprocess.run([assay, "-p", pipeline, "build"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"assay build ({pipeline}) exited {out.returncode}:\n{out.stderr[-3000:]}")


def tune(pipeline):
    """One screening reading, one arm, no rerun, a 20 s timeout."""
    text = Path(pipeline).read_text()
    for key, value in [("repeats", "1"), ("arms", '["keep"]'), ("reruns", "0"), ("timeout", "20")]:
        text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
    Path(pipeline).write_text(text)


def patch(repo, base, path, at, new):
    wt = Path(work) / f"wt-{os.getpid()}"
    subprocess.run(["git", "-C", repo, "worktree", "add", "-q", "--detach", str(wt), base], check=True)
    try:
        f = wt / path
        text = f.read_text()
        assert text.count(at) == 1, f"{path} at {base}: the edited line is not there once"
        f.write_text(text.replace(at, new))
        return subprocess.run(["git", "-C", str(wt), "diff"], capture_output=True, text=True, check=True).stdout
    finally:
        subprocess.run(["git", "-C", repo, "worktree", "remove", "--force", str(wt)], check=True)


def as_text(html):
    for pat, rep in [(r"(?s)<script>.*?</script>", ""), (r"(?s)<svg.*?</svg>", ""),
                     (r"<tr>", "\n| "), (r"</t[dh]>", " | "), (r"<br>|<p>|<li>|<summary>|</pre>|<pre[^>]*>|<h\d>", "\n"),
                     (r"<[^>]+>", "")]:
        html = re.sub(pat, rep, html)
    for a, b in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&#39;", "'"), ("&amp;", "&")]:
        html = html.replace(a, b)
    return [l.rstrip() for l in html.splitlines() if l.strip()]


def section(release, session):
    """The session's section of its task page, as text lines."""
    for page in sorted(Path(release).rglob("*.html")):
        html = page.read_text()
        h3 = html.find(f"<h3>{session}</h3>")
        if h3 < 0:
            continue
        end = html.find("</section>", h3)
        text = html[h3 : end if end > 0 else len(html)]
        # The patch itself (which holds the planted words) never counts.
        return as_text(text.split('<details class="patch">')[0])
    return []


totals = {}
for lang in langs:
    pipeline = pipelines[lang]
    task, path, at, kinds = KINDS[lang]
    tune(pipeline)
    root = Path(pipeline).parent
    sessions = root / "sessions"
    if sessions.exists():
        subprocess.run(["rm", "-rf", str(sessions)], check=True)
    (sessions / "red").mkdir(parents=True)
    build(pipeline)
    release = root / "release"
    tasks = {}
    for line in (release / "tasks.jsonl").read_text().splitlines():
        t = json.loads(line)
        tasks[t["instance_id"]] = t
    repo = next(p for p in root.rglob("repo") if (p / ".git").exists())
    for kind, new, _ in kinds:
        diff = "" if new is None else patch(str(repo), tasks[task]["base_commit"], path, at, new)
        (sessions / "red" / f"{kind}.diff").write_text(diff)
        (sessions / "red" / f"{kind}.json").write_text(json.dumps(
            {"task": task, "agent": "red", "model": "bench", "patch_file": f"{kind}.diff"}))
    build(pipeline)
    named = 0
    print(f"\n=== {lang}: task {task}, first {first_lines} lines of each red session's section")
    for kind, _, cause in kinds:
        lines = section(release, f"red/{kind}.json")[:first_lines]
        says = any(re.search(cause, l) for l in lines)
        named += says
        print(f"\n--- red/{kind}.json: names the cause ({cause}): {'yes' if says else 'NO'}")
        for l in lines:
            print("  " + l[:200])
    totals[lang] = named
    print(f"\n{lang}: {named} of {len(kinds)} red sessions name their cause in the first {first_lines} lines")

print("\nsummary: " + ", ".join(f"{l} {n}/10" for l, n in totals.items()))
print("load average: " + open("/proc/loadavg").read().split(" ", 3)[:3].__str__())
PY
