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
