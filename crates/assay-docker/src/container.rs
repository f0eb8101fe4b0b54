//! One container's life, shared by setup and test runs: create it labelled
//! with its owner, feed it a tar, run it attached with a wall-clock budget,
//! read how it ended, and remove it, whatever happens.
//!
//! Removal is guaranteed three ways: [`Container::remove`] on every path the
//! caller controls; a guard that removes it when the future is dropped (the
//! caller was cancelled, or a step failed with `?`); and the owner labels,
//! which let [`crate::Docker::cleanup_leftovers`] remove what a killed assay
//! left behind.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use assay_exec::writes::{Processes, WriteWatch};

use bollard::body_try_stream;
use bollard::container::AttachContainerResults;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    AttachContainerOptions, ContainerArchiveInfoOptions, CreateContainerOptions,
    DownloadFromContainerOptions, KillContainerOptions, RemoveContainerOptions,
    UploadToContainerOptions, WaitContainerOptions,
};
use bytes::Bytes;
use futures_util::{Stream, StreamExt, TryStreamExt};
use tokio::io::{AsyncWrite, AsyncWriteExt as _};

use crate::capture::{Captured, capture};
use crate::command::Argv;
use crate::error::status;
use crate::{Docker, DockerError, owner};

/// After the container exits its attached output ends at once; this bounds
/// the wait for that end if the daemon is slow to close the stream.
const OUTPUT_GRACE: Duration = Duration::from_secs(10);
/// A killed container is gone within moments; past this the daemon is stuck.
const KILL_GRACE: Duration = Duration::from_secs(30);

pub(crate) struct Container<'d> {
    docker: &'d Docker,
    pub(crate) id: String,
    /// What it is for ([`Blueprint::stage`]).
    stage: &'static str,
    guard: Guard,
}

/// How the container's main process ended, as the daemon saw it.
pub(crate) struct Ended<W> {
    pub(crate) exit_code: Option<i32>,
    pub(crate) timed_out: bool,
    /// The write watchdog killed it.
    pub(crate) wrote_over: bool,
    pub(crate) oom_killed: bool,
    pub(crate) duration: Duration,
    pub(crate) output: Captured<W>,
}

/// What a setup or test container is made of; [`Container::create`] adds
/// what every container shares (owner labels, attached output).
pub(crate) struct Blueprint {
    pub(crate) image: String,
    /// `None`: the image's own user.
    pub(crate) user: Option<String>,
    /// `None`: the image's own working directory.
    pub(crate) working_dir: Option<&'static str>,
    pub(crate) argv: Argv,
    pub(crate) stage: &'static str,
    /// Labels beside the owner labels.
    pub(crate) labels: HashMap<String, String>,
    pub(crate) host_config: HostConfig,
    /// Its stdin open, for one writer to attach to (a deployment's
    /// go-ahead); closed at the first detach.
    pub(crate) stdin: bool,
}

impl<'d> Container<'d> {
    pub(crate) async fn create(
        docker: &'d Docker,
        blueprint: Blueprint,
    ) -> Result<Self, DockerError> {
        let stage = blueprint.stage;
        let held = create_held(&docker.api, body(blueprint)).await?;
        Ok(Self::adopt(docker, held, stage))
    }

    /// A container created earlier ([`create_held`]), held again with its
    /// [`Docker`] for its run.
    pub(crate) fn adopt(docker: &'d Docker, held: Held, stage: &'static str) -> Self {
        Self {
            docker,
            id: held.id,
            stage,
            guard: held.guard,
        }
    }

    /// Extracts a tar at `path` in the container's filesystem.
    pub(crate) async fn upload(
        &self,
        path: &str,
        tar: impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    ) -> Result<(), DockerError> {
        let options = UploadToContainerOptions {
            path: path.to_owned(),
            ..Default::default()
        };
        self.docker
            .long
            .upload_to_container(&self.id, Some(options), body_try_stream(tar))
            .await
            .map_err(DockerError::api(format!("upload a tar to {path}")))
    }

