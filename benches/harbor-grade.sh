#!/usr/bin/env bash
# usage: benches/harbor-grade.sh [ASSAY] [SESSIONS]
#
# Grading a session on a reward-only Harbor task (Terminal-Bench's shape)
# against the task's own verifier run directly in a container, side by side
# on this machine. The task: `/app/calc.py` of an image built FROM
# assay-base:bookworm (scripts/base-image.sh), `tests/test.sh` writing a
# reward (as tests/harbor_tasks.rs builds it); SESSIONS gold sessions
# (default 5), each its own patch.
#
#   direct   per session: `docker run --rm --network none` of the task's
#            screened image with tests/ mounted, `git apply` of the patch in
#            /app, then tests/test.sh (the reward read back from the
#            container's output)
#   assay    per session: the `harbor_grade` node's duration (--json) of a
#            build that screened the task first (screening not timed): a
#            fresh container, the working directory copied out, patched,
#            copied in, the verifier run, its logs read back, the container
#            removed
#
# Prints the mean of each and the ratio the issue sets a target for (assay
# over direct, <= 1.2), and the second build's executed nodes (0).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
assay=$(realpath "${1:-$root/target/debug/assay}")
sessions=${2:-5}
"$root/scripts/base-image.sh" >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/harbor-grade-bench.XXXX")
# The environment images the bench's builds made (the release names them),
# removed by their `assay-harbor/` tags: an image goes with its last tag.
cleanup() {
    if [ -f "$work/release/harbor-tasks.jsonl" ]; then
        python3 - "$work/release/harbor-tasks.jsonl" <<'EOF' | while read -r tag; do docker rmi "$tag" >/dev/null 2>&1 || true; done
import json, subprocess, sys
for line in open(sys.argv[1]):
    task = json.loads(line)
    for env in (task.get("environment"), (task.get("rebuild") or {}).get("environment")):
        image = (env or {}).get("image")
        if not image:
            continue
        tags = subprocess.run(["docker", "image", "inspect", "--format", "{{range .RepoTags}}{{.}} {{end}}", image],
                              capture_output=True, text=True).stdout.split()
        for tag in tags:
            if tag.startswith("assay-harbor/"):
                print(tag)
EOF
    fi
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
task=tb/py-calc
mkdir -p "$task/environment" "$task/tests" "$task/solution" sessions
cat >"$task/task.toml" <<'EOF'
schema_version = "1.4"

[task]
name = "terminal/py-calc"

[verifier]
timeout_sec = 60.0

[environment]
network_mode = "no-network"
EOF
echo "Fix add() in /app/calc.py." >"$task/instruction.md"
printf 'FROM assay-base:bookworm\nWORKDIR /app\nCOPY calc.py /app/calc.py\n' >"$task/environment/Dockerfile"
printf 'def add(a, b):\n    return a - b\n' >"$task/environment/calc.py"
printf '#!/bin/sh\nif python3 /tests/test_calc.py >&2; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n' >"$task/tests/test.sh"
printf "import sys\nsys.path.insert(0, '/app')\nimport calc\nassert calc.add(2, 3) == 5\n" >"$task/tests/test_calc.py"
printf '#!/bin/sh\nsed -i "s/a - b/a + b/" /app/calc.py\n' >"$task/solution/solve.sh"
chmod +x "$task/tests/test.sh" "$task/solution/solve.sh"
printf 'cache = "cache"\nrelease = "release"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = "tb"\npath = "tb"\n' >pipeline.toml
"$assay" build >/dev/null 2>&1 # screening, not timed
for i in $(seq 1 "$sessions"); do
    printf 'diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b  # %s\n' "$i" >"sessions/s$i.diff"
    printf '{"task": "terminal/py-calc", "agent": "a", "model": "m", "patch_file": "s%s.diff"}\n' "$i" >"sessions/s$i.json"
done
printf 'sessions = "sessions"\n' | cat - pipeline.toml >p && mv p pipeline.toml
"$assay" build --jobs 1 --json >build.jsonl 2>/dev/null # one node at a time, as the direct runs
image=$(python3 -c 'import json; print(json.loads(open("release/harbor-tasks.jsonl").readline())["environment"]["image"])')
start=$(date +%s%N)
for i in $(seq 1 "$sessions"); do
    reward=$(docker run --rm --network none -v "$work/$task/tests:/tests:ro" -v "$work/sessions/s$i.diff:/patch:ro" \
        --entrypoint sh "$image" -c 'mkdir -p /logs/verifier && cd /app && git apply /patch && /tests/test.sh 2>/dev/null; cat /logs/verifier/reward.txt')
    [ "$reward" = 1 ] || { echo "direct run $i: reward $reward" >&2; exit 1; }
done
direct_ms=$((($(date +%s%N) - start) / 1000000 / sessions))
assay_ms=$(python3 - build.jsonl <<'EOF'
import json, sys
d = [json.loads(l)["duration_ms"] for l in open(sys.argv[1]) if '"node_finished"' in l and json.loads(l).get("kind") == "harbor_grade"]
assert d, "no harbor_grade node ran"
print(sum(d) // len(d))
EOF
)
"$assay" build --json >again.jsonl 2>/dev/null
executed=$(grep -c '"node_finished"' again.jsonl || true)
echo "direct ${direct_ms} ms/session, assay ${assay_ms} ms/session, ratio $(python3 -c "print(round($assay_ms / $direct_ms, 2))") (target <= 1.2); second build: ${executed} nodes executed"
