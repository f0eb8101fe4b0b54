//! The docker executor: an environment is an image (the base image, the key
//! files in `/assay/env`, the setup commands with the network), named in
//! its record by id, so a rebuilt image changes the keys of every run in
//! it; a run is a fresh locked-down container of it, from which the report
//! and the test files' fingerprints come back before it is removed. Runs
//! share nothing, so a serial environment's runs need not take turns.
//!
//! A cached environment whose image the daemon no longer has is not a hit:
//! it is loaded back from its saved blob (`[env] export`: the same id, so
//! nothing downstream reruns) or rebuilt (a new id: its runs run again), and
//! the build says which. The daemon connection is `daemon`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assay_docker::{ContainerRun, HostBind, ImageId, ImageSpec, ReportRequest, TreeMount};
use assay_engine::JobCtx;
use serde::Serialize;

use super::{
    BoxFuture, EnvHandle, Executor, Launch, Presence, Ran, RunFuture, Setup, TestRun, Watched,
    base_env, daemon, guard_env, made, run_err,
};
use crate::model::config::{Confinement, DockerSettings, Sandbox};
use crate::model::records::EnvRecord;
use crate::model::rules::limits::Limit;
use crate::model::shell;
use crate::run::Made;
use crate::run::error::{Context, Kinded, LaunchError, NodeError, StageError};

/// Keyed with the settings: the image layout this assay builds and runs in
/// (a protected tree, the import guard) and the guard's digest. Environments
/// and runs made for another layout have other keys, so they are rebuilt
/// rather than run in an image that lacks what a run relies on.
impl Serialize for DockerSettings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Keyed<'a> {
            base_image: &'a str,
            cpu_millis: Option<u32>,
            layout: u32,
            guard: &'static str,
        }
        Keyed {
            base_image: &self.base_image,
            cpu_millis: self.cpu_millis,
            layout: assay_docker::LAYOUT,
            guard: crate::run::guard::digest(),
        }
        .serialize(s)
    }
}

/// `PATH` inside a container: the image's, never the host's.
pub(crate) const CONTAINER_PATH: &str =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The docker executor under a confinement.
pub(crate) struct Docker<'a> {
    pub(crate) conf: &'a Confinement,
    pub(crate) settings: &'a DockerSettings,
    pub(crate) daemon: &'a daemon::Daemon,
}

impl Executor for Docker<'_> {
    fn prepare<'a>(
        &'a self,
        setup: Setup<'a>,
        ctx: &'a JobCtx,
    ) -> BoxFuture<'a, Result<Made<EnvRecord>, NodeError>> {
        Box::pin(prepare(self, setup, ctx))
    }

    fn present(&self, record: &EnvRecord, cache_dir: &Path) -> Presence {
        match EnvHandle::of(record, cache_dir) {
            EnvHandle::Image(id) => match self.daemon.image_present(&id) {
                Some(true) => Presence::Present,
                Some(false) => Presence::Gone,
                None => Presence::Unknown,
            },
            EnvHandle::HostDir(_) => Presence::Gone,
        }
    }

    fn run<'a>(&'a self, test: TestRun<'a>) -> RunFuture<'a> {
        Box::pin(async move {
            let cap = test.launch.log_cap;
            let run = container(self.conf, self.settings, test.launch).context("run")?;
            let docker = self.daemon.client().await.map_err(|e| run_err(&e))?;
            let outcome = match self.daemon.fleet() {
                Some(fleet) => docker.run_in(&run, fleet).await,
                None => docker.run(&run).await,
            }
            .map_err(|e| run_err(&e))?;
            let changed = {
                let (staged, watched) = (test.staged, outcome.watched.clone());
                tokio::task::spawn_blocking(move || changed_in(&staged, &watched))
                    .await
                    .map_err(|e| run_err(&e))?
            };
            let report = outcome.report.clone().map(|r| container_report(r, cap));
            Ok(ran(outcome, report, changed))
        })
    }

    /// In a fresh container of the task's image, the workspace bound in
    /// place and read back on this machine.
    fn attempt<'a>(&'a self, launch: Launch<'a>, _ctx: &'a JobCtx) -> RunFuture<'a> {
        Box::pin(async move {
            let run = container(self.conf, self.settings, launch).context("run")?;
            let docker = self.daemon.client().await.map_err(|e| run_err(&e))?;
            let outcome = match self.daemon.fleet() {
                Some(fleet) => docker.run_in(&run, fleet).await,
                None => docker.run(&run).await,
            }
            .map_err(|e| run_err(&e))?;
            Ok(ran(outcome, None, Vec::new()))
        })
    }

    /// A container's environment is its own copy.
    fn shares_env(&self) -> bool {
        false
    }

    /// A released task names the image that certified it.
    fn env_is_artifact(&self) -> bool {
        true
    }

    fn sandbox(&self) -> Sandbox {
        Sandbox::Docker
    }

    fn start(&self, rt: &tokio::runtime::Runtime) -> Result<Vec<String>, StageError> {
        Ok(self
            .daemon
            .start(rt, &self.settings.base_image)?
            .into_iter()
            .collect())
    }

    fn finished(&self, rt: &tokio::runtime::Runtime) -> Vec<String> {
        self.daemon.finished(rt).into_iter().collect()
    }

    fn interrupted(&self) -> Vec<String> {
        self.daemon.remove_own_containers().into_iter().collect()
    }
}

