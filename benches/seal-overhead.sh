#!/usr/bin/env bash
# What the seals cost (docs/security.md, "Sealed expectations"): the bundled
# example built side by side, each time with a fresh cache, with seals (the
# default) and without (ASSAY_SEALS=off: today's canaries alone), N rounds
# alternating. Reports the grading node time (graded runs, rechecks and
# grades: every run that carries seals) of each and their ratio, and what
# the sealed certification reading adds (certify nodes).
#
#   benches/seal-overhead.sh [rounds]     (default 3; BIN=path to use a
#                                          built binary instead of release)
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
g, c = q(graded), q("kind = 'certify'")
print(f"graded_n={g[0]} graded_ms={g[1]} certify_n={c[0]} certify_ms={c[1]}")
PY
}
for i in $(seq 1 "$rounds"); do
    for mode in sealed unsealed; do
        rm -rf "$work/cache-$mode"
        if [ "$mode" = unsealed ]; then export ASSAY_SEALS=off; else unset ASSAY_SEALS; fi
        "$BIN" build --cache "$work/cache-$mode" >/dev/null 2>&1
        echo "round=$i mode=$mode $(sums "$work/cache-$mode")"
    done
done | tee "$work/out"
python3 - "$work/out" <<'PY'
import sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(int))
rounds = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split())
    rounds[f["round"]][f["mode"]] = int(f["graded_ms"])
    for k, v in f.items():
        if k not in ("round", "mode"):
            t[f["mode"]][k] += int(v)
s, u = t["sealed"], t["unsealed"]
print(f"graded node time: sealed {s['graded_ms']} ms, unsealed {u['graded_ms']} ms, "
      f"ratio {s['graded_ms'] / u['graded_ms']:.3f}")
print("per round: " + ", ".join(f"{r['sealed'] / r['unsealed']:.3f}" for r in rounds.values()))
print(f"certification: {s['certify_ms']} ms sealed ({s['certify_n']} nodes) against "
      f"{u['certify_ms']} ms unsealed: {s['certify_ms'] / max(u['certify_ms'], 1):.2f}x")
PY
