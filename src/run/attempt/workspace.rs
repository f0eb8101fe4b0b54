//! An attempt's workspace: the task's base commit as files (from the tree
//! store: no history, remote, gold or test patch), made a fresh repository
//! of one commit tagged `base` so the agent's git works; and, after the
//! agent, its answer: the diff from the base tree to the workspace's files
//! as `git add -A` would stage them, computed in assay's own tree store
//! ([`TreeStore::write_tree_of`]), so commits the agent made count, and
//! nothing the agent left in `.git` (hooks, filters, a moved tag) runs or
//! counts.
//!
//! Reading back is bounded before anything is read: a sparse file of no
//! blocks costs assay ~10 s of CPU per GiB of zeros to read, and an agent
//! that made one and ended before the write watchdog looked leaves it
//! behind however its run is recorded. So the apparent
//! sizes (`st_size`, from `lstat` alone) of the workspace's files are
//! summed first; more than the base's plus the write limit is refused with
//! the figure, and the read itself is stopped at [`READ_BACK_LIMIT`].

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use assay_git::TreeStore;

use crate::run::error::{Kinded, NodeError};

/// A prepared workspace in its scratch directory.
pub(crate) struct Workspace {
    /// Removed when dropped: the workspace, the prompt, the transcript.
    pub(crate) scratch: tempfile::TempDir,
    /// The proxy's socket's directory, under the system's temp directory:
    /// a unix socket's path must be short (108 bytes), and the cache's
    /// may be anywhere.
    net: tempfile::TempDir,
    pub(crate) base_tree: String,
    /// The apparent size of the workspace as prepared: the base's files
    /// and its one-commit repository.
    base_bytes: u64,
}

impl Workspace {
    pub(crate) fn dir(&self) -> PathBuf {
        self.scratch.path().join("workspace")
    }
    /// Bound read-only at [`super::IN`]: the prompt, the command file.
    pub(crate) fn input(&self) -> PathBuf {
        self.scratch.path().join("in")
    }
    /// Bound writable at [`super::OUT`]: the transcript.
    pub(crate) fn output(&self) -> PathBuf {
        self.scratch.path().join("out")
    }
    pub(crate) fn log(&self) -> PathBuf {
        self.scratch.path().join("log")
    }
    pub(crate) fn socket(&self) -> PathBuf {
        self.net.path().join("proxy.sock")
    }
}

/// The workspace of `base_commit`, in a fresh directory under `tmp`. The
/// base is read from assay's object store (a failure there is the
/// cache's); the directories and git are the machine's.
pub(crate) fn prepare(
    store_dir: &Path,
    base_commit: &str,
    tmp: &Path,
) -> Result<Workspace, NodeError> {
    let store = TreeStore::open_or_init(store_dir).cache()?;
    let base_tree = store.tree_of(base_commit).cache()?;
    std::fs::create_dir_all(tmp)
        .map_err(|e| NodeError::infra(format!("{}: {e}", tmp.display())))?;
    let scratch = tempfile::Builder::new()
        .prefix("attempt-")
        .tempdir_in(tmp)
        .infra()?;
    let net = tempfile::Builder::new()
        .prefix("assay-net-")
        .tempdir()
        .map_err(|e| NodeError::infra(format!("the proxy's socket directory: {e}")))?;
    let mut ws = Workspace {
        scratch,
        net,
        base_tree,
        base_bytes: 0,
    };
    for d in [ws.input(), ws.output()] {
        std::fs::create_dir_all(&d)
            .map_err(|e| NodeError::infra(format!("{}: {e}", d.display())))?;
    }
    store.materialize(&ws.base_tree, &ws.dir()).cache()?;
    let home = ws.scratch.path().join("git-home");
    std::fs::create_dir_all(&home).infra()?;
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &["commit", "-q", "--no-verify", "--allow-empty", "-m", "base"],
        &["tag", "base"],
        &["config", "user.name", "agent"],
        &["config", "user.email", "agent@assay.invalid"],
    ] {
        git(&ws.dir(), &home, args)?;
    }
    ws.base_bytes = apparent_size(&ws.dir(), Instant::now() + READ_BACK_LIMIT)
        .map_err(|why| NodeError::infra(format!("measuring the workspace: {why}")))?;
    Ok(ws)
}

