#!/usr/bin/env bash
# Issue 37's closing measure: a real JavaScript repository, jshttp/fresh
# (mocha + node's assert, no runtime dependency), 4 merged PRs graded with 8
# sessions each whose truth is known, two arms (exclude, keep):
#
#   fix         the PR's own change without its test file      resolved, none
#   empty       the empty patch                                unresolved, agent
#   wrong       a plausible fix that misses the PR's case      unresolved, agent
#   regression  the fix, and a response without an ETag       unresolved, agent
#               matches any If-None-Match
#   collide     the fix, and the agent's own test/fresh.js     resolved, none
#               (the hidden test file's path: reset to the
#               test patch's version in both arms)
#   forge       the fix, and index.js rewrites the report at   unresolved, agent
#               exit (every test passed) and exits 0           (the must-fail canary
#                                                              passes: forged)
#   hang        the fix, and every call loops forever          unresolved, agent
#   stale       the fix's diff with a context line that the    patch_apply_failed, agent
#               base does not have
#
# The environment is the node preset without its install (`preset_install =
# false`: no registry is reachable here, and fresh's tests need none of its
# devDependencies) with Debian's mocha (`/usr/bin/mocha`, NODE_PATH
# /usr/share/nodejs, which the preset's test script adds) through assay's
# mocha reporter (`jest-json`). Screening is done first and not timed; then
# the grading build is timed, the verdicts and faults in
# release/results.csv are compared with the truth (every mismatch printed;
# exit 1 on any), and its wall time is set against the minimal raw runs: the
# same test command (`mocha` with mocha's own json reporter) run directly, no
# assay, no sandbox, once in a plain checkout of each distinct graded tree
# (base + session patch + test patch; the stale patch's tree is not graded:
# nothing to run), a hang cut at the task's own timeout (tasks.jsonl
# `timeout_s`, what assay allows it). Ratio wall / minimal, target <= 1.3.
#
# The repository comes from the search tool's `fetch github:jshttp/fresh`;
# nothing of it is committed. The script clones it into its temp dir and
# needs no network.
#
# Usage: benches/js-real-corpus.sh [path/to/assay]   (default target/release/assay,
#        built with `cargo build --release` when missing)
# Env:   FRESH_REPO (default /work/.mirror/jshttp+fresh/repo), TIMEOUT
#        (`[env] timeout`, default 120), JOBS (default 2), KEEP=1 keeps the
#        work dir.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/lib.sh
. "$here/benches/lib.sh"
ASSAY=$(assay_binary "$@")
FRESH_REPO=${FRESH_REPO:-/work/.mirror/jshttp+fresh/repo}
TIMEOUT=${TIMEOUT:-120}
JOBS=${JOBS:-2}
git -C "$FRESH_REPO" rev-parse -q --verify HEAD >/dev/null \
    || { echo "no git repository at $FRESH_REPO (fetch it first: see the header)" >&2; exit 2; }
command -v mocha >/dev/null || { echo "needs Debian's mocha (apt-get install mocha)" >&2; exit 2; }
work=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then echo "work dir: $work"; else trap 'rm -rf "$work"' EXIT; fi
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@x
RAW_TEST='NODE_PATH=/usr/share/nodejs mocha --reporter json --reporter-option output=raw-report.json'

# ---------------------------------------------------------------- the corpus
# id base head title: the merged PRs (a squash commit, a merge commit, two
# commits that closed their PR by landing it).
candidates() {
    cat <<'EOF'
fresh-77 5b86bac ee73673 HTAB is optional whitespace in If-None-Match lists
fresh-38 86b4548 cff1222 If-None-Match takes precedence over If-Modified-Since
fresh-23 1599530 7a2b460 Invalid dates in modification headers are stale
fresh-11 727429c eb188a1 Weak ETags match in If-None-Match
EOF
}

