use assay_git::{ComposeError, PatchStep, Source, TreeStore};

use crate::support::{Repo, listing};

pub(crate) fn store_for(src: &Source) -> (tempfile::TempDir, TreeStore) {
    let cache = tempfile::tempdir().expect("tmp");
    let store = TreeStore::open_or_init(&cache.path().join("git")).expect("store");
    store.add_alternate(&src.objects_dir()).expect("alternate");
    (cache, store)
}

pub(crate) fn step(label: &str, patch: impl Into<Vec<u8>>) -> PatchStep {
    PatchStep {
        label: label.into(),
        patch: patch.into(),
        exclude: vec![],
    }
}

/// base; a "session" commit editing code and adding a test file; a "tests"
/// commit on base adding the hidden test.
fn setup() -> (Repo, Source, String, Vec<u8>, Vec<u8>) {
    let mut r = Repo::new();
    r.write("src/lib.rs", "pub fn f() -> u32 { 1 }\n")
        .write("tests/old.rs", "old\n");
    let base = r.commit("base");
    r.write("src/lib.rs", "pub fn f() -> u32 { 2 }\n")
        .write("tests/new_test.rs", "agent test\n");
    let session = r.commit("session");
    let src = Source::open(r.path()).expect("open");
    let all = vec!["src/lib.rs".to_string(), "tests/new_test.rs".to_string()];
    let session_patch = src.diff_patch(&base, &session, &all).expect("patch");
    r.git(&["checkout", "-q", "-b", "t", &base]);
    r.write("tests/new_test.rs", "hidden test\n");
    let tests = r.commit("tests");
    let test_patch = src
        .diff_patch(&base, &tests, &["tests/new_test.rs".to_string()])
        .expect("patch");
    (r, src, base, session_patch, test_patch)
}

#[test]
fn exclude_leaves_a_path_out() {
    let (_r, src, base, session, tests) = setup();
    let (_cache, store) = store_for(&src);
    // Without exclusion the hidden test collides with the agent's file.
    let err = store
        .compose(
            &base,
            &[
                step("session", session.clone()),
                step("test_patch", tests.clone()),
            ],
        )
        .expect_err("conflict");
    match err {
        ComposeError::Apply { label, stderr } => {
            assert_eq!(label, "test_patch");
            assert!(stderr.contains("tests/new_test.rs"), "{stderr}");
        }
        other => panic!("unexpected {other:?}"),
    }
    let mut s = step("session", session);
    s.exclude = vec!["tests/new_test.rs".into()];
    let tree = store
        .compose(&base, &[s, step("test_patch", tests)])
        .expect("compose");
    let entries = store.entries(&tree).expect("entries");
    let test = entries
        .iter()
        .find(|e| e.path == "tests/new_test.rs")
        .expect("test");
    assert_eq!(store.read_blob(&test.id).expect("blob"), b"hidden test\n");
    let lib = entries
        .iter()
        .find(|e| e.path == "src/lib.rs")
        .expect("lib");
    assert_eq!(
        store.read_blob(&lib.id).expect("blob"),
        b"pub fn f() -> u32 { 2 }\n"
    );
    assert_eq!(lib.mode, 0o100644);
}

#[test]
fn identical_trees_have_equal_ids() {
    let (r, src, base, session, _tests) = setup();
    let (_cache, store) = store_for(&src);
    let once = store
        .compose(&base, &[step("a", session.clone())])
        .expect("once");
    // The same result reached in two steps: the patch split by file.
    let text = String::from_utf8(session).expect("utf8");
    let split = text.find("diff --git a/tests").expect("second file");
    let two = store
        .compose(
            &base,
            &[
                step("a", &text[..split]),
                step("b", &text[split..]),
                step("empty", ""),
            ],
        )
        .expect("two");
    assert_eq!(once, two);
    assert_eq!(store.compose(&base, &[]).expect("base"), r.tree_of(&base));
}

#[test]
fn garbage_patch_is_an_apply_error() {
    let (_r, src, base, _s, _t) = setup();
    let (_cache, store) = store_for(&src);
    let err = store
        .compose(&base, &[step("junk", "not a patch at all\n")])
        .expect_err("fails");
    assert!(
        matches!(err, ComposeError::Apply { ref label, .. } if label == "junk"),
        "{err:?}"
    );
}

#[test]
fn store_never_writes_into_the_source() {
    let (r, src, base, session, tests) = setup();
    let objects = r.path().join(".git/objects");
    let before = listing(&objects);
    let (cache, store) = store_for(&src);
    // Idempotent open and alternate.
    let again = TreeStore::open_or_init(&cache.path().join("git")).expect("reopen");
    again
        .add_alternate(&src.objects_dir())
        .expect("alternate again");
    again
        .add_alternate(src.git_dir())
        .expect("alternate via git dir");
    let alternates = std::fs::read_to_string(cache.path().join("git/objects/info/alternates"))
        .expect("alternates");
    assert_eq!(alternates.lines().count(), 1, "{alternates}");
    let mut s = step("session", session);
    s.exclude = vec!["tests/new_test.rs".into()];
    let tree = store
        .compose(&base, &[s, step("tests", tests)])
        .expect("compose");
    let dest = cache.path().join("stage");
    store.materialize(&tree, &dest).expect("materialize");
    assert_eq!(listing(&objects), before);
}

#[test]
fn concurrent_open_or_init() {
    let cache = tempfile::tempdir().expect("tmp");
    let dir = cache.path().join("git");
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| TreeStore::open_or_init(&dir).map(|_| ())))
            .collect();
        for h in hs {
            h.join().expect("join").expect("init");
        }
    });
    assert!(dir.join("HEAD").is_file());
    let leftovers: Vec<_> = std::fs::read_dir(cache.path()).expect("ls").collect();
    assert_eq!(leftovers.len(), 1);
}