/// How a container run ended.
fn ran(
    outcome: assay_docker::ContainerOutcome,
    report: Option<Result<Vec<u8>, String>>,
    changed: Vec<String>,
) -> Ran {
    Ran {
        exit_code: outcome.exit_code,
        signal: None,
        timed_out: outcome.timed_out,
        limit: outcome.killed_by.map(|k| match k {
            assay_docker::KilledBy::WallClock => Limit::Time,
            assay_docker::KilledBy::Memory => Limit::Memory,
            assay_docker::KilledBy::Written => Limit::Write,
        }),
        duration: outcome.duration,
        // A container's CPU stalls are not measured: its timeout is plain
        // wall-clock (docs/executors.md).
        cpu_stalled: None,
        log_bytes: outcome.log_bytes,
        log_truncated: outcome.log_truncated,
        report,
        changed,
        ..Ran::default()
    }
}

/// A Docker environment: its image loaded back from the saved blob of a
/// record whose image is gone, or built (reused by the daemon when an image
/// of the same spec is there).
async fn prepare(
    exec: &Docker<'_>,
    setup: Setup<'_>,
    ctx: &JobCtx,
) -> Result<Made<EnvRecord>, NodeError> {
    let docker = exec.daemon.client().await.infra()?;
    let lost = setup.lost;
    let gone = lost.as_ref().and_then(|r| r.image.clone());
    if let Some(old) = &lost
        && let (Some(id), Some(blob)) = (&old.image, &old.export)
    {
        match reload(docker, ctx, blob).await {
            Ok(loaded) if loaded.as_str() == id => {
                ctx.notes.warn(format!(
                    "image {id} was gone from the Docker daemon; loaded back from its saved blob"
                ));
                return Ok(made(old.clone()));
            }
            Ok(loaded) => ctx.notes.warn(format!(
                "the saved blob of image {id} loaded as {loaded}; rebuilding"
            )),
            Err(e) => ctx.notes.warn(format!(
                "image {id} is gone and its saved blob cannot be loaded ({e}); rebuilding"
            )),
        }
    }
    let mut spec = image_spec(
        exec.conf,
        exec.settings,
        setup.commands,
        setup.files,
        setup.timeout,
        super::SETUP_LOG_CAP,
    );
    spec.writable = setup.writable.to_vec();
    // `[env] warm`: setup sees each cache at its directory in the image's
    // environment, made first.
    for (var, dir) in setup.warm {
        spec.env
            .insert(var.clone(), format!("{}/{dir}", assay_docker::ENV_DIR));
    }
    if !setup.warm.is_empty() {
        let dirs: Vec<String> = setup
            .warm
            .iter()
            .map(|(_, dir)| shell::quote(&format!("{}/{dir}", assay_docker::ENV_DIR)))
            .collect();
        spec.setup.insert(0, format!("mkdir -p {}", dirs.join(" ")));
    }
    let base = docker.base_image(&exec.settings.base_image).await.infra()?;
    let redactor = crate::run::redact::Redactor::new(setup.redact);
    let mut record = EnvRecord {
        dir: String::new(),
        ok: true,
        exit_code: Some(0),
        setup_log: String::new(),
        digest: String::new(),
        executor: Some(crate::model::config::ExecutorKind::Docker),
        image: None,
        base_image: Some(base.to_string()),
        export: None,
        failed_command: None,
    };
    match docker.build_image(&spec).await {
        Ok(built) => {
            let (log, _) = redactor.redact(&built.setup_log);
            let log_digest = ctx.blobs.put(&log).cache()?;
            record.setup_log = log_digest.to_hex();
            record.image = Some(built.id.to_string());
            if setup.export {
                let tar = docker.save_image(&built.id).await.infra()?;
                let blob = ctx.blobs.put(&tar).cache()?;
                record.export = Some(blob.to_hex());
            }
            if let Some(old) = gone {
                ctx.notes.warn(format!(
                    "image {old} was gone from the Docker daemon (not exported); rebuilt as {}: the runs in it run again",
                    built.id
                ));
            }
        }
        Err(assay_docker::DockerError::Setup(failure)) => {
            // The failing command and its log are the environment's setup
            // log; every run in it reports `env_setup_failed`.
            let mut raw = failure.log.clone();
            raw.extend_from_slice(format!("\nassay: {failure}\n").as_bytes());
            let (log, _) = redactor.redact(&raw);
            let log_digest = ctx.blobs.put(&log).cache()?;
            record.ok = false;
            record.exit_code = if failure.timed_out {
                None
            } else {
                failure.exit_code
            };
            record.setup_log = log_digest.to_hex();
            record.failed_command = failure.command.clone();
            ctx.notes.warn(format!(
                "{failure}: its runs report env_setup_failed (setup log: `assay show {}`)",
                record.setup_log
            ));
        }
        Err(e) => return Err(NodeError::infra(e)),
    }
    Ok(made(record))
}

