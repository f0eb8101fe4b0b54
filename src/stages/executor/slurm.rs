//! The slurm executor: the local executor's sandbox on the nodes of a Slurm
//! cluster. A build holds one allocation (`sbatch`, started on the first
//! run, cancelled at the end or on ctrl-c); every run is a job step in it
//! (`srun --jobid`), which runs `assay worker` on a node: the worker reads
//! the run's job file from the run's scratch directory, runs it exactly as
//! the local executor would (bubblewrap, limits, the protected files, the
//! import guard, assay's own timeout), and writes how it ended back beside
//! it. Steps, not jobs: a step in a running allocation starts in ~0.1 s,
//! a job waits for the scheduler.
//!
//! What a run sees is what it would see locally, so the slurm executor adds
//! nothing to a key: a run cached by a local build is a hit for a slurm
//! build and the other way round. Its record names the node it ran on.
//!
//! The cache directory must be on a filesystem the nodes see at the same
//! path (the trees are staged under its `tmp/`, environments are its
//! `envs/`), and the nodes must have the assay binary at the path the
//! coordinator runs it from. Environments are set up on the coordinator
//! (docs/executors.md).
//!
//! A step that ends without the worker's outcome (its node died, Slurm
//! cancelled or preempted it) is retried on a fresh copy of the tree, up to
//! [`ATTEMPTS`] times; then the run fails with why, never as a verdict.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use assay_engine::JobCtx;
use serde::{Deserialize, Serialize};

use super::{
    BoxFuture, Confinement, EnvHandle, Executor, ExecutorSetting, Launch, Presence, Ran, RunFuture,
    SandboxMode, Setup, TestRun, Watched, run_err,
};
use crate::pipeline::{EnvConfig, Pipeline};
use crate::stages::error::StageError;
use crate::stages::node::Made;
use crate::stages::records::EnvRecord;
use crate::stages::rules::limits::RunLimits;

/// Tries of a run whose step ended without an outcome.
pub(crate) const ATTEMPTS: u32 = 3;

/// The allocation's time limit when `[env] slurm.time` is not set.
const DEFAULT_TIME: &str = "1:00:00";

/// The slurm executor's settings: where its allocation goes. None of it
/// changes what a run sees, so none of it is keyed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Settings {
    pub(crate) partition: Option<String>,
    pub(crate) nodes: u32,
    pub(crate) time: String,
    pub(crate) account: Option<String>,
    pub(crate) qos: Option<String>,
    pub(crate) sbatch: Vec<String>,
}

/// `[env] slurm`, checked.
pub(crate) fn settings(pipeline: &Pipeline, cfg: &EnvConfig) -> Result<Settings, StageError> {
    let Some(table) = &cfg.slurm else {
        return Ok(Settings {
            nodes: 1,
            time: DEFAULT_TIME.into(),
            ..Settings::default()
        });
    };
    let c = table.get_ref();
    if c.nodes == Some(0) {
        return Err(pipeline
            .error_at(
                table.span(),
                "[env] slurm: `nodes` is 0",
                "this allocation",
                "leave `nodes` out for one node, or give how many nodes the build's allocation holds",
            )
            .into());
    }
    Ok(Settings {
        partition: c.partition.clone(),
        nodes: c.nodes.unwrap_or(1),
        time: c.time.clone().unwrap_or_else(|| DEFAULT_TIME.into()),
        account: c.account.clone(),
        qos: c.qos.clone(),
        sbatch: c.sbatch.clone(),
    })
}

/// The slurm executor under a confinement.
pub(crate) struct Slurm<'a> {
    pub(crate) conf: &'a Confinement,
    pub(crate) settings: &'a Settings,
}

