//! Executors: where an environment is prepared and where the code under test
//! runs. An [`Executor`] owns an environment's whole life — it prepares it
//! (setup into a directory or an image, recorded as an [`EnvRecord`]), says
//! whether a stored one is still there, runs a staged tree in it with the
//! run's limits and hands back the report, says whether the runs of one
//! environment share mutable state (so a serial environment's runs take
//! turns), and starts and cleans up for a build. The nodes never ask which
//! executor they have: `env` prepares through it, `run` and a grade's
//! reruns run through it.
//!
//! Every process that runs task or graded code is built by an executor, so
//! no run path can forget the sandbox (docs/security.md): [`local`] runs a
//! process group on this machine under bubblewrap, [`docker`] a fresh
//! locked-down container of the environment's image, [`slurm`] the local
//! sandbox on a node of a Slurm cluster, as a job step.
//!
//! The executor, the sandbox and the limits are part of a run's key
//! ([`Confinement`]): they change what the code under test can see and do.
//! The local executor adds nothing to the key (a local run's key is the
//! run's inputs alone), nor does slurm, whose runs see what a local
//! run sees.
//!
//! **Adding an executor** (docs/stages.md): one module here with its typed
//! settings (checked from `[env]` by its `settings`) and an `impl Executor`,
//! plus its line in [`ExecutorSetting`] and the two matches below it
//! ([`ExecutorSetting::parse`], [`Confinement::executor`]).

pub(crate) mod agent;
pub(crate) mod daemon;
pub(crate) mod docker;
pub(crate) mod local;
mod parking;
pub(crate) mod scratch;
pub(crate) mod slurm;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use assay_engine::JobCtx;
use serde::Serialize;

use crate::model::config::ExecutorKind;
use crate::model::records::EnvRecord;
use crate::model::rules::limits::RunLimits;
use crate::pipeline::{EnvConfig, Pipeline};
use crate::run::Made;
use crate::run::error::{NodeError, StageError};
use crate::run::redact::RedactConfig;

pub(crate) use local::SandboxMode;
pub(crate) use parking::Parking;

/// `[env] executor`, checked: which executor, with its settings. The one
/// list of executors: a new one is a line here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ExecutorSetting {
    /// This machine, under the [`SandboxMode`].
    #[default]
    Local,
    /// An image per environment, a fresh locked-down container per run.
    Docker(docker::Settings),
    /// The local sandbox on the nodes of a Slurm cluster, a job step per run.
    Slurm(slurm::Settings),
}

impl ExecutorSetting {
    /// `[env] executor` and the keys of the executor it names, checked. Each
    /// executor reads its own keys and ignores the others' (so `build
    /// --executor local` works on a docker pipeline).
    /// `build --executor` replaces the name for one build.
    pub(crate) fn parse(pipeline: &Pipeline, cfg: &EnvConfig) -> Result<Self, StageError> {
        let kind = match (pipeline.settings.executor_override, &cfg.executor) {
            (Some(kind), _) => kind,
            (None, Some(written)) => ExecutorKind::parse(written.get_ref()).ok_or_else(|| {
                pipeline.error_at(
                    written.span(),
                    format!("unknown executor `{}`", written.get_ref()),
                    "here",
                    "use `local` (the default: bubblewrap on this machine), `docker` or `slurm`",
                )
            })?,
            (None, None) => ExecutorKind::Local,
        };
        match kind {
            ExecutorKind::Local => Ok(ExecutorSetting::Local),
            ExecutorKind::Docker => docker::settings(pipeline, cfg).map(ExecutorSetting::Docker),
            ExecutorKind::Slurm => slurm::settings(pipeline, cfg).map(ExecutorSetting::Slurm),
        }
    }

    /// Which executor it sets.
    pub(crate) fn kind(&self) -> ExecutorKind {
        match self {
            ExecutorSetting::Local => ExecutorKind::Local,
            ExecutorSetting::Docker(_) => ExecutorKind::Docker,
            ExecutorSetting::Slurm(_) => ExecutorKind::Slurm,
        }
    }

    /// Whether a run under it is keyed as a local run: it sees what a
    /// local run sees (local, and slurm's local sandbox on a node).
    pub(crate) fn keyed_as_local(&self) -> bool {
        matches!(self, ExecutorSetting::Local | ExecutorSetting::Slurm(_))
    }
}

/// The confinement of a run: part of its key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Confinement {
    /// The local executor's sandbox (`bwrap` elsewhere: unused there).
    pub(crate) sandbox: SandboxMode,
    pub(crate) limits: RunLimits,
    /// Left out of the key when local: a local key is what it always was.
    #[serde(skip_serializing_if = "ExecutorSetting::keyed_as_local")]
    pub(crate) executor: ExecutorSetting,
}

impl Default for Confinement {
    fn default() -> Self {
        Confinement {
            sandbox: SandboxMode::Bwrap,
            limits: RunLimits::default(),
            executor: ExecutorSetting::Local,
        }
    }
}

