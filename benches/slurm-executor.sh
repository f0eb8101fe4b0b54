#!/usr/bin/env bash
# usage: benches/slurm-executor.sh [ASSAY] [REPEATS]
#
# The slurm executor's throughput and per-run overhead, on the two-node
# loopback cluster of scripts/slurm-dev-cluster.sh (started and stopped
# here, in a temp dir). The workload: the bundled example's repository
# screened only (no sessions), its test command slowed by `sleep 1` so that
# the machine's cores are not the limit, `serial = false`, REPEATS readings
# of each state (default 11: 6 candidates x 3 states x 11 = 198 runs), each
# configuration on a fresh cache:
#
#   local   --jobs 2   the local executor, two runs at a time
#   slurm1  --jobs 2   one node of two slots (CPUs=2): two steps at a time
#   slurm2  --jobs 4   two nodes of two slots each: four steps at a time
#
# Prints each configuration's wall time and runs, and the two ratios the
# issue sets targets for: throughput of 2 nodes over 1 (>= 1.8) and the
# time of a run on one node over a local run at the same concurrency
# (<= 1.2). Needs root, slurm-wlm and munge.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
assay=$(realpath "${1:-$root/target/release/assay}")
repeats=${2:-11}
work=$(mktemp -d "${TMPDIR:-/tmp}/slurm-bench.XXXX")
cluster="$work/cluster"
trap '"$root/scripts/slurm-dev-cluster.sh" down "$cluster" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
eval "$("$root/scripts/slurm-dev-cluster.sh" up "$cluster")"
"$root/examples/calc/make-repo.sh" "$work/repo" >/dev/null

pipeline() { # DIR EXECUTOR NODES
    mkdir -p "$1"
    cat >"$1/pipeline.toml" <<EOF
cache = "cache"
release = "release"

[[source]]
name = "calc"
path = "$work/repo"
branch = "main"
squash_pattern = '\(#(\d+)\)\s*\$'

[env]
test_command = "sleep 1; python3 -m unittest -v"
report = "unittest"
timeout = 120
serial = false
executor = "$2"
slurm = { nodes = $3, node_cache = "$work/node-cache" }

[screen]
repeats = $repeats
EOF
}

run() { # NAME EXECUTOR NODES JOBS
    local dir="$work/$1"
    pipeline "$dir" "$2" "$3"
    local start end
    start=$(date +%s.%N)
    (cd "$dir" && "$assay" build --jobs "$4" >"$dir/out" 2>&1) || { cat "$dir/out"; exit 1; }
    end=$(date +%s.%N)
    local runs
    runs=$(grep -Eo 'run: [0-9]+ run' "$dir/out" | grep -Eo '[0-9]+' | head -1)
    echo "$1 $(python3 -c "print(round($end - $start, 1))") $runs"
}

echo "config seconds runs"
local_=$(run local local 1 2); echo "$local_"
one=$(run slurm1 slurm 1 2); echo "$one"
two=$(run slurm2 slurm 2 4); echo "$two"
t() { echo "$1" | cut -d' ' -f2; }
ratio() { python3 -c "print(round($1 / $2, 2))"; }
echo "throughput, 2 nodes over 1: $(ratio "$(t "$one")" "$(t "$two")") (target >= 1.8)"
echo "a run on one node over a local run, same concurrency: $(ratio "$(t "$one")" "$(t "$local_")") (target <= 1.2)"
