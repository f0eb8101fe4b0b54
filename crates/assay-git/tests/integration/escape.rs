use assay_git::{ComposeError, PatchStep};

use crate::compose::{step, store_for};
use crate::support::Repo;

fn setup() -> (Repo, assay_git::Source, String) {
    let mut r = Repo::new();
    r.write("a/file.txt", "x\n").write("README", "r\n");
    r.symlink("old_escape", "/usr/share/inherited");
    let base = r.commit("base");
    let src = assay_git::Source::open(r.path()).expect("open");
    (r, src, base)
}

fn new_file(path: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+pwned\n"
    )
}

fn new_link(path: &str, target: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )
}

fn expect_escape(patch: String, want_path: &str) -> String {
    let (_r, src, base) = setup();
    let (_cache, store) = store_for(&src);
    let ok = step("ok", new_file("fine.txt"));
    match store.compose(&base, &[ok, step("agent", patch)]) {
        Err(ComposeError::PathEscape {
            label,
            path,
            reason,
        }) => {
            assert_eq!(label, "agent");
            assert_eq!(path, want_path);
            reason
        }
        other => panic!("expected PathEscape for {want_path}, got {other:?}"),
    }
}

#[test]
fn dotdot_path() {
    let why = expect_escape(new_file("../x"), "../x");
    assert!(why.contains(".."), "{why}");
}

#[test]
fn dotdot_inside_path() {
    expect_escape(new_file("a/../../x"), "a/../../x");
}

#[test]
fn absolute_path() {
    let why = expect_escape(new_file("/etc/x"), "/etc/x");
    assert!(why.contains("absolute"), "{why}");
}

#[test]
fn git_metadata() {
    let why = expect_escape(new_file(".git/config"), ".git/config");
    assert!(why.contains(".git"), "{why}");
    expect_escape(
        new_file("a/.GIT/hooks/pre-commit"),
        "a/.GIT/hooks/pre-commit",
    );
}

#[test]
fn rename_onto_escaping_path() {
    let patch = "diff --git a/README b/../README\nsimilarity index 100%\nrename from README\nrename to ../README\n".to_string();
    expect_escape(patch, "../README");
}

#[test]
fn symlink_to_absolute_target() {
    let why = expect_escape(new_link("passwd", "/etc/passwd"), "passwd");
    assert!(why.contains("absolute"), "{why}");
}

#[test]
fn symlink_climbing_out() {
    let why = expect_escape(new_link("a/link", "../../x"), "a/link");
    assert!(why.contains("leaves the tree"), "{why}");
}

#[test]
fn symlink_chain_climbing_out() {
    let patch = new_link("a/up", "..") + &new_link("l2", "a/up/..");
    expect_escape(patch, "l2");
}

#[test]
fn changed_symlink_target() {
    let (mut r, src, _) = setup();
    r.symlink("a/in", "file.txt");
    let base = r.commit("link");
    let (_cache, store) = store_for(&src);
    let patch = "diff --git a/a/in b/a/in\nindex 1111111..2222222 120000\n--- a/a/in\n+++ b/a/in\n@@ -1 +1 @@\n-file.txt\n\\ No newline at end of file\n+../../etc\n\\ No newline at end of file\n";
    match store.compose(&base, &[step("agent", patch)]) {
        Err(ComposeError::PathEscape { path, .. }) => assert_eq!(path, "a/in"),
        other => panic!("got {other:?}"),
    }
}

#[test]
fn benign_symlinks_are_accepted_and_inherited_ones_kept() {
    let (_r, src, base) = setup();
    let (_cache, store) = store_for(&src);
    let patch = new_link("a/sibling", "file.txt")
        + &new_link("top", "a/file.txt")
        + &new_link("a/up", "../README");
    let tree = store
        .compose(
            &base,
            &[PatchStep {
                label: "agent".into(),
                patch: patch.into_bytes(),
                exclude: vec![],
            }],
        )
        .expect("benign links");
    let entries = store.entries(&tree).expect("entries");
    let links: Vec<&str> = entries
        .iter()
        .filter(|e| e.mode == 0o120000)
        .map(|e| e.path.as_str())
        .collect();
    assert_eq!(links, vec!["a/sibling", "a/up", "old_escape", "top"]);
}
