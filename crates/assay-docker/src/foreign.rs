//! Containers of an image assay did not build — a Harbor task's
//! environment — run as the image says (its own user, working directory
//! and files) inside assay's confinement: no network unless the spec asks
//! for the default bridge (a task that declares the network), no new privileges,
//! only the capabilities a task's scripts use to own and chmod files, the
//! caller's limits, no log driver. Each is labelled with its owner like
//! every assay container ([`crate::Docker::cleanup_leftovers`] finds it),
//! and removed on every path: by [`ForeignContainer::remove`], else by its
//! guard when dropped.
//!
//! Host directories go in as one streamed tar, walked without following a
//! symlink (a symlink goes in as a symlink; no entry passes through one),
//! every entry root's as `docker cp` makes them. A directory's files come
//! out read from a streamed tar, each up to a cap and all up to another.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use bollard::models::HostConfig;

use crate::command::Argv;
use crate::container::{Blueprint, Container};
use crate::error::status;
use crate::{Docker, DockerError, Limits, archive, limits};

/// The capabilities a foreign container keeps (Docker's defaults less
/// everything a verifier does not need to run as root in its own files).
const CAPABILITIES: [&str; 6] = [
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "SETUID",
    "SETGID",
];

/// What a foreign container is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignSpec {
    /// A tag or an id.
    pub image: String,
    /// Run as `sh -c SCRIPT` (the image's entrypoint is replaced).
    pub script: String,
    pub limits: Limits,
    /// Labels beside assay's owner labels.
    pub labels: HashMap<String, String>,
    /// Whether it is on the daemon's default bridge (it reaches what the
    /// machine reaches); else it has only a loopback.
    pub network: bool,
}

/// What assay reads of a foreign image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignImage {
    /// The image's id (`sha256:…`) as the daemon names it.
    pub id: String,
    /// Its `WORKDIR`; empty when it sets none.
    pub working_dir: String,
    /// Its `ENV` entries (`KEY=value`), in the image's order.
    pub env: Vec<String>,
    /// Its `USER` as written (a name or `uid[:gid]`); empty when it sets
    /// none (root).
    pub user: String,
}

/// How a foreign container's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignRan {
    /// `None` when it was killed past its budget.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
}

/// A created foreign container; removed when dropped.
pub struct ForeignContainer<'d> {
    container: Container<'d>,
}

impl Docker {
    /// The id, working directory and environment of `image`.
    pub async fn inspect_foreign(&self, image: &str) -> Result<ForeignImage, DockerError> {
        let inspected = self.inspect_image(image).await?;
        let config = inspected.config.unwrap_or_default();
        Ok(ForeignImage {
            id: inspected.id.unwrap_or_default(),
            working_dir: config.working_dir.unwrap_or_default(),
            env: config.env.unwrap_or_default(),
            user: config.user.unwrap_or_default(),
        })
    }

    /// A fresh container of `spec.image`, created, not started.
    pub async fn create_foreign(
        &self,
        spec: &ForeignSpec,
    ) -> Result<ForeignContainer<'_>, DockerError> {
        let caps = |names: &[&str]| Some(names.iter().map(|&n| n.to_owned()).collect());
        let blueprint = Blueprint {
            image: spec.image.clone(),
            user: None,
            working_dir: None,
            argv: Argv {
                entrypoint: vec!["sh".to_owned()],
                cmd: vec!["-c".to_owned(), spec.script.clone()],
            },
            stage: "foreign",
            labels: spec.labels.clone(),
            stdin: false,
            host_config: HostConfig {
                network_mode: Some(if spec.network { "bridge" } else { "none" }.to_owned()),
                cap_drop: caps(&["ALL"]),
                cap_add: caps(&CAPABILITIES),
                ..limits::host_config(&spec.limits)
            },
        };
        let container = match Container::create(self, blueprint).await {
            Err(DockerError::Api { source, .. }) if status(&source) == Some(404) => {
                return Err(DockerError::ImageMissing {
                    id: spec.image.clone(),
                });
            }
            created => created?,
        };
        Ok(ForeignContainer { container })
    }
}

impl Docker {
    /// `container` (of the image `image`, run or not) committed as an
    /// image whose `WORKDIR` is `working_dir`: its files the container's,
    /// its configuration `image`'s otherwise (entrypoint and command
    /// included; the daemon fills what is not given from the container).
    pub async fn commit_foreign(
        &self,
        container: &ForeignContainer<'_>,
        image: &str,
        working_dir: &str,
    ) -> Result<crate::ImageId, DockerError> {
        let original = self.inspect_image(image).await?.config.unwrap_or_default();
        let config = bollard::models::ContainerConfig {
            working_dir: Some(working_dir.to_owned()),
            entrypoint: original.entrypoint,
            cmd: Some(original.cmd.unwrap_or_else(|| vec!["/bin/sh".to_owned()])),
            ..Default::default()
        };
        let options = bollard::query_parameters::CommitContainerOptions {
            container: Some(container.container.id.clone()),
            comment: Some(format!("{image} with WORKDIR {working_dir}")),
            ..Default::default()
        };
        let committed = self
            .long
            .commit_container(options, config)
            .await
            .map_err(DockerError::api("commit a foreign container"))?;
        crate::ImageId::parse(&committed.id)
    }
}

impl ForeignContainer<'_> {
    /// The container's id.
    pub fn id(&self) -> &str {
        &self.container.id
    }

    /// Each host directory's content into its absolute container
    /// directory (made if missing), in one upload.
    pub async fn upload_dirs(&self, dirs: &[(PathBuf, String)]) -> Result<(), DockerError> {
        let mut rooted = Vec::with_capacity(dirs.len());
        for (from, to) in dirs {
            let rel = to.strip_prefix('/').unwrap_or(to);
            archive::relative(rel, "container directory")?;
            rooted.push((from.clone(), PathBuf::from(rel)));
        }
        let first = dirs
            .first()
            .map(|(from, _)| from.clone())
            .unwrap_or_default();
        self.container
            .upload_walked("/", archive::dirs(rooted), &first)
            .await
    }

    /// The regular files below the directory `path`, by their path below
    /// it: each cut at `file_cap` bytes, none more once `total_cap` bytes
    /// are kept. Streamed: the archive is never held whole.
    pub async fn files(
        &self,
        path: &str,
        file_cap: u64,
        total_cap: u64,
    ) -> Result<BTreeMap<String, Vec<u8>>, DockerError> {
        self.container
            .read_tar(path, "a directory of a container", move |rx| {
                archive::files(rx, file_cap, total_cap)
            })
            .await
    }

    /// A tar of `path` (one top directory), as the daemon sends it.
    pub async fn download(&self, path: &str) -> Result<Vec<u8>, DockerError> {
        self.container.download(path).await
    }

    /// Starts the container and waits for it, killing it past `budget`;
    /// its output is drained and dropped (the script writes what it keeps).
    pub async fn run(&self, budget: Duration) -> Result<ForeignRan, DockerError> {
        let ended = self
            .container
            .drive(tokio::io::sink(), 0, budget, None, None)
            .await?;
        Ok(ForeignRan {
            exit_code: ended.exit_code,
            timed_out: ended.timed_out,
        })
    }

    /// Removes the container and its anonymous volumes.
    pub async fn remove(self) -> Result<(), DockerError> {
        self.container.remove().await
    }
}
