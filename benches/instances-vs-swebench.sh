#!/usr/bin/env bash
# usage: benches/instances-vs-swebench.sh [ASSAY]
#
# One SWE-bench-shaped instance (docs/instances.md) graded by assay and by
# SWE-bench's own harness (`swebench.harness.run_evaluation`, the
# virtualenv scripts/check-swebench.sh --setup makes, offline: the image
# is local and never pulled) on the same image, side by side: the
# instance is tests/instances.rs's (a Python repository in SWE-bench's
# Django layout at /testbed of an image FROM assay-base:bookworm, named
# `sweb.eval.x86_64.<id>:latest`), with gold, empty and wrong predictions.
#
#   assay      the durations (--json) of the scored arm's grading nodes
#              (stage, run, recheck, grade) per session, of a build that
#              screened the instance first (screening not timed)
#   swebench   the wall time of run_evaluation over the three predictions
#              (one worker: a container per prediction, the published eval
#              script of assay's tasks.jsonl run in the instance's image)
#
# Prints each side's verdicts and total time, their ratio, and the load.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
assay=$(realpath "${1:-$here/target/debug/assay}")
venv=${ASSAY_SWEBENCH_VENV:-$here/target/swebench-venv}
work=$(mktemp -d /tmp/instances-bench.XXXXXX)
id=django__calc-$$
image=sweb.eval.x86_64.$id:latest
cleanup() { docker rmi -f "$image" >/dev/null 2>&1 || true; [ -n "${KEEP:-}" ] || rm -rf "$work"; }
trap cleanup EXIT
cd "$work"
repo=image/repo
mkdir -p "$repo/tests"
g() { git -C "$repo" -c user.name=bench -c user.email=bench@localhost "$@"; }
g init -q -b main
printf 'def add(a, b):\n    return a + b\n' > "$repo/calc.py"
printf 'import unittest\n\nimport calc\n\n\nclass CalcTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n' > "$repo/tests/test_calc.py"
cp "$here/tests/instances/runtests.py" "$repo/tests/runtests.py"
chmod +x "$repo/tests/runtests.py"
g add -A && g commit -q -m base
base=$(g rev-parse HEAD)
printf '\n\nclass MulTest(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(calc.mul(3, 4), 12)\n' >> "$repo/tests/test_calc.py"
g add -A && test_patch=$(g diff --cached --binary "$base") && g reset -q --hard "$base"
printf '\n\ndef mul(a, b):\n    return a * b\n' >> "$repo/calc.py"
gold=$(g diff --binary "$base") && g reset -q --hard "$base"
printf 'FROM assay-base:bookworm\nUSER root\nCOPY repo /testbed\nWORKDIR /testbed/\n' > image/Dockerfile
docker build -q -t "$image" image >/dev/null
wrong=${gold//return a \* b/return a + b}
python3 - "$id" "$base" "$test_patch" "$gold" "$wrong" <<'PY'
import json, os, sys
iid, base, test_patch, gold, wrong = sys.argv[1:]
row = {"repo": "django/django", "instance_id": iid, "base_commit": base, "patch": gold + "\n",
       "test_patch": test_patch + "\n", "problem_statement": "Add `calc.mul(a, b)`.", "version": "3.0",
       "FAIL_TO_PASS": json.dumps(["test_mul (test_calc.MulTest.test_mul)"]),
       "PASS_TO_PASS": json.dumps(["test_add (test_calc.CalcTest.test_add)"])}
open("instances.jsonl", "w").write(json.dumps(row) + "\n")
os.makedirs("sessions")
for name, patch in [("gold", gold + "\n"), ("empty", ""), ("wrong", wrong + "\n")]:
    open(f"sessions/{name}.diff", "w").write(patch)
    json.dump({"task": f"sb/{iid}", "agent": name, "model": "m", "patch_file": f"{name}.diff"},
              open(f"sessions/{name}.json", "w"))
PY
printf 'sessions = "sessions"\n\n[screen]\nrepeats = 1\n\n[[instances]]\nname = "sb"\npath = "instances.jsonl"\n' > pipeline.toml
"$assay" build --json > build.jsonl 2> build.err || { cat build.err >&2; exit 1; }
python3 - "$id" "$image" <<'PY'
import csv, json, sys
iid, image = sys.argv[1:]
task = json.loads(open("release/tasks.jsonl").readline())
task.update(instance_id=iid, image=image)
json.dump([task], open("dataset.json", "w"))
with open("predictions.jsonl", "w") as out:
    for name in ["gold", "empty", "wrong"]:
        patch = open(f"sessions/{name}.diff").read()
        out.write(json.dumps({"instance_id": iid, "model_name_or_path": name, "model_patch": patch}) + "\n")
PY
ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
start=$(ms)
for name in gold empty wrong; do
    grep "\"model_name_or_path\": \"$name\"" predictions.jsonl > "pred-$name.jsonl"
    "$venv/bin/python" -m swebench.harness.run_evaluation -d dataset.json -p "pred-$name.jsonl" \
        --max_workers 1 -id "bench-$name" --report_dir . > "swebench-$name.log" 2>&1
done
swebench_ms=$(( $(ms) - start ))
python3 - "$swebench_ms" <<'PY'
import csv, glob, json, os, sys
swebench_ms = int(sys.argv[1])
events = [json.loads(l) for l in open("build.jsonl") if l.startswith("{")]
took = {e["name"]: e.get("duration_ms", 0) for e in events if e.get("event") == "node_finished"}
assay = {r["session"]: r["verdict"] for r in csv.DictReader(open("release/results.csv")) if r["arm"] == "exclude"}
assay_ms = sum(ms for name, ms in took.items()
               if name.split(":")[0] in ("stage", "run", "recheck", "grade") and name.endswith(":exclude"))
theirs = {}
for name in ["gold", "empty", "wrong"]:
    reports = glob.glob(f"logs/run_evaluation/bench-{name}/{name}/*/report.json")
    resolved = reports and any(v.get("resolved") for v in json.load(open(reports[0])).values())
    theirs[f"{name}.json"] = "resolved" if resolved else "unresolved"
print("verdicts (assay | swebench):")
for s in sorted(assay):
    print(f"  {s:12} {assay[s]:12} {theirs.get(s)}")
print(f"assay graded runs (scored arm, 3 sessions): {assay_ms} ms")
print(f"swebench run_evaluation (3 predictions, wall): {swebench_ms} ms")
print(f"ratio assay / swebench: {assay_ms / max(swebench_ms, 1):.2f}")
print("load:", open("/proc/loadavg").read().strip())
PY
