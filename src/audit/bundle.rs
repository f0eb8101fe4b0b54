//! Bundles: the closure of a release, checkable without the cache it came from.
//!
//! `assay export --to DIR` writes every node the last build's release node
//! depends on (transitively, by name in that build's manifest): its key
//! record, its output bytes and its attachments, plus the release files and
//! their provenance. `assay verify --bundle DIR` recomputes every key from its
//! record, every blob digest from its bytes, every link (a node's dependency
//! digest must be the output digest of the node it names) and every release
//! file from the release node's inputs, with the same pure function the
//! release job runs (`stages::assemble`). Layout and checks: docs/audit.md.
//!
//! A bundle is deterministic: nodes sorted by name, JSON in one fixed
//! formatting, no timestamps, so one release exported twice, anywhere, gives
//! the same bytes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use assay_engine::{Digest, KeyRecord, Store};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Digest as _;

use super::recompute::{Recomputed, recompute_release};
use super::release::{Finding, finding, first_difference, release_digest};
use crate::stages::{NodeKind, ReleaseRecord};

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
    fn record(&self) -> Result<KeyRecord, String> {
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
    pub(crate) provenance: Value,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Counts {
    pub(crate) nodes: usize,
    pub(crate) blobs: usize,
    pub(crate) files: usize,
    pub(crate) omitted_blobs: usize,
}

/// What `export` wrote.
#[derive(Debug)]
pub(crate) struct Exported {
    pub(crate) release_digest: String,
    pub(crate) counts: Counts,
    pub(crate) bytes: u64,
}

/// The node kinds whose attachments `--no-logs` leaves out: run logs and
/// reports, environment setup logs and images.
pub(crate) const LOG_KINDS: [NodeKind; 2] = [NodeKind::Run, NodeKind::Env];

fn pretty(v: &impl Serialize) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).unwrap_or_default();
    out.push(b'\n');
    out
}

fn blob_path(dir: &Path, hex: &str) -> PathBuf {
    dir.join("blobs").join(&hex[..2]).join(&hex[2..])
}