/// The executors of a process, built once when it starts (a build, a
/// Slurm worker, an exported verifier) and handed to every node that
/// launches a process. Each keeps its own state here — bubblewrap as
/// probed, the daemon's connection and the images it held, the cluster's
/// allocation, the tmpfs scratch's sweep — so no launch reaches a
/// process-wide static, and two builds in one process share nothing.
#[derive(Default)]
pub(crate) struct Executors {
    local: local::Probe,
    daemon: daemon::Daemon,
    slurm: slurm::Cluster,
    scratch: scratch::Sweep,
    /// Deployments an app's deployment layer left serving for its probes.
    parking: parking::Parking,
    /// The variables of assay's own environment that hold secrets (the
    /// agents' and judges' keys, `[redact] env`): no process an executor
    /// starts outside a sandbox on another machine inherits them.
    withheld: Vec<String>,
}

impl Executors {
    /// The executors of a build whose secrets are in `withheld` (variable
    /// names).
    pub(crate) fn withholding(withheld: Vec<String>) -> Executors {
        Executors {
            withheld,
            ..Executors::default()
        }
    }

    /// The deployments parked between an app's layers.
    pub(crate) fn parking(&self) -> &parking::Parking {
        &self.parking
    }

    /// The executor that runs under `conf`.
    pub(crate) fn of<'a>(&'a self, conf: &'a Confinement) -> Box<dyn Executor + 'a> {
        let local = local::Local {
            conf,
            probe: &self.local,
        };
        match &conf.executor {
            ExecutorSetting::Local => Box::new(local),
            ExecutorSetting::Docker(settings) => Box::new(docker::Docker {
                conf,
                settings,
                daemon: &self.daemon,
            }),
            ExecutorSetting::Slurm(settings) => Box::new(slurm::Slurm {
                local,
                settings,
                cluster: &self.slurm,
                withheld: &self.withheld,
            }),
        }
    }

    /// bubblewrap, as the local sandbox found it.
    pub(crate) fn bwrap(&self) -> Result<assay_exec::Bwrap, String> {
        self.local.bwrap()
    }

    /// The Docker daemon: what Harbor tasks' containers are run through,
    /// the connection the docker executor uses.
    pub(crate) fn daemon(&self) -> &daemon::Daemon {
        &self.daemon
    }

    /// A fresh scratch directory for a run under `conf` that may write
    /// `write` bytes into its tree: anywhere ([`scratch::run_dir`]) unless
    /// the executor's nodes read it, then in the cache.
    pub(crate) fn scratch(
        &self,
        conf: &Confinement,
        cache_dir: &Path,
    ) -> std::io::Result<tempfile::TempDir> {
        if self.of(conf).scratch_anywhere() {
            scratch::run_dir(&self.scratch, cache_dir, conf.limits.write)
        } else {
            scratch::cache_dir(cache_dir)
        }
    }

    /// Before a build: starts every executor its environments use (each
    /// setting once). The first that fails fails the build.
    pub(crate) fn start(
        &self,
        in_use: &[Confinement],
        rt: &tokio::runtime::Runtime,
    ) -> Result<(), StageError> {
        in_use.iter().try_for_each(|conf| self.of(conf).start(rt))
    }

    /// After a build: each executor it used releases what it held.
    pub(crate) fn finished(&self, in_use: &[Confinement]) {
        self.parking.end_all();
        for conf in in_use {
            self.of(conf).finished();
        }
    }

