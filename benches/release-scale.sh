#!/usr/bin/env bash
# usage: benches/release-scale.sh [TASKS] [path/to/assay]   (default 1000,
#        target/release/assay, built with `cargo build --release` when missing)
#
# A whole build at scale, end to end: a real git repository of TASKS merged
# PRs, each with a trivial suite (a shell script printing TAP, unsandboxed:
# `benches/release-scale-gen.py` says what it holds), and 10 agents x 3
# attempts of session files a task; mined, triaged, screened, certified,
# every session graded, the release published. At TASKS/4 and at TASKS side
# by side (ratio: 4.00 is a cost that grows linearly), and the bundled example
# (root pipeline.toml) beside them, each from an empty cache:
#   - the build's wall time and the release node's own time (its
#     `node_finished` event's `duration_ms` in `assay build --json`);
#   - `assay verify` (the cache and the release, every file recomputed);
#   - a +1-session rebuild: one new session file (a tree no other session
#     has), its wall time, the release node's time and what it executed;
#   - the release's largest page and headless Chromium's wall time to load it
#     (`--dump-dom`), and report.html's.
# Each time beside its CPU time (user + system, the cold build's with every
# run and git process it waited for; the release node's from its phase
# timers, ASSAY_PHASES): the ratios to trust on a shared machine.
# Env: JOBS (default 2), CHROMIUM_LIMIT (seconds, default 120), EXAMPLE=0 leaves out the example, KEEP=1 keeps the
#      work directory (printed), SIZES="250 1000" overrides the two sizes,
#      WORK=DIR measures again in a kept work directory (its example/ and
#      t<SIZE>/ directories; symbolic links will do): a comment is added to
#      each pipeline.toml, whose digest the release node's key holds, so the
#      first build runs the release node alone; then verify, and one more
#      session.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tasks=${1:-1000}
if [ $# -ge 2 ]; then
    ASSAY=$(realpath "$2")
else
    ASSAY="$root/target/release/assay"
    [ -x "$ASSAY" ] || (cd "$root" && cargo build --release --quiet --bin assay)
fi
JOBS=${JOBS:-2}
# The release node's own phase timers (wall and CPU), in build.err/plus1.err.
export ASSAY_PHASES=1
sizes=${SIZES:-"$((tasks / 4)) $tasks"}
if [ -n "${WORK:-}" ]; then
    work=$(realpath "$WORK")
    rm -f "$work/results.tsv"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/release-scale.XXXX")
    if [ "${KEEP:-0}" = 1 ]; then echo "work dir: $work"; else trap 'rm -rf "$work"' EXIT; fi
fi
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@x
export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z
now() { date +%s.%N; }
results="$work/results.tsv"

# chromium_load FILE: wall seconds to load it, or "-" past the limit.
chromium_load() {
    local start end
    start=$(now)
    if timeout "${CHROMIUM_LIMIT:-120}" chromium --headless --no-sandbox --disable-gpu \
        --dump-dom "file://$1" >/dev/null 2>&1; then
        end=$(now)
        echo "$end - $start" | bc
    else
        echo "-"
    fi
}

# cpu FILE COMMAND...: runs COMMAND, writing its CPU seconds (user + system,
# its children's included) to FILE: on a shared machine the wall time
# moves with the load, the CPU time much less.
cpu() {
    local out=$1
    shift
    /usr/bin/time -f '%U %S' -o "$out" "$@"
}

# measure LABEL DIR [ONE_MORE]: build DIR's pipeline from an empty cache,
# verify, add one session (ONE_MORE: the command that adds it), rebuild.
measure() {
    local label=$1 dir=$2 one_more=$3 t0 t1 t2 t3 t4 t5
    cd "$dir"
    if [ -d cache ]; then
        # Measuring again: a comment changes the pipeline file's digest,
        # which the release node's provenance holds, so the release node
        # alone runs again (the release-only rebuild).
        echo "# measured again $(date +%s.%N)" >>pipeline.toml
    fi
    t0=$(now)
    cpu build.cpu "$ASSAY" build --jobs "$JOBS" --json >build.jsonl 2>build.err ||
        { tail -20 build.err; exit 1; }
    t1=$(now)
    cpu verify.cpu "$ASSAY" verify >verify.out 2>verify.err || { tail -20 verify.out verify.err; exit 1; }
    t2=$(now)
    eval "$one_more"
    t3=$(now)
    cpu plus1.cpu "$ASSAY" build --jobs "$JOBS" --json >plus1.jsonl 2>plus1.err ||
        { tail -20 plus1.err; exit 1; }
    t4=$(now)
    local largest page_kb chromium report_kb report_chromium
    largest=$(find release/pages -type f -printf '%s %p\n' 2>/dev/null | sort -n | tail -1 | cut -d' ' -f2)
    page_kb=$(( $(stat -c %s "$largest") / 1024 ))
    chromium=$(chromium_load "$dir/$largest")
    report_kb=$(( $(stat -c %s release/report.html) / 1024 ))
    report_chromium=$(chromium_load "$dir/release/report.html")
    python3 - "$label" "$t0" "$t1" "$t2" "$t3" "$t4" "$largest" "$page_kb" "$chromium" \
        "$report_kb" "$report_chromium" >>"$results" <<'PY'
import json, re, sys
label = sys.argv[1]
t0, t1, t2, t3, t4 = map(float, sys.argv[2:7])
largest, page_kb, chromium, report_kb, report_chromium = sys.argv[7:12]
chromium, report_chromium = [c if c == "-" else f"{float(c):.2f}"
                             for c in (chromium, report_chromium)]

def cpu(path):
    return f"{sum(map(float, open(path).read().split()[-2:])):.2f}"

def release_cpu(path):
    """The release node's CPU seconds, from its phase timers (ASSAY_PHASES)."""
    total = 0.0
    for line in open(path):
        m = re.match(r"phase release \S+: \S+ s wall, (\S+) s cpu", line)
        if m:
            total += float(m.group(1))
    return f"{total:.2f}"

def read(path):
    events = [json.loads(l) for l in open(path) if l.strip()]
    release = sum(e["duration_ms"] for e in events
                  if e.get("event") == "node_finished" and e["kind"] == "release")
    kinds = {}
    for e in events:
        if e.get("event") == "node_finished":
            kinds[e["kind"]] = kinds.get(e["kind"], 0) + e["duration_ms"]
    return events[-1], release / 1000, kinds

build, release, kinds = read("build.jsonl")
plus, plus_release, _ = read("plus1.jsonl")
grades = build["by_kind"].get("grade", {})
sessions = grades.get("executed", 0) + grades.get("reused", 0)
executed = {k: v["executed"] for k, v in plus["by_kind"].items() if v["executed"]}
print("\t".join(map(str, [
    label, sessions, f"{t1 - t0:.2f}", cpu("build.cpu"), f"{release:.2f}", release_cpu("build.err"),
    f"{t2 - t1:.2f}", cpu("verify.cpu"), f"{t4 - t3:.2f}", cpu("plus1.cpu"),
    f"{plus_release:.2f}", release_cpu("plus1.err"), json.dumps(executed, separators=(",", ":")),
    largest.removeprefix("release/"), page_kb, chromium, report_kb, report_chromium,
    json.dumps({k: round(v / 1000, 1) for k, v in sorted(kinds.items())},
               separators=(",", ":")),
])))
PY
    cd "$work"
}

if [ "${EXAMPLE:-1}" = 1 ]; then
    if [ ! -d "$work/example" ]; then
        mkdir -p "$work/example/examples"
        cp "$root/pipeline.toml" "$work/example/"
        cp -a "$root/examples/calc" "$root/examples/lib" "$work/example/examples/"
        rm -rf "$work/example/examples/calc/repo"
    fi
    # One more session: a copy of alpha's calc-1 (its trees are graded
    # already, so its runs are reused).
    measure example "$work/example" \
        'i=1; while [ -e examples/calc/sessions/alpha/calc-1-again$i.json ]; do i=$((i + 1)); done
         cp examples/calc/sessions/alpha/calc-1.json examples/calc/sessions/alpha/calc-1-again$i.json'
fi
for n in $sizes; do
    if [ ! -d "$work/t$n" ]; then
        mkdir "$work/t$n"
        t0=$(now)
        python3 "$root/benches/release-scale-gen.py" "$work/t$n" "$n"
        t1=$(now)
        printf 'generated %s tasks, %s session files: %.1f s\n' "$n" "$((n * 30))" \
            "$(echo "$t1 - $t0" | bc)" >&2
    fi
    measure "$n tasks" "$work/t$n" "python3 '$root/benches/release-scale-gen.py' . $n --one-more"
done

python3 - "$results" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
head = ["", "grades", "build wall s", "build cpu s", "release node s", "release node cpu s",
        "verify s", "verify cpu s", "+1 wall s", "+1 cpu s", "+1 release node s",
        "+1 release cpu s", "+1 executed", "largest page", "KiB", "chromium s",
        "report.html KiB", "chromium s", "node time by kind s"]
for r in rows:
    print("\n".join(f"{h:>18}: {v}" for h, v in zip(head, r)))
    print()
sized = [r for r in rows if r[0] != "example"]
if len(sized) == 2:
    (a, b) = sized
    ratio = lambda i: float(b[i]) / float(a[i]) if float(a[i]) else float("nan")
    print(f"ratio {b[0]} / {a[0]} (grades x{int(b[1]) / int(a[1]):.2f}; 4.00 is linear): "
          f"build {ratio(2):.2f} (cpu {ratio(3):.2f}), release node {ratio(4):.2f} (cpu {ratio(5):.2f}), "
          f"verify {ratio(6):.2f} (cpu {ratio(7):.2f}), +1 rebuild {ratio(8):.2f} "
          f"(cpu {ratio(9):.2f}), +1 release node {ratio(10):.2f} (cpu {ratio(11):.2f})")
PY