    /// Extracts at `path` a tar that `producer` writes as it walks the host
    /// directory `from`: the upload's error, or the walk's (named by `from`)
    /// unless the walk only broke off because the upload had failed.
    pub(crate) async fn upload_walked(
        &self,
        path: &str,
        (tar, producer): (
            impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
            tokio::task::JoinHandle<std::io::Result<()>>,
        ),
        from: &std::path::Path,
    ) -> Result<(), DockerError> {
        let uploaded = self.upload(path, tar).await;
        let produced = producer
            .await
            .unwrap_or_else(|join| Err(std::io::Error::other(join)));
        match (uploaded, produced) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(error), Err(walk)) if walk.kind() == std::io::ErrorKind::BrokenPipe => Err(error),
            (_, Err(source)) => Err(DockerError::Tree {
                path: from.to_owned(),
                source,
            }),
            (Err(error), Ok(())) => Err(error),
        }
    }

    /// Attach, start, wait at most `timeout` (then SIGKILL; the same once
    /// `watch` finds the tree over its write limit), collect the output into
    /// `sink` (at most `cap` bytes) and read the final state. A container
    /// started ahead and `parked` ([`crate::fleet`]) is told to go on the
    /// stdin it was attached with instead; its clock starts then.
    pub(crate) async fn drive<W>(
        &self,
        sink: W,
        cap: u64,
        timeout: Duration,
        watch: Option<&WriteWatch>,
        parked: Option<Parked>,
    ) -> Result<Ended<W>, DockerError>
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let mut ph = crate::phase::Phases::new(match self.stage {
            "test" => "docker test",
            "setup" => "docker setup",
            _ => "docker foreign",
        });
        let (output, go) = match parked {
            Some(parked) => (
                parked.attached.output,
                Some((parked.attached.input, parked.go)),
            ),
            None => (
                attach(&self.docker.api, &self.id, false).await?.output,
                None,
            ),
        };
        // A task of its own, so the output keeps draining while we wait; it
        // ends with the stream, which ends when the container is gone.
        let mut capturing = tokio::spawn(capture(output, sink, cap));
        ph.mark("attach");
        match go {
            Some((stdin, argv)) => say(stdin, &argv).await.map_err(go_failed)?,
            None => self
                .docker
                .api
                .start_container(&self.id, None)
                .await
                .map_err(DockerError::api("start a container"))?,
        }
        let started = Instant::now();
        ph.mark("start");
        let processes = match watch {
            Some(_) => self.processes().await?,
            None => Processes::None,
        };
        let overrun = async {
            match watch {
                Some(w) => w.overrun(processes).await,
                None => std::future::pending().await,
            }
        };
        let (timed_out, wrote_over) = tokio::select! {
            waited = self.wait() => {
                waited?;
                (false, false)
            }
            () = tokio::time::sleep(timeout) => (true, false),
            _ = overrun => (false, true),
        };
        if timed_out || wrote_over {
            self.kill().await?;
            tokio::time::timeout(KILL_GRACE, self.wait())
                .await
                .map_err(|_| DockerError::Api {
                    action: "stop a killed container".into(),
                    source: bollard::errors::Error::RequestTimeoutError,
                })??;
        }
        let duration = started.elapsed();
        ph.mark("wait");
        let output = match tokio::time::timeout(OUTPUT_GRACE, &mut capturing).await {
            Ok(joined) => joined.map_err(|join| DockerError::Api {
                action: "collect a container's output".into(),
                source: bollard::errors::Error::IOError {
                    err: std::io::Error::other(join),
                },
            })?,
            Err(_) => {
                capturing.abort();
                return Err(DockerError::Api {
                    action: "close a stopped container's output".into(),
                    source: bollard::errors::Error::RequestTimeoutError,
                });
            }
        };
        if let Some(source) = output.read_error {
            return Err(DockerError::Api {
                action: "read a container's output".into(),
                source,
            });
        }
        let inspected = self
            .docker
            .api
            .inspect_container(&self.id, None)
            .await
            .map_err(DockerError::api("inspect a stopped container"))?;
        let state = inspected.state.unwrap_or_default();
        ph.mark("output and state");
        Ok(Ended {
            exit_code: if timed_out {
                None
            } else {
                state.exit_code.and_then(|code| i32::try_from(code).ok())
            },
            timed_out,
            wrote_over,
            oom_killed: state.oom_killed.unwrap_or(false),
            duration,
            output: Captured {
                read_error: None,
                ..output
            },
        })
    }

    /// The processes of the started container, for the write watchdog: its
    /// first process and its descendants (none if it already exited).
    async fn processes(&self) -> Result<Processes, DockerError> {
        let inspected = self
            .docker
            .api
            .inspect_container(&self.id, None)
            .await
            .map_err(DockerError::api("inspect a started container"))?;
        let pid = inspected
            .state
            .and_then(|state| state.pid)
            .and_then(|pid| i32::try_from(pid).ok())
            .filter(|&pid| pid > 0);
        Ok(pid.map_or(Processes::None, Processes::Tree))
    }

    /// Where the volume mounted at `target` lives on the daemon's host.
    pub(crate) async fn volume_source(&self, target: &str) -> Result<PathBuf, DockerError> {
        let inspected = self
            .docker
            .api
            .inspect_container(&self.id, None)
            .await
            .map_err(DockerError::api("inspect a created container"))?;
        inspected
            .mounts
            .into_iter()
            .flatten()
            .find(|m| m.destination.as_deref() == Some(target))
            .and_then(|m| m.source)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| DockerError::TreeVolume {
                path: PathBuf::from(target),
                source: std::io::Error::other("the daemon names no volume mounted there"),
            })
    }

    /// Until the container is not running. A non-zero exit is reported by
    /// bollard as an error; here it is just the end.
    async fn wait(&self) -> Result<(), DockerError> {
        let options = WaitContainerOptions {
            condition: "not-running".to_owned(),
        };
        let mut waiting = self.docker.long.wait_container(&self.id, Some(options));
        match waiting.next().await {
            Some(Ok(_)) | Some(Err(bollard::errors::Error::DockerContainerWaitError { .. })) => {
                Ok(())
            }
            Some(Err(source)) => Err(DockerError::Api {
                action: "wait for a container".into(),
                source,
            }),
            None => Err(DockerError::Api {
                action: "wait for a container".into(),
                source: bollard::errors::Error::IOError {
                    err: std::io::ErrorKind::UnexpectedEof.into(),
                },
            }),
        }
    }

    async fn kill(&self) -> Result<(), DockerError> {
        let options = KillContainerOptions {
            signal: "KILL".to_owned(),
        };
        match self
            .docker
            .api
            .kill_container(&self.id, Some(options))
            .await
        {
            // 409: it exited just now, on its own.
            Err(error) if status(&error) == Some(409) => Ok(()),
            other => other.map_err(DockerError::api("kill a container")),
        }
    }

    /// `stat` of a path in the (stopped) container, without following a
    /// final symlink; `None` if it does not exist.
    pub(crate) async fn stat(
        &self,
        path: &str,
    ) -> Result<Option<bollard::container::PathStatResponse>, DockerError> {
        let options = ContainerArchiveInfoOptions {
            path: path.to_owned(),
        };
        match self
            .docker
            .api
            .get_container_archive_info(&self.id, Some(options))
            .await
        {
            Ok(stat) => Ok(Some(stat)),
            Err(error) if status(&error) == Some(404) => Ok(None),
            Err(source) => Err(DockerError::Api {
                action: format!("stat {path} in a container"),
                source,
            }),
        }
    }

    /// A tar of `path` in the container.
    pub(crate) async fn download(&self, path: &str) -> Result<Vec<u8>, DockerError> {
        let options = DownloadFromContainerOptions {
            path: path.to_owned(),
        };
        let chunks: Vec<Bytes> = self
            .docker
            .long
            .download_from_container(&self.id, Some(options))
            .try_collect()
            .await
            .map_err(DockerError::api(format!(
                "download {path} from a container"
            )))?;
        Ok(chunks.concat())
    }

    /// The fingerprints of the `watch`ed files below `path`, read from a
    /// streamed tar of it: see [`archive::fingerprints`](crate::archive::fingerprints).
    pub(crate) async fn fingerprints(
        &self,
        path: &str,
        watch: &[std::path::PathBuf],
    ) -> Result<std::collections::BTreeMap<std::path::PathBuf, Option<[u8; 32]>>, DockerError> {
        let owned = watch.to_vec();
        self.read_tar(path, "the tree after the run", move |rx| {
            crate::archive::fingerprints(rx, &owned)
        })
        .await
    }

    /// A tar of `path` streamed to `read` on a blocking thread, which takes
    /// what it keeps as the chunks arrive: nothing holds the whole archive.
    pub(crate) async fn read_tar<T: Send + 'static>(
        &self,
        path: &str,
        what: &'static str,
        read: impl FnOnce(tokio::sync::mpsc::Receiver<Bytes>) -> std::io::Result<T> + Send + 'static,
    ) -> Result<T, DockerError> {
        let options = DownloadFromContainerOptions {
            path: path.to_owned(),
        };
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let reader = tokio::task::spawn_blocking(move || read(rx));
        let mut download = self
            .docker
            .long
            .download_from_container(&self.id, Some(options));
        while let Some(chunk) = download.next().await {
            let chunk = chunk.map_err(DockerError::api(format!(
                "download {path} from a container"
            )))?;
            // The reader stops at the archive's end; what follows is padding.
            if tx.send(chunk).await.is_err() {
                break;
            }
        }
        drop(tx);
        reader
            .await
            .unwrap_or_else(|join| Err(std::io::Error::other(join)))
            .map_err(|source| DockerError::Archive { what, source })
    }

    /// The container as a handle that borrows nothing: its id and the guard
    /// that removes it when dropped.
    pub(crate) fn hold(self) -> Held {
        Held {
            api: self.docker.api.clone(),
            id: self.id,
            guard: self.guard,
        }
    }

    /// Removes the container and its anonymous volumes (the run's tree).
    pub(crate) async fn remove(mut self) -> Result<(), DockerError> {
        remove(&self.docker.api, &self.id)
            .await
            .map_err(DockerError::api("remove a container"))?;
        self.guard.id = None;
        Ok(())
    }
}

