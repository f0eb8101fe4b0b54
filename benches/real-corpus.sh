#!/usr/bin/env bash
# Grading cost on two real repositories (issue 23, "Measure"): spf13/pflag
# (Go, stdlib only) and hukkin/tomli (Python, unittest), 4 merged PRs each,
# 4 sessions a task (the right fix, a wrong fix, the empty patch, and on one
# task of each repository a fix that hangs), two arms. Each repository is
# graded twice, side by side in one run, each in its own copy and cache:
#
#   before: the grading-cost features off: `[grade] timeout_factor = 0` (a
#           hang costs `[env] timeout`), no `[env] warm` (Go compiles from an
#           empty GOCACHE in every run), reruns of the whole test command;
#   after:  the defaults (timeouts 10x the slowest screening reading, at
#           least 5 s, a run's waits for a CPU not counted), `warm = {
#           GOCACHE = "go-cache" }` for Go, and reruns
#           of the failing tests alone (`rerun_command` with `{tests}`).
#
# Screening is done first in each copy and not timed. Prints per repository:
# the grading build's wall time, the node time of its graded runs and of its
# grades (reruns and checks), and the minimal raw runs: the test command run
# directly (no assay, no sandbox) once in a plain checkout of each distinct
# graded tree (base + session patch + test patch), with a warm GOCACHE for
# Go, a hang cut at 10x the task's slowest screening reading (node time).
# The ratio is wall / minimal (target <= 1.3). Every (session, arm) must get the same
# verdict and fault before and after (release/results.csv).
#
# The repositories come from the search tool's `fetch` (run once by whoever
# reproduces this: `fetch github:spf13/pflag`, `fetch github:hukkin/tomli`);
# nothing of them is committed. The script clones them into its temp dir and
# needs no network.
#
# Usage: benches/real-corpus.sh [path/to/assay]   (default target/release/assay,
#        built with `cargo build --release` when missing)
# Env:   PFLAG_REPO (default /work/.mirror/spf13+pflag/repo), TOMLI_REPO
#        (default /work/.mirror/hukkin+tomli/repo): a git directory of each;
#        TIMEOUT (`[env] timeout`, default 180), JOBS (default 2; sandboxed
#        runs share nothing and overlap up to JOBS, docs/stages.md),
#        ONLY=go|py (one repository), KEEP=1 keeps the work dir.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/lib.sh
. "$here/benches/lib.sh"
ASSAY=$(assay_binary "$@")
PFLAG_REPO=${PFLAG_REPO:-/work/.mirror/spf13+pflag/repo}
TOMLI_REPO=${TOMLI_REPO:-/work/.mirror/hukkin+tomli/repo}
TIMEOUT=${TIMEOUT:-180}
JOBS=${JOBS:-2}
ONLY=${ONLY:-}
for r in $(case $ONLY in go) echo "$PFLAG_REPO" ;; py) echo "$TOMLI_REPO" ;; *) echo "$PFLAG_REPO $TOMLI_REPO" ;; esac); do
    git -C "$r" rev-parse -q --verify HEAD >/dev/null \
        || { echo "no git repository at $r (fetch it first: see the header)" >&2; exit 2; }
done
work=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then echo "work dir: $work"; else trap 'rm -rf "$work"' EXIT; fi
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@x

GO_ENV='env GOPATH=$HOME/go GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local'
PY_TEST='PYTHONPATH=src:$PYTHONPATH python3 -m unittest -v'
# What warms Go's build cache (the environment's setup, and the minimal runs'
# cache): what every `go test` needs (testing, the vet of it), and the vet of
# the standard packages pflag imports, which compiles them and their vet
# facts (net's cgo alone takes seconds; Go 1.19's prebuilt standard library
# is not what `go test` links against). The setup sees only go.mod, so the
# list is written here, as a pipeline's author would. About 70 MB.
GO_WARM="$GO_ENV go test -run '^\$' unicode/utf8 > /dev/null && $GO_ENV go vet bytes encoding encoding/base64 encoding/csv encoding/hex errors flag fmt io io/ioutil net os reflect sort strconv strings time"

