#!/usr/bin/env bash
# check-sessions.sh [REPO] — grade every example session by hand (git + python3
# only, no assay) and check each verdict against the one README.md promises.
#
# It re-implements the grading steps of docs (ARCHITECTURE.md, "Grading a
# session, step by step") as plainly as possible, so that assay's own grader
# can be compared with it:
#   0. screen each task: base / test-only / test+gold, 2 runs each, one fresh
#      $ASSAY_ENV per PR -> FAIL_TO_PASS, PASS_TO_PASS, flaky (checked against
#      the values below);
#   1. stage the base tree (git archive; a throwaway `git init` so git apply
#      has a repository of its own);
#   2. apply the session patch: both arms leave out the session's edits to
#      the files the hidden test patch touches (SWE-bench's reset); the
#      `exclude` arm also leaves out every file named like a test, new or
#      existing (the default policy, tests-and-infra; recorded);
#      `..`, absolute paths and symlink escapes are refused (git apply refuses
#      them too) -> patch_apply_failed;
#   3. apply the hidden test patch (git diff BASE HEAD -- tests/); a failure
#      is test_patch_conflict;
#   4. python3 -m unittest -v at the tree root (a rerun names the failing
#      tests' files; graded runs see no ASSAY_ATTEMPT); log over 1 MiB ->
#      ineligible; exit 127 -> env_setup_failed; no test lines -> no_report;
#   5. FAIL_TO_PASS + PASS_TO_PASS all ok -> resolved; otherwise rerun the
#      failing files up to 3 times: ok then -> resolved_after_rerun, else
#      unresolved.
# Runs are shared between the arms when the two staged trees are identical
# (as assay shares runs of identical trees), so a first-run-only flake is
# seen once per tree, not once per arm.
#
# Prints a table and exits non-zero on any surprise. Without REPO, builds the
# example repository with ../make-repo.sh in a temporary directory.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/calc-check-sessions.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ $# -ge 1 ]; then
  repo=$(cd "$1" && pwd)
else
  repo="$work/repo"
  "$here/../make-repo.sh" "$repo" >/dev/null
fi
status=0
python3 - "$repo" "$work" "$here" <<'PY' || status=$?
import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

repo, work, sessions_dir = sys.argv[1:4]
LOG_CAP = 1048576          # [env] log_cap of the example pipeline (1 MiB)
RERUNS = 3
SCREEN_REPEATS = 2
TEST_GLOBS = ["tests/**", "**/test_*.py", "**/*_test.py", "test_*.py", "*_test.py",
              "**/tests/**", "**/conftest.py", "conftest.py"]

T = "tests."
# task -> (PR, topic pattern or None, expected FAIL_TO_PASS, expected flaky)
TASKS = {
    "calc-1": (1, None, [T + "test_ops.TestOps.test_divide_by_zero_raises_value_error"], []),
    "calc-4-parse": (4, "test_parse", [T + "test_parser.TestParser.test_parse_negative_number"], []),
    "calc-4-eval": (4, "test_eval", [T + "test_evaluator.TestEvaluator.test_eval_power_right_assoc"], []),
    "calc-5": (5, None, [T + "test_history.TestHistory.test_history_records_results"],
               [T + "test_history.TestHistory.test_history_flaky_state"]),
    "calc-7": (7, None, [T + "test_parser.TestParser.test_tokenize_ignores_tabs_and_newlines"],
               [T + "test_history.TestHistory.test_history_flaky_state"]),
}
UNCERTIFIED = {"calc-6"}           # released, certified: false -> never graded
AWAITING = {"calc-8"}              # not released

# session id -> (exclude arm, keep arm); "not_graded: ..." for sessions that
# must be reported without a grade.
EXPECT = {
    "alpha/calc-1.json": ("resolved", "resolved"),
    "alpha/calc-1-spec.json": ("resolved", "resolved"),
    "alpha/calc-4-parse.json": ("resolved", "resolved"),
    "alpha/calc-5.json": ("resolved", "resolved"),
    "alpha/calc-7.json": ("resolved", "resolved"),
    "beta/calc-1.json": ("unresolved", "unresolved"),
    "beta/calc-4-eval.json": ("resolved_after_rerun", "resolved_after_rerun"),
    "beta/calc-4-parse.json": ("resolved", "resolved"),
    "beta/calc-5.json": ("ineligible", "ineligible"),
    "beta/calc-6.json": ("not_graded: uncertified task",) * 2,
    "beta/calc-7.json": ("resolved", "resolved"),
    "gamma/calc-1.json": ("patch_apply_failed", "patch_apply_failed"),
    "gamma/calc-4-eval.json": ("no_report", "no_report"),
    "gamma/calc-4-parse.json": ("patch_apply_failed", "patch_apply_failed"),
    "gamma/calc-5.json": ("env_setup_failed", "env_setup_failed"),
    "gamma/calc-7.json": ("unresolved", "unresolved"),
    "gamma/calc-99.json": ("not_graded: unknown task",) * 2,
    "swebench/predictions.jsonl#1": ("resolved", "resolved"),
    "swebench/predictions.jsonl#2": ("unresolved", "unresolved"),
}
# test_patch_conflict no longer arises here: the hidden patch's files are reset.
ALL_VERDICTS = {"resolved", "resolved_after_rerun", "unresolved", "patch_apply_failed",
                "no_report", "env_setup_failed", "ineligible"}