# The wrong fixes, each `task file` then the old and the new text as a
# Python literal pair, applied to the base.
wrong_edits() {
    cat <<'EOF'
fresh-77 index.js
("      case 0x20: /*   */\n", "      case 0x0b: /* VTAB */\n      case 0x20: /*   */\n")
fresh-38 index.js
("  if (noneMatch && noneMatch !== '*') {\n", "  if (noneMatch === '*') {\n    return true\n  }\n  if (noneMatch) {\n")
fresh-23 index.js
("!lastModified || Date.parse(lastModified) > Date.parse(modifiedSince)", "!lastModified || isNaN(Date.parse(lastModified)) || Date.parse(lastModified) > Date.parse(modifiedSince)")
fresh-11 index.js
("  if (noneMatch) etagMatches = ~noneMatch.indexOf(etag) || '*' == noneMatch[0];\n", "  if (noneMatch) {\n    etagMatches = noneMatch.some(function (match) {\n      return match === '*' || match === etag;\n    });\n  }\n")
EOF
}

# What the fix's index.js gets appended in each session kind.
REGRESSION="
var freshFixed = module.exports
module.exports = function (reqHeaders, resHeaders) {
  if (reqHeaders['if-none-match'] && !resHeaders.etag) {
    return true
  }
  return freshFixed(reqHeaders, resHeaders)
}
"
FORGE="
process.on('exit', function () {
  var fs = require('fs')
  var report
  try { report = JSON.parse(fs.readFileSync('assay-report.json', 'utf8')) } catch (e) { return }
  (report.testResults || []).forEach(function (file) {
    file.status = 'passed'
    ;(file.assertionResults || []).forEach(function (t) { t.status = 'passed'; t.failureMessages = [] })
  })
  fs.writeFileSync('assay-report.json', JSON.stringify(report))
  process.exitCode = 0
})
"
HANG="
var freshFixed = module.exports
module.exports = function (reqHeaders, resHeaders) {
  for (;;) {}
}
"
AGENT_TEST="
describe('agent', function () {
  it('checks its own fix', function () {
    require('assert').ok(typeof require('..') === 'function')
  })
})
"

session() { # FILE TASK AGENT PATCH-KEY
    printf '{"task": "%s", "track": "basic", "agent": "%s", "model": "model-a", %s}\n' "$2" "$3" "$4" > "$1"
}

corpus() { # DIR
    local dir=$1 id base head title kind
    mkdir -p "$dir/statements"
    for kind in fix empty wrong regression collide forge hang stale; do mkdir -p "$dir/sessions/$kind"; done
    git clone -q "$FRESH_REPO" "$dir/repo"
    : > "$dir/candidates.jsonl"
    : > "$dir/truth.txt"
    while read -r id base head title; do
        base=$(git -C "$dir/repo" rev-parse "$base") head=$(git -C "$dir/repo" rev-parse "$head")
        python3 -c 'import json,sys; print(json.dumps(dict(zip(["id","base","head","title"], sys.argv[1:]))))' \
            "$id" "$base" "$head" "$title" >> "$dir/candidates.jsonl"
        echo "$title." > "$dir/statements/$id.md"
        echo "$id $base $head" >> "$dir/tasks.txt"
        git -C "$dir/repo" diff "$base" "$head" -- index.js > "$dir/sessions/fix/$id.diff"
        session "$dir/sessions/fix/$id.json" "$id" fix '"patch_file": "'"$id"'.diff"'
        session "$dir/sessions/empty/$id.json" "$id" empty '"patch": ""'
        # The fix with its first context line changed: it no longer matches the base.
        python3 - "$dir/sessions/fix/$id.diff" > "$dir/sessions/stale/$id.diff" <<'PY'
import sys
lines, done = open(sys.argv[1]).read().split("\n"), False
for i, l in enumerate(lines):
    if not done and i > 4 and l.startswith(" ") and l.strip():
        lines[i], done = " " + l[1:].replace(l[1:].lstrip(), "/* stale */ " + l[1:].lstrip(), 1), True
print("\n".join(lines), end="")
PY
        session "$dir/sessions/stale/$id.json" "$id" stale '"patch_file": "'"$id"'.diff"'
        # The fix and more: a regression, a forged report, a hang, a test file of its own.
        for kind in regression forge hang collide; do
            git -C "$dir/repo" worktree add -q --detach "$dir/wt" "$base"
            git -C "$dir/wt" apply "$dir/sessions/fix/$id.diff"
            case $kind in
                regression) printf '%s' "$REGRESSION" >> "$dir/wt/index.js" ;;
                forge) printf '%s' "$FORGE" >> "$dir/wt/index.js" ;;
                hang) printf '%s' "$HANG" >> "$dir/wt/index.js" ;;
                collide) printf '%s' "$AGENT_TEST" >> "$dir/wt/test/fresh.js" ;;
            esac
            git -C "$dir/wt" diff > "$dir/sessions/$kind/$id.diff"
            git -C "$dir/repo" worktree remove --force "$dir/wt"
            session "$dir/sessions/$kind/$id.json" "$id" "$kind" '"patch_file": "'"$id"'.diff"'
        done
        for arm in exclude keep; do
            printf "$id $arm %s\n" "fix resolved none -" "empty unresolved agent -" \
                "wrong unresolved agent -" "regression unresolved agent -" \
                "collide resolved none reset" "forge unresolved agent forged" \
                "hang unresolved agent timed_out" "stale patch_apply_failed agent -"
        done >> "$dir/truth.txt"
    done < <(candidates)
    local task file spec
    while read -r task file && read -r spec; do
        base=$(awk -v t="$task" '$1 == t { print $2 }' "$dir/tasks.txt")
        edited_diff "$dir/repo" "$dir/wt" "$base" "$file" "$spec" > "$dir/sessions/wrong/$task.diff"
        session "$dir/sessions/wrong/$task.json" "$task" wrong '"patch_file": "'"$task"'.diff"'
    done < <(wrong_edits)
    sort -o "$dir/truth.txt" "$dir/truth.txt"
    cat > "$dir/pipeline.toml" <<EOF
