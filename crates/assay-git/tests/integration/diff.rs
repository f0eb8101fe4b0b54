use assay_git::{Change, ChangeStatus, PatchStep, Source, TreeStore};

use crate::support::Repo;

fn binary_blob(seed: u8) -> Vec<u8> {
    (0..4096u32)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) & 0x7f)
        .chain([0, 1, 2])
        .collect()
}

/// base -> head with an edit, an addition, a deletion, a rename with an edit,
/// a binary change, a mode change and a file that becomes a symlink.
fn repo_with_changes() -> (Repo, String, String) {
    let mut r = Repo::new();
    let long: String = (0..40).map(|i| format!("line {i}\n")).collect();
    r.write("src/lib.rs", "fn a() {}\n")
        .write("old/name.txt", &long)
        .write("gone.txt", "bye\n")
        .write("img.bin", binary_blob(1))
        .write("run.sh", "#!/bin/sh\n")
        .write("kind.txt", "was a file\n")
        .write("dir with space/ä.txt", "unicode\n");
    let base = r.commit("base");
    std::fs::remove_file(r.path().join("gone.txt")).expect("rm");
    std::fs::create_dir_all(r.path().join("new")).expect("mkdir");
    r.git(&["mv", "old/name.txt", "new/name.txt"]);
    r.write("new/name.txt", format!("{long}line 40\n"));
    r.write("src/lib.rs", "fn a() { b() }\n")
        .write("src/new.rs", "fn b() {}\n")
        .write("img.bin", binary_blob(2))
        .write("dir with space/ä.txt", "unicode 2\n")
        .exec("run.sh");
    std::fs::remove_file(r.path().join("kind.txt")).expect("rm");
    r.symlink("kind.txt", "src/lib.rs");
    let head = r.commit("head");
    (r, base, head)
}

#[test]
fn changed_paths_with_rename_and_binary() {
    let (r, base, head) = repo_with_changes();
    let src = Source::open(r.path()).expect("open");
    let changes = src.changed_paths(&base, &head).expect("changes");
    let ch = |path: &str, old: Option<&str>, status, binary| Change {
        path: path.into(),
        old_path: old.map(Into::into),
        status,
        binary,
    };
    assert_eq!(
        changes,
        vec![
            ch("dir with space/ä.txt", None, ChangeStatus::Modified, false),
            ch("gone.txt", None, ChangeStatus::Deleted, false),
            ch("img.bin", None, ChangeStatus::Modified, true),
            ch("kind.txt", None, ChangeStatus::TypeChanged, false),
            ch(
                "new/name.txt",
                Some("old/name.txt"),
                ChangeStatus::Renamed,
                false
            ),
            ch("run.sh", None, ChangeStatus::Modified, false),
            ch("src/lib.rs", None, ChangeStatus::Modified, false),
            ch("src/new.rs", None, ChangeStatus::Added, false),
        ]
    );
}

#[test]
fn diff_patch_round_trips_to_head_tree() {
    let (r, base, head) = repo_with_changes();
    let src = Source::open(r.path()).expect("open");
    let mut paths: Vec<String> = Vec::new();
    for c in src.changed_paths(&base, &head).expect("changes") {
        paths.extend(c.old_path);
        paths.push(c.path);
    }
    let patch = src.diff_patch(&base, &head, &paths).expect("patch");
    let text = String::from_utf8_lossy(&patch);
    assert!(text.contains("rename from old/name.txt"), "{text}");
    assert!(text.contains("GIT binary patch"), "{text}");

    let cache = tempfile::tempdir().expect("tmp");
    let store = TreeStore::open_or_init(&cache.path().join("git")).expect("store");
    store.add_alternate(&src.objects_dir()).expect("alternate");
    let tree = store
        .compose(
            &base,
            &[PatchStep {
                label: "gold".into(),
                patch,
                exclude: vec![],
            }],
        )
        .expect("compose");
    assert_eq!(tree, r.tree_of(&head));
    assert!(src.diff_patch(&base, &head, &[]).expect("empty").is_empty());
}

#[test]
fn read_file_and_resolve() {
    let (r, base, head) = repo_with_changes();
    let src = Source::open(r.path()).expect("open");
    assert_eq!(src.resolve("HEAD").expect("resolve"), head);
    assert_eq!(src.resolve("main~1").expect("resolve"), base);
    assert_eq!(
        src.read_file(&head, "src/new.rs").expect("read").as_deref(),
        Some(&b"fn b() {}\n"[..])
    );
    assert_eq!(src.read_file(&base, "src/new.rs").expect("read"), None);
    assert_eq!(src.read_file(&head, "src").expect("read"), None);
    assert!(src.resolve("no-such-branch").is_err());
}

#[test]
fn patch_paths_read_quoted_and_renamed_names_from_git() {
    let mut r = Repo::new();
    let long: String = (0..30).map(|i| format!("row {i}\n")).collect();
    r.write("keep.txt", &long).write("gone.txt", "x\n");
    let base = r.commit("base");
    std::fs::rename(r.path().join("keep.txt"), r.path().join("moved \"q\".txt")).expect("mv");
    std::fs::remove_file(r.path().join("gone.txt")).expect("rm");
    r.write("tab\there.txt", "t\n").write("ä/b c.txt", "u\n");
    r.symlink("link", "ä/b c.txt");
    let head = r.commit("head");
    let src = Source::open(r.path()).expect("open");
    let mut paths = Vec::new();
    for c in src.changed_paths(&base, &head).expect("changes") {
        paths.extend(c.old_path);
        paths.push(c.path);
    }
    let patch = src.diff_patch(&base, &head, &paths).expect("patch");
    assert!(String::from_utf8_lossy(&patch).contains("\"b/tab\\there.txt\""));
    let mut parsed = assay_git::patch_paths(&patch).expect("parse");
    parsed.sort_by(|a, b| a.path.cmp(&b.path));
    let summary: Vec<(String, Option<String>, bool, bool, bool)> = parsed
        .into_iter()
        .map(|p| (p.path, p.old_path, p.is_new, p.is_deleted, p.is_symlink))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("gone.txt".into(), None, false, true, false),
            ("link".into(), None, true, false, true),
            (
                "moved \"q\".txt".into(),
                Some("keep.txt".into()),
                false,
                false,
                false
            ),
            ("tab\there.txt".into(), None, true, false, false),
            ("ä/b c.txt".into(), None, true, false, false),
        ]
    );
}