/// The daemon's create request for `blueprint`, with what every container
/// shares (owner labels, attached output).
pub(crate) fn body(blueprint: Blueprint) -> ContainerCreateBody {
    ContainerCreateBody {
        image: Some(blueprint.image),
        user: blueprint.user,
        hostname: Some("assay".to_owned()),
        working_dir: blueprint.working_dir.map(str::to_owned),
        entrypoint: Some(blueprint.argv.entrypoint),
        cmd: Some(blueprint.argv.cmd),
        labels: Some(
            blueprint
                .labels
                .into_iter()
                .chain(owner::labels(blueprint.stage))
                .collect(),
        ),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        attach_stdin: Some(blueprint.stdin),
        open_stdin: Some(blueprint.stdin),
        stdin_once: Some(blueprint.stdin),
        network_disabled: Some(blueprint.host_config.network_mode.as_deref() == Some("none")),
        host_config: Some(blueprint.host_config),
        ..Default::default()
    }
}

/// A container started ahead and parked, claimed by a run
/// ([`crate::fleet`]): its attached output and stdin, and the go-ahead
/// that tells it the run's argv.
pub(crate) struct Parked {
    pub(crate) attached: AttachContainerResults,
    pub(crate) go: Vec<u8>,
}

/// Why a parked container could not be told its go-ahead.
pub(crate) fn go_failed(err: std::io::Error) -> DockerError {
    DockerError::Api {
        action: "tell a parked container to go".into(),
        source: bollard::errors::Error::IOError { err },
    }
}

