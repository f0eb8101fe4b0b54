//! What the slurm executor's coordinator and worker exchange: the job file
//! the coordinator writes, the packs it names and the outcome the worker
//! writes back.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::slurm_pack as pack;
use super::{Launch, Ran, TestRun, Watched};
use crate::model::config::RunLimits;
use crate::model::config::{Confinement, ExecutorSetting, SandboxMode};
use crate::model::rules::limits::Limit;
use crate::run::attempt::relay::Route;
use crate::run::error::LaunchError;
use assay_engine::Digest;

/// What a worker is handed: one local run, as packs in the shared cache.
/// Its outcome goes back beside the job file (`ran.json`, `log`, `report`):
/// that directory is the run's scratch on the coordinator, whose log is
/// redacted before it enters the store.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct WorkerJob {
    pub(crate) sandbox: SandboxMode,
    pub(crate) limits: RunLimits,
    pub(crate) command: String,
    /// The staged tree, packed (`pack`), and its digest.
    pub(crate) tree: Pack,
    /// The environment: packed, to unpack once per node; or, unsandboxed
    /// (whose environments embed their absolute path), the shared directory.
    pub(crate) env: EnvSource,
    /// The node-local cache's root (`[env] slurm.node_cache`).
    pub(crate) node_cache: PathBuf,
    pub(crate) log_cap: u64,
    pub(crate) timeout_ms: u64,
    #[serde(default)]
    pub(crate) stall_grace_ms: Option<u64>,
    pub(crate) attempt: Option<u32>,
    pub(crate) protect: Vec<PathBuf>,
    pub(crate) report_file: Option<String>,
    pub(crate) watch: Vec<PathBuf>,
    pub(crate) staged: Watched,
    #[serde(default)]
    pub(crate) warm: Vec<(String, String)>,
    /// An agent's attempt: what it sees besides a test run's.
    #[serde(default)]
    pub(super) agent: Option<AgentJob>,
}

/// What an attempt on a node is handed besides a test run's job: its
/// variables, its inputs and tools as packs, the route to the egress proxy
/// on the coordinator (its relay's token: the job file is private to its
/// user, and the sandbox never sees it), and the bound its workspace is
/// read back under.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct AgentJob {
    pub(super) path_first: String,
    pub(super) env: std::collections::BTreeMap<String, String>,
    /// `/assay/in`, packed.
    pub(super) input: Pack,
    /// `/assay/agent`: the agent's tools, as an environment is.
    pub(super) tools: EnvSource,
    /// The proxy's listener on the coordinator; `None`: no endpoint.
    pub(super) route: Option<Route>,
    /// The apparent size of the workspace as prepared.
    pub(super) base_bytes: u64,
}

/// A file of the shared cache and the digest it must have.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Pack {
    pub(super) path: PathBuf,
    pub(super) digest: String,
}

impl Pack {
    /// `dir` packed into the tar file `path` ([`pack::pack`]).
    pub(super) fn of(dir: &Path, path: PathBuf) -> Result<Pack, LaunchError> {
        let digest = pack::pack(dir, &path)?;
        Ok(Pack {
            path,
            digest: digest.to_hex(),
        })
    }

    pub(super) fn digest(&self) -> Result<Digest, LaunchError> {
        self.digest.parse().map_err(|_| {
            LaunchError::Corrupt(format!("a pack's digest `{}` is not one", self.digest))
        })
    }
}

/// Where a step's environment comes from.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum EnvSource {
    /// A directory packed into the shared cache, unpacked once per node.
    Packed(Pack),
    /// A directory of the shared cache, as it is (unsandboxed runs).
    Shared(PathBuf),
    /// An image in the node's Docker daemon: the step's run is a container.
    Image(ImageJob),
}

/// A container step's image, by id, and the docker settings its
/// container is made with.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ImageJob {
    pub(super) id: String,
    pub(super) base_image: String,
    pub(super) cpu_millis: Option<u32>,
}

impl WorkerJob {
    /// The confinement a node runs this job under: its sandbox and limits
    /// on `executor`.
    pub(super) fn confinement(&self, executor: ExecutorSetting) -> Confinement {
        Confinement {
            sandbox: self.sandbox,
            limits: self.limits,
            executor,
        }
    }

    /// The job of a test run under `conf`: its tree and environment as
    /// packs of the shared cache, the rest of its launch as it is.
    pub(super) fn of(
        conf: &Confinement,
        test: &TestRun<'_>,
        tree: Pack,
        env: EnvSource,
        node_cache: &Path,
    ) -> WorkerJob {
        WorkerJob::of_launch(
            conf,
            &test.launch,
            test.staged.clone(),
            tree,
            env,
            node_cache,
        )
    }

    /// The job of a launch under `conf` (a test run's, with its staged
    /// files; an attempt's, whose agent is added after).
    pub(super) fn of_launch(
        conf: &Confinement,
        launch: &Launch<'_>,
        staged: Watched,
        tree: Pack,
        env: EnvSource,
        node_cache: &Path,
    ) -> WorkerJob {
        WorkerJob {
            sandbox: conf.sandbox,
            limits: conf.limits,
            command: launch.command.clone(),
            tree,
            env,
            node_cache: node_cache.to_owned(),
            log_cap: launch.log_cap,
            timeout_ms: launch.timeout.as_millis() as u64,
            stall_grace_ms: launch.stall_grace.map(|g| g.as_millis() as u64),
            attempt: launch.attempt,
            protect: launch.protect.clone(),
            report_file: launch.report_file.map(str::to_owned),
            watch: launch.watch.clone(),
            staged,
            warm: launch.warm.to_vec(),
            agent: None,
        }
    }
}

/// How a worker's run ended; the report's bytes are a file beside it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct WorkerOutcome {
    pub(crate) node: Option<String>,
    pub(crate) exit_code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) timed_out: bool,
    pub(crate) limit: Option<String>,
    pub(crate) duration_ms: u64,
    #[serde(default)]
    pub(crate) cpu_stalled_ms: Option<u64>,
    pub(crate) log_bytes: u64,
    pub(crate) log_truncated: bool,
    /// `Some(Ok(()))`: the report is `report` beside this file.
    pub(crate) report: Option<Result<(), String>>,
    pub(crate) changed: Vec<String>,
    /// An attempt's workspace after the run, packed beside this file
    /// (`workspace.tar`), unless refused unread (`workspace_refused`).
    #[serde(default)]
    pub(super) workspace: Option<Pack>,
    #[serde(default)]
    pub(crate) workspace_refused: Option<String>,
    /// An attempt's `/assay/out`, packed (`out.tar`), unless its apparent
    /// size is over what a transcript may be.
    #[serde(default)]
    pub(super) out: Option<Pack>,
}

impl WorkerOutcome {
    pub(super) fn into_ran(self, dir: &Path) -> Ran {
        let report = self
            .report
            .map(|r| r.and_then(|()| std::fs::read(dir.join("report")).map_err(|e| e.to_string())));
        Ran {
            exit_code: self.exit_code,
            signal: self.signal,
            timed_out: self.timed_out,
            limit: self.limit.as_deref().and_then(Limit::parse),
            duration: Duration::from_millis(self.duration_ms),
            cpu_stalled: self.cpu_stalled_ms.map(Duration::from_millis),
            log_bytes: self.log_bytes,
            log_truncated: self.log_truncated,
            report,
            changed: self.changed,
            node: self.node,
            retried: Vec::new(),
            lost: None,
            workspace_refused: self.workspace_refused,
        }
    }
}
