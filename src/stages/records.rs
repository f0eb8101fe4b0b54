//! The output records of the benchmark stages. They are stored as JSON (fixed
//! field order, BTreeMaps only), so `assay show` can print any of them and a
//! record's digest is stable across machines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub(crate) use crate::sessions::RunFacts;

/// `triage:<candidate>`: can this candidate become a task, and its two patches.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TriageRecord {
    pub(crate) id: String,
    pub(crate) repo: String,
    pub(crate) base: String,
    pub(crate) head: String,
    pub(crate) title: String,
    pub(crate) body: String,
    /// `eligible`, or the decline reason.
    pub(crate) decision: String,
    pub(crate) detail: String,
    pub(crate) test_files: Vec<String>,
    pub(crate) gold_files: Vec<String>,
    /// Blob digests of the patches (empty when declined).
    pub(crate) test_patch: String,
    pub(crate) gold_patch: String,
}

impl TriageRecord {
    pub(crate) fn eligible(&self) -> bool {
        self.decision == "eligible"
    }
}

/// `env:<key>`: a prepared environment directory, or image.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct EnvRecord {
    /// Relative to the cache directory (local; empty for docker).
    pub(crate) dir: String,
    pub(crate) ok: bool,
    pub(crate) exit_code: Option<i32>,
    pub(crate) setup_log: String,
    /// blake3 over the directory's contents once set up (`verify` recomputes
    /// it: an environment changed after its setup is not believed).
    #[serde(default)]
    pub(crate) digest: String,
    /// `docker`; absent for the local executor (whose records are as they
    /// always were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) executor: Option<String>,
    /// The environment image's id (`sha256:…`, never a tag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) image: Option<String>,
    /// The id of the base image it was built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base_image: Option<String>,
    /// Blob digest of the image's `docker save` tar (`[env] export`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) export: Option<String>,
    /// The setup command that failed, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) failed_command: Option<String>,
}

/// `tree:<candidate>:<state>`: the staged tree's git id, or why there is none.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TreeRecord {
    pub(crate) tree: Option<String>,
    pub(crate) skipped: Option<String>,
}

/// `run:…`: one execution of the test command over one tree.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub(crate) skipped: Option<String>,
    pub(crate) exit_code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) timed_out: bool,
    pub(crate) env_failed: bool,
    pub(crate) duration_ms: u64,
    pub(crate) log: String,
    pub(crate) log_bytes: u64,
    pub(crate) log_truncated: bool,
    pub(crate) tests: BTreeMap<String, assay_report::Outcome>,
    /// Test name -> the file it lives in, where the report says.
    pub(crate) files: BTreeMap<String, String>,
    pub(crate) report_error: Option<String>,
    /// None when trusted; else why the report cannot be believed.
    pub(crate) untrusted: Option<String>,
    /// Secrets replaced in the stored log.
    #[serde(default)]
    pub(crate) redactions: u64,
    /// `bwrap`, `none` when graded unsandboxed, or `docker`.
    #[serde(default)]
    pub(crate) sandbox: String,
    /// The limit the run hit: time, memory, processes or file_size.
    #[serde(default)]
    pub(crate) limit: Option<String>,
    /// Test files whose bytes after the run differ from the staged ones.
    #[serde(default)]
    pub(crate) changed_test_files: Vec<String>,
    /// Units that did not build (sorted by unit, each with the first lines
    /// of the compiler's message): their tests count as failed in this
    /// reading (docs/verdicts.md). Left out when empty, so a record without
    /// one keeps its bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) build_failures: Vec<assay_report::BuildFailure>,
}

impl RunRecord {
    /// The build failure of this run that accounts for the missing test
    /// `name` (in `file`, when known), if any.
    pub(crate) fn build_failure_for(
        &self,
        format: assay_report::Format,
        name: &str,
        file: Option<&str>,
    ) -> Option<&assay_report::BuildFailure> {
        if self.build_failures.is_empty() || self.tests.contains_key(name) {
            return None;
        }
        assay_report::build_failure_for(format, &self.build_failures, name, file)
    }
}

/// `screen:<candidate>`: the three states read `repeats` times, reduced.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct ScreenRecord {
    pub(crate) id: String,
    pub(crate) skipped: Option<String>,
    pub(crate) fail_to_pass: Vec<String>,
    pub(crate) pass_to_pass: Vec<String>,
    pub(crate) flaky: Vec<String>,
    /// Tests of the test patch that fail with the gold patch in every reading.
    pub(crate) gold_failures: Vec<String>,
    /// Tests passing at base that fail with the gold patch.
    pub(crate) regressions: Vec<String>,
    /// Files where a failure took down every test of the file.
    pub(crate) cascades: Vec<String>,
    /// Why runs could not be believed (spoofed or empty reports, timeouts, env).
    pub(crate) untrusted: Vec<String>,
    /// Units that did not build, per reading: `test reading 0: unit: the
    /// compiler's first line`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) build_failures: Vec<String>,
    /// Each control: name -> (passed, why).
    pub(crate) controls: BTreeMap<String, (bool, String)>,
    pub(crate) readings: BTreeMap<String, BTreeMap<String, Vec<assay_report::Outcome>>>,
}

