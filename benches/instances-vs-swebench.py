#!/usr/bin/env python3
"""SWE-bench-shaped instances graded by assay and by SWE-bench's own harness.

benches/instances-vs-swebench.sh runs this; see its header for what is
measured. Subcommands:

  make WORK ID_SUFFIX PYTEST_SITE   the repositories, images' build contexts,
                                    instances.jsonl and the sessions
  dataset WORK                      the harness's dataset and predictions
                                    from assay's release
  table WORK ROUND...               the per-instance table of the rounds
"""
import csv
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
from datetime import datetime

# (module, the base's function, its test, the fix's function, its test, the
# wrong fix's body line in place of the gold one)
DJANGO = [
    ("calc", "def add(a, b):\n    return a + b\n", ("CalcTest", "test_add", "self.assertEqual(calc.add(2, 3), 5)"),
     "def mul(a, b):\n    return a * b\n", ("MulTest", "test_mul", "self.assertEqual(calc.mul(3, 4), 12)"),
     ("return a * b", "return a + b")),
    ("words", "def shout(s):\n    return s.upper()\n", ("ShoutTest", "test_shout", "self.assertEqual(words.shout('hi'), 'HI')"),
     "def whisper(s):\n    return s.lower()\n", ("WhisperTest", "test_whisper", "self.assertEqual(words.whisper('HI'), 'hi')"),
     ("return s.lower()", "return s")),
    ("seqs", "def first(xs):\n    return xs[0]\n", ("FirstTest", "test_first", "self.assertEqual(seqs.first([1, 2, 3]), 1)"),
     "def last(xs):\n    return xs[-1]\n", ("LastTest", "test_last", "self.assertEqual(seqs.last([1, 2, 3]), 3)"),
     ("return xs[-1]", "return xs[0]")),
]
PYTEST = [
    ("geom", "def area(w, h):\n    return w * h\n", ("test_area", "assert geom.area(2, 3) == 6"),
     "def perimeter(w, h):\n    return 2 * (w + h)\n", ("test_perimeter", "assert geom.perimeter(2, 3) == 10"),
     ("return 2 * (w + h)", "return w + h")),
    ("temps", "def c_to_k(c):\n    return c + 273\n", ("test_c_to_k", "assert temps.c_to_k(0) == 273"),
     "def c_to_f(c):\n    return c * 9 / 5 + 32\n", ("test_c_to_f", "assert temps.c_to_f(100) == 212"),
     ("return c * 9 / 5 + 32", "return c * 2 + 30")),
    ("texts", "def words(s):\n    return s.split()\n", ("test_words", "assert texts.words('a b') == ['a', 'b']"),
     "def initials(s):\n    return ''.join(w[0] for w in s.split())\n",
     ("test_initials", "assert texts.initials('big red dog') == 'brd'"),
     ("return ''.join(w[0] for w in s.split())", "return s[0]")),
]
PREDICTIONS = ["gold", "empty", "wrong"]


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args],
                          check=True, capture_output=True, text=True).stdout