/// `git ARGS` in the fresh workspace, with nothing of this machine's git
/// configuration.
fn git(dir: &Path, home: &Path, args: &[&str]) -> Result<(), NodeError> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=assay",
            "-c",
            "user.email=assay@assay.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", "1970-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "1970-01-01T00:00:00Z")
        .output()
        .map_err(|e| NodeError::infra(format!("git: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NodeError::infra(format!(
            "preparing the workspace: git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// How long reading a workspace back may take: far more than any honest
/// one needs (a repository's worth of files, hashed), far less than a
/// workspace made to cost the reader.
pub(crate) const READ_BACK_LIMIT: Duration = Duration::from_secs(60);

/// Why no patch came out of a workspace.
#[derive(Debug)]
pub(crate) enum Uncollected {
    /// Over the read-back bound: the agent's doing, graded
    /// `patch_apply_failed`.
    Refused(String),
    /// assay could not read it (its own failure).
    Failed(String),
}

/// The agent's answer: the binary diff from the base tree to the
/// workspace's files, refused without reading when their apparent size
/// exceeds the base's by more than `write_limit`, or when reading them
/// takes over `limit`.
pub(crate) fn collect(
    store_dir: &Path,
    ws: &Workspace,
    write_limit: u64,
    limit: Duration,
) -> Result<Vec<u8>, Uncollected> {
    let store =
        TreeStore::open_or_init(store_dir).map_err(|e| Uncollected::Failed(e.to_string()))?;
    let tree = read_back(&store, &ws.dir(), ws.base_bytes, write_limit, limit)?;
    store
        .diff(&ws.base_tree, &tree)
        .map_err(|e| Uncollected::Failed(format!("the workspace's diff: {e}")))
}

/// The tree of `dir`'s files written to `store`, refused without reading
/// when their apparent size exceeds `base` bytes (the base's own) by more
/// than `write_limit`, or when listing and reading them takes over
/// `limit`: an attempt's workspace and a Harbor trial's alike.
pub(crate) fn read_back(
    store: &TreeStore,
    dir: &Path,
    base: u64,
    write_limit: u64,
    limit: Duration,
) -> Result<String, Uncollected> {
    let started = Instant::now();
    bounded(dir, base, write_limit, limit).map_err(Uncollected::Refused)?;
    let left = limit.saturating_sub(started.elapsed());
    store
        .write_tree_of_within(dir, Some(left))
        .map_err(|e| match e {
            assay_git::GitError::TimedOut { .. } => Uncollected::Refused(format!(
                "reading the workspace back took over {} s: stopped",
                limit.as_secs()
            )),
            e => Uncollected::Failed(format!("reading the workspace back: {e}")),
        })
}

/// `Err` with why when the apparent size of `dir`'s files exceeds `base`
/// bytes by more than `write_limit`, or listing them takes over `limit`:
/// the check made before a workspace is read, wherever it is read.
pub(crate) fn bounded(
    dir: &Path,
    base: u64,
    write_limit: u64,
    limit: Duration,
) -> Result<(), String> {
    let bytes = apparent_size(dir, Instant::now() + limit)?;
    over(bytes, base, write_limit).map_or(Ok(()), Err)
}

/// Why a workspace of `bytes` (apparent size) is over the bound, if it is:
/// the base's `base` bytes plus what the agent may write.
fn over(bytes: u64, base: u64, write_limit: u64) -> Option<String> {
    (bytes.saturating_sub(base) > write_limit).then(|| {
        format!(
            "the workspace holds {} of file content (apparent size) beyond the base's, over the {} cap (the write limit)",
            size_text(bytes - base),
            size_text(write_limit)
        )
    })
}

/// `n` bytes to one decimal in the largest binary unit under it: `4.0 GiB`.
fn size_text(n: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift {
            return format!("{:.1} {unit}", n as f64 / (1u64 << shift) as f64);
        }
    }
    format!("{n} bytes")
}

/// The sum of the apparent sizes of the regular files under `dir`, from
/// `lstat` alone (no file is opened, no link followed); `Err` past
/// `deadline` (a tree of millions of entries).
pub(crate) fn apparent_size(dir: &Path, deadline: Instant) -> Result<u64, String> {
    let mut total = 0u64;
    let mut stack = vec![dir.to_owned()];
    let mut seen = 0u64;
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for entry in entries {
            seen += 1;
            if seen.is_multiple_of(1024) && Instant::now() >= deadline {
                return Err(format!(
                    "the workspace has so many entries that listing them took over {} s ({seen} so far)",
                    READ_BACK_LIMIT.as_secs()
                ));
            }
            let entry = entry.map_err(|e| format!("{}: {e}", d.display()))?;
            let meta = std::fs::symlink_metadata(entry.path())
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                total = total.saturating_add(meta.size());
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_files_count_by_their_apparent_size_and_the_figure_is_said() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("small"), b"12345").unwrap();
        // Sparse: no blocks, 3 GiB of zeros to whoever reads it.
        let f = std::fs::File::create(dir.path().join("sub/sparse")).unwrap();
        f.set_len(3 << 30).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("link")).unwrap();
        let far = Instant::now() + Duration::from_secs(60);
        let bytes = apparent_size(dir.path(), far).unwrap();
        assert_eq!(bytes, (3 << 30) + 5);
        assert_eq!(
            over(bytes + 100, 100, 1 << 30).as_deref(),
            Some(
                "the workspace holds 3.0 GiB of file content (apparent size) beyond the base's, over the 1.0 GiB cap (the write limit)"
            )
        );
        assert_eq!(over(bytes, 0, 4 << 30), None);
        assert!(
            apparent_size(dir.path(), Instant::now()).is_ok(),
            "under 1024 entries: no check"
        );
    }
}
