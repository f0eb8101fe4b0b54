//! assay's reading of a patch against `git apply`'s own: the paths every
//! decision rests on must be the ones git writes, or the patch is refused.

use assay_git::{ComposeError, GitError, PatchPath, check_with_git, parse_patch, patch_paths};

use crate::compose::{step, store_for};
use crate::support::Repo;

/// (path, old_path, is_copy, is_new, is_deleted, is_symlink)
type Row = (String, Option<String>, bool, bool, bool, bool);

fn rows(paths: Vec<PatchPath>) -> Vec<Row> {
    let mut out: Vec<Row> = paths
        .into_iter()
        .map(|p| {
            (
                p.path,
                p.old_path,
                p.is_copy,
                p.is_new,
                p.is_deleted,
                p.is_symlink,
            )
        })
        .collect();
    out.sort();
    out
}

fn row(path: &str, old: Option<&str>, flags: [bool; 4]) -> Row {
    let [copy, new, deleted, symlink] = flags;
    (
        path.into(),
        old.map(str::to_owned),
        copy,
        new,
        deleted,
        symlink,
    )
}

/// Every kind of change `git diff` writes, with quoted, spaced and
/// non-ASCII names: git and assay read the same paths.
#[test]
fn git_and_assay_agree_on_every_kind_of_git_diff() {
    let mut r = Repo::new();
    let long: String = (0..40).map(|i| format!("line {i}\n")).collect();
    let other: String = (0..40).map(|i| format!("row {i}\n")).collect();
    r.write("tests/test_x.py", &long)
        .write("copied.txt", &other)
        .write("run.sh", "echo hi\n")
        .write("gone.txt", "bye\n")
        .write("dir/sp ace.txt", "s\n")
        .write("bin.dat", [0u8, 1, 2, 3, 255]);
    r.commit("base");
    std::fs::remove_file(r.path().join("tests/test_x.py")).expect("rm");
    r.write("pkg/moved.py", format!("{long}extra\n"));
    r.write("copy of copied.txt", format!("{other}more\n"));
    r.exec("run.sh");
    std::fs::remove_file(r.path().join("gone.txt")).expect("rm");
    r.write("dir/sp ace.txt", "s2\n")
        .write("caf\u{e9} \"q\"\ttab.txt", "n\n")
        .write("bin.dat", [9u8, 0, 8, 7])
        .write("new.bin", [0u8; 64]);
    r.symlink("link", "dir/sp ace.txt");
    r.git(&["add", "-A"]);
    let patch = r.git_bytes(&[
        "diff",
        "--cached",
        "-M",
        "-C",
        "--find-copies-harder",
        "--binary",
    ]);
    check_with_git(&patch).expect("git agrees");
    assert_eq!(
        rows(patch_paths(&patch).expect("parse")),
        vec![
            row("bin.dat", None, [false; 4]),
            row(
                "caf\u{e9} \"q\"\ttab.txt",
                None,
                [false, true, false, false]
            ),
            row(
                "copy of copied.txt",
                Some("copied.txt"),
                [true, false, false, false]
            ),
            row("dir/sp ace.txt", None, [false; 4]),
            row("gone.txt", None, [false, false, true, false]),
            row("link", None, [false, true, false, true]),
            row("new.bin", None, [false, true, false, false]),
            row(
                "pkg/moved.py",
                Some("tests/test_x.py"),
                [false, false, false, false]
            ),
            row("run.sh", None, [false; 4]),
        ]
    );
    let moved = parse_patch(&patch)
        .expect("parse")
        .into_iter()
        .find(|f| f.path.path == "pkg/moved.py")
        .expect("the rename");
    assert_eq!(
        moved.path.written().collect::<Vec<_>>(),
        ["pkg/moved.py", "tests/test_x.py"]
    );
    assert_eq!(moved.added.len(), 1);
    assert_eq!(moved.added[0].text, "extra");
}

