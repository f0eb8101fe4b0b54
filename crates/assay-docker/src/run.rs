//! Test runs: one fresh container per run over one staged tree.
//!
//! The container holds the threat model's guarantees:
//!
//! | guarantee | how |
//! |---|---|
//! | no network | `NetworkMode: none` (only a loopback), `NetworkDisabled` |
//! | writes only to its tree, `/tmp`, home | read-only root; the tree is an anonymous volume (removed with the container), as is each of the image's [`crate::ImageSpec::writable`] directories (copied from the image at creation, so no run sees another's writes); `/tmp` and the home are size-limited tmpfs, `exec` (what a suite compiles there runs, as under the local sandbox); `/dev/shm` is private (`IpcMode: private`) and as large as `/tmp` |
//! | not root, no privilege | the image's run user (numeric `uid:gid`), `CapDrop: ALL`, `no-new-privileges` |
//! | limited | CPU, memory (no swap), pids, rlimits: see [`crate::Limits`]; what the tree takes: a watchdog reads the tree's volume on the host (`assay_exec::writes`) and kills the container past [`crate::Limits::written`] |
//! | nothing of ours | no mount of the host but [`ContainerRun::binds`] (an agent's own few paths; none for a test run) and a [`TreeMount::Bind`] tree; the env is exactly the spec's |
//! | cannot outlive the run | wall-clock timeout → SIGKILL; the container is removed after success, failure, timeout, and when the future is dropped (through a [`Fleet`]: in the background once the run's result is read, [`Fleet::drain`] waiting for every removal) |
//!
//! The tree goes into the fresh volume before the container ever starts:
//! written beneath the volume's directory when it is on this machine and
//! this process may own files there, else extracted by the daemon through
//! its archive API; the same tar either way ([`crate::archive`]).
//!
//! After the run, before removal, the report is read and the watched files
//! are fingerprinted where the stopped container's tree is on this machine
//! (its volume's directory, the one the write watchdog reads), beneath it
//! without following a link ([`assay_exec::beneath`]): no call of the
//! daemon's archive API, each of which mounts the container's filesystem.
//! A daemon whose volumes are not here is asked instead: the report copied
//! out after a stat of each component of its path, the files fingerprinted
//! from a streamed tar of the tree (never extracted).
//!
//! The tree's root directory is root's with mode 1777 because the tree
//! volume copies it from the image's empty `/assay/tree` (created so by
//! [`crate::Docker::build_image`]; a tar cannot change the owner of the
//! directory it is extracted into): the run user creates files there, but
//! cannot rename root's entries. Everything uploaded is the run user's
//! (named in the image's `assay.user` label), except the protected files
//! and the directories above them ([`ContainerRun::protect`]): root's, the
//! files 0444, the directories 1777 (sticky). So the run may write beside
//! a hidden test file, never write, replace, rename or unlink it, nor
//! rename a directory on its way. An image without this layout
//! ([`crate::LAYOUT`], its `assay.layout` label) is refused.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use assay_exec::writes::WriteWatch;
use bollard::models::{
    HostConfig, Mount, MountBindOptions, MountBindOptionsPropagationEnum, MountType,
    MountVolumeOptions,
};

use crate::build::{LAYOUT_LABEL, USER_LABEL, WRITABLE_LABEL};
use crate::container::{Blueprint, Container, Parked};
use crate::error::status;
use crate::fleet::Fleet;
use crate::spec::{HOME_DIR, RunUser, TREE_DIR};
use crate::{
    ContainerOutcome, ContainerRun, Docker, DockerError, ImageId, KilledBy, Report, TreeMount,
    archive, command, limits,
};

// Go's `os.FileMode` bits, as the daemon reports them in a path stat.
const MODE_DIR: u32 = 1 << 31;
const MODE_SYMLINK: u32 = 1 << 27;
const MODE_TYPE: u32 = MODE_DIR
    | MODE_SYMLINK
    | 1 << 26 // device
    | 1 << 25 // named pipe
    | 1 << 24 // socket
    | 1 << 21 // char device
    | 1 << 19; // irregular

impl Docker {
    /// Runs `spec.command` over `spec.tree` in a fresh container of
    /// `spec.image`; see the module header for what the container may do.
    pub async fn run(&self, spec: &ContainerRun) -> Result<ContainerOutcome, DockerError> {
        self.run_as(spec, "test").await
    }