/// Writes the closure of the last build's release into `dir` (which must be
/// empty or absent).
pub(crate) fn export(store: &Store, dir: &Path, omit: &[String]) -> Result<Exported, String> {
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(format!(
            "{} is not empty: export writes a fresh directory",
            dir.display()
        ));
    }
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
    let by_name: HashMap<&str, &assay_engine::ManifestEntry> = manifest
        .entries
        .iter()
        .map(|m| (m.name.as_str(), m))
        .collect();
    let release_key = by_name
        .get(crate::stages::RELEASE_NODE)
        .and_then(|m| m.key)
        .ok_or("the last build has no release node")?;

    let mut nodes: BTreeMap<String, BundleNode> = BTreeMap::new();
    let mut blobs: BTreeMap<Digest, Vec<u8>> = BTreeMap::new();
    let mut omitted: BTreeSet<Digest> = BTreeSet::new();
    let mut queue = vec![(crate::stages::RELEASE_NODE.to_owned(), release_key)];
    let mut release_out = None;
    while let Some((name, key)) = queue.pop() {
        if nodes.contains_key(&name) {
            continue;
        }
        let (record, display, row) = store
            .key_record(&key)
            .map_err(|x| e(&x))?
            .ok_or_else(|| format!("{name}: node {key} is not in the cache (collected?)"))?;
        let display: Value = serde_json::from_str(&display).unwrap_or_default();
        let inputs: Vec<String> =
            serde_json::from_value(display["deps"].clone()).unwrap_or_default();
        if inputs.len() != record.deps.len() {
            return Err(format!("{name}: its record does not name its dependencies"));
        }
        for dep in &inputs {
            let dep_key = by_name
                .get(dep.as_str())
                .and_then(|m| m.key)
                .ok_or_else(|| format!("{name}: input {dep} is not in the last build"))?;
            queue.push((dep.clone(), dep_key));
        }
        let output = store
            .output_bytes(&row)
            .map_err(|x| format!("{name}: {x}"))?;
        if name == crate::stages::RELEASE_NODE {
            release_out = Some(output.clone());
        }
        blobs.insert(row.output, output);
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
                params_json: (name == crate::stages::RELEASE_NODE)
                    .then(|| display["params"].clone()),
            },
        );
    }
    // An attachment of a left-out kind is left out wherever it is attached
    // (a grade attaches its run's log), unless it is some node's output.
    omitted.retain(|d| !blobs.contains_key(d));
    for n in nodes.values() {
        for a in &n.attachments {
            let d: Digest = a.parse()?;
            if !omitted.contains(&d) && !blobs.contains_key(&d) {
                let bytes = store
                    .blobs()
                    .get(&d)
                    .map_err(|x| format!("{}: {x}", n.name))?;
                blobs.insert(d, bytes);
            }
        }
    }

    let release: ReleaseRecord = serde_json::from_slice(&release_out.unwrap_or_default())
        .map_err(|x| format!("release output: {x}"))?;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (name, digest) in &release.files {
        let d: Digest = digest.parse()?;
        let bytes = match blobs.get(&d) {
            Some(b) => b.clone(),
            None => store.blobs().get(&d).map_err(|x| e(&x))?,
        };
        files.insert(name.clone(), bytes);
    }
    let manifest_bytes = files
        .get("manifest.json")
        .ok_or("the release has no manifest.json")?;
    let (release_digest, _) =
        release_digest(manifest_bytes).ok_or("manifest.json has no release_digest")?;

    let provenance = provenance(&nodes, &blobs, &files, &release_digest, &release_key);
    let counts = Counts {
        nodes: nodes.len(),
        blobs: blobs.len(),
        files: files.len(),
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

    let mut bytes = 0u64;
    let mut write = |path: PathBuf, data: &[u8]| -> Result<(), String> {
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|x| format!("{}: {x}", p.display()))?;
        }
        bytes += data.len() as u64;
        std::fs::write(&path, data).map_err(|x| format!("{}: {x}", path.display()))
    };
    for (d, data) in &blobs {
        write(blob_path(dir, &d.to_hex()), data)?;
    }
    for (name, data) in &files {
        write(dir.join("release").join(name), data)?;
    }
    let mut lines = Vec::new();
    for n in nodes.values() {
        lines.extend(serde_json::to_vec(n).map_err(|x| e(&x))?);
        lines.push(b'\n');
    }
    write(dir.join("nodes.jsonl"), &lines)?;
    write(dir.join("bundle.json"), &pretty(&head))?;
    write(
        dir.join("provenance.intoto.json"),
        &pretty(&statement(&files, &provenance)),
    )?;
    Ok(Exported {
        release_digest,
        counts,
        bytes,
    })
}

/// What the release was made from and by: the release node, the assay and
/// pipeline of its build (from its manifest), the executors and environments
/// (image ids), the judges' settings digests.
fn provenance(
    nodes: &BTreeMap<String, BundleNode>,
    blobs: &BTreeMap<Digest, Vec<u8>>,
    files: &BTreeMap<String, Vec<u8>>,
    release_digest: &str,
    release_key: &Digest,
) -> Value {
    let mut environments = BTreeMap::new();
    for n in nodes.values().filter(|n| n.kind == NodeKind::Env) {
        let rec: Value = n
            .output
            .parse::<Digest>()
            .ok()
            .and_then(|d| blobs.get(&d))
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_default();
        environments.insert(
            n.name.clone(),
            json!({
                "key": n.key,
                "executor": rec["executor"].as_str().unwrap_or("local"),
                "image": rec["image"],
                "base_image": rec["base_image"],
                "digest": rec["digest"],
            }),
        );
    }
    let manifest: Value = files
        .get("manifest.json")
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or_default();
    json!({
        "release_digest": release_digest,
        "release_node": release_key.to_hex(),
        // The assay that built the release (never the exporting one: the
        // same release exports to the same bytes with any assay).
        "assay": manifest["provenance"]["assay"],
        "pipeline": manifest["provenance"]["pipeline"],
        "environments": environments,
        "judges": manifest.get("judges").cloned().unwrap_or_else(|| json!({})),
    })
}

