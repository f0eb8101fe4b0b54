# history.sh — sourced by the examples' make-repo.sh scripts: a hermetic git
# and the few verbs they write a repository's history with. Every input that
# reaches a commit id (identity, dates, config, modes, line endings) is fixed
# here or by the caller, so every machine with git >= 2.28 gets the same ids.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/../lib/history.sh"
#   history_begin NAME EMAIL OWNER EPOCH "$@"   # "$@": the script's DEST
#   put path <<'EOF' … EOF; commit "subject" ["body"]
#   branch feature/x; …; merge_pr N feature/x "title" "body"
#   history_finish                              # prints the main commit id
#
# Commit dates start at EPOCH (UTC) and advance one hour per commit. Merge
# commits read like GitHub's: `Merge pull request #N from OWNER/BRANCH`, the
# title and the body as paragraphs.

# history_begin NAME EMAIL OWNER EPOCH DEST — check DEST, fix the
# environment, start an empty repository in DEST.tmp.PID.
history_begin() {
  if [ $# -ne 5 ] || [ -z "$5" ]; then
    echo "usage: $0 DEST" >&2
    exit 2
  fi
  dest=${5%/}
  if [ -e "$dest" ] || [ -L "$dest" ]; then
    if [ ! -d "$dest" ] || [ -n "$(ls -A "$dest")" ]; then
      echo "make-repo.sh: refusing to write into $dest: it exists and is not an empty directory" >&2
      exit 1
    fi
  fi
  unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
    GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_TEMPLATE_DIR GIT_NAMESPACE \
    GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_REPLACE_REF_BASE \
    GIT_AUTHOR_DATE GIT_COMMITTER_DATE
  export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null GIT_CONFIG_NOSYSTEM=1
  export GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2"
  export GIT_COMMITTER_NAME="$1" GIT_COMMITTER_EMAIL="$2"
  export LC_ALL=C TZ=UTC
  umask 022
  history_owner=$3
  history_t0=$4
  history_tick=0

  tmp="$dest.tmp.$$"
  rm -rf "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp"
  g init -q -b main
}

g() {
  git -C "$tmp" -c commit.gpgsign=false -c tag.gpgsign=false -c core.autocrlf=false \
    -c core.safecrlf=false -c core.fileMode=true -c merge.ff=true -c merge.log=false \
    -c user.useConfigOnly=false "$@"
}

next_date() {
  local t=$((history_t0 + history_tick * 3600))
  history_tick=$((history_tick + 1))
  export GIT_AUTHOR_DATE="$t +0000" GIT_COMMITTER_DATE="$t +0000"
}

# put PATH < content — write a file (mode 0644) in the work tree.
put() {
  mkdir -p "$tmp/$(dirname "$1")"
  cat >"$tmp/$1"
  chmod 0644 "$tmp/$1"
}

# commit SUBJECT [BODY] — commit every change in the work tree.
commit() {
  g add -A
  next_date
  if [ $# -ge 2 ]; then
    g commit -q --no-verify -m "$1" -m "$2"
  else
    g commit -q --no-verify -m "$1"
  fi
}

branch() {
  g checkout -q -b "$1" main
}

# merge_pr N BRANCH TITLE BODY — GitHub "Create a merge commit".
merge_pr() {
  g checkout -q main
  next_date
  g merge -q --no-ff --no-edit --no-verify \
    -m "Merge pull request #$1 from $history_owner/$2" -m "$3" -m "$4" "$2"
  g branch -q -d "$2"
}

# history_finish — check the work tree is clean on main, move the repository
# to DEST and print the main commit id.
history_finish() {
  g checkout -q main
  if [ -n "$(g status --porcelain)" ]; then
    echo "make-repo.sh: internal error: work tree not clean" >&2
    exit 1
  fi
  if [ -e "$dest" ]; then
    rmdir "$dest"
  fi
  mv "$tmp" "$dest"
  trap - EXIT
  git -C "$dest" rev-parse main
}
