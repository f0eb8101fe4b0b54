#!/usr/bin/env bash
# usage: benches/harbor-real-tasks.sh [ASSAY]
#
# Five public Terminal-Bench-style Harbor task folders (issue 48, item 4),
# by five authors, graded offline as a user would: a dataset of the five, a
# pipeline.toml, per task three sessions (gold: the diff its
# solution/solve.sh makes to the image's working directory, computed by
# running solve.sh in a container of the task's screened image; empty; a
# wrong one adding a stray file) and a scripted `[[agent]]` attempt (one
# model call to benches/scripted-llm.py on loopback, its answer written to
# a file of the workspace). The folders are not committed: they are copied
# from the `fetch`ed mirrors (run once by whoever reproduces this:
# `fetch github:<repo>` for each repository below), at the commit named.
# No network is needed but the Debian mirror the Dockerfiles' `apt-get`
# reaches when a task declares the network (docs/harbor.md).
#
# Every `FROM` image is provided by tagging assay-base:bookworm
# (scripts/base-image.sh) under the FROM name when the name is missing
# (the tags it made are removed at the end).
#
# Prints per task: certified or not and the reasons, each session's
# verdict and fault, the attempt's; the second build's executed nodes (0);
# and which tasks a one-word change of one task's Dockerfile screens
# again (only its own).
#
# Env: MIRRORS (default /work/.mirror).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
assay=$(realpath "${1:-$here/target/debug/assay}")
mirrors=${MIRRORS:-/work/.mirror}

# name  repo  commit  folder-in-repo (. for the root)
tasks() {
    cat <<'EOF'
qc-defended moodi-mercor/terminal-bench-qc ec5b4c19806994ead7c94d6789e6fab832c37f0d eval/fixtures/pass/agent-writable-defended
net-fetch wxj630/terminal-bench-math-modeling 5ef1a4ad4f0a6c8a492b11d233b29d4931c4a880 ci_checks/test-tasks/fail-static-trial-network-fetch
reconcile Amol07/reconcile-batch-task ee4b6c0493ee3ca7689836151941e38869ad0610 .
json-transform ShivamGairola2577/json-transform-harbor-task 5592c4424782a882b1ab7e5f890354d23dd29951 .
mq-restart ATU531/mq-auto-restart dee7b66660b684bf363fbd83aae3702bd8ebc6c6 .
EOF
}

# shellcheck source=benches/lib.sh
. "$here/benches/lib.sh"
harbor_bench_start harbor-real
tagged=()
server=
edited=json-transform
cleanup() {
    [ -z "$server" ] || kill "$server" 2>/dev/null || true
    for t in "${tagged[@]}"; do docker rmi "$t" >/dev/null 2>&1 || true; done
    # The edited task's first images, which the last release no longer names.
    docker images --format '{{.Repository}}:{{.Tag}}' | grep "^assay-harbor/tb-$edited:" | xargs -r docker rmi >/dev/null 2>&1 || true
    harbor_bench_cleanup
}
trap cleanup EXIT

# ------------------------------------------------------------ the dataset
mkdir -p tb sessions
while read -r name repo commit folder; do
    git_dir="$mirrors/${repo/\//+}/repo"
    git -C "$git_dir" cat-file -e "$commit^{commit}" 2>/dev/null \
        || { echo "no commit $commit of $repo under $git_dir (fetch github:$repo first)" >&2; exit 2; }
    mkdir -p "tb/$name"
    git -C "$git_dir" archive "$commit:${folder#.}" | tar -x -C "tb/$name"
    for from in $(awk 'toupper($1) == "FROM" { for (i = 2; i <= NF; i++) if ($i !~ /^--/) { print $i; break } }' "tb/$name/environment/Dockerfile"); do
        if ! docker image inspect "$from" >/dev/null 2>&1; then
            docker tag assay-base:bookworm "$from"
            tagged+=("$from")
            echo "FROM $from: tagged assay-base:bookworm"
        fi
    done
done < <(tasks)

cat >pipeline.toml <<'TOML'
cache = "cache"
release = "release"

[screen]
repeats = 1

[[harbor_dataset]]
name = "tb"
path = "tb"
TOML

echo "== build 1: screening"
"$assay" build --json >build1.jsonl 2>build1.err || true
grep -m1 '^harbor:' build1.err || tail -3 build1.err

