//! The build's allocation and its job steps: one allocation (`sbatch`)
//! made on first use and replaced when it stops running, each run a step
//! (`srun --jobid`) on the allocation's least busy node.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use crate::model::config::SlurmSettings;
use crate::run::error::LaunchError;

/// The cluster as the executors hold it: the job steps' allocation (one per
/// build, made on first use), every allocation submitted (cancelled at the
/// end), and the packing of environments (one at a time).
#[derive(Default)]
pub(crate) struct Cluster {
    allocation: tokio::sync::Mutex<Option<std::sync::Arc<Allocation>>>,
    submitted: Mutex<Vec<String>>,
    pub(super) packing: tokio::sync::Mutex<()>,
}

/// A running allocation and how many of assay's steps each of its nodes
/// runs now. Each step goes to the node running fewest (so runs spread over
/// the nodes even when they come one at a time); Slurm places nothing: the
/// nodes are assay's for the allocation's life.
pub(super) struct Allocation {
    pub(super) id: String,
    pub(super) nodes: Vec<String>,
    busy: Mutex<Vec<u32>>,
    /// The nodes a step failed on.
    shunned: Mutex<Vec<bool>>,
    /// Where the search for the least busy node starts: turns among ties.
    turn: std::sync::atomic::AtomicUsize,
}

/// A node's turn, given back when dropped.
pub(super) struct Slot<'a> {
    alloc: &'a Allocation,
    pub(super) node: usize,
}

impl Allocation {
    /// Whether Slurm still runs it.
    pub(super) async fn running(&self) -> bool {
        output("squeue", ["-h", "-j", &self.id, "-o", "%T"])
            .await
            .is_ok_and(|state| state.trim() == "RUNNING")
    }

    /// The node running fewest steps, among those no step failed on while
    /// there are any.
    pub(super) fn take(&self) -> Slot<'_> {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let shunned = self.shunned.lock().unwrap_or_else(|p| p.into_inner());
        let n = busy.len();
        let start = self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let all_shunned = shunned.iter().all(|&s| s);
        let node = (0..n)
            .map(|i| (start + i) % n)
            .filter(|&i| all_shunned || !shunned[i])
            .min_by_key(|&i| busy[i])
            .unwrap_or(0);
        busy[node] += 1;
        Slot { alloc: self, node }
    }
}

impl Slot<'_> {
    /// A step on this node ended without an outcome: the node gets no more
    /// steps of this allocation (while another node is left).
    pub(super) fn shun(&self) {
        self.alloc.shunned.lock().unwrap_or_else(|p| p.into_inner())[self.node] = true;
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut busy = self.alloc.busy.lock().unwrap_or_else(|p| p.into_inner());
        busy[self.node] -= 1;
    }
}

impl Cluster {
    /// The build's allocation, submitted when there is none.
    pub(super) async fn allocation(
        &self,
        settings: &SlurmSettings,
        withheld: &[String],
    ) -> Result<std::sync::Arc<Allocation>, LaunchError> {
        let mut current = self.allocation.lock().await;
        if let Some(alloc) = current.as_ref() {
            return Ok(alloc.clone());
        }
        let alloc = std::sync::Arc::new(allocate(settings, &self.submitted, withheld).await?);
        *current = Some(alloc.clone());
        Ok(alloc)
    }

    /// Forgets an allocation that no longer runs (the next run submits
    /// another).
    pub(super) fn retire(&self, alloc: &Allocation) {
        if let Ok(mut current) = self.allocation.try_lock()
            && current.as_ref().is_some_and(|a| a.id == alloc.id)
        {
            *current = None;
        }
    }

    /// `scancel` of every allocation submitted, started without the
    /// `withheld` variables of assay's environment.
    pub(super) fn cancel_allocations(&self, withheld: &[String]) {
        let ids = std::mem::take(&mut *self.submitted.lock().unwrap_or_else(|p| p.into_inner()));
        if !ids.is_empty() {
            let mut scancel = std::process::Command::new("scancel");
            for var in withheld {
                scancel.env_remove(var);
            }
            let _ = scancel.args(&ids).stderr(Stdio::null()).status();
        }
    }
}