impl Executor for Slurm<'_> {
    /// On the coordinator, as the local executor does, in the cache the
    /// nodes share.
    fn prepare<'a>(
        &'a self,
        setup: Setup<'a>,
        ctx: &'a JobCtx,
    ) -> BoxFuture<'a, Result<Made<EnvRecord>, String>> {
        Box::pin(super::local::prepare(self.conf, setup, ctx))
    }

    fn present(&self, record: &EnvRecord, cache_dir: &Path) -> Presence {
        super::local::Local { conf: self.conf }.present(record, cache_dir)
    }

    fn run<'a>(&'a self, test: TestRun<'a>) -> RunFuture<'a> {
        Box::pin(async move { run_on_cluster(self, test).await.map_err(|e| run_err(&e)) })
    }

    fn shares_env(&self) -> bool {
        true
    }

    fn env_is_artifact(&self) -> bool {
        false
    }

    fn start(&self, _rt: &tokio::runtime::Runtime) -> Result<(), StageError> {
        let mut sinfo = std::process::Command::new("sinfo");
        sinfo.args(["-h", "-o", "%P %a"]);
        let out = sinfo.output().map_err(|e| {
            StageError::sandbox(
                format!("slurm: `sinfo` cannot be run: {e}"),
                "the slurm executor needs Slurm's client commands (sinfo, sbatch, srun, scancel) on PATH and a reachable controller (SLURM_CONF); or build with `--executor local`",
            )
        })?;
        if !out.status.success() {
            return Err(StageError::sandbox(
                format!(
                    "slurm: the cluster does not answer (`sinfo` failed: {})",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
                "check the controller with `sinfo` and `SLURM_CONF`; or build with `--executor local`",
            ));
        }
        if let Some(want) = &self.settings.partition {
            let listed = String::from_utf8_lossy(&out.stdout);
            let found = listed
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .any(|p| p.trim_end_matches('*') == want);
            if !found {
                return Err(StageError::sandbox(
                    format!(
                        "slurm: no partition `{want}` (sinfo lists: {})",
                        listed.trim()
                    ),
                    "set `[env] slurm.partition` to one of the partitions `sinfo` lists, or leave it out for the default one",
                ));
            }
        }
        Ok(())
    }

    fn finished(&self) {
        cancel_allocations();
    }

    fn interrupted(&self) {
        cancel_allocations();
    }
}

/// A run on the cluster: its job file written, a step run, the outcome
/// read back; retried on a fresh copy of the tree when a step ends without
/// one.
async fn run_on_cluster(exec: &Slurm<'_>, test: TestRun<'_>) -> Result<Ran, String> {
    let launch = &test.launch;
    let tree = launch.tree.ok_or("a test run needs its tree")?;
    let env = launch.env.host_dir()?.to_owned();
    let job = WorkerJob {
        sandbox: exec.conf.sandbox,
        limits: exec.conf.limits,
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
    };
    let dir = launch.scratch.join("slurm");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let job_path = dir.join("job.json");
    let bytes = serde_json::to_vec(&job).map_err(|e| e.to_string())?;
    std::fs::write(&job_path, bytes).map_err(|e| e.to_string())?;
    let pristine = launch.scratch.join("tree.pristine");
    copy_tree(tree, &pristine).await?;
    let mut failures = Vec::new();
    let mut failed_on: Option<(String, usize)> = None;
    for attempt in 1..=ATTEMPTS {
        let alloc = allocation(exec.settings).await?;
        if attempt > 1 {
            let _ = std::fs::remove_dir_all(tree);
            copy_tree(&pristine, tree).await?;
        }
        let out_path = dir.join("ran.json");
        let _ = std::fs::remove_file(&out_path);
        let avoid = failed_on
            .as_ref()
            .filter(|(id, _)| *id == alloc.id)
            .map(|(_, node)| *node);
        let slot = alloc.take(avoid);
        let step = step(
            &alloc.id,
            alloc.nodes[slot.node].as_str(),
            &job_path,
            launch.timeout,
        )
        .await;
        failed_on = Some((alloc.id.clone(), slot.node));
        drop(slot);
        match std::fs::read(&out_path) {
            Ok(bytes) => {
                let done: WorkerOutcome = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("slurm: the worker's outcome cannot be read: {e}"))?;
                return Ok(done.into_ran(&dir));
            }
            Err(_) => {
                failures.push(format!(
                    "attempt {attempt}: {}",
                    step.err()
                        .unwrap_or_else(|| "the worker wrote no outcome".into())
                ));
                // An allocation that ended (its time, a scancel, its last
                // node) is replaced for the next try.
                if !alloc.running().await {
                    retire(&alloc);
                }
            }
        }
    }
    Err(format!(
        "slurm: the run's step ended without an outcome {ATTEMPTS} times ({})",
        failures.join("; ")
    ))
}

