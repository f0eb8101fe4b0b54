//! What an agent run reported about itself, as every session format maps it:
//! the one session fact the stages read (priced, published, blamed on).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What an agent run reported about itself (from the session file or its transcript).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunFacts {
    pub(crate) turns: Option<u64>,
    /// Tokens by kind: input, output, cache_read, cache_creation, …
    #[serde(default)]
    pub(crate) tokens: BTreeMap<String, u64>,
    /// How the run ended (e.g. Claude Code's result subtype: success, error_max_turns).
    pub(crate) ended: Option<String>,
    /// The run died of the infrastructure, on a witness the agent cannot
    /// write: the egress proxy's records (an attempt), a Harbor trial's
    /// controls failing the same way. The grade's only ground for blaming
    /// the infrastructure; absent for an imported session with no witness.
    pub(crate) is_error: Option<bool>,
    /// What the run's own file says of its end (a transcript's `is_error`,
    /// a trajectory's API exception, a session file's `run.is_error`, a
    /// Harbor trial's infrastructure exception): a claim, shown, never
    /// believed. Absent when the file says nothing, so records keep their
    /// bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) claimed_error: Option<bool>,
    pub(crate) permission_denials: Option<u64>,
    pub(crate) duration_ms: Option<u64>,
    /// Tokens by model id, then kind (Claude Code's `modelUsage`): priced
    /// per model id when present. Left out when empty, as the next two.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) by_model: BTreeMap<String, BTreeMap<String, u64>>,
    /// What the agent reported it cost (`total_cost_usd`): an observation,
    /// published beside the cost computed from `[prices]`, never used for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reported_cost_usd: Option<f64>,
    /// The model ids the transcript names (init event, messages, `modelUsage`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) models: Vec<String>,
    /// A Harbor trial's outcome (`sessions::harbor`); absent for every
    /// other session, whose records keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trial: Option<super::harbor::Trial>,
    /// Why assay did not take an attempt's patch from its workspace (over
    /// the read-back bound): graded `patch_apply_failed`, the agent's.
    /// Absent for every other session, whose records keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) patch_refused: Option<String>,
    /// How many secret values were taken out of the patch before it was
    /// stored (its digest is of the redacted bytes); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) patch_redacted: Option<u64>,
}

impl RunFacts {
    /// Whether the run ended in an API or infrastructure error, by a
    /// witness or by its own claim: how it ended, for the run tables,
    /// never whose fault it is (the grade reads `is_error` alone).
    pub(crate) fn ended_in_error(&self) -> Option<bool> {
        match (self.is_error, self.claimed_error) {
            (None, None) => None,
            (e, c) => Some(e == Some(true) || c == Some(true)),
        }
    }

    /// Whether the run's error is its own claim only, which no witness saw.
    pub(crate) fn error_only_claimed(&self) -> bool {
        self.claimed_error == Some(true) && self.is_error != Some(true)
    }
}
