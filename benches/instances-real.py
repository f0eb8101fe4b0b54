"""benches/instances-real.sh's helper.

row ID BASE PREFIX FAMILY PROJECT: one instance row from PREFIX.patch,
PREFIX.test_patch and the unittest -v logs PREFIX.test.log / PREFIX.gold.log
(FAIL_TO_PASS: not passing with the test patch, passing with the fix;
PASS_TO_PASS: passing in both), appended to PROJECT/<FAMILY>.jsonl in
SWE-bench's shape (ids as SWE-bench's `parse_log_django` keys them,
`method (module.Class.method)`), and its gold and empty predictions to
PROJECT/sessions/preds.jsonl.

check ASSAY PROJECT START END: reads the release and the build's events, prints a
row per instance and exits 1 on any check that fails.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

LINE = re.compile(r"^(\w+) \(([\w.]+)\)(?: \.\.\. (.*))?$")
STATUS = re.compile(r"(ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$")


def go_outcomes(log):
    """Test id (`package.Test`, as assay's go-test-json report names it) ->
    'pass' or 'other', from `go test -json`."""
    out = {}
    for line in Path(log).read_text(errors="replace").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("Test") and e.get("Action") in ("pass", "fail", "skip"):
            out[f"{e['Package']}.{e['Test']}"] = "pass" if e["Action"] == "pass" else "other"
    return out


def outcomes(log):
    """Test id -> 'pass' or 'other', from `python3 -m unittest -v`."""
    if "pflag" in str(log):
        return go_outcomes(log)
    out, pending = {}, None
    for line in Path(log).read_text(errors="replace").splitlines():
        m = LINE.match(line)
        if m:
            method, dotted, rest = m.groups()
            pending = f"{method} ({dotted})"
            line = rest or ""
            if not line:
                continue
        if pending:
            s = STATUS.search(line.strip())
            if s:
                out[pending] = "pass" if s.group(1) == "ok" else "other"
                pending = None
    return out


def r_name(iid):
    return "pflag" if "pflag" in iid else "tomli"


def row(iid, base, prefix, family, project):
    test, gold = outcomes(f"{prefix}.test.log"), outcomes(f"{prefix}.gold.log")
    f2p = sorted(t for t, o in gold.items() if o == "pass" and test.get(t) != "pass")
    p2p = sorted(t for t, o in gold.items() if o == "pass" and test.get(t) == "pass")
    assert f2p, f"{iid}: no test fails with the test patch and passes with the fix"
    patch = Path(f"{prefix}.patch").read_text()
    go = "pflag" in iid
    r = {
        "repo": "spf13/pflag" if go else "hukkin/tomli",
        "instance_id": iid,
        "base_commit": base,
        "patch": patch,
        "test_patch": Path(f"{prefix}.test_patch").read_text(),
        "problem_statement": f"{r_name(iid)} pull request {iid.split('-')[1]}.",
        "version": "",
        "FAIL_TO_PASS": json.dumps(f2p),
        "PASS_TO_PASS": json.dumps(p2p),
        "environment_setup_commit": base,
    }
    with open(Path(project) / f"{'go-' if go else ''}{family}.jsonl", "a") as f:
        f.write(json.dumps(r) + "\n")
    with open(Path(project) / "sessions" / "preds.jsonl", "a") as f:
        for name, p in [("gold", patch), ("empty", "")]:
            f.write(json.dumps({"instance_id": iid, "model_name_or_path": name, "model_patch": p}) + "\n")
    print(f"{iid}: {len(f2p)} FAIL_TO_PASS, {len(p2p)} PASS_TO_PASS")


def check(assay, project, start, end):
    project = Path(project)
    release = project / "release"
    tasks = {}
    for name in ["tasks.jsonl", "tasks.uncertified.jsonl"]:
        path = release / name
        if path.exists():
            for line in path.read_text().splitlines():
                t = json.loads(line)
                tasks[t["instance_id"]] = t
    files = {"swe-bench.jsonl": "sb", "swe-gym.jsonl": "gym", "go-swe-bench.jsonl": "gosb", "go-swe-gym.jsonl": "gogym"}
    rows = [
        (json.loads(l), name, f)
        for f, name in files.items()
        for l in (project / f).read_text().splitlines()
    ]
    import csv

    # preds.jsonl's line n is session `preds.jsonl#n`.
    preds = [json.loads(l) for l in (project / "sessions" / "preds.jsonl").read_text().splitlines()]
    verdicts = {}
    with open(release / "results.csv") as f:
        for r in csv.DictReader(f):
            if r["arm"] == "exclude" and r["session"].startswith("preds.jsonl#"):
                p = preds[int(r["session"].split("#")[1]) - 1]
                verdicts[r["session"]] = (p["model_name_or_path"], p["instance_id"], r["verdict"])
    failed = []
    events = [json.loads(l) for l in (project / "build.jsonl").read_text().splitlines()]
    records = {}
    for e in events:
        if e.get("event") == "node_finished" and e.get("name", "").startswith("instance:"):
            records[e["name"]] = e
    again = [json.loads(l) for l in (project / "again.jsonl").read_text().splitlines()]
    executed = again[-1]["total"]["executed"] if "total" in again[-1] else again[-1].get("executed")
    print(f"{'instance':<34} {'family':<10} {'certified':<9} {'F2P':>4} {'P2P':>4} {'disagree':>8}  gold / empty")
    for r, source, file in rows:
        iid = r["instance_id"]
        family = "swe-gym" if "gym" in file else "swe-bench"
        task = next((t for k, t in tasks.items() if k.endswith(iid)), None)
        if task is None:
            failed.append(f"{iid}: not in the release")
            continue
        dataset = task.get("dataset", {})
        dis = dataset.get("disagreements", [])
        got = {v[0]: v[2] for v in verdicts.values() if v[1] == iid}
        name = f"instance:{source}/{iid}"
        explained = json.loads(subprocess.run([assay, "explain", name, "--json"], cwd=project, capture_output=True, text=True).stdout or "{}")
        digest = explained.get("output") or explained.get("output_digest") or ""
        shown = subprocess.run([assay, "show", digest], cwd=project, capture_output=True, text=True).stdout
        record = json.loads(shown) if shown.strip().startswith("{") else {}
        future = record.get("commits_not_from_base")
        same = sorted(task["FAIL_TO_PASS"]) == sorted(json.loads(r["FAIL_TO_PASS"]))
        print(f"{iid:<34} {family:<10} {str(task['certified']):<9} {len(task['FAIL_TO_PASS']):>4} {len(task['PASS_TO_PASS']):>4} {len(dis):>8}  {got.get('gold')} / {got.get('empty')}  future commits in the image: {future}")
        if not future:
            failed.append(f"{iid}: the image's future was not counted: {record or explained}")
        if not task["certified"]:
            failed.append(f"{iid}: not certified: {task.get('uncertified_because')}")
        if dis:
            failed.append(f"{iid}: disagreements {dis}")
        if not same:
            failed.append(f"{iid}: FAIL_TO_PASS {task['FAIL_TO_PASS']} against the row's {r['FAIL_TO_PASS']}")
        if got.get("gold") != "resolved" or got.get("empty") != "unresolved":
            failed.append(f"{iid}: verdicts {got}")
    print(f"first build: {float(end) - float(start):.1f} s wall; second build executed {executed}")
    if executed != 0:
        failed.append(f"the second build executed {executed}")
    for f in failed:
        print("FAILED", f)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    {"row": row, "check": check}[sys.argv[1]](*sys.argv[2:])
