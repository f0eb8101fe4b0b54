#!/usr/bin/env bash
# Peak RSS and wall time of a no-op rebuild of the synthetic 100,000-node DAG
# (the same graph as benches/engine.rs), through the hidden `assay bench-dag`.
#
#   benches/noop-rss.sh [NODES]      # default 100000
#
# The first `bench-dag` builds every node into a temp cache (not measured);
# the second is the no-op rebuild, run under `/usr/bin/time -v` (GNU time:
# `apt-get install -y time`). Target: peak RSS <= 300 MB.
set -euo pipefail
cd "$(dirname "$0")/.."

nodes=${1:-100000}
assay=target/release/assay
[ -x "$assay" ] || { echo "build first: cargo build --release" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time: apt-get install -y time" >&2; exit 1; }

cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
"$assay" bench-dag --nodes "$nodes" --cache "$cache"
/usr/bin/time -v "$assay" bench-dag --nodes "$nodes" --cache "$cache" 2>"$cache/time.txt" || {
    cat "$cache/time.txt" >&2
    exit 1
}
grep 'bench-dag:' "$cache/time.txt"
kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$cache/time.txt")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$cache/time.txt")
echo "no-op rebuild of $nodes nodes: peak RSS $((kb / 1024)) MiB, wall $wall"
