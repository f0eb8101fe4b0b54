//! The output records of the benchmark stages. They are stored as JSON (fixed
//! field order, BTreeMaps only), so `assay show` can print any of them and a
//! record's digest is stable across machines.

use std::collections::BTreeMap;

use assay_judge::{Mode, Reading, Usage};
use serde::{Deserialize, Serialize};

pub(crate) use crate::model::config::{Arm, Policy};
use crate::model::config::{ExecutorKind, Sandbox};
use crate::words::words;

pub(crate) use crate::model::session::RunFacts;

words! {
    /// What grading a session concluded (docs/verdicts.md).
    pub(crate) enum Verdict {
        Resolved = "resolved",
        ResolvedAfterRerun = "resolved_after_rerun",
        Unresolved = "unresolved",
        PatchApplyFailed = "patch_apply_failed",
        TestPatchConflict = "test_patch_conflict",
        NoReport = "no_report",
        EnvSetupFailed = "env_setup_failed",
        Ineligible = "ineligible",
        /// The task is not released and certified: the session was not
        /// graded at all (the release lists it apart, never as a grade).
        NotGraded = "not_graded",
    }
}

impl Verdict {
    /// The eight verdicts of a graded session, in the order tables show
    /// them ([`Verdict::NotGraded`] never reaches a table).
    pub(crate) const GRADED: [Verdict; 8] = [
        Verdict::Resolved,
        Verdict::ResolvedAfterRerun,
        Verdict::Unresolved,
        Verdict::PatchApplyFailed,
        Verdict::TestPatchConflict,
        Verdict::NoReport,
        Verdict::EnvSetupFailed,
        Verdict::Ineligible,
    ];

    /// `resolved` or `resolved_after_rerun`.
    pub(crate) fn passed(self) -> bool {
        matches!(self, Verdict::Resolved | Verdict::ResolvedAfterRerun)
    }
}

words! {
    /// Who a grade blames.
    pub(crate) enum Fault {
        None = "none",
        Agent = "agent",
        FlakyTest = "flaky_test",
        Ambiguous = "ambiguous",
        Harness = "harness",
        Infrastructure = "infrastructure",
    }
}

words! {
    /// Where a task stands in the release.
    #[derive(Default)]
    pub(crate) enum TaskStatus {
        #[default]
        Released = "released",
        AwaitingStatement = "awaiting_statement",
        Declined = "declined",
    }
}

words! {
    /// Triage's decision on a candidate: eligible, or why it is declined.
    pub(crate) enum Decision {
        Eligible = "eligible",
        EmptyDiff = "empty_diff",
        DocsOnly = "docs_only",
        NoTestChange = "no_test_change",
        NoCodeChange = "no_code_change",
        TooManyFiles = "too_many_files",
        /// A Deep-SWE-shaped Harbor task its own controls did not certify
        /// (or whose image assay could not read its base tree from).
        HarborUncertified = "harbor_uncertified",
        /// A Deep-SWE-shaped Harbor task whose `tests/test.sh` marks no
        /// suites' part: assay has no test command to run.
        NoTestRunner = "no_test_runner",
        /// An instance whose image the docker daemon has under none of the
        /// names its family gives it (docs/instances.md).
        NoImage = "no_image",
        /// An instance whose image's repository does not stand on its
        /// base commit, or cannot be read.
        ImageNotAtBase = "image_not_at_base",
    }
}

words! {
    /// A screening control (docs/verdicts.md, "Screening"): a task whose
    /// control fails is uncertified. Declared in the order of their words,
    /// the order the screen record's map always had.
    pub(crate) enum Control {
        /// At least one FAIL_TO_PASS test: an empty patch does not resolve.
        EmptyPatchFails = "empty_patch_fails",
        /// The test command could not run at all; alone when it fails.
        EnvironmentBroken = "environment_broken",
        /// The gold patch resolves: no test of the test patch fails with it,
        /// nothing that passed at base breaks, every unit that built builds.
        GoldResolves = "gold_resolves",
        /// Every reading's report is believable.
        ReadingsTrusted = "readings_trusted",
    }
}

