//! App tasks on the docker executor: the build and every deployment run in
//! fresh containers of the task's environment image, locked down as a test
//! run's container is (`assay_docker`: no network but its own loopback, a
//! read-only root, the image's non-root run user without capabilities, the
//! environment's limits, the write watchdog over the tree, always removed).
//!
//! - The build binds its fresh tree copy in place (the container writes the
//!   built tree, read back on this machine as a tar blob).
//! - A deployment uploads the built tree into a fresh container
//!   ([`assay_docker::Docker::serve`]) whose script is the local one
//!   ([`deploy::script`]): the services, then a go-ahead on stdin, then the
//!   start command. Probes and the browser reach the app through the
//!   container's network namespace (`/proc/<State.Pid>/ns/net`), from
//!   assay's side: nothing of the pipeline is inside the container, so the
//!   probes' expectations are never readable by the app. Removing the
//!   container ends every process of it, a daemon that called `setsid`
//!   included.
//!
//! The nodes run this code on blocking threads; the daemon's connection is
//! the build's, driven through the build runtime's handle.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use assay_docker::{ContainerRun, ImageId, KilledBy, ServeSpec, Serving, ServingState, TreeMount};
use assay_exec::Bwrap;
use assay_exec::netns::NetNs;

use super::deploy::{self, Deployment, Process};
use crate::model::config::DockerSettings;
use crate::model::config::{Confinement, ExecutorSetting};
use crate::model::rules::app::{Outcome, Start};
use crate::run::executor::Executors;
use crate::run::executor::docker::{CONTAINER_PATH, docker_limits};

/// Bytes of a build's or an app's output kept.
const LOG_CAP: u64 = 1 << 20;

/// The docker executor as an app task's build and deployments use it.
pub(crate) struct DockerApp {
    handle: tokio::runtime::Handle,
    executors: Arc<Executors>,
    conf: Confinement,
    settings: DockerSettings,
    /// The environment's image, or why there is none.
    image: Result<ImageId, String>,
}

impl DockerApp {
    /// Containers of `image` under `conf`, driven through `handle`; `None`
    /// when `conf` is not the docker executor's.
    pub(crate) fn new(
        handle: tokio::runtime::Handle,
        executors: Arc<Executors>,
        conf: &Confinement,
        image: Result<String, String>,
    ) -> Option<DockerApp> {
        let ExecutorSetting::Docker(settings) = &conf.executor else {
            return None;
        };
        Some(DockerApp {
            handle,
            executors,
            settings: settings.clone(),
            conf: conf.clone(),
            image: image.and_then(|id| ImageId::parse(&id).map_err(|e| e.to_string())),
        })
    }

    fn image(&self) -> Result<ImageId, Outcome> {
        self.image.clone().map_err(|why| Outcome::Harness {
            detail: format!("no environment image: {why}"),
        })
    }

    fn limits(&self) -> assay_docker::Limits {
        docker_limits(&self.conf, &self.settings)
    }

