//! The release's provenance, sealed into `manifest.json` under `provenance`:
//! the release node's own key (so the release digest covers every input the
//! release was computed from, transitively: docs/audit.md), the pipeline
//! file's digest, assay's version and commit, and the environments the tasks
//! were screened in (executor, environment key, image id). The judges'
//! settings digests are already in the manifest (`judges`).
//!
//! Part of the release node's params (all but the node key, which is computed
//! from those params and the inputs), so `assemble` stays a pure function of
//! its key record and the release is re-made when any of them changes.

use std::collections::BTreeMap;

use assay_engine::{Digest, KeyRecord, SCHEMA_VERSION, encode_params};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::records::TaskRecord;
use super::release::{KIND_VERSION, ReleaseParams};

/// assay's version and the commit it was built from (`build.rs`).
const ASSAY_VERSION: &str = env!("CARGO_PKG_VERSION");
const GIT_COMMIT: &str = env!("ASSAY_GIT_COMMIT");

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Provenance {
    /// blake3 of `pipeline.toml` as read.
    pub(crate) pipeline: String,
    pub(crate) assay_version: String,
    pub(crate) assay_commit: String,
}

impl Provenance {
    pub(crate) fn of(pipeline_text: &str) -> Provenance {
        Provenance {
            pipeline: Digest::of(pipeline_text.as_bytes()).to_hex(),
            assay_version: ASSAY_VERSION.to_owned(),
            assay_commit: GIT_COMMIT.to_owned(),
        }
    }
}

/// The release node's key, from its params and its inputs' bytes: what the
/// engine computes for it.
pub(super) fn release_key(params: &ReleaseParams, inputs: &[(&[u8], Digest)]) -> Digest {
    KeyRecord {
        schema: SCHEMA_VERSION,
        kind: super::NodeKind::Release.as_str().to_owned(),
        kind_version: KIND_VERSION,
        params: encode_params(params),
        deps: inputs.iter().map(|(b, _)| Digest::of(b)).collect(),
    }
    .key()
}

/// Adds `provenance` to `manifest.json` and recomputes its `release_digest`.
pub(super) fn seal(
    manifest: &[u8],
    p: &Provenance,
    release_key: Digest,
    tasks: &[(TaskRecord, String)],
) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(manifest).ok()?;
    let mut environments: BTreeMap<&str, Value> = BTreeMap::new();
    for (t, _) in tasks {
        environments.entry(&t.env).or_insert_with(|| {
            json!({
                "executor": t.executor.as_deref().unwrap_or("local"),
                "image": t.image,
            })
        });
    }
    v["provenance"] = json!({
        "release_node": release_key.to_hex(),
        "pipeline": p.pipeline,
        "assay": { "version": p.assay_version, "commit": p.assay_commit },
        "environments": environments,
    });
    v["release_digest"] = Value::from("");
    let render = |v: &Value| format!("{v:#}\n").into_bytes();
    v["release_digest"] = Value::from(Digest::of(&render(&v)).to_hex());
    Some(render(&v))
}
