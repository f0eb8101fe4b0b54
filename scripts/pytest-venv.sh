#!/usr/bin/env bash
# The pytest the pytest-variant attack tests grade under (tests/grading.rs,
# `util::forgery::pytest_*`): a virtualenv at $ASSAY_PYTEST_VENV (default
# target/pytest-venv) with pytest 9.2.0 from PyPI, made when missing (.ci/run
# calls `--setup`). A test puts its `bin` first on PATH: the sandbox binds
# the virtualenv read-only (its root, as for any toolchain on PATH).
#   scripts/pytest-venv.sh --setup
#   scripts/pytest-venv.sh --bin     prints the virtualenv's bin directory
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${ASSAY_PYTEST_VENV:-$here/../target/pytest-venv}"
case "${1:-}" in
    --setup)
        if ! "$venv/bin/python3" -c 'import pytest' >/dev/null 2>&1; then
            rm -rf "$venv"
            python3 -m venv "$venv"
            "$venv/bin/pip" install -q 'pytest==9.2.0'
        fi
        ;;
    --bin)
        echo "$(cd "$venv/bin" && pwd)"
        ;;
    *)
        echo "usage: $0 --setup | --bin" >&2
        exit 2
        ;;
esac
