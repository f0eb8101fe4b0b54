#!/usr/bin/env bash
# The mini-swe-agent CLI the agent tests run (tests/agents.rs): a virtualenv
# at $ASSAY_MINI_VENV (default target/mini-venv) with mini-swe-agent 2.4.6
# from PyPI, made when missing (.ci/run calls `--setup`).
#   scripts/mini-swe-agent.sh --setup
#   scripts/mini-swe-agent.sh ARGS…    runs `mini ARGS…` from it
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${ASSAY_MINI_VENV:-$here/../target/mini-venv}"
if [ "${1:-}" = "--setup" ]; then
    # `pip show`, not an import: importing mini creates its global config
    # directory under ~/.config.
    if ! "$venv/bin/pip" show -q mini-swe-agent >/dev/null 2>&1; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q 'mini-swe-agent==2.4.6'
    fi
    exit 0
fi
exec "$venv/bin/mini" "$@"
