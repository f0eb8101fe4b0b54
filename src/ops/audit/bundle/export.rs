//! `assay export --to DIR`: writes the closure of the last build's release
//! as a bundle (format: the parent module; layout: docs/audit.md).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use assay_engine::{Digest, Store};

use super::format::{
    BundleEnv, BundleHead, BundleNode, BundleProvenance, Counts, FORMAT, blob_path,
};
use super::intoto::{Hashes, Statement};
use crate::model::records::EnvRecord;
use crate::nodes::release::ReleaseRecord;
use crate::ops::audit::display::NodeDisplay;
use crate::ops::audit::release::release_digest;
use crate::release::{Manifest, pretty};

/// The last build's manifest and its release node's key.
pub(crate) fn last_release(store: &Store) -> Result<(assay_engine::BuildManifest, Digest), String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let build = store
        .builds(1)
        .map_err(|x| e(&x))?
        .into_iter()
        .next()
        .ok_or("no finished build in this cache: build first")?;
    let manifest = store
        .manifest(&build)
        .map_err(|x| e(&x))?
        .ok_or("the last build has no manifest")?;
    let key = manifest
        .find(crate::model::names::RELEASE)
        .and_then(|m| m.key)
        .ok_or("the last build has no release node")?;
    Ok((manifest, key))
}

/// What `export` wrote.
#[derive(Debug)]
pub(crate) struct Exported {
    pub(crate) release_digest: String,
    pub(crate) counts: Counts,
    pub(crate) bytes: u64,
}

/// Writes the closure of the last build's release into `dir` (which must be
/// empty or absent). Each blob and release file is written as it is read,
/// never all held (a release of a million sessions is gigabytes); on a
/// failure nothing of the bundle is left.
pub(crate) fn export(store: &Store, dir: &Path, omit: &[String]) -> Result<Exported, String> {
    let existed = dir.is_dir();
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(format!(
            "{} is not empty: export writes a fresh directory",
            dir.display()
        ));
    }
    let mut out = Out {
        dir: dir.to_owned(),
        bytes: 0,
    };
    let exported = write_bundle(store, &mut out, omit);
    if exported.is_err() {
        let _ = std::fs::remove_dir_all(dir);
        if existed {
            let _ = std::fs::create_dir_all(dir);
        }
    }
    exported
}

/// The bundle's directory, and the bytes written to it so far.
struct Out {
    dir: PathBuf,
    bytes: u64,
}

impl Out {
    fn put(&mut self, path: &Path, data: &[u8]) -> Result<(), String> {
        let path = self.dir.join(path);
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|x| format!("{}: {x}", p.display()))?;
        }
        self.bytes += data.len() as u64;
        std::fs::write(&path, data).map_err(|x| format!("{}: {x}", path.display()))
    }

    fn blob(&mut self, d: &Digest, data: &[u8]) -> Result<(), String> {
        self.put(&blob_path(Path::new(""), &d.to_hex()), data)
    }
}