# ---------------------------------------------------------------- the corpus
# candidate: id base head  (merge commits for pflag, squash commits for tomli)
pflag_candidates() {
    cat <<'EOF'
pflag-483 6404d8209615987d23eafd5c38207dc343a5881e 74752827e8d9c7a60d753adb5cb6ea8baf0ee396 A nil default IP round-trips through GetIP
pflag-484 74752827e8d9c7a60d753adb5cb6ea8baf0ee396 95a0aa354537f4ef7e68a02602ca48405c2f7ff2 A uint slice flag accepts hexadecimal input
pflag-487 95a0aa354537f4ef7e68a02602ca48405c2f7ff2 7ef35c6ed54a0573afe24fbee9463cc7eb02b5b7 Custom values with IsBoolFlag() behave as bool flags
pflag-453 be274af2a6d762e76dcb020967844bbcf3b3dbd4 6fcfbc9910e1af538fde31db820be7d1bec231e4 Bool flags show [=true|false] in the usage
EOF
}
tomli_candidates() {
    cat <<'EOF'
tomli-229 facdab0f5aacc5eb223753c42604d5de7bdaee9d 4e245a4bbbefed99e550e196095ea65c851cf31d tomli.loads raises TypeError, not AttributeError, for a non-str
tomli-200 38297f82cd0ef067f1afd2ffb8dfa73b65c398da 2a2aa62f1bc71b89b74d41dd2ab67b5dd24bc129 TOML 1.1: newlines and a trailing comma in inline tables
tomli-202 2a2aa62f1bc71b89b74d41dd2ab67b5dd24bc129 12314bde5b89a8bdc32de7403a2a4cf786187bbc TOML 1.1: the \xHH escape in basic strings
tomli-203 12314bde5b89a8bdc32de7403a2a4cf786187bbc 9eb2125ef49071e673d42e383b5221a268665193 TOML 1.1: seconds are optional in date-times and times
EOF
}

# The sessions' edits, each `task kind file` then the old and the new text on
# the next lines as a Python literal pair: a wrong fix (looks like the fix,
# misses part of it) per task, and a hang (the fix, looping forever where the
# hidden test goes) on one task of each repository.
pflag_edits() {
    cat <<'EOF'
pflag-483 wrong ip.go
("func ipConv(sval string) (interface{}, error) {\n", "func ipConv(sval string) (interface{}, error) {\n\tif sval == \"\" {\n\t\treturn net.IP(nil), nil\n\t}\n")
pflag-483 hang ip.go
("func ipConv(sval string) (interface{}, error) {\n", "func ipConv(sval string) (interface{}, error) {\n\tfor sval == \"\" || sval == \"<nil>\" {\n\t}\n")
pflag-484 wrong uint_slice.go
("\t\tu, err := strconv.ParseUint(d, 10, 0)\n\t\tif err != nil {\n\t\t\treturn nil, err\n", "\t\tu, err := strconv.ParseUint(d, 0, 0)\n\t\tif err != nil {\n\t\t\treturn nil, err\n")
pflag-487 wrong flag.go
("\tflag.Name = string(normalizedFlagName)\n", "\tflag.Name = string(normalizedFlagName)\n\tif bf, ok := flag.Value.(boolFlag); ok && bf.IsBoolFlag() && flag.NoOptDefVal == \"\" {\n\t\tflag.NoOptDefVal = \"true\"\n\t}\n")
pflag-453 wrong flag.go
("\t\tif varname != \"\" {\n\t\t\tline += \" \" + varname\n", "\t\tif flag.Value.Type() == \"bool\" {\n\t\t\tline += \"[=true/false]\"\n\t\t} else if varname != \"\" {\n\t\t\tline += \" \" + varname\n")
EOF
}
tomli_edits() {
    cat <<'EOF'
tomli-229 wrong src/tomli/_parser.py
("    src = __s.replace(\"\\r\\n\", \"\\n\")\n", "    if not isinstance(__s, str):\n        raise TypeError(\"loads() takes a str\")\n    src = __s.replace(\"\\r\\n\", \"\\n\")\n")
tomli-200 wrong src/tomli/_parser.py
("    pos = skip_chars(src, pos, TOML_WS)\n    if src.startswith(\"}\", pos):\n", "    pos = skip_comments_and_array_ws(src, pos)\n    if src.startswith(\"}\", pos):\n")
tomli-202 wrong src/tomli/_parser.py
("    if escape_id == \"\\\\u\":\n", "    if escape_id == \"\\\\x\":\n        return parse_hex_char(src, pos, 4)\n    if escape_id == \"\\\\u\":\n")
tomli-202 hang src/tomli/_parser.py
("    if escape_id == \"\\\\u\":\n", "    while escape_id == \"\\\\x\":\n        pass\n    if escape_id == \"\\\\u\":\n")
tomli-203 wrong src/tomli/_re.py
("    return time(int(hour_str), int(minute_str), int(sec_str), micros)\n", "    sec = int(sec_str) if sec_str else 0\n    return time(int(hour_str), int(minute_str), sec, micros)\n")
EOF
}