    /// [`Docker::run`], the container labelled with `stage` (`assay.stage`)
    /// rather than `test`: an app's build (`app-build`).
    pub async fn run_as(
        &self,
        spec: &ContainerRun,
        stage: &'static str,
    ) -> Result<ContainerOutcome, DockerError> {
        self.run_with(spec, stage, None).await
    }

    /// [`Docker::run`] with `fleet`: the container claimed from the ones
    /// created ahead when one of its spec is there (never one that ran),
    /// the next of its spec created ahead while it runs, and removed in
    /// the background once its report and fingerprints are read (see
    /// [`Fleet`]). A build that runs through a fleet ends with
    /// [`Fleet::drain`].
    pub async fn run_in(
        &self,
        spec: &ContainerRun,
        fleet: &Fleet,
    ) -> Result<ContainerOutcome, DockerError> {
        self.run_with(spec, "test", Some(fleet)).await
    }

    async fn run_with(
        &self,
        spec: &ContainerRun,
        stage: &'static str,
        fleet: Option<&Fleet>,
    ) -> Result<ContainerOutcome, DockerError> {
        let mut ph = crate::phase::Phases::new("docker run");
        let runs = self.image_run(&spec.image).await?;
        let user = runs.user;
        ph.mark("image user");
        let report = spec
            .report
            .as_ref()
            .map(|report| {
                let path = report.path.to_str().ok_or(DockerError::InvalidSpec {
                    what: "report path",
                    value: report.path.display().to_string(),
                    why: "it must be valid UTF-8",
                })?;
                Ok::<_, DockerError>((archive::relative(path, "report path")?, report.cap))
            })
            .transpose()?;
        let argv = command::shell(&spec.env, &spec.command)?;
        let log = tokio::fs::File::create(&spec.log_path)
            .await
            .map_err(|source| DockerError::Log {
                path: spec.log_path.clone(),
                source,
            })?;

        if spec.tree_mount == TreeMount::Bind {
            if !spec.protect.is_empty() || !spec.watch.is_empty() {
                return Err(DockerError::InvalidSpec {
                    what: "bound tree",
                    value: spec.tree.display().to_string(),
                    why: "a bound tree protects and watches nothing: it is read on the host",
                });
            }
            let writable: Vec<std::path::PathBuf> = std::iter::once(spec.tree.clone())
                .chain(
                    spec.binds
                        .iter()
                        .filter(|b| b.writable)
                        .map(|b| b.host.clone()),
                )
                .collect();
            for dir in writable {
                let give = dir.clone();
                tokio::task::spawn_blocking(move || give_to(&give, user))
                    .await
                    .unwrap_or_else(|join| Err(io::Error::other(join)))
                    .map_err(|source| DockerError::Tree { path: dir, source })?;
            }
        }
        let blueprint = Blueprint {
            image: spec.image.to_string(),
            user: Some(user.to_string()),
            working_dir: Some(TREE_DIR),
            argv,
            stage,
            labels: HashMap::new(),
            stdin: false,
            host_config: host_config(spec, &runs),
        };
        let (container, ahead, parked) = self.obtain(spec, blueprint, fleet).await?;
        ph.mark("create");
        let here = host_tree(&container, spec).await?;
        if spec.tree_mount == TreeMount::Upload {
            upload(&container, spec, user, here.as_deref()).await?;
        }
        ph.mark("upload");

        let watch = match spec.limits.written {
            Some(limit) => {
                let tree = tree_watch(here.as_deref(), limit).await?;
                Some(with_writable(tree, &container, &runs.writable).await?)
            }
            None => None,
        };
        ph.mark("write watch");
        // The next container of this spec is created while this one runs.
        if let (Some(fleet), Some(ahead)) = (fleet, ahead) {
            fleet.ahead(&self.api, &ahead.key, ahead.body);
        }
        let ended = container
            .drive(log, spec.log_cap, spec.timeout, watch.as_ref(), parked)
            .await?;
        ph.mark("start to exit");
        if let Some(source) = ended.output.write_error {
            return Err(DockerError::Log {
                path: spec.log_path.clone(),
                source,
            });
        }
        // The container has stopped: its tree is read where it is.
        let report = match (report, &here) {
            (Some((path, cap)), Some(dir)) => Some(match read_here(dir, path, cap).await {
                Some(report) => report,
                None => read_report(&container, path, cap).await?,
            }),
            (Some((path, cap)), None) => Some(read_report(&container, path, cap).await?),
            (None, _) => None,
        };
        ph.mark("report");
        let watched = match (spec.watch.is_empty(), &here) {
            (true, _) => std::collections::BTreeMap::new(),
            (false, Some(dir)) => match fingerprints_here(dir, &spec.watch).await {
                Some(watched) => watched,
                None => container.fingerprints(TREE_DIR, &spec.watch).await?,
            },
            (false, None) => container.fingerprints(TREE_DIR, &spec.watch).await?,
        };
        // What it wrote within its last interval, before the volume goes.
        let wrote_over = ended.wrote_over
            || match &watch {
                Some(w) => w.over_after().await,
                None => false,
            };
        ph.mark("fingerprints");
        let id = container.id.clone();
        match fleet {
            Some(fleet) => fleet.remove(container.hold()).await,
            None => container.remove().await?,
        }
        ph.mark("remove");
        let killed_by = if ended.timed_out {
            Some(KilledBy::WallClock)
        } else if wrote_over {
            Some(KilledBy::Written)
        } else if ended.oom_killed {
            Some(KilledBy::Memory)
        } else {
            None
        };
        Ok(ContainerOutcome {
            exit_code: ended.exit_code,
            timed_out: ended.timed_out,
            oom_killed: ended.oom_killed,
            killed_by,
            duration: ended.duration,
            log_bytes: ended.output.total,
            log_truncated: ended.output.total > spec.log_cap,
            report,
            watched,
            container: id,
        })
    }

