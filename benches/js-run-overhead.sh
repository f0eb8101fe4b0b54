#!/usr/bin/env bash
# Harness overhead on JavaScript (issue 37, "Measure", on the bundled
# example; the real-repository measure is not done): `assay build --reread
# run` over examples/jscalc's screening (3 candidates x 3 states x 2
# repeats, --jobs 1; a PR's gold tree is the next one's base, and runs of
# one tree are shared: 7 distinct trees, 14 sandboxed runs of `node --test`
# through the node preset) against the same 14 runs of the preset's raw
# command (`node --test` with assay's reporter) in plain checkouts of the
# same trees.
# Prints both wall times and their ratio (target <= 1.3). Side by side in
# one invocation; no timed assertion anywhere.
# Usage: benches/js-run-overhead.sh [path/to/assay]   (default target/release/assay)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ASSAY=$(realpath "${1:-$here/target/release/assay}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/statements"
cp "$here"/examples/jscalc/statements/*.md "$work/statements/"
sed -e '/^sessions = /d' -e 's/^repeats = .*/repeats = 2/' \
    "$here/examples/jscalc/pipeline.toml" > "$work/pipeline.toml"
"$here/examples/jscalc/make-repo.sh" "$work/repo" >/dev/null
cd "$work"
"$ASSAY" build --jobs 1 >/dev/null 2>&1
t0=$(date +%s.%N)
"$ASSAY" build --jobs 1 --reread run >/dev/null 2>&1
t1=$(date +%s.%N)
reporter="$here/src/pipeline/presets/node-reporter.mjs"
trees=()
seen=" "
for m in $(git -C repo rev-list --merges main); do
    for state in base test gold; do
        case $state in
            gold) id=$(git -C repo rev-parse "$m^{tree}") ;;
            base) id=$(git -C repo rev-parse "$m^1^{tree}") ;;
            *) id="$m-test" ;;
        esac
        case $seen in *" $id "*) continue ;; esac
        seen="$seen$id "
        d="$work/direct/$m-$state"
        mkdir -p "$d"
        case $state in
            gold) git -C repo archive "$m" | tar -x -C "$d" ;;
            *) git -C repo archive "$m^1" | tar -x -C "$d" ;;
        esac
        if [ "$state" = test ]; then
            for f in $(git -C repo diff --name-only "$m^1" "$m" -- test); do
                git -C repo show "$m:$f" > "$d/$f"
            done
        fi
        trees+=("$d")
    done
done
t2=$(date +%s.%N)
for d in "${trees[@]}"; do
    for attempt in 0 1; do
        (cd "$d" && ASSAY_ATTEMPT=$attempt node --test --test-reporter="$reporter" \
            --test-reporter-destination=assay-report.json >/dev/null 2>&1 || true)
    done
done
t3=$(date +%s.%N)
python3 - "$t0" "$t1" "$t2" "$t3" "${#trees[@]}" <<'PY'
import sys
t0, t1, t2, t3 = map(float, sys.argv[1:5])
n = 2 * int(sys.argv[5])
a, d = t1 - t0, t3 - t2
print(f"assay {n} runs: {a:.3f} s; direct {n} runs: {d:.3f} s; ratio {a/d:.3f} (target <= 1.3)")
PY
