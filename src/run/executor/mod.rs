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
//! sandbox (or a task image's container) on a node of a Slurm cluster, as
//! a job step.
//!
//! The executor, the sandbox and the limits are part of a run's key
//! ([`Confinement`]): they change what the code under test can see and do.
//! The local executor adds nothing to the key (a local run's key is the
//! run's inputs alone), nor does slurm, whose runs see what a local
//! run sees.
//!
//! **Adding an executor** (docs/stages.md): its word in
//! [`ExecutorKind`] and its line in [`ExecutorSetting`] (`model::config`,
//! with its typed settings, checked from `[env]` by `pipeline::confine`),
//! and one module here with an `impl Executor`, chosen in [`Executors::of`].

pub(crate) mod agent;
pub(crate) mod daemon;
pub(crate) mod docker;
pub(crate) mod local;
mod parking;
pub(crate) mod scratch;
mod seam;
pub(crate) mod slurm;
pub(crate) mod slurm_allocation;
pub(crate) mod slurm_job;
pub(crate) mod slurm_pack;
pub(crate) mod slurm_worker;

use std::path::Path;

use crate::model::config::{Confinement, ExecutorSetting};
use crate::run::error::{LaunchError, StageError};

pub(crate) use parking::Parking;
pub(crate) use seam::{
    Agent, BoxFuture, EnvHandle, Executor, InUse, Launch, Presence, Ran, RunFuture, SETUP_LOG_CAP,
    Setup, TestRun, Watched, made,
};
use seam::{base_env, guard_env, run_err};

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
            ExecutorSetting::Docker(settings) => {
                let docker = docker::Docker {
                    conf,
                    settings,
                    daemon: &self.daemon,
                };
                match &settings.on_cluster {
                    None => Box::new(docker),
                    Some(cluster) => Box::new(slurm::Slurm {
                        node: slurm::OnNode::Container(docker),
                        settings: cluster,
                        cluster: &self.slurm,
                        withheld: &self.withheld,
                    }),
                }
            }
            ExecutorSetting::Slurm(settings) => Box::new(slurm::Slurm {
                node: slurm::OnNode::Local(local),
                settings,
                cluster: &self.slurm,
                withheld: &self.withheld,
            }),
        }
    }

    /// bubblewrap, as the local sandbox found it.
    pub(crate) fn bwrap(&self) -> Result<assay_exec::Bwrap, LaunchError> {
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
    /// setting once). The first that fails fails the build; what they have
    /// to say, for the CLI to print.
    pub(crate) fn start(
        &self,
        in_use: &[Confinement],
        rt: &tokio::runtime::Runtime,
    ) -> Result<Vec<String>, StageError> {
        let mut said = Vec::new();
        for conf in in_use {
            said.extend(self.of(conf).start(rt)?);
        }
        Ok(said)
    }

    /// After a build, on its runtime: each executor it used releases what
    /// it held. What they have to say, for the CLI to print.
    pub(crate) fn finished(
        &self,
        in_use: &[Confinement],
        rt: &tokio::runtime::Runtime,
    ) -> Vec<String> {
        self.parking.end_all();
        in_use
            .iter()
            .flat_map(|conf| self.of(conf).finished(rt))
            .collect()
    }

    /// After an interrupted build: each executor it used removes what it
    /// started. What they have to say, for the CLI to print.
    pub(crate) fn interrupted(&self, in_use: &[Confinement]) -> Vec<String> {
        self.parking.end_all();
        in_use
            .iter()
            .flat_map(|conf| self.of(conf).interrupted())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::model::config::RunLimits;
    use crate::model::config::Sandbox;
    use crate::model::config::{DockerSettings, SandboxMode};
    use crate::model::records::EnvRecord;
    use serde::Serialize;

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
            executor: ExecutorSetting::Docker(DockerSettings {
                base_image: base.into(),
                cpu_millis,
                on_cluster: None,
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
        assert_eq!(executors.of(&docker("x", None)).sandbox(), Sandbox::Docker);
        assert_eq!(
            executors.of(&Confinement::default()).sandbox(),
            Sandbox::Bwrap
        );
    }

    #[test]
    fn only_the_unsandboxed_local_executor_shares_an_environment_between_runs() {
        let unsandboxed = Confinement {
            sandbox: SandboxMode::None,
            ..Confinement::default()
        };
        let executors = Executors::default();
        assert!(executors.of(&unsandboxed).shares_env());
        // Under bubblewrap a run sees the environment read-only.
        let local = Confinement::default();
        assert!(!executors.of(&local).shares_env());
        let docker = Confinement {
            executor: ExecutorSetting::Docker(DockerSettings {
                base_image: "assay-base:bookworm".into(),
                cpu_millis: None,
                on_cluster: None,
            }),
            ..Confinement::default()
        };
        assert!(!executors.of(&local).env_is_artifact());
        assert!(!executors.of(&docker).shares_env());
        assert!(executors.of(&docker).env_is_artifact());
    }

    /// What an executor knows (a connection, a probe, an allocation, a
    /// sweep, the parked deployments) lives in [`Executors`], never in a
    /// process-wide static: no file of the application (every layer, the
    /// apps and attempts included) declares a static holding state. A
    /// constant computed once (`LazyLock`) is not state.
    #[test]
    fn no_file_keeps_state_in_a_static() {
        fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    walk(&path, files);
                } else if path.extension().is_some_and(|x| x == "rs") {
                    files.push(path);
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        walk(&root, &mut files);
        for layer in [
            "model",
            "pipeline",
            "sessions",
            "run/app",
            "run/executor",
            "release",
            "nodes",
            "plan",
            "ops",
            "cli",
        ] {
            assert!(
                files.iter().any(|f| f.starts_with(root.join(layer))),
                "{layer} is not scanned"
            );
        }
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