/// Writes `line` to a container's attached stdin, which stays open.
pub(crate) async fn tell(
    stdin: &mut std::pin::Pin<Box<dyn AsyncWrite + Send>>,
    line: &[u8],
) -> std::io::Result<()> {
    stdin.write_all(line).await?;
    stdin.flush().await
}

/// Writes `line` to a container's attached stdin, then closes it.
pub(crate) async fn say(
    mut stdin: std::pin::Pin<Box<dyn AsyncWrite + Send>>,
    line: &[u8],
) -> std::io::Result<()> {
    tell(&mut stdin, line).await?;
    stdin.shutdown().await
}

/// Attaches to container `id`'s output as a stream, and to its stdin when
/// `stdin`: before its start, so nothing it writes is missed.
pub(crate) async fn attach(
    api: &bollard::Docker,
    id: &str,
    stdin: bool,
) -> Result<AttachContainerResults, DockerError> {
    let options = AttachContainerOptions {
        stream: true,
        stdin,
        stdout: true,
        stderr: true,
        ..Default::default()
    };
    api.attach_container(id, Some(options))
        .await
        .map_err(DockerError::api("attach to a container"))
}

/// Creates a container of `body`, held by its guard from the moment the
/// daemon names it.
pub(crate) async fn create_held(
    api: &bollard::Docker,
    body: ContainerCreateBody,
) -> Result<Held, DockerError> {
    let created = api
        .create_container(None::<CreateContainerOptions>, body)
        .await
        .map_err(DockerError::api("create a container"))?;
    Ok(Held {
        api: api.clone(),
        guard: Guard {
            api: api.clone(),
            id: Some(created.id.clone()),
        },
        id: created.id,
    })
}