/// `triage:<candidate>`: can this candidate become a task, and its two patches.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TriageRecord {
    pub(crate) id: String,
    pub(crate) repo: String,
    pub(crate) base: String,
    pub(crate) head: String,
    pub(crate) title: String,
    pub(crate) body: String,
    pub(crate) decision: Decision,
    pub(crate) detail: String,
    pub(crate) test_files: Vec<String>,
    pub(crate) gold_files: Vec<String>,
    /// Blob digests of the patches (empty when declined).
    pub(crate) test_patch: String,
    pub(crate) gold_patch: String,
    /// An instance file's own lists (docs/instances.md); absent for every
    /// other task (the records stay what they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dataset: Option<crate::model::instances::DatasetLists>,
}

impl TriageRecord {
    pub(crate) fn eligible(&self) -> bool {
        self.decision == Decision::Eligible
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
    pub(crate) executor: Option<ExecutorKind>,
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

/// `tree:<candidate>:<state>` and `stage:<session>:<arm>`: the staged
/// tree's git id, or why there is none.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TreeRecord {
    pub(crate) tree: Option<String>,
    pub(crate) skipped: Option<Skip>,
    /// A graded tree's hidden test files: the paths the task's test patch
    /// writes, as `git apply` writes them. The run may not change them
    /// and plants its canaries among them. Empty for screening trees
    /// (whose records keep the bytes they always had).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) hidden: Vec<String>,
    /// A graded tree's run timeout: its task's (`TaskRecord::timeout_s`).
    /// Absent for screening trees, whose runs take the environment's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_s: Option<u64>,
    /// A graded tree's canaries: its task's certified ones
    /// (`TaskRecord::canaries`). Absent: the shaped canaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) canaries: Option<crate::model::canary::Certified>,
    /// The `[env] rebuild` rules this tree needs: those matching a path in
    /// which it differs from its base tree (`rules::rebuild`). Every run
    /// over it runs their commands first. Left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) rebuild: Vec<super::rebuild::RebuildRule>,
}

/// `certify:<candidate>`: the canaries certified over the gold tree
/// (`nodes::certify`). Every task of the candidate rests on it, so it
/// holds nothing a reading varies in from build to build (its log, its
/// time to the millisecond): only what it certified, and its time rounded
/// up as screening's is. Its log is attached, not named.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct CertifyRecord {
    pub(crate) certified: crate::model::canary::Certified,
    /// Why nothing was certified, when nothing was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) none: Option<String>,
    /// How many canaries the reading carried.
    pub(crate) planted: u32,
    /// Its own time (the CPU waits left out), rounded up as screening
    /// readings are (`rules::timeout::bucket`), where it is more than twice
    /// the slowest screening reading: it carried every canary a graded run
    /// can, so a graded run's timeout is reckoned from it then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) slowest_s: Option<f64>,
    /// Why no assertion was sealed, when none was (the sealed reading of
    /// the gold tree: docs/security.md, "Sealed expectations").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unsealed: Option<String>,
}

/// Why a tree was not composed. Stored as one line of text, `<kind>:
/// <detail>` (the bytes the records always had), read back by its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// Triage declined the candidate (`tree`).
    Declined(Decision),
    /// The task is not released and certified (`stage`): nothing to grade.
    NotGraded(String),
    /// The session's patch does not apply, or is not a patch (`stage`).
    PatchApplyFailed(String),
    /// The hidden test patch does not apply over the session's (`stage`).
    TestPatchConflict(String),
    /// A state of the candidate could not be composed (`tree`); the text
    /// says which and why, with no kind of its own.
    Unstaged(String),
}

impl Skip {
    const DECLINED: &'static str = "declined";
    const NOT_GRADED: &'static str = "not_graded";
    const PATCH_APPLY_FAILED: &'static str = "patch_apply_failed";
    const TEST_PATCH_CONFLICT: &'static str = "test_patch_conflict";

