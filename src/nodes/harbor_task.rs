//! `harbor_task:<dataset>/<folder>`: one Harbor task folder of a
//! `[[harbor_dataset]]`, its environment built and its controls read
//! (`harbor::screen`). Keyed by every file of the folder, so a changed test
//! or solution screens it again and nothing else. A Deep-SWE-shaped folder
//! (`tests/config.json`) has its controls' reports read too, its lists
//! recomputed and compared with the dataset's whitelists (`harbor::deepswe`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use assay_engine::JobCtx;
use serde::{Deserialize, Serialize};

use super::adapter::{Kind, Made, NoInputs, NodeKind};
use crate::run::error::{Kinded, NodeError};
use crate::run::executor::Executors;
use crate::run::executor::daemon::Daemon;
use crate::run::harbor::deepswe::{self, SweScreen};
use crate::run::harbor::screen::{self, Built, NOP, ORACLE, Reading, Rebuilt, TaskToml};

#[derive(Clone, Debug, Serialize)]
pub(crate) struct HarborTaskParams {
    pub(crate) dataset: String,
    pub(crate) folder: String,
    /// (path, mode, blake3) of every file of the folder, sorted.
    pub(crate) files: Vec<(String, u32, String)>,
    /// The network its `task.toml` declares: its build, controls and
    /// graded runs have it (`harbor::screen`).
    pub(crate) network: screen::NetworkMode,
    pub(crate) repeats: u32,
}

/// What screening a Harbor task concluded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct HarborTaskRecord {
    pub(crate) dataset: String,
    pub(crate) folder: String,
    /// `[task] name`, else the folder's name.
    pub(crate) name: String,
    pub(crate) environment: Built,
    /// `nop` and `oracle`: each reading in order.
    pub(crate) readings: BTreeMap<String, Vec<Reading>>,
    /// The environment built a second time from its Dockerfile, and one
    /// reading of each control there; absent for a prebuilt
    /// `docker_image` or an environment that failed to build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rebuild: Option<Rebuilt>,
    pub(crate) certified: bool,
    pub(crate) uncertified_because: Vec<String>,
    /// A Deep-SWE-shaped folder's lists as assay reads its controls, and
    /// their disagreements with the dataset's whitelists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) swe: Option<SweScreen>,
}

pub(crate) struct HarborTask {
    pub(crate) params: HarborTaskParams,
    pub(crate) path: PathBuf,
    /// Its containers go through the executors' daemon.
    pub(crate) executors: Arc<Executors>,
}

impl Kind for HarborTask {
    const NAME: &'static str = NodeKind::HarborTask.as_str();
    const VERSION: u32 = 4;
    type Params = HarborTaskParams;
    type Inputs = NoInputs;
    type Record = HarborTaskRecord;

    fn params(&self) -> &HarborTaskParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        _: NoInputs,
        ctx: JobCtx,
    ) -> Result<Made<HarborTaskRecord>, NodeError> {
        let cache = ctx.cache_dir.clone();
        tokio::task::spawn_blocking(move || {
            screen_task(self.executors.daemon(), &self.params, &self.path, &cache)
        })
        .await
        .map_err(|e| NodeError::internal(format!("harbor task: {e}")))?
        .map(Made::record)
    }
}

