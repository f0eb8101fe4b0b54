//! A node's display record, as the engine stores it beside its key record:
//! `{"params": <the params as JSON>, "deps": [<dependency names>]}`.

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct NodeDisplay {
    /// The node kind's params as JSON: each kind has its own shape, so they
    /// stay a generic tree here (shown and diffed for a user; the release's
    /// are read into `ReleaseParams` where they are recomputed).
    #[serde(default)]
    pub(crate) params: Value,
    /// The dependencies' node names, in the key record's order.
    #[serde(default)]
    pub(crate) deps: Vec<String>,
}

impl NodeDisplay {
    /// An unreadable display reads as empty: no params, no names.
    pub(crate) fn parse(text: &str) -> NodeDisplay {
        serde_json::from_str(text).unwrap_or_default()
    }
}

/// Each input of a node as the build of `manifest` has it: the entry of its
/// recorded name when that entry made the recorded output, else the first
/// entry (by name) of the same output. A node reused under another name (a
/// renamed session file, a patch two sessions share) records the input
/// names of the build that first made it, which may be gone.
pub(crate) fn inputs_in<'m>(
    names: &[String],
    outputs: &[assay_engine::Digest],
    manifest: &'m assay_engine::BuildManifest,
) -> Vec<Option<&'m assay_engine::ManifestEntry>> {
    names
        .iter()
        .zip(outputs)
        .map(|(name, output)| {
            manifest
                .find(name)
                .filter(|e| e.output == Some(*output))
                .or_else(|| {
                    manifest
                        .entries
                        .iter()
                        .filter(|e| e.output == Some(*output) && e.key.is_some())
                        .min_by(|a, b| a.name.cmp(&b.name))
                })
        })
        .collect()
}