/// Submits the allocation and waits until it runs.
async fn allocate(
    settings: &SlurmSettings,
    submitted: &Mutex<Vec<String>>,
    withheld: &[String],
) -> Result<Allocation, LaunchError> {
    let mut args: Vec<String> = [
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
    ]
    .map(str::to_owned)
    .into();
    for (flag, value) in [
        ("--partition", &settings.partition),
        ("--account", &settings.account),
        ("--qos", &settings.qos),
    ] {
        if let Some(v) = value {
            args.extend([flag.to_owned(), v.clone()]);
        }
    }
    args.extend(settings.sbatch.iter().cloned());
    // The allocation only holds the nodes: its steps do the work.
    args.extend(["--wrap".to_owned(), "exec sleep infinity".to_owned()]);
    let answer = output_withholding("sbatch", &args, withheld).await?;
    let id = answer
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    submitted
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(id.clone());
    loop {
        let state = output("squeue", ["-h", "-j", &id, "-o", "%T"]).await?;
        match state.trim() {
            "RUNNING" => break,
            "PENDING" | "CONFIGURING" => {}
            other => {
                return Err(LaunchError::Slurm(format!(
                    "slurm: the allocation {id} is {other:?}, not running"
                )));
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let nodes = output("squeue", ["-h", "-j", &id, "-o", "%N"]).await?;
    let hosts = output("scontrol", ["show", "hostnames", nodes.trim()]).await?;
    let nodes: Vec<String> = hosts.split_whitespace().map(str::to_owned).collect();
    if nodes.is_empty() {
        return Err(LaunchError::Slurm(format!(
            "slurm: the allocation {id} holds no node"
        )));
    }
    Ok(Allocation {
        id,
        busy: Mutex::new(vec![0; nodes.len()]),
        shunned: Mutex::new(vec![false; nodes.len()]),
        turn: Default::default(),
        nodes,
    })
}

/// One job step: `assay worker JOB` on a node of the allocation. `Err`:
/// what srun said when it failed.
pub(super) async fn step(
    alloc: &str,
    node: &str,
    job: &Path,
    timeout: Duration,
    withheld: &[String],
) -> Result<(), LaunchError> {
    let exe = std::env::current_exe().map_err(LaunchError::io("assay's own path"))?;
    // Slurm's limit is a backstop in whole minutes: the run's own timeout is
    // the worker's.
    let minutes = timeout.as_secs().div_ceil(60) + 2;
    let mut srun = tokio::process::Command::new("srun");
    // srun hands the step the environment it was started with.
    for var in withheld {
        srun.env_remove(var);
    }
    let out = srun
        .args([
            "--jobid",
            alloc,
            "--nodes=1",
            "--ntasks=1",
            "--nodelist",
            node,
            "--exact",
            // The allocation's batch step (its `sleep`) holds a CPU of
            // the first node, and Slurm frees a finished step's CPUs a
            // moment late: without this, steps queue behind both (two
            // streams of 1 s steps on one node took 10.4 s, with it 5.3 s).
            // How many steps a node runs is assay's choice (`take`).
            "--overlap",
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
        .map_err(LaunchError::io("srun"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(LaunchError::Slurm(format!(
            "srun {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// The stdout of `cmd ARGS` (a Slurm client); `Err` with its stderr
/// when it fails.
pub(super) async fn output<A: AsRef<OsStr>>(
    cmd: &str,
    args: impl IntoIterator<Item = A>,
) -> Result<String, LaunchError> {
    output_withholding(cmd, args, &[]).await
}

/// [`output`], started without the `withheld` variables of assay's
/// environment (`sbatch` hands its job the environment it was started
/// with).
pub(super) async fn output_withholding<A: AsRef<OsStr>>(
    cmd: &str,
    args: impl IntoIterator<Item = A>,
    withheld: &[String],
) -> Result<String, LaunchError> {
    let args: Vec<A> = args.into_iter().collect();
    let mut command = tokio::process::Command::new(cmd);
    for var in withheld {
        command.env_remove(var);
    }
    let out = command
        .args(&args)
        .output()
        .await
        .map_err(LaunchError::io(format_args!("slurm: {cmd}")))?;
    if !out.status.success() {
        let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
        return Err(LaunchError::Slurm(format!(
            "slurm: {cmd} {}: {}",
            shown.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