/// `task:<id>`: the released unit (SWE-bench field names + ours).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct TaskRecord {
    pub(crate) instance_id: String,
    pub(crate) repo: String,
    pub(crate) base_commit: String,
    pub(crate) patch: String,
    pub(crate) test_patch: String,
    pub(crate) problem_statement: String,
    #[serde(rename = "FAIL_TO_PASS")]
    pub(crate) fail_to_pass: Vec<String>,
    #[serde(rename = "PASS_TO_PASS")]
    pub(crate) pass_to_pass: Vec<String>,
    pub(crate) track: String,
    /// released | awaiting_statement | declined
    pub(crate) status: String,
    pub(crate) certified: bool,
    pub(crate) uncertified_because: Vec<String>,
    pub(crate) flaky: Vec<String>,
    /// Tests of the candidate left out of this task (other topics, gold failures).
    pub(crate) excluded: Vec<String>,
    pub(crate) env: String,
    pub(crate) topic: Option<String>,
    /// The executor that screened (certified) it: `docker`; absent: local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) executor: Option<String>,
    /// The environment image it was screened in (docker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) image: Option<String>,
    /// SWE-bench's remaining instance fields (docs/stages.md): hints (the
    /// statements directory's `<id>.hints.md`, else empty), the merge
    /// commit's date (ISO 8601, UTC), `[[source]] version` (default "0").
    #[serde(default)]
    pub(crate) hints_text: String,
    #[serde(default)]
    pub(crate) created_at: String,
    #[serde(default)]
    pub(crate) version: String,
    /// The SWE-bench log parser whose keys the published test ids follow
    /// (`parse_log_django` for unittest reports); empty: none matches.
    #[serde(default)]
    pub(crate) log_parser: String,
    /// The harness's eval script: reset the test files, apply the test
    /// patch, run the test command between the harness's markers.
    #[serde(default)]
    pub(crate) eval_script: String,
}

/// `session:<id>`: one agent attempt at one task, normalised from any input
/// format; the patch is its blob digest.
pub(crate) type SessionRecord = crate::sessions::Session<String>;

/// One piece of evidence with its blake3 receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Receipt {
    pub(crate) what: String,
    pub(crate) digest: String,
    pub(crate) bytes: u64,
}

/// `grade:<session>:<arm>`: a session's verdict on a task, with its evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct GradeRecord {
    pub(crate) session: String,
    pub(crate) instance_id: String,
    pub(crate) track: String,
    /// The graded task's digest (its node key).
    pub(crate) task_digest: String,
    pub(crate) agent: String,
    pub(crate) model: String,
    /// `exclude` (the exclusion policy applies) or `keep` (nothing excluded).
    pub(crate) arm: String,
    pub(crate) policy: String,
    /// resolved | resolved_after_rerun | unresolved | patch_apply_failed |
    /// test_patch_conflict | no_report | env_setup_failed | ineligible
    pub(crate) verdict: String,
    /// none | agent | flaky_test | ambiguous | harness
    pub(crate) fault: String,
    pub(crate) detail: String,
    /// FAIL_TO_PASS / PASS_TO_PASS tests still failing (after reruns).
    pub(crate) failing: Vec<String>,
    /// Session patch paths left out by the exclusion policy.
    pub(crate) excluded_paths: Vec<String>,
    pub(crate) exit_code: Option<i32>,
    /// The PASS_TO_PASS check and the FAIL_TO_PASS check, kept apart:
    /// `pass`, `fail (N)` or `not run`.
    pub(crate) base_check: String,
    pub(crate) new_check: String,
    /// Exit codes of the two checks run as their own commands
    /// (`[grade] check_command`); None when not configured or not reached.
    #[serde(default)]
    pub(crate) base_exit: Option<i32>,
    #[serde(default)]
    pub(crate) new_exit: Option<i32>,
    pub(crate) reruns: u32,
    pub(crate) evidence: Vec<Receipt>,
    pub(crate) redactions: u64,
    /// Session paths the hidden test patch also touches: reset to the test
    /// patch's version in every arm (the agent's edits to them dropped).
    #[serde(default)]
    pub(crate) reset_paths: Vec<String>,
    /// Tamper suspects (docs/verdicts.md); one in effect means the grade is
    /// never `resolved`.
    #[serde(default)]
    pub(crate) tamper: Vec<String>,
    /// The sandbox the graded run had: `bwrap`, `none` or `docker`.
    #[serde(default)]
    pub(crate) sandbox: String,
    /// The executor that graded it: `docker`; absent: local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) executor: Option<String>,
    /// The environment image the graded run used (docker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) image: Option<String>,
    /// The end of the last log of a grade that is not `resolved`, for the
    /// report: inline, because `export --no-logs` leaves the logs out of an
    /// audit bundle and the release must still be recomputable from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) log_tail: Option<LogTail>,
}

/// The last lines of one evidence log (already redacted when stored).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LogTail {
    /// The receipt it ends: `log`, `rerun 2 log`, …
    pub(crate) of: String,
    /// Lines of the log before the tail, left out.
    pub(crate) lines_omitted: u64,
    pub(crate) text: String,
}

/// `metrics:<session>`: the shape of the patch that was graded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct MetricsRecord {
    pub(crate) session: String,
    pub(crate) lines_added: u64,
    pub(crate) lines_removed: u64,
    pub(crate) files_touched: u64,
    /// (added + removed) / the gold patch's (added + removed); None without gold.
    pub(crate) size_vs_gold: Option<f64>,
    pub(crate) suppressions_added: u64,
    pub(crate) comment_lines_added: u64,
    pub(crate) empty_patch: bool,
}
