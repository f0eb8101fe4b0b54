//! The output records of the benchmark stages. They are stored as JSON (fixed
//! field order, BTreeMaps only), so `assay show` can print any of them and a
//! record's digest is stable across machines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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

/// `env:<key>`: a prepared environment directory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct EnvRecord {
    /// Relative to the cache directory.
    pub(crate) dir: String,
    pub(crate) ok: bool,
    pub(crate) exit_code: Option<i32>,
    pub(crate) setup_log: String,
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
    /// Each control: name -> (passed, why).
    pub(crate) controls: BTreeMap<String, (bool, String)>,
    pub(crate) readings: BTreeMap<String, BTreeMap<String, Vec<assay_report::Outcome>>>,
}

/// `task:<id>`: the released unit (SWE-bench field names + ours).
#[derive(Clone, Debug, Serialize, Deserialize)]
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
}