    /// After an interrupted build: each executor it used removes what it
    /// started.
    pub(crate) fn interrupted(&self, in_use: &[Confinement]) {
        self.parking.end_all();
        for conf in in_use {
            self.of(conf).interrupted();
        }
    }
}

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
    fn sandbox(&self) -> &'static str;

    /// Whether a run's scratch directory may be on this machine alone
    /// (a tmpfs, [`scratch::run_dir`]) rather than in the cache, which
    /// other machines may read.
    fn scratch_anywhere(&self) -> bool {
        true
    }

    /// Before a build that uses it: connect, clean up after killed builds,
    /// check what it needs. Fails the build at once, with what to do.
    fn start(&self, _rt: &tokio::runtime::Runtime) -> Result<(), StageError> {
        Ok(())
    }

    /// After a build that ran to its end: release what it held (an
    /// allocation).
    fn finished(&self) {}

    /// After an interrupted build (its runtime is gone): remove what this
    /// process started outside its own process tree.
    fn interrupted(&self) {}
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
fn guard_env(env: &mut BTreeMap<String, String>, dir: &str, hidden: &[PathBuf]) {
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
fn run_err(e: &dyn std::fmt::Display) -> NodeError {
    NodeError::infra(format!("run: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(json: &str) -> EnvRecord {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn an_env_record_names_its_directory_under_the_cache_or_its_image() {
        let cache = Path::new("/cache");
        let local = record(r#"{"dir":"envs/ab12","ok":true,"exit_code":0,"setup_log":""}"#);
        assert_eq!(
            EnvHandle::of(&local, cache),
            EnvHandle::HostDir(PathBuf::from("/cache/envs/ab12"))
        );
        let docker = record(
            r#"{"dir":"","ok":true,"exit_code":0,"setup_log":"","executor":"docker","image":"sha256:0123"}"#,
        );
        let image = EnvHandle::of(&docker, cache);
        assert_eq!(image, EnvHandle::Image("sha256:0123".into()));
        assert!(image.host_dir().is_err());
        assert!(EnvHandle::of(&local, cache).image().is_err());
    }

    /// A local confinement's key: its sandbox and limits, nothing of the executor.
    #[derive(Serialize)]
    struct LocalOnly {
        sandbox: SandboxMode,
        limits: RunLimits,
    }

    #[test]
    fn a_local_confinement_keys_as_it_always_did() {
        for sandbox in [SandboxMode::Bwrap, SandboxMode::None] {
            let conf = Confinement {
                sandbox,
                ..Confinement::default()
            };
            let old = LocalOnly {
                sandbox,
                limits: conf.limits,
            };
            assert_eq!(
                assay_engine::encode_params(&conf),
                assay_engine::encode_params(&old)
            );
            assert_eq!(
                serde_json::to_string(&conf).unwrap_or_default(),
                serde_json::to_string(&old).unwrap_or_default()
            );
        }
    }

    /// The docker confinement as it was keyed before the executor seam
    /// (variant 1 of the executor enum, its settings with the image layout
    /// and the guard's digest).
    #[derive(Serialize)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum ExecutorBefore {
        Local,
        Docker {
            base_image: String,
            cpu_millis: Option<u32>,
            layout: u32,
            guard: &'static str,
        },
    }

    #[derive(Serialize)]
    struct DockerBefore {
        sandbox: SandboxMode,
        limits: RunLimits,
        executor: ExecutorBefore,
    }

    #[test]
    fn the_docker_executor_and_its_settings_enter_the_key_as_they_always_did() {
        let docker = |base: &str, cpu_millis| Confinement {
            executor: ExecutorSetting::Docker(docker::Settings {
                base_image: base.into(),
                cpu_millis,
            }),
            ..Confinement::default()
        };
        let before = DockerBefore {
            sandbox: SandboxMode::Bwrap,
            limits: RunLimits::default(),
            executor: ExecutorBefore::Docker {
                base_image: "python:3.12".into(),
                cpu_millis: Some(1500),
                layout: assay_docker::LAYOUT,
                guard: crate::run::guard::digest(),
            },
        };
        assert_eq!(
            assay_engine::encode_params(&docker("python:3.12", Some(1500))),
            assay_engine::encode_params(&before)
        );
        assert_eq!(
            serde_json::to_string(&docker("python:3.12", Some(1500))).unwrap_or_default(),
            serde_json::to_string(&before).unwrap_or_default()
        );
        let keys: Vec<Vec<u8>> = [
            Confinement::default(),
            docker("assay-base:bookworm", None),
            docker("assay-base:bookworm", Some(1500)),
            docker("python:3.12", None),
        ]
        .iter()
        .map(assay_engine::encode_params)
        .collect();
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        let executors = Executors::default();
        assert_eq!(executors.of(&docker("x", None)).sandbox(), "docker");
        assert_eq!(executors.of(&Confinement::default()).sandbox(), "bwrap");
    }

    #[test]
    fn only_the_unsandboxed_local_executor_shares_an_environment_between_runs() {
        let unsandboxed = Confinement {
            sandbox: local::SandboxMode::None,
            ..Confinement::default()
        };
        let executors = Executors::default();
        assert!(executors.of(&unsandboxed).shares_env());
        // Under bubblewrap a run sees the environment read-only.
        let local = Confinement::default();
        assert!(!executors.of(&local).shares_env());
        let docker = Confinement {
            executor: ExecutorSetting::Docker(docker::Settings {
                base_image: "assay-base:bookworm".into(),
                cpu_millis: None,
            }),
            ..Confinement::default()
        };
        assert!(!executors.of(&local).env_is_artifact());
        assert!(!executors.of(&docker).shares_env());
        assert!(executors.of(&docker).env_is_artifact());
    }

    /// What an executor knows (a connection, a probe, an allocation, a
    /// sweep) lives in [`Executors`], never in a process-wide static: no
    /// production file declares a static holding state.
    #[test]
    fn no_file_keeps_state_in_a_static() {
        let mut files = Vec::new();
        let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(dir).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|x| x == "rs") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 20, "{files:?}");
        let stateful = [
            "Mutex", "RwLock", "OnceLock", "OnceCell", "Once", "Atomic", "Cell",
        ];
        let mut found = Vec::new();
        for path in &files {
            for (n, line) in std::fs::read_to_string(path).unwrap().lines().enumerate() {
                let code = line.trim_start();
                let code = code
                    .strip_prefix("pub(crate) ")
                    .or_else(|| code.strip_prefix("pub(super) "))
                    .unwrap_or(code);
                if code.starts_with("static ") && stateful.iter().any(|word| code.contains(word)) {
                    found.push(format!("{}:{}: {line}", path.display(), n + 1));
                }
            }
        }
        assert!(found.is_empty(), "state in statics:\n{}", found.join("\n"));
    }
}
