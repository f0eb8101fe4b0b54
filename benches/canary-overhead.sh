#!/usr/bin/env bash
# What the canaries cost: the bundled example built side by side, each time
# with a fresh cache, with the canaries made of the tasks' own tests (the
# default) and with the shaped canaries alone (ASSAY_CANARIES=shaped: the
# canaries of weakly checked tasks), N rounds alternating. Reports
# - the grading node time (graded runs `run:<session>:<arm>`, rechecks and
#   grades: every run that carries canaries) of each, and their ratio;
# - what certification costs: the `certify` readings (one per candidate)
#   against the screening readings (`run:<candidate>:<state>:r<N>`).
#
#   benches/canary-overhead.sh [rounds]     (default 3; BIN=path to use a
#                                            built binary instead of release)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
if [ -z "${BIN:-}" ]; then
    cargo build --release -q
    BIN=target/release/assay
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sums() {
    python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1] + "/index.sqlite")
def q(where):
    n, ms = db.execute(f"select count(*), coalesce(sum(duration_ms), 0) from nodes where {where}").fetchone()
    return n, ms
screening = "kind = 'run' and (name like '%:r_' or name like '%:r__')"
graded = f"kind in ('grade', 'recheck') or (kind = 'run' and not ({screening}))"
g, s, c = q(graded), q(screening), q("kind = 'certify'")
print(f"graded_n={g[0]} graded_ms={g[1]} screening_n={s[0]} screening_ms={s[1]} certify_n={c[0]} certify_ms={c[1]}")
PY
}
for i in $(seq 1 "$rounds"); do
    for mode in own shaped; do
        rm -rf "$work/cache-$mode"
        if [ "$mode" = shaped ]; then export ASSAY_CANARIES=shaped; else unset ASSAY_CANARIES; fi
        "$BIN" build --cache "$work/cache-$mode" >/dev/null 2>&1
        echo "round=$i mode=$mode $(sums "$work/cache-$mode")"
    done
done | tee "$work/out"
python3 - "$work/out" <<'PY'
import sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(int))
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split())
    for k, v in f.items():
        if k not in ("round", "mode"):
            t[f["mode"]][k] += int(v)
own, shaped = t["own"], t["shaped"]
print(f"graded node time: own canaries {own['graded_ms']} ms, shaped {shaped['graded_ms']} ms, "
      f"ratio {own['graded_ms'] / shaped['graded_ms']:.3f}")
per_reading = own["screening_ms"] / own["screening_n"]
per_certify = own["certify_ms"] / max(own["certify_n"], 1)
print(f"certification: {own['certify_n']} readings of {per_certify:.0f} ms on average, "
      f"against {own['screening_n']} screening readings of {per_reading:.0f} ms: "
      f"{per_certify / per_reading:.2f} screening readings' time each, 1 extra reading a candidate")
PY
