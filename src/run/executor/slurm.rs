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
//! Data path: the cache directory must be on a filesystem the nodes see at
//! the same path; its SQLite index is only ever opened by the coordinator.
//! Nothing reaches a worker but through files of the cache, each checked
//! against its digest ([`slurm_pack`](super::slurm_pack)): the run's staged tree, packed into one
//! tar file in the run's scratch directory, and its environment, packed
//! once into the cache's blobs and unpacked once per node into the
//! node-local cache (`[env] slurm.node_cache`), keyed by the pack's digest.
//! The worker runs in a private directory of the node-local cache and
//! writes its outcome, log and report back into the run's scratch
//! directory, where the coordinator redacts the log before it is stored.
//! Environments are set up on the coordinator; the nodes need the assay
//! binary at the path the coordinator runs it from, and bubblewrap
//! (docs/executors.md).
//!
//! A task image's runs (an instance's, [`OnNode::Container`]) are steps
//! too: the worker runs the docker executor's container of the image on
//! its node's daemon, which must hold the image the coordinator made.
//!
//! A step that ends without the worker's outcome (its node died, Slurm
//! cancelled or preempted it) is tried again from the same pack, up to
//! [`ATTEMPTS`] times; then it is recorded as lost (`RunRecord.lost`): its
//! grade is `ineligible`, the infrastructure's fault, and the next build
//! runs it again (a lost run is never a cache hit).

use std::path::Path;

use assay_engine::JobCtx;

pub(crate) use super::slurm_allocation::Cluster;
use super::slurm_allocation::step;
use super::slurm_job::{EnvSource, ImageJob, Pack};
use super::{BoxFuture, EnvHandle, Executor, Launch, Presence, Ran, RunFuture, Setup, TestRun};
use crate::model::config::{Confinement, Sandbox, SandboxMode, SlurmSettings};
use crate::model::records::EnvRecord;
use crate::run::Made;
use crate::run::attempt::relay;
use crate::run::error::LaunchError;
use crate::run::error::{NodeError, StageError};

/// Tries of a run whose step ended without an outcome.
pub(crate) const ATTEMPTS: u32 = 3;

/// The slurm executor under a confinement.
pub(crate) struct Slurm<'a> {
    /// What a node runs, and how environments are prepared and kept: the
    /// executor whose answers this one gives where the cluster changes
    /// nothing.
    pub(crate) node: OnNode<'a>,
    pub(crate) settings: &'a SlurmSettings,
    pub(crate) cluster: &'a Cluster,
    /// The variables no step inherits from assay's environment (`srun`
    /// hands a step the whole environment it was started with).
    pub(crate) withheld: &'a [String],
}

/// What a step runs on its node.
pub(crate) enum OnNode<'a> {
    /// The local executor's sandbox (`executor = "slurm"`).
    Local(super::local::Local<'a>),
    /// A fresh container of the environment's image, on the node's own
    /// Docker daemon (a task image's runs under `executor = "slurm"`):
    /// the image is made on the coordinator and must be in every node's
    /// daemon under the same id.
    Container(super::docker::Docker<'a>),
}

impl OnNode<'_> {
    fn executor(&self) -> &dyn Executor {
        match self {
            OnNode::Local(local) => local,
            OnNode::Container(docker) => docker,
        }
    }

    fn conf(&self) -> &Confinement {
        match self {
            OnNode::Local(local) => local.conf,
            OnNode::Container(docker) => docker.conf,
        }
    }
}