    /// Reads the stored line back; text of no known kind is [`Skip::Unstaged`].
    pub(crate) fn parse(line: &str) -> Skip {
        let Some((kind, detail)) = line.split_once(": ") else {
            return Skip::Unstaged(line.to_owned());
        };
        match kind {
            Self::DECLINED => match Decision::parse(detail) {
                Some(d) => Skip::Declined(d),
                None => Skip::Unstaged(line.to_owned()),
            },
            Self::NOT_GRADED => Skip::NotGraded(detail.to_owned()),
            Self::PATCH_APPLY_FAILED => Skip::PatchApplyFailed(detail.to_owned()),
            Self::TEST_PATCH_CONFLICT => Skip::TestPatchConflict(detail.to_owned()),
            _ => Skip::Unstaged(line.to_owned()),
        }
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::Declined(d) => write!(f, "{}: {d}", Self::DECLINED),
            Skip::NotGraded(why) => write!(f, "{}: {why}", Self::NOT_GRADED),
            Skip::PatchApplyFailed(why) => write!(f, "{}: {why}", Self::PATCH_APPLY_FAILED),
            Skip::TestPatchConflict(why) => write!(f, "{}: {why}", Self::TEST_PATCH_CONFLICT),
            Skip::Unstaged(why) => f.write_str(why),
        }
    }
}

impl Serialize for Skip {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Skip::parse(&String::deserialize(d)?))
    }
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
    /// Of `duration_ms`, how long the run waited for a CPU the machine gave
    /// to other work, where the executor measures it (docs/verdicts.md,
    /// "Timeouts"): not counted against a graded run's task timeout, nor in
    /// a screening reading. Absent where not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cpu_stalled_ms: Option<u64>,
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
    pub(crate) sandbox: Sandbox,
    /// Where the run executed when not on this machine: the executor
    /// (`slurm`) and the cluster node. Absent for local and docker runs
    /// (whose records are as they always were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) node: Option<String>,
    /// Why each earlier try ended without an outcome (the slurm executor
    /// retries a run whose node died or whose step was cancelled); absent
    /// when the first try ran it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) retried: Vec<String>,
    /// The executor lost the run after its retries (a cluster whose steps
    /// kept ending without an outcome): why. Such a record is never a cache
    /// hit, so the next build runs it again; its grade is the
    /// infrastructure's (docs/verdicts.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lost: Option<String>,
    /// The limit the run hit: time, memory, processes, file_size or write
    /// (its tree grew past `write_limit`).
    #[serde(default)]
    pub(crate) limit: Option<String>,
    /// Test files whose bytes after the run differ from the staged ones.
    #[serde(default)]
    pub(crate) changed_test_files: Vec<String>,
    /// What the guard's audit hook saw the run's code do to the runner,
    /// each `EVENT: detail` ([`guard::findings`](super::guard::findings),
    /// docs/security.md). Left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) audit: Vec<String>,
    /// Units that did not build (sorted by unit, each with the first lines
    /// of the compiler's message): their tests count as failed in this
    /// reading (docs/verdicts.md). Left out when empty, so a record without
    /// one keeps its bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) build_failures: Vec<assay_report::BuildFailure>,
    /// What its failed and errored tests said (the report's messages),
    /// each distinct text once, capped (`why`). Left out when none.
    #[serde(default, skip_serializing_if = "super::why::Said::is_empty")]
    pub(crate) said: super::why::Said,
    /// A graded run's canary tests and what its report made of them (taken
    /// out of `tests`; docs/security.md). Empty for screening runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) canaries: Vec<super::canary::Canary>,
    /// The tests the run renamed, fresh name -> declared name: how its log
    /// names them (its outcomes name them as declared).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) renamed: BTreeMap<String, String>,
    /// A graded run that carried no canary: why. Its verdict is not
    /// forgery-checked, and the release says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unchecked: Option<String>,
    /// How many sealed sites the run carried (docs/security.md, "Sealed
    /// expectations"); left out when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) sealed: u64,
    /// The sealed sites of tests its runner passed that did not match:
    /// a wrong value (the test counts as failed), or a missing or
    /// unreadable report (forged). Left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) seals: Vec<super::canary::SealReading>,
    /// The `[env] rebuild` rules the run's tree needed, each with how it
    /// ended and the end of its output (`rules::rebuild`). A failed one is
    /// also the run's build failure. Left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) rebuild: Vec<super::rebuild::Rebuilt>,
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
    pub(crate) controls: BTreeMap<Control, (bool, String)>,
    pub(crate) readings: BTreeMap<String, BTreeMap<String, Vec<assay_report::Outcome>>>,
    /// The slowest reading of any state, in seconds rounded up to 1, 1.5,
    /// 2, 3, 5 or 7 times a power of ten (`rules::timeout::bucket`; an
    /// older cache may hold a power of two, read as it is): what a
    /// task's graded runs time out from, coarse enough that timing noise
    /// does not change the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) slowest_s: Option<f64>,
    /// The most output (bytes) any reading of any state wrote: whether
    /// the task's controls stayed under the evidence cap, which decides
    /// whose a graded run over the cap is. Absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) loudest_log_bytes: Option<u64>,
    /// `[screen] scope = "touched-files"`: how many tests the readings
    /// named outside the files the test patch touches (in no list).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) out_of_scope: u64,
    /// The audit hook's rules the readings tripped (honest code: the
    /// gold and base trees), each as its first finding and the reading:
    /// turned off for the task's graded runs. Left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) audit_off: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
    pub(crate) status: TaskStatus,
    pub(crate) certified: bool,
    pub(crate) uncertified_because: Vec<String>,
    pub(crate) flaky: Vec<String>,
    /// Tests of the candidate left out of this task (other topics, gold failures).
    pub(crate) excluded: Vec<String>,
    pub(crate) env: String,
    pub(crate) topic: Option<String>,
    /// The executor that screened (certified) it: `docker`; absent: local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) executor: Option<ExecutorKind>,
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
    /// The graded runs' timeout in seconds, from the slowest screening
    /// reading (`slowest_screening_s`) by `[grade] timeout_factor`;
    /// absent: the environment's `timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) slowest_screening_s: Option<f64>,
    /// The most output (bytes) a screening reading wrote
    /// (`ScreenRecord::loudest_log_bytes`): a graded run over the cap is
    /// the agent's only when every control stayed under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) loudest_screening_log: Option<u64>,
    /// The canaries of its graded runs, made of its own tests and
    /// certified at screening (docs/security.md, "Canaries").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) canaries: Option<crate::model::canary::Certified>,
    /// Why its graded runs carry the shaped canaries instead (no test of
    /// it gave a certified mutant): its grades are weakly checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) weakly_checked: Option<String>,
    /// log2 of the chance that a forger's best blind strategy passes every
    /// FAIL_TO_PASS test (docs/security.md, "A forger's odds"): -12 is
    /// 1 in 4,096. Certified tasks with FAIL_TO_PASS tests only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) forger_odds_log2: Option<f64>,
    /// The certifying reading, rounded up (`CertifyRecord::slowest_s`),
    /// when it is slower than every screening reading: the graded runs,
    /// which carry its canaries, time out from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) slowest_certify_s: Option<f64>,
    /// The audit hook's rules its screening readings tripped
    /// (`ScreenRecord::audit_off`): not held against its graded sessions.
    /// Left out when empty (the records stay what they were).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) audit_off: Vec<String>,
    /// An instance file's own FAIL_TO_PASS / PASS_TO_PASS beside assay's,
    /// and every listed test on which assay's readings disagree
    /// (docs/instances.md). Absent for every other task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dataset: Option<crate::model::instances::DatasetLists>,
}

