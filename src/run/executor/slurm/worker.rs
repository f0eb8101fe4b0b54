//! The worker's side of a run: the job file the coordinator writes, the
//! outcome the worker writes back, and `assay worker` itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::super::{
    Confinement, EnvHandle, ExecutorSetting, Launch, Ran, SandboxMode, TestRun, Watched,
};
use super::pack;
use crate::model::rules::limits::{Limit, RunLimits};
use crate::run::attempt::relay::Route;
use assay_engine::Digest;

/// What a worker is handed: one local run, as packs in the shared cache.
/// Its outcome goes back beside the job file (`ran.json`, `log`, `report`):
/// that directory is the run's scratch on the coordinator, whose log is
/// redacted before it enters the store.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct WorkerJob {
    sandbox: SandboxMode,
    limits: RunLimits,
    command: String,
    /// The staged tree, packed (`pack`), and its digest.
    tree: Pack,
    /// The environment: packed, to unpack once per node; or, unsandboxed
    /// (whose environments embed their absolute path), the shared directory.
    env: EnvSource,
    /// The node-local cache's root (`[env] slurm.node_cache`).
    node_cache: PathBuf,
    log_cap: u64,
    timeout_ms: u64,
    #[serde(default)]
    stall_grace_ms: Option<u64>,
    attempt: Option<u32>,
    protect: Vec<PathBuf>,
    report_file: Option<String>,
    watch: Vec<PathBuf>,
    staged: Watched,
    #[serde(default)]
    warm: Vec<(String, String)>,
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
    pub(super) fn of(dir: &Path, path: PathBuf) -> Result<Pack, String> {
        let digest = pack::pack(dir, &path)?;
        Ok(Pack {
            path,
            digest: digest.to_hex(),
        })
    }

    pub(super) fn digest(&self) -> Result<Digest, String> {
        self.digest
            .parse()
            .map_err(|_| format!("a pack's digest `{}` is not one", self.digest))
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) enum EnvSource {
    Packed(Pack),
    Shared(PathBuf),
}

