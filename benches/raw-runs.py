#!/usr/bin/env python3
"""The minimal raw runs a grader needs, timed outside assay, for the real
corpus benches (benches/real-corpus.sh, benches/js-real-corpus.sh): one run
of the test command per distinct graded tree (base + the session's patch +
the test patch's files), in a plain checkout, unsandboxed, with a fresh HOME.
A session whose patch does not apply has no tree (nothing to run). A run is
cut at its cap: `screening` is 10x the task's slowest screening reading (its
node time, from DIR/screen.jsonl), `timeout` the task's own timeout (`timeout_s`
in DIR/release/tasks.jsonl). When WORK/raw-go-cache exists, each run gets its
own copy of it as GOCACHE (the copy not timed).

Usage: raw-runs.py DIR COMMAND TEST-PATH-REGEX WORK screening|timeout
DIR holds repo/, sessions/ and tasks.txt (`id base head` lines). Prints
"minimal_s trees"; DIR/minimal.txt gets a line per tree: session, tree,
seconds, how it ended.
"""
import json, os, re, shutil, signal, subprocess, sys, tempfile, time
from pathlib import Path

dir, command, is_test, work, cap_rule = Path(sys.argv[1]), sys.argv[2], re.compile(sys.argv[3]), Path(sys.argv[4]), sys.argv[5]
repo = dir / "repo"


def git(*args, cwd=repo):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


tasks = {t: (b, h) for t, b, h in (l.split() for l in open(dir / "tasks.txt"))}
cap = {}
if cap_rule == "screening":
    for line in open(dir / "screen.jsonl"):
        e = json.loads(line)
        if e.get("event") != "node_finished" or not e["name"].startswith("run:"):
            continue
        task = e["name"].split(":")[1]
        cap[task] = max(cap.get(task, 0), 10 * e.get("duration_ms", 0) / 1000)
else:
    for line in open(dir / "release" / "tasks.jsonl"):
        t = json.loads(line)
        cap[t["instance_id"]] = t["timeout_s"]

trees = {}  # tree id -> (session, task, checkout)
for f in sorted((dir / "sessions").rglob("*.json")):
    s = json.load(open(f))
    base, head = tasks[s["task"]]
    wt = Path(tempfile.mkdtemp(dir=work))
    shutil.rmtree(wt)
    git("worktree", "add", "-q", "--detach", str(wt), base)
    patch = open(f.parent / s["patch_file"]).read() if "patch_file" in s else s["patch"]
    if patch and subprocess.run(["git", "apply"], cwd=wt, input=patch, text=True, capture_output=True).returncode:
        git("worktree", "remove", "--force", str(wt))
        continue
    for path in git("diff", "--name-only", base, head).split():
        if is_test.search(path):
            if git("ls-tree", head, "--", path).strip():
                git("checkout", head, "--", path, cwd=wt)
            else:
                git("rm", "-q", "--ignore-unmatch", "--", path, cwd=wt)
    git("add", "-A", cwd=wt)
    tree = git("write-tree", cwd=wt).strip()
    if tree in trees:
        git("worktree", "remove", "--force", str(wt))
        continue
    trees[tree] = (f.relative_to(dir / "sessions"), s["task"], wt)

total = 0.0
with open(dir / "minimal.txt", "w") as out:
    for tree, (session, task, wt) in trees.items():
        home = Path(tempfile.mkdtemp(dir=work))
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(home)}
        if (work / "raw-go-cache").is_dir():
            shutil.copytree(work / "raw-go-cache", home / "go-cache")
            env["GOCACHE"] = str(home / "go-cache")
        start = time.monotonic()
        p = subprocess.Popen(["sh", "-c", command], cwd=wt, env=env, start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            p.communicate(timeout=cap[task])
            end = "exit %d" % p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            end = "cut at %.1f s" % cap[task]
        took = time.monotonic() - start
        total += took
        print(f"{session} {tree[:12]} {took:.2f}s {end}", file=out)
        git("worktree", "remove", "--force", str(wt))
        shutil.rmtree(home, ignore_errors=True)
print(f"{total:.1f} {len(trees)}")
