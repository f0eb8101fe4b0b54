//! `assay worker JOB` on a Slurm node: runs one job file with the local
//! executor, or in a container on the node's Docker daemon, and writes its
//! outcome back.

use std::path::Path;
use std::time::Duration;

use super::slurm_job::{AgentJob, EnvSource, Pack, WorkerJob, WorkerOutcome};
use super::slurm_pack as pack;
use super::{EnvHandle, Launch, TestRun};
use crate::model::config::{Confinement, DockerSettings, ExecutorSetting};
use crate::run::error::LaunchError;

/// `assay worker JOB`: runs one job file on this node with the local
/// executor, in a private directory of the node-local cache: the tree
/// unpacked from its pack, the environment from this node's copy (unpacked
/// on first use). Writes the outcome beside the job file (`ran.json`,
/// `log`, `report`).
pub(crate) fn work(job_path: &Path) -> Result<(), LaunchError> {
    let bytes = std::fs::read(job_path).map_err(LaunchError::io(job_path.display()))?;
    let job: WorkerJob = serde_json::from_slice(&bytes)
        .map_err(|e| LaunchError::Corrupt(format!("{}: {e}", job_path.display())))?;
    let dir = job_path
        .parent()
        .ok_or(LaunchError::Internal("a job file has a directory"))?;
    let node_name = node_name();
    let node = pack::node_dir(&job.node_cache, &node_name)?;
    let runs = node.join("runs");
    std::fs::create_dir_all(&runs).map_err(LaunchError::io(runs.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(&runs)
        .map_err(LaunchError::io(runs.display()))?;
    let tree = scratch.path().join("tree");
    pack::unpack(&job.tree.path, &job.tree.digest()?, &tree)?;
    let (conf, env) = match &job.env {
        EnvSource::Packed(p) => (
            job.confinement(ExecutorSetting::Local),
            EnvHandle::HostDir(pack::node_env(&node, &p.path, &p.digest()?)?),
        ),
        EnvSource::Shared(path) => (
            job.confinement(ExecutorSetting::Local),
            EnvHandle::HostDir(path.clone()),
        ),
        EnvSource::Image(image) => (
            job.confinement(ExecutorSetting::Docker(DockerSettings {
                base_image: image.base_image.clone(),
                cpu_millis: image.cpu_millis,
                on_cluster: None,
            })),
            EnvHandle::Image(image.id.clone()),
        ),
    };
    let log_path = scratch.path().join("log");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LaunchError::io("the worker's runtime"))?;
    let executors = super::Executors::default();
    if let EnvHandle::Image(id) = &env {
        rt.block_on(image_on_node(&executors, id, &node_name))?;
    }
    if let Some(agent) = &job.agent {
        let outcome = rt.block_on(attempt(
            &job,
            agent,
            (&executors, &conf, &env),
            &node,
            scratch.path(),
            dir,
        ))?;
        std::fs::copy(&log_path, dir.join("log")).map_err(LaunchError::io("the run's log"))?;
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
        .block_on(executors.of(&conf).run(test))
        .map_err(|e| LaunchError::Local(e.to_string()))?;
    std::fs::copy(&log_path, dir.join("log")).map_err(LaunchError::io("the run's log"))?;
    let report = match ran.report {
        None => None,
        Some(Ok(bytes)) => {
            std::fs::write(dir.join("report"), bytes)
                .map_err(LaunchError::io("the run's report"))?;
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
fn write_outcome(dir: &Path, outcome: &WorkerOutcome) -> Result<(), LaunchError> {
    let tmp = dir.join("ran.json.tmp");
    let bytes =
        serde_json::to_vec(outcome).map_err(|_| LaunchError::Internal("an outcome serializes"))?;
    std::fs::write(&tmp, bytes).map_err(LaunchError::io(tmp.display()))?;
    std::fs::rename(&tmp, dir.join("ran.json")).map_err(LaunchError::io(tmp.display()))
}

/// An agent's attempt on this node, as the local executor runs one: the
/// workspace (the job's tree) in `scratch`, its inputs and tools unpacked,
/// the proxy's socket a relay to the coordinator's listener; then the
/// workspace, checked against its bound before it is read, and
/// `/assay/out` packed beside the job file.
async fn attempt(
    job: &WorkerJob,
    agent: &AgentJob,
    (executors, conf, env): (&super::Executors, &Confinement, &EnvHandle),
    node: &Path,
    scratch: &Path,
    dir: &Path,
) -> Result<WorkerOutcome, LaunchError> {
    use crate::run::attempt::{relay::Relay, workspace};
    let (tree, input, out) = (
        scratch.join("tree"),
        scratch.join("in"),
        scratch.join("out"),
    );
    pack::unpack(&agent.input.path, &agent.input.digest()?, &input)?;
    std::fs::create_dir(&out).map_err(LaunchError::io(out.display()))?;
    let tools = match &agent.tools {
        EnvSource::Packed(p) => pack::node_env(node, &p.path, &p.digest()?)?,
        EnvSource::Shared(path) => path.clone(),
        EnvSource::Image(_) => {
            return Err(LaunchError::Internal("an agent's tools are a directory"));
        }
    };
    let relay = agent
        .route
        .clone()
        .map(Relay::start)
        .transpose()
        .map_err(LaunchError::Attempt)?;
    let mounts = super::agent::Mounts {
        input,
        out: out.clone(),
        tools,
        socket: relay.as_ref().map(Relay::socket),
    };
    let launch = super::agent::launch(
        job.command.clone(),
        &tree,
        env,
        (scratch.join("log"), job.log_cap),
        Duration::from_millis(job.timeout_ms),
        super::Agent {
            path_first: agent.path_first.clone(),
            env: agent.env.clone(),
            binds: mounts.binds()?,
        },
    );
    let ran = match env {
        EnvHandle::HostDir(_) => {
            super::local::attempt(conf, &super::local::Probe::default(), launch).await
        }
        // The docker executor's attempt is a run with no report to read
        // and no staged file to fingerprint.
        EnvHandle::Image(_) => {
            let test = TestRun {
                launch,
                staged: Vec::new(),
                ctx: None,
            };
            executors.of(conf).run(test).await
        }
    }
    .map_err(|e| LaunchError::Local(e.to_string()))?;
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
        Ok::<_, LaunchError>((ws, refused, out))
    })
    .await
    .map_err(LaunchError::task)??;
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

/// Before a container step: the node's daemon holds the step's image
/// `id` (made on the coordinator, so present on a node only when the nodes
/// share its daemon or the image was loaded there), and the containers of
/// workers killed on this node (a cancelled step) are removed.
async fn image_on_node(
    executors: &super::Executors,
    id: &str,
    node: &str,
) -> Result<(), LaunchError> {
    let docker = executors.daemon().client().await?;
    let unusable = |e: assay_docker::DockerError| LaunchError::Unavailable(e.to_string());
    docker.cleanup_leftovers().await.map_err(unusable)?;
    let wanted = assay_docker::ImageId::parse(id).map_err(unusable)?;
    if docker
        .image_ids()
        .await
        .map_err(unusable)?
        .contains(&wanted)
    {
        return Ok(());
    }
    Err(LaunchError::Unavailable(format!(
        "the Docker daemon of node {node} has no image {id}: a task image is made on the coordinator, and every node's daemon needs it under the same id (e.g. `docker save {id} | docker -H ssh://{node} load`)"
    )))
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