impl WorkerJob {
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
    node: Option<String>,
    exit_code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    limit: Option<String>,
    duration_ms: u64,
    #[serde(default)]
    cpu_stalled_ms: Option<u64>,
    log_bytes: u64,
    log_truncated: bool,
    /// `Some(Ok(()))`: the report is `report` beside this file.
    report: Option<Result<(), String>>,
    changed: Vec<String>,
    /// An attempt's workspace after the run, packed beside this file
    /// (`workspace.tar`), unless refused unread (`workspace_refused`).
    #[serde(default)]
    pub(super) workspace: Option<Pack>,
    #[serde(default)]
    workspace_refused: Option<String>,
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

/// `assay worker JOB`: runs one job file on this node with the local
/// executor, in a private directory of the node-local cache: the tree
/// unpacked from its pack, the environment from this node's copy (unpacked
/// on first use). Writes the outcome beside the job file (`ran.json`,
/// `log`, `report`).
pub(crate) fn work(job_path: &Path) -> Result<(), String> {
    let bytes = std::fs::read(job_path).map_err(|e| format!("{}: {e}", job_path.display()))?;
    let job: WorkerJob = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    let dir = job_path.parent().ok_or("a job file has a directory")?;
    let node_name = node_name();
    let node = pack::node_dir(&job.node_cache, &node_name)?;
    let runs = node.join("runs");
    std::fs::create_dir_all(&runs).map_err(|e| format!("{}: {e}", runs.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(&runs)
        .map_err(|e| format!("{}: {e}", runs.display()))?;
    let tree = scratch.path().join("tree");
    pack::unpack(&job.tree.path, &job.tree.digest()?, &tree)?;
    let env_dir = match &job.env {
        EnvSource::Packed(p) => pack::node_env(&node, &p.path, &p.digest()?)?,
        EnvSource::Shared(path) => path.clone(),
    };
    let conf = Confinement {
        sandbox: job.sandbox,
        limits: job.limits,
        executor: ExecutorSetting::Local,
    };
    let env = EnvHandle::HostDir(env_dir);
    let log_path = scratch.path().join("log");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    if let Some(agent) = &job.agent {
        let outcome = rt.block_on(attempt(
            &job,
            agent,
            &conf,
            &env,
            &node,
            scratch.path(),
            dir,
        ))?;
        std::fs::copy(&log_path, dir.join("log")).map_err(|e| format!("the run's log: {e}"))?;
        return write_outcome(
            dir,
            &WorkerOutcome {
                node: Some(node_name),
                ..outcome
            },
        );
    }
    let test = TestRun {
        launch: Launch {
            command: job.command.clone(),
            tree: Some(&tree),
            env: &env,
            setup: false,
            env_at: None,
            scratch: scratch.path(),
            log_path: log_path.clone(),
            log_cap: job.log_cap,
            timeout: Duration::from_millis(job.timeout_ms),
            stall_grace: job.stall_grace_ms.map(Duration::from_millis),
            attempt: job.attempt,
            protect: job.protect.clone(),
            report_file: job.report_file.as_deref(),
            watch: job.watch.clone(),
            warm: &job.warm,
            agent: None,
        },
        staged: job.staged.clone(),
        ctx: None,
    };
    let ran = rt
        .block_on(super::super::Executors::default().of(&conf).run(test))
        .map_err(|e| e.to_string())?;
    std::fs::copy(&log_path, dir.join("log")).map_err(|e| format!("the run's log: {e}"))?;
    let report = match ran.report {
        None => None,
        Some(Ok(bytes)) => {
            std::fs::write(dir.join("report"), bytes).map_err(|e| e.to_string())?;
            Some(Ok(()))
        }
        Some(Err(why)) => Some(Err(why)),
    };
    let outcome = WorkerOutcome {
        node: Some(node_name),
        exit_code: ran.exit_code,
        signal: ran.signal,
        timed_out: ran.timed_out,
        limit: ran.limit.map(|l| l.as_str().to_owned()),
        duration_ms: ran.duration.as_millis() as u64,
        cpu_stalled_ms: ran.cpu_stalled.map(|d| d.as_millis() as u64),
        log_bytes: ran.log_bytes,
        log_truncated: ran.log_truncated,
        report,
        changed: ran.changed,
        workspace: None,
        workspace_refused: None,
        out: None,
    };
    write_outcome(dir, &outcome)
}

/// The outcome beside the job file, written whole, then renamed: the
/// coordinator never reads half of it.
fn write_outcome(dir: &Path, outcome: &WorkerOutcome) -> Result<(), String> {
    let tmp = dir.join("ran.json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_vec(outcome).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, dir.join("ran.json")).map_err(|e| e.to_string())
}

/// An agent's attempt on this node, as the local executor runs one: the
/// workspace (the job's tree) in `scratch`, its inputs and tools unpacked,
/// the proxy's socket a relay to the coordinator's listener; then the
/// workspace, checked against its bound before it is read, and
/// `/assay/out` packed beside the job file.
async fn attempt(
    job: &WorkerJob,
    agent: &AgentJob,
    conf: &Confinement,
    env: &EnvHandle,
    node: &Path,
    scratch: &Path,
    dir: &Path,
) -> Result<WorkerOutcome, String> {
    use crate::run::attempt::{relay::Relay, workspace};
    let (tree, input, out) = (
        scratch.join("tree"),
        scratch.join("in"),
        scratch.join("out"),
    );
    pack::unpack(&agent.input.path, &agent.input.digest()?, &input)?;
    std::fs::create_dir(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let tools = match &agent.tools {
        EnvSource::Packed(p) => pack::node_env(node, &p.path, &p.digest()?)?,
        EnvSource::Shared(path) => path.clone(),
    };
    let relay = agent.route.clone().map(Relay::start).transpose()?;
    let mounts = super::super::agent::Mounts {
        input,
        out: out.clone(),
        tools,
        socket: relay.as_ref().map(Relay::socket),
    };
    let launch = super::super::agent::launch(
        job.command.clone(),
        &tree,
        env,
        (scratch.join("log"), job.log_cap),
        Duration::from_millis(job.timeout_ms),
        super::super::Agent {
            path_first: agent.path_first.clone(),
            env: agent.env.clone(),
            binds: mounts.binds()?,
        },
    );
    let ran = super::super::local::attempt(conf, &super::super::local::Probe::default(), launch)
        .await
        .map_err(|e| e.to_string())?;
    drop(relay);
    let (limits, base) = (job.limits, agent.base_bytes);
    let dir = dir.to_owned();
    let (workspace, workspace_refused, out) = tokio::task::spawn_blocking(move || {
        let refused =
            workspace::bounded(&tree, base, limits.write, workspace::READ_BACK_LIMIT).err();
        let packed = |from: &Path, name: &str| Pack::of(from, dir.join(name));
        let ws = match refused {
            Some(_) => None,
            None => Some(packed(&tree, "workspace.tar")?),
        };
        // The transcript is read only up to its cap: more is not packed.
        let out_bytes =
            workspace::apparent_size(&out, std::time::Instant::now() + workspace::READ_BACK_LIMIT);
        let out = match out_bytes {
            Ok(n) if n <= crate::run::attempt::TRANSCRIPT_CAP => Some(packed(&out, "out.tar")?),
            _ => None,
        };
        Ok::<_, String>((ws, refused, out))
    })
    .await
    .map_err(|e| e.to_string())??;
    Ok(WorkerOutcome {
        node: None,
        exit_code: ran.exit_code,
        signal: ran.signal,
        timed_out: ran.timed_out,
        limit: ran.limit.map(|l| l.as_str().to_owned()),
        duration_ms: ran.duration.as_millis() as u64,
        cpu_stalled_ms: None,
        log_bytes: ran.log_bytes,
        log_truncated: ran.log_truncated,
        report: None,
        changed: Vec::new(),
        workspace,
        workspace_refused,
        out,
    })
}

/// The Slurm node this worker runs on (`SLURMD_NODENAME`), else the host's
/// name: a path component either way.
fn node_name() -> String {
    let name = std::env::var("SLURMD_NODENAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .unwrap_or_default();
    let name: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    match name.as_str() {
        "" | "." | ".." => "node".to_owned(),
        _ => name,
    }
}