# ------------------------------------------------------------ the sessions
# gold NAME IMAGE: the diff solve.sh makes to IMAGE's working directory,
# run as the oracle runs (root, no network).
gold() {
    local name=$1 image=$2 wd
    wd=$(docker image inspect --format '{{.Config.WorkingDir}}' "$image")
    docker run --rm --network none -v "$work/tb/$name/solution:/solution:ro" --entrypoint sh "$image" -c "
        cd '${wd:-/}' && git init -q . && git add -A && git -c user.name=g -c user.email=g@x commit -qm base --allow-empty
        bash /solution/solve.sh >/dev/null 2>&1 || sh /solution/solve.sh >/dev/null 2>&1
        git add -A && git diff --cached --binary HEAD" 2>/dev/null || true
}
wrong='diff --git a/assay-wrong.txt b/assay-wrong.txt
new file mode 100644
--- /dev/null
+++ b/assay-wrong.txt
@@ -0,0 +1 @@
+not the answer
'
session() { # NAME KIND
    printf '{"task": "tb/%s", "agent": "%s", "model": "m", "patch_file": "%s-%s.diff"}\n' "$1" "$2" "$1" "$2" >"sessions/$1-$2.json"
}
while read -r name _; do
    image=$(python3 - "$name" <<'PY'
import json, sys
for line in open("release/harbor-tasks.jsonl"):
    t = json.loads(line)
    if t["folder"] == sys.argv[1]:
        print((t.get("environment") or {}).get("image") or "")
PY
)
    if [ -n "$image" ]; then
        gold "$name" "$image" >"sessions/$name-gold.diff"
    else
        : >"sessions/$name-gold.diff"
    fi
    echo "gold diff of $name: $(wc -l <"sessions/$name-gold.diff") lines"
    : >"sessions/$name-empty.diff"
    printf '%s' "$wrong" >"sessions/$name-wrong.diff"
    for kind in gold empty wrong; do session "$name" "$kind"; done
done < <(tasks)

port=$((20000 + RANDOM % 20000))
python3 "$here/benches/scripted-llm.py" "$port" &
server=$!
export OPENAI_API_KEY=sk-bench-not-a-key
cat >>pipeline.toml <<TOML
sessions = "sessions"

[[agent]]
label = "scripted"
model = "scripted"
attempts = 1
transcript = "none"
base_url = "http://127.0.0.1:$port/v1"
key_env = "OPENAI_API_KEY"
command = '''
python3 - <<'PY'
import json, os, urllib.request
req = urllib.request.Request(os.environ["ASSAY_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "scripted", "messages": [{"role": "user", "content": "go"}]}).encode(),
    headers={"Content-Type": "application/json"})
answer = json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"]
open("agent-note.txt", "w").write(answer + "\n")
print("agent-done")
PY
'''
TOML
# A pipeline's `sessions` key is top-level: move it above the tables.
python3 - <<'PY'
lines = open("pipeline.toml").read().split("\n")
lines.remove('sessions = "sessions"')
lines.insert(2, 'sessions = "sessions"')
open("pipeline.toml", "w").write("\n".join(lines))
PY

echo "== build 2: sessions and the agent"
"$assay" build --json >build2.jsonl 2>build2.err || true
grep -m1 '^harbor:' build2.err || tail -3 build2.err
echo "== build 3: again"
"$assay" build --json >build3.jsonl 2>build3.err || true
echo "build 3 executed $(grep -c '"node_finished"' build3.jsonl || true) nodes"

# ------------------------------------------------------------ the readings
python3 - <<'PY'
import csv, json, re
summary = json.load(open("release/summary.json"))
tasks = [json.loads(l) for l in open("release/harbor-tasks.jsonl")]
rows = list(csv.DictReader(open("release/results.csv")))
def tail(reading):
    return (reading.get("tail") or "").strip().replace("\n", " | ")[-240:]
for t in tasks:
    name = t["folder"]
    state = "certified" if t["certified"] else "NOT certified: " + "; ".join(t.get("uncertified_because") or [])
    print(f"\n{name}: {state}")
    env = t.get("environment") or {}
    print(f"  environment: networked={env.get('networked')} ok={env.get('ok')} {(env.get('reason') or '')[:400]}")
    for control, readings in (t.get("readings") or {}).items():
        for r in readings:
            print(f"  {control} reward={r.get('reward')}: {tail(r)}")
    for row in rows:
        if row.get("instance_id") == f"tb/{name}":
            print(f"  {row['session']:36s} verdict={row['verdict']:18s} fault={row['fault']}")
    for kind, trials in summary["trials"].items():
        for e in trials["excluded"]:
            if e["session"].startswith(name + "-") or e["session"].startswith(f"agent/scripted/tb/{name}/"):
                print(f"  {e['session']:36s} not graded, fault={e['fault']}: {e['why'][:90]}")
print(f"\nsummary.json tasks: {summary['tasks']}; attempts: not_started {summary['trials']['attempts']['not_started']}"
      f" of {summary['trials']['attempts']['planned']}; report.html: {re.findall(r'Uncertified tasks [(][0-9]+[)]', open('release/report.html').read())}")
PY

# ------------------------------------------------------------ a one-word change
sed -i 's/^WORKDIR \/app/WORKDIR \/app\/./' "tb/$edited/environment/Dockerfile"
"$assay" build --json >build4.jsonl 2>build4.err || true
echo
echo "after a one-word change of tb/$edited/environment/Dockerfile, screened again:" \
    "$(python3 -c '
import json
print(sorted(e["name"] for e in map(json.loads, open("build4.jsonl")) if e.get("event") == "node_finished" and e.get("kind") == "harbor_task"))')"
