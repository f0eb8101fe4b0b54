//! `manifest.json`: ties the release to digests.
//!
//! ```json
//! {
//!   "files": { "report.html": "<blake3>", "results.csv": "<blake3>", "summary.json": "<blake3>" },
//!   "numbers": [ { "path": "summary.agents[alpha/model-a].resolved_rate", "value": 0.5,
//!                  "grades": ["<grade node key>", …] }, … ],
//!   "release_digest": "<blake3>",
//!   "tasks": { "<instance_id>/<track>": "<task digest>" }
//! }
//! ```
//!
//! - `files`: blake3 (hex) of each file's bytes.
//! - `numbers`: every number of summary.json, sorted by path, with what it was
//!   computed from: `grades` (grade node keys), and where it counts tasks or
//!   ungraded sessions, `tasks` (task digests) or `sessions` (session ids).
//!   A path starts at `summary`; a plain key (lowercase letters, digits, `_`)
//!   is written `.key`, any other key `[key]` with `%`, `[`, `]`
//!   percent-encoded, an array index `[i]`.
//! - `tasks`: every task of the release, by `instance_id/track`.
//! - `judges` (only with `[[judge]]`s): each judge's settings digest, by name
//!   (docs/judge.md); `numbers` from readings list them under `readings`
//!   (judge node keys).
//!
//! **Release digest.** The file is serde_json's pretty printing (two-space
//! indent, `": "` after keys, keys sorted) followed by one `\n`.
//! `release_digest` is the blake3 (hex) of exactly those bytes with the
//! digest's value emptied: to recompute it, take the bytes of manifest.json,
//! replace the one occurrence of `"release_digest": "<hex>"` with
//! `"release_digest": ""`, and hash the result. No parsing or re-encoding is
//! involved, so any language can check it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::index::Index;
use super::model::{AssayVersion, Manifest, ManifestProvenance, Number, ProvenanceEnv, Summary};
use super::paths::segment;
use super::sources::Sources;
use crate::model::records::{GradeRecord, TaskRecord};
use crate::run::provenance::Provenance;

/// The manifest of the files listed, unsealed: its `release_digest` is set
/// as it is written (`shards::split`), where it is printed anyway.
pub(super) fn manifest(
    index: &Index<'_>,
    files: &BTreeMap<String, String>,
    summary: &Summary,
    mut sources: Sources,
) -> Manifest {
    let files = files.clone();
    let list = |set: std::collections::BTreeSet<super::sources::Name>| set.into_iter().collect();
    let mut numbers = Vec::new();
    // The numbers are found by walking summary.json's own tree, so a number
    // the assembly forgot to give a source is listed too (with none). Each
    // source is moved, not copied: at a million sessions they are
    // gigabytes.
    let tree = serde_json::to_value(summary).unwrap_or_default();
    walk(&tree, "summary".to_owned(), &mut |path, value| {
        let source = sources.remove(&path).unwrap_or_default();
        numbers.push(Number {
            grades: list(source.grades),
            readings: list(source.readings),
            sessions: list(source.sessions),
            tasks: list(source.tasks),
            left_out: list(source.left_out),
            path,
            value: value.clone(),
        });
    });
    let tasks = index
        .tasks
        .iter()
        .map(|(t, d)| (format!("{}/{}", t.instance_id, t.track), (*d).to_owned()))
        .collect();
    let judges = (!index.judged.judges.is_empty()).then(|| {
        index
            .judged
            .judges
            .iter()
            .map(|j| (j.name.clone(), j.settings_digest.clone()))
            .collect()
    });
    Manifest {
        files,
        judges,
        numbers,
        provenance: None,
        release_digest: String::new(),
        shards: Vec::new(),
        tasks,
    }
}

/// Calls `found(path, number)` for every number under `value`, in key
/// order: summary.json's tree as its bytes have it, whatever the type.
pub(super) fn walk(
    value: &Value,
    path: String,
    found: &mut impl FnMut(String, &serde_json::Number),
) {
    match value {
        Value::Number(n) => found(path, n),
        Value::Object(map) => {
            for (key, v) in map {
                walk(v, format!("{path}{}", segment(key)), found);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, format!("{path}[{i}]"), found);
            }
        }
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

/// Seals the release's provenance into the manifest (`provenance`); its
/// `release_digest` is set as it is written (`shards::split`). The environments are named by the first
/// task of each, in input order.
pub(super) fn seal(
    manifest: &mut Manifest,
    p: &Provenance,
    release_node: &str,
    tasks: &[(TaskRecord, String)],
    grades: &[(GradeRecord, String)],
) {
    let mut environments: BTreeMap<String, ProvenanceEnv> = BTreeMap::new();
    for (t, _) in tasks {
        environments
            .entry(t.env.clone())
            .or_insert_with(|| ProvenanceEnv {
                executor: t.executor.unwrap_or_default(),
                image: t.image.clone(),
            });
    }
    let mut graded_on: BTreeMap<String, u64> = BTreeMap::new();
    for receipt in grades.iter().flat_map(|(g, _)| &g.evidence) {
        if let Some(node) = &receipt.node {
            *graded_on.entry(node.clone()).or_default() += 1;
        }
    }
    manifest.provenance = Some(ManifestProvenance {
        graded_on,
        release_node: release_node.to_owned(),
        pipeline: p.pipeline.clone(),
        assay: AssayVersion {
            version: p.assay_version.clone(),
            commit: p.assay_commit.clone(),
        },
        environments,
    });
}
