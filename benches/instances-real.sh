#!/usr/bin/env bash
# usage: benches/instances-real.sh [ASSAY]
#
# SWE-bench-family instances generated from fetched repositories, imported
# through `[[instances]]` (docs/instances.md, "From a real repository"):
# merged pull requests of hukkin/tomli (Python) and spf13/pflag (Go), the
# candidates benches/real-corpus.sh mines (fetch them once with the search
# tool's `fetch github:hukkin/tomli` and `fetch github:spf13/pflag`;
# nothing of them is committed), each made a row: `patch` the change
# without its tests, `test_patch` the tests, FAIL_TO_PASS and PASS_TO_PASS
# read here from `python3 -m unittest -v` / `go test -json` run directly
# (no assay) in plain checkouts of the test and gold trees. Two rows are in
# SWE-bench's shape under SWE-bench's local image key
# (`sweb.eval.x86_64.<id>:latest`), two in SWE-Gym's (`family =
# "swe-gym"`, `xingyaoww/sweb.eval.x86_64.<id, __ as _s_>`); each image
# holds the repository at /testbed at its base, with the whole of its
# history after it (the fix's own commit included). Gold and empty
# predictions each. Checks: every task certified, assay's lists equal to
# the row's, no disagreement; the image's future counted
# (`commits_not_from_base`); gold resolved, empty unresolved; a second
# build executes nothing. Prints each row's controls and the build's times.
# The Go images carry this machine's Go toolchain (copied in at
# /usr/local/go). Env: TOMLI_REPO (default /work/.mirror/hukkin+tomli/repo),
# PFLAG_REPO (default /work/.mirror/spf13+pflag/repo), KEEP=1.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
assay=$(realpath "${1:-$here/target/debug/assay}")
TOMLI_REPO=${TOMLI_REPO:-/work/.mirror/hukkin+tomli/repo}
PFLAG_REPO=${PFLAG_REPO:-/work/.mirror/spf13+pflag/repo}
for r in "$TOMLI_REPO" "$PFLAG_REPO"; do
    git -C "$r" rev-parse -q --verify HEAD >/dev/null \
        || { echo "no git repository at $r (fetch it first: see the header)" >&2; exit 2; }
done
goroot=$(go env GOROOT)
docker image inspect assay-base:bookworm >/dev/null 2>&1 || "$here/scripts/base-image.sh" >/dev/null
work=$(mktemp -d /tmp/instances-real.XXXXXX)
images=()
cleanup() {
    [ ${#images[@]} -eq 0 ] || docker rmi -f "${images[@]}" >/dev/null 2>&1 || true
    [ -n "${KEEP:-}" ] && echo "work dir: $work" || rm -rf "$work"
}
trap cleanup EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
git clone -q "$TOMLI_REPO" "$work/tomli"
git clone -q "$PFLAG_REPO" "$work/pflag"
pid=$$
# id base head family (merged pull requests of benches/real-corpus.sh)
cat > "$work/candidates.txt" <<EOF
hukkin__tomli-229-$pid facdab0f5aacc5eb223753c42604d5de7bdaee9d 4e245a4bbbefed99e550e196095ea65c851cf31d swe-bench
hukkin__tomli-200-$pid 38297f82cd0ef067f1afd2ffb8dfa73b65c398da 2a2aa62f1bc71b89b74d41dd2ab67b5dd24bc129 swe-bench
hukkin__tomli-202-$pid 2a2aa62f1bc71b89b74d41dd2ab67b5dd24bc129 12314bde5b89a8bdc32de7403a2a4cf786187bbc swe-gym
hukkin__tomli-203-$pid 12314bde5b89a8bdc32de7403a2a4cf786187bbc 9eb2125ef49071e673d42e383b5221a268665193 swe-gym
spf13__pflag-484-$pid 74752827e8d9c7a60d753adb5cb6ea8baf0ee396 95a0aa354537f4ef7e68a02602ca48405c2f7ff2 swe-bench
spf13__pflag-487-$pid 95a0aa354537f4ef7e68a02602ca48405c2f7ff2 7ef35c6ed54a0573afe24fbee9463cc7eb02b5b7 swe-gym
EOF
GO_ENV='CGO_ENABLED=0 GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local'
tests_of() {
    case $1 in
        hukkin__tomli*) (cd "$2" && PYTHONPATH=src python3 -m unittest -v 2>&1 || true) ;;
        *) (cd "$2" && env $GO_ENV GOCACHE="$work/gocache" go test -json ./... 2>&1 || true) ;;
    esac
}
mkdir -p "$work/project/sessions"
while read -r id base head family; do
    d=$work/$id
    case $id in
        hukkin__tomli*) repo=$work/tomli lang=py tests=(tests) ;;
        *) repo=$work/pflag lang=go tests=('*_test.go') ;;
    esac
    git -C "$repo" diff --binary "$base" "$head" -- "${tests[@]}" > "$d.test_patch"
    git -C "$repo" diff --binary "$base" "$head" -- . "${tests[@]/#/:!}" > "$d.patch"
    # The test and gold trees, checked out plainly; the lists from their runs.
    git -C "$repo" worktree add -q --detach "$d-test" "$base"
    git -C "$d-test" apply "$d.test_patch"
    tests_of "$id" "$d-test" > "$d.test.log"
    git -C "$d-test" apply "$d.patch"
    tests_of "$id" "$d-test" > "$d.gold.log"
    git -C "$repo" worktree remove --force "$d-test"
    # The image: the repository at its base, every later commit kept.
    img=$d-image
    mkdir -p "$img"
    git clone -q "$repo" "$img/repo"
    git -C "$img/repo" checkout -q --detach "$base"
    case $lang in
        py) printf 'FROM assay-base:bookworm\nUSER root\nCOPY repo /testbed\nWORKDIR /testbed/\n' > "$img/Dockerfile" ;;
        go)
            cp -rL "$goroot" "$img/go"
            printf 'FROM assay-base:bookworm\nUSER root\nCOPY go /usr/local/go\nENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nCOPY repo /testbed\nWORKDIR /testbed/\n' > "$img/Dockerfile"
            ;;
    esac
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

[[instances]]
name = "gosb"
path = "go-swe-bench.jsonl"
family = "swe-bench"
test_command = "CGO_ENABLED=0 GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local go test -json ./..."
report = "go-test-json"

[[instances]]
name = "gogym"
path = "go-swe-gym.jsonl"
family = "swe-gym"
test_command = "CGO_ENABLED=0 GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local go test -json ./..."
report = "go-test-json"
EOF
cd "$work/project"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
"$assay" build --json > build.jsonl 2> build.err || { tail -20 build.err; exit 1; }
end=$(date +%s.%N)
"$assay" build --json > again.jsonl 2> again.err
python3 "$here/benches/instances-real.py" check "$assay" "$work/project" "$start" "$end"