impl TaskRecord {
    /// blake3 of what the task is whatever executor screened it: its
    /// instance id and track, the repository and base commit the agent
    /// starts from, the statement it reads, the gold and the hidden test
    /// patch. Two screenings of one task on two executors (two digests: the
    /// environment is part of the key) have the same content.
    pub(crate) fn content_digest(&self) -> String {
        let mut h = blake3::Hasher::new();
        for field in [
            &self.instance_id,
            &self.track,
            &self.repo,
            &self.base_commit,
            &self.problem_statement,
            &self.patch,
            &self.test_patch,
        ] {
            h.update(&(field.len() as u64).to_le_bytes());
            h.update(field.as_bytes());
        }
        h.finalize().to_hex().to_string()
    }

    /// The reason this task is uncertified when its environment is broken
    /// (the `environment_broken` line, without its word).
    pub(crate) fn environment_broken(&self) -> Option<&str> {
        let word = Control::EnvironmentBroken.as_str();
        self.uncertified_because.iter().find_map(|line| {
            line.strip_prefix(word)
                .and_then(|rest| rest.strip_prefix(": "))
        })
    }
}

/// `session:<id>`: one agent attempt at one task, normalised from any input
/// format; the patch is its blob digest.
pub(crate) type SessionRecord = crate::model::session::Session<String>;

