//! The release's provenance, sealed into `manifest.json` under `provenance`:
//! the release node's own key (so the release digest covers every input the
//! release was computed from, transitively: docs/audit.md), the pipeline
//! file's digest, assay's version and commit, and the environments the tasks
//! were screened in (executor, environment key, image id). The judges'
//! settings digests are already in the manifest (`judges`).
//!
//! Part of the release node's params (all but the node key, which is computed
//! from those params and the inputs), so `assemble` stays a pure function of
//! its key record and the release is re-made when any of them changes. The
//! release node computes its own key (`nodes/release.rs`); `publish` seals.

use assay_engine::Digest;
use serde::{Deserialize, Serialize};

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
