//! The seam every executor is behind: the [`Executor`] trait and what an
//! executor is given (a setup, a launch, a test run) and hands back (a
//! prepared environment's handle, what a run left).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use assay_engine::JobCtx;

use crate::model::config::{Confinement, ExecutorKind, Sandbox};
use crate::model::records::EnvRecord;
use crate::run::Made;
use crate::run::error::{NodeError, StageError};
use crate::run::redact::RedactConfig;

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
pub(crate) type RunFuture<'a> = BoxFuture<'a, Result<Ran, NodeError>>;

/// What prepares environments and runs the code under test in them.
pub(crate) trait Executor: Send + Sync {
    /// Prepares the environment of the `env` node of `ctx`: setup into a
    /// directory or an image. A setup that fails is a record (`ok: false`,
    /// with its log), not an error: its runs report `env_setup_failed`.
    fn prepare<'a>(
        &'a self,
        setup: Setup<'a>,
        ctx: &'a JobCtx,
    ) -> BoxFuture<'a, Result<Made<EnvRecord>, NodeError>>;

    /// Whether the environment a stored record names is still there, so the
    /// record is a cache hit.
    fn present(&self, record: &EnvRecord, cache_dir: &Path) -> Presence;

    /// One test run over a staged tree in a prepared environment.
    fn run<'a>(&'a self, test: TestRun<'a>) -> RunFuture<'a>;

    /// An agent's attempt: its command over its workspace (the launch's
    /// tree, read back on this machine after the run) in the task's
    /// environment, with what [`Launch::agent`] adds. Only how it ended
    /// comes back: no report, no watched files. `ctx` is the attempt's job
    /// (the cache's blobs, its notes).
    fn attempt<'a>(&'a self, launch: Launch<'a>, ctx: &'a JobCtx) -> RunFuture<'a>;

    /// Whether the runs of one environment share its mutable state (a
    /// directory every run writes), so that a serial environment's runs
    /// must take turns.
    fn shares_env(&self) -> bool;

    /// Whether an environment is an artifact of its own (an image) that a
    /// released task names, rather than a directory of this cache.
    fn env_is_artifact(&self) -> bool;

    /// The sandbox of its runs, as records say it (`bwrap`, `none`,
    /// `docker`).
    fn sandbox(&self) -> Sandbox;

    /// Whether a run's scratch directory may be on this machine alone
    /// (a tmpfs, [`scratch::run_dir`]) rather than in the cache, which
    /// other machines may read.
    fn scratch_anywhere(&self) -> bool {
        true
    }

    /// Before a build that uses it: connect, clean up after killed builds,
    /// check what it needs. Fails the build at once, with what to do; else
    /// what the user should know (what it cleaned up), for the CLI to print.
    fn start(&self, _rt: &tokio::runtime::Runtime) -> Result<Vec<String>, StageError> {
        Ok(Vec::new())
    }

    /// After a build that ran to its end, on its runtime: release what it
    /// held (an allocation, containers created ahead) and finish what it
    /// left under way (removals). What the user should know.
    fn finished(&self, _rt: &tokio::runtime::Runtime) -> Vec<String> {
        Vec::new()
    }

    /// After an interrupted build (its runtime is gone): remove what this
    /// process started outside its own process tree. What the user should
    /// know, for the CLI to print.
    fn interrupted(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Whether a stored environment is still there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Presence {
    Present,
    /// Gone: the record is not a hit; [`Setup::lost`] hands it back to
    /// `prepare`, which may restore it rather than set up anew.
    Gone,
    /// Not known (no build started: nothing was checked); the run will say.
    Unknown,
}

/// What an environment is prepared from.
pub(crate) struct Setup<'a> {
    /// The maintainer's setup commands, run as one `set -e` script.
    pub(crate) commands: &'a [String],
    /// The key files' bytes, written into the environment before setup runs.
    pub(crate) files: &'a [(String, Vec<u8>)],
    pub(crate) timeout: Duration,
    pub(crate) redact: &'a RedactConfig,
    /// `[env] export`: save the environment into the cache as a blob.
    pub(crate) export: bool,
    /// A stored record turned down as [`Presence::Gone`].
    pub(crate) lost: Option<EnvRecord>,
    /// Where the environment is set up and later seen, when not at
    /// `/assay/env`.
    pub(crate) at: Option<&'a str>,
    /// `[env] warm`: the caches setup warms in the environment.
    pub(crate) warm: &'a [(String, String)],
    /// Directories of a foreign image its runs may write (Docker only:
    /// [`assay_docker::ImageSpec::writable`]); none for a maintainer's
    /// environment.
    pub(crate) writable: &'a [String],
}

/// Bytes of setup output kept as the setup log.
pub(crate) const SETUP_LOG_CAP: u64 = 16 << 20;

