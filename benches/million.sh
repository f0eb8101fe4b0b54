#!/usr/bin/env bash
# usage: benches/million.sh [SESSIONS...]   (default 250000 1000000)
#
# The release step at a million graded sessions, by simulation: synthetic
# graded-session records (no runs: 30 sessions a task, 10 agents x 3
# attempts, each with a short transcript; src/release/tests_scale.rs,
# `release_at_scale`) published, each file written to disk as it is made
# (ASSAY_SCALE_DIR or a temp dir: about 12 KB a session), every file
# checked through manifest.json read back from there (`assay verify`'s
# step that needs no cache), then published again with one more session
# (hashed, not written). ASSAY_SCALE_COLD=1 writes the files back and
# drops them from the page cache before verify (posix_fadvise, only
# them), so verify reads from the disk at every size; ASSAY_SCALE_PLUS1=0
# leaves out the publish with one more session. ASSAY_PHASES=1 in the environment adds each
# publish phase's time and the resident memory after it. One process a size, under /usr/bin/time -v: its wall
# and CPU time, peak memory (maximum resident set), the largest file and
# the largest page written. Debug build (the test profile): compare the
# ratios between sizes, not the seconds. Prints the load average before
# each size (the machine is shared). BIN=PATH runs that test binary
# instead of building this tree's.
#
# ASSAY_SCALE_COLD=2 also drops the kernel's caches whole before verify (inodes
# and directory entries too; as root). CLI=1 then checks the release with
# the tool itself, in a process of its own as a user runs it: `assay verify
# --release DIR` with an empty cache (the files through manifest.json,
# then "no release node", as for a release checked away from its cache),
# the kernel's caches dropped first (as root); its phases (ASSAY_PHASES),
# wall, CPU and peak memory. CLI=PATH runs that assay binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(250000 1000000)
# BIN=path: that test binary (e.g. a copy built from another commit).
bin=${BIN:-}
[ -n "$bin" ] || bin=$(cargo test -q --bin assay --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"]==["bin"]: print(m["executable"])' |
    tail -1)
cli=${CLI:-}
if [ "$cli" = 1 ]; then
    cargo build -q --bin assay
    cli=$root/target/debug/assay
fi
for n in "${sizes[@]}"; do
    echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
    log=$(mktemp)
    kept=
    if [ -n "$cli" ] && [ -z "${ASSAY_SCALE_DIR:-}" ]; then
        kept=$(mktemp -d)
        export ASSAY_SCALE_DIR=$kept
    fi
    if ! ASSAY_SCALE_SESSIONS=$n /usr/bin/time -v "$bin" --exact \
        release::tests_scale::release_at_scale --ignored --nocapture \
        >"$log" 2>&1; then
        echo "sessions $n: did not finish (last lines below)"
    fi
    grep -E "^sessions |^phase |Maximum resident|Elapsed \(wall|User time|System time|Command terminated|Killed|memory" "$log" || tail -5 "$log"
    if [ -n "$cli" ]; then
        cache=$(mktemp -d)
        sync
        echo 3 2>/dev/null >/proc/sys/vm/drop_caches || echo "(the caches not dropped: not root)"
        echo "sessions $n: assay verify --release, a process of its own:"
        ASSAY_PHASES=1 /usr/bin/time -f "  %e s wall, %U s user, %S s system, peak %M KB" \
            "$cli" verify --release "$ASSAY_SCALE_DIR" --cache "$cache/cache" 2>&1 |
            grep -E "^phase verify release|^  [0-9.]+ s wall|^MISMATCH" | grep -v "no release node" || true
        rm -rf "$cache"
    fi
    if [ -n "$kept" ]; then
        rm -rf "$kept"
        unset ASSAY_SCALE_DIR
    fi
    rm -f "$log"
done
