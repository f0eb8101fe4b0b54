#!/usr/bin/env bash
# check-determinism.sh [MAKE_REPO EXPECTED_MAIN] — build an example repository
# twice, under deliberately different surroundings (HOME with its own
# ~/.gitconfig, umask, time zone, locale), and check that both builds have the
# same commit ids, and that they match the pinned id (the id every machine must
# get). Without arguments: the calc example, pinned below; another example
# passes its own make-repo.sh and id (examples/gocalc/check-determinism.sh).
#
# If you change make-repo.sh on purpose, update EXPECTED_MAIN here and in
# README.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
make_repo=${1:-$here/make-repo.sh}
EXPECTED_MAIN=${2:-35f3376842ddebd03e735fc79ca3da0f8690b92c}

work=$(mktemp -d "${TMPDIR:-/tmp}/example-determinism.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Run 1: as is.
id1=$("$make_repo" "$work/one")

# Run 2: a HOME whose git config would change identities, signing, line
# endings and the default branch if make-repo.sh let it through.
mkdir -p "$work/home"
cat >"$work/home/.gitconfig" <<'EOF'
[user]
	name = Somebody Else
	email = else@example.org
[init]
	defaultBranch = trunk
[core]
	autocrlf = true
[commit]
	gpgsign = true
[merge]
	ff = only
	log = true
EOF
id2=$(HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" TZ=America/Los_Angeles \
  LC_ALL=C GIT_AUTHOR_NAME=x GIT_COMMITTER_DATE="2001-01-01T00:00:00" \
  bash -c 'umask 077; exec "$0" "$1"' "$make_repo" "$work/two")

status=0
log1=$(git -C "$work/one" log --format='%H %T %s' main)
log2=$(git -C "$work/two" log --format='%H %T %s' main)
if [ "$id1" != "$id2" ] || [ "$log1" != "$log2" ]; then
  echo "NOT deterministic: run 1 gave $id1, run 2 gave $id2" >&2
  diff <(echo "$log1") <(echo "$log2") >&2 || true
  status=1
else
  echo "deterministic: both runs give main = $id1 ($(echo "$log1" | wc -l | tr -d ' ') commits)"
fi
if [ "$id1" != "$EXPECTED_MAIN" ]; then
  echo "main is $id1, expected the pinned $EXPECTED_MAIN" >&2
  echo "(git $(git --version | cut -d' ' -f3); if make-repo.sh changed on purpose, update EXPECTED_MAIN)" >&2
  status=1
else
  echo "matches the pinned id $EXPECTED_MAIN"
fi

# Refusal: DEST exists and is not empty.
if "$make_repo" "$work/one" >/dev/null 2>&1; then
  echo "make-repo.sh wrote into a non-empty DEST" >&2
  status=1
fi
exit $status