/// An environment's record, with the blobs it names: its setup log and
/// saved image.
pub(crate) fn made(record: EnvRecord) -> Made<EnvRecord> {
    let attachments = std::iter::once(&record.setup_log)
        .chain(&record.export)
        .filter_map(|d| d.parse::<assay_engine::Digest>().ok())
        .collect();
    Made {
        record,
        attachments,
    }
}

/// A prepared environment, as an executor reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EnvHandle {
    /// A directory on this machine: the local executor's environments.
    HostDir(PathBuf),
    /// An image id (`sha256:…`): the docker executor's.
    Image(String),
}

impl EnvHandle {
    /// The environment an env record names: its image when it has one, else
    /// its directory (recorded relative to the cache directory).
    pub(crate) fn of(record: &EnvRecord, cache_dir: &Path) -> EnvHandle {
        match &record.image {
            Some(id) => EnvHandle::Image(id.clone()),
            None => EnvHandle::HostDir(cache_dir.join(&record.dir)),
        }
    }

    /// Its directory; an image here is assay's mistake.
    pub(crate) fn host_dir(&self) -> Result<&Path, NodeError> {
        match self {
            EnvHandle::HostDir(dir) => Ok(dir),
            EnvHandle::Image(id) => Err(NodeError::internal(format!(
                "a local process needs an environment directory, not the image {id}"
            ))),
        }
    }

    /// Its image; a directory here is assay's mistake.
    pub(crate) fn image(&self) -> Result<&str, NodeError> {
        match self {
            EnvHandle::Image(id) => Ok(id),
            EnvHandle::HostDir(dir) => Err(NodeError::internal(format!(
                "a docker run needs its environment's image, not the directory {}",
                dir.display()
            ))),
        }
    }
}

/// What one process of a run is given.
pub(crate) struct Launch<'a> {
    pub(crate) command: String,
    /// The fresh copy of the staged tree (`None` for environment setup).
    pub(crate) tree: Option<&'a Path>,
    /// The environment: a directory for a local process (for setup, the
    /// one being prepared), an image for a container.
    pub(crate) env: &'a EnvHandle,
    /// Environment setup only: it writes its environment and may reach the
    /// network to install packages.
    pub(crate) setup: bool,
    /// Where a sandboxed process sees the environment when not at
    /// `/assay/env` (an agent's tools, at `/assay/agent`).
    pub(crate) env_at: Option<&'a str>,
    /// A private scratch directory of the run, for `HOME` when unsandboxed.
    pub(crate) scratch: &'a Path,
    pub(crate) log_path: PathBuf,
    pub(crate) log_cap: u64,
    pub(crate) timeout: Duration,
    /// Test runs: measure the time the run waited for a CPU the machine
    /// gave to other work, and let the timeout move by up to this much of
    /// it (`assay_exec::RunSpec::stall_grace`): for a graded run, what its
    /// task's timeout leaves of the environment's; zero for screening.
    /// `None` (setup, an agent's attempt): plain wall-clock, unmeasured.
    pub(crate) stall_grace: Option<Duration>,
    /// `ASSAY_ATTEMPT`: the repeat index of a screening run (the maintainer's
    /// code, whose flaky tests may read it). `None` for graded runs: graded
    /// code must not tell a first run from a rerun or a check.
    pub(crate) attempt: Option<u32>,
    /// Tree-relative paths the run may read but not change: the hidden
    /// test patch's files (written, replaced, renamed or unlinked). Empty
    /// for screening and setup, which run no agent code.
    pub(crate) protect: Vec<PathBuf>,
    /// The report file to read back from the tree after the run.
    pub(crate) report_file: Option<&'a str>,
    /// Tree files to fingerprint after the run (tamper evidence).
    pub(crate) watch: Vec<PathBuf>,
    /// `[env] warm`: (variable, directory in the environment). Setup sees
    /// each variable at its directory; a run at a copy of its own.
    pub(crate) warm: &'a [(String, String)],
    /// An agent's attempt: what it sees besides a test run's (`None` for
    /// everything else).
    pub(crate) agent: Option<Agent>,
}

/// What an agent's attempt sees besides what a test run sees: its tools
/// first on `PATH`, its variables, and its binds (the tools, the prompt, the
/// transcript's directory, the forwarder and the proxy's socket). No import
/// guard: nothing is graded in an attempt.
pub(crate) struct Agent {
    /// Put first on `PATH`.
    pub(crate) path_first: String,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) binds: Vec<assay_exec::Bind>,
}

/// The watched (test) files of the staged tree: path -> blake3 of the bytes
/// the run was given (canaries included).
pub(crate) type Watched = Vec<(String, [u8; 32])>;