    /// A fresh container of `blueprint`: one started ahead of its spec in
    /// `fleet` and parked when there is one that still runs (with its
    /// attached output and stdin), else created now; with what the fleet
    /// makes ahead for the spec's next run ([`Fleet::ahead`]), once this
    /// one is under way.
    pub(crate) async fn obtain(
        &self,
        spec: &ContainerRun,
        blueprint: Blueprint,
        fleet: Option<&Fleet>,
    ) -> Result<(Container<'_>, Option<Ahead>, Option<Parked>), DockerError> {
        let stage = blueprint.stage;
        // Only a tree uploaded into a fresh volume makes a container that
        // another run of the spec could take; a bound tree is the run's own.
        let key = fleet
            .filter(|_| spec.tree_mount == TreeMount::Upload && spec.binds.is_empty())
            .map(|_| pool_key(spec, &blueprint));
        let claimed = match (fleet, &key) {
            (Some(fleet), Some(key)) => fleet.claim(key).await,
            _ => None,
        };
        // Only a claimed container is told the argv.
        let go = claimed.as_ref().map(|_| command::go_ahead(&blueprint.argv));
        let body = crate::container::body(blueprint);
        let ahead = key.map(|key| {
            let mut body = body.clone();
            command::park(&mut body);
            Ahead { key, body }
        });
        if let (Some(pooled), Some(go), Some(fleet)) = (claimed, go, fleet) {
            let running = self
                .api
                .inspect_container(&pooled.held.id, None)
                .await
                .ok()
                .and_then(|c| c.state?.running)
                .unwrap_or(false);
            if running {
                let container = Container::adopt(self, pooled.held, stage);
                let parked = Parked {
                    attached: pooled.parked,
                    go,
                };
                return Ok((container, ahead, Some(parked)));
            }
            // Ended while parked (its daemon restarted, say): never used.
            fleet.remove(pooled.held).await;
        }
        match crate::container::create_held(&self.api, body).await {
            Err(DockerError::Api { source, .. }) if status(&source) == Some(404) => {
                self.forget(&spec.image);
                Err(DockerError::ImageMissing {
                    id: spec.image.to_string(),
                })
            }
            created => Ok((Container::adopt(self, created?, stage), ahead, None)),
        }
    }