/// The in-toto Statement (SLSA provenance v1) whose subjects are the release
/// files, by sha256 (and blake3, assay's own digest).
fn statement(files: &BTreeMap<String, Vec<u8>>, provenance: &Value) -> Value {
    let subjects: Vec<Value> = files
        .iter()
        .map(|(name, bytes)| {
            json!({
                "name": format!("release/{name}"),
                "digest": {
                    "sha256": hex::encode(sha2::Sha256::digest(bytes)),
                    "blake3": Digest::of(bytes).to_hex(),
                },
            })
        })
        .collect();
    json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": subjects,
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {
            "buildDefinition": {
                "buildType": "https://assay.dev/release/v1",
                "externalParameters": {
                    "release_node": provenance["release_node"],
                    "judges": provenance["judges"],
                },
                "internalParameters": { "environments": provenance["environments"] },
                "resolvedDependencies": [],
            },
            "runDetails": {
                "builder": {
                    "id": "https://assay.dev/builder/assay",
                    "version": provenance["assay"],
                },
                "metadata": { "invocationId": provenance["release_digest"] },
            },
        },
    })
}

/// Why `verify --bundle` could not check anything.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BundleError {
    #[error("{0} is not a bundle (no bundle.json)")]
    NotABundle(String),
    #[error("no published number `{0}` in release/manifest.json")]
    NoSuchNumber(String),
    /// A bundle whose own files cannot be read as one (a mismatch).
    #[error("{0}")]
    Unreadable(String),
}

/// What `verify --bundle` checked.
#[derive(Debug, Default)]
pub(crate) struct BundleChecked {
    pub(crate) nodes: usize,
    pub(crate) blobs: usize,
    pub(crate) omitted_blobs: usize,
    pub(crate) files: usize,
    pub(crate) numbers: usize,
    pub(crate) release_digest: String,
    /// With a number: the nodes its manifest entry lists, with what each
    /// says (a grade's verdict, a reading's outcome).
    pub(crate) sources: Vec<(String, String)>,
}

/// The bundle as read from disk.
struct Bundle {
    dir: PathBuf,
    head: BundleHead,
    nodes: Vec<BundleNode>,
    files: BTreeMap<String, Vec<u8>>,
}

fn read_bundle(dir: &Path) -> Result<Bundle, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let head: BundleHead = serde_json::from_slice(&read(&dir.join("bundle.json"))?)
        .map_err(|e| format!("bundle.json: {e}"))?;
    if head.format != FORMAT {
        return Err(format!(
            "bundle.json: format `{}`, this assay reads `{FORMAT}`",
            head.format
        ));
    }
    let text = read(&dir.join("nodes.jsonl"))?;
    let mut nodes = Vec::new();
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        nodes.push(
            serde_json::from_slice(line).map_err(|e| format!("nodes.jsonl line {}: {e}", i + 1))?,
        );
    }
    let mut files = BTreeMap::new();
    let rel = dir.join("release");
    let entries =
        std::fs::read_dir(&rel).map_err(|e| format!("cannot read {}: {e}", rel.display()))?;
    for e in entries.flatten() {
        if e.path().is_file() {
            let name = e.file_name().to_string_lossy().into_owned();
            files.insert(name, read(&e.path())?);
        }
    }
    Ok(Bundle {
        dir: dir.to_owned(),
        head,
        nodes,
        files,
    })
}

/// Every file under `blobs/`, hashed (on two threads): name -> whether its
/// bytes hash to its name.
fn hash_blobs(dir: &Path) -> BTreeMap<String, Result<(), String>> {
    let mut paths = Vec::new();
    for shard in std::fs::read_dir(dir.join("blobs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let prefix = shard.file_name().to_string_lossy().into_owned();
        for f in std::fs::read_dir(shard.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            paths.push((
                format!("{prefix}{}", f.file_name().to_string_lossy()),
                f.path(),
            ));
        }
    }
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8);
    let chunk = paths.len().div_ceil(threads).max(1);
    let mut out = BTreeMap::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|(name, path)| {
                            let r = match std::fs::read(path) {
                                Err(e) => Err(format!("unreadable: {e}")),
                                Ok(b) => {
                                    let got = Digest::of(&b).to_hex();
                                    if got == *name {
                                        Ok(())
                                    } else {
                                        Err(format!("its bytes hash to {got}"))
                                    }
                                }
                            };
                            (name.clone(), r)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            out.extend(h.join().unwrap_or_default());
        }
    });
    out
}