/// The job steps' allocation: one per build, made on first use.
static ALLOCATION: tokio::sync::Mutex<Option<std::sync::Arc<Allocation>>> =
    tokio::sync::Mutex::const_new(None);

/// A running allocation and how many of assay's steps each of its nodes
/// runs now. Each step goes to the node running fewest (so runs spread over
/// the nodes even when they come one at a time); Slurm places nothing: the
/// nodes are assay's for the allocation's life.
struct Allocation {
    id: String,
    nodes: Vec<String>,
    busy: Mutex<Vec<u32>>,
    /// Where the search for the least busy node starts: turns among ties.
    turn: std::sync::atomic::AtomicUsize,
}

/// A node's turn, given back when dropped.
struct Slot<'a> {
    alloc: &'a Allocation,
    node: usize,
}

impl Allocation {
    /// Whether Slurm still runs it.
    async fn running(&self) -> bool {
        slurm_out("squeue", &["-h", "-j", &self.id, "-o", "%T"])
            .await
            .is_ok_and(|state| state.trim() == "RUNNING")
    }

    /// The node running fewest steps (not `avoid`, the one a failed try
    /// ran on, when there is another).
    fn take(&self, avoid: Option<usize>) -> Slot<'_> {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let n = busy.len();
        let start = self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let node = (0..n)
            .map(|i| (start + i) % n)
            .filter(|&i| Some(i) != avoid || n == 1)
            .min_by_key(|&i| busy[i])
            .unwrap_or(0);
        busy[node] += 1;
        Slot { alloc: self, node }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut busy = self.alloc.busy.lock().unwrap_or_else(|p| p.into_inner());
        busy[self.node] -= 1;
    }
}

/// Every allocation this process submitted (cancelled at the end).
static SUBMITTED: Mutex<Vec<String>> = Mutex::new(Vec::new());

async fn allocation(settings: &Settings) -> Result<std::sync::Arc<Allocation>, String> {
    let mut current = ALLOCATION.lock().await;
    if let Some(alloc) = current.as_ref() {
        return Ok(alloc.clone());
    }
    let alloc = std::sync::Arc::new(allocate(settings).await?);
    *current = Some(alloc.clone());
    Ok(alloc)
}

/// Forgets an allocation that no longer runs (the next run submits another).
fn retire(alloc: &Allocation) {
    if let Ok(mut current) = ALLOCATION.try_lock()
        && current.as_ref().is_some_and(|a| a.id == alloc.id)
    {
        *current = None;
    }
}

