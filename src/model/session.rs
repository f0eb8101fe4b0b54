//! A session, in the one shape every layer shares; what an agent run
//! reported about itself, as every session format maps it (the one session
//! fact the stages read: priced, published, blamed on); and a Harbor
//! trial's outcome as a session carries it. Read from files by `sessions`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One agent attempt at one task, in the one shape every layer shares: as
/// read from disk (the patch's bytes, the track if the file gives one), as
/// the session node's params (the patch's bytes), and as its record (the
/// patch's blob digest, `records::SessionRecord`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Session<Patch, Track = String> {
    /// Stable id: the file's path under the sessions directory (`#<line>`
    /// appended for JSONL lines).
    pub(crate) id: String,
    /// instance_id or task digest, as the file says.
    pub(crate) task: String,
    pub(crate) track: Track,
    pub(crate) agent: String,
    pub(crate) model: String,
    pub(crate) patch: Patch,
    pub(crate) facts: RunFacts,
    /// The agent's transcript, where one is kept, as the patch is: its
    /// bytes as read, then (redacted) in the params, then its blob digest.
    /// Absent from the key and the record without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) transcript: Option<Patch>,
}

/// A trial's outcome as the release accounts for it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Trial {
    /// The job's path under the sessions directory.
    pub(crate) job: String,
    pub(crate) name: String,
    /// The digest of the released task the trial ran (its exported
    /// verifier says), when it says: the release lists a trial graded
    /// against another digest (`task_changed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) task_digest: Option<String>,
    /// The content (`TaskRecord::content_digest`) of the task
    /// `task_digest` names, when this cache holds it: the same task
    /// screened on another executor has another digest, not another
    /// content, and is no changed task. Set by the layout on the job's
    /// accounting only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) task_content: Option<String>,
    /// `exception_info.exception_type`; absent when the trial completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) exception: Option<String>,
    /// Whose doing the exception is (`sessions::harbor::blame`): `agent`, `harness`,
    /// `infrastructure` or `ambiguous`; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) blame: Option<String>,
    /// Harbor's reward (`verifier_result.rewards.reward`): a reading of
    /// Harbor's verifier, never the grade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reward: Option<f64>,
    /// Whether the trial kept the agent's patch (`verifier/agent.patch`)
    /// or its working directory (`sessions::harbor::workspace_dir`).
    pub(crate) patch_kept: bool,
    /// The blake3 of the working directory the job collected from the
    /// agent's container (`sessions::harbor::workspace_dir`: every file's path, mode and
    /// blake3), when it kept one and no patch: a Harbor task's own verifier
    /// grades it in place of a patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) workspace: Option<String>,
    /// Whose a lost patch or reward is, and why (`sessions::harbor::lost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lost: Option<Lost>,
    /// Why an exception `sessions::harbor::blame`'s table charges to anyone but the
    /// agent was kept there (naming the controls that failed the same way) or made
    /// the agent's (`sessions::harbor::judge_exception`); absent for every other trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) blame_why: Option<String>,
}

/// A trial that kept no patch or no reward: whose doing that is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Lost {
    /// `agent`: graded (an empty patch when none was kept) and counted;
    /// else the exception's blame (`harness`, …): not charged.
    pub(crate) to: String,
    pub(crate) why: String,
}

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
    pub(crate) trial: Option<Trial>,
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