/// `verify --bundle DIR [NUMBER]`: every check, or those one number rests on.
pub(crate) fn verify_bundle(
    dir: &Path,
    number: Option<&str>,
    expected_digest: Option<&str>,
) -> Result<(Vec<Finding>, BundleChecked), BundleError> {
    if !dir.join("bundle.json").is_file() {
        return Err(BundleError::NotABundle(dir.display().to_string()));
    }
    let b = read_bundle(dir).map_err(BundleError::Unreadable)?;
    let mut findings = Vec::new();
    let mut checked = BundleChecked::default();

    // The release files: the manifest's own digest, the digests it lists,
    // the statement's sha256 subjects.
    let manifest_bytes = b
        .files
        .get("manifest.json")
        .ok_or_else(|| BundleError::Unreadable("no release/manifest.json".to_owned()))?;
    match release_digest(manifest_bytes) {
        None => findings.push(finding(
            "release/manifest.json",
            "no readable release_digest",
        )),
        Some((claimed, actual)) => {
            checked.release_digest = claimed.clone();
            if claimed != actual {
                findings.push(finding(
                    "release/manifest.json release_digest",
                    format!("says {claimed}, the manifest hashes to {actual}"),
                ));
            }
            if claimed != b.head.release_digest {
                findings.push(finding(
                    "bundle.json release_digest",
                    format!(
                        "says {}, release/manifest.json says {claimed}",
                        b.head.release_digest
                    ),
                ));
            }
            if let Some(want) = expected_digest
                && want != claimed
            {
                findings.push(finding(
                    "release digest",
                    format!("expected {want}, the bundle's release is {claimed}"),
                ));
            }
        }
    }
    let manifest: Value = serde_json::from_slice(manifest_bytes).unwrap_or_default();
    // The files' own digests are reported after the nodes and the
    // recomputation, which name the field that differs.
    let mut late = Vec::new();
    for (name, digest) in manifest["files"].as_object().into_iter().flatten() {
        let want = digest.as_str().unwrap_or_default();
        match b.files.get(name) {
            None => late.push(finding(
                format!("release/{name}"),
                "listed in manifest.json but missing",
            )),
            Some(bytes) if Digest::of(bytes).to_hex() != want => late.push(finding(
                format!("release/{name}"),
                format!(
                    "manifest.json says {want}, the file hashes to {}",
                    Digest::of(bytes)
                ),
            )),
            Some(_) => {}
        }
    }
    check_statement(&b, &mut late);
    checked.files = b.files.len();

    // The nodes to check: all, or the closure of one number's sources.
    let by_name: BTreeMap<&str, &BundleNode> =
        b.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let by_key: BTreeMap<&str, &BundleNode> = b.nodes.iter().map(|n| (n.key.as_str(), n)).collect();
    let release = by_key
        .get(b.head.release_node.as_str())
        .copied()
        .filter(|n| n.kind == NodeKind::Release);
    // The release digest covers the release node's key, and so, through the
    // key records, every input the release was computed from.
    if let Some(node) = manifest["provenance"]["release_node"].as_str()
        && node != b.head.release_node
    {
        findings.push(finding(
            "release/manifest.json provenance.release_node",
            format!(
                "says {node}, bundle.json names release node {}",
                b.head.release_node
            ),
        ));
    }
    let wanted: Option<(Value, BTreeSet<&str>)> = match number {
        None => {
            // Every node the manifest names must be in the bundle.
            let mut named: BTreeSet<&str> = BTreeSet::new();
            for n in manifest["numbers"].as_array().into_iter().flatten() {
                for field in ["grades", "readings"] {
                    named.extend(
                        n[field]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str),
                    );
                }
            }
            named.extend(
                manifest["tasks"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(_, d)| d.as_str()),
            );
            for k in named {
                if !by_key.contains_key(k) {
                    findings.push(finding(
                        "release/manifest.json",
                        format!("names node {k}, which is not in the bundle"),
                    ));
                }
            }
            None
        }
        Some(path) => {
            let entry = manifest["numbers"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|n| n["path"] == path)
                .cloned()
                .ok_or_else(|| BundleError::NoSuchNumber(path.to_owned()))?;
            let mut roots = BTreeSet::new();
            for field in ["grades", "readings", "tasks"] {
                for k in entry[field].as_array().into_iter().flatten() {
                    let k = k.as_str().unwrap_or_default();
                    match by_key.get(k) {
                        Some(n) => {
                            roots.insert(n.name.as_str());
                            let says: Value = std::fs::read(blob_path(&b.dir, &n.output))
                                .ok()
                                .and_then(|b| serde_json::from_slice(&b).ok())
                                .unwrap_or_default();
                            let says = ["verdict", "outcome", "status"]
                                .iter()
                                .find_map(|f| says[*f].as_str().map(str::to_owned))
                                .unwrap_or_default();
                            checked.sources.push((n.name.clone(), says));
                        }
                        None => findings.push(finding(
                            format!("{path} {field}"),
                            format!("node {k} is not in the bundle"),
                        )),
                    }
                }
            }
            if let Some(r) = release {
                // Shallow: the release's own inputs are read for the
                // recomputation; their digests are checked below.
                roots.insert(r.name.as_str());
            }
            Some((entry, closure(&by_name, roots)))
        }
    };
    let in_scope = |n: &BundleNode| {
        wanted
            .as_ref()
            .is_none_or(|(_, set)| set.contains(n.name.as_str()))
    };

    let blob_state = hash_blobs(&b.dir);
    // Attachments of the kinds left out may be absent, wherever attached.
    let omittable: BTreeSet<&str> = b
        .nodes
        .iter()
        .filter(|n| b.head.omitted.contains(&n.kind))
        .flat_map(|n| n.attachments.iter().map(String::as_str))
        .collect();
    let mut blobs_checked: BTreeSet<&str> = BTreeSet::new();
    let mut omitted_blobs: BTreeSet<String> = BTreeSet::new();
    let mut check_blob =
        |hex: &str, what: String, may_be_absent: bool, out: &mut Vec<Finding>| -> bool {
            match blob_state.get_key_value(hex) {
                Some((k, Ok(()))) => {
                    blobs_checked.insert(k.as_str());
                    true
                }
                Some((_, Err(why))) => {
                    out.push(finding(format!("blob {hex} ({what})"), why.clone()));
                    false
                }
                None if may_be_absent => {
                    omitted_blobs.insert(hex.to_owned());
                    false
                }
                None => {
                    out.push(finding(
                        format!("blob {hex} ({what})"),
                        "missing from the bundle",
                    ));
                    false
                }
            }
        };
    for n in b.nodes.iter().filter(|n| in_scope(n)) {
        checked.nodes += 1;
        let what = format!("node {}", n.name);
        match n.record() {
            Err(e) => findings.push(finding(what.clone(), format!("key record unreadable: {e}"))),
            Ok(r) if r.key().to_hex() != n.key => findings.push(finding(
                what.clone(),
                format!(
                    "its key record hashes to {}, not to its key {}",
                    r.key(),
                    n.key
                ),
            )),
            Ok(_) => {}
        }
        check_blob(
            &n.output,
            format!("output of {}", n.name),
            false,
            &mut findings,
        );
        for a in &n.attachments {
            let absent_ok = omittable.contains(a.as_str());
            check_blob(
                a,
                format!("attachment of {}", n.name),
                absent_ok,
                &mut findings,
            );
        }
        if n.inputs.len() != n.deps.len() {
            findings.push(finding(
                what.clone(),
                format!(
                    "{} dependencies but {} input names",
                    n.deps.len(),
                    n.inputs.len()
                ),
            ));
        }
        for (i, (dep, name)) in n.deps.iter().zip(&n.inputs).enumerate() {
            match by_name.get(name.as_str()) {
                None => findings.push(finding(
                    what.clone(),
                    format!("input {i} ({name}) is not in the bundle"),
                )),
                Some(d) if d.output != *dep => findings.push(finding(
                    what.clone(),
                    format!(
                        "input {i} ({name}): the key record reads output {dep}, the bundle's {name} outputs {}",
                        d.output
                    ),
                )),
                Some(_) => {}
            }
        }
    }
    checked.blobs = blobs_checked.len();
    checked.omitted_blobs = omitted_blobs.len();

    // Every release file, recomputed from the release node's inputs.
    let Some(release) = release else {
        findings.push(finding(
            "bundle.json release_node",
            format!("no release node {} in nodes.jsonl", b.head.release_node),
        ));
        findings.extend(late);
        return Ok((findings, checked));
    };
    let recomputed = recompute(&b, release, &by_name, &mut findings);
    let Some(files) = recomputed else {
        findings.extend(late);
        return Ok((findings, checked));
    };
    match &wanted {
        None => {
            let before = findings.len();
            compare_files(&b.files, &files, &mut findings);
            // The numbers count as checked when both files that hold them recompute.
            let holds_numbers =
                |f: &Finding| f.what == "release/summary.json" || f.what == "release/manifest.json";
            if !findings[before..].iter().any(holds_numbers) {
                checked.numbers = manifest["numbers"].as_array().map_or(0, Vec::len);
            }
        }
        Some((entry, _)) => {
            let again: Value = files
                .get("manifest.json")
                .and_then(|m| serde_json::from_slice(m).ok())
                .unwrap_or_default();
            let path = entry["path"].as_str().unwrap_or_default();
            let redo = again["numbers"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|n| n["path"] == path);
            match redo {
                None => findings.push(finding(path, "not in the recomputed release")),
                Some(r) if r != entry => {
                    findings.push(finding(path, format!("published {entry}, recomputed {r}")))
                }
                Some(_) => checked.numbers = 1,
            }
            // The published value in summary.json must be the manifest's too.
            if let Some(s) = b.files.get("summary.json")
                && files.get("summary.json") != Some(s)
            {
                compare_files(
                    &BTreeMap::from([("summary.json".to_owned(), s.clone())]),
                    &BTreeMap::from([(
                        "summary.json".to_owned(),
                        files.get("summary.json").cloned().unwrap_or_default(),
                    )]),
                    &mut findings,
                );
            }
        }
    }
    findings.extend(late);
    Ok((findings, checked))
}

