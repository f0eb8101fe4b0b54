#!/usr/bin/env bash
# Blob hashing throughput: `assay hash FILE` (assay_engine::Digest::of_file,
# the code that names cache blobs) against the `b3sum` binary on a 1 GiB file.
#
#   benches/hash-vs-b3sum.sh [SIZE_MIB]      # default 1024
#
# Needs: a release build (`cargo build --release`), `b3sum` on PATH
# (`cargo install b3sum`), and `hyperfine` if available (`apt-get install -y
# hyperfine`); without hyperfine it times 5 runs of each with `date +%s.%N`.
# The file is hashed once by each tool first, so both read from the page cache:
# this measures hashing, not the disk. Prints the ratio b3sum time / assay
# time (>= 0.9 is the target; 1.0 means as fast as b3sum).
set -euo pipefail
cd "$(dirname "$0")/.."

size_mib=${1:-1024}
assay=target/release/assay
[ -x "$assay" ] || { echo "build first: cargo build --release" >&2; exit 1; }
command -v b3sum >/dev/null || { echo "needs b3sum: cargo install b3sum" >&2; exit 1; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
file="$dir/blob"
head -c "$((size_mib * 1024 * 1024))" /dev/urandom >"$file"

# Same digest, or the comparison means nothing.
a=$("$assay" hash "$file" | cut -d' ' -f1)
b=$(b3sum "$file" | cut -d' ' -f1)
[ "$a" = "$b" ] || { echo "digests differ: assay $a, b3sum $b" >&2; exit 1; }

if command -v hyperfine >/dev/null; then
    hyperfine --warmup 2 --runs 10 --export-json "$dir/h.json" \
        -n assay "$assay hash $file" -n b3sum "b3sum $file"
    python3 - "$dir/h.json" "$size_mib" <<'PY'
import json, sys
r = {x["command"]: x["mean"] for x in json.load(open(sys.argv[1]))["results"]}
mib = int(sys.argv[2])
print(f"assay {mib / r['assay']:.0f} MiB/s, b3sum {mib / r['b3sum']:.0f} MiB/s, "
      f"ratio (b3sum time / assay time) {r['b3sum'] / r['assay']:.2f}")
PY
else
    time_of() {
        "$@" >/dev/null # warm-up
        local start end
        start=$(date +%s.%N)
        for _ in 1 2 3 4 5; do "$@" >/dev/null; done
        end=$(date +%s.%N)
        echo "($end - $start) / 5" | bc -l
    }
    ta=$(time_of "$assay" hash "$file")
    tb=$(time_of b3sum "$file")
    printf 'assay %.3f s, b3sum %.3f s, ratio (b3sum time / assay time) %.2f\n' \
        "$ta" "$tb" "$(echo "$tb / $ta" | bc -l)"
fi
