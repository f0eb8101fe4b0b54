//! The Docker daemon as the executors hold it, shared by every env and run
//! job of a build and by its Harbor containers (as bubblewrap's probe is):
//! the connection, made once and checked at the start of a build, and the
//! images the daemon held then, so that a cached environment whose image is
//! gone is never taken for a hit.
//!
//! A build that uses Docker starts with [`Daemon::start`], once per base
//! image: it fails at once, with what to do, when the daemon does not
//! answer or the base image is absent (nothing is ever pulled); the first
//! call removes the containers a killed assay left behind.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use assay_docker::{Docker, DockerError, ImageId};

use crate::run::error::{LaunchError, StageError};

/// The daemon's connection and what it held when the build started.
#[derive(Default)]
pub(crate) struct Daemon {
    client: tokio::sync::OnceCell<Result<Docker, LaunchError>>,
    /// The images in the daemon when the build started; `None` before
    /// [`Daemon::start`].
    present: Mutex<Option<BTreeSet<ImageId>>>,
    /// Whether the leftovers of killed builds were removed.
    swept: AtomicBool,
    /// The test containers started ahead and removed in the background,
    /// once a build started through [`Daemon::start`] or
    /// [`Daemon::sweep`] (which end with [`Daemon::finished`]).
    fleet: assay_docker::Fleet,
    /// Whether [`Daemon::start`] or [`Daemon::sweep`] ran: test runs go
    /// through the fleet.
    started: AtomicBool,
}

impl Daemon {
    /// The connection, made on first use (within `assay_docker::CONNECT_TIMEOUT`).
    pub(crate) async fn client(&self) -> Result<&Docker, LaunchError> {
        self.client
            .get_or_init(|| async {
                Docker::connect()
                    .await
                    .map_err(|e| LaunchError::Unavailable(e.to_string()))
            })
            .await
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The connection, or why the build cannot use the daemon.
    async fn connected(&self) -> Result<&Docker, StageError> {
        self.client().await.map_err(|e| {
            StageError::sandbox(
                e,
                "this pipeline needs a running Docker daemon (`docker info` checks it); or build with `--executor local` (Harbor datasets need the daemon whatever the executor)",
            )
        })
    }

    /// Connects and removes containers of dead assay processes, once, and
    /// notes which images the daemon holds: what a build whose Harbor tasks
    /// or instances run containers does first, whatever its executor. From
    /// then on its test runs go through the fleet, drained by
    /// [`Daemon::finished`]. What it removed, for the user.
    pub(crate) fn sweep(&self, rt: &tokio::runtime::Runtime) -> Result<Option<String>, StageError> {
        rt.block_on(async {
            let docker = self.connected().await?;
            let swept = self.sweep_with(docker).await?;
            let ids = docker.image_ids().await.map_err(unusable)?;
            let mut present = self.present.lock().unwrap_or_else(|p| p.into_inner());
            present.get_or_insert(ids);
            self.started.store(true, Ordering::SeqCst);
            Ok(swept)
        })
    }

    async fn sweep_with(&self, docker: &Docker) -> Result<Option<String>, StageError> {
        if self.swept.swap(true, Ordering::SeqCst) {
            return Ok(None);
        }
        let removed = docker.cleanup_leftovers().await.map_err(unusable)?;
        Ok((!removed.is_empty()).then(|| {
            format!(
                "docker: removed {} container(s) left by an assay that was killed",
                removed.len()
            )
        }))
    }

    /// Connects, removes containers of dead assay processes (once), checks
    /// that the base image is in the daemon, and notes which images are.
    /// What it removed, for the user.
    pub(crate) fn start(
        &self,
        rt: &tokio::runtime::Runtime,
        base: &str,
    ) -> Result<Option<String>, StageError> {
        rt.block_on(async {
            let docker = self.connected().await?;
            let swept = self.sweep_with(docker).await?;
            match docker.base_image(base).await {
                Ok(_) => {}
                Err(e @ DockerError::BaseImageMissing { .. }) => {
                    return Err(StageError::sandbox(
                        e,
                        "or `docker pull` / `docker load` an image yourself (a registry image works) and point `[env] base_image` at it",
                    ));
                }
                Err(e) => return Err(unusable(e)),
            }
            let ids = docker.image_ids().await.map_err(unusable)?;
            *self.present.lock().unwrap_or_else(|p| p.into_inner()) = Some(ids);
            self.started.store(true, Ordering::SeqCst);
            Ok(swept)
        })
    }

    /// The fleet a build's test runs go through, once [`Daemon::start`]
    /// ran; `None` elsewhere (a run is created and removed inline).
    pub(crate) fn fleet(&self) -> Option<&assay_docker::Fleet> {
        self.started.load(Ordering::SeqCst).then_some(&self.fleet)
    }

    /// After a build: removes the containers created ahead that no run
    /// took, and waits for every removal under way, so that no container
    /// of the build outlives it. What the user should know.
    pub(crate) fn finished(&self, rt: &tokio::runtime::Runtime) -> Option<String> {
        if !self.started.swap(false, Ordering::SeqCst) {
            return None;
        }
        let left = rt.block_on(self.fleet.drain());
        if std::env::var_os("ASSAY_PHASES").is_some() {
            eprintln!("phase docker fleet: {:?}", self.fleet.counts());
        }
        if left.is_empty() {
            return None;
        }
        Some(format!(
            "docker: {} container(s) could not be removed ({}); the next build removes them",
            left.len(),
            left.join(", ")
        ))
    }

    /// Whether `id` was in the daemon when the build started; `None` when
    /// nothing was checked (no build started, e.g. `verify --reexecute`).
    pub(crate) fn image_present(&self, id: &str) -> Option<bool> {
        let present = self.present.lock().unwrap_or_else(|p| p.into_inner());
        let ids = present.as_ref()?;
        Some(ImageId::parse(id).is_ok_and(|id| ids.contains(&id)))
    }

    /// After an interrupted build: removes every container this process
    /// started, if it talked to a daemon at all. Runs on a runtime of its own
    /// (the build's is shut down by then). What it removed, or why it could
    /// not, for the user.
    pub(crate) fn remove_own_containers(&self) -> Option<String> {
        if !matches!(self.client.get(), Some(Ok(_))) {
            return None;
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async {
            // A fresh client: the build's was bound to the runtime just shut down.
            let docker = match Docker::connect().await {
                Ok(d) => d,
                Err(e) => {
                    return Some(format!(
                        "interrupted: could not remove this build's containers: {e}"
                    ));
                }
            };
            // A create cancelled in flight still makes its container on the
            // daemon, a moment later: keep looking until two looks find none.
            let mut removed = 0;
            let mut quiet = 0;
            for _ in 0..50 {
                match docker.remove_own().await {
                    Ok(ids) if ids.is_empty() => quiet += 1,
                    Ok(ids) => {
                        removed += ids.len();
                        quiet = 0;
                    }
                    Err(_) => quiet = 0,
                }
                if quiet >= 2 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            }
            (removed > 0)
                .then(|| format!("interrupted: removed {removed} container(s) of this build"))
        })
    }
}

/// A daemon that answered, then failed.
fn unusable(e: DockerError) -> StageError {
    StageError::sandbox(e, "check the daemon with `docker info`")
}
