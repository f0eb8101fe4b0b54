//! What callers ask for (an image to build, a container to run) and what they
//! get back. Plain data: validation happens where a spec is used.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::DockerError;

/// The environment directory inside an image (`ASSAY_ENV`): key files land
/// here and setup runs here. Read-only at test time (the root is).
pub const ENV_DIR: &str = "/assay/env";
/// Where a run's staged tree is uploaded; the run's working directory and its
/// only writable place besides `/tmp` and [`HOME_DIR`].
pub const TREE_DIR: &str = "/assay/tree";
/// A run's private, size-limited home (a tmpfs); pass `HOME` pointing here in
/// [`ContainerRun::env`] if the command needs one.
pub const HOME_DIR: &str = "/assay/home";
/// assay's own files for every run ([`ImageSpec::guard`]): root's and
/// read-only, in the image.
pub const GUARD_DIR: &str = "/assay/guard";
/// The layout of the images this crate builds and the containers it runs
/// in: [`TREE_DIR`] root's with mode 1777 (so the run user cannot rename
/// what a run's [`ContainerRun::protect`] hands to root), [`GUARD_DIR`],
/// and `/tmp` and [`HOME_DIR`] tmpfs that run what a suite builds there.
/// An image of another layout is refused by [`crate::Docker::run`]; keyed
/// with every docker environment and run, so what was made under another
/// layout is made again.
pub const LAYOUT: u32 = 3;

/// An image's content-addressed id, `sha256:<64 hex>`. Never a tag: a tag can
/// be moved, an id names exactly one image.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ImageId(String);

impl ImageId {
    /// Accepts only `sha256:` followed by 64 lowercase hex digits.
    pub fn parse(id: &str) -> Result<Self, DockerError> {
        let valid = id.strip_prefix("sha256:").is_some_and(|hex| {
            hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        if valid {
            Ok(Self(id.to_owned()))
        } else {
            Err(DockerError::InvalidSpec {
                what: "image id",
                value: id.to_owned(),
                why: "an image id is `sha256:` and 64 lowercase hex digits",
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ImageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The numeric user and group a run executes as. It need not exist in the
/// image's `/etc/passwd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunUser {
    pub uid: u32,
    pub gid: u32,
}

impl Default for RunUser {
    fn default() -> Self {
        Self {
            uid: 1000,
            gid: 1000,
        }
    }
}

impl RunUser {
    /// Parses `uid:gid` (the form of the `assay.user` image label).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (uid, gid) = text.split_once(':')?;
        Some(Self {
            uid: uid.parse().ok()?,
            gid: gid.parse().ok()?,
        })
    }
}

impl fmt::Display for RunUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.uid, self.gid)
    }
}

/// cgroup and rlimit limits of one container; `None` means no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU time, in thousandths of a CPU (1500 = one and a half CPUs).
    pub cpu_millis: Option<u32>,
    /// Memory in bytes, swap included (the container gets no swap). Going
    /// past it gets a process OOM-killed ([`ContainerOutcome::oom_killed`]).
    pub memory: Option<u64>,
    /// Processes and threads alive at once in the container (pids cgroup:
    /// counted per container, unlike `RLIMIT_NPROC`). A fork past it fails.
    pub pids: Option<u32>,
    /// `RLIMIT_NOFILE`.
    pub open_files: Option<u64>,
    /// `RLIMIT_FSIZE`: the largest file a process may write, in bytes.
    pub file_size: Option<u64>,
    /// Bytes a test run may add to its tree (a disk-backed volume): past
    /// it the container is killed ([`KilledBy::Written`]). No Docker option
    /// bounds a volume on this engine's storage, so a watchdog measures the
    /// volume from the host (`assay_exec::writes`). Test runs only.
    pub written: Option<u64>,
}

impl Default for Limits {
    /// Only a pids limit: a fork bomb must not reach the host.
    fn default() -> Self {
        Self {
            cpu_millis: None,
            memory: None,
            pids: Some(1024),
            open_files: None,
            file_size: None,
            written: None,
        }
    }
}

/// How to build an environment image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSpec {
    /// The image to start from, by tag or id; it must already be in the
    /// daemon (nothing is pulled): see `scripts/base-image.sh`.
    pub base: String,
    /// Relative path (below [`ENV_DIR`]) → content, written before setup.
    pub key_files: BTreeMap<String, Vec<u8>>,
    /// File name (in [`GUARD_DIR`]) → content: assay's own files for every
    /// run, root's and read-only.
    pub guard: BTreeMap<String, Vec<u8>>,
    /// Shell commands run in order as one `set -e` script in [`ENV_DIR`], as
    /// root, with the network.
    pub setup: Vec<String>,
    /// The setup's whole environment (`ASSAY_ENV` is added).
    pub env: BTreeMap<String, String>,
    /// Who runs tests in this image: [`TREE_DIR`] is created owned by it.
    pub user: RunUser,
    /// Absolute directories of the image a run may write besides its tree,
    /// `/tmp` and [`HOME_DIR`] (a foreign image's home, where its `ENV`
    /// points toolchain caches): each run gets a fresh anonymous volume
    /// there, copied from the image as the setup left it (owner and mode
    /// too: the setup gives them to [`ImageSpec::user`]), removed with
    /// the container, so no run sees what another wrote. Checked by
    /// [`writable_dir`]; carried as the image's `assay.writable` label.
    pub writable: Vec<String>,
    /// Wall-clock budget of the whole setup.
    pub timeout: Duration,
    /// Bytes of setup output kept in [`BuiltImage::setup_log`].
    pub log_cap: u64,
    pub limits: Limits,
}