fn write_bundle(store: &Store, out: &mut Out, omit: &[String]) -> Result<Exported, String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let (manifest, release_key) = last_release(store)?;

    let entries = crate::ops::audit::Entries::of(&manifest);
    let mut nodes: BTreeMap<String, BundleNode> = BTreeMap::new();
    // Every blob written, and every node's output among them.
    let mut written: BTreeSet<Digest> = BTreeSet::new();
    let mut outputs: BTreeSet<Digest> = BTreeSet::new();
    // The environments' records, for the provenance.
    let mut envs: BTreeMap<Digest, Vec<u8>> = BTreeMap::new();
    let mut omitted: BTreeSet<Digest> = BTreeSet::new();
    let mut queue = vec![(crate::model::names::RELEASE.to_owned(), release_key)];
    let mut release_out = None;
    while let Some((name, key)) = queue.pop() {
        if nodes.contains_key(&name) {
            continue;
        }
        let (record, display, row) = store
            .key_record(&key)
            .map_err(|x| e(&x))?
            .ok_or_else(|| format!("{name}: node {key} is not in the cache (collected?)"))?;
        let display = NodeDisplay::parse(&display);
        if display.deps.len() != record.deps.len() {
            return Err(format!("{name}: its record does not name its dependencies"));
        }
        // Each input under its name in the last build: a node reused under
        // another name (a renamed session file, a patch two sessions share)
        // names the inputs of the build that first made it, which may be
        // gone; the input is then the last build's node of the same output.
        let mut inputs = Vec::with_capacity(display.deps.len());
        let found = entries.inputs(&display.deps, &record.deps);
        for (dep, entry) in display.deps.iter().zip(found) {
            let Some((entry, key)) = entry.and_then(|m| Some((m, m.key?))) else {
                return Err(format!("{name}: input {dep} is not in the last build"));
            };
            inputs.push(entry.name.clone());
            queue.push((entry.name.clone(), key));
        }
        let output = store
            .output_bytes(&row)
            .map_err(|x| format!("{name}: {x}"))?;
        if written.insert(row.output) {
            out.blob(&row.output, &output)?;
        }
        outputs.insert(row.output);
        if record.kind.as_str() == crate::model::kind::NodeKind::Env {
            envs.insert(row.output, output);
        } else if name == crate::model::names::RELEASE {
            release_out = Some(output);
        }
        if omit.contains(&record.kind) {
            omitted.extend(row.attachments.iter().copied());
        }
        nodes.insert(
            name.clone(),
            BundleNode {
                name: name.clone(),
                kind: record.kind.clone(),
                key: key.to_hex(),
                schema: record.schema,
                kind_version: record.kind_version,
                params: hex::encode(&record.params),
                deps: record.deps.iter().map(Digest::to_hex).collect(),
                inputs,
                output: row.output.to_hex(),
                attachments: row.attachments.iter().map(Digest::to_hex).collect(),
                params_json: (name == crate::model::names::RELEASE).then_some(display.params),
            },
        );
    }
    // An attachment of a left-out kind is left out wherever it is attached
    // (a grade attaches its run's log), unless it is some node's output.
    omitted.retain(|d| !outputs.contains(d));
    drop(outputs);
    for n in nodes.values() {
        for a in &n.attachments {
            let d: Digest = a.parse()?;
            if !omitted.contains(&d) && !written.contains(&d) {
                let bytes = store
                    .blobs()
                    .get(&d)
                    .map_err(|x| format!("{}: {x}", n.name))?;
                out.blob(&d, &bytes)?;
                written.insert(d);
            }
        }
    }

    let release: ReleaseRecord = serde_json::from_slice(&release_out.unwrap_or_default())
        .map_err(|x| format!("release output: {x}"))?;
    // Each release file written as it is read; its digests kept for the
    // statement.
    let mut subjects: BTreeMap<String, Hashes> = BTreeMap::new();
    let mut manifest_bytes = None;
    for (name, digest) in &release.files {
        let d: Digest = digest.parse()?;
        let bytes = store.blobs().get(&d).map_err(|x| e(&x))?;
        out.put(&Path::new("release").join(name), &bytes)?;
        subjects.insert(name.clone(), Hashes::of(&bytes));
        if name == "manifest.json" {
            manifest_bytes = Some(bytes);
        }
    }
    let manifest_bytes = manifest_bytes.ok_or("the release has no manifest.json")?;
    let (release_digest, _) =
        release_digest(&manifest_bytes).ok_or("manifest.json has no release_digest")?;

    let provenance = provenance(
        &nodes,
        &envs,
        &manifest_bytes,
        &release_digest,
        &release_key,
    );
    let counts = Counts {
        nodes: nodes.len(),
        blobs: written.len(),
        files: subjects.len(),
        omitted_blobs: omitted.len(),
    };
    let head = BundleHead {
        format: FORMAT.to_owned(),
        release_digest: release_digest.clone(),
        release_node: release_key.to_hex(),
        omitted: omit.to_vec(),
        counts: counts.clone(),
        provenance: provenance.clone(),
    };

    write_nodes(out, &nodes)?;
    out.put(Path::new("bundle.json"), &pretty(&head))?;
    out.put(
        Path::new("provenance.intoto.json"),
        &pretty(&Statement::new(&subjects, &provenance)),
    )?;
    Ok(Exported {
        release_digest,
        counts,
        bytes: out.bytes,
    })
}

/// `nodes.jsonl`: one line a node, sorted by name, written as made.
fn write_nodes(out: &mut Out, nodes: &BTreeMap<String, BundleNode>) -> Result<(), String> {
    let path = out.dir.join("nodes.jsonl");
    let fail = |x: &dyn std::fmt::Display| format!("{}: {x}", path.display());
    let file = std::fs::File::create(&path).map_err(|x| fail(&x))?;
    let mut lines = std::io::BufWriter::new(file);
    for n in nodes.values() {
        let line = serde_json::to_vec(n).map_err(|x| fail(&x))?;
        out.bytes += line.len() as u64 + 1;
        lines
            .write_all(&line)
            .and_then(|()| lines.write_all(b"\n"))
            .map_err(|x| fail(&x))?;
    }
    lines.flush().map_err(|x| fail(&x))
}

/// What the release was made from and by: the release node, the assay and
/// pipeline of its build (from its manifest), the executors and environments
/// (image ids), the judges' settings digests.
fn provenance(
    nodes: &BTreeMap<String, BundleNode>,
    envs: &BTreeMap<Digest, Vec<u8>>,
    manifest: &[u8],
    release_digest: &str,
    release_key: &Digest,
) -> BundleProvenance {
    let mut environments = BTreeMap::new();
    for n in nodes
        .values()
        .filter(|n| n.kind.as_str() == crate::model::kind::NodeKind::Env)
    {
        let rec: Option<EnvRecord> = n
            .output
            .parse::<Digest>()
            .ok()
            .and_then(|d| envs.get(&d))
            .and_then(|b| serde_json::from_slice(b).ok());
        let rec = rec.as_ref();
        environments.insert(
            n.name.clone(),
            BundleEnv {
                key: n.key.clone(),
                executor: rec.and_then(|r| r.executor).unwrap_or_default(),
                image: rec.and_then(|r| r.image.clone()),
                base_image: rec.and_then(|r| r.base_image.clone()),
                digest: rec.map(|r| r.digest.clone()),
            },
        );
    }
    let manifest: Option<Manifest> = serde_json::from_slice(manifest).ok();
    let sealed = manifest.as_ref().and_then(|m| m.provenance.as_ref());
    BundleProvenance {
        release_digest: release_digest.to_owned(),
        release_node: release_key.to_hex(),
        // The assay that built the release (never the exporting one: the
        // same release exports to the same bytes with any assay).
        assay: sealed.map(|p| p.assay.clone()),
        pipeline: sealed.map(|p| p.pipeline.clone()),
        environments,
        judges: manifest.and_then(|m| m.judges).unwrap_or_default(),
    }
}
