#!/usr/bin/env bash
# Checks that a release's tasks.jsonl loads in SWE-bench's harness and that
# the harness's own grading resolves every task with its gold patch (and
# none with the empty patch).
#   scripts/check-swebench.sh RELEASE_DIR REPOSITORY
# Uses the virtualenv at $ASSAY_SWEBENCH_VENV (default target/swebench-venv),
# which `scripts/check-swebench.sh --setup` creates (`pip install swebench`;
# .ci/run calls it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${ASSAY_SWEBENCH_VENV:-$here/../target/swebench-venv}"
if [ "${1:-}" = "--setup" ]; then
    if ! "$venv/bin/python" -c 'import swebench' 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q swebench
    fi
    exit 0
fi
if ! "$venv/bin/python" -c 'import swebench' 2>/dev/null; then
    echo "check-swebench: no virtualenv with swebench at $venv; run scripts/check-swebench.sh --setup (.ci/run does)" >&2
    exit 2
fi
exec "$venv/bin/python" "$here/check_swebench.py" "$1/tasks.jsonl" "$2"
