#!/usr/bin/env bash
# usage: benches/instances-real.sh [ASSAY]
#
# SWE-bench-family instances generated from a fetched repository, imported
# through `[[instances]]` (docs/instances.md, "From a real repository"):
# four merged pull requests of hukkin/tomli (the candidates
# benches/real-corpus.sh mines; fetch it once with the search tool's
# `fetch github:hukkin/tomli`, nothing of it is committed), each made a row:
# `patch` the change without its tests, `test_patch` the tests, FAIL_TO_PASS
# and PASS_TO_PASS read here from `python3 -m unittest -v` run directly (no
# assay) in plain checkouts of the test and gold trees. Two rows are in
# SWE-bench's shape under SWE-bench's local image key
# (`sweb.eval.x86_64.<id>:latest`), two in SWE-Gym's (`family =
# "swe-gym"`, `xingyaoww/sweb.eval.x86_64.<id, __ as _s_>`); each image
# holds the repository at /testbed at its base, with the whole of its
# history after it (the fix's own commit included). Gold and empty
# predictions each. Checks: every task certified, assay's lists equal to
# the row's, no disagreement; the image's future counted
# (`commits_not_from_base`); gold resolved, empty unresolved; a second
# build executes nothing. Prints each row's controls and the build's times.
# Env: TOMLI_REPO (default /work/.mirror/hukkin+tomli/repo), KEEP=1.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
assay=$(realpath "${1:-$here/target/debug/assay}")
TOMLI_REPO=${TOMLI_REPO:-/work/.mirror/hukkin+tomli/repo}
git -C "$TOMLI_REPO" rev-parse -q --verify HEAD >/dev/null \
    || { echo "no git repository at $TOMLI_REPO (fetch github:hukkin/tomli first)" >&2; exit 2; }
docker image inspect assay-base:bookworm >/dev/null 2>&1 || "$here/scripts/base-image.sh" >/dev/null
work=$(mktemp -d /tmp/instances-real.XXXXXX)
images=()
cleanup() {
    [ ${#images[@]} -eq 0 ] || docker rmi -f "${images[@]}" >/dev/null 2>&1 || true
    [ -n "${KEEP:-}" ] && echo "work dir: $work" || rm -rf "$work"
}
trap cleanup EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
git clone -q "$TOMLI_REPO" "$work/repo"
pid=$$
# id base head (the squash-merged pull requests of benches/real-corpus.sh)
cat > "$work/candidates.txt" <<EOF
hukkin__tomli-229-$pid facdab0f5aacc5eb223753c42604d5de7bdaee9d 4e245a4bbbefed99e550e196095ea65c851cf31d swe-bench
hukkin__tomli-200-$pid 38297f82cd0ef067f1afd2ffb8dfa73b65c398da 2a2aa62f1bc71b89b74d41dd2ab67b5dd24bc129 swe-bench
hukkin__tomli-202-$pid 2a2aa62f1bc71b89b74d41dd2ab67b5dd24bc129 12314bde5b89a8bdc32de7403a2a4cf786187bbc swe-gym
hukkin__tomli-203-$pid 12314bde5b89a8bdc32de7403a2a4cf786187bbc 9eb2125ef49071e673d42e383b5221a268665193 swe-gym
EOF
unittest() { (cd "$1" && PYTHONPATH=src python3 -m unittest -v 2>&1 || true); }
mkdir -p "$work/project/sessions"
while read -r id base head family; do
    d=$work/$id
    git -C "$work/repo" diff --binary "$base" "$head" -- tests > "$d.test_patch"
    git -C "$work/repo" diff --binary "$base" "$head" -- . ':!tests' > "$d.patch"
    # The test and gold trees, checked out plainly; the lists from their runs.
    git -C "$work/repo" worktree add -q --detach "$d-test" "$base"
    git -C "$d-test" apply "$d.test_patch"
    unittest "$d-test" > "$d.test.log"
    git -C "$d-test" apply "$d.patch"
    unittest "$d-test" > "$d.gold.log"
    git -C "$work/repo" worktree remove --force "$d-test"
    # The image: the repository at its base, every later commit kept.
    img=$d-image
    mkdir -p "$img"
    git clone -q "$work/repo" "$img/repo"
    git -C "$img/repo" checkout -q --detach "$base"
    printf 'FROM assay-base:bookworm\nUSER root\nCOPY repo /testbed\nWORKDIR /testbed/\n' > "$img/Dockerfile"
    case $family in
        swe-bench) name=sweb.eval.x86_64.$id:latest ;;
        swe-gym) name=xingyaoww/sweb.eval.x86_64.${id//__/_s_} ;;
    esac
    docker build -q -t "$name" "$img" > /dev/null 2> "$img/build.err" || { cat "$img/build.err" >&2; exit 1; }
    images+=("$name")
    python3 "$here/benches/instances-real.py" row "$id" "$base" "$d" "$family" "$work/project"
done < "$work/candidates.txt"
cat > "$work/project/pipeline.toml" <<'EOF'
cache = "cache"
release = "release"
sessions = "sessions"

[screen]
repeats = 2

[[instances]]
name = "sb"
path = "swe-bench.jsonl"
family = "swe-bench"
test_command = "PYTHONPATH=src:$PYTHONPATH python3 -m unittest -v"
report = "unittest"

[[instances]]
name = "gym"
path = "swe-gym.jsonl"
family = "swe-gym"
test_command = "PYTHONPATH=src:$PYTHONPATH python3 -m unittest -v"
report = "unittest"
EOF
cd "$work/project"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
"$assay" build --json > build.jsonl 2> build.err || { tail -20 build.err; exit 1; }
end=$(date +%s.%N)
"$assay" build --json > again.jsonl 2> again.err
python3 "$here/benches/instances-real.py" check "$assay" "$work/project" "$start" "$end"