/// A built (or reused) environment image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltImage {
    pub id: ImageId,
    /// blake3 of the spec's content (base image id, key files, setup, env,
    /// user); the image carries it as label `assay.spec`.
    pub spec_digest: String,
    /// An image with this digest was already in the daemon: nothing ran and
    /// the log is empty.
    pub reused: bool,
    /// The setup's output, stdout and stderr interleaved, at most `log_cap`.
    pub setup_log: Vec<u8>,
    /// Total bytes the setup wrote, kept or not.
    pub log_bytes: u64,
}

/// Why a setup did not produce an image (the `env_setup_failed` case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupFailure {
    /// Index into [`ImageSpec::setup`] of the command that failed, when known
    /// (a command that `exec`s or traps `EXIT` itself hides it).
    pub step: Option<usize>,
    pub command: Option<String>,
    /// `None` when the setup was killed on its timeout.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub oom_killed: bool,
    pub log: Vec<u8>,
    pub log_bytes: u64,
}

impl fmt::Display for SetupFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.step, &self.command) {
            (Some(step), Some(command)) => write!(f, "setup command {step} `{command}`")?,
            _ => f.write_str("the setup")?,
        }
        if self.timed_out {
            f.write_str(" timed out")
        } else if self.oom_killed {
            f.write_str(" ran out of memory")
        } else {
            match self.exit_code {
                Some(code) => write!(f, " exited with {code}"),
                None => f.write_str(" failed"),
            }
        }
    }
}

/// One test run in a fresh container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerRun {
    /// An image made by [`crate::Docker::build_image`] (or loaded from one's
    /// saved blob): its `assay.user` label says who runs.
    pub image: ImageId,
    /// Host directory given at [`TREE_DIR`], owned by the image's user:
    /// uploaded or bound, as [`ContainerRun::tree_mount`] says.
    pub tree: PathBuf,
    pub tree_mount: TreeMount,
    /// Host paths bound in besides the tree (an agent's tools, its prompt,
    /// the egress proxy's socket); none for a test run.
    pub binds: Vec<HostBind>,
    /// Run as `/bin/sh -c <command>` in [`TREE_DIR`].
    pub command: String,
    /// The command's whole environment: nothing of the host's or the image's.
    pub env: BTreeMap<String, String>,
    /// Wall-clock budget from start; past it the container is killed.
    pub timeout: Duration,
    /// stdout and stderr interleaved (created or truncated).
    pub log_path: PathBuf,
    /// Bytes kept in the log; the rest is drained and counted.
    pub log_cap: u64,
    /// A file of the tree to copy out after the run.
    pub report: Option<ReportRequest>,
    pub limits: Limits,
    /// Size of the `/tmp` tmpfs, in bytes.
    pub tmp_size: u64,
    /// Size of the [`HOME_DIR`] tmpfs, in bytes.
    pub home_size: u64,
    /// Files of the tree (relative paths) to fingerprint after the run, for
    /// tamper evidence: [`ContainerOutcome::watched`] says what each became.
    pub watch: Vec<PathBuf>,
    /// Files of the tree (relative paths) the run may read but not change:
    /// uploaded as root's with mode 0444, and every directory above them as
    /// root's with mode 1777 (sticky: the run user may create beside them,
    /// but not rename, replace or unlink root's entries). Paths that are
    /// missing, or that pass through or end in a symlink or anything but a
    /// regular file, are uploaded as they are.
    pub protect: Vec<PathBuf>,
}