LINE = re.compile(r"^(\w+) \(([\w.]+)\) \.\.\. (.*)$")
surprises = []


def git(*args, cwd=repo, check=True, input=None):
    return subprocess.run(["git", "-C", cwd, *args], check=check, capture_output=True,
                          text=True, input=input)


def stage(commit, dest, tests_from=None):
    os.makedirs(dest)
    tar = subprocess.Popen(["git", "-C", repo, "archive", "--format=tar", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", dest], stdin=tar.stdout, check=True)
    if tar.wait() != 0:
        raise SystemExit(f"git archive {commit} failed")
    if tests_from:
        shutil.rmtree(os.path.join(dest, "tests"), ignore_errors=True)
        tar = subprocess.Popen(["git", "-C", repo, "archive", "--format=tar", tests_from, "tests"],
                               stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", dest], stdin=tar.stdout, check=True)
        if tar.wait() != 0:
            raise SystemExit(f"git archive {tests_from} tests failed")


def run_tests(tree, env_dir, files=()):
    env = dict(os.environ, ASSAY_ENV=env_dir,
               PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
    env.pop("ASSAY_ATTEMPT", None)
    proc = subprocess.run(["python3", "-m", "unittest", "-v", *files], cwd=tree, env=env,
                          capture_output=True, timeout=300)
    log = proc.stdout + proc.stderr
    results = {}
    for line in log.decode("utf-8", "replace").splitlines():
        m = LINE.match(line)
        if m:
            name, where, st = m.groups()
            test_id = where if where.endswith("." + name) else f"{where}.{name}"
            results[test_id] = st if st in ("ok", "FAIL", "ERROR") else st.split()[0]
    return proc.returncode, results, len(log)


def tree_digest(tree):
    h = hashlib.sha256()
    for root, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, tree)
            h.update(rel.encode() + b"\0")
            h.update(os.readlink(path).encode() if os.path.islink(path) else open(path, "rb").read())
    return h.hexdigest()


# --- PRs and screening -----------------------------------------------------------
prs = {}
for line in git("log", "--first-parent", "--reverse", "--format=%H %P%x09%s", "main").stdout.splitlines():
    ids, subject = line.split("\t", 1)
    commit, *parents = ids.split()
    m = re.match(r"Merge pull request #(\d+) from ", subject) if len(parents) == 2 else \
        re.search(r" \(#(\d+)\)$", subject)
    if m:
        prs[int(m.group(1))] = (parents[0], commit)

screened = {}
for task, (pr, pattern, want_f2p, want_flaky) in TASKS.items():
    base, head = prs[pr]
    if pr not in screened:
        env_dir = os.path.join(work, f"screen-env-{pr}")
        os.makedirs(env_dir)
        readings = {}
        for state, commit, tests_from in (("base", base, None), ("test", base, head), ("gold", head, None)):
            tree = os.path.join(work, f"screen-{pr}-{state}")
            stage(commit, tree, tests_from)
            readings[state] = [run_tests(tree, env_dir, r)[1] for r in range(SCREEN_REPEATS)]
        screened[pr] = readings
    r = screened[pr]
    ids = set().union(*r["test"], *r["gold"])
    ok = lambda state, t: all(x.get(t) == "ok" for x in r[state])
    bad = lambda state, t: all(x.get(t) != "ok" for x in r[state])
    flaky = sorted(t for t in ids for s in ("base", "test", "gold")
                   if len({x.get(t) for x in r[s]} - {None}) > 1 and "ok" in {x.get(t) for x in r[s]})
    flaky = sorted(set(flaky))
    f2p = sorted(t for t in ids if t not in flaky and bad("test", t) and ok("gold", t)
                 and (pattern is None or pattern in t))
    p2p = sorted(t for t in ids if t not in flaky and all(ok(s, t) for s in ("base", "test", "gold")))
    if f2p != sorted(want_f2p):
        surprises.append(f"{task}: screened FAIL_TO_PASS {f2p}, expected {want_f2p}")
    if flaky != sorted(want_flaky):
        surprises.append(f"{task}: screened flaky {flaky}, expected {want_flaky}")
    TASKS[task] = dict(base=base, head=head, f2p=f2p, p2p=p2p, flaky=flaky,
                       test_patch=git("diff", "--binary", base, head, "--", "tests/").stdout)


# --- sessions ----------------------------------------------------------------------
def load_sessions():
    out = []
    for root, dirs, files in os.walk(sessions_dir):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, sessions_dir)
            if name.endswith(".json"):
                d = json.load(open(path))
                if "patch_file" in d:
                    patch = open(os.path.join(root, d["patch_file"]), encoding="utf-8").read()
                else:
                    patch = d["patch"]
                out.append((rel, d["task"], d.get("track", "basic"), d["agent"], d["model"], patch, d))
            elif name == "predictions.jsonl":
                for i, line in enumerate(open(path), 1):
                    p = json.loads(line)
                    out.append((f"{rel}#{i}", p["instance_id"], "basic", p["model_name_or_path"],
                                p["model_name_or_path"], p["model_patch"], p))
    return out


def is_test_path(path):
    return any(fnmatch.fnmatchcase(path, g) or (g.startswith("**/") and fnmatch.fnmatchcase(path, g[3:]))
               for g in TEST_GLOBS)


def split_patch(patch):
    """[(path, is_new_file, text)] per `diff --git` section."""
    sections = re.split(r"(?m)^(?=diff --git )", patch)
    out = []
    for sec in sections:
        if not sec.startswith("diff --git "):
            if sec.strip():
                out.append((None, False, sec))
            continue
        m = re.search(r"(?m)^\+\+\+ b/(.+)$", sec) or re.match(r"diff --git a/\S+ b/(\S+)", sec)
        path = m.group(1).strip() if m else None
        new = bool(re.search(r"(?m)^(new file mode |--- /dev/null$)", sec))
        out.append((path, new, sec))
    return out


def escapes(path, tree):
    if path is None:
        return False
    if path.startswith("/") or ".." in path.split("/"):
        return True
    real = os.path.realpath(os.path.join(tree, path))
    return not (real == tree or real.startswith(tree + os.sep))


def grade(sid, task, patch, arm, env_dir, run_cache):
    t = TASKS[task]
    tree = os.path.realpath(os.path.join(work, "grade", sid.replace("/", "_").replace("#", "_"), arm))
    stage(t["base"], tree)
    git("init", "-q", cwd=tree)
    excluded = []
    kept = []
    hidden = {p for p, _, _ in split_patch(t["test_patch"]) if p}
    for path, new, text in split_patch(patch):
        if escapes(path, tree):
            return "patch_apply_failed", f"path escapes the tree: {path}"
        if path in hidden or (arm == "exclude" and path and is_test_path(path)):
            excluded.append(path)
            continue
        kept.append(text)
    session_patch = "".join(kept)
    note = f"left out {excluded}" if excluded else ""
    if session_patch.strip():
        p = git("apply", "--check", "-", cwd=tree, check=False, input=session_patch)
        if p.returncode != 0:
            return "patch_apply_failed", p.stderr.strip().splitlines()[-1]
        git("apply", "-", cwd=tree, input=session_patch)
    p = git("apply", "-", cwd=tree, check=False, input=t["test_patch"])
    if p.returncode != 0:
        return "test_patch_conflict", p.stderr.strip().splitlines()[-1]
    digest = tree_digest(tree)
    if digest in run_cache:
        return run_cache[digest][0], run_cache[digest][1] + " (run shared with the other arm)"
    graded = t["f2p"] + t["p2p"]
    verdict, why, files = None, "", ()
    for attempt in range(1 + RERUNS):
        code, results, log_len = run_tests(tree, env_dir, files)
        if log_len > LOG_CAP:
            verdict, why = "ineligible", f"log {log_len} bytes > cap {LOG_CAP}"
            break
        if code == 127:
            verdict, why = "env_setup_failed", "exit 127"
            break
        if not results:
            verdict, why = "no_report", f"exit {code}, no test lines"
            break
        failing = [x for x in graded if results.get(x) != "ok"]
        if not failing:
            verdict = "resolved" if attempt == 0 else "resolved_after_rerun"
            why = f"{len(graded)} graded tests ok" + (f" on rerun {attempt}" if attempt else "")
            break
        # A rerun names the failing tests' files, as `rerun_command` does.
        files = sorted({"/".join(x.split(".")[:2]) + ".py" for x in failing})
        if attempt == RERUNS:
            verdict = "unresolved"
            why = "failing: " + ", ".join(x.split(".")[-1] for x in failing)
    why = "; ".join(x for x in (note, why) if x)
    run_cache[digest] = (verdict, why)
    return verdict, why


rows = []
seen = set()
got_verdicts = set()
sessions = load_sessions()
for sid, task, track, agent, model, patch, raw in sessions:
    seen.add(sid)
    check = "-"
    if task in TASKS:
        # plain `git apply --check` of the whole session patch against the base commit
        t = TASKS[task]
        chk = os.path.join(work, "check", sid.replace("/", "_").replace("#", "_"))
        stage(t["base"], chk)
        git("init", "-q", cwd=chk)
        if patch.strip():
            p = git("apply", "--check", "-", cwd=chk, check=False, input=patch)
            check = "applies" if p.returncode == 0 else "fails"
            if p.returncode == 0 and any(escapes(path, os.path.realpath(chk)) for path, _, _ in split_patch(patch)):
                surprises.append(f"{sid}: git apply --check accepts a patch that escapes the tree")
        else:
            check = "empty"
        env_dir = os.path.join(work, "env", sid.replace("/", "_").replace("#", "_"))
        os.makedirs(env_dir)
        run_cache = {}
        got = tuple(grade(sid, task, patch, arm, env_dir, run_cache) for arm in ("exclude", "keep"))
        verdicts = tuple(v for v, _ in got)
        why = " | ".join(dict.fromkeys(w for _, w in got))
    else:
        reason = "uncertified task" if task in UNCERTIFIED else \
            "task not released (awaiting statement)" if task in AWAITING else "unknown task"
        verdicts = (f"not_graded: {reason}",) * 2
        why = ""
    got_verdicts.update(verdicts)
    want = EXPECT.get(sid)
    ok = verdicts == want
    if not ok:
        surprises.append(f"{sid}: got {verdicts}, expected {want} ({why})")
    rows.append((sid, task, track, agent, model, check, verdicts[0], verdicts[1], "ok" if ok else "SURPRISE", why))
    # transcript consistency
    if isinstance(raw, dict) and raw.get("transcript"):
        tpath = os.path.join(sessions_dir, os.path.dirname(sid), raw["transcript"])
        events = [json.loads(l) for l in open(tpath)]
        res = [e for e in events if e.get("type") == "result"]
        init = [e for e in events if e.get("type") == "system" and e.get("subtype") == "init"]
        if len(res) != 1 or not init:
            surprises.append(f"{sid}: transcript needs one system init and one result event")
        else:
            # The tokens come from the transcript alone: `input_tokens` is the
            # uncached input, the cache kinds are counted apart (a `run.tokens.input`
            # holding all three counted the cached tokens twice).
            want_run = {"turns": res[0]["num_turns"], "ended": res[0]["subtype"]}
            if raw.get("run") != want_run:
                surprises.append(f"{sid}: run {raw.get('run')} disagrees with its transcript {want_run}")
            u = res[0]["usage"]
            total = sum(v for v in u.values() if isinstance(v, int))
            if total != 78215:
                surprises.append(f"{sid}: transcript tokens total {total}, expected 78215")

for sid in sorted(set(EXPECT) - seen):
    surprises.append(f"{sid}: expected session not found")
missing = ALL_VERDICTS - got_verdicts
if missing:
    surprises.append(f"verdicts never produced: {sorted(missing)}")

head = ("session", "task", "track", "agent", "model", "apply --check", "exclude arm", "keep arm", "check", "why")
widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head) - 1)]
fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
print(fmt.format(*head))
for r in rows:
    print(fmt.format(*r))
print()
for task, t in TASKS.items():
    print(f"{task}: base {t['base'][:10]}  FAIL_TO_PASS {len(t['f2p'])}  PASS_TO_PASS {len(t['p2p'])}"
          f"  flaky {[x.split('.')[-1] for x in t['flaky']]}")
print()
if surprises:
    print(f"{len(surprises)} SURPRISE(S):")
    for s in surprises:
        print("  " + s)
    sys.exit(1)
print(f"all {len(rows)} sessions behave as expected")
PY
exit $status