# corpus DIR LANG: the repository, candidates, statements and sessions.
corpus() {
    local dir=$1 lang=$2 repo cands edits is_test
    case $lang in
        go) repo=$PFLAG_REPO cands=pflag_candidates edits=pflag_edits is_test='_test\.go$' ;;
        py) repo=$TOMLI_REPO cands=tomli_candidates edits=tomli_edits is_test='^tests/' ;;
    esac
    mkdir -p "$dir/statements" "$dir/sessions"/{right,wrong,empty,hang}
    git clone -q "$repo" "$dir/repo"
    : > "$dir/candidates.jsonl"
    local id base head title
    while read -r id base head title; do
        python3 -c 'import json,sys; print(json.dumps(dict(zip(["id","base","head","title"], sys.argv[1:]))))' \
            "$id" "$base" "$head" "$title" >> "$dir/candidates.jsonl"
        echo "$title." > "$dir/statements/$id.md"
        echo "$id $base $head" >> "$dir/tasks.txt"
        # The right fix: the merged change without its test files.
        git -C "$dir/repo" diff "$base" "$head" -- $(git -C "$dir/repo" diff --name-only "$base" "$head" | grep -Ev "$is_test") \
            > "$dir/sessions/right/$id.diff"
        session "$dir/sessions/right/$id.json" "$id" right '"patch_file": "'"$id"'.diff"'
        session "$dir/sessions/empty/$id.json" "$id" empty '"patch": ""'
    done < <($cands)
    local task kind file spec
    while read -r task kind file && read -r spec; do
        base=$(awk -v t="$task" '$1 == t { print $2 }' "$dir/tasks.txt")
        edited_diff "$dir/repo" "$dir/wt" "$base" "$file" "$spec" > "$dir/sessions/$kind/$task.diff"
        session "$dir/sessions/$kind/$task.json" "$task" "$kind" '"patch_file": "'"$task"'.diff"'
    done < <($edits)
}

session() { # FILE TASK AGENT PATCH-KEY
    printf '{"task": "%s", "track": "basic", "agent": "%s", "model": "model-a", %s}\n' "$2" "$3" "$4" > "$1"
}

# pipeline DIR LANG MODE: the pipeline file of one side.
pipeline() {
    local dir=$1 lang=$2 mode=$3
    {
        echo 'statements = "statements"'
        echo 'sessions = "sessions"'
        echo
        echo '[[source]]'
        if [ "$lang" = go ]; then
            echo 'name = "pflag"'
            echo 'repo = "spf13/pflag"'
        else
            echo 'name = "tomli"'
            echo 'repo = "hukkin/tomli"'
        fi
        echo 'path = "repo"'
        echo 'branch = "master"'
        echo 'candidates = "candidates.jsonl"'
        echo
        echo '[env]'
        echo "timeout = $TIMEOUT"
        if [ "$lang" = go ]; then
            echo 'key_files = ["go.mod"]'
            echo 'report = "go-test-json"'
            if [ "$mode" = after ]; then
                echo "setup = [\"go version > go-version.txt\", \"$GO_WARM\"]"
                echo 'warm = { GOCACHE = "go-cache" }'
                echo "test_command = \"$GO_ENV go test -json ./...\""
            else
                echo 'setup = ["go version > go-version.txt"]'
                echo "test_command = \"$GO_ENV GOCACHE=\$HOME/.cache/go go test -json ./...\""
            fi
        else
            echo 'setup = ["python3 --version > python-version.txt"]'
            echo 'report = "unittest"'
            echo "test_command = \"$PY_TEST\""
        fi
        echo
        echo '[grade]'
        echo 'arms = ["exclude", "keep"]'
        if [ "$mode" = before ]; then
            echo 'timeout_factor = 0'
        elif [ "$lang" = go ]; then
            # go test selects tests by a pattern over names: ids are
            # `github.com/spf13/pflag.TestName[/subtest]`.
            echo "rerun_command = '''$GO_ENV go test -json -run \"^(\$(for t in {tests}; do n=\${t#github.com/spf13/pflag.}; printf '%s|' \"\${n%%/*}\"; done | sed 's/|\$//'))\\\$\" ./...'''"
        else
            echo "rerun_command = \"$PY_TEST {tests}\""
        fi
    } > "$dir/pipeline.toml"
}