/// One piece of evidence with its blake3 receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Receipt {
    pub(crate) what: String,
    pub(crate) digest: String,
    pub(crate) bytes: u64,
    /// The cluster node the run of this log executed on (slurm); absent
    /// for runs on this machine, whose receipts are as they always were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) node: Option<String>,
}

/// `recheck:<session>:<arm>`: what a grade adds to its graded run, run
/// over the same tree: the checks run as commands of their own (`[grade]
/// check_command`; each absent when not run) and the reruns, in order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct RecheckRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base: Option<RunRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) new: Option<RunRecord>,
    #[serde(default)]
    pub(crate) reruns: Vec<RunRecord>,
}

impl RecheckRecord {
    /// Why the executor lost one of its runs, if it lost one.
    pub(crate) fn lost(&self) -> Option<&str> {
        self.base
            .iter()
            .chain(&self.new)
            .chain(&self.reruns)
            .find_map(|r| r.lost.as_deref())
    }
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
    pub(crate) arm: Arm,
    pub(crate) policy: Policy,
    pub(crate) verdict: Verdict,
    pub(crate) fault: Fault,
    pub(crate) detail: String,
    /// FAIL_TO_PASS / PASS_TO_PASS tests still failing (after reruns).
    pub(crate) failing: Vec<String>,
    /// Of `failing`, those no run's report named: they did not run (the
    /// runner stopped before them). Absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) not_run: Vec<String>,
    /// What each of `failing` said, from the latest reading that kept its
    /// words (`why`): why the grade is red. Absent when none.
    #[serde(default, skip_serializing_if = "super::why::Said::is_empty")]
    pub(crate) said: super::why::Said,
    /// Session patch paths left out by the exclusion policy.
    pub(crate) excluded_paths: Vec<String>,
    /// The rule that left each of `excluded_paths` out, naming the glob
    /// that matched. Absent when nothing was left out.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) excluded_by: std::collections::BTreeMap<String, String>,
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
    pub(crate) sandbox: Sandbox,
    /// The executor that graded it: `docker`; absent: local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) executor: Option<ExecutorKind>,
    /// The environment image the graded run used (docker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) image: Option<String>,
    /// The end of the last log of a grade that is not `resolved`, for the
    /// report: inline, because `export --no-logs` leaves the logs out of an
    /// audit bundle and the release must still be recomputable from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) log_tail: Option<LogTail>,
    /// Why the graded run carried no canary, when it did not: the verdict
    /// is then not forgery-checked (docs/security.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unchecked: Option<String>,
    /// Why its task's runs carry the shaped canaries, not ones made of its
    /// own tests (`TaskRecord::weakly_checked`): a forgery written against
    /// their shape is not caught.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) weakly_checked: Option<String>,
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

/// `quality:<metric>:<session>` / `quality:<metric>:gold:<task>`: one
/// metric's findings on one tree (docs/stages.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct QualityRecord {
    pub(crate) metric: String,
    /// The task's instance id (its gold record joins the session's by it).
    pub(crate) task: String,
    /// The session measured; none for the gold tree.
    pub(crate) session: Option<String>,
    /// Findings outside test files.
    pub(crate) findings: u64,
    /// File (relative to the tree; `""` for none) -> findings outside tests.
    pub(crate) by_path: BTreeMap<String, u64>,
    /// Findings in test files, not counted.
    pub(crate) in_tests: u64,
    /// Why nothing was counted (no tree, the command did not finish, output
    /// that is not what the metric counts).
    pub(crate) failed: Option<String>,
    pub(crate) exit_code: Option<i32>,
    /// The command's log (blob digest); empty when nothing ran.
    pub(crate) log: String,
}

// ---- judge readings --------------------------------------------------------