impl Executor for Slurm<'_> {
    /// On the coordinator, as the local executor does, in the cache the
    /// nodes share.
    fn prepare<'a>(
        &'a self,
        setup: Setup<'a>,
        ctx: &'a JobCtx,
    ) -> BoxFuture<'a, Result<Made<EnvRecord>, NodeError>> {
        self.node.executor().prepare(setup, ctx)
    }

    fn present(&self, record: &EnvRecord, cache_dir: &Path) -> Presence {
        self.node.executor().present(record, cache_dir)
    }

    fn run<'a>(&'a self, test: TestRun<'a>) -> RunFuture<'a> {
        Box::pin(async move { Ok(run_on_cluster(self, test).await?) })
    }

    /// The nodes read a run's pack from its scratch directory: in the
    /// shared cache.
    fn scratch_anywhere(&self) -> bool {
        false
    }

    /// One directory of the shared cache, as locally; a container's own
    /// copy of its image.
    fn shares_env(&self) -> bool {
        self.node.executor().shares_env()
    }

    fn env_is_artifact(&self) -> bool {
        self.node.executor().env_is_artifact()
    }

    /// A job step on a node, in its sandbox; the egress proxy and
    /// the key stay on the coordinator ([`attempt_on_cluster`]).
    fn attempt<'a>(&'a self, launch: Launch<'a>, ctx: &'a JobCtx) -> RunFuture<'a> {
        Box::pin(async move { Ok(attempt_on_cluster(self, launch, ctx).await?) })
    }

    /// The node's sandbox: the local one, or the container.
    fn sandbox(&self) -> Sandbox {
        self.node.executor().sandbox()
    }

    fn start(&self, _rt: &tokio::runtime::Runtime) -> Result<Vec<String>, StageError> {
        let mut sinfo = std::process::Command::new("sinfo");
        sinfo.args(["-h", "-o", "%P %a"]);
        for var in self.withheld {
            sinfo.env_remove(var);
        }
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
        Ok(Vec::new())
    }

    fn finished(&self, _rt: &tokio::runtime::Runtime) -> Vec<String> {
        self.cluster.cancel_allocations(self.withheld);
        Vec::new()
    }

    fn interrupted(&self) -> Vec<String> {
        self.cluster.cancel_allocations(self.withheld);
        Vec::new()
    }
}

/// A run on the cluster: its tree packed and its job file written into its
/// scratch directory, a step run, the outcome read back; a step that ends
/// without one is tried again from the same pack.
async fn run_on_cluster(exec: &Slurm<'_>, test: TestRun<'_>) -> Result<Ran, LaunchError> {
    let launch = &test.launch;
    let tree = launch
        .tree
        .ok_or(LaunchError::Internal("a test run needs its tree"))?;
    let ctx = test
        .ctx
        .ok_or(LaunchError::Internal("a slurm run needs its job"))?;
    let (blobs, notes) = (&ctx.blobs, &ctx.notes);
    notes.note("queued", None);
    let dir = launch.scratch.join("slurm");
    std::fs::create_dir_all(&dir).map_err(LaunchError::io(dir.display()))?;
    let tree_pack = {
        let (tree, path) = (tree.to_owned(), dir.join("tree.tar"));
        tokio::task::spawn_blocking(move || {
            let pack = Pack::of(&tree, path)?;
            // The staged copy is not read again: what the node runs is the pack.
            let _ = std::fs::remove_dir_all(&tree);
            Ok::<_, LaunchError>(pack)
        })
        .await
        .map_err(LaunchError::task)??
    };
    let env = env_source(exec, blobs, launch.env).await?;
    let job = super::slurm_job::WorkerJob::of(
        exec.node.conf(),
        &test,
        tree_pack,
        env,
        &exec.settings.node_cache,
    );
    let job_path = dir.join("job.json");
    let bytes = serde_json::to_vec(&job).map_err(|_| LaunchError::Internal("a job serializes"))?;
    std::fs::write(&job_path, bytes).map_err(LaunchError::io(job_path.display()))?;
    let mut failures = Vec::new();
    let timeout = launch.timeout + launch.stall_grace.unwrap_or_default();
    for attempt in 1..=ATTEMPTS {
        match one_step(exec, &dir, &job_path, timeout, exec.withheld, notes).await? {
            Step::Done(done) => {
                let mut ran = done.into_ran(&dir);
                std::fs::rename(dir.join("log"), &launch.log_path)
                    .map_err(LaunchError::io("slurm: the worker's log"))?;
                ran.retried = failures;
                return Ok(ran);
            }
            Step::NoOutcome(why) => failures.push(format!("attempt {attempt}: {why}")),
        }
    }
    let why = format!("slurm: the run's step ended without an outcome {ATTEMPTS} times");
    notes.note("lost", None);
    Ok(Ran::lost(why, failures))
}