#[test]
fn prune_removes_only_trees_no_kept_pin_reaches() {
    let (r, src, base, _session, _tests) = setup();
    let (_cache, store) = store_for(&src);
    let before = listing(&r.path().join(".git/objects"));
    // Two staged trees that exist nowhere in the source, each with a blob of
    // its own, so both live in the store.
    let new_file = |name: &str, text: &str| {
        format!(
            "diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+{text}\n"
        )
    };
    let kept = store
        .compose(
            &base,
            &[step("session", new_file("kept.txt", "kept only here"))],
        )
        .expect("kept tree");
    let dropped = store
        .compose(
            &base,
            &[step(
                "session",
                new_file("dropped.txt", "dropped only here"),
            )],
        )
        .expect("dropped tree");
    assert_ne!(kept, dropped);

    let would = store
        .prune(std::slice::from_ref(&kept), false)
        .expect("dry run");
    assert!(would >= 2, "the dropped tree and its blob: {would}");
    let dest = tempfile::tempdir().expect("tmp");
    store
        .materialize(&dropped, &dest.path().join("still"))
        .expect("a dry run deletes nothing");

    let pruned = store
        .prune(std::slice::from_ref(&kept), true)
        .expect("prune");
    assert_eq!(pruned, would);
    store
        .materialize(&kept, &dest.path().join("kept"))
        .expect("the kept tree is whole");
    assert!(
        store
            .materialize(&dropped, &dest.path().join("gone"))
            .is_err(),
        "the dropped tree is gone"
    );
    // Nothing else is prunable now, and the source repository was not touched.
    assert_eq!(
        store
            .prune(std::slice::from_ref(&kept), false)
            .expect("again"),
        0
    );
    assert_eq!(listing(&r.path().join(".git/objects")), before);
}

/// A workspace an agent worked in reads back as its files: commits it made
/// and files it left uncommitted alike, a deleted file, a new symlink; and
/// nothing its `.git` says runs or counts (an fsmonitor hook, a clean
/// filter, a moved `base` tag). The diff applies back onto the base.
#[test]
fn a_workspace_reads_back_as_files_whatever_its_git_directory_says() {
    let (_r, src, base, _session, _tests) = setup();
    let (cache, store) = store_for(&src);
    let base_tree = store.tree_of(&base).expect("tree");
    let ws = cache.path().join("ws");
    store.materialize(&base_tree, &ws).expect("materialize");
    let fired = cache.path().join("fired");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=a", "-c", "user.email=a@b"])
            .args(args)
            .current_dir(&ws)
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    git(&["tag", "base"]);
    // The agent commits one change and leaves another uncommitted.
    std::fs::write(ws.join("src/lib.rs"), "pub fn f() -> u32 { 2 }\n").unwrap();
    git(&["commit", "-qam", "fix"]);
    std::fs::remove_file(ws.join("tests/old.rs")).unwrap();
    std::fs::write(ws.join("notes.txt"), "uncommitted\n").unwrap();
    std::os::unix::fs::symlink("src/lib.rs", ws.join("lib-link")).unwrap();
    // And plants what would run on the host, or hide its change.
    let hook = format!("touch {}", fired.display());
    git(&["config", "core.fsmonitor", &hook]);
    git(&["config", "filter.hide.clean", &hook]);
    std::fs::write(ws.join(".gitattributes"), "*.txt filter=hide\n").unwrap();
    git(&["tag", "-f", "base", "HEAD"]);

    let tree = store.write_tree_of(&ws).expect("tree of the workspace");
    assert!(!fired.exists(), "a hook or filter of the workspace ran");
    let patch = store.diff(&base_tree, &tree).expect("diff");
    let text = String::from_utf8_lossy(&patch);
    assert!(text.contains("+pub fn f() -> u32 { 2 }"), "{text}");
    assert!(
        text.contains("deleted file mode 100644") && text.contains("tests/old.rs"),
        "{text}"
    );
    assert!(text.contains("+uncommitted"), "{text}");
    assert!(text.contains("new file mode 120000"), "{text}");
    assert!(!text.contains(".git/"), "{text}");
    // The patch composes onto the base to the same tree.
    let again = store
        .compose(&base, &[step("attempt", patch.clone())])
        .expect("compose");
    assert_eq!(again, tree);
    assert!(store.diff(&base_tree, &base_tree).expect("diff").is_empty());
}

/// Reading a workspace back stops at its time bound: a sparse file of no
/// blocks reads as 1 GiB of zeros, seconds of hashing, and is not read to
/// its end past the bound.
#[test]
fn reading_a_workspace_back_stops_at_its_time_bound() {
    let (_r, src, base, _session, _tests) = setup();
    let (cache, store) = store_for(&src);
    let base_tree = store.tree_of(&base).expect("tree");
    let ws = cache.path().join("ws");
    store.materialize(&base_tree, &ws).expect("materialize");
    let sparse = std::fs::File::create(ws.join("sparse.bin")).expect("create");
    sparse.set_len(1 << 30).expect("a sparse GiB");
    let started = std::time::Instant::now();
    let got = store.write_tree_of_within(&ws, Some(std::time::Duration::from_millis(300)));
    let took = started.elapsed();
    assert!(
        matches!(got, Err(assay_git::GitError::TimedOut { .. })),
        "{got:?}"
    );
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
    // Without a bound the same tree is read (a small one, quickly).
    std::fs::remove_file(ws.join("sparse.bin")).expect("rm");
    assert!(
        store
            .write_tree_of_within(&ws, Some(std::time::Duration::from_secs(60)))
            .is_ok()
    );
}
