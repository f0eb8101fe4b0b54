//! The bundle's format: `bundle.json` (what it is of, [`BundleHead`]),
//! `nodes.jsonl` (one [`BundleNode`] a line, sorted by name), `blobs/<2>/<62>`
//! (every output and attachment by blake3) and `release/` (the release
//! files); and reading one back from disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::model::config::ExecutorKind;
use assay_engine::{Digest, KeyRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ops::audit::release::OnDisk;
use crate::release::AssayVersion;

/// The format of a bundle's `bundle.json`; bumped when the layout changes meaning.
pub(crate) const FORMAT: &str = "assay-bundle/1";

/// One node of the closure, as `nodes.jsonl` holds it (one line each, sorted by name).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BundleNode {
    pub(crate) name: String,
    pub(crate) kind: String,
    /// The node key (hex): blake3 of the bincode of the key record below.
    pub(crate) key: String,
    pub(crate) schema: u32,
    pub(crate) kind_version: u32,
    /// The canonical params bytes (hex), as hashed into the key.
    pub(crate) params: String,
    /// Dependency output digests (hex), in declared order.
    pub(crate) deps: Vec<String>,
    /// The names of the dependencies, in the same order (a link names its node).
    pub(crate) inputs: Vec<String>,
    /// blake3 of the output bytes: the blob `blobs/<2>/<62>`.
    pub(crate) output: String,
    /// Other blobs the output names (logs, reports, patches, release files).
    pub(crate) attachments: Vec<String>,
    /// The params as JSON: only for the release node, whose recomputation
    /// needs them (checked: they must encode to `params`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) params_json: Option<Value>,
}

impl BundleNode {
    pub(super) fn record(&self) -> Result<KeyRecord, String> {
        let deps = self
            .deps
            .iter()
            .map(|d| d.parse::<Digest>())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(KeyRecord {
            schema: self.schema,
            kind: self.kind.clone(),
            kind_version: self.kind_version,
            params: hex::decode(&self.params).map_err(|e| format!("params: {e}"))?,
            deps,
        })
    }
}

/// `bundle.json`: what the bundle is of, and where it came from.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BundleHead {
    pub(crate) format: String,
    pub(crate) release_digest: String,
    /// The release node's key.
    pub(crate) release_node: String,
    /// Node kinds whose attachments were left out (digests kept in nodes.jsonl).
    pub(crate) omitted: Vec<String>,
    pub(crate) counts: Counts,
    pub(crate) provenance: BundleProvenance,
}

/// `bundle.json`'s `provenance`: what the release was made from and by.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BundleProvenance {
    /// The assay that built the release (never the exporting one: the same
    /// release exports to the same bytes with any assay); null without a
    /// sealed manifest.
    pub(crate) assay: Option<AssayVersion>,
    /// Environment node name -> where it ran.
    pub(crate) environments: BTreeMap<String, BundleEnv>,
    /// Judge name -> settings digest.
    pub(crate) judges: BTreeMap<String, String>,
    /// blake3 of `pipeline.toml`; null without a sealed manifest.
    pub(crate) pipeline: Option<String>,
    pub(crate) release_digest: String,
    pub(crate) release_node: String,
}

/// One environment of the closure: its node key, executor and image ids.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BundleEnv {
    pub(crate) base_image: Option<String>,
    /// blake3 over the environment's directory once set up.
    pub(crate) digest: Option<String>,
    pub(crate) executor: ExecutorKind,
    pub(crate) image: Option<String>,
    pub(crate) key: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Counts {
    pub(crate) nodes: usize,
    pub(crate) blobs: usize,
    pub(crate) files: usize,
    pub(crate) omitted_blobs: usize,
}

/// The node kinds whose attachments `--no-logs` leaves out: run logs and
/// reports, environment setup logs and images, a metric command's log and
/// report.
pub(crate) const LOG_KINDS: [crate::model::kind::NodeKind; 3] = [
    crate::model::kind::NodeKind::Run,
    crate::model::kind::NodeKind::Env,
    crate::model::kind::NodeKind::Quality,
];

/// Where a blob lives in a bundle.
pub(super) fn blob_path(dir: &Path, hex: &str) -> PathBuf {
    dir.join("blobs").join(&hex[..2]).join(&hex[2..])
}

/// The bundle as read from disk.
pub(super) struct Bundle {
    pub(super) dir: PathBuf,
    pub(super) head: BundleHead,
    pub(super) nodes: Vec<BundleNode>,
    /// `release/`'s files, each hashed (blake3 and sha256) as it was
    /// listed, read again only where a check needs its bytes.
    pub(super) files: OnDisk,
}

/// Opens `rel`, a path below the bundle's directory `dir`, for reading:
/// each directory on the way a real one and the file a regular one, no
/// link followed. A bundle is someone else's: a link to `/dev/zero`, a
/// FIFO or a file elsewhere on the auditor's machine is not one of its
/// files (reading it would hang `verify`, or check another file as the
/// bundle's).
pub(super) fn open_in(dir: &Path, rel: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let parts: Vec<_> = rel.components().collect();
    let mut at = dir.to_path_buf();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let kind = std::fs::symlink_metadata(&at)?.file_type();
        let last = i + 1 == parts.len();
        if (last && !kind.is_file()) || (!last && !kind.is_dir()) {
            let want = if last {
                "a regular file"
            } else {
                "a directory"
            };
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is not {want}", at.display()),
            ));
        }
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&at)
}

/// Whether `path` is a directory itself, not a link to one.
pub(super) fn real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// The bytes of `rel` below `dir`, opened by [`open_in`].
pub(super) fn read_in(dir: &Path, rel: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    open_in(dir, rel)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The bytes of the blob `hex` of the bundle in `dir`.
pub(super) fn read_blob(dir: &Path, hex: &str) -> std::io::Result<Vec<u8>> {
    if hex.len() < 3 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{hex}` is not a blob's name"),
        ));
    }
    read_in(dir, &blob_path(Path::new(""), hex))
}

pub(super) fn read_bundle(dir: &Path) -> Result<Bundle, String> {
    let read = |name: &str| {
        read_in(dir, Path::new(name))
            .map_err(|e| format!("cannot read {}: {e}", dir.join(name).display()))
    };
    let head: BundleHead =
        serde_json::from_slice(&read("bundle.json")?).map_err(|e| format!("bundle.json: {e}"))?;
    if head.format != FORMAT {
        return Err(format!(
            "bundle.json: format `{}`, this assay reads `{FORMAT}`",
            head.format
        ));
    }
    let text = read("nodes.jsonl")?;
    let mut nodes = Vec::new();
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        nodes.push(
            serde_json::from_slice(line).map_err(|e| format!("nodes.jsonl line {}: {e}", i + 1))?,
        );
    }
    // The release's files as a release directory holds them (the report's
    // pages under `pages/`).
    let release = dir.join("release");
    if !real_dir(&release) {
        return Err(format!("{} is not a directory", release.display()));
    }
    let files = OnDisk::read_with_sha256(&release)?;
    Ok(Bundle {
        dir: dir.to_owned(),
        head,
        nodes,
        files,
    })
}