def diff_of(repo, base, edit):
    """The diff of `edit` (a function writing the work tree) over `base`."""
    edit()
    git(repo, "add", "-A")
    out = git(repo, "diff", "--cached", "--binary", base)
    git(repo, "reset", "-q", "--hard", base)
    return out


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def make(work, suffix, pytest_site):
    rows, images = [], []
    for shape, table in (("django", DJANGO), ("pytest", PYTEST)):
        for n, (mod, base_fn, base_test, fix_fn, fix_test, (right, wrong)) in enumerate(table, 1):
            repo_name = "django/django" if shape == "django" else "pallets/flask"
            iid = f"{repo_name.replace('/', '__')}-{suffix}{n}"
            ctx = os.path.join(work, "images", iid)
            repo = os.path.join(ctx, "repo")
            os.makedirs(os.path.join(repo, "tests"))
            git(repo, "init", "-q", "-b", "main")
            open(os.path.join(repo, f"{mod}.py"), "w").write(base_fn)
            test_file = os.path.join(repo, "tests", f"test_{mod}.py")
            if shape == "django":
                cls, name, body = base_test
                open(test_file, "w").write(
                    f"import unittest\n\nimport {mod}\n\n\nclass {cls}(unittest.TestCase):\n    def {name}(self):\n        {body}\n")
                shutil.copy(os.path.join(os.path.dirname(__file__), "..", "tests", "instances", "runtests.py"),
                            os.path.join(repo, "tests", "runtests.py"))
                os.chmod(os.path.join(repo, "tests", "runtests.py"), 0o755)
                fcls, fname, fbody = fix_test
                new_test = f"\n\nclass {fcls}(unittest.TestCase):\n    def {fname}(self):\n        {fbody}\n"
                f2p = [f"{fname} (test_{mod}.{fcls}.{fname})"]
                p2p = [f"{name} (test_{mod}.{cls}.{name})"]
                dockerfile = "FROM assay-base:bookworm\nUSER root\nCOPY repo /testbed\nWORKDIR /testbed/\n"
            else:
                name, body = base_test
                open(test_file, "w").write(f"import {mod}\n\n\ndef {name}():\n    {body}\n")
                # pytest's rootdir conftest puts the repository on sys.path.
                open(os.path.join(repo, "conftest.py"), "w").write("")
                fname, fbody = fix_test
                new_test = f"\n\ndef {fname}():\n    {fbody}\n"
                f2p = [f"tests/test_{mod}.py::{fname}"]
                p2p = [f"tests/test_{mod}.py::{name}"]
                shutil.copytree(pytest_site, os.path.join(ctx, "pytest"),
                                ignore=shutil.ignore_patterns("pip", "pip-*", "setuptools*", "_distutils_hack", "pkg_resources", "*.pth",
                                                              "__pycache__"))
                open(os.path.join(ctx, "pytest-bin"), "w").write(
                    "#!/usr/bin/python3\nimport sys\n\n"
                    "import pytest\nsys.exit(pytest.main())\n")
                os.chmod(os.path.join(ctx, "pytest-bin"), 0o755)
                dockerfile = ("FROM assay-base:bookworm\nUSER root\nCOPY pytest /usr/lib/python3/dist-packages\n"
                              "COPY pytest-bin /usr/local/bin/pytest\n"
                              # byte-code compiled, as pip leaves an installed package
                              "RUN python3 -m compileall -q /usr/lib/python3/dist-packages\n"
                              "COPY repo /testbed\nWORKDIR /testbed/\n")
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", "base")
            base = git(repo, "rev-parse", "HEAD").strip()
            test_patch = diff_of(repo, base, lambda: append(test_file, new_test))
            gold = diff_of(repo, base, lambda: append(os.path.join(repo, f"{mod}.py"), "\n\n" + fix_fn))
            assert gold.count(right) == 1, (iid, right)
            patches = {"gold": gold, "empty": "", "wrong": gold.replace(right, wrong)}
            open(os.path.join(ctx, "Dockerfile"), "w").write(dockerfile)
            rows.append({"repo": repo_name, "instance_id": iid, "base_commit": base, "patch": gold,
                         "test_patch": test_patch, "problem_statement": f"Add `{mod}.{fix_fn.split('(')[0][4:]}`.",
                         "version": "3.0" if shape == "django" else "2.0",
                         "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p)})
            images.append((f"sweb.eval.x86_64.{iid.lower()}:latest", ctx))
            os.makedirs(os.path.join(work, "patches"), exist_ok=True)
            for name, patch in patches.items():
                open(os.path.join(work, "patches", f"{iid}.{name}.diff"), "w").write(patch)
    with open(os.path.join(work, "instances.jsonl"), "w") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    with open(os.path.join(work, "images.txt"), "w") as out:
        for image, ctx in images:
            out.write(f"{image} {ctx}\n")


def sessions(work, target):
    """The sessions (a prediction of each kind on each instance) in `target`."""
    os.makedirs(target, exist_ok=True)
    for line in open(os.path.join(work, "instances.jsonl")):
        iid = json.loads(line)["instance_id"]
        for name in PREDICTIONS:
            shutil.copy(os.path.join(work, "patches", f"{iid}.{name}.diff"), os.path.join(target, f"{iid}.{name}.diff"))
            json.dump({"task": iid, "agent": name, "model": "m", "patch_file": f"{iid}.{name}.diff"},
                      open(os.path.join(target, f"{iid}.{name}.json"), "w"))


def dataset(work):
    """The harness's dataset: assay's published task of each instance (its
    eval script, log parser and lists) under the instance's id and image;
    and a predictions file per kind."""
    rows = {json.loads(l)["instance_id"]: json.loads(l) for l in open(os.path.join(work, "instances.jsonl"))}
    tasks = []
    for path in ("release/tasks.jsonl", "release/tasks.uncertified.jsonl"):
        if os.path.exists(os.path.join(work, path)):
            tasks += [json.loads(l) for l in open(os.path.join(work, path))]
    out = []
    for iid in rows:
        task = next(t for t in tasks if t["task"].endswith("/" + iid))
        assert task["certified"], f"{iid}: not certified by assay's screening: {task.get('uncertified_because')}"
        task.update(instance_id=iid, image=f"sweb.eval.x86_64.{iid.lower()}:latest")
        out.append(task)
    json.dump(out, open(os.path.join(work, "dataset.json"), "w"))
    for name in PREDICTIONS:
        with open(os.path.join(work, f"pred-{name}.jsonl"), "w") as f:
            for iid in rows:
                patch = open(os.path.join(work, "patches", f"{iid}.{name}.diff")).read()
                f.write(json.dumps({"instance_id": iid, "model_name_or_path": name, "model_patch": patch}) + "\n")


def log_seconds(path):
    """The span of a harness run_instance.log, first line to last, and of
    its container's stop (`docker stop --time=15`), in seconds."""
    stamps, stop = [], [None, None]
    for line in open(path):
        try:
            at = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
        except ValueError:
            continue
        stamps.append(at)
        if "Attempting to stop container" in line:
            stop[0] = at
        elif stop[0] and stop[1] is None and "stopped successfully" in line:
            stop[1] = at
    span = (stamps[-1] - stamps[0]).total_seconds() if len(stamps) > 1 else 0.0
    return span, (stop[1] - stop[0]).total_seconds() if all(stop) else 0.0


def harness_verdict(summary, iid):
    """The harness's verdict on `iid` from its run summary: an empty patch
    is not run and counts as not resolved."""
    if iid in summary["resolved_ids"]:
        return "resolved"
    if iid in summary["unresolved_ids"] or iid in summary["empty_patch_ids"]:
        return "unresolved"
    for kind in ("error_ids", "infra_failure_ids", "ambiguous_failure_ids", "incomplete_ids"):
        if iid in summary.get(kind, []):
            return kind[: -len("_ids")]
    return "absent"


def round_figures(work, rnd):
    """One round's per-instance verdicts and seconds, each side."""
    rdir = os.path.join(work, "rounds", rnd)
    rows = [json.loads(l)["instance_id"] for l in open(os.path.join(work, "instances.jsonl"))]
    events = [json.loads(l) for l in open(os.path.join(rdir, "build.jsonl")) if l.startswith("{")]
    took = {e["name"]: e.get("duration_ms", 0) for e in events if e.get("event") == "node_finished"}
    results = list(csv.DictReader(open(os.path.join(rdir, "release", "results.csv"))))
    out = {}
    for iid in rows:
        per = {"assay": {}, "swebench": {}, "assay_s": 0.0, "assay_all_arms_s": 0.0, "swebench_s": 0.0,
               "swebench_stop_s": 0.0, "nodes": {}}
        for name in PREDICTIONS:
            session = f"{iid}.{name}.json"
            verdicts = [r["verdict"] for r in results if r["session"] == session and r["arm"] == "exclude"]
            per["assay"][name] = verdicts[0] if len(verdicts) == 1 else f"?{verdicts}"
            for node, ms in took.items():
                kind, _, rest = node.partition(":")
                if kind in ("stage", "run", "recheck", "grade") and rest.startswith(session + ":"):
                    per["assay_all_arms_s"] += ms / 1000
                    if node.endswith(":exclude"):
                        per["assay_s"] += ms / 1000
                        per["nodes"][kind] = per["nodes"].get(kind, 0) + ms / 1000
            summary = json.load(open(os.path.join(rdir, f"{name}.{rnd}-{name}.json")))
            per["swebench"][name] = harness_verdict(summary, iid)
            log = os.path.join(rdir, "logs", "run_evaluation", f"{rnd}-{name}", name, iid, "run_instance.log")
            if os.path.exists(log):
                span, stop = log_seconds(log)
                per["swebench_s"] += span
                per["swebench_stop_s"] += stop
        out[iid] = per
    meta = json.load(open(os.path.join(rdir, "meta.json")))
    return out, meta


def table(work, rounds):
    all_ratios, working_ratios, agree = {}, {}, True
    for rnd in rounds:
        figures, meta = round_figures(work, rnd)
        retried = f"; run_evaluation calls run twice: {meta['harness_retried']}" if meta.get("harness_retried") else ""
        print(f"\nround {rnd} ({meta['order']} first; load before: {meta['load_before']}, after: {meta['load_after']}{retried})")
        print(f"  {'instance':34} {'assay: gold/empty/wrong':36} {'swebench: gold/empty/wrong':36}"
              f" {'assay s':>8} {'harness s':>9} {'ratio':>6} {'h-stop s':>8} {'ratio':>6}  assay's scored-arm nodes (s)")
        tot_a = tot_h = tot_hs = 0.0
        for iid, per in figures.items():
            a = "/".join(per["assay"][n] for n in PREDICTIONS)
            h = "/".join(per["swebench"][n] for n in PREDICTIONS)
            same = all(per["assay"][n] == per["swebench"][n] for n in PREDICTIONS)
            agree &= same
            ratio = per["assay_s"] / max(per["swebench_s"], 1e-9)
            working = per["swebench_s"] - per["swebench_stop_s"]
            ratio_working = per["assay_s"] / max(working, 1e-9)
            all_ratios.setdefault(iid, []).append(ratio)
            working_ratios.setdefault(iid, []).append(ratio_working)
            tot_a += per["assay_s"]
            tot_h += per["swebench_s"]
            tot_hs += working
            nodes = " ".join(f"{k} {v:.1f}" for k, v in sorted(per["nodes"].items()))
            print(f"  {iid:34} {a:36} {h:36} {per['assay_s']:8.2f} {per['swebench_s']:9.2f} {ratio:6.2f} {working:8.2f} {ratio_working:6.2f}"
                  f"{'' if same else '  DISAGREE'}  {nodes}")
        print(f"  {'total (per-instance sums)':34} {'':73} {tot_a:8.2f} {tot_h:9.2f} {tot_a / max(tot_h, 1e-9):6.2f}"
              f" {tot_hs:8.2f} {tot_a / max(tot_hs, 1e-9):6.2f}")
        print(f"  wall: assay build (grading only, --jobs 1) {meta['assay_wall_s']:.1f} s;"
              f" run_evaluation x3 (--max_workers 1) {meta['swebench_wall_s']:.1f} s;"
              f" ratio {meta['assay_wall_s'] / meta['swebench_wall_s']:.2f}")
        all_ratios.setdefault("(wall)", []).append(meta["assay_wall_s"] / meta["swebench_wall_s"])
    print("\nratios assay / swebench per instance over the rounds: median, worst (max)")
    for iid, rs in all_ratios.items():
        print(f"  {iid:34} {' '.join(f'{r:.2f}' for r in rs):40} median {statistics.median(rs):.2f} worst {max(rs):.2f}")
    print("the same, against the harness's time less its containers' `docker stop` waits (h-stop)")
    for iid, rs in working_ratios.items():
        print(f"  {iid:34} {' '.join(f'{r:.2f}' for r in rs):40} median {statistics.median(rs):.2f} worst {max(rs):.2f}")
    print("verdicts: " + ("the same on every instance and prediction" if agree else "DISAGREE (above)"))
    return 0 if agree else 1


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "make":
        make(*args)
    elif cmd == "sessions":
        sessions(*args)
    elif cmd == "dataset":
        dataset(*args)
    elif cmd == "table":
        sys.exit(table(args[0], args[1:]))
    else:
        sys.exit(f"unknown subcommand {cmd}")
