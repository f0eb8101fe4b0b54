#!/usr/bin/env bash
# usage: benches/instances-vs-swebench.sh [ASSAY]
#        env: ROUNDS (default 1), FIRST_ROUND (the first round's number,
#        default 1: odd rounds time assay first), KEEP (keep the work dir)
#
# Six SWE-bench-shaped instances (docs/instances.md) graded by assay and by
# SWE-bench's own harness (`swebench.harness.run_evaluation`, the
# virtualenv scripts/check-swebench.sh --setup makes, offline: the images
# are local and never pulled) on the same images, side by side, each with
# gold, empty and wrong predictions. Two repository shapes SWE-bench's
# specs run, three instances each, each its own small Python repository at
# /testbed of an image FROM assay-base:bookworm named
# `sweb.eval.x86_64.<id>:latest` (removed on exit):
#
#   django/django 3.0   Django's layout: `./tests/runtests.py --verbosity 2
#                       --settings=test_sqlite --parallel 1 <modules>`
#                       (tests/instances/runtests.py), unittest's report
#   pallets/flask 2.0   `pytest -rA <files>`, pytest's report: pytest 9.2
#                       copied into the image from scripts/pytest-venv.sh's
#                       virtualenv (pure Python, nothing installed at eval)
#
# assay screens the instances once (not timed), then each round grades the
# 18 sessions in a copy of that screened pipeline (`--jobs 1`) and the
# harness runs the 18 predictions (`run_evaluation` once per kind over the
# six instances, `--max_workers 1`); rounds alternate which side goes
# first (odd rounds assay, even rounds the harness). The harness's dataset
# row is assay's published task (its eval script, log parser and lists)
# under the instance's id and image, as scripts/check-swebench.sh loads it.
#
#   assay      per instance: the durations (--json) of the scored arm's
#              grading nodes (stage, run, recheck, grade) of its three
#              sessions; and the grading build's wall time
#   swebench   per instance: the span of each prediction's
#              run_instance.log (container start to removal); and the wall
#              time of the three run_evaluation calls
#
# Prints per round and instance both sides' verdicts, seconds and their
# ratio, the load average, then each instance's ratios over the rounds
# (median and worst). Exits 1 when a verdict differs.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
assay=$(realpath "${1:-$here/target/debug/assay}")
venv=${ASSAY_SWEBENCH_VENV:-$here/target/swebench-venv}
rounds=${ROUNDS:-1}
"$here/scripts/base-image.sh" >/dev/null
"$here/scripts/pytest-venv.sh" --setup
site=$(echo "$here"/target/pytest-venv/lib/python3*/site-packages)
work=$(mktemp -d /tmp/instances-bench.XXXXXX)
# Each image is held by a stopped container of its own (`docker image prune
# -a` by other work on the machine leaves an image in use), removed first.
hold=ivs-hold-$$
hold_name() { local name=${1#sweb.eval.x86_64.}; echo "${name%:latest}"; }
cleanup() {
    if [ -f "$work/images.txt" ]; then
        while read -r image _; do
            docker rm -f "$hold-$(hold_name "$image")" >/dev/null 2>&1 || true
            docker rmi -f "$image" >/dev/null 2>&1 || true
        done < "$work/images.txt"
    fi
    [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
py() { python3 "$here/benches/instances-vs-swebench.py" "$@"; }
py make "$work" "$$" "$site"
while read -r image ctx; do
    docker build -q -t "$image" "$ctx" > /dev/null 2> "$work/docker-build.err" || { cat "$work/docker-build.err" >&2; exit 1; }
    docker create --name "$hold-$(hold_name "$image")" "$image" true > /dev/null
done < "$work/images.txt"
images_there() {
    local image
    while read -r image _; do
        docker image inspect "$image" > /dev/null 2>&1 || { echo "the image $image is gone" >&2; exit 1; }
    done < "$work/images.txt"
}

screen=$work/screen
mkdir -p "$screen/sessions"
cp "$work/instances.jsonl" "$screen/"
printf 'sessions = "sessions"\n\n[screen]\nrepeats = 1\n\n[[instances]]\nname = "sb"\npath = "instances.jsonl"\n' > "$screen/pipeline.toml"
(cd "$screen" && "$assay" build --json > build.jsonl 2> build.err) || { cat "$screen/build.err" >&2; exit 1; }
mkdir -p "$work/release" && cp "$screen"/release/tasks*.jsonl "$work/release/"
py dataset "$work"

now() { python3 -c 'import time; print(time.time())'; }
run_assay() {
    local dir=$1 start
    images_there
    start=$(now)
    (cd "$dir" && "$assay" build --json --jobs 1 > build.jsonl 2> build.err) || { cat "$dir/build.err" >&2; exit 1; }
    python3 -c "import time; print(round(time.time() - $start, 3))" > "$dir/assay.wall"
}
run_harness() {
    local dir=$1 rnd=$2 start name
    images_there
    start=$(now)
    for name in gold empty wrong; do
        # Once more when it fails: its closing check of the daemon's
        # containers fails when other work removes one meanwhile (timed).
        for try in 1 2; do
            if (cd "$dir" && "$venv/bin/python" -m swebench.harness.run_evaluation -d "$work/dataset.json" \
                -p "$work/pred-$name.jsonl" --max_workers 1 -id "$rnd-$name" --report_dir . > "swebench-$name.log" 2>&1); then
                break
            fi
            [ "$try" = 1 ] || { tail -5 "$dir/swebench-$name.log" >&2; exit 1; }
            echo "$rnd $name" >> "$dir/swebench.retried"
        done
    done
    python3 -c "import time; print(round(time.time() - $start, 3))" > "$dir/swebench.wall"
}
names=()
first=${FIRST_ROUND:-1}
for i in $(seq "$first" $((first + rounds - 1))); do
    rnd=r$i
    dir=$work/rounds/$rnd
    mkdir -p "$work/rounds"
    cp -a "$screen" "$dir"
    py sessions "$work" "$dir/sessions"
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    if [ $((i % 2)) -eq 1 ]; then
        order=assay
        run_assay "$dir"
        run_harness "$dir" "$rnd"
    else
        order=harness
        run_harness "$dir" "$rnd"
        run_assay "$dir"
    fi
    load_after=$(cut -d' ' -f1-3 /proc/loadavg)
    printf '{"order": "%s", "load_before": "%s", "load_after": "%s", "assay_wall_s": %s, "swebench_wall_s": %s, "harness_retried": %s}\n' \
        "$order" "$load_before" "$load_after" "$(cat "$dir/assay.wall")" "$(cat "$dir/swebench.wall")" \
        "$(cat "$dir/swebench.retried" 2>/dev/null | wc -l)" > "$dir/meta.json"
    names+=("$rnd")
done
py table "$work" "${names[@]}"
