#!/usr/bin/env bash
# usage: scripts/same-release.sh OLD_ASSAY NEW_ASSAY [PIPELINE]
#
# Checks that a change to assay changes no node key and no released byte:
# builds a pipeline (the bundled example by default; PIPELINE, e.g.
# examples/gocalc/pipeline.toml, relative to the checkout) from this
# checkout's HEAD, in a temp clone, with OLD, then again with NEW on the same
# cache. With no key changed the second build reuses every node but the
# release (whose params carry the assay commit), and the release differs only
# in manifest.json's commit, release node key and release digest (and
# report.html's provenance lines, which print the first two). Prints the
# second build's counts and the diff.
set -euo pipefail
old=$(realpath "$1"); new=$(realpath "$2"); pipeline=${3:-}
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
d=$(mktemp -d "${TMPDIR:-/tmp}/same-release.XXXX")
git clone -q "$repo" "$d/r"
cd "$d/r"
args=()
release=release
if [ -n "$pipeline" ]; then
    args=(-p "$pipeline")
    release="$(dirname "$pipeline")/release"
fi
"$old" "${args[@]}" build --cache "$d/cache" >/dev/null 2>&1 || { echo "the build with $old failed (see $d/r)"; exit 1; }
cp -r "$release" "$d/before"
"$new" "${args[@]}" build --cache "$d/cache" 2>&1 | grep -E "^build:"
echo "--- release diff (before vs after):"
if diff -r "$d/before" "$release"; then echo "identical"; fi
rm -rf "$d"
