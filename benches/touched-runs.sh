#!/usr/bin/env bash
# What `[env] touched_command` saves, side by side in one run: the bundled
# example under `[screen] scope = "touched-files"`, graded once with the
# whole suite in every graded run (no touched_command) and once with
# graded runs over the touched test files only (`touched_command =
# "python3 -m unittest -v {files}"`). Screening is done first in each
# copy and not timed (it runs the whole suite either way).
#
# Prints, for each: the grading build's wall time, the sum of its graded
# runs' and grades' node times (grades include reruns and checks), how
# many tests the graded runs' reports name, and whether every (session,
# arm) got the same verdict and fault in both.
#
# Usage: benches/touched-runs.sh [path/to/assay]   (default target/release/assay,
#        built with `cargo build --release` when missing)
# Env:   JOBS (default 2), KEEP=1 keeps the work dir.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/benches/lib.sh"
ASSAY=$(assay_binary "$@")
JOBS=${JOBS:-2}
work=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then echo "work dir: $work"; else trap 'rm -rf "$work"' EXIT; fi

prepare() { # DIR TOUCHED(0|1)
    local dir=$1 touched=$2
    mkdir -p "$dir/cache"
    cp "$here/pipeline.toml" "$dir/"
    cp -r "$here/examples" "$dir/"
    rm -rf "$dir/examples/calc/repo"
    cp "$here/cache/README.md" "$here/cache/CACHEDIR.TAG" "$dir/cache/"
    python3 - "$dir/pipeline.toml" "$touched" <<'PY'
import sys
path, touched = sys.argv[1], sys.argv[2] == "1"
text = open(path).read()
text = text.replace("[screen]\n", '[screen]\nscope = "touched-files"\n', 1)
if touched:
    text = text.replace('report = "unittest"\n',
                        'report = "unittest"\ntouched_command = "python3 -m unittest -v {files}"\n', 1)
open(path, "w").write(text)
PY
    # Screening alone first (not timed): the sessions directory set aside.
    mv "$dir/examples/calc/sessions" "$dir/sessions.aside"
    mkdir "$dir/examples/calc/sessions"
    (cd "$dir" && "$ASSAY" build --jobs "$JOBS" >/dev/null 2>&1)
    rmdir "$dir/examples/calc/sessions"
    mv "$dir/sessions.aside" "$dir/examples/calc/sessions"
}

grade() { # DIR -> prints "wall_s run_s grade_s runs"
    local dir=$1 start end
    start=$(date +%s.%N)
    (cd "$dir" && "$ASSAY" build --jobs "$JOBS" --json > "$dir/build.jsonl" 2>/dev/null) || true
    end=$(date +%s.%N)
    python3 - "$dir/build.jsonl" "$start" "$end" <<'PY'
import json, sys
runs = grades = n = 0
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") != "node_finished":
        continue
    name, ms = e["name"], e.get("duration_ms", 0)
    if name.startswith("run:") and (name.endswith(":exclude") or name.endswith(":keep")):
        runs += ms
        n += 1
    elif name.startswith(("grade:", "recheck:")):
        grades += ms
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.1f} {runs / 1000:.1f} {grades / 1000:.1f} {n}")
PY
}

tests_named() { # DIR -> the tests the graded runs' reports name, summed
    local dir=$1 total=0 name digest n
    for name in $(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    n = e.get("name", "")
    if e.get("event") == "node_finished" and n.startswith("run:") and n.endswith((":exclude", ":keep")):
        print(n)' "$dir/build.jsonl"); do
        digest=$(cd "$dir" && "$ASSAY" explain "$name" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["output"])')
        n=$(cd "$dir" && "$ASSAY" show "$digest" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["tests"]))')
        total=$((total + n))
    done
    echo "$total"
}

verdicts() { # DIR -> session,arm,verdict,fault lines
    python3 - "$1/release/results.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["session"], r["arm"], r["verdict"], r["fault"])
PY
}

prepare "$work/suite" 0
prepare "$work/touched" 1
read -r sw sr sg sn < <(grade "$work/suite")
read -r tw tr tg tn < <(grade "$work/touched")
st=$(tests_named "$work/suite")
tt=$(tests_named "$work/touched")
verdicts "$work/suite" | sort > "$work/suite.verdicts"
verdicts "$work/touched" | sort > "$work/touched.verdicts"
same=yes
cmp -s "$work/suite.verdicts" "$work/touched.verdicts" || same=no

printf '%-38s %10s %10s %8s\n' "" "suite" "touched" "ratio"
printf '%-38s %9ss %9ss %8s\n' "grading build, wall" "$sw" "$tw" "$(python3 -c "print(f'{$sw/$tw:.2f}x')")"
printf '%-38s %9ss %9ss %8s\n' "graded runs ($sn, $tn), node time" "$sr" "$tr" "$(python3 -c "print(f'{$sr/max($tr, 0.001):.2f}x')")"
printf '%-38s %9ss %9ss\n' "grades (reruns, checks), node time" "$sg" "$tg"
printf '%-38s %10s %10s\n' "tests the graded runs name" "$st" "$tt"
echo "same verdicts and faults: $same ($(wc -l < "$work/suite.verdicts") grades)"
[ "$same" = yes ] || diff "$work/suite.verdicts" "$work/touched.verdicts" || true
[ "$same" = yes ]