statements = "statements"
sessions = "sessions"

[[source]]
name = "fresh"
repo = "jshttp/fresh"
path = "repo"
branch = "master"
candidates = "candidates.jsonl"

[env]
preset = "node"
preset_install = false
setup = ["echo mocha > runner"]
timeout = $TIMEOUT

[grade]
arms = ["exclude", "keep"]
EOF
}

# verdicts DIR -> "task arm agent verdict fault why" lines, sorted. `why`
# is what the grade says of the three sessions whose verdict alone would not
# show the cause: the hang `timed_out` (its detail), the forger `forged`
# (its tamper), the colliding test file `reset` (its reset_paths); `-` else.
verdicts() {
    python3 - "$1/release/results.csv" "$ASSAY" "$1" <<'PY' | sort
import csv, json, subprocess, sys
for r in csv.DictReader(open(sys.argv[1])):
    why = "-"
    if r["agent"] == "hang":
        shown = subprocess.run([sys.argv[2], "show", r["grade_digest"]], cwd=sys.argv[3],
                               capture_output=True, text=True).stdout
        why = "timed_out" if json.loads(shown)["detail"].startswith("timed out") else "other"
    elif r["agent"] == "forge":
        why = "forged" if "report forged" in r["tamper"] else "other"
    elif r["agent"] == "collide":
        why = "reset" if "test/fresh.js" in r["reset_paths"] else "other"
    print(r["instance_id"], r["arm"], r["agent"], r["verdict"], r["fault"], why)
PY
}

# minimal DIR: the raw runs (benches/raw-runs.py; see the header), a hang
# cut at the task's own timeout. Prints "minimal_s trees"; DIR/minimal.txt
# has a line per tree.
minimal() { python3 "$here/benches/raw-runs.py" "$1" "$RAW_TEST" '^test/' "$work" timeout; }

# -------------------------------------------------------------------- the run
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); --jobs $JOBS"
dir="$work/fresh"
corpus "$dir"
echo "jshttp/fresh at $(git -C "$dir/repo" rev-parse HEAD)"
mv "$dir/sessions" "$dir/sessions.aside"
mkdir "$dir/sessions"
(cd "$dir" && "$ASSAY" build --jobs "$JOBS" --json > "$dir/screen.jsonl" 2>"$dir/screen.err") || {
    echo "screening failed:" >&2; tail -30 "$dir/screen.err" >&2; exit 1; }
rmdir "$dir/sessions"
mv "$dir/sessions.aside" "$dir/sessions"
python3 - "$dir/release/tasks.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    ids = t.get("test_ids", {})
    print(f"   {t['instance_id']}: certified={t.get('certified')} FAIL_TO_PASS={len(ids.get('FAIL_TO_PASS', []))} "
          f"PASS_TO_PASS={len(ids.get('PASS_TO_PASS', []))} timeout_s={t.get('timeout_s')} {t.get('reason', '')}")