/// How one step ended: the worker's outcome, or why there was none.
enum Step {
    Done(Box<super::slurm_job::WorkerOutcome>),
    NoOutcome(String),
}

/// One step of the job file `job_path` (its outcome beside it, in `dir`)
/// on the allocation's least busy node, its environment without the
/// `withheld` variables: the worker's outcome, or why there was none (the
/// node is then shunned, and an allocation that ended is replaced for the
/// next step).
async fn one_step(
    exec: &Slurm<'_>,
    dir: &Path,
    job_path: &Path,
    timeout: std::time::Duration,
    withheld: &[String],
    notes: &assay_engine::Notes,
) -> Result<Step, LaunchError> {
    let alloc = exec
        .cluster
        .allocation(exec.settings, exec.withheld)
        .await?;
    let out_path = dir.join("ran.json");
    let _ = std::fs::remove_file(&out_path);
    let slot = alloc.take();
    let node = alloc.nodes[slot.node].as_str();
    notes.note("running", Some(node));
    let step = step(&alloc.id, node, job_path, timeout, withheld).await;
    let read = std::fs::read(&out_path);
    if read.is_err() {
        slot.shun();
        notes.note("retried", Some(node));
    } else {
        notes.note("done", Some(node));
    }
    drop(slot);
    match read {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(|done| Step::Done(Box::new(done)))
            .map_err(|e| {
                LaunchError::Corrupt(format!("slurm: the worker's outcome cannot be read: {e}"))
            }),
        Err(_) => {
            if !alloc.running().await {
                exec.cluster.retire(&alloc);
            }
            Ok(Step::NoOutcome(step.err().map_or_else(
                || "the worker wrote no outcome".into(),
                |e| e.to_string(),
            )))
        }
    }
}