/// The names reachable from `roots` through inputs.
fn closure<'a>(
    by_name: &BTreeMap<&'a str, &'a BundleNode>,
    roots: BTreeSet<&'a str>,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&str> = roots.into_iter().collect();
    while let Some(name) = stack.pop() {
        let Some(n) = by_name.get(name) else { continue };
        if !seen.insert(n.name.as_str()) {
            continue;
        }
        // The release's inputs are read, not descended into.
        if n.kind == NodeKind::Release {
            for i in &n.inputs {
                if let Some(d) = by_name.get(i.as_str()) {
                    seen.insert(d.name.as_str());
                }
            }
            continue;
        }
        stack.extend(n.inputs.iter().map(String::as_str));
    }
    seen
}

/// The release files from the release node's params and input outputs, and
/// its output record checked against what the job stored.
fn recompute(
    b: &Bundle,
    release: &BundleNode,
    by_name: &BTreeMap<&str, &BundleNode>,
    findings: &mut Vec<Finding>,
) -> Option<BTreeMap<String, Vec<u8>>> {
    let what = format!("node {}", release.name);
    let Some(params_json) = &release.params_json else {
        findings.push(finding(what, "no params_json"));
        return None;
    };
    let params = match hex::decode(&release.params) {
        Ok(p) => p,
        Err(e) => {
            findings.push(finding(what, format!("params: {e}")));
            return None;
        }
    };
    let mut inputs = Vec::with_capacity(release.inputs.len());
    for name in &release.inputs {
        let read = by_name.get(name.as_str()).and_then(|n| {
            let bytes = std::fs::read(blob_path(&b.dir, &n.output)).ok()?;
            let key = n.key.parse::<Digest>().ok()?;
            (Digest::of(&bytes).to_hex() == n.output).then_some((bytes, key))
        });
        match read {
            Some(input) => inputs.push(input),
            None => {
                findings.push(finding(
                    what,
                    format!("input {name}: its output is not in the bundle, or corrupt: nothing recomputed"),
                ));
                return None;
            }
        }
    }
    // A blob is believed only if it hashes to its name.
    let read = |hex: &str| -> Result<Vec<u8>, String> {
        let d: Digest = hex.parse()?;
        let bytes = std::fs::read(blob_path(&b.dir, &d.to_hex()))
            .map_err(|e| format!("blob {hex}: {e}"))?;
        if Digest::of(&bytes) == d {
            Ok(bytes)
        } else {
            Err(format!("blob {hex} does not hash to its name"))
        }
    };
    let Recomputed { files, record } = match recompute_release(params_json, &params, &inputs, &read)
    {
        Ok(r) => r,
        Err(e) => {
            findings.push(finding(what, format!("cannot recompute the release: {e}")));
            return None;
        }
    };
    // The release job itself, re-executed: its output record names the files.
    let stored = std::fs::read(blob_path(&b.dir, &release.output)).unwrap_or_default();
    if serde_json::to_vec(&record).unwrap_or_default() != stored {
        findings.push(finding(
            what,
            "its output record differs from the release recomputed from its inputs",
        ));
    }
    Some(files)
}

