# Shell functions the benches share; sourced, after `here` (the
# checkout's root) is set.

# The assay to measure: $1 when given, else the release build (built when
# missing).
assay_binary() {
    if [ $# -ge 1 ]; then
        realpath "$1"
    else
        [ -x "$here/target/release/assay" ] || (cd "$here" && cargo build --release --quiet >&2)
        echo "$here/target/release/assay"
    fi
}

# edited_diff REPO WT BASE FILE SPEC: the diff of one literal edit of FILE at
# commit BASE of the repository REPO, made in a worktree at WT (removed
# after). SPEC is a Python tuple literal (old, new); old must be in the file
# once.
edited_diff() {
    local repo=$1 wt=$2 base=$3 file=$4 spec=$5
    git -C "$repo" worktree add -q --detach "$wt" "$base"
    python3 - "$wt/$file" "$spec" <<'PY'
import ast, sys
path, (old, new) = sys.argv[1], ast.literal_eval(sys.argv[2])
text = open(path).read()
assert text.count(old) == 1, f"{path}: the edit's old text is not there once"
open(path, "w").write(text.replace(old, new))
PY
    git -C "$wt" diff
    git -C "$repo" worktree remove --force "$wt"
}