/// Loads a saved image blob into the daemon.
async fn reload(
    docker: &assay_docker::Docker,
    ctx: &JobCtx,
    blob: &str,
) -> Result<ImageId, LaunchError> {
    let digest: assay_engine::Digest = blob.parse().map_err(|e: String| LaunchError::Corrupt(e))?;
    let tar = ctx
        .blobs
        .get(&digest)
        .map_err(|e| LaunchError::Cache(e.to_string()))?;
    docker
        .load_image(tar)
        .await
        .map_err(|e| LaunchError::Unavailable(e.to_string()))
}

pub(crate) fn docker_limits(conf: &Confinement, d: &DockerSettings) -> assay_docker::Limits {
    assay_docker::Limits {
        cpu_millis: d.cpu_millis,
        memory: Some(conf.limits.memory),
        pids: Some(u32::try_from(conf.limits.processes).unwrap_or(u32::MAX)),
        open_files: Some(conf.limits.open_files),
        file_size: Some(conf.limits.file_size),
        written: Some(conf.limits.write),
    }
}

/// A test run in a fresh container of the environment's image; the same
/// environment variables as a local run, with the container's paths.
pub(crate) fn container(
    conf: &Confinement,
    d: &DockerSettings,
    launch: Launch<'_>,
) -> Result<ContainerRun, NodeError> {
    let Some(tree) = launch.tree else {
        return Err(NodeError::internal("a docker run needs a tree"));
    };
    let image = ImageId::parse(launch.env.image()?).internal()?;
    let path = match &launch.agent {
        Some(agent) => format!("{}:{CONTAINER_PATH}", agent.path_first),
        None => CONTAINER_PATH.to_owned(),
    };
    let mut env = base_env(&path, launch.attempt);
    // `[env] warm`: each run copies the image's caches into its own /tmp
    // first (the image is read-only to it), so it starts warm and nothing
    // it writes outlives it.
    let mut command = launch.command;
    if !launch.warm.is_empty() {
        let mut prelude = vec!["mkdir -p /tmp/.assay-warm".to_owned()];
        for (var, dir) in launch.warm {
            let copy = format!("/tmp/.assay-warm/{var}");
            prelude.push(format!(
                "{{ cp -a {} {} 2>/dev/null || mkdir -p {}; }}",
                shell::quote(&format!("{}/{dir}", assay_docker::ENV_DIR)),
                shell::quote(&copy),
                shell::quote(&copy)
            ));
            env.insert(var.clone(), copy);
        }
        command = format!(
            "{}
{command}",
            prelude.join(
                "
"
            )
        );
    }
    env.insert("HOME".to_owned(), assay_docker::HOME_DIR.to_owned());
    env.insert("TMPDIR".to_owned(), "/tmp".to_owned());
    env.insert("ASSAY_ENV".to_owned(), assay_docker::ENV_DIR.to_owned());
    // An agent's workspace is bound in place and read back on the host;
    // nothing is graded in it, so no import guard.
    let (tree_mount, binds) = match launch.agent {
        Some(agent) => {
            env.extend(agent.env);
            let binds = agent
                .binds
                .into_iter()
                .map(|b| HostBind {
                    host: b.host,
                    at: b.at.display().to_string(),
                    writable: b.writable,
                })
                .collect();
            (TreeMount::Bind, binds)
        }
        None => {
            guard_env(&mut env, assay_docker::GUARD_DIR, &launch.protect);
            (TreeMount::Upload, Vec::new())
        }
    };
    Ok(ContainerRun {
        image,
        tree: tree.to_owned(),
        tree_mount,
        binds,
        command,
        env,
        timeout: launch.timeout,
        log_path: launch.log_path,
        log_cap: launch.log_cap,
        report: launch.report_file.map(|rel| ReportRequest {
            path: rel.into(),
            cap: launch.log_cap,
        }),
        limits: docker_limits(conf, d),
        tmp_size: conf.limits.tmp,
        home_size: conf.limits.home,
        watch: launch.watch,
        protect: launch.protect,
    })
}