/// Published against recomputed, naming the file and the first differing
/// field (a number's path in summary.json, a column of results.csv).
fn compare_files(
    published: &BTreeMap<String, Vec<u8>>,
    recomputed: &BTreeMap<String, Vec<u8>>,
    findings: &mut Vec<Finding>,
) {
    for (name, bytes) in recomputed {
        let what = format!("release/{name}");
        match published.get(name) {
            None => findings.push(finding(what, "recomputed, but missing from the bundle")),
            Some(have) if have == bytes => {}
            Some(have) => {
                let field = match name.as_str() {
                    "summary.json" | "manifest.json" | "funnel.json" => {
                        let a: Value = serde_json::from_slice(have).unwrap_or_default();
                        let b: Value = serde_json::from_slice(bytes).unwrap_or_default();
                        let root = if name == "summary.json" {
                            "summary"
                        } else {
                            ""
                        };
                        first_json_difference(&a, &b, root.to_owned())
                    }
                    "results.csv" => first_csv_difference(have, bytes),
                    _ => None,
                };
                let problem = match field {
                    Some(f) => format!("field {f}"),
                    None => first_difference(have, bytes),
                };
                findings.push(finding(what, problem));
            }
        }
    }
    for name in published.keys() {
        if !recomputed.contains_key(name) {
            findings.push(finding(
                format!("release/{name}"),
                "in the bundle, but not a file of the release",
            ));
        }
    }
}