/// Traditional diffs, as `diff -u` and hand edits write them: git's own
/// rules (the shorter of two names, timestamps, the epoch for a new file,
/// a `-p` guessed once and kept) and assay's reading agree.
#[test]
fn git_and_assay_agree_on_traditional_diffs() {
    let cases: &[(&[u8], &[&str])] = &[
        // Written to the hidden test file, not to a new `.orig` file.
        (
            b"--- a/tests/test_x.py\n+++ b/tests/test_x.py.orig\n@@ -1 +1,2 @@\n a\n+b\n",
            &["tests/test_x.py"],
        ),
        (
            b"--- a/my file.py\t2024-05-01 10:00:00.000000000 +0200\n+++ b/my file.py\t2024-05-01 11:00:00.000000000 +0200\n@@ -1 +1 @@\n-a\n+b\n",
            &["my file.py"],
        ),
        (
            b"--- a/n.py\t1970-01-01 00:00:00.000000000 +0000\n+++ b/n.py\t2024-05-01 11:00:00.000000000 +0200\n@@ -0,0 +1 @@\n+x\n",
            &["n.py"],
        ),
        // `x` has no directory: git takes -p0 for the whole patch, so the
        // next section writes `b/tests/t.py`, not `tests/t.py`.
        (
            b"--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b\n--- a/tests/t.py\n+++ b/tests/t.py\n@@ -1 +1 @@\n-a\n+b\n",
            &["b/tests/t.py", "x"],
        ),
        // No old lines: may be a creation; no new lines: may be a deletion.
        (
            b"--- a/new.py\n+++ b/new.py\n@@ -0,0 +1 @@\n+x\n--- a/d.py\n+++ b/d.py\n@@ -1 +0,0 @@\n-x\n",
            &["d.py", "new.py"],
        ),
        (
            b"--- \"a/q\\303\\244 \\\"x\\\".py\"\n+++ \"b/q\\303\\244 \\\"x\\\".py\"\n@@ -1 +1 @@\n-a\n+b\n",
            &["q\u{e4} \"x\".py"],
        ),
    ];
    for (patch, want) in cases {
        let shown = String::from_utf8_lossy(patch);
        check_with_git(patch).unwrap_or_else(|e| panic!("{e}\n{shown}"));
        let mut got: Vec<String> = patch_paths(patch)
            .expect("parse")
            .into_iter()
            .map(|p| p.path)
            .collect();
        got.sort();
        assert_eq!(got, *want, "{shown}");
    }
}

/// A broken binary hunk makes git stop reading, quietly (exit 0): the
/// sections after it would be judged by assay and never applied by git,
/// or the other way round. Such a patch is refused, naming the count.
#[test]
fn a_patch_git_stops_reading_early_is_refused() {
    let patch = b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/b.bin b/b.bin\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 4\nD00000\n\ndiff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n@@ -1 +1 @@\n-a\n+b\n";
    match check_with_git(patch) {
        Err(GitError::Misread { reason }) => {
            assert_eq!(reason, "git reads 1 file section(s) in it, assay 3");
        }
        other => panic!("{other:?}"),
    }
    // And compose refuses it before applying anything.
    let mut r = Repo::new();
    r.write("a.txt", "a\n").write("tests/t.py", "a\n");
    let base = r.commit("base");
    let src = assay_git::Source::open(r.path()).expect("open");
    let (_cache, store) = store_for(&src);
    match store.compose(&base, &[step("session", patch.to_vec())]) {
        Err(ComposeError::Misread { label, reason }) => {
            assert_eq!(label, "session");
            assert!(reason.contains("git reads 1"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// A patch git refuses outright (a hunk whose counts run past its lines)
/// is refused by both, with git's message.
#[test]
fn a_patch_git_refuses_is_refused_with_its_message() {
    let patch = b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n-a\n+b\n";
    assert!(parse_patch(patch).is_err());
    assert!(check_with_git(patch).is_err());
}

/// A name that is not UTF-8 is refused with that reason, never guessed at.
#[test]
fn a_non_utf8_name_is_refused_with_a_clear_reason() {
    let patch = b"diff --git a/caf\xe9.py b/caf\xe9.py\nnew file mode 100644\n--- /dev/null\n+++ b/caf\xe9.py\n@@ -0,0 +1 @@\n+x\n";
    let e = check_with_git(patch).expect_err("refused");
    assert!(e.to_string().contains("is not valid UTF-8"), "{e}");
}
