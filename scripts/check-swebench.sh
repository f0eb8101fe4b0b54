#!/usr/bin/env bash
# Checks that a release's tasks.jsonl loads in SWE-bench's harness and that
# the harness's own grading resolves every task with its gold patch (and
# none with the empty patch); with SESSIONS_DIR, that it grades every
# session of the release's results.csv as assay did, but for the
# differences docs/verdicts.md lists (scripts/check_swebench.py).
#   scripts/check-swebench.sh RELEASE_DIR REPOSITORY [SESSIONS_DIR]
# Uses the virtualenv at $ASSAY_SWEBENCH_VENV (default target/swebench-venv),
# which `scripts/check-swebench.sh --setup` creates (`pip install
# 'swebench>=5'`; .ci/run calls it). swebench 5 is what loads assay's tasks:
# 4.1 fails in `make_test_spec`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${ASSAY_SWEBENCH_VENV:-$here/../target/swebench-venv}"
if [ "${1:-}" = "--setup" ]; then
    if ! "$venv/bin/python" -c 'import sys, swebench; sys.exit(int(swebench.__version__.split(".")[0]) < 5)' 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --upgrade 'swebench>=5'
    fi
    "$venv/bin/python" -c 'import swebench; print("check-swebench: swebench", swebench.__version__)' >&2
    exit 0
fi
if ! "$venv/bin/python" -c 'import sys, swebench; sys.exit(int(swebench.__version__.split(".")[0]) < 5)' 2>/dev/null; then
    echo "check-swebench: no virtualenv with swebench >= 5 at $venv (4.x cannot load the tasks); run scripts/check-swebench.sh --setup (.ci/run does)" >&2
    exit 2
fi
exec "$venv/bin/python" "$here/check_swebench.py" "$@"
