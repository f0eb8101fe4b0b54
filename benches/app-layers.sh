#!/usr/bin/env bash
# usage: benches/app-layers.sh [RUNS]
#
# An app task's layers against the same work done by hand, on the webapp
# example's greet reference (examples/webapp), RUNS rounds (default 5):
#
#   layers  src/stages/app's read: admission, the build (py_compile) and the
#           deployment in bubblewrap, readiness polled and two probes sent
#           from the app's network namespace, teardown
#   hand    the same on the host, unsandboxed: py_compile, python3 app.py in
#           the background, curl polled until it answers, the two requests,
#           kill
#
# Prints the median of each and the ratio layers/hand.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/app-bench.XXXX")
trap 'rm -rf "$work"' EXIT
"$root/examples/webapp/make-repo.sh" "$work/repo" >/dev/null
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { date +%s%3N; }

(cd "$root" && ASSAY_BENCH_RUNS=$runs cargo test --quiet --bin assay \
  stages::app::tests::layers_wall_time -- --ignored --nocapture 2>/dev/null) |
  awk '/^layers_ms/ {print $2}' >"$work/layers"

port=$((20000 + RANDOM % 20000))
for n in $(seq "$runs"); do
  t="$work/hand$n"
  mkdir "$t"
  git -C "$work/repo" archive greet | tar -x -C "$t"
  start=$(ms)
  (cd "$t" && python3 -m py_compile app.py)
  (cd "$t" && PORT=$port exec python3 app.py) &
  pid=$!
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.025; done
  curl -sf "http://127.0.0.1:$port/greet?name=n$n" | grep -q "Hello, n$n!"
  curl -sf "http://127.0.0.1:$port/health" | grep -q '"ok": true'
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo $(($(ms) - start)) >>"$work/hand"
done

layers=$(median <"$work/layers")
hand=$(median <"$work/hand")
echo "layers median ${layers} ms over $(wc -l <"$work/layers") runs"
echo "hand   median ${hand} ms over $(wc -l <"$work/hand") runs"
awk -v a="$layers" -v b="$hand" 'BEGIN {printf "ratio layers/hand %.2f\n", a / b}'