/// Whether `dir` may be an [`ImageSpec::writable`] directory: absolute,
/// normalised (no `.`, `..` or empty component), no `:` or newline, not
/// the root, and neither under nor above assay's `/assay`, nor a kernel
/// or run-private file system (`/proc`, `/sys`, `/dev`, `/tmp`).
pub fn writable_dir(dir: &str) -> Result<(), DockerError> {
    let invalid = |why| {
        Err(DockerError::InvalidSpec {
            what: "writable directory",
            value: dir.to_owned(),
            why,
        })
    };
    let Some(rest) = dir.strip_prefix('/') else {
        return invalid("it must be an absolute path");
    };
    if rest.is_empty() {
        return invalid("it may not be the root");
    }
    if rest
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return invalid("it must be normalised: no empty, `.` or `..` component, no trailing `/`");
    }
    if dir.contains([':', '\n', ',']) {
        return invalid("it may hold no `:`, `,` or newline");
    }
    let top = rest.split('/').next().unwrap_or_default();
    if matches!(top, "assay" | "proc" | "sys" | "dev" | "tmp") {
        return invalid("it may not be under /assay, /proc, /sys, /dev or /tmp");
    }
    Ok(())
}

/// How a run's tree reaches its container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TreeMount {
    /// Uploaded into a fresh anonymous volume, removed with the container
    /// (a test run: symlinks travel as symlinks; sockets and devices are
    /// skipped; [`ContainerRun::protect`] holds).
    #[default]
    Upload,
    /// The host directory bound in place, made the image user's first (its
    /// entries `lchown`ed, no link followed), and read on the host after
    /// the run (an agent's workspace). [`ContainerRun::protect`] and
    /// [`ContainerRun::watch`] must be empty.
    Bind,
}

/// A host path bound into a run's container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostBind {
    pub host: PathBuf,
    /// Where the run sees it: a path under `/assay`.
    pub at: String,
    /// Writable binds are made the image user's first, as a bound tree is.
    pub writable: bool,
}

/// Which file to copy out of the tree, and how much of it to accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportRequest {
    /// Relative to the tree; no `..`, no absolute path.
    pub path: PathBuf,
    pub cap: u64,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerOutcome {
    /// The command's exit code; `None` when it was killed on the timeout.
    /// 137 is a SIGKILL (the memory limit, see `oom_killed`).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// A process of the container was killed by the kernel for going over
    /// [`Limits::memory`] (the command itself may have survived it).
    pub oom_killed: bool,
    /// The limit that ended the run, if one did.
    pub killed_by: Option<KilledBy>,
    /// From start until the container was seen to exit.
    pub duration: Duration,
    /// Total bytes written to stdout and stderr, kept or not.
    pub log_bytes: u64,
    /// `log_bytes > log_cap`: the log holds only the first `log_cap` bytes.
    pub log_truncated: bool,
    /// `None` when no report was asked for.
    pub report: Option<Report>,
    /// Each [`ContainerRun::watch`] path → blake3 of its content after the
    /// run; `None` when it is gone or no longer a regular file (a symlink,
    /// a directory).
    pub watched: BTreeMap<PathBuf, Option<[u8; 32]>>,
    /// The container's id, for the record: it no longer exists.
    pub container: String,
}

/// The limit that killed a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KilledBy {
    /// [`ContainerRun::timeout`].
    WallClock,
    /// [`Limits::memory`]: the command was OOM-killed.
    Memory,
    /// [`Limits::written`]: the tree grew past it (or could not be
    /// measured) and the container was killed, or it had ended by the time
    /// the tree was seen over it.
    Written,
}

/// The report file as found in the tree after the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Present(Vec<u8>),
    Missing,
    /// A symlink (at the path or on the way to it), a directory or another
    /// non-regular file: never followed or read.
    NotAFile,
    /// Larger than [`ReportRequest::cap`]; not read.
    TooLarge {
        size: u64,
    },
}
