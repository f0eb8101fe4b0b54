#!/usr/bin/env bash
# Per-run harness overhead: `assay build --reread run` over one candidate
# (3 states x 2 repeats = 6 runs of a ~1 s unittest suite, --jobs 1) against
# running the same command 6 times directly in a prepared directory.
# Prints both wall times and their ratio (target <= 1.10).
# Usage: benches/run-overhead.sh [path/to/assay]   (default: target/release/assay)
set -euo pipefail
ASSAY=$(realpath "${1:-target/release/assay}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@x
export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z
cd "$work"
git init -q -b main repo && cd repo
mkdir -p pkg tests && touch tests/__init__.py
printf 'def f(x):\n    return x\n' > pkg/__init__.py
cat > tests/test_slow.py <<'PY'
import time, unittest
import pkg
class T(unittest.TestCase):
PY
for i in $(seq 1 10); do printf '    def test_%d(self):\n        time.sleep(0.1)\n        self.assertEqual(pkg.f(1), 1)\n' "$i" >> tests/test_slow.py; done
git add -A && git commit -qm init
git checkout -qb fix
printf 'def f(x):\n    return x\n\ndef g(x):\n    return 2 * x\n' > pkg/__init__.py
printf '    def test_g(self):\n        self.assertEqual(pkg.g(2), 4)\n' >> tests/test_slow.py
git commit -qam "add g"
git checkout -q main && git merge -q --no-ff fix -m "Merge pull request #1 from o/fix" -m "Add g"
cd "$work"
mkdir statements && echo "Add g." > statements/p-1.md
cat > pipeline.toml <<'TOML'
statements = "statements"
[[source]]
name = "p"
path = "repo"
[env]
test_command = "python3 -m unittest -v"
report = "unittest"
TOML
"$ASSAY" build --jobs 1 >/dev/null 2>&1
t0=$(date +%s.%N)
"$ASSAY" build --jobs 1 --reread run >/dev/null 2>&1
t1=$(date +%s.%N)
mkdir direct && git -C repo archive HEAD | tar -x -C direct
t2=$(date +%s.%N)
for _ in 1 2 3 4 5 6; do (cd direct && python3 -m unittest -v >/dev/null 2>&1 || true); done
t3=$(date +%s.%N)
python3 - "$t0" "$t1" "$t2" "$t3" <<'PY'
import sys
t0, t1, t2, t3 = map(float, sys.argv[1:])
a, d = t1 - t0, t3 - t2
print(f"assay 6 runs: {a:.3f} s; direct 6 runs: {d:.3f} s; ratio {a/d:.3f} (target <= 1.10)")
PY