/// An agent's attempt on the cluster: its workspace (the launch's tree),
/// inputs and tools packed into the shared cache as a run's tree and
/// environment are, a listener of its own on the coordinator for the
/// node's relay to the egress proxy (a random token; [`relay`]), one step;
/// then the workspace and `/assay/out` unpacked back where the attempt
/// reads them. The key is in none of it: the proxy on the coordinator puts
/// it in, and the step's environment is assay's without the pipeline's
/// secret variables ([`Slurm::withheld`]). A step with no outcome is lost (the attempt's own
/// retries try again, on a fresh workspace).
///
/// [`relay`]: crate::run::attempt::relay
async fn attempt_on_cluster(
    exec: &Slurm<'_>,
    mut launch: Launch<'_>,
    ctx: &JobCtx,
) -> Result<Ran, LaunchError> {
    use crate::run::attempt as a;
    if exec.node.conf().sandbox != SandboxMode::Bwrap {
        return Err(LaunchError::Refused(
            "an agent never runs unsandboxed: attempts need `sandbox = \"bwrap\"`".into(),
        ));
    }
    let agent = launch
        .agent
        .take()
        .ok_or(LaunchError::Internal("an attempt needs its agent"))?;
    let tree = launch
        .tree
        .ok_or(LaunchError::Internal("an attempt needs its workspace"))?
        .to_owned();
    let (blobs, notes) = (&ctx.blobs, &ctx.notes);
    notes.note("queued", None);
    let tmp = ctx.cache_dir.join("tmp");
    std::fs::create_dir_all(&tmp).map_err(LaunchError::io(tmp.display()))?;
    // Private to this user (the job file holds the relay's token).
    let scratch = tempfile::Builder::new()
        .prefix("slurm-attempt-")
        .tempdir_in(&tmp)
        .map_err(LaunchError::io(tmp.display()))?;
    let dir = scratch.path().to_owned();
    let (mut input, mut output, mut tools, mut socket) = (None, None, None, None);
    for bind in &agent.binds {
        let host = Some(bind.host.clone());
        match bind.at.to_str() {
            Some(a::IN) => input = host,
            Some(a::OUT) => output = host,
            Some(a::AGENT_AT) => tools = host,
            Some(a::SOCKET) => socket = host,
            // The node's own assay is its forwarder.
            Some(a::BIN) => {}
            _ => {
                return Err(LaunchError::Refused(format!(
                    "slurm: an attempt's bind at {} cannot cross to a node",
                    bind.at.display()
                )));
            }
        }
    }
    let (input, output, tools) = match (input, output, tools) {
        (Some(i), Some(o), Some(t)) => (i, o, t),
        _ => {
            return Err(LaunchError::Internal(
                "slurm: an attempt needs its inputs, outputs and tools",
            ));
        }
    };
    let packs = {
        let (tree, input, dir) = (tree.clone(), input.clone(), dir.clone());
        tokio::task::spawn_blocking(move || {
            let packed = |from: &Path, name: &str| Pack::of(from, dir.join(name));
            // The workspace as prepared: what its read-back is bounded over.
            let base = a::workspace::apparent_size(
                &tree,
                std::time::Instant::now() + a::workspace::READ_BACK_LIMIT,
            )
            .map_err(LaunchError::Attempt)?;
            Ok::<_, LaunchError>((packed(&tree, "tree.tar")?, packed(&input, "in.tar")?, base))
        })
        .await
        .map_err(LaunchError::task)??
    };
    let env = env_source(exec, blobs, launch.env).await?;
    let tools = EnvSource::Packed(env_pack(exec.cluster, blobs, &tools).await?);
    let listening = match &socket {
        None => None,
        Some(socket) => Some(
            relay::listen(exec.settings.proxy_address, socket)
                .await
                .map_err(LaunchError::Attempt)?,
        ),
    };
    let mut job = super::slurm_job::WorkerJob::of_launch(
        exec.node.conf(),
        &launch,
        Vec::new(),
        packs.0,
        env,
        &exec.settings.node_cache,
    );
    job.agent = Some(super::slurm_job::AgentJob {
        path_first: agent.path_first.clone(),
        env: agent.env.clone(),
        input: packs.1,
        tools,
        route: listening.as_ref().map(|l| l.route.clone()),
        base_bytes: packs.2,
    });
    let job_path = dir.join("job.json");
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let bytes =
            serde_json::to_vec(&job).map_err(|_| LaunchError::Internal("a job serializes"))?;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&job_path)
            .and_then(|mut f| f.write_all(&bytes))
            .map_err(LaunchError::io(job_path.display()))?;
    }
    let done = one_step(exec, &dir, &job_path, launch.timeout, exec.withheld, notes).await?;
    drop(listening);
    let done = match done {
        Step::Done(done) => done,
        Step::NoOutcome(why) => {
            notes.note("lost", None);
            return Ok(Ran::lost(
                format!("slurm: the attempt's step ended without an outcome: {why}"),
                Vec::new(),
            ));
        }
    };
    std::fs::rename(dir.join("log"), &launch.log_path)
        .map_err(LaunchError::io("slurm: the worker's log"))?;
    let (workspace, out) = (done.workspace.clone(), done.out.clone());
    tokio::task::spawn_blocking(move || {
        for (pack, at) in [(workspace, tree), (out, output)] {
            let _ = std::fs::remove_dir_all(&at);
            match pack {
                Some(p) => super::slurm_pack::unpack(&p.path, &p.digest()?, &at)?,
                None => std::fs::create_dir(&at).map_err(LaunchError::io(at.display()))?,
            }
        }
        Ok::<_, LaunchError>(())
    })
    .await
    .map_err(LaunchError::task)??;
    Ok(done.into_ran(&dir))
}

