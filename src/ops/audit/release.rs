//! `assay verify --release DIR`: see the module header of `audit`.

use std::collections::BTreeMap;
use std::path::Path;

use assay_engine::{BuildManifest, Digest, KeyRecord, Store};
use serde::Deserialize;

use super::diff::first_difference;
use super::display::NodeDisplay;
use super::finding::{Finding, finding};
use crate::nodes::release::ReleaseRecord;
use crate::release::Manifest;

/// What was checked, for the closing line.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub(crate) files: usize,
    pub(crate) inputs: usize,
    pub(crate) release_digest: Option<String>,
    pub(crate) recomputed: bool,
}

/// The blake3 of `manifest.json` with the value of `release_digest` replaced by `""`.
pub(crate) fn release_digest(manifest: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(manifest).ok()?;
    /// Only the claim: a manifest that is no longer a valid one still says it.
    #[derive(Deserialize)]
    struct Claim {
        release_digest: String,
    }
    let claimed = serde_json::from_str::<Claim>(text).ok()?.release_digest;
    let needle = format!("\"release_digest\": \"{claimed}\"");
    let blanked = text.replacen(&needle, "\"release_digest\": \"\"", 1);
    if blanked == text && !claimed.is_empty() {
        return None;
    }
    Some((claimed, Digest::of(blanked.as_bytes()).to_hex()))
}

/// The release files under `dir`, named by their path below the release
/// directory (`pages/…` for the report's pages); hidden files and symbolic
/// links are not release files.
pub(super) fn read_files(
    dir: &Path,
    prefix: &str,
    present: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for e in entries.flatten() {
        let name = format!("{prefix}{}", e.file_name().to_string_lossy());
        let Ok(kind) = e.file_type() else {
            continue;
        };
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if kind.is_dir() && prefix.is_empty() {
            read_files(&e.path(), &format!("{name}/"), present)?;
        } else if kind.is_file() {
            let bytes = std::fs::read(e.path()).map_err(|err| format!("{name}: {err}"))?;
            present.insert(name, bytes);
        }
    }
    Ok(())
}

/// Step 1 of `verify --release`, which needs no cache: manifest.json's
/// `release_digest` against its bytes, every shard it names against its
/// digest, and every file it lists (through its shards) against its digest. Returns the findings and the digest the manifest claims.
pub(crate) fn check_listed(present: &BTreeMap<String, Vec<u8>>) -> (Vec<Finding>, Option<String>) {
    let mut findings = Vec::new();
    let Some(manifest) = present.get("manifest.json") else {
        return (findings, None);
    };
    let mut claim = None;
    match release_digest(manifest) {
        None => findings.push(finding("manifest.json", "no readable release_digest")),
        Some((claimed, actual)) => {
            if claimed != actual {
                findings.push(finding(
                    "manifest.json release_digest",
                    format!("says {claimed}, the manifest hashes to {actual}"),
                ));
            }
            claim = Some(claimed);
        }
    }
    let read = |name: &str| present.get(name).cloned();
    let (manifest, shards) = Manifest::read(manifest, &read).unwrap_or_default();
    for s in shards {
        findings.push(finding(s.file, s.problem));
    }
    for (name, want) in &manifest.files {
        match present.get(name) {
            None => findings.push(finding(name.clone(), "listed in manifest.json but missing")),
            Some(bytes) => {
                let got = Digest::of(bytes).to_hex();
                if got != *want {
                    findings.push(finding(
                        name.clone(),
                        format!("manifest.json says {want}, the file hashes to {got}"),
                    ));
                }
            }
        }
    }
    (findings, claim)
}

/// The release node of the last 50 builds whose output shares the most file
/// digests with `present`: its key, key record, display and build manifest.
fn find_release_node(
    store: &Store,
    present: &BTreeMap<String, Vec<u8>>,
) -> Result<Option<(Digest, KeyRecord, String, BuildManifest)>, String> {
    let digests: BTreeMap<&String, String> = present
        .iter()
        .map(|(n, b)| (n, Digest::of(b).to_hex()))
        .collect();
    let mut found = None;
    let mut best = 0;
    for build in store.builds(50).map_err(|e| e.to_string())? {
        let Some(m) = store.manifest(&build).map_err(|e| e.to_string())? else {
            continue;
        };
        let Some(key) = m.find(crate::model::names::RELEASE).and_then(|e| e.key) else {
            continue;
        };
        let Some((record, display, row)) = store.key_record(&key).map_err(|e| e.to_string())?
        else {
            continue;
        };
        let Ok(out) = store.output_bytes(&row) else {
            continue;
        };
        let Ok(rel) = serde_json::from_slice::<ReleaseRecord>(&out) else {
            continue;
        };
        let shared = rel
            .files
            .iter()
            .filter(|(n, d)| digests.get(n) == Some(d))
            .count();
        if shared > best {
            best = shared;
            found = Some((key, record, display, m));
        }
    }
    Ok(found)
}

