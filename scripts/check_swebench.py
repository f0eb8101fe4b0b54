"""Loads a release's tasks.jsonl with SWE-bench's own loader and grades runs
of it with SWE-bench's own harness functions (swebench >= 5):

- every task's gold patch must resolve it, and the empty patch must not;
- with SESSIONS (the sessions directory the release graded), every session
  of results.csv is graded as the harness grades a prediction: its patch
  applied to the base as `run_instance` applies it (its `GIT_APPLY_CMDS`,
  in order), the task's published eval script run, the log graded by
  `get_eval_report` with the task's log parser. Its verdict must agree with
  assay's in every arm of results.csv, except for exactly the sessions that
  docs/verdicts.md lists under "SWE-bench's harness", each with the
  verdicts listed there (a listed difference that is gone fails too).

usage: python check_swebench.py RELEASE REPOSITORY [SESSIONS]

Every run is in a fresh clone of REPOSITORY at the task's base commit in a
temporary directory, in place of /testbed.
"""

import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import swebench
from swebench.harness.constants import APPLY_PATCH_FAIL, TESTS_TIMEOUT
from swebench.harness.grading import get_eval_report
from swebench.harness.run_evaluation import GIT_APPLY_CMDS
from swebench.harness.utils import load_swebench_dataset, make_test_spec

# 4.x fails in make_test_spec on assay's tasks (they carry their own
# eval_script and log_parser).
assert int(swebench.__version__.split(".")[0]) >= 5, f"swebench {swebench.__version__}: 5 or later loads assay's tasks"

VERDICTS_MD = Path(__file__).resolve().parent.parent / "docs" / "verdicts.md"
# The harness's default (`--timeout`).
TIMEOUT_S = 1800


def git(tree, *args, **kw):
    return subprocess.run(["git", "-C", str(tree), *args], **kw)


def clone(repo, base, workdir):
    tree = Path(workdir) / "testbed"
    subprocess.run(["git", "clone", "-q", repo, str(tree)], check=True)
    git(tree, "checkout", "-q", base, check=True)
    return tree


def apply_model_patch(tree, patch, workdir):
    """The harness's `run_instance`: each of GIT_APPLY_CMDS in turn from a
    clean tree, then whether the patch is already applied. Returns what
    the harness logs."""
    patch_file = Path(workdir) / "patch.diff"
    patch_file.write_bytes(patch)
    out = b""
    for attempt, cmd in enumerate(GIT_APPLY_CMDS):
        if attempt:
            subprocess.run(["bash", "-c", "git checkout -- . ; git clean -fd"], cwd=tree, capture_output=True)
        ran = subprocess.run([*cmd.split(), str(patch_file)], cwd=tree, capture_output=True)
        out = ran.stdout + ran.stderr
        if ran.returncode == 0:
            return True, f"{cmd}: applied"
    if git(tree, "apply", "--check", "--reverse", str(patch_file), capture_output=True).returncode == 0:
        return True, "already applied"
    return False, f"{APPLY_PATCH_FAIL}:\n{out.decode(errors='replace')}"


def run(instance, repo, patch, workdir):
    """SWE-bench's report of `patch` (bytes; None: the base as it is) on
    `instance`, and the log."""
    tree = clone(repo, instance["base_commit"], workdir)
    spec = make_test_spec(instance)
    prediction = {
        "instance_id": instance["instance_id"],
        "model_name_or_path": "assay-check",
        "model_patch": (patch or b"").decode(errors="replace"),
    }
    log = Path(workdir) / "test_output.txt"
    applied, how = (True, "") if patch is None else apply_model_patch(tree, patch, workdir)
    if not applied:
        # run_instance stops here: no test output, no report (unresolved).
        log.write_text(how)
        return {"resolved": False, "error": "patch apply failed"}, how
    # In the clone, never anywhere else: the script runs what it is given.
    assert spec.eval_script.count("\ncd /testbed\n") == 1, spec.eval_script
    script = Path(workdir) / "eval.sh"
    script.write_text(spec.eval_script.replace("\ncd /testbed\n", f"\ncd '{tree}' || exit 1\n"))
    env = {"PATH": os.environ["PATH"], "HOME": str(workdir), "LANG": "C.UTF-8"}
    with open(log, "wb") as out:
        try:
            subprocess.run(
                ["bash", str(script)], cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=TIMEOUT_S
            )
            timed_out = False
        except subprocess.TimeoutExpired:
            out.write(f"\n{TESTS_TIMEOUT}\n".encode())
            timed_out = True
    if timed_out:
        # run_instance stops here too: no report.
        return {"resolved": False, "error": "timed out"}, log.read_text(errors="replace")
    report = get_eval_report(spec, prediction, str(log), include_tests_status=True)
    return report[instance["instance_id"]], log.read_text(errors="replace")