/// Where a step finds its environment: a container's image by id (with
/// the settings its container is made with), the local sandbox's
/// directory packed into the cache ([`env_pack`]), or, unsandboxed (whose
/// environments embed their absolute path), the shared directory itself.
async fn env_source(
    exec: &Slurm<'_>,
    blobs: &assay_engine::Blobs,
    env: &EnvHandle,
) -> Result<EnvSource, LaunchError> {
    match (&exec.node, env) {
        (OnNode::Container(docker), EnvHandle::Image(id)) => Ok(EnvSource::Image(ImageJob {
            id: id.clone(),
            base_image: docker.settings.base_image.clone(),
            cpu_millis: docker.settings.cpu_millis,
        })),
        (OnNode::Local(local), EnvHandle::HostDir(dir)) => match local.conf.sandbox {
            SandboxMode::Bwrap => Ok(EnvSource::Packed(env_pack(exec.cluster, blobs, dir).await?)),
            SandboxMode::None => Ok(EnvSource::Shared(dir.clone())),
        },
        _ => Err(LaunchError::Internal(
            "a step's environment is its executor's: an image for a container, a directory for the local sandbox",
        )),
    }
}

/// The environment directory `env` packed into the cache's blobs, once:
/// the pack's digest is kept in `slurm/packs/NAME` beside the blobs, and
/// packed again only when that blob is gone (`assay gc` collects it).
async fn env_pack(
    cluster: &Cluster,
    blobs: &assay_engine::Blobs,
    env: &Path,
) -> Result<Pack, LaunchError> {
    let name = env
        .file_name()
        .ok_or(LaunchError::Internal("an environment directory has a name"))?
        .to_string_lossy()
        .into_owned();
    let cache = blobs.cache_dir().to_owned();
    let memo = cache.join("slurm").join("packs").join(&name);
    let known = |memo: &Path| {
        let digest: assay_engine::Digest =
            std::fs::read_to_string(memo).ok()?.trim().parse().ok()?;
        blobs.exists(&digest).then(|| Pack {
            path: blobs.path(&digest),
            digest: digest.to_hex(),
        })
    };
    // One packing at a time: runs of one environment wait for its pack.
    let _one = cluster.packing.lock().await;
    if let Some(pack) = known(&memo) {
        return Ok(pack);
    }
    let (env, blobs, memo) = (env.to_owned(), blobs.clone(), memo.clone());
    tokio::task::spawn_blocking(move || {
        let tmp = cache.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(LaunchError::io(tmp.display()))?;
        let part = tempfile::Builder::new()
            .prefix("env-pack-")
            .tempdir_in(&tmp)
            .map_err(LaunchError::io(tmp.display()))?;
        let file = part.path().join("env.tar");
        super::slurm_pack::pack(&env, &file)?;
        let digest = blobs
            .put_file(&file)
            .map_err(|e| LaunchError::Cache(format!("{}: {e}", file.display())))?;
        let parent = memo
            .parent()
            .ok_or(LaunchError::Internal("a memo has a directory"))?;
        std::fs::create_dir_all(parent).map_err(LaunchError::io(parent.display()))?;
        let part_memo = part.path().join("memo");
        std::fs::write(&part_memo, digest.to_hex())
            .map_err(LaunchError::io(part_memo.display()))?;
        std::fs::rename(&part_memo, &memo).map_err(LaunchError::io(memo.display()))?;
        Ok(Pack {
            path: blobs.path(&digest),
            digest: digest.to_hex(),
        })
    })
    .await
    .map_err(LaunchError::task)?
}