    /// Who runs tests in `image` and where they may write besides their
    /// tree: its `assay.user` and `assay.writable` labels.
    pub(crate) async fn image_run(&self, image: &ImageId) -> Result<ImageRun, DockerError> {
        if let Some(runs) = self.users().get(image) {
            return Ok(runs.clone());
        }
        let inspected = self.inspect_image(image.as_str()).await?;
        let labels = inspected
            .config
            .and_then(|config| config.labels)
            .unwrap_or_default();
        let user = labels
            .get(USER_LABEL)
            .and_then(|user| RunUser::parse(user))
            .ok_or_else(|| DockerError::NotAnAssayImage {
                id: image.to_string(),
            })?;
        let layout = labels.get(LAYOUT_LABEL).map(String::as_str);
        if layout != Some(crate::LAYOUT.to_string().as_str()) {
            return Err(DockerError::OtherLayout {
                id: image.to_string(),
                found: layout.unwrap_or("none").to_owned(),
                want: crate::LAYOUT,
            });
        }
        let writable = labels
            .get(WRITABLE_LABEL)
            .map(|dirs| dirs.split(':').map(str::to_owned).collect::<Vec<_>>())
            .unwrap_or_default();
        for dir in &writable {
            crate::spec::writable_dir(dir)?;
        }
        let runs = ImageRun { user, writable };
        self.users().insert(image.clone(), runs.clone());
        Ok(runs)
    }

    pub(crate) fn forget(&self, image: &ImageId) {
        self.users().remove(image);
    }

    fn users(&self) -> std::sync::MutexGuard<'_, HashMap<ImageId, ImageRun>> {
        // The map is only ever a cache: a panic elsewhere cannot leave it wrong.
        self.users
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What an image's labels say of its runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageRun {
    pub(crate) user: RunUser,
    /// [`crate::ImageSpec::writable`].
    pub(crate) writable: Vec<String>,
}

/// Puts the run's tree into its fresh volume: written there directly when
/// the volume is on this machine (`here`), empty (the image's tree
/// directory was), and this process may make its files the run user's and
/// root's (the probe: a chmod of the volume's root, root's, to its own
/// mode), else uploaded through the daemon's archive API. The same archive
/// either way ([`archive::tree`]).
pub(crate) async fn upload(
    container: &Container<'_>,
    spec: &ContainerRun,
    user: RunUser,
    here: Option<&Path>,
) -> Result<(), DockerError> {
    if let Some(dir) = here {
        let (dir, tree, protect) = (dir.to_owned(), spec.tree.clone(), spec.protect.clone());
        let written = tokio::task::spawn_blocking(move || {
            // A volume the image filled (a task image's working directory
            // copied to the tree) is the daemon's to extract over: nothing
            // is written on this machine beside what the image put there.
            if std::fs::read_dir(&dir)?.next().is_some() {
                return Ok(false);
            }
            let mode = std::fs::metadata(&dir)?.permissions();
            if std::fs::set_permissions(&dir, mode).is_err() {
                return Ok(false);
            }
            archive::unpack_tree(&tree, user, &protect, &dir).map(|()| true)
        })
        .await
        .unwrap_or_else(|join| Err(io::Error::other(join)));
        match written {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(source) => {
                return Err(DockerError::Tree {
                    path: spec.tree.clone(),
                    source,
                });
            }
        }
    }
    let walked = archive::tree(&spec.tree, user, &spec.protect);
    container.upload_walked(TREE_DIR, walked, &spec.tree).await
}

/// Makes `dir` and everything beneath it `user`'s, following no link
/// (`lchown`): a bound tree the run writes.
fn give_to(dir: &Path, user: RunUser) -> io::Result<()> {
    let mut stack = vec![dir.to_owned()];
    while let Some(path) = stack.pop() {
        std::os::unix::fs::lchown(&path, Some(user.uid), Some(user.gid))?;
        if std::fs::symlink_metadata(&path)?.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                stack.push(entry?.path());
            }
        }
    }
    Ok(())
}