/// What the release says about one `[[judge]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct JudgeInfo {
    pub(crate) name: String,
    pub(crate) api: String,
    pub(crate) model: String,
    pub(crate) samples: u32,
    pub(crate) pairwise: bool,
    pub(crate) seed: u64,
    /// blake3 of the canonical encoding of (`JudgeKey` of sample 0, seed,
    /// samples, pairwise): everything of the judge that can change a reading.
    pub(crate) settings_digest: String,
    /// Why the judge's nodes were not laid out (its key variable is unset).
    pub(crate) skipped: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum JudgeOutcome {
    Reading,
    /// The judge answered, but never usably: no score.
    NoUsableAnswer,
    /// The session's task is not graded: no request was sent.
    NotJudged,
}

/// `judge:<name>:<sessions shown>:s<sample>`: one reading.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct JudgeRecord {
    pub(crate) instance_id: String,
    pub(crate) track: String,
    pub(crate) task_digest: String,
    /// The reviewed sessions by slot.
    pub(crate) sessions: Vec<String>,
    /// Slots in the order shown.
    pub(crate) order: Vec<usize>,
    pub(crate) mode: Mode,
    pub(crate) sample: u32,
    pub(crate) model: String,
    pub(crate) outcome: JudgeOutcome,
    pub(crate) detail: String,
    pub(crate) usage: Usage,
    pub(crate) attempts: u32,
    /// Slots in `reading` index [`JudgeRecord::sessions`].
    pub(crate) reading: Option<Reading>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value's JSON is the word records stored before it was an
    /// enum, and reads back as the same value.
    fn same_bytes<T>(pairs: &[(T, &str)])
    where
        T: Copy + std::fmt::Debug + PartialEq + Serialize + for<'de> Deserialize<'de>,
    {
        for (value, word) in pairs {
            let json = serde_json::to_string(value).expect("serializes");
            assert_eq!(json, format!("\"{word}\""));
            let back: T = serde_json::from_str(&json).expect("deserializes");
            assert_eq!(back, *value);
        }
    }

    #[test]
    fn verdicts_serialize_as_their_old_words() {
        same_bytes(&[
            (Verdict::Resolved, "resolved"),
            (Verdict::ResolvedAfterRerun, "resolved_after_rerun"),
            (Verdict::Unresolved, "unresolved"),
            (Verdict::PatchApplyFailed, "patch_apply_failed"),
            (Verdict::TestPatchConflict, "test_patch_conflict"),
            (Verdict::NoReport, "no_report"),
            (Verdict::EnvSetupFailed, "env_setup_failed"),
            (Verdict::Ineligible, "ineligible"),
            (Verdict::NotGraded, "not_graded"),
        ]);
        assert_eq!(Verdict::ALL.len(), 9);
        assert!(!Verdict::GRADED.contains(&Verdict::NotGraded));
    }

    #[test]
    fn faults_serialize_as_their_old_words() {
        same_bytes(&[
            (Fault::None, "none"),
            (Fault::Agent, "agent"),
            (Fault::FlakyTest, "flaky_test"),
            (Fault::Ambiguous, "ambiguous"),
            (Fault::Harness, "harness"),
            (Fault::Infrastructure, "infrastructure"),
        ]);
        assert_eq!(Fault::ALL.len(), 6);
    }

    #[test]
    fn arms_serialize_as_their_old_words() {
        same_bytes(&[(Arm::Exclude, "exclude"), (Arm::Keep, "keep")]);
        assert_eq!((Arm::SCORED, Arm::CONTRAST), (Arm::Exclude, Arm::Keep));
    }

    #[test]
    fn task_statuses_serialize_as_their_old_words() {
        same_bytes(&[
            (TaskStatus::Released, "released"),
            (TaskStatus::AwaitingStatement, "awaiting_statement"),
            (TaskStatus::Declined, "declined"),
        ]);
        assert_eq!(TaskStatus::ALL.len(), 3);
    }

    #[test]
    fn triage_decisions_serialize_as_their_old_words() {
        same_bytes(&[
            (Decision::Eligible, "eligible"),
            (Decision::EmptyDiff, "empty_diff"),
            (Decision::DocsOnly, "docs_only"),
            (Decision::NoTestChange, "no_test_change"),
            (Decision::NoCodeChange, "no_code_change"),
            (Decision::TooManyFiles, "too_many_files"),
            (Decision::HarborUncertified, "harbor_uncertified"),
            (Decision::NoTestRunner, "no_test_runner"),
            (Decision::NoImage, "no_image"),
            (Decision::ImageNotAtBase, "image_not_at_base"),
        ]);
        assert_eq!(Decision::ALL.len(), 10);
    }

    #[test]
    fn policies_serialize_as_their_old_words() {
        use crate::model::config::Policy;
        same_bytes(&[
            (Policy::TestsAndInfra, "tests-and-infra"),
            (Policy::NewTestFiles, "new-test-files"),
            (Policy::AllTestFiles, "all-test-files"),
            (Policy::ResetTestPatchFiles, "reset-test-patch-files"),
            (Policy::None, "none"),
        ]);
    }

    #[test]
    fn a_policy_keeps_its_derived_encoding_in_node_params() {
        use crate::model::config::Policy;
        // What `#[derive(Serialize)]` gave: the variant index.
        for (i, p) in Policy::ALL.iter().enumerate() {
            assert_eq!(assay_engine::encode_params(p), [i as u8]);
        }
        // An arm was a `String` param: it stays one.
        assert_eq!(
            assay_engine::encode_params(&Arm::Keep),
            assay_engine::encode_params(&"keep")
        );
    }

    #[test]
    fn a_skip_keeps_the_text_tree_records_stored() {
        let cases = [
            (Skip::Declined(Decision::DocsOnly), "declined: docs_only"),
            (
                Skip::NotGraded("task calc-3 is uncertified".into()),
                "not_graded: task calc-3 is uncertified",
            ),
            (
                Skip::PatchApplyFailed("error: corrupt patch at line 7".into()),
                "patch_apply_failed: error: corrupt patch at line 7",
            ),
            // An empty reason keeps its separator, as the text always had.
            (
                Skip::PatchApplyFailed(String::new()),
                "patch_apply_failed: ",
            ),
            (
                Skip::TestPatchConflict("tests/a.py: patch does not apply".into()),
                "test_patch_conflict: tests/a.py: patch does not apply",
            ),
            (
                Skip::Unstaged("cannot compose the gold state: boom".into()),
                "cannot compose the gold state: boom",
            ),
        ];
        for (skip, text) in cases {
            let json = serde_json::to_string(&skip).expect("serializes");
            assert_eq!(json, serde_json::to_string(text).expect("a string"));
            let back: Skip = serde_json::from_str(&json).expect("deserializes");
            assert_eq!(back, skip);
        }
        let none = TreeRecord {
            tree: Some("abc".into()),
            skipped: None,
            hidden: Vec::new(),
            timeout_s: None,
            canaries: None,
            rebuild: Vec::new(),
        };
        assert_eq!(
            serde_json::to_string(&none).expect("serializes"),
            r#"{"tree":"abc","skipped":null}"#
        );
    }

    #[test]
    fn controls_serialize_as_their_old_words_and_keep_their_order() {
        same_bytes(&[
            (Control::EmptyPatchFails, "empty_patch_fails"),
            (Control::EnvironmentBroken, "environment_broken"),
            (Control::GoldResolves, "gold_resolves"),
            (Control::ReadingsTrusted, "readings_trusted"),
        ]);
        // A map keyed by them is the map keyed by their words, byte for byte.
        let typed: BTreeMap<Control, (bool, String)> = Control::ALL
            .iter()
            .rev()
            .map(|c| (*c, (true, String::new())))
            .collect();
        let words: BTreeMap<&str, (bool, String)> = Control::ALL
            .iter()
            .map(|c| (c.as_str(), (true, String::new())))
            .collect();
        let json = serde_json::to_string(&typed).expect("serializes");
        assert_eq!(json, serde_json::to_string(&words).expect("serializes"));
        let back: BTreeMap<Control, (bool, String)> =
            serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, typed);
    }

    #[test]
    fn an_unknown_word_is_an_error_naming_the_known_ones() {
        let e = serde_json::from_str::<Fault>("\"gremlins\"").expect_err("unknown");
        assert!(e.to_string().contains("unknown Fault `gremlins`"), "{e}");
        assert!(e.to_string().contains("flaky_test"), "{e}");
    }
}