    /// What a build or an app sees of its environment: the image's `PATH`,
    /// its private home and `/tmp`, nothing of assay's.
    fn env(&self) -> BTreeMap<String, String> {
        [
            ("PATH", CONTAINER_PATH),
            ("HOME", assay_docker::HOME_DIR),
            ("LANG", "C.UTF-8"),
            ("TMPDIR", "/tmp"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// How a build of `tree` (bound in place) ended.
    pub(crate) fn build(
        &self,
        tree: &Path,
        command: &str,
        within: Duration,
        log: &Path,
    ) -> Outcome {
        let image = match self.image() {
            Ok(image) => image,
            Err(o) => return o,
        };
        let run = ContainerRun {
            image,
            tree: tree.to_owned(),
            tree_mount: TreeMount::Bind,
            binds: Vec::new(),
            command: command.to_owned(),
            env: self.env(),
            timeout: within,
            log_path: log.to_owned(),
            log_cap: LOG_CAP,
            report: None,
            limits: self.limits(),
            tmp_size: self.conf.limits.tmp,
            home_size: self.conf.limits.home,
            watch: Vec::new(),
            protect: Vec::new(),
        };
        let executors = Arc::clone(&self.executors);
        let ran = self.handle.block_on(async move {
            let docker = executors
                .daemon()
                .client()
                .await
                .map_err(|e| e.to_string())?;
            docker
                .run_as(&run, "app-build")
                .await
                .map_err(|e| e.to_string())
        });
        let outcome = match ran {
            Ok(o) => o,
            Err(e) => {
                return Outcome::Harness {
                    detail: format!("cannot run the build: {e}"),
                };
            }
        };
        let tail = || deploy::tail(log);
        match (outcome.killed_by, outcome.exit_code) {
            (Some(KilledBy::WallClock), _) => Outcome::Fail {
                detail: format!("the build ran past {} s", within.as_secs()),
            },
            (Some(KilledBy::Memory), _) => Outcome::Fail {
                detail: format!("the build hit its memory limit: {}", tail()),
            },
            (Some(KilledBy::Written), _) => Outcome::Fail {
                detail: format!("the build hit its write limit: {}", tail()),
            },
            (None, Some(0)) => Outcome::Pass,
            (None, Some(code)) => Outcome::Fail {
                detail: format!("the build exited with {code}: {}", tail()),
            },
            (None, None) => Outcome::Fail {
                detail: format!("the build ended abnormally: {}", tail()),
            },
        }
    }

    /// Starts `start` over the built `tree` in a fresh container; the
    /// deployment layer's outcome when it does not come to listen. The
    /// same steps as a local deployment: the services' ports, the app's
    /// port still free (else [`Outcome::Taken`]), the go-ahead, the app's
    /// port. `bwrap` confines the browser that later reaches the app.
    pub(crate) fn start(
        &self,
        bwrap: &Bwrap,
        tree: &Path,
        start: &Start,
        log: &Path,
    ) -> Result<Deployment, Outcome> {
        let harness = |detail: String| Outcome::Harness { detail };
        let mut env = self.env();
        env.insert("ASSAY_START".to_owned(), start.command.clone());
        env.insert("PORT".to_owned(), start.port.to_string());
        let spec = ServeSpec {
            image: self.image()?,
            tree: tree.to_owned(),
            script: deploy::script(start),
            env,
            log_path: log.to_owned(),
            log_cap: LOG_CAP,
            limits: self.limits(),
            tmp_size: self.conf.limits.tmp,
            home_size: self.conf.limits.home,
        };
        let executors = Arc::clone(&self.executors);
        let serving = self
            .handle
            .block_on(async move {
                let daemon = executors.daemon();
                let docker = daemon.client().await.map_err(|e| e.to_string())?;
                match daemon.fleet() {
                    Some(fleet) => docker.serve_in(&spec, fleet).await,
                    None => docker.serve(&spec).await,
                }
                .map_err(|e| e.to_string())
            })
            .map_err(|e| harness(format!("cannot start the app's container: {e}")))?;
        let mut container = Container {
            serving: Some(serving),
            handle: self.handle.clone(),
        };
        let ns = NetNs::open(container.pid())
            .map_err(|e| harness(format!("the container's network namespace: {e}")))?;
        let pid = i32::try_from(container.pid())
            .map_err(|e| harness(format!("the container's first process: {e}")))?;
        let ready = Duration::from_secs(start.ready_s);
        for service in &start.services {
            if !deploy::wait_listening(&ns, pid, service.port, ready) {
                return Err(harness(format!(
                    "the task's service `{}` never listened on port {}",
                    service.command, service.port
                )));
            }
        }
        if deploy::listening(&ns, start.port) {
            return Err(Outcome::Taken {
                detail: format!(
                    "port {} was taken before the app started (by the task's services)",
                    start.port
                ),
            });
        }
        if container.say(b"go\n").is_err() {
            return Err(harness("the container ended before the app started".into()));
        }
        if deploy::wait_listening(&ns, pid, start.port, ready) {
            let held = Process::Container {
                pid,
                _held: Box::new(container),
            };
            return Ok(Deployment::held(held, ns, start.port, bwrap));
        }
        if container.wrote_over() {
            return Err(Outcome::Fail {
                detail: format!(
                    "the app wrote past its write limit before it listened on port {}: {}",
                    start.port,
                    deploy::tail(log)
                ),
            });
        }
        Err(match container.state() {
            Ok(ServingState::Exited { code, oom_killed }) => Outcome::Fail {
                detail: format!(
                    "the app {} without listening on port {}: {}",
                    match (oom_killed, code) {
                        (true, _) => "ran out of memory".to_owned(),
                        (false, Some(code)) => format!("exited with {code}"),
                        (false, None) => "exited".to_owned(),
                    },
                    start.port,
                    deploy::tail(log)
                ),
            },
            _ => Outcome::Fail {
                detail: format!(
                    "nothing listened on port {} within {} s: {}",
                    start.port,
                    start.ready_s,
                    deploy::tail(log)
                ),
            },
        })
    }
}

/// A deployment's container. Ended or dropped: removed, with every process
/// in it.
pub(crate) struct Container {
    serving: Option<Serving>,
    handle: tokio::runtime::Handle,
}

impl Container {
    /// Its first process, as this machine numbers it.
    fn pid(&self) -> u32 {
        self.serving.as_ref().map_or(0, Serving::pid)
    }

    /// Writes `line` to the script's stdin.
    fn say(&mut self, line: &'static [u8]) -> std::io::Result<()> {
        let Some(serving) = self.serving.as_mut() else {
            return Err(std::io::Error::other("the container was removed"));
        };
        self.handle.block_on(serving.say(line))
    }

    /// Whether the write watchdog killed it.
    fn wrote_over(&self) -> bool {
        self.serving.as_ref().is_some_and(Serving::wrote_over)
    }

    fn state(&self) -> Result<ServingState, String> {
        let Some(serving) = self.serving.as_ref() else {
            return Err("the container was removed".into());
        };
        self.handle
            .block_on(serving.state())
            .map_err(|e| e.to_string())
    }

    /// Removes the container and waits for its output to reach the log. A
    /// removal the daemon refused is retried by the container's guard (a
    /// forced removal on a thread of its own), and what a killed assay left
    /// by the next build's sweep; a log cut short only shortens the app's
    /// log, kept as evidence.
    fn end(&mut self) {
        if let Some(serving) = self.serving.take() {
            let _ = self.handle.block_on(serving.end());
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        self.end();
    }
}