# prepare DIR LANG MODE: a copy of the corpus, screened (not timed).
prepare() {
    local dir=$1 lang=$2 mode=$3
    mkdir -p "$dir"
    cp -r "$work/corpus-$lang"/. "$dir/"
    pipeline "$dir" "$lang" "$mode"
    mv "$dir/sessions" "$dir/sessions.aside"
    mkdir "$dir/sessions"
    (cd "$dir" && "$ASSAY" build --jobs "$JOBS" --json > "$dir/screen.jsonl" 2>"$dir/screen.err") || {
        echo "screening failed in $dir:" >&2; tail -20 "$dir/screen.err" >&2; exit 1; }
    rmdir "$dir/sessions"
    mv "$dir/sessions.aside" "$dir/sessions"
}

grade() { # DIR -> "wall_s run_s grade_s runs_executed"
    local dir=$1 start end
    start=$(date +%s.%N)
    (cd "$dir" && "$ASSAY" build --jobs "$JOBS" --json > "$dir/build.jsonl" 2>"$dir/build.err") || true
    end=$(date +%s.%N)
    python3 - "$dir/build.jsonl" "$start" "$end" <<'PY'
import json, sys
runs = grades = executed = 0
kinds = {}  # node kind -> [count, ms]: where the wall time went
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") != "node_finished":
        continue
    name, ms = e["name"], e.get("duration_ms", 0)
    kind = kinds.setdefault(name.split(":")[0], [0, 0])
    kind[0] += 1
    kind[1] += ms
    if name.startswith("run:") and (name.endswith(":exclude") or name.endswith(":keep")):
        runs += ms
        executed += 1
    elif name.startswith(("grade:", "recheck:")):
        grades += ms
with open(sys.argv[1].replace("build.jsonl", "kinds.txt"), "w") as out:
    print(" ".join(f"{k} {n}x {ms / 1000:.1f}s" for k, (n, ms) in sorted(kinds.items())), file=out)
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.1f} {runs / 1000:.1f} {grades / 1000:.1f} {executed}")
PY
}

verdicts() { # DIR -> session,arm,verdict,fault lines
    python3 - "$1/release/results.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["session"], r["arm"], r["verdict"], r["fault"])
PY
}

# minimal DIR LANG: the raw test runs a grader minimally needs, timed
# outside assay: one run of the test command per distinct graded tree (base
# + the session's patch + the test patch's files), in a plain checkout,
# unsandboxed, Go with its own copy of a warm GOCACHE (the copy not timed),
# a hang cut at 10x the task's slowest screening reading (its node time,
# from DIR's screening events). Prints "minimal_s trees"; DIR/minimal.txt has a line
# per tree.
minimal() {
    local dir=$1 lang=$2 command is_test
    if [ "$lang" = go ]; then
        command="$GO_ENV go test -json ./..."
        is_test='_test\.go$'
        mkdir -p "$work/raw-home"
        HOME="$work/raw-home" GOCACHE="$work/raw-go-cache" sh -c "$GO_WARM"
    else
        command=$PY_TEST
        is_test='^tests/'
    fi
    python3 "$here/benches/raw-runs.py" "$dir" "$command" "$is_test" "$work" screening
}

# breakdown DIR WALL MINIMAL: "what|node time|raw" lines: the hanging runs, the other
# graded runs, the grades (reruns, checks), the rest of the wall time.
breakdown() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
dir, wall, minimal = sys.argv[1], float(sys.argv[2]), sys.argv[3]
raw, hang = {}, set()
for line in open(minimal):
    session, _, took, end = line.split(" ", 3)
    raw[session] = float(took.rstrip("s"))
    if end.startswith("cut"):
        hang.add(session)
