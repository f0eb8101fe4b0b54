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

use serde_json::{Value, json};

use super::Index;
use super::summary::{Sources, segment};

pub(super) fn manifest(
    index: &Index<'_>,
    files: &BTreeMap<String, Vec<u8>>,
    summary: &Value,
    sources: &Sources,
) -> Vec<u8> {
    let file_digests: BTreeMap<&str, String> = files
        .iter()
        .map(|(name, bytes)| (name.as_str(), blake3::hash(bytes).to_hex().to_string()))
        .collect();
    let mut numbers = Vec::new();
    walk(summary, "summary".to_owned(), &mut |path, value| {
        let source = sources.get(&path).cloned().unwrap_or_default();
        let mut entry = json!({ "path": path, "value": value, "grades": source.grades });
        if !source.tasks.is_empty() {
            entry["tasks"] = json!(source.tasks);
        }
        if !source.sessions.is_empty() {
            entry["sessions"] = json!(source.sessions);
        }
        if !source.readings.is_empty() {
            entry["readings"] = json!(source.readings);
        }
        numbers.push(entry);
    });
    let tasks: BTreeMap<String, &str> = index
        .tasks
        .iter()
        .map(|(t, d)| (format!("{}/{}", t.instance_id, t.track), *d))
        .collect();
    let mut manifest = json!({
        "release_digest": "",
        "files": file_digests,
        "numbers": numbers,
        "tasks": tasks,
    });
    if !index.judged.judges.is_empty() {
        manifest["judges"] = index.judged.settings_digests();
    }
    let digest = blake3::hash(&render(&manifest)).to_hex().to_string();
    manifest["release_digest"] = Value::from(digest);
    render(&manifest)
}

fn render(value: &Value) -> Vec<u8> {
    format!("{value:#}\n").into_bytes()
}

/// Calls `found(path, number)` for every number under `value`, in key order.
pub(super) fn walk(value: &Value, path: String, found: &mut impl FnMut(String, &Value)) {
    match value {
        Value::Number(_) => found(path, value),
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
