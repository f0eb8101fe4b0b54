use std::os::unix::fs::PermissionsExt;

use assay_git::{Source, TreeStore};

use crate::support::Repo;

#[test]
fn materialize_writes_content_modes_links_and_no_git() {
    let mut r = Repo::new();
    r.write("top.txt", "top\n")
        .write("a/b/c/deep.txt", "deep\n")
        .write("bin/run.sh", "#!/bin/sh\necho hi\n")
        .exec("bin/run.sh")
        .write("empty.txt", "")
        .write("bin.dat", [0u8, 1, 2, 255]);
    r.symlink("a/link", "b/c/deep.txt");
    r.symlink("dangling", "nowhere");
    let head = r.commit("c");
    let src = Source::open(r.path()).expect("open");
    let cache = tempfile::tempdir().expect("tmp");
    let store = TreeStore::open_or_init(&cache.path().join("git")).expect("store");
    store.add_alternate(&src.objects_dir()).expect("alt");
    let dest = cache.path().join("out");
    let stats = store
        .materialize(&r.tree_of(&head), &dest)
        .expect("materialize");
    assert_eq!(stats.files, 5);
    assert_eq!(stats.symlinks, 2);
    assert_eq!(stats.dirs, 4);
    assert_eq!(
        stats.workers, 1,
        "7 entries are below the parallel threshold"
    );

    assert_eq!(
        std::fs::read(dest.join("a/b/c/deep.txt")).expect("read"),
        b"deep\n"
    );
    assert_eq!(
        std::fs::read(dest.join("bin.dat")).expect("read"),
        [0u8, 1, 2, 255]
    );
    assert_eq!(std::fs::read(dest.join("empty.txt")).expect("read"), b"");
    let mode = |p: &str| {
        std::fs::metadata(dest.join(p))
            .expect("meta")
            .permissions()
            .mode()
    };
    assert_ne!(mode("bin/run.sh") & 0o111, 0);
    assert_eq!(mode("top.txt") & 0o111, 0);
    assert_eq!(
        std::fs::read_link(dest.join("a/link"))
            .expect("link")
            .to_str(),
        Some("b/c/deep.txt")
    );
    assert_eq!(
        std::fs::read(dest.join("a/link")).expect("through link"),
        b"deep\n"
    );
    assert!(
        std::fs::symlink_metadata(dest.join("dangling"))
            .expect("meta")
            .file_type()
            .is_symlink()
    );
    assert!(!dest.join(".git").exists());

    // Entries agree with git.
    let entries = store.entries(&r.tree_of(&head)).expect("entries");
    let ls = r.git(&["ls-tree", "-r", &head]);
    assert_eq!(entries.len(), ls.lines().count());
    let run = entries
        .iter()
        .find(|e| e.path == "bin/run.sh")
        .expect("run");
    assert_eq!(run.mode, 0o100755);

    // A non-empty destination is refused.
    assert!(store.materialize(&r.tree_of(&head), &dest).is_err());
}

#[test]
fn materialize_many_files_in_parallel() {
    let mut r = Repo::new();
    for i in 0..300 {
        r.write(
            &format!("d{}/e{}/f{i}.txt", i % 7, i % 3),
            format!("file {i}\n"),
        );
    }
    let head = r.commit("many");
    let src = Source::open(r.path()).expect("open");
    let cache = tempfile::tempdir().expect("tmp");
    let store = TreeStore::open_or_init(&cache.path().join("git")).expect("store");
    store.add_alternate(&src.objects_dir()).expect("alt");
    let dest = cache.path().join("out");
    let stats = store
        .materialize(&r.tree_of(&head), &dest)
        .expect("materialize");
    assert_eq!(stats.files, 300);
    // 300 files are above the threshold: at least two writers, at most the cap
    // of four, whatever the machine's core count.
    assert!((2..=4).contains(&stats.workers), "{stats:?}");
    // Workers share one counter: every entry written exactly once, none lost.
    let expected: u64 = (0..300).map(|i| format!("file {i}\n").len() as u64).sum();
    assert_eq!(stats.bytes, expected, "{stats:?}");
    for i in 0..300 {
        let p = dest.join(format!("d{}/e{}/f{i}.txt", i % 7, i % 3));
        assert_eq!(
            std::fs::read_to_string(p).expect("read"),
            format!("file {i}\n")
        );
    }
    let mut written = 0;
    for d in std::fs::read_dir(&dest).expect("dest") {
        for e in std::fs::read_dir(d.expect("d").path()).expect("e") {
            written += std::fs::read_dir(e.expect("e").path()).expect("f").count();
        }
    }
    assert_eq!(written, 300, "no extra files");
}
