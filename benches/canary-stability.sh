#!/usr/bin/env bash
# The canaries add no flaky verdict: the bundled example built once, then
# rebuilt N times with `--reread run` (every test run, screening and graded,
# executed again with fresh canaries); every rebuild's verdicts and faults
# (results.csv: session, arm, verdict, fault, tamper) must equal the first.
#
#   benches/canary-stability.sh [N]      (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
cargo build --release -q
bin=$PWD/target/release/assay
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
verdicts() {
    python3 - release/results.csv <<'PY'
import csv, sys
for r in sorted(csv.DictReader(open(sys.argv[1])), key=lambda r: (r["session"], r["arm"])):
    print(r["session"], r["arm"], r["verdict"], r["fault"], r["tamper"], sep="\t")
PY
}
"$bin" build --cache "$work/cache" >/dev/null 2>&1
verdicts > "$work/first"
echo "first build: $(wc -l < "$work/first") grades"
differ=0
for i in $(seq 1 "$n"); do
    start=$(date +%s)
    "$bin" build --cache "$work/cache" --reread run >/dev/null 2>&1
    verdicts > "$work/again"
    if cmp -s "$work/first" "$work/again"; then
        echo "reread $i: same verdicts ($(( $(date +%s) - start )) s)"
    else
        differ=$((differ + 1))
        echo "reread $i: DIFFERENT"
        diff "$work/first" "$work/again" || true
    fi
done
echo "$differ of $n rereads changed a verdict"
[ "$differ" -eq 0 ]
