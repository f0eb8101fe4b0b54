#!/usr/bin/env bash
# Per-run overhead of assay-docker's `Docker::run` (tree upload, no network,
# read-only root, limits, capped capture, removal) against
# `docker run --rm --network none IMAGE python3 -c 'pass'` on the same image,
# N runs each (default 10). Prints ms/run for both and their ratio.
# Usage: benches/docker-run-overhead.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/base-image.sh >/dev/null
CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1} cargo run -q -p assay-docker --example run_overhead -- "${1:-10}"
