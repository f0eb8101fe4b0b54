//! The worker's side of a run: the job file the coordinator writes, the
//! outcome the worker writes back, and `assay worker` itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::super::{
    Confinement, EnvHandle, ExecutorSetting, Launch, Ran, SandboxMode, TestRun, Watched,
};
use crate::stages::rules::limits::{Limit, RunLimits};

/// What a worker is handed: one local run, in paths the nodes share.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct WorkerJob {
    sandbox: SandboxMode,
    limits: RunLimits,
    command: String,
    tree: PathBuf,
    env: PathBuf,
    scratch: PathBuf,
    log_path: PathBuf,
    log_cap: u64,
    timeout_ms: u64,
    attempt: Option<u32>,
    protect: Vec<PathBuf>,
    report_file: Option<String>,
    watch: Vec<PathBuf>,
    staged: Watched,
}

impl WorkerJob {
    /// The job of a test run under `conf`: its launch, in paths the nodes
    /// share.
    pub(super) fn of(conf: &Confinement, test: &TestRun<'_>) -> Result<WorkerJob, String> {
        let launch = &test.launch;
        let tree = launch.tree.ok_or("a test run needs its tree")?;
        let env = launch.env.host_dir()?.to_owned();
        Ok(WorkerJob {
            sandbox: conf.sandbox,
            limits: conf.limits,
            command: launch.command.clone(),
            tree: tree.to_owned(),
            env,
            scratch: launch.scratch.to_owned(),
            log_path: launch.log_path.clone(),
            log_cap: launch.log_cap,
            timeout_ms: launch.timeout.as_millis() as u64,
            attempt: launch.attempt,
            protect: launch.protect.clone(),
            report_file: launch.report_file.map(str::to_owned),
            watch: launch.watch.clone(),
            staged: test.staged.clone(),
        })
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
    log_bytes: u64,
    log_truncated: bool,
    /// `Some(Ok(()))`: the report is `report` beside this file.
    report: Option<Result<(), String>>,
    changed: Vec<String>,
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
            log_bytes: self.log_bytes,
            log_truncated: self.log_truncated,
            report,
            changed: self.changed,
            node: self.node,
            retried: Vec::new(),
        }
    }
}

/// `assay worker JOB`: runs one job file on this node with the local
/// executor and writes its outcome beside it (`ran.json`, `report`).
pub(crate) fn work(job_path: &Path) -> Result<(), String> {
    let bytes = std::fs::read(job_path).map_err(|e| format!("{}: {e}", job_path.display()))?;
    let job: WorkerJob = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    let dir = job_path.parent().ok_or("a job file has a directory")?;
    let conf = Confinement {
        sandbox: job.sandbox,
        limits: job.limits,
        executor: ExecutorSetting::Local,
    };
    let env = EnvHandle::HostDir(job.env.clone());
    let test = TestRun {
        launch: Launch {
            command: job.command.clone(),
            tree: Some(&job.tree),
            env: &env,
            setup: false,
            scratch: &job.scratch,
            log_path: job.log_path.clone(),
            log_cap: job.log_cap,
            timeout: Duration::from_millis(job.timeout_ms),
            attempt: job.attempt,
            protect: job.protect.clone(),
            report_file: job.report_file.as_deref(),
            watch: job.watch.clone(),
        },
        staged: job.staged.clone(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let ran = rt
        .block_on(conf.executor().run(test))
        .map_err(|e| e.to_string())?;
    let report = match ran.report {
        None => None,
        Some(Ok(bytes)) => {
            std::fs::write(dir.join("report"), bytes).map_err(|e| e.to_string())?;
            Some(Ok(()))
        }
        Some(Err(why)) => Some(Err(why)),
    };
    let outcome = WorkerOutcome {
        node: std::env::var("SLURMD_NODENAME").ok(),
        exit_code: ran.exit_code,
        signal: ran.signal,
        timed_out: ran.timed_out,
        limit: ran.limit.map(|l| l.as_str().to_owned()),
        duration_ms: ran.duration.as_millis() as u64,
        log_bytes: ran.log_bytes,
        log_truncated: ran.log_truncated,
        report,
        changed: ran.changed,
    };
    // Written whole, then renamed: the coordinator never reads half of it.
    let tmp = dir.join("ran.json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_vec(&outcome).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, dir.join("ran.json")).map_err(|e| e.to_string())
}