/// Submits the allocation and waits until it runs.
async fn allocate(settings: &Settings) -> Result<Allocation, String> {
    let mut sbatch = tokio::process::Command::new("sbatch");
    sbatch.args([
        "--parsable",
        "--job-name",
        &format!("assay-{}", std::process::id()),
        // As many as there are, up to `nodes`: a replacement allocation
        // after a node died starts on the nodes left.
        "--nodes",
        &format!("1-{}", settings.nodes),
        "--time",
        &settings.time,
        "--output",
        "/dev/null",
        // A node that fails takes its steps with it, not the allocation:
        // they are retried on the others.
        "--no-kill",
    ]);
    for (flag, value) in [
        ("--partition", &settings.partition),
        ("--account", &settings.account),
        ("--qos", &settings.qos),
    ] {
        if let Some(v) = value {
            sbatch.args([flag, v]);
        }
    }
    sbatch.args(&settings.sbatch);
    // The allocation only holds the nodes: its steps do the work.
    sbatch.args(["--wrap", "exec sleep infinity"]);
    let out = sbatch
        .output()
        .await
        .map_err(|e| format!("slurm: sbatch: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "slurm: sbatch refused the allocation: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let id = String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    SUBMITTED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(id.clone());
    loop {
        let state = tokio::process::Command::new("squeue")
            .args(["-h", "-j", &id, "-o", "%T"])
            .output()
            .await
            .map_err(|e| format!("slurm: squeue: {e}"))?;
        match String::from_utf8_lossy(&state.stdout).trim() {
            "RUNNING" => break,
            "PENDING" | "CONFIGURING" => {}
            other => {
                return Err(format!(
                    "slurm: the allocation {id} is {other:?}, not running"
                ));
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let nodes = slurm_out("squeue", &["-h", "-j", &id, "-o", "%N"]).await?;
    let hosts = slurm_out("scontrol", &["show", "hostnames", nodes.trim()]).await?;
    let nodes: Vec<String> = hosts.split_whitespace().map(str::to_owned).collect();
    if nodes.is_empty() {
        return Err(format!("slurm: the allocation {id} holds no node"));
    }
    Ok(Allocation {
        id,
        busy: Mutex::new(vec![0; nodes.len()]),
        turn: Default::default(),
        nodes,
    })
}

/// A Slurm command's stdout; `Err` when it fails.
async fn slurm_out(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = tokio::process::Command::new(cmd)
        .args(args)
        .output()
        .await
        .map_err(|e| format!("slurm: {cmd}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "slurm: {cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `scancel` of every allocation this process submitted.
fn cancel_allocations() {
    let ids = std::mem::take(&mut *SUBMITTED.lock().unwrap_or_else(|p| p.into_inner()));
    if !ids.is_empty() {
        let _ = std::process::Command::new("scancel")
            .args(&ids)
            .stderr(Stdio::null())
            .status();
    }
}

/// One job step: `assay worker JOB` on a node of the allocation. `Err`:
/// what srun said when it failed.
async fn step(alloc: &str, node: &str, job: &Path, timeout: Duration) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // Slurm's limit is a backstop in whole minutes: the run's own timeout is
    // the worker's.
    let minutes = timeout.as_secs().div_ceil(60) + 2;
    let out = tokio::process::Command::new("srun")
        .args([
            "--jobid",
            alloc,
            "--nodes=1",
            "--ntasks=1",
            "--nodelist",
            node,
            "--exact",
            "--quiet",
            "--kill-on-bad-exit=1",
            "--job-name=assay-run",
            "--time",
            &minutes.to_string(),
        ])
        .arg(exe)
        .arg("worker")
        .arg(job)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("srun: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "srun {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

async fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    let out = tokio::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .output()
        .await
        .map_err(|e| format!("cp: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "copying the tree: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// What a worker is handed: one local run, in paths the nodes share.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WorkerJob {
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

/// How a worker's run ended; the report's bytes are a file beside it.
#[derive(Debug, Serialize, Deserialize)]
struct WorkerOutcome {
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

const LIMITS: [assay_exec::LimitHit; 5] = [
    assay_exec::LimitHit::Time,
    assay_exec::LimitHit::Memory,
    assay_exec::LimitHit::Processes,
    assay_exec::LimitHit::FileSize,
    assay_exec::LimitHit::Written,
];

impl WorkerOutcome {
    fn into_ran(self, dir: &Path) -> Ran {
        let report = self
            .report
            .map(|r| r.and_then(|()| std::fs::read(dir.join("report")).map_err(|e| e.to_string())));
        Ran {
            exit_code: self.exit_code,
            signal: self.signal,
            timed_out: self.timed_out,
            limit: self
                .limit
                .and_then(|l| LIMITS.into_iter().find(|h| h.as_str() == l)),
            duration: Duration::from_millis(self.duration_ms),
            log_bytes: self.log_bytes,
            log_truncated: self.log_truncated,
            report,
            changed: self.changed,
            node: self.node,
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
