//! Staging speed: `TreeStore::materialize` against `git archive | tar -x`
//! on the same commit of a 10,000-file repository (~2 KB per file, nested
//! directories, packed like a real clone). Each iteration writes into a
//! fresh directory; deleting it is not timed.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use assay_git::{Source, TreeStore};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

fn git(dir: &Path, args: &[&str]) -> String {
    assay_testkit::git(dir, 1_700_000_000, args)
        .trim()
        .to_string()
}

/// 10 x 10 directories x 100 files of ~2 KB pseudo-random text.
fn build_repo(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..10_000u32 {
        let path = dir.join(format!(
            "d{:02}/s{:02}/file{i:05}.txt",
            i % 10,
            (i / 10) % 10
        ));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let mut text = String::with_capacity(2100);
        while text.len() < 2048 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push_str(&format!("{state:016x} "));
            if text.len() % 72 < 17 {
                text.push('\n');
            }
        }
        std::fs::write(&path, text).expect("write");
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "10k files"]);
    git(dir, &["repack", "-adq"]);
    git(dir, &["prune-packed"]);
}

fn archive_extract(git_dir: &Path, commit: &str, dest: &Path) {
    std::fs::create_dir_all(dest).expect("mkdir");
    let mut archive = Command::new("git")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_DIR", git_dir)
        .args(["archive", "--format=tar", commit])
        .stdout(Stdio::piped())
        .spawn()
        .expect("git archive");
    let stdout = archive.stdout.take().expect("stdout");
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(dest)
        .stdin(stdout)
        .status()
        .expect("tar");
    assert!(tar.success());
    assert!(archive.wait().expect("wait").success());
}

fn stage(c: &mut Criterion) {
    let work = tempfile::tempdir().expect("tmp");
    let repo_dir = work.path().join("repo");
    std::fs::create_dir_all(&repo_dir).expect("mkdir");
    build_repo(&repo_dir);
    let source = Source::open(&repo_dir).expect("open");
    let commit = source.resolve("HEAD").expect("HEAD");
    let tree = git(&repo_dir, &["rev-parse", "HEAD^{tree}"]);
    let store = TreeStore::open_or_init(&work.path().join("cache/git")).expect("store");
    store
        .add_alternate(&source.objects_dir())
        .expect("alternate");
    let git_dir: PathBuf = source.git_dir().to_path_buf();
    // Destinations on the disk (like a real stage dir) and, when available,
    // on tmpfs (isolates CPU/syscall cost from the disk). Each iteration
    // starts after `sync`, so dirty pages of the previous one (or the other
    // contender) do not slow it down.
    let mut targets = vec![("disk", work.path().join("scratch"))];
    let shm = Path::new("/dev/shm");
    let shm_dir = tempfile::tempdir_in(shm).ok();
    if let Some(d) = &shm_dir {
        targets.push(("tmpfs", d.path().to_path_buf()));
    }
    for (name, scratch) in &targets {
        std::fs::create_dir_all(scratch).expect("mkdir");
        let setup = || {
            let dir = tempfile::tempdir_in(scratch).expect("tmp");
            let _ = Command::new("sync").status();
            dir
        };
        let mut group = c.benchmark_group(format!("stage_10k_{name}"));
        group.sample_size(10);
        group.warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(8));
        group.bench_function("materialize", |b| {
            b.iter_batched(
                setup,
                |dir| {
                    let stats = store
                        .materialize(&tree, &dir.path().join("t"))
                        .expect("materialize");
                    assert_eq!(stats.files, 10_000);
                    black_box(stats);
                    dir
                },
                BatchSize::PerIteration,
            );
        });
        group.bench_function("git_archive_tar", |b| {
            b.iter_batched(
                setup,
                |dir| {
                    archive_extract(&git_dir, &commit, &dir.path().join("t"));
                    dir
                },
                BatchSize::PerIteration,
            );
        });
        group.finish();
    }
}

criterion_group!(benches, stage);
criterion_main!(benches);
