#!/usr/bin/env bash
# What the canaries cost a graded run: the bundled example graded twice side
# by side, each time with a fresh cache, with canaries and without
# (ASSAY_CANARIES=off, which each grade and the release then record), N
# rounds alternating. Reports the summed time of the grading nodes (graded
# runs and grades, whose reruns and checks carry canaries too) and the ratio.
#
#   benches/canary-overhead.sh [rounds]     (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
cargo build --release -q
bin=target/release/assay
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The sum of duration_ms over the run records whose tree is a graded (stage)
# tree: those carry canaries (or say why not).
# The time of the grading nodes: the graded runs (`run:<session>:<arm>`, the
# ones that carry canaries) and the grades (their reruns and checks).
sum_runs() {
    python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1] + "/index.sqlite")
rows = db.execute(
    "select count(*), sum(duration_ms) from nodes where kind = 'grade' "
    "or (kind = 'run' and name not like '%:r_' and name not like '%:r__')"
).fetchone()
print(rows[1] or 0, rows[0])
PY
}
for i in $(seq 1 "$rounds"); do
    for mode in on off; do
        rm -rf "$work/cache-$mode"
        if [ "$mode" = off ]; then export ASSAY_CANARIES=off; else unset ASSAY_CANARIES; fi
        "$bin" build --cache "$work/cache-$mode" >/dev/null 2>&1
        read -r ms n < <(sum_runs "$work/cache-$mode")
        echo "round $i canaries=$mode nodes=$n run_ms=$ms"
    done
done | tee "$work/out"
python3 - "$work/out" <<'PY'
import sys, collections
s = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[2:])
    s[line.split()[2].split("=")[1]].append(int(f["run_ms"]))
on, off = sum(s["on"]), sum(s["off"])
print(f"with canaries {on} ms, without {off} ms, ratio {on / off:.3f}")
PY
