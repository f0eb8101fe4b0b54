#!/usr/bin/env bash
# The docker executor on the bundled example, against the local one:
# - per graded run: the median wall time of a session's `run:` node (stage the
#   tree, run `python3 -m unittest -v`, read the report), local vs docker,
#   each a cold build with --jobs 1;
# - the example's environment image: built cold (no image of its spec in the
#   daemon), warm (a fresh cache, the daemon reuses the image by its spec
#   label), and cached (a no-op rebuild).
# Removes the example's environment images (only those: found by the label
# the tasks record) to measure the cold build.
# Usage: benches/docker-executor.sh [path/to/assay]   (default: target/debug/assay)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ASSAY=$(realpath "${1:-target/debug/assay}")
scripts/base-image.sh >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The example's pipeline, its paths made absolute, on the docker executor.
sed -e "s|\"examples/|\"$ROOT/examples/|g" -e "s|^cache = .*|cache = \"cache\"|" \
    -e "s|^release = .*|release = \"release\"|" pipeline.toml >"$work/local.toml"
sed -e 's|^\[env\]$|[env]\nexecutor = "docker"|' "$work/local.toml" >"$work/docker.toml"

build() { # PIPELINE CACHE -> events on stdout
    "$ASSAY" -p "$1" build --json --jobs 1 --cache "$2" 2>/dev/null
}
median_runs() { # EVENTS -> median ms of the graded runs (session run nodes)
    python3 -c '
import json, statistics, sys
ms = [e["duration_ms"] for e in map(json.loads, open(sys.argv[1]))
      if e.get("event") == "node_finished" and e["kind"] == "run"
      and e["name"].rsplit(":", 1)[-1] in ("exclude", "keep")]
print(f"{statistics.median(ms):.0f} ms median over {len(ms)} graded runs")' "$1"
}
env_ms() { # EVENTS -> ms of each env node that ran
    python3 -c '
import json, sys
ms = [str(e["duration_ms"]) for e in map(json.loads, open(sys.argv[1]))
      if e.get("event") == "node_finished" and e["kind"] == "env"]
print(" ".join(ms) + " ms" if ms else "none ran")' "$1"
}

build "$work/local.toml" "$work/c-local" >"$work/local.jsonl"
echo "local:  $(median_runs "$work/local.jsonl")"

# Cold: no image of the example's environments in the daemon.
build "$work/docker.toml" "$work/c-prime" >/dev/null
for id in $(python3 -c '
import json, sys
print("\n".join(sorted({json.loads(l).get("image", "") for l in open(sys.argv[1])} - {""})))' "$work/release/tasks.jsonl"); do
    docker image rm -f "$id" >/dev/null
done
build "$work/docker.toml" "$work/c-docker" >"$work/docker.jsonl"
echo "docker: $(median_runs "$work/docker.jsonl")"
echo "env image, cold: $(env_ms "$work/docker.jsonl")"
build "$work/docker.toml" "$work/c-warm" >"$work/warm.jsonl"
echo "env image, warm (fresh cache, image reused by spec): $(env_ms "$work/warm.jsonl")"
start=$(date +%s.%N)
build "$work/docker.toml" "$work/c-warm" >"$work/noop.jsonl"
end=$(date +%s.%N)
echo "no-op rebuild on docker: $(python3 -c "print(f'{($end - $start) * 1000:.0f} ms')")"
