//! Harbor (the framework behind Terminal-Bench 2.0): assay's certified tasks
//! out as Harbor task folders (`export`), and the verifier those folders run
//! inside the trial's container (`verify`), which grades the agent's
//! workspace as assay grades a session. docs/harbor.md.
//!
//! A folder carries everything its verifier reads under `tests/` (copied
//! into the container only after the agent ends): this file's [`Spec`], the
//! task's base tree as a tar (the diff is read against it, never against a
//! `.git` the agent could rewrite) and assay's own binary, which runs the
//! same staging, report reading, canaries and verdict as a build.

pub(crate) mod deepswe;
pub(crate) mod screen;
pub(crate) mod task_toml;
pub(crate) mod workspace;

use serde::{Deserialize, Serialize};

use crate::model::records::TaskRecord;
use crate::pipeline::{CanaryTemplate, PatchCaps, Policy};

/// Where the task's project is in the container: the docker executor's
/// tree, so the environment's setup and the test command see what they see
/// in a build.
pub(crate) const WORKSPACE: &str = "/assay/tree";
/// Harbor copies a task's `tests/` here before running `tests/test.sh`.
pub(crate) const TESTS: &str = "/tests";
/// Harbor keeps this directory of the trial (`verifier/` in the trial's folder).
pub(crate) const LOGS: &str = "/logs/verifier";
/// The spec's file in `tests/`.
pub(crate) const SPEC_FILE: &str = "assay-task.json";
/// The base tree's tar in `tests/` (and in `environment/`, where the image's
/// workspace is made from it).
pub(crate) const BASE_TAR: &str = "base.tar";
/// assay's binary in `tests/`.
pub(crate) const BINARY: &str = "assay";
/// What the verifier writes beside `reward.json`: the verdict with its
/// reasons, and the agent's patch as assay read it.
pub(crate) const VERDICT_FILE: &str = "assay-verdict.json";
pub(crate) const PATCH_FILE: &str = "agent.patch";

/// Bumped when the folder's layout or the verifier's reading changes.
pub(crate) const SPEC_VERSION: u32 = 2;

/// What the verifier needs of the task and the pipeline: the task as
/// released, how its tests run and are read, and how a session is staged.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Spec {
    pub(crate) version: u32,
    /// The task node's key: the released task this folder is.
    pub(crate) digest: String,
    /// assay's task id and track.
    pub(crate) task_id: String,
    pub(crate) task: TaskRecord,
    pub(crate) test_command: String,
    /// The report format's name (`[env] report`).
    pub(crate) report: String,
    pub(crate) report_file: Option<String>,
    pub(crate) timeout_s: u64,
    pub(crate) log_cap: u64,
    /// The scored arm's policy, the test globs and the patch caps: what a
    /// build stages a session with.
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
    pub(crate) max_patch_bytes: u64,
    pub(crate) max_patch_files: u64,
    pub(crate) canary: Option<CanaryTemplate>,
}

impl Spec {
    pub(crate) fn caps(&self) -> PatchCaps {
        PatchCaps {
            bytes: self.max_patch_bytes,
            files: self.max_patch_files,
        }
    }
}

/// What `reward.json` says: `reward` is 1 only when the verdict is
/// `resolved`; the rest are counts (Harbor wants a flat map of numbers).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Reward {
    pub(crate) reward: f64,
    pub(crate) fail_to_pass: u64,
    pub(crate) fail_to_pass_passed: u64,
    pub(crate) pass_to_pass: u64,
    pub(crate) pass_to_pass_passed: u64,
}

/// `assay-verdict.json`: the verdict behind the reward, and what it rests on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct VerdictFile {
    pub(crate) digest: String,
    pub(crate) task_id: String,
    pub(crate) verdict: crate::model::records::Verdict,
    pub(crate) fault: crate::model::records::Fault,
    pub(crate) detail: String,
    pub(crate) failing: Vec<String>,
    pub(crate) excluded_paths: Vec<String>,
    pub(crate) reset_paths: Vec<String>,
    pub(crate) tamper: Vec<String>,
    /// blake3 of `agent.patch`.
    pub(crate) patch_digest: String,
    pub(crate) patch_bytes: u64,
    /// Why the run carried no canary, when it carried none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unchecked: Option<String>,
    pub(crate) duration_ms: u64,
}
