//! An attempt's workspace: the task's base commit as files (from the tree
//! store: no history, remote, gold or test patch), made a fresh repository
//! of one commit tagged `base` so the agent's git works; and, after the
//! agent, its answer: the diff from the base tree to the workspace's files
//! as `git add -A` would stage them, computed in assay's own tree store
//! ([`TreeStore::write_tree_of`]), so commits the agent made count, and
//! nothing the agent left in `.git` (hooks, filters, a moved tag) runs or
//! counts.

use std::path::{Path, PathBuf};
use std::process::Command;

use assay_git::TreeStore;

/// A prepared workspace in its scratch directory.
pub(crate) struct Workspace {
    /// Removed when dropped: the workspace, the prompt, the transcript.
    pub(crate) scratch: tempfile::TempDir,
    /// The proxy's socket's directory, under the system's temp directory:
    /// a unix socket's path must be short (108 bytes), and the cache's
    /// may be anywhere.
    net: tempfile::TempDir,
    pub(crate) base_tree: String,
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

/// The workspace of `base_commit`, in a fresh directory under `tmp`.
pub(crate) fn prepare(
    store_dir: &Path,
    base_commit: &str,
    tmp: &Path,
) -> Result<Workspace, String> {
    let store = TreeStore::open_or_init(store_dir).map_err(|e| e.to_string())?;
    let base_tree = store.tree_of(base_commit).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix("attempt-")
        .tempdir_in(tmp)
        .map_err(|e| e.to_string())?;
    let net = tempfile::Builder::new()
        .prefix("assay-net-")
        .tempdir()
        .map_err(|e| format!("the proxy's socket directory: {e}"))?;
    let ws = Workspace {
        scratch,
        net,
        base_tree,
    };
    for d in [ws.input(), ws.output()] {
        std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    store
        .materialize(&ws.base_tree, &ws.dir())
        .map_err(|e| e.to_string())?;
    let home = ws.scratch.path().join("git-home");
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
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
    Ok(ws)
}

/// `git ARGS` in the fresh workspace, with nothing of this machine's git
/// configuration.
fn git(dir: &Path, home: &Path, args: &[&str]) -> Result<(), String> {
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
        .map_err(|e| format!("git: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "preparing the workspace: git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The agent's answer: the binary diff from the base tree to the
/// workspace's files.
pub(crate) fn collect(store_dir: &Path, ws: &Workspace) -> Result<Vec<u8>, String> {
    let store = TreeStore::open_or_init(store_dir).map_err(|e| e.to_string())?;
    let tree = store
        .write_tree_of(&ws.dir())
        .map_err(|e| format!("reading the workspace back: {e}"))?;
    store
        .diff(&ws.base_tree, &tree)
        .map_err(|e| format!("the workspace's diff: {e}"))
}