/// One test run, as an executor is handed it.
pub(crate) struct TestRun<'a> {
    /// The process; its `tree` is the staged copy.
    pub(crate) launch: Launch<'a>,
    pub(crate) staged: Watched,
    /// The run's job: the cache's blobs (where the slurm executor packs
    /// environments for its nodes) and its notes (where a run is: queued,
    /// running on a node). `None` on a worker, which runs locally.
    pub(crate) ctx: Option<&'a JobCtx>,
}

/// How a run ended, whichever executor ran it.
#[derive(Default)]
pub(crate) struct Ran {
    pub(crate) exit_code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) timed_out: bool,
    pub(crate) limit: Option<crate::model::rules::limits::Limit>,
    pub(crate) duration: Duration,
    /// How long the run waited for a CPU the machine gave to other work,
    /// where that was measured (`Launch::stall_grace` set, and a group to
    /// read it from).
    pub(crate) cpu_stalled: Option<Duration>,
    pub(crate) log_bytes: u64,
    pub(crate) log_truncated: bool,
    /// The report file's bytes, or why it was not read; `None` when the
    /// report is the log.
    pub(crate) report: Option<Result<Vec<u8>, String>>,
    /// The watched files whose bytes differ from the staged ones, sorted.
    pub(crate) changed: Vec<String>,
    /// The cluster node it ran on, when not this machine.
    pub(crate) node: Option<String>,
    /// Why each earlier try of it ended without an outcome (a node that
    /// died, a step Slurm cancelled), in order; empty when the first try
    /// ran it.
    pub(crate) retried: Vec<String>,
    /// The run never ran to an outcome (a cluster lost every try of it):
    /// why. Nothing else of it holds; its grade is the infrastructure's,
    /// and the next build runs it again.
    pub(crate) lost: Option<String>,
    /// An attempt whose workspace was refused where it ran, unread (its
    /// apparent size over the bound, docs/agents.md): why. Nothing of it
    /// came back.
    pub(crate) workspace_refused: Option<String>,
}

impl Ran {
    /// A run the executor lost after trying: no outcome, only why.
    pub(crate) fn lost(why: String, retried: Vec<String>) -> Ran {
        Ran {
            exit_code: None,
            signal: None,
            timed_out: false,
            limit: None,
            duration: Duration::ZERO,
            cpu_stalled: None,
            log_bytes: 0,
            log_truncated: false,
            report: None,
            changed: Vec::new(),
            node: None,
            retried,
            lost: Some(why),
            workspace_refused: None,
        }
    }
}

/// The executors a build's environments use.
#[derive(Debug, Default)]
pub(crate) struct InUse {
    /// One confinement per executor setting: what a build starts (and
    /// cleans up after).
    pub(crate) confinements: Vec<Confinement>,
    /// Environment node name -> the executor its runs go to.
    pub(crate) env_nodes: std::collections::BTreeMap<String, ExecutorKind>,
}

/// What every process of a run sees besides its paths: built from nothing.
/// A graded run's environment says nothing that tells a first run from a
/// rerun or a check: graded code that could tell them apart could behave
/// differently in each.
pub(super) fn base_env(path: &str, attempt: Option<u32>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("PATH".to_owned(), path.to_owned());
    env.insert("LANG".to_owned(), "C.UTF-8".to_owned());
    env.insert("PYTHONDONTWRITEBYTECODE".to_owned(), "1".to_owned());
    env.insert("PYTHONHASHSEED".to_owned(), "0".to_owned());
    if let Some(n) = attempt {
        env.insert("ASSAY_ATTEMPT".to_owned(), n.to_string());
    }
    env
}

/// `PYTHONPATH` of a test run: the import guard's directory alone
/// (`crate::run::guard`). A test command that sets its own `PYTHONPATH` must
/// keep this one in it (`PYTHONPATH=src:$PYTHONPATH`).
/// With it, `ASSAY_HIDDEN`: the hidden test files of a graded run (their
/// tree-relative paths, one a line; a path with a newline is left out),
/// whose compiled code the guard's audit hook holds to their bytes. Read
/// once, by the guard, before the tree's code runs.
pub(super) fn guard_env(env: &mut BTreeMap<String, String>, dir: &str, hidden: &[PathBuf]) {
    env.insert("PYTHONPATH".to_owned(), dir.to_owned());
    env.insert(
        "ASSAY_AUDIT_FD".to_owned(),
        crate::run::guard::AUDIT_FD.to_string(),
    );
    let hidden: Vec<&str> = hidden
        .iter()
        .filter_map(|p| p.to_str())
        .filter(|p| !p.contains('\n'))
        .collect();
    if !hidden.is_empty() {
        env.insert("ASSAY_HIDDEN".to_owned(), hidden.join("\n"));
    }
}

/// A run that could not be started or read back: the machine's failure
/// (the daemon, bubblewrap, a process), not the tree's.
pub(super) fn run_err(e: &dyn std::fmt::Display) -> NodeError {
    NodeError::infra(format!("run: {e}"))
}
