#!/usr/bin/env bash
# usage: benches/sandbox-start.sh BASE [ROUNDS] [RUNS] [COMMAND]
#
# A sandboxed run's start cost against a baseline checkout BASE (another
# checkout of assay, e.g. `git worktree add ../base main`), side by side:
# crates/assay-exec/examples/sandbox_start.rs (COMMAND, default `true`,
# through `assay_exec::run` as the local executor launches a graded run:
# bubblewrap, a graded run's limits and groups, the write watchdog) is
# built in release against this checkout and against BASE's assay-exec
# (the example is copied there: it uses the crate's public API only), and
# the two binaries run in turn ROUNDS times (default 5), RUNS runs each a
# round (default 20). Prints each round's medians (ms: sandboxed,
# unsandboxed through the runner, a plain `sh -c` spawn), the medians of
# the rounds, the ratio new/base of the sandboxed start, and the load
# average before and after.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
base=$(cd "${1:?usage: benches/sandbox-start.sh BASE [ROUNDS] [RUNS] [COMMAND]}" && pwd)
rounds=${2:-5}
runs=${3:-20}
command=${4:-true}
example=crates/assay-exec/examples/sandbox_start.rs
targets=${TMPDIR:-/tmp}/sandbox-start-targets
build() {
    CARGO_TARGET_DIR=$targets/$2 cargo build --quiet --release \
        --manifest-path "$1/Cargo.toml" -p assay-exec --example sandbox_start >&2
    echo "$targets/$2/release/examples/sandbox_start"
}
if [ "$base" != "$here" ]; then
    cp "$here/$example" "$base/$example"
fi
new=$(build "$here" new)
old=$(build "$base" base)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$targets/rounds"
for n in $(seq "$rounds"); do
    b=$(cd /tmp && "$old" "$runs" "$command")
    a=$(cd /tmp && "$new" "$runs" "$command")
    echo "round $n: base $b | new $a"
    echo "$b $a" >>"$targets/rounds"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$targets/rounds" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
# "sandboxed S unsandboxed U spawn P" twice a line: base, then new.
def col(i):
    return statistics.median(float(r[i]) for r in rows)
base = {"sandboxed": col(1), "unsandboxed": col(3), "spawn": col(5)}
new = {"sandboxed": col(7), "unsandboxed": col(9), "spawn": col(11)}
for k in base:
    print(f"median of rounds, {k}: base {base[k]:.1f} ms, new {new[k]:.1f} ms")
print(f"sandboxed start new/base: {new['sandboxed'] / base['sandboxed']:.2f}")
PY