pub(crate) fn verify_release(store: &Store, dir: &Path) -> Result<(Vec<Finding>, Checked), String> {
    let mut ph = crate::run::phase::Phases::new("verify release");
    let mut findings = Vec::new();
    let mut checked = Checked::default();
    let mut present: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    read_files(dir, "", &mut present)?;
    if present.is_empty() {
        return Err(format!("{} holds no release files", dir.display()));
    }

    ph.mark("read files");
    // 1. The manifest and the files it lists.
    let (listed, claimed) = check_listed(&present);
    findings.extend(listed);
    checked.release_digest = claimed;

    ph.mark("manifest files");
    // 2. The release node whose output names these files: the one sharing the
    // most file digests (a tampered file still finds its release, and then
    // shows up in step 3 as a difference from its recomputation).
    let found = find_release_node(store, &present)?;
    let Some((key, record, display, build_manifest)) = found else {
        findings.push(finding(
            "release",
            "no release node of the last 50 builds in this cache produced any of these files: \
             the numbers cannot be recomputed here (built with another cache, or collected)",
        ));
        checked.files = present.len();
        return Ok((findings, checked));
    };
    ph.mark("find release node");
    if record.key() != key {
        findings.push(finding(
            format!("release node {key}"),
            "its key record does not hash to its key",
        ));
    }
    // The manifest names the release node that computed it (`provenance`).
    if let Some(node) = present
        .get("manifest.json")
        .and_then(|m| serde_json::from_slice::<Manifest>(m).ok())
        .and_then(|m| m.provenance.map(|p| p.release_node))
        && node != key.to_hex()
    {
        findings.push(finding(
            "manifest.json provenance.release_node",
            format!("says {node}, the release node of these files is {key}"),
        ));
    }

    // 3. Recompute every file from the node's inputs, read back from the cache.
    let display = NodeDisplay::parse(&display);
    let names = &display.deps;
    let by_name: BTreeMap<&str, &assay_engine::ManifestEntry> = build_manifest
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e))
        .collect();
    let mut inputs: Vec<(Vec<u8>, Digest)> = Vec::with_capacity(record.deps.len());
    for (i, output) in record.deps.iter().enumerate() {
        let name = names.get(i).map(String::as_str).unwrap_or("?");
        let Some(dep_key) = by_name.get(name).and_then(|e| e.key) else {
            findings.push(finding(name, "input of the release, but not in its build"));
            continue;
        };
        let bytes = match store.key_record(&dep_key).map_err(|e| e.to_string())? {
            None => {
                findings.push(finding(name, format!("node {dep_key} is not in the cache")));
                continue;
            }
            Some((dep_record, _, row)) => {
                if dep_record.key() != dep_key {
                    findings.push(finding(name, "its key record does not hash to its key"));
                }
                if row.output != *output {
                    findings.push(finding(
                        name,
                        format!(
                            "the release read output {output}, the cache holds {}",
                            row.output
                        ),
                    ));
                }
                match store.output_bytes(&row) {
                    Ok(b) => b,
                    Err(e) => {
                        findings.push(finding(name, e.to_string()));
                        continue;
                    }
                }
            }
        };
        inputs.push((bytes, dep_key));
    }
    checked.inputs = inputs.len();
    ph.mark("read inputs");
    if inputs.len() == record.deps.len() {
        let read = crate::nodes::release::read_from(store.blobs());
        let files =
            super::recompute::recompute_release(&display.params, &record.params, &inputs, &read)?
                .files;
        checked.recomputed = true;
        ph.mark("recompute");
        for (name, bytes) in &files {
            match present.get(name) {
                None => findings.push(finding(
                    name.clone(),
                    "recomputed, but missing from the release",
                )),
                Some(have) if have != bytes => {
                    findings.push(finding(name.clone(), first_difference(have, bytes)));
                }
                Some(_) => {}
            }
        }
    }
    ph.mark("compare");
    checked.files = present.len();
    Ok((findings, checked))
}