pub(crate) fn host_config(spec: &ContainerRun, runs: &ImageRun) -> HostConfig {
    let user = runs.user;
    let tmpfs = HashMap::from([
        (
            "/tmp".to_owned(),
            format!("rw,exec,nosuid,nodev,size={},mode=1777", spec.tmp_size),
        ),
        (
            HOME_DIR.to_owned(),
            format!(
                "rw,exec,nosuid,nodev,size={},mode=0700,uid={},gid={}",
                spec.home_size, user.uid, user.gid
            ),
        ),
    ]);
    let tree = match spec.tree_mount {
        // Copies the image's (empty) tree directory: that sets its owner.
        TreeMount::Upload => copied_volume(TREE_DIR),
        TreeMount::Bind => bind(&spec.tree, TREE_DIR, true),
    };
    let mounts = std::iter::once(tree)
        .chain(runs.writable.iter().map(|dir| copied_volume(dir)))
        .chain(spec.binds.iter().map(|b| bind(&b.host, &b.at, b.writable)))
        .collect();
    HostConfig {
        network_mode: Some("none".to_owned()),
        readonly_rootfs: Some(true),
        cap_drop: Some(vec!["ALL".to_owned()]),
        ipc_mode: Some("private".to_owned()),
        shm_size: Some(i64::try_from(spec.tmp_size).unwrap_or(i64::MAX)),
        tmpfs: Some(tmpfs),
        mounts: Some(mounts),
        ..limits::host_config(&spec.limits)
    }
}

/// A container to create ahead: its spec ([`pool_key`]) and request.
pub(crate) struct Ahead {
    pub(crate) key: String,
    pub(crate) body: bollard::models::ContainerCreateBody,
}

/// What makes two containers of uploaded-tree runs the same: everything
/// their create request is made of ([`host_config`] is a function of the
/// limits, the sizes and the image's labels) but the argv, which a parked
/// container is told with its go-ahead ([`command::go_ahead`]).
fn pool_key(spec: &ContainerRun, blueprint: &Blueprint) -> String {
    format!(
        "{}\0{:?}\0{:?}\0{:?}\0{}\0{}\0{}",
        blueprint.image,
        blueprint.user,
        blueprint
            .labels
            .iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
        spec.limits,
        spec.tmp_size,
        spec.home_size,
        blueprint.stage,
    )
}

