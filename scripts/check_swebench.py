"""Loads a release's tasks.jsonl with SWE-bench's own loader and grades each
task's gold run with SWE-bench's own get_eval_report: every task must be
resolved by its gold patch and not by the empty patch.

usage: python check_swebench.py RELEASE/tasks.jsonl REPOSITORY

The eval script of each task is run as the harness runs it, in a fresh
clone of REPOSITORY at the task's base commit instead of /testbed.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

from swebench.harness.grading import get_eval_report
from swebench.harness.utils import load_swebench_dataset, make_test_spec


def run(instance, repo, patch, workdir):
    tree = Path(workdir) / "testbed"
    subprocess.run(["git", "clone", "-q", repo, str(tree)], check=True)
    subprocess.run(["git", "-C", str(tree), "checkout", "-q", instance["base_commit"]], check=True)
    if patch:
        subprocess.run(["git", "-C", str(tree), "apply", "-"], input=patch.encode(), check=True)
    spec = make_test_spec(instance)
    script = Path(workdir) / "eval.sh"
    script.write_text(spec.eval_script.replace("cd /testbed", f"cd {tree}"))
    log = Path(workdir) / "test_output.txt"
    with open(log, "wb") as out:
        subprocess.run(["bash", str(script)], stdout=out, stderr=subprocess.STDOUT)
    prediction = {"instance_id": instance["instance_id"], "model_name_or_path": "gold", "model_patch": patch}
    report = get_eval_report(spec, prediction, str(log), include_tests_status=True)
    return report[instance["instance_id"]], log.read_text()


def main():
    tasks, repo = sys.argv[1], sys.argv[2]
    instances = load_swebench_dataset(tasks)
    ids = [i["instance_id"] for i in instances]
    assert instances, f"{tasks}: no task"
    assert len(ids) == len(set(ids)), f"instance ids repeat: {sorted(ids)}"
    failed = []
    for inst in instances:
        for field in ("hints_text", "created_at", "version", "environment_setup_commit"):
            assert isinstance(inst.get(field), str), f"{inst['instance_id']}: no {field}"
        with tempfile.TemporaryDirectory() as gold_dir:
            gold, gold_log = run(inst, repo, inst["patch"], gold_dir)
        with tempfile.TemporaryDirectory() as empty_dir:
            empty, _ = run(inst, repo, "", empty_dir)
        verdict = f"{inst['instance_id']}: gold resolved={gold['resolved']}, empty patch resolved={empty['resolved']}"
        print(verdict)
        if not gold["resolved"] or empty["resolved"]:
            failed.append(verdict)
            print(gold.get("tests_status"), gold_log[-3000:], sep="\n", file=sys.stderr)
    if failed:
        sys.exit("SWE-bench disagrees:\n" + "\n".join(failed))
    print(f"{len(instances)} tasks loaded and graded by swebench: gold resolves each, the empty patch none")


if __name__ == "__main__":
    main()
