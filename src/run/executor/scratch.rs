//! Where a test run's scratch directory goes: its tree, log, warm caches
//! and guard are written there and removed after the run, about a thousand
//! files a run for a small Python repository. On ext4 that churn of inodes
//! is most of a run's cost (docs/performance.md, "Where a run's time
//! goes"): the same build took 93 s with the scratch in the cache and 17 s
//! on a tmpfs. So a run's scratch goes to `/dev/shm` when that is a tmpfs
//! that allows executables and has room for the run, else into the cache's
//! `tmp`; `ASSAY_SCRATCH` chooses (a directory, or `cache`).
//!
//! Each directory is made fresh (mode 0700, a name of its own, never a
//! directory that was there before) and removed when the run ends; one left
//! by a killed build is removed by the next that finds its process gone.

use std::path::{Path, PathBuf};
use std::sync::Once;

/// Chooses the scratch root: a directory, or `cache` for the cache's `tmp`.
pub(crate) const SCRATCH_VAR: &str = "ASSAY_SCRATCH";
const SHM: &str = "/dev/shm";
/// `assay-run-<pid>-<random>`: the pid tells a leftover from a live run.
const PREFIX: &str = "assay-run-";
const TMPFS_MAGIC: u64 = 0x0102_1994;
/// Free space a tmpfs must keep beyond what runs may write.
const SPARE: u64 = 1 << 30;
/// Runs that may be writing there at once, counted in the room asked for.
const ROOM_RUNS: u64 = 4;

/// A fresh scratch directory for one run that may write up to `write`
/// bytes into its tree: under `ASSAY_SCRATCH` when set, else on `/dev/shm`
/// when [`roomy_tmpfs`], else in the cache's `tmp`.
pub(crate) fn run_dir(
    sweep: &Sweep,
    cache_dir: &Path,
    write: u64,
) -> std::io::Result<tempfile::TempDir> {
    run_dir_in(sweep, std::env::var_os(SCRATCH_VAR), cache_dir, write)
}

/// Whether the leftovers of killed builds on `/dev/shm` were removed: once,
/// before the first run of a build puts its scratch there.
pub(crate) struct Sweep(Once);

impl Default for Sweep {
    fn default() -> Self {
        Sweep(Once::new())
    }
}

/// A fresh scratch directory in the cache's `tmp`, whatever
/// `ASSAY_SCRATCH` says: for runs whose scratch other machines read.
pub(crate) fn cache_dir(cache_dir: &Path) -> std::io::Result<tempfile::TempDir> {
    run_dir_in(&Sweep::default(), Some("cache".into()), cache_dir, 0)
}

/// [`run_dir`] with `ASSAY_SCRATCH` as `choice`.
fn run_dir_in(
    sweep: &Sweep,
    choice: Option<std::ffi::OsString>,
    cache_dir: &Path,
    write: u64,
) -> std::io::Result<tempfile::TempDir> {
    let root = match choice {
        Some(v) if v == "cache" => cache_dir.join("tmp"),
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ if roomy_tmpfs(Path::new(SHM), write) => {
            sweep.0.call_once(|| sweep_leftovers(Path::new(SHM)));
            PathBuf::from(SHM)
        }
        _ => cache_dir.join("tmp"),
    };
    std::fs::create_dir_all(&root)?;
    use std::os::unix::fs::PermissionsExt;
    // Made with this mode (not the umask's 0755): on a tmpfs other users
    // see, nobody else may read a run's tree (its hidden tests).
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(&root)
}

/// `dir` is a tmpfs that lets a run execute what it builds (not mounted
/// `noexec`, as hardened machines mount `/dev/shm`: a test running a
/// script of its tree would fail for the machine's sake) and has room for
/// several runs writing `write` bytes each, with a gibibyte to spare (a
/// container's 64 MiB `/dev/shm` never qualifies).
pub(crate) fn roomy_tmpfs(dir: &Path, write: u64) -> bool {
    let Ok(fs) = rustix::fs::statfs(dir) else {
        return false;
    };
    if fs.f_type as u64 != TMPFS_MAGIC {
        return false;
    }
    let Ok(vfs) = rustix::fs::statvfs(dir) else {
        return false;
    };
    let free = vfs.f_bavail.saturating_mul(vfs.f_frsize);
    !vfs.f_flag.contains(rustix::fs::StatVfsMountFlags::NOEXEC)
        && free >= write.saturating_mul(ROOM_RUNS).saturating_add(SPARE)
}

/// Removes the scratch directories in `root` left by assay processes that
/// are gone (a killed build); those of live ones are theirs.
fn sweep_leftovers(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = rustix::process::Pid::from_raw(pid).is_some_and(|pid| {
            rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
        });
        let ours = e.metadata().is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == rustix::process::getuid().as_raw()
        });
        if gone && ours {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_tmpfs_with_room_takes_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        if rustix::fs::statfs(dir.path()).unwrap().f_type as u64 != TMPFS_MAGIC {
            assert!(!roomy_tmpfs(dir.path(), 0), "not a tmpfs");
        }
        assert!(!roomy_tmpfs(Path::new("/nonexistent/assay"), 0));
        assert!(
            !roomy_tmpfs(Path::new(SHM), u64::MAX / 8),
            "no room for that much"
        );
    }

    #[test]
    fn leftovers_of_gone_processes_are_swept_and_live_ones_kept() {
        let root = tempfile::tempdir().unwrap();
        // A pid no process has (above the kernel's pid_max).
        let gone = root.path().join(format!("{PREFIX}99999999-abc"));
        let live = root
            .path()
            .join(format!("{PREFIX}{}-abc", std::process::id()));
        let other = root.path().join("someone-else");
        for d in [&gone, &live, &other] {
            std::fs::create_dir_all(d.join("tree/deep")).unwrap();
            std::fs::write(d.join("tree/deep/file"), b"x").unwrap();
        }
        sweep_leftovers(root.path());
        assert!(!gone.exists(), "a killed build's scratch is removed");
        assert!(live.exists(), "a live process's scratch is kept");
        assert!(other.exists(), "what is not assay's is not touched");
    }

    #[test]
    fn assay_scratch_chooses_the_root() {
        let cache = tempfile::tempdir().unwrap();
        let chosen = tempfile::tempdir().unwrap();
        let dir = run_dir_in(
            &Sweep::default(),
            Some(chosen.path().into()),
            cache.path(),
            1 << 30,
        )
        .unwrap();
        assert_eq!(dir.path().parent(), Some(chosen.path()));
        let dir = run_dir_in(
            &Sweep::default(),
            Some("cache".into()),
            cache.path(),
            1 << 30,
        )
        .unwrap();
        assert_eq!(
            dir.path().parent(),
            Some(cache.path().join("tmp").as_path())
        );
        let name = dir.path().file_name().unwrap().to_str().unwrap().to_owned();
        assert!(
            name.starts_with(&format!("{PREFIX}{}-", std::process::id())),
            "{name}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "no one else reads a run's tree");
        // Unset: the tmpfs when it has room, else the cache.
        let dir = run_dir_in(&Sweep::default(), None, cache.path(), 1 << 20).unwrap();
        let want = if roomy_tmpfs(Path::new(SHM), 1 << 20) {
            Path::new(SHM).to_owned()
        } else {
            cache.path().join("tmp")
        };
        assert_eq!(dir.path().parent(), Some(want.as_path()));
        let dir = run_dir_in(&Sweep::default(), None, cache.path(), u64::MAX / 8).unwrap();
        assert_eq!(
            dir.path().parent(),
            Some(cache.path().join("tmp").as_path())
        );
    }
}
