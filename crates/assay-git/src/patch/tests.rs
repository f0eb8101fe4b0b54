//! The reading end to end, through the entry points: names, quoting,
//! hunks read by their counts, timestamps, and linear time on a patch of
//! many sections.

use super::*;

#[test]
fn quoted_names_are_unescaped() {
    let patch = b"diff --git \"a/sp ace\\tx\\303\\244\" \"b/sp ace\\tx\\303\\244\"\nnew file mode 100644\nindex 0000000..e69de29\n";
    let p = patch_paths(patch).expect("parse");
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].path, "sp ace\tx\u{e4}");
    assert!(p[0].is_new);
}

#[test]
fn rename_keeps_both_names() {
    let patch = b"diff --git a/old name.txt b/new name.txt\nsimilarity index 90%\nrename from old name.txt\nrename to new name.txt\nindex 1..2 100644\n--- a/old name.txt\n+++ b/new name.txt\n@@ -1 +1 @@\n-a\n+b\n";
    let p = patch_paths(patch).expect("parse");
    assert_eq!(
        p,
        vec![PatchPath {
            path: "new name.txt".into(),
            old_path: Some("old name.txt".into()),
            is_copy: false,
            is_new: false,
            is_deleted: false,
            is_symlink: false,
        }]
    );
    assert_eq!(
        p[0].written().collect::<Vec<_>>(),
        ["new name.txt", "old name.txt"]
    );
}

#[test]
fn removed_line_like_header_is_hunk_content() {
    let patch = b"--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- a/evil\n+++ b/evil\n ctx\n";
    // The hunk's first two lines are content, read by the hunk's counts.
    let p = parse_patch(patch).expect("parse");
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].path.path, "q.sql");
    assert_eq!((p[0].lines_added, p[0].lines_removed), (1, 1));
    assert_eq!(p[0].added[0].text, "++ b/evil");
    assert_eq!(p[0].added[0].line, 5);
}

/// The scanner desync of issue 18: an added line `+++ b/tests/x.py` is
/// content of its hunk, so what follows still belongs to `pkg/mod.py`.
#[test]
fn an_added_line_shaped_like_a_header_does_not_change_the_file() {
    let patch = b"diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1,3 @@\n x\n+++ b/tests/test_x.py\n+import unittest\n";
    let p = parse_patch(patch).expect("parse");
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].path.path, "pkg/mod.py");
    let added: Vec<&str> = p[0].added.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(added, ["++ b/tests/test_x.py", "import unittest"]);
}

#[test]
fn a_hunk_line_git_refuses_makes_the_patch_corrupt() {
    let patch = b"--- a/q\n+++ b/q\n@@ -1,2 +1,2 @@\n-a\n+b\n@@ -9 +9 @@\n";
    assert!(parse_patch(patch).is_err());
}

#[test]
fn symlink_deletion_and_spaces() {
    let patch = b"diff --git a/l b/l\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\ndiff --git a/a b c b/a b c\ndeleted file mode 100644\nindex 1..0\n";
    let p = patch_paths(patch).expect("parse");
    assert_eq!(p.len(), 2);
    assert!(p[0].is_symlink && p[0].is_new);
    assert_eq!(p[1].path, "a b c");
    assert!(p[1].is_deleted);
}

#[test]
fn traditional_absolute_name_is_stripped_like_git() {
    let p = patch_paths(b"--- /dev/null\n+++ /etc/y\n@@ -0,0 +1 @@\n+x\n").expect("parse");
    assert_eq!(p[0].path, "etc/y");
    assert!(p[0].is_new);
}

#[test]
fn git_header_absolute_name() {
    let p = patch_paths(b"diff --git a//etc/x b//etc/x\nnew file mode 100644\n--- /dev/null\n+++ b//etc/x\n@@ -0,0 +1 @@\n+x\n")
        .expect("parse");
    assert_eq!(p[0].path, "/etc/x");
}

/// git takes the shorter of two traditional names when one extends
/// the other: `t.py.orig` is written to `t.py`.
#[test]
fn a_traditional_name_with_a_suffix_is_the_shorter_one() {
    let p =
        patch_paths(b"--- a/tests/test_x.py\n+++ b/tests/test_x.py.orig\n@@ -1 +1,2 @@\n a\n+b\n")
            .expect("parse");
    assert_eq!(p[0].path, "tests/test_x.py");
    assert_eq!(p[0].old_path, None);
}

#[test]
fn timestamps_end_traditional_names_and_the_epoch_creates() {
    let patch = b"--- a/my file.py\t1970-01-01 00:00:00.000000000 +0000\n+++ b/my file.py\t2024-05-01 10:00:00.123456789 +0200\n@@ -0,0 +1 @@\n+x\n";
    let p = patch_paths(patch).expect("parse");
    assert_eq!(p[0].path, "my file.py");
    assert!(p[0].is_new);
}

#[test]
fn a_name_ends_at_a_carriage_return() {
    let p = patch_paths(b"--- a/x.py\r\n+++ b/x.py\r\n@@ -1 +1 @@\n-a\n+b\n").expect("parse");
    assert_eq!(p[0].path, "x.py");
}

/// A patch of 100,000 sections (16 MB, the shape of a real one that was slow)
/// is read in linear time: every look past a line stays in its line.
#[test]
fn a_patch_of_many_sections_is_read_in_linear_time() {
    let mut patch = Vec::new();
    for i in 0..100_000 {
        patch.extend(
            format!(
                "diff --git a/g/f{i}.py b/g/f{i}.py\nnew file mode 100644\nindex 0000000..e69de29\n"
            )
            .into_bytes(),
        );
    }
    let started = std::time::Instant::now();
    let files = parse_patch(&patch).expect("parse");
    assert_eq!(files.len(), 100_000);
    assert_eq!(files[99_999].path.path, "g/f99999.py");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_non_utf8_name_is_refused() {
    let e =
        patch_paths(b"--- a/caf\xe9\n+++ b/caf\xe9\n@@ -1 +1 @@\n-a\n+b\n").expect_err("refused");
    assert!(e.to_string().contains("not valid UTF-8"), "{e}");
}