/// A fresh anonymous volume at `dir`, copied from the image's `dir` (its
/// content, owner and mode) when the container is created, removed with it.
fn copied_volume(dir: &str) -> Mount {
    Mount {
        target: Some(dir.to_owned()),
        typ: Some(MountType::VOLUME),
        volume_options: Some(MountVolumeOptions {
            no_copy: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A host path bound at `at`: no propagation of mounts either way, read-only
/// unless `writable`.
fn bind(host: &Path, at: &str, writable: bool) -> Mount {
    Mount {
        target: Some(at.to_owned()),
        source: Some(host.display().to_string()),
        typ: Some(MountType::BIND),
        read_only: Some(!writable),
        bind_options: Some(MountBindOptions {
            propagation: Some(MountBindOptionsPropagationEnum::RPRIVATE),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Where the container's tree is on this machine, when it is here: a bound
/// tree is the host's directory; an uploaded one is its volume where the
/// daemon keeps it, whose path holds the volume's random name, so a path
/// that is a directory here is that volume (a remote daemon's is not here:
/// `None`).
pub(crate) async fn host_tree(
    container: &Container<'_>,
    spec: &ContainerRun,
) -> Result<Option<PathBuf>, DockerError> {
    let source = match spec.tree_mount {
        TreeMount::Upload => container.volume_source(TREE_DIR).await?,
        TreeMount::Bind => spec.tree.clone(),
    };
    let probe = source.clone();
    let here = tokio::task::spawn_blocking(move || probe.is_dir())
        .await
        .unwrap_or(false);
    Ok(here.then_some(source))
}

/// The write watchdog over the container's tree, measured on this machine
/// where it is ([`host_tree`]); a tree that is not here (a remote daemon's
/// volume) cannot be watched, and fails.
pub(crate) async fn tree_watch(here: Option<&Path>, limit: u64) -> Result<WriteWatch, DockerError> {
    let Some(source) = here.map(Path::to_owned) else {
        return Err(DockerError::TreeVolume {
            path: PathBuf::from(TREE_DIR),
            source: io::Error::other("the tree's volume is not on this machine"),
        });
    };
    let root = source.clone();
    tokio::task::spawn_blocking(move || WriteWatch::new(&root, limit))
        .await
        .unwrap_or_else(|join| Err(io::Error::other(join)))
        .map_err(|error| DockerError::TreeVolume {
            path: source,
            source: error,
        })
}

/// `watch` counting the container's copies of the image's writable
/// directories too, read where the daemon keeps their volumes (on this
/// machine: the tree's was).
async fn with_writable(
    mut watch: WriteWatch,
    container: &Container<'_>,
    writable: &[String],
) -> Result<WriteWatch, DockerError> {
    for dir in writable {
        let source = container.volume_source(dir).await?;
        let root = source.clone();
        watch = tokio::task::spawn_blocking(move || watch.with(&root))
            .await
            .unwrap_or_else(|join| Err(io::Error::other(join)))
            .map_err(|error| DockerError::TreeVolume {
                path: source,
                source: error,
            })?;
    }
    Ok(watch)
}

/// The report file read in the stopped container's tree on this machine,
/// with [`read_report`]'s rules (no symlink anywhere on its path, a regular
/// file, at most `cap` bytes), by the kernel's `openat2` beneath the tree
/// ([`assay_exec::beneath`]) rather than through the daemon's archive API,
/// which mounts the container's filesystem for each call. `None` when the
/// host cannot read it (an I/O error): the daemon is asked.
async fn read_here(dir: &Path, rel: &Path, cap: u64) -> Option<Report> {
    use assay_exec::beneath::{self, BeneathError};
    let (dir, rel) = (dir.to_owned(), rel.to_owned());
    let read = tokio::task::spawn_blocking(move || beneath::read(&dir, &rel, cap))
        .await
        .ok()?;
    match read {
        Ok(bytes) => Some(Report::Present(bytes)),
        Err(BeneathError::NotFound) => Some(Report::Missing),
        Err(BeneathError::Symlink | BeneathError::NotAFile | BeneathError::Outside) => {
            Some(Report::NotAFile)
        }
        Err(BeneathError::TooLarge { size, .. }) => Some(Report::TooLarge { size }),
        Err(BeneathError::Io(_)) => None,
    }
}

/// The fingerprints of the watched files in the stopped container's tree
/// on this machine, with [`archive::fingerprints`]' rules (a file gone, a
/// symlink, beyond one or not regular has none), hashed beneath the tree
/// without following a link; `None` when the host cannot read one (an I/O
/// error): the daemon is asked.
async fn fingerprints_here(
    dir: &Path,
    watch: &[PathBuf],
) -> Option<std::collections::BTreeMap<PathBuf, Option<[u8; 32]>>> {
    use assay_exec::beneath::{self, BeneathError};
    let (dir, watch) = (dir.to_owned(), watch.to_vec());
    tokio::task::spawn_blocking(move || {
        watch
            .into_iter()
            .map(|rel| match beneath::hash(&dir, &rel) {
                Ok(hash) => Some((rel, Some(hash))),
                Err(BeneathError::Io(_)) => None,
                Err(_) => Some((rel, None)),
            })
            .collect()
    })
    .await
    .ok()?
}

/// The report file, read without following a symlink anywhere on its path:
/// every prefix is checked to be a directory, the file itself a regular file
/// no larger than `cap`. The container is stopped, so nothing changes between
/// the checks and the read.
async fn read_report(
    container: &Container<'_>,
    rel: &Path,
    cap: u64,
) -> Result<Report, DockerError> {
    let mut path = TREE_DIR.to_owned();
    let mut components = rel.components().peekable();
    while let Some(component) = components.next() {
        path.push('/');
        path.push_str(&component.as_os_str().to_string_lossy());
        let Some(stat) = container.stat(&path).await? else {
            return Ok(Report::Missing);
        };
        let last = components.peek().is_none();
        let mode = stat.file_mode;
        if (!last && (mode & MODE_TYPE) != MODE_DIR) || (last && (mode & MODE_TYPE) != 0) {
            return Ok(Report::NotAFile);
        }
        let size = u64::try_from(stat.size).unwrap_or(0);
        if last && size > cap {
            return Ok(Report::TooLarge { size });
        }
    }
    let archive = container.download(&path).await?;
    Ok(match archive::single_file(&archive)? {
        Some(bytes) if bytes.len() as u64 > cap => Report::TooLarge {
            size: bytes.len() as u64,
        },
        Some(bytes) => Report::Present(bytes),
        None => Report::NotAFile,
    })
}
