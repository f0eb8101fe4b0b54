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

mod allocation;
mod worker;

use std::ffi::OsStr;
use std::path::Path;

use assay_engine::JobCtx;
use serde::Serialize;

use super::{BoxFuture, Executor, Presence, Ran, RunFuture, Setup, TestRun, run_err};
use crate::pipeline::{EnvConfig, Pipeline};
use crate::stages::error::StageError;
use crate::stages::node::Made;
use crate::stages::records::EnvRecord;
use allocation::{allocation, cancel_allocations, retire, step};
pub(crate) use worker::work;

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
    /// What a node runs, and how environments are prepared and kept: the
    /// local executor's, whose answers this one gives where the cluster
    /// changes nothing.
    pub(crate) local: super::local::Local<'a>,
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
        self.local.prepare(setup, ctx)
    }

    fn present(&self, record: &EnvRecord, cache_dir: &Path) -> Presence {
        self.local.present(record, cache_dir)
    }

    fn run<'a>(&'a self, test: TestRun<'a>) -> RunFuture<'a> {
        Box::pin(async move { run_on_cluster(self, test).await.map_err(|e| run_err(&e)) })
    }

    /// One directory of the shared cache, as locally.
    fn shares_env(&self) -> bool {
        self.local.shares_env()
    }

    fn env_is_artifact(&self) -> bool {
        self.local.env_is_artifact()
    }

    /// The local sandbox, on the node.
    fn sandbox(&self) -> &'static str {
        self.local.sandbox()
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
    let job = worker::WorkerJob::of(exec.local.conf, &test)?;
    let dir = launch.scratch.join("slurm");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let job_path = dir.join("job.json");
    let bytes = serde_json::to_vec(&job).map_err(|e| e.to_string())?;
    std::fs::write(&job_path, bytes).map_err(|e| e.to_string())?;
    let pristine = launch.scratch.join("tree.pristine");
    copy_tree(tree, &pristine).await?;
    let mut failures = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let alloc = allocation(exec.settings).await?;
        if attempt > 1 {
            let _ = std::fs::remove_dir_all(tree);
            copy_tree(&pristine, tree).await?;
        }
        let out_path = dir.join("ran.json");
        let _ = std::fs::remove_file(&out_path);
        let slot = alloc.take();
        let step = step(
            &alloc.id,
            alloc.nodes[slot.node].as_str(),
            &job_path,
            launch.timeout,
        )
        .await;
        let read = std::fs::read(&out_path);
        if read.is_err() {
            slot.shun();
        }
        drop(slot);
        match read {
            Ok(bytes) => {
                let done: worker::WorkerOutcome = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("slurm: the worker's outcome cannot be read: {e}"))?;
                let mut ran = done.into_ran(&dir);
                ran.retried = failures;
                return Ok(ran);
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

/// A copy of a staged tree (its pristine copy for retries, or back).
async fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    let args = [
        OsStr::new("-a"),
        OsStr::new("--reflink=auto"),
        from.as_os_str(),
        to.as_os_str(),
    ];
    output("cp", args).await.map(drop)
}

/// The stdout of `cmd ARGS` (a Slurm client, `cp`); `Err` with its stderr
/// when it fails.
async fn output<A: AsRef<OsStr>>(
    cmd: &str,
    args: impl IntoIterator<Item = A>,
) -> Result<String, String> {
    let args: Vec<A> = args.into_iter().collect();
    let out = tokio::process::Command::new(cmd)
        .args(&args)
        .output()
        .await
        .map_err(|e| format!("slurm: {cmd}: {e}"))?;
    if !out.status.success() {
        let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
        return Err(format!(
            "slurm: {cmd} {}: {}",
            shown.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
