//! Deployments: a fresh container that keeps serving until assay ends it —
//! an app task's start command, probed and browsed from outside.
//!
//! The container is a test run's ([`crate::Docker::run`]): no network but
//! its own loopback, a read-only root, the tree uploaded into a fresh
//! volume as the image's run user, that user without capabilities or new
//! privileges, CPU/memory/pids limits and rlimits, the write watchdog over
//! the tree's volume, output captured under a cap, labelled with its owner.
//! Two things differ: its stdin stays open for one line of go-ahead (the
//! caller's protocol with its script), and it has no wall-clock budget —
//! it lives until [`Serving::end`], or until the [`Serving`] is dropped
//! (its guard force-removes it). Removing a container kills every process
//! in its pid namespace and cgroup, so a process the app forked away, a
//! daemon that called `setsid` included, ends with it.
//!
//! The caller reaches the app through the container's network namespace:
//! [`Serving::pid`] is the container's first process as the host sees it
//! (`State.Pid`), whose `/proc/<pid>/ns/net` a thread of the caller joins.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use assay_exec::writes::Processes;
use bollard::query_parameters::KillContainerOptions;
use tokio::io::AsyncWrite;
use tokio::task::JoinHandle;

use crate::capture::{Captured, capture};
use crate::container::{Blueprint, Held, go_failed, say, tell};
use crate::fleet::Fleet;
use crate::spec::TREE_DIR;
use crate::{ContainerRun, Docker, DockerError, ImageId, Limits, TreeMount, command, run};

/// After the container is removed its attached output ends at once; this
/// bounds the wait for that end.
const OUTPUT_GRACE: Duration = Duration::from_secs(10);

/// One deployment's container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeSpec {
    /// An image made by [`crate::Docker::build_image`]: its `assay.user`
    /// label says who runs.
    pub image: ImageId,
    /// Host directory uploaded to [`TREE_DIR`] (the working directory),
    /// owned there by the image's run user.
    pub tree: PathBuf,
    /// Run as `/bin/sh -c <script>`, stdin open.
    pub script: String,
    /// The script's whole environment: nothing of the host's or the image's.
    pub env: BTreeMap<String, String>,
    /// stdout and stderr interleaved (created or truncated).
    pub log_path: PathBuf,
    /// Bytes kept in the log; the rest is drained and counted.
    pub log_cap: u64,
    pub limits: Limits,
    /// Size of the `/tmp` tmpfs, in bytes.
    pub tmp_size: u64,
    /// Size of the home tmpfs, in bytes.
    pub home_size: u64,
}

/// A started deployment container. Dropped without [`Serving::end`]: its
/// guard force-removes it on a thread of its own.
pub struct Serving {
    held: Option<Held>,
    pid: u32,
    stdin: Option<Pin<Box<dyn AsyncWrite + Send>>>,
    capturing: JoinHandle<Captured<tokio::fs::File>>,
    watchdog: Option<JoinHandle<()>>,
    wrote_over: Arc<AtomicBool>,
    log_path: PathBuf,
}

/// A deployment container's state, as the daemon reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServingState {
    Running,
    /// Its first process ended: with this code (`None`: not reported).
    Exited {
        code: Option<i32>,
        oom_killed: bool,
    },
}

impl Docker {
    /// Creates, fills and starts a deployment container of `spec.image`;
    /// see the module header for what it may do.
    pub async fn serve(&self, spec: &ServeSpec) -> Result<Serving, DockerError> {
        self.serve_with(spec, None).await
    }

    /// [`Docker::serve`] with `fleet`: the container one started ahead of
    /// its spec and parked when there is one (told the script's argv with
    /// its go-ahead line, its stdin left open for the caller's), and the
    /// next of the spec started ahead while it serves. A deployment's spec
    /// is its image, user and limits, like a test run's, but a container
    /// parked for one is never a test run's ([`crate::fleet`]).
    pub async fn serve_in(&self, spec: &ServeSpec, fleet: &Fleet) -> Result<Serving, DockerError> {
        self.serve_with(spec, Some(fleet)).await
    }