/// A Docker environment's image: the base image, the key files in
/// `/assay/env`, the setup commands as one `set -e` script with the network
/// (the maintainer's commands, never agent code), the same limits as a run.
fn image_spec(
    conf: &Confinement,
    d: &DockerSettings,
    setup: &[String],
    key_files: &[(String, Vec<u8>)],
    timeout: Duration,
    log_cap: u64,
) -> ImageSpec {
    let mut env = base_env(CONTAINER_PATH, None);
    env.insert("HOME".to_owned(), "/root".to_owned());
    env.insert("TMPDIR".to_owned(), "/tmp".to_owned());
    ImageSpec {
        base: d.base_image.clone(),
        key_files: key_files.iter().cloned().collect(),
        guard: [(
            crate::run::guard::FILE.to_owned(),
            crate::run::guard::source(assay_docker::TREE_DIR).into_bytes(),
        )]
        .into(),
        setup: setup.to_vec(),
        env,
        user: assay_docker::RunUser::default(),
        writable: Vec::new(),
        timeout,
        log_cap,
        limits: assay_docker::Limits {
            // Setup writes the environment, not a tree: the maintainer's
            // commands, bounded by the timeout.
            written: None,
            ..docker_limits(conf, d)
        },
    }
}

/// A report copied out of a container, in the words of the local
/// executor's reading.
fn container_report(report: assay_docker::Report, cap: u64) -> Result<Vec<u8>, String> {
    match report {
        assay_docker::Report::Present(bytes) => Ok(bytes),
        assay_docker::Report::Missing => Err("not found".into()),
        assay_docker::Report::NotAFile => {
            Err("is a symbolic link or not a regular file; not read".into())
        }
        assay_docker::Report::TooLarge { size } => Err(format!(
            "is {size} bytes, over the evidence cap ({cap} bytes); not read"
        )),
    }
}

/// The watched files whose fingerprints after a container run differ from
/// the staged bytes (changed, deleted or no longer a regular file), sorted.
fn changed_in(staged: &Watched, watched: &BTreeMap<PathBuf, Option<[u8; 32]>>) -> Vec<String> {
    let mut out: Vec<String> = staged
        .iter()
        .filter(|(path, then)| {
            let now = watched.get(Path::new(path)).copied().flatten();
            now != Some(*then)
        })
        .map(|(p, _)| p.clone())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::super::local::tests::Dirs;
    use super::*;
    use crate::model::config::{DEFAULT_BASE_IMAGE, ExecutorSetting};

    #[test]
    fn the_docker_executor_refuses_an_environment_directory_before_starting_anything() {
        let conf = Confinement {
            executor: ExecutorSetting::Docker(DockerSettings {
                base_image: DEFAULT_BASE_IMAGE.into(),
                cpu_millis: None,
                on_cluster: None,
            }),
            ..Confinement::default()
        };
        let dirs = Dirs::new();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let refused = rt.block_on(
            super::super::Executors::default()
                .of(&conf)
                .run(dirs.test_run("true")),
        );
        let Err(e) = refused else {
            panic!("a docker run started without an image");
        };
        assert!(
            e.to_string().contains("needs its environment's image"),
            "{e}"
        );
    }

    #[test]
    fn a_watched_file_changed_deleted_or_no_longer_regular_in_the_container_is_named() {
        let h = |s: &str| *blake3::hash(s.as_bytes()).as_bytes();
        let staged: Watched = vec![
            ("a.py".into(), h("a")),
            ("b.py".into(), h("b")),
            ("c.py".into(), h("c")),
            ("d.py".into(), h("d")),
        ];
        let watched: BTreeMap<PathBuf, Option<[u8; 32]>> = [
            (PathBuf::from("a.py"), Some(h("a"))),
            (PathBuf::from("b.py"), Some(h("B"))),
            (PathBuf::from("c.py"), None),
        ]
        .into();
        assert_eq!(changed_in(&staged, &watched), ["b.py", "c.py", "d.py"]);
    }
}
