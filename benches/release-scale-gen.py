#!/usr/bin/env python3
"""A synthetic pipeline for benches/release-scale.sh: TASKS merged PRs,
10 agents x 3 attempts of session files per task.

usage: release-scale-gen.py DIR TASKS

Writes DIR/repo (a git repository made with `git fast-import`: every PR is
a branch with one commit, merged into main with `--no-ff`'s shape), DIR/
pipeline.toml, DIR/statements/<id>.md and DIR/sessions/<agent>/<id>-<n>.json.

The repository holds two files. `lib.txt` is the code: PR k changes it from
`v{k-1}` to `v{k}` (the gold patch). `tests/check.sh` is the suite, a shell
script printing TAP and exiting 1 on a failure: `present` (PASS_TO_PASS) and `value_k`, which PR k's
test patch makes expect `v{k}` (FAIL_TO_PASS). So the suite stays two tests
at every commit: a run costs the same at the 1st PR and at the 1,000th, and
the release grows with the tasks, not with their square.

Sessions: agent i's attempt n at task k gets the gold patch with a chance
that grows with i, else the empty patch or a wrong one (`v{k}-wrong`): three
distinct trees a task, which the sessions of a task share runs over (a run's
key is its tree's digest); every session is still its own grade.
"""
import hashlib
import json
import os
import subprocess
import sys

AGENTS = 10
ATTEMPTS = 3
WHEN = 1767225600  # 2026-01-01T00:00:00Z


def check_script(k):
    return (
        "#!/bin/sh\n"
        'echo "1..2"\n'
        "status=0\n"
        'if [ -f lib.txt ]; then echo "ok 1 - present"; else echo "not ok 1 - present"; status=1; fi\n'
        f'if [ "$(cat lib.txt)" = "v{k}" ]; then echo "ok 2 - value_{k}"; '
        f'else echo "not ok 2 - value_{k}"; status=1; fi\n'
        'exit "$status"\n'
    )


def blob(out, data):
    data = data.encode()
    out.write(b"data %d\n" % len(data))
    out.write(data)
    out.write(b"\n")


def commit(out, ref, mark, message, parents, files):
    out.write(f"commit {ref}\nmark :{mark}\n".encode())
    out.write(f"author a <a@x> {WHEN} +0000\ncommitter a <a@x> {WHEN} +0000\n".encode())
    blob(out, message)
    if parents:
        out.write(f"from :{parents[0]}\n".encode())
        for p in parents[1:]:
            out.write(f"merge :{p}\n".encode())
    for path, text in files:
        out.write(f"M 100644 inline {path}\n".encode())
        blob(out, text)
    out.write(b"\n")


def make_repo(repo, tasks):
    subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
    fi = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=repo, stdin=subprocess.PIPE)
    out = fi.stdin
    commit(out, "refs/heads/main", 1, "init\n", [],
           [("lib.txt", "v0\n"), ("tests/check.sh", check_script(0))])
    main = 1
    mark = 2
    for k in range(1, tasks + 1):
        fix = mark
        files = [("lib.txt", f"v{k}\n"), ("tests/check.sh", check_script(k))]
        commit(out, f"refs/heads/fix-{k}", fix, f"Make the value v{k}\n", [main], files)
        merge = mark + 1
        commit(out, "refs/heads/main", merge,
               f"Merge pull request #{k} from o/fix-{k}\n\nMake the value v{k}\n",
               [main, fix], files)
        main = merge
        mark += 2
    out.close()
    if fi.wait() != 0:
        sys.exit("git fast-import failed")
    # The fix branches are merged; only main is mined.
    subprocess.run(["git", "-C", repo, "for-each-ref", "--format=delete %(refname)",
                    "refs/heads/fix-*"], check=True, stdout=open(f"{repo}/.git/del", "w"))
    subprocess.run(["git", "-C", repo, "update-ref", "--stdin"], check=True,
                   stdin=open(f"{repo}/.git/del"))
    subprocess.run(["git", "-C", repo, "checkout", "-q", "main"], check=True)


def patch(k, value):
    return (
        "diff --git a/lib.txt b/lib.txt\n"
        "--- a/lib.txt\n"
        "+++ b/lib.txt\n"
        "@@ -1 +1 @@\n"
        f"-v{k - 1}\n"
        f"+{value}\n"
    )


def session(k, agent, n, value=None):
    """The session file of agent `agent`'s attempt `n` at task k."""
    if value is None:
        roll = hashlib.blake2b(f"{k}/{agent}/{n}".encode(), digest_size=2).digest()
        roll = int.from_bytes(roll, "big") % 100
        if roll < 20 + 6 * agent:
            value = f"v{k}"
        elif roll % 2:
            value = ""
        else:
            value = f"v{k}-wrong"
    turns = 5 + (k * 7 + agent * 3 + n) % 20
    return {
        "task": f"s-{k}",
        "agent": f"agent-{agent}",
        "model": f"model-{agent % 3}",
        "patch": patch(k, value) if value else "",
        "run": {
            "turns": turns,
            "tokens": {"input": 1000 * turns, "output": 120 * turns},
            "ended": "success",
            "duration_ms": 1000 * turns,
        },
    }


def write_session(work, k, agent, n, value=None):
    d = f"{work}/sessions/agent-{agent}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/s-{k}-{n}.json", "w") as f:
        json.dump(session(k, agent, n, value), f)


def main():
    work, tasks = sys.argv[1], int(sys.argv[2])
    if len(sys.argv) > 3 and sys.argv[3] == "--one-more":
        # +1 session: one more attempt of agent 0 at task 1 (the 4th, then
        # the 5th, ...), a tree no other session has (its run executes too).
        n = ATTEMPTS + 1
        while os.path.exists(f"{work}/sessions/agent-0/s-1-{n}.json"):
            n += 1
        write_session(work, 1, 0, n, f"v1-late{n}")
        return
    make_repo(f"{work}/repo", tasks)
    os.makedirs(f"{work}/statements")
    for k in range(1, tasks + 1):
        with open(f"{work}/statements/s-{k}.md", "w") as f:
            f.write(f"`lib.txt` should hold `v{k}`.\n")
        for agent in range(AGENTS):
            for n in range(1, ATTEMPTS + 1):
                write_session(work, k, agent, n)
    with open(f"{work}/pipeline.toml", "w") as f:
        f.write(
            'statements = "statements"\n'
            'sessions = "sessions"\n'
            "[[source]]\n"
            'name = "s"\n'
            'path = "repo"\n'
            "[env]\n"
            # The trivial suite: a shell script, unconfined, runs in parallel.
            'test_command = "sh tests/check.sh"\n'
            'report = "tap"\n'
            'sandbox = "none"\n'
            "serial = false\n"
            "[screen]\n"
            "repeats = 1\n"
            "[grade]\n"
            'arms = ["exclude"]\n'
            "reruns = 0\n"
        )


main()
