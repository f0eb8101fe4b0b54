#!/usr/bin/env bash
# Grading throughput: 1,000 sessions on one tiny task, one arm.
#
# Builds a repository with one merged PR (a stdlib-unittest suite that runs in
# ~50 ms), screens it (not timed), then adds 1,000 session files whose patches
# are the fix plus a distinct comment line (so every session has its own tree
# and its own run) and times `assay build --jobs 2` with `arms = ["exclude"]`.
#
# Prints:
#   - the grading build's wall time and how many grade/run nodes it executed;
#   - the raw cost: the test command run directly in a prepared directory
#     (N runs, default 100, scaled to 1,000), with the same serialisation
#     assay applies (runs in one local environment run one at a time);
#   - the ratio harness / raw (target <= 1.10), and, because a shared machine
#     drifts, the children's own durations as assay recorded them (read from
#     cache/index.sqlite) against the wall time: what the harness adds;
#   - the no-op rebuild's wall time (target < 1 s).
#
# Usage: benches/grade-1000.sh [path/to/assay]   (default: target/release/assay,
#        built with `cargo build --release` when missing)
# Env:   SESSIONS (default 1000), RAW_N (default 100), JOBS (default 2),
#        KEEP=1 keeps the work directory (printed).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/benches/lib.sh"
ASSAY=$(assay_binary "$@")
SESSIONS=${SESSIONS:-1000}
RAW_N=${RAW_N:-100}
JOBS=${JOBS:-2}
work=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then echo "work dir: $work"; else trap 'rm -rf "$work"' EXIT; fi
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@x
export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z
now() { date +%s.%N; }

cd "$work"
git init -q -b main repo && cd repo
mkdir -p pkg tests && touch pkg/__init__.py tests/__init__.py
printf 'def double(x):\n    return x\n' > pkg/mod.py
cat > tests/test_mod.py <<'PY'
import unittest

from pkg import mod


class TestMod(unittest.TestCase):
    def test_zero(self):
        self.assertEqual(mod.double(0), 0)
PY
git add -A && git commit -qm init
git checkout -qb fix
printf 'def double(x):\n    return 2 * x\n' > pkg/mod.py
printf '\n    def test_two(self):\n        self.assertEqual(mod.double(2), 4)\n' >> tests/test_mod.py
git commit -qam "Fix double"
git checkout -q main && git merge -q --no-ff fix -m "Merge pull request #1 from o/fix" -m "Fix double"
cd "$work"
mkdir statements sessions && echo "double(2) returns 2." > statements/p-1.md
cat > pipeline.toml <<'TOML'
statements = "statements"
sessions = "sessions"
[[source]]
name = "p"
path = "repo"
[env]
test_command = "python3 -m unittest -v"
report = "unittest"
[grade]
arms = ["exclude"]
reruns = 1
rerun_command = "python3 -m unittest -v {files}"
TOML

# Screen the task (not timed).
"$ASSAY" build --jobs "$JOBS" >/dev/null 2>"$work/screen.err" || { cat "$work/screen.err"; exit 1; }

# 1,000 sessions: the fix plus a distinct comment line, as `git diff` writes it.
python3 - "$SESSIONS" <<'PY'
import json, os, sys
n = int(sys.argv[1])
for i in range(n):
    patch = (
        "diff --git a/pkg/mod.py b/pkg/mod.py\n"
        "--- a/pkg/mod.py\n"
        "+++ b/pkg/mod.py\n"
        "@@ -1,2 +1,3 @@\n"
        f"+# session {i}\n"
        " def double(x):\n"
        "-    return x\n"
        "+    return 2 * x\n"
    )
    d = f"sessions/agent-{i % 10}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/s{i:04d}.json", "w") as f:
        json.dump({"task": "p-1", "agent": f"agent-{i % 10}", "model": "m",
                   "patch": patch}, f)
PY

# The raw cost: the graded tree of one session (base + fix + hidden tests),
# the test command run directly, RAW_N times in a row, measured before and
# after the grading build (the mean is used; a shared machine drifts).
mkdir direct && git -C repo archive HEAD | tar -x -C direct
printf '# session 0\ndef double(x):\n    return 2 * x\n' > direct/pkg/mod.py
raw_loop() {
    for _ in $(seq 1 "$RAW_N"); do
        (cd direct && python3 -m unittest -v >/dev/null 2>&1 || true)
        rm -rf direct/pkg/__pycache__ direct/tests/__pycache__   # every assay run starts from a fresh tree
    done
}
t2=$(now); raw_loop; t3=$(now)

t0=$(now)
"$ASSAY" build --jobs "$JOBS" --json >"$work/grade.jsonl" 2>"$work/grade.err" || { tail -20 "$work/grade.err"; exit 1; }
t1=$(now)

t6=$(now); raw_loop; t7=$(now)

t4=$(now)
"$ASSAY" build --jobs "$JOBS" --json >"$work/noop.jsonl" 2>/dev/null
t5=$(now)

python3 - "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$t6" "$t7" "$SESSIONS" "$RAW_N" "$work" "$JOBS" <<'PY'
import csv, json, sys
t0, t1, t2, t3, t4, t5, t6, t7 = map(float, sys.argv[1:9])
n, raw_n, work, jobs = int(sys.argv[9]), int(sys.argv[10]), sys.argv[11], sys.argv[12]
def summary(path):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    return lines[-1]
g, noop = summary(f"{work}/grade.jsonl"), summary(f"{work}/noop.jsonl")
k = g["by_kind"]
ex = lambda kind: k.get(kind, {}).get("executed", 0)
with open(f"{work}/release/results.csv", newline="") as f:
    rows = list(csv.DictReader(f))
verdicts = {}
for r in rows:
    verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
harness = t1 - t0
raw_before, raw_after = (t3 - t2) / raw_n, (t7 - t6) / raw_n
raw = (raw_before + raw_after) / 2 * n
print(f"sessions: {n}; grade nodes executed: {ex('grade')}; runs executed: {ex('run')}; "
      f"stage: {ex('stage')}; verdicts: {verdicts}")
print(f"grading build (--jobs {jobs}): {harness:.3f} s "
      f"({harness / n * 1000:.1f} ms/session)")
print(f"raw: {raw_n} direct runs before {t3 - t2:.3f} s, after {t7 - t6:.3f} s -> "
      f"mean x{n / raw_n:g} = {raw:.3f} s ({raw / n * 1000:.1f} ms/run)")
print(f"ratio harness/raw: {harness / raw:.3f} (target <= 1.10)")
# Attribution, immune to load drift: the children's own durations as assay
# recorded them (run records, read through the cache index) against the wall.
import sqlite3
db = sqlite3.connect(f"{work}/cache/index.sqlite")
child = []
for inline, output in db.execute(
        "select inline, output from nodes where kind = 'run' and build = "
        "(select max(build) from nodes where kind = 'grade')"):
    if inline is None:
        h = output.hex()
        inline = open(f"{work}/cache/blobs/{h[:2]}/{h[2:]}", "rb").read()
    child.append(json.loads(inline)["duration_ms"] / 1000)
if child:
    c = sum(child)
    print(f"children (as recorded): {c:.3f} s over {len(child)} runs "
          f"({c / len(child) * 1000:.1f} ms/run); harness outside the children: "
          f"{harness - c:.3f} s ({(harness - c) / n * 1000:.1f} ms/session); wall/children {harness / c:.3f}")
print(f"no-op rebuild: {t5 - t4:.3f} s, executed {noop['executed']} (target < 1 s)")
PY