node = {"hang": 0.0, "runs": 0.0, "grades": 0.0}
for line in open(f"{dir}/build.jsonl"):
    e = json.loads(line)
    if e.get("event") != "node_finished":
        continue
    name, s = e["name"], e.get("duration_ms", 0) / 1000
    if name.startswith("run:"):
        node["hang" if name.split(":")[1] in hang else "runs"] += s
    elif name.startswith(("grade:", "recheck:")):
        node["grades"] += s
rest = wall - sum(node.values())
hang_raw = sum(v for k, v in raw.items() if k in hang)
print(f"hanging runs|{node['hang']:.1f}s|{hang_raw:.1f}s")
print(f"other graded runs|{node['runs']:.1f}s|{sum(raw.values()) - hang_raw:.1f}s")
print(f"grades (reruns, checks)|{node['grades']:.1f}s|0.0s")
print(f"the rest of the wall (staging, release, ...)|{rest:.1f}s|0.0s")
PY
}

ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }

# -------------------------------------------------------------------- the run
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); --jobs $JOBS"
langs="go py"
[ -n "$ONLY" ] && langs=$ONLY
for lang in $langs; do
    corpus "$work/corpus-$lang" "$lang"
    prepare "$work/$lang-before" "$lang" before
    prepare "$work/$lang-after" "$lang" after
done
for lang in $langs; do
    read -r bw br bg bn < <(grade "$work/$lang-before")
    read -r aw ar ag an < <(grade "$work/$lang-after")
    read -r raw trees < <(minimal "$work/$lang-after" "$lang")
    verdicts "$work/$lang-before" | sort > "$work/$lang-before.verdicts"
    verdicts "$work/$lang-after" | sort > "$work/$lang-after.verdicts"
    same=yes
    cmp -s "$work/$lang-before.verdicts" "$work/$lang-after.verdicts" || same=no
    case $lang in go) name="spf13/pflag (Go)" ;; py) name="hukkin/tomli (Python)" ;; esac
    echo "== $name: $(wc -l < "$work/$lang-after/tasks.txt") tasks, $(find "$work/$lang-after/sessions" -name '*.json' | wc -l) sessions, 2 arms"
    printf '%-40s %10s %10s\n' "" "before" "after"
    printf '%-40s %9ss %9ss\n' "grading build, wall" "$bw" "$aw"
    printf '%-40s %9ss %9ss\n' "graded runs, node time" "$br" "$ar"
    printf '%-40s %10s %10s\n' "graded runs executed" "$bn" "$an"
    printf '%-40s %9ss %9ss\n' "grades (reruns, checks), node time" "$bg" "$ag"
    printf '%-40s %9ss %9ss\n' "minimal raw runs ($trees trees)" "$raw" "$raw"
    printf '%-40s %10s %10s   (target <= 1.3)\n' "wall / minimal" "$(ratio "$bw" "$raw")" "$(ratio "$aw" "$raw")"
    echo "same verdicts and faults: $same ($(wc -l < "$work/$lang-after.verdicts") grades)"
    cut -d' ' -f3,4 "$work/$lang-after.verdicts" | sort | uniq -c | sed 's/^/   /'
    echo "   where the wall goes (node time; sandboxed runs overlap up to --jobs):"
    printf '     %-44s %10s %10s %10s\n' "" before after raw
    paste -d'|' <(breakdown "$work/$lang-before" "$bw" "$work/$lang-after/minimal.txt") \
        <(breakdown "$work/$lang-after" "$aw" "$work/$lang-after/minimal.txt" | cut -d'|' -f2) \
        | awk -F'|' '{ printf "     %-44s %10s %10s %10s\n", $1, $2, $4, $3 }'
    echo "   node time by kind, before: $(cat "$work/$lang-before/kinds.txt")"
    echo "   node time by kind, after:  $(cat "$work/$lang-after/kinds.txt")"
    sed 's/^/   raw: /' "$work/$lang-after/minimal.txt"
    [ "$same" = yes ] || { diff "$work/$lang-before.verdicts" "$work/$lang-after.verdicts" || true; exit 1; }
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