/// A created container held without a borrow of its [`Docker`]: removed by
/// [`Held::remove`], else by its guard when dropped.
pub(crate) struct Held {
    pub(crate) api: bollard::Docker,
    pub(crate) id: String,
    guard: Guard,
}

impl Held {
    /// Removes the container and its anonymous volumes.
    pub(crate) async fn remove(mut self) -> Result<(), DockerError> {
        remove(&self.api, &self.id)
            .await
            .map_err(DockerError::api("remove a container"))?;
        self.guard.id = None;
        Ok(())
    }

    /// Removes the container and its anonymous volumes; when the daemon
    /// fails to, hands it back, still guarded.
    pub(crate) async fn try_remove(mut self) -> Result<(), Self> {
        match remove(&self.api, &self.id).await {
            Ok(()) => {
                self.guard.id = None;
                Ok(())
            }
            Err(_) => Err(self),
        }
    }
}

async fn remove(api: &bollard::Docker, id: &str) -> Result<(), bollard::errors::Error> {
    let options = RemoveContainerOptions {
        force: true,
        v: true,
        ..Default::default()
    };
    // A conflict (409) is another remover at work (a concurrent build
    // cleaning up leftovers, a drop guard), or the daemon still busy with
    // the container (a start in flight when its run was dropped): asked
    // again until it is gone (404), for a few seconds, so a container whose
    // start was cut does not stay behind, created and never removed.
    for _ in 0..40 {
        match api.remove_container(id, Some(options.clone())).await {
            Err(error) if status(&error) == Some(404) => return Ok(()),
            Err(error) if status(&error) == Some(409) => {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            other => return other,
        }
    }
    Ok(())
}

/// Force-removes the container when dropped armed. `Drop` cannot await, and
/// the runtime that dropped us may itself be shutting down, so the removal
/// runs on a thread of its own with its own small runtime.
struct Guard {
    api: bollard::Docker,
    id: Option<String>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let api = self.api.clone();
        let _ = std::thread::Builder::new()
            .name("assay-docker-rm".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                if let Ok(runtime) = runtime {
                    let _ = runtime.block_on(remove(&api, &id));
                }
            });
    }
}

/// Force-removes a container by id (used on leftovers).
pub(crate) async fn remove_by_id(docker: &Docker, id: &str) -> Result<(), DockerError> {
    remove(&docker.api, id)
        .await
        .map_err(DockerError::api(format!("remove container {id}")))
}
