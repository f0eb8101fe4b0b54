#!/usr/bin/env bash
# usage: benches/report-scale.sh [TASKS]   (default 1000)
#
# The release's files at scale, from synthetic graded sessions (no
# grading: the publish step the release node runs, on TASKS tasks x 10
# agents x 3 attempts, every session with a short transcript;
# src/release/tests_scale.rs): publish's time at TASKS/4 and at
# TASKS side by side and their ratio (4.00 is a cost that grows linearly),
# how many files, the largest and the total size; then headless Chromium's
# wall time to load report.html, the largest page and the largest task page
# (which holds its sessions' sections) (`--dump-dom`).
# Debug build (the test profile): compare the ratios, not the seconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tasks=${1:-1000}
work=$(mktemp -d "${TMPDIR:-/tmp}/report-scale.XXXX")
trap 'rm -rf "$work"' EXIT
cd "$root"
ASSAY_SCALE_TASKS=$tasks ASSAY_SCALE_DIR="$work" \
    cargo test -q --bin assay tests_scale -- --ignored --nocapture 2>&1 |
    grep -E "sessions: publish|ratio"
# The largest page (manifest.json is data, not a page) and report.html,
# each loaded with a time limit (a page too large for the browser is a
# finding, not a hang).
largest=$(find "$work/pages" -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2)
# The largest task page: where the sessions' sections are.
task=$(find "$work/pages" -type f -name 'task-*' -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2)
for page in "$largest" "$task" "$work/report.html"; do
    start=$(date +%s.%N)
    if timeout "${CHROMIUM_LIMIT:-120}" chromium --headless --no-sandbox --disable-gpu \
        --dump-dom "file://$page" >/dev/null 2>&1; then
        end=$(date +%s.%N)
        printf 'chromium --dump-dom %s (%s bytes): %.2f s wall\n' \
            "${page#"$work/"}" "$(stat -c %s "$page")" "$(echo "$end - $start" | bc)"
    else
        printf 'chromium --dump-dom %s (%s bytes): not loaded within %s s\n' \
            "${page#"$work/"}" "$(stat -c %s "$page")" "${CHROMIUM_LIMIT:-120}"
    fi
done
