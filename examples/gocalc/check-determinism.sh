#!/usr/bin/env bash
# check-determinism.sh — build the gocalc example repository twice under
# different surroundings and check both give the pinned main commit id (the
# check itself is examples/calc/check-determinism.sh).
#
# If you change make-repo.sh on purpose, update EXPECTED_MAIN here and the ids
# in README.md.
set -euo pipefail

EXPECTED_MAIN=7d9f907eae03a71b41077031f6bd40a3905fab5c

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../calc/check-determinism.sh" "$here/make-repo.sh" "$EXPECTED_MAIN"
