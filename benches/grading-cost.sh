#!/usr/bin/env bash
# Grading cost, side by side in one run: the bundled example's sessions plus
# one that hangs (its patch makes `divide` loop forever), graded with the
# fixed timeout (`[grade] timeout_factor = 0`: every run may take `[env]
# timeout`, 180 s here as in the issue's measurements) and with timeouts
# from the screening readings (the default: 10x the slowest reading, at
# least 30 s). Screening is done first in each copy and not timed.
#
# Prints, for each: the grading build's wall time, the sum of its graded
# runs' and grades' node times (grades include reruns and checks), and
# whether every (session, arm) got the same verdict and fault in both.
#
# Usage: benches/grading-cost.sh [path/to/assay]   (default target/release/assay,
#        built with `cargo build --release` when missing)
# Env:   TIMEOUT (default 180), JOBS (default 2), KEEP=1 keeps the work dir.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/benches/lib.sh"
ASSAY=$(assay_binary "$@")
TIMEOUT=${TIMEOUT:-180}
JOBS=${JOBS:-2}
work=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then echo "work dir: $work"; else trap 'rm -rf "$work"' EXIT; fi

prepare() { # DIR FACTOR
    local dir=$1 factor=$2
    mkdir -p "$dir/cache"
    cp "$here/pipeline.toml" "$dir/"
    cp -r "$here/examples" "$dir/"
    rm -rf "$dir/examples/calc/repo"
    cp "$here/cache/README.md" "$here/cache/CACHEDIR.TAG" "$dir/cache/"
    sed -i "s/^timeout = .*/timeout = $TIMEOUT/" "$dir/pipeline.toml"
    python3 - "$dir/pipeline.toml" "$factor" <<'PY'
import sys
path, factor = sys.argv[1], sys.argv[2]
text = open(path).read()
text = text.replace("[grade]\n", f"[grade]\ntimeout_factor = {factor}\n", 1)
open(path, "w").write(text)
PY
    # Screening alone first (not timed): the sessions directory set aside.
    mv "$dir/examples/calc/sessions" "$dir/sessions.aside"
    mkdir "$dir/examples/calc/sessions"
    (cd "$dir" && "$ASSAY" build --jobs "$JOBS" >/dev/null 2>&1)
    rmdir "$dir/examples/calc/sessions"
    mv "$dir/sessions.aside" "$dir/examples/calc/sessions"
    # The hanging session: calc-1's base with `divide` looping forever.
    local base
    base=$(python3 -c 'import json,sys; print(next(json.loads(l)["base_commit"] for l in open(sys.argv[1]) if json.loads(l)["instance_id"]=="calc-1"))' "$dir/release/tasks.jsonl")
    git -C "$dir/examples/calc/repo" worktree add -q "$dir/wt" "$base"
    sed -i 's/^def divide(a, b):$/def divide(a, b):\n    while True:\n        pass/' "$dir/wt/calc/ops.py"
    mkdir -p "$dir/examples/calc/sessions/hang"
    git -C "$dir/wt" diff > "$dir/examples/calc/sessions/hang/calc-1.diff"
    git -C "$dir/examples/calc/repo" worktree remove --force "$dir/wt"
    cat > "$dir/examples/calc/sessions/hang/calc-1.json" <<'JSON'
{"task": "calc-1", "track": "basic", "agent": "hang", "model": "model-a", "patch_file": "calc-1.diff"}
JSON
}

grade() { # DIR -> prints "wall_s run_s grade_s"
    local dir=$1 start end
    start=$(date +%s.%N)
    (cd "$dir" && "$ASSAY" build --jobs "$JOBS" --json > "$dir/build.jsonl" 2>/dev/null) || true
    end=$(date +%s.%N)
    python3 - "$dir/build.jsonl" "$start" "$end" <<'PY'
import json, sys
runs = grades = 0
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
    elif name.startswith(("grade:", "recheck:")):
        grades += ms
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.1f} {runs / 1000:.1f} {grades / 1000:.1f}")
PY
}

verdicts() { # DIR -> session,arm,verdict,fault lines
    python3 - "$1/release/results.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["session"], r["arm"], r["verdict"], r["fault"])
PY
}

prepare "$work/fixed" 0
prepare "$work/derived" 10
read -r fw fr fg < <(grade "$work/fixed")
read -r dw dr dg < <(grade "$work/derived")
verdicts "$work/fixed" | sort > "$work/fixed.verdicts"
verdicts "$work/derived" | sort > "$work/derived.verdicts"
same=yes
cmp -s "$work/fixed.verdicts" "$work/derived.verdicts" || same=no

printf '%-34s %10s %10s %8s\n' "" "fixed" "derived" "ratio"
printf '%-34s %9ss %9ss %8s\n' "grading build, wall" "$fw" "$dw" "$(python3 -c "print(f'{$fw/$dw:.2f}x')")"
printf '%-34s %9ss %9ss\n' "graded runs, node time" "$fr" "$dr"
printf '%-34s %9ss %9ss\n' "grades (reruns, checks), node time" "$fg" "$dg"
echo "same verdicts and faults: $same ($(wc -l < "$work/fixed.verdicts") grades)"
grep '^hang' "$work/derived.verdicts" || true
for arm in exclude keep; do
    out=$(cd "$work/derived" && "$ASSAY" explain "grade:hang/calc-1.json:$arm" --json 2>/dev/null) || continue
    digest=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["output"])')
    (cd "$work/derived" && "$ASSAY" show "$digest") | python3 -c 'import json,sys; g=json.load(sys.stdin); print("  hang", g["arm"], g["verdict"], "-", g["detail"])'
done
[ "$same" = yes ]