PY
start=$(date +%s.%N)
(cd "$dir" && "$ASSAY" build --jobs "$JOBS" --json > "$dir/build.jsonl" 2>"$dir/build.err") || true
end=$(date +%s.%N)
wall=$(python3 -c "print(f'{$end - $start:.1f}')")
verdicts "$dir" > "$dir/verdicts.txt"
read -r raw trees < <(minimal "$dir")
echo "== jshttp/fresh (JavaScript, mocha): $(wc -l < "$dir/tasks.txt") tasks, $(find "$dir/sessions" -name '*.json' | wc -l) sessions, 2 arms"
echo "   grading build, wall              ${wall}s"
echo "   minimal raw runs ($trees trees)      ${raw}s"
echo "   wall / minimal                   $(python3 -c "print(f'{$wall/$raw:.2f}')")   (target <= 1.3)"
python3 - "$dir/build.jsonl" <<'PY'
import json, sys
kinds = {}
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "node_finished":
        k = kinds.setdefault(e["name"].split(":")[0], [0, 0])
        k[0] += 1
        k[1] += e.get("duration_ms", 0)
print("   node time by kind: " + " ".join(f"{k} {n}x {ms / 1000:.1f}s" for k, (n, ms) in sorted(kinds.items())))
PY
python3 - "$dir" <<'PY'
import json, sys
dir = sys.argv[1]
raw = {"hang": 0.0, "other": 0.0}
for line in open(f"{dir}/minimal.txt"):
    session, _, took, _ = line.split(" ", 3)
    raw["hang" if session.startswith("hang/") else "other"] += float(took.rstrip("s"))
node = {"hang": 0.0, "other": 0.0, "recheck": 0.0}
for line in open(f"{dir}/build.jsonl"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") != "node_finished":
        continue
    name, s = e["name"], e.get("duration_ms", 0) / 1000
    if name.startswith("run:"):
        node["hang" if name.split(":")[1].startswith("hang/") else "other"] += s
    elif name.startswith("recheck:"):
        node["recheck"] += s
print("   where it goes (assay node time; sandboxed runs overlap up to --jobs | raw):")
print(f"     the hanging runs      {node['hang']:7.1f}s | {raw['hang']:6.1f}s")
print(f"     the other runs        {node['other']:7.1f}s | {raw['other']:6.1f}s")
print(f"     rechecks (canaries)   {node['recheck']:7.1f}s |")
PY
for d in $(grep ' hang ' "$dir/verdicts.txt" | awk '$2 == "exclude" { print $1 }'); do
    digest=$(python3 -c 'import csv,sys; print(next(r["grade_digest"] for r in csv.DictReader(open(sys.argv[1])) if r["instance_id"] == sys.argv[2] and r["agent"] == "hang" and r["arm"] == "exclude"))' "$dir/release/results.csv" "$d")
    echo "   $d hang: $(cd "$dir" && "$ASSAY" show "$digest" | python3 -c 'import json,sys; print(json.load(sys.stdin)["detail"])')"
done | tee "$dir/hang-details.txt"
python3 - "$dir/hang-details.txt" <<'PY'
import re, sys
waits = [float(m) for m in re.findall(r"of which ([0-9.]+) s waiting", open(sys.argv[1]).read())]
print(f"   the hangs' waits for a CPU other work held (not on a run's clock, by design): {sum(waits):.1f}s over {len(waits)} runs")
PY
sed 's/^/   raw: /' "$dir/minimal.txt"
echo "   verdicts and faults against the truth ($(wc -l < "$dir/truth.txt") grades):"
cut -d' ' -f3- "$dir/verdicts.txt" | sort | uniq -c | sed 's/^/     /'
if cmp -s "$dir/truth.txt" "$dir/verdicts.txt"; then
    echo "   all match"
else
    echo "   MISMATCHES (< truth, > results.csv):"
    diff "$dir/truth.txt" "$dir/verdicts.txt" | grep '^[<>]' | sed 's/^/     /' || true
    echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 1
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