fn segment(key: &str) -> String {
    if !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        format!(".{key}")
    } else {
        format!("[{key}]")
    }
}

/// The path of the first value that differs, with both values.
fn first_json_difference(a: &Value, b: &Value, path: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_json_difference(p, q, format!("{path}{}", segment(k))),
                (p, q) => Some(format!(
                    "{path}{}: published {}, recomputed {}",
                    segment(k),
                    p.map_or("(absent)".to_owned(), Value::to_string),
                    q.map_or("(absent)".to_owned(), Value::to_string)
                )),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_json_difference(p, q, format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: published {a}, recomputed {b}")),
    }
}

/// Splits one CSV line (RFC 4180 quoting).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                if let Some(f) = out.last_mut() {
                    f.push('"');
                }
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => {
                if let Some(f) = out.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    out
}

/// "row N (session …, arm …) column C: published …, recomputed …", or a row
/// missing or added.
fn first_csv_difference(published: &[u8], recomputed: &[u8]) -> Option<String> {
    let a = String::from_utf8_lossy(published);
    let b = String::from_utf8_lossy(recomputed);
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let header = csv_fields(b.first()?);
    let label = |fields: &[String]| {
        let col = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .and_then(|i| fields.get(i))
                .cloned()
                .unwrap_or_default()
        };
        format!("session {}, arm {}", col("session"), col("arm"))
    };
    for i in 0..a.len().max(b.len()) {
        match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (Some(_), Some(y)) if a.len() < b.len() && a[i..] == b[i + 1..] => {
                return Some(format!("row {i} ({}) is missing", label(&csv_fields(y))));
            }
            (Some(x), Some(_)) if a.len() > b.len() && a[i + 1..] == b[i..] => {
                return Some(format!(
                    "row {i} ({}) is not in the recomputation",
                    label(&csv_fields(x))
                ));
            }
            (Some(x), Some(y)) => {
                let (fx, fy) = (csv_fields(x), csv_fields(y));
                let col = (0..fx.len().max(fy.len())).find(|&c| fx.get(c) != fy.get(c))?;
                return Some(format!(
                    "row {i} ({}) column {}: published `{}`, recomputed `{}`",
                    label(&fy),
                    header.get(col).map_or("?", String::as_str),
                    fx.get(col).map_or("", String::as_str),
                    fy.get(col).map_or("", String::as_str)
                ));
            }
            (None, Some(y)) => {
                return Some(format!("row {i} ({}) is missing", label(&csv_fields(y))));
            }
            (Some(x), None) => {
                return Some(format!(
                    "row {i} ({}) is not in the recomputation",
                    label(&csv_fields(x))
                ));
            }
            (None, None) => {}
        }
    }
    None
}