def check_gold_and_empty(instances, repo):
    failed = []
    for inst in instances:
        for field in ("hints_text", "created_at", "version", "environment_setup_commit"):
            assert isinstance(inst.get(field), str), f"{inst['instance_id']}: no {field}"
        with tempfile.TemporaryDirectory() as gold_dir:
            gold, gold_log = run(inst, repo, inst["patch"].encode(), gold_dir)
        with tempfile.TemporaryDirectory() as empty_dir:
            # The base as it is (an empty prediction never gets past the
            # harness's patch step: graded here as no patch at all).
            empty, _ = run(inst, repo, None, empty_dir)
        verdict = f"{inst['instance_id']}: gold resolved={gold['resolved']}, empty patch resolved={empty['resolved']}"
        print(verdict)
        if not gold["resolved"] or empty["resolved"]:
            failed.append(verdict)
            print(gold.get("tests_status"), gold_log[-3000:], sep="\n", file=sys.stderr)
    return failed


def session_patch(sessions, session):
    """The patch of a session as results.csv names it: `alpha/calc-1.json`
    (its `patch` or `patch_file`), or `swebench/predictions.jsonl#2` (that
    line's `model_patch`)."""
    path, _, line = session.partition("#")
    file = sessions / path
    if line:
        pred = json.loads(file.read_text().splitlines()[int(line) - 1])
        return (pred.get("model_patch") or "").encode()
    record = json.loads(file.read_text())
    if "patch_file" in record:
        return (file.parent / record["patch_file"]).read_bytes()
    return (record.get("patch") or "").encode()


def listed_differences():
    """docs/verdicts.md's table of the sessions SWE-bench's harness grades
    otherwise, by design: session -> (assay's verdict, SWE-bench's)."""
    text = VERDICTS_MD.read_text()
    at = text.index("| session | assay | SWE-bench | why |")
    listed = {}
    for row in text[at:].splitlines()[2:]:
        if not row.startswith("|"):
            break
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        ticked = [re.findall(r"`([^`]+)`", c) for c in cells[:3]]
        listed[ticked[0][0]] = (ticked[1][0], ticked[2][0])
    return listed


# What each of assay's verdicts is in SWE-bench's harness, where it has one
# (the words of swebench_verdict); a verdict not here has none and always
# differs: it must be listed.
AS_SWEBENCH = {
    "resolved": "resolved",
    "unresolved": "unresolved",
    "no_report": "no test output",
    "patch_apply_failed": "patch apply failed",
}


def swebench_verdict(report):
    """The harness's outcome: resolved; unresolved (the tests were graded);
    no test output (get_logs_eval found none it believes); patch apply
    failed; timed out (both end run_instance with no report)."""
    if report["resolved"]:
        return "resolved"
    if report.get("error"):
        return report["error"]
    return "unresolved" if report.get("patch_successfully_applied") else "no test output"


def check_sessions(instances, repo, release, sessions):
    by_id = {i["instance_id"]: i for i in instances}
    arms = {}
    with open(release / "results.csv", newline="") as f:
        for row in csv.DictReader(f):
            arms.setdefault((row["session"], row["instance_id"]), {})[row["arm"]] = row["verdict"]
    listed = listed_differences()
    differ, agree = {}, 0
    for (session, instance_id), verdicts in sorted(arms.items()):
        inst = by_id.get(instance_id)
        assert inst, f"{session}: {instance_id} is not in tasks.jsonl"
        with tempfile.TemporaryDirectory() as workdir:
            report, log = run(inst, repo, session_patch(sessions, session), workdir)
        swe = swebench_verdict(report)
        shown = ", ".join(f"{arm} {v}" for arm, v in sorted(verdicts.items()))
        print(f"{session} ({instance_id}): assay {shown}; swebench {swe}")
        if all(AS_SWEBENCH.get(v) == swe for v in verdicts.values()):
            agree += 1
            continue
        differ[session] = (verdicts, swe)
        if session not in listed:
            print(report.get("tests_status"), log[-2000:], sep="\n", file=sys.stderr)
    failed = []
    for session, (verdicts, swe) in sorted(differ.items()):
        expected = listed.get(session)
        if expected is None:
            failed.append(f"{session}: assay {verdicts}, swebench {swe}: a difference docs/verdicts.md does not list")
        elif any(v != expected[0] for v in verdicts.values()) or swe != expected[1]:
            failed.append(f"{session}: assay {verdicts}, swebench {swe}: docs/verdicts.md lists {expected}")
    for session in sorted(set(listed) - set(differ)):
        failed.append(f"{session}: listed in docs/verdicts.md as a difference, but the verdicts agree")
    print(
        f"{len(arms)} sessions graded by swebench's harness: {agree} agree with assay, "
        f"{len(differ)} differ ({len(set(differ) & set(listed))} of them as docs/verdicts.md lists)"
    )
    return failed


def main():
    release, repo = Path(sys.argv[1]), sys.argv[2]
    sessions = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    instances = load_swebench_dataset(str(release / "tasks.jsonl"))
    ids = [i["instance_id"] for i in instances]
    assert instances, f"{release}/tasks.jsonl: no task"
    assert len(ids) == len(set(ids)), f"instance ids repeat: {sorted(ids)}"
    failed = check_gold_and_empty(instances, repo)
    print(f"{len(instances)} tasks loaded and graded by swebench {swebench.__version__}")
    if sessions is not None:
        failed += check_sessions(instances, repo, release, sessions)
    if failed:
        sys.exit("SWE-bench disagrees:\n" + "\n".join(failed))


if __name__ == "__main__":
    main()