    async fn serve_with(
        &self,
        spec: &ServeSpec,
        fleet: Option<&Fleet>,
    ) -> Result<Serving, DockerError> {
        let runs = self.image_run(&spec.image).await?;
        let argv = command::shell(&spec.env, &spec.script)?;
        let log = tokio::fs::File::create(&spec.log_path)
            .await
            .map_err(|source| DockerError::Log {
                path: spec.log_path.clone(),
                source,
            })?;
        // The container of a test run over the same tree, for its host
        // configuration, its upload and its watchdog.
        let as_run = ContainerRun {
            image: spec.image.clone(),
            tree: spec.tree.clone(),
            tree_mount: TreeMount::Upload,
            binds: Vec::new(),
            command: spec.script.clone(),
            env: spec.env.clone(),
            timeout: Duration::MAX,
            log_path: spec.log_path.clone(),
            log_cap: spec.log_cap,
            report: None,
            limits: spec.limits,
            tmp_size: spec.tmp_size,
            home_size: spec.home_size,
            watch: Vec::new(),
            protect: Vec::new(),
        };
        let blueprint = Blueprint {
            image: spec.image.to_string(),
            user: Some(runs.user.to_string()),
            working_dir: Some(TREE_DIR),
            argv,
            stage: "app",
            labels: HashMap::new(),
            stdin: true,
            host_config: run::host_config(&as_run, &runs),
        };
        let (container, ahead, parked) = self.obtain(&as_run, blueprint, fleet).await?;
        let here = run::host_tree(&container, &as_run).await?;
        run::upload(&container, &as_run, runs.user, here.as_deref()).await?;
        let watch = match spec.limits.written {
            Some(limit) => Some(run::tree_watch(here.as_deref(), limit).await?),
            None => None,
        };
        let (output, stdin) = match parked {
            // Started already: told its argv, its stdin kept for the app's
            // go-ahead.
            Some(parked) => {
                let mut stdin = parked.attached.input;
                tell(&mut stdin, &parked.go).await.map_err(go_failed)?;
                (parked.attached.output, stdin)
            }
            None => {
                let attached = crate::container::attach(&self.api, &container.id, true).await?;
                self.api
                    .start_container(&container.id, None)
                    .await
                    .map_err(DockerError::api("start a container"))?;
                (attached.output, attached.input)
            }
        };
        let capturing = tokio::spawn(capture(output, log, spec.log_cap));
        if let (Some(fleet), Some(ahead)) = (fleet, ahead) {
            fleet.ahead(&self.api, &ahead.key, ahead.body);
        }
        let inspected = self
            .api
            .inspect_container(&container.id, None)
            .await
            .map_err(DockerError::api("inspect a started container"))?;
        let pid = inspected
            .state
            .and_then(|state| state.pid)
            .and_then(|pid| u32::try_from(pid).ok())
            .filter(|&pid| pid > 0);
        let held = container.hold();
        let Some(pid) = pid else {
            return Err(DockerError::Api {
                action: "find a started container's first process".into(),
                source: bollard::errors::Error::IOError {
                    err: std::io::Error::other("the daemon reports no pid: it already ended"),
                },
            });
        };
        let wrote_over = Arc::new(AtomicBool::new(false));
        let watchdog = watch.map(|watch| {
            let (api, id, flag) = (held.api.clone(), held.id.clone(), Arc::clone(&wrote_over));
            let processes = i32::try_from(pid).map_or(Processes::None, Processes::Tree);
            tokio::spawn(async move {
                watch.overrun(processes).await;
                flag.store(true, Ordering::SeqCst);
                let options = KillContainerOptions {
                    signal: "KILL".to_owned(),
                };
                let _ = api.kill_container(&id, Some(options)).await;
            })
        });
        Ok(Serving {
            held: Some(held),
            pid,
            stdin: Some(stdin),
            capturing,
            watchdog,
            wrote_over,
            log_path: spec.log_path.clone(),
        })
    }
}

impl Serving {
    /// The container's first process, as the host numbers it.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The container's id.
    pub fn id(&self) -> &str {
        self.held.as_ref().map_or("", |h| h.id.as_str())
    }

    /// Writes `line` to the container's stdin, then closes it.
    pub async fn say(&mut self, line: &[u8]) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("the container's stdin was closed"))?;
        say(stdin, line).await
    }

    /// Whether the write watchdog killed it: its tree went past
    /// [`Limits::written`].
    pub fn wrote_over(&self) -> bool {
        self.wrote_over.load(Ordering::SeqCst)
    }

    /// Whether its first process still runs, as the daemon says.
    pub async fn state(&self) -> Result<ServingState, DockerError> {
        let Some(held) = &self.held else {
            return Ok(ServingState::Exited {
                code: None,
                oom_killed: false,
            });
        };
        let inspected = held
            .api
            .inspect_container(&held.id, None)
            .await
            .map_err(DockerError::api("inspect a deployment's container"))?;
        let state = inspected.state.unwrap_or_default();
        Ok(if state.running.unwrap_or(false) {
            ServingState::Running
        } else {
            ServingState::Exited {
                code: state.exit_code.and_then(|c| i32::try_from(c).ok()),
                oom_killed: state.oom_killed.unwrap_or(false),
            }
        })
    }

    /// Removes the container (every process in it dies with it) and waits
    /// for its output to reach the log.
    pub async fn end(mut self) -> Result<(), DockerError> {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.abort();
        }
        self.stdin = None;
        let mut ph = crate::phase::Phases::new("docker serve");
        if let Some(held) = self.held.take() {
            held.remove().await?;
        }
        ph.mark("end");
        match tokio::time::timeout(OUTPUT_GRACE, &mut self.capturing).await {
            Ok(Ok(captured)) => match captured.write_error {
                Some(source) => Err(DockerError::Log {
                    path: self.log_path.clone(),
                    source,
                }),
                None => Ok(()),
            },
            Ok(Err(join)) => Err(DockerError::Api {
                action: "collect a deployment's output".into(),
                source: bollard::errors::Error::IOError {
                    err: std::io::Error::other(join),
                },
            }),
            Err(_) => {
                self.capturing.abort();
                Err(DockerError::Api {
                    action: "close a removed deployment's output".into(),
                    source: bollard::errors::Error::RequestTimeoutError,
                })
            }
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.abort();
        }
        self.capturing.abort();
    }
}