/// `provenance.intoto.json`: every subject's sha256 must be its file's.
fn check_statement(b: &Bundle, findings: &mut Vec<Finding>) {
    let path = b.dir.join("provenance.intoto.json");
    let Ok(bytes) = std::fs::read(&path) else {
        findings.push(finding("provenance.intoto.json", "missing"));
        return;
    };
    let v: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let subjects = v["subject"].as_array().cloned().unwrap_or_default();
    let named: BTreeSet<String> = subjects
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .collect();
    for name in b.files.keys() {
        if !named.contains(&format!("release/{name}")) {
            findings.push(finding(
                "provenance.intoto.json",
                format!("release/{name} is not a subject"),
            ));
        }
    }
    for s in &subjects {
        let name = s["name"].as_str().unwrap_or_default();
        let file = name.strip_prefix("release/").and_then(|n| b.files.get(n));
        let Some(data) = file else {
            findings.push(finding(
                "provenance.intoto.json",
                format!("subject {name} is not a file of the bundle"),
            ));
            continue;
        };
        let sha = hex::encode(sha2::Sha256::digest(data));
        if s["digest"]["sha256"].as_str() != Some(sha.as_str()) {
            findings.push(finding(
                "provenance.intoto.json",
                format!(
                    "subject {name}: sha256 {}, the file hashes to {sha}",
                    s["digest"]["sha256"]
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_follow_rfc_4180_quoting() {
        assert_eq!(
            csv_fields(r#"a,"b,c","d""e",,f"#),
            ["a", "b,c", "d\"e", "", "f"]
        );
    }

    #[test]
    fn the_first_json_difference_is_named_by_its_path() {
        let a = json!({"agents": {"a/m": {"n": 2, "rate": 0.5}}, "x": [1, 2]});
        let mut b = a.clone();
        b["agents"]["a/m"]["rate"] = json!(0.25);
        assert_eq!(
            first_json_difference(&b, &a, "summary".into()).as_deref(),
            Some("summary.agents[a/m].rate: published 0.25, recomputed 0.5")
        );
        assert_eq!(first_json_difference(&a, &a, "summary".into()), None);
        b = a.clone();
        b["x"] = json!([1]);
        assert!(
            first_json_difference(&b, &a, "summary".into())
                .is_some_and(|d| d.starts_with("summary.x: published [1]"))
        );
    }

    #[test]
    fn a_missing_csv_row_is_named_by_its_session_and_arm() {
        let full = b"session,arm,verdict\ns1,exclude,resolved\ns2,exclude,unresolved\n";
        let dropped = b"session,arm,verdict\ns2,exclude,unresolved\n";
        assert_eq!(
            first_csv_difference(dropped, full).as_deref(),
            Some("row 1 (session s1, arm exclude) is missing")
        );
        let edited = b"session,arm,verdict\ns1,exclude,unresolved\ns2,exclude,unresolved\n";
        assert_eq!(
            first_csv_difference(edited, full).as_deref(),
            Some(
                "row 1 (session s1, arm exclude) column verdict: published `unresolved`, recomputed `resolved`"
            )
        );
    }
}