fn screen_task(
    daemon: &Daemon,
    p: &HarborTaskParams,
    folder: &Path,
    cache: &Path,
) -> Result<HarborTaskRecord, NodeError> {
    let toml = match TaskToml::read(folder) {
        Ok(toml) => toml,
        Err(e) => return Ok(unreadable(p, &e)),
    };
    let digest = blake3::hash(format!("{:?}", p.files).as_bytes()).to_hex();
    let tag = format!(
        "assay-harbor/{}:{}",
        sanitize(&format!("{}-{}", p.dataset, p.folder)),
        &digest[..12]
    );
    let environment = screen::build(folder, &toml, &tag, cache);
    let controls = |image: &str, repeats: u32| {
        let mut readings: BTreeMap<String, Vec<Reading>> = BTreeMap::new();
        for _ in 0..repeats {
            for control in [NOP, ORACLE] {
                readings
                    .entry(control.to_owned())
                    .or_default()
                    .push(screen::read(daemon, folder, image, control, &toml));
            }
        }
        readings
    };
    let mut readings = BTreeMap::new();
    let mut rebuild = None;
    if let (true, Some(image)) = (environment.ok, environment.image.as_deref()) {
        readings = controls(image, p.repeats);
        // Built from its Dockerfile (no prebuilt image, or none on this
        // machine): built again, to see it read the same.
        if toml.docker_image.is_none() || environment.fallback.is_some() {
            let again = screen::build(folder, &toml, &format!("{tag}-rebuild"), cache);
            let reread = match again.image.as_deref() {
                Some(image) if again.ok => controls(image, 1),
                _ => BTreeMap::new(),
            };
            rebuild = Some(Rebuilt {
                environment: again,
                readings: reread,
            });
        }
    }
    let mut uncertified_because = screen::certify(&environment, &readings, rebuild.as_ref());
    let swe = match deepswe::Folder::detect(folder) {
        None => None,
        Some(Ok(shape)) => Some(deepswe::screen(&shape, &readings)),
        Some(Err(e)) => {
            uncertified_because.push(format!("swe_config_invalid: {}", e.message));
            None
        }
    };
    Ok(HarborTaskRecord {
        dataset: p.dataset.clone(),
        folder: p.folder.clone(),
        name: toml.name.unwrap_or_else(|| p.folder.clone()),
        environment,
        certified: uncertified_because.is_empty(),
        uncertified_because,
        readings,
        swe,
        rebuild,
    })
}

/// A task whose `task.toml` does not read: uncertified with why, nothing
/// built or read.
fn unreadable(p: &HarborTaskParams, e: &screen::TaskTomlError) -> HarborTaskRecord {
    let reason = e.reason();
    HarborTaskRecord {
        dataset: p.dataset.clone(),
        folder: p.folder.clone(),
        name: p.folder.clone(),
        environment: Built {
            reason: Some(reason.clone()),
            ..Built::default()
        },
        readings: BTreeMap::new(),
        rebuild: None,
        certified: false,
        uncertified_because: vec![reason],
        swe: None,
    }
}

/// A docker repository name's characters.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// (path, mode, blake3) of every regular file under `folder`, sorted;
/// symbolic links by their target. A folder that does not read is the
/// dataset's.
pub(crate) fn folder_files(folder: &Path) -> Result<Vec<(String, u32, String)>, NodeError> {
    fn walk(
        root: &Path,
        dir: &Path,
        out: &mut Vec<(String, u32, String)>,
    ) -> Result<(), NodeError> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| NodeError::input(format!("{}: {e}", dir.display())))?;
        for e in entries.flatten() {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_default();
            let meta = std::fs::symlink_metadata(&path).input()?;
            use std::os::unix::fs::PermissionsExt;
            if meta.is_dir() {
                walk(root, &path, out)?;
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).input()?;
                let text = target.to_string_lossy();
                out.push((
                    rel,
                    0o120000,
                    blake3::hash(text.as_bytes()).to_hex().to_string(),
                ));
            } else if meta.is_file() {
                let bytes = std::fs::read(&path)
                    .map_err(|e| NodeError::input(format!("{}: {e}", path.display())))?;
                out.push((
                    rel,
                    meta.permissions().mode() & 0o777,
                    blake3::hash(&bytes).to_hex().to_string(),
                ));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(folder, folder, &mut out)?;
    out.sort();
    Ok(out)
}

/// The newest modification time (seconds since the epoch) of any file or
/// directory under `folder`, itself included: when the folder last
/// changed. None when nothing under it reads.
pub(crate) fn newest_change(folder: &Path) -> Option<i64> {
    let meta = std::fs::symlink_metadata(folder).ok()?;
    let mut newest = mtime(&meta);
    if meta.is_dir() {
        for e in std::fs::read_dir(folder).ok()?.flatten() {
            newest = newest.max(newest_change(&e.path()));
        }
    }
    newest
}

fn mtime(meta: &std::fs::Metadata) -> Option<i64> {
    let at = meta.modified().ok()?;
    let secs = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    i64::try_from(secs).ok()
}
