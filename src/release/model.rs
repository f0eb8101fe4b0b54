//! The release as types: [`Summary`] (summary.json) and [`Manifest`]
//! (manifest.json). Every file of the release is rendered from these, and
//! `verify` / `explain` read them back; nothing in assay reads a release
//! file by key.
//!
//! Invariants that keep the published bytes canonical (every JSON object's
//! keys sorted, as a `serde_json::Value` object sorts them):
//! - **fields are declared in the byte order of their JSON names**, so a
//!   struct serializes its keys sorted;
//! - open-ended objects (agents, verdict counts, tracks, judges) are
//!   `BTreeMap<String, _>`, sorted by the same bytes;
//! - a field the file leaves out when empty is `Option` with
//!   `skip_serializing_if`; one it writes as `null` is an `Option` without it;
//! - floats are stored already rounded ([`super::stats::round6`]): the
//!   renderers print exactly what summary.json says.

use std::collections::BTreeMap;

use crate::model::config::ExecutorKind;
use assay_judge::Mode;
use serde::{Deserialize, Serialize};

use crate::model::records::{Arm, Verdict};

mod funnel;
mod manifest;

pub(crate) use funnel::{Funnel, HarborFunnel, InstanceFunnel, SweFunnel};
pub(crate) use manifest::{
    AssayVersion, Manifest, ManifestProvenance, ManifestShard, Name, Number, Printed,
    ProvenanceEnv, Shard, pretty,
};

/// `summary.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Summary {
    /// By [`super::stats::agent_key`] (`agent/model`).
    pub(crate) agents: BTreeMap<String, Agent>,
    /// The app tasks and their sessions' layers; absent without app tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) apps: Option<Apps>,
    /// The images tasks were certified and sessions graded in; absent when
    /// everything ran locally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) environments: Option<Vec<Environment>>,
    pub(crate) graded_unsandboxed: bool,
    /// Absent without `[[judge]]`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) judges: Option<BTreeMap<String, Judge>>,
    /// Grades whose run carried no canary, by why; absent when every grade did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) not_forgery_checked: Option<Vec<Unchecked>>,
    pub(crate) not_graded: NotGraded,
    /// Agent keys, best first.
    pub(crate) ranking: Vec<String>,
    pub(crate) schema: u64,
    pub(crate) scoring: Scoring,
    pub(crate) tamper_suspects: Vec<TamperSuspect>,
    pub(crate) tasks: Tasks,
    /// Every attempt on paper and what became of it, by origin (a Harbor
    /// job `harbor:<path>`, assay's own `attempts`, session files
    /// `sessions`); absent without sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trials: Option<BTreeMap<String, Trials>>,
    pub(crate) verifier_suspects: Vec<VerifierSuspect>,
    /// Sessions on Deep-SWE-shaped tasks: the dataset's own verifier's
    /// reading beside assay's verdict (the one counted); absent when there
    /// are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dataset_verifier: Option<Vec<DatasetReading>>,
    /// Certified tasks whose graded runs carry the shaped canaries, not
    /// ones made of their own tests (docs/security.md, "Canaries"), and
    /// the grades of their sessions; absent when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) weakly_checked: Option<WeaklyChecked>,
    /// The chance a forger's best blind strategy passes every FAIL_TO_PASS
    /// test, over the certified tasks (docs/security.md, "A forger's
    /// odds"); absent when no task has a figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) forger_odds: Option<ForgerOdds>,
    /// The dataset-health report of the `[[instances]]` files' instances
    /// (docs/instances.md); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) instances: Option<DatasetHealth>,
}

/// `summary.instances`: what a dataset maintainer would publish as an
/// erratum — per instance and per repository, whether assay's controls
/// certify it and every way the dataset's lists disagree with assay's
/// readings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct DatasetHealth {
    /// Every instance, by its task id `<name>/<instance_id>`.
    pub(crate) tasks: BTreeMap<String, InstanceHealth>,
    /// By the rows' `repo`.
    pub(crate) repos: BTreeMap<String, HealthCounts>,
    /// Over every instance.
    pub(crate) total: HealthCounts,
}

/// One instance as assay's controls found it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct InstanceHealth {
    /// The `[[instances]]` name, the row's id, family and repository.
    pub(crate) dataset: String,
    pub(crate) instance_id: String,
    pub(crate) family: String,
    pub(crate) repo: String,
    /// Whether its three states were read (not declined before).
    pub(crate) screened: bool,
    pub(crate) certified: bool,
    pub(crate) uncertified_because: Vec<String>,
    /// Kind -> the listed tests of that kind (every kind, 0 included);
    /// none counted for an instance that was not screened.
    pub(crate) disagreements: BTreeMap<String, u64>,
    /// Each disagreement: the test, its list, its kind, the readings.
    pub(crate) disagreeing: Vec<crate::model::instances::Disagreement>,
    /// The tests assay's readings found flaky, listed or not.
    pub(crate) flaky: Vec<String>,
    pub(crate) flaky_tests: u64,
    /// State (`base`, `test`, `gold`) -> reading (`r0`, `r1`, …) -> its
    /// wall time in seconds; a reading that did not run is left out.
    pub(crate) seconds: BTreeMap<String, BTreeMap<String, f64>>,
    /// The task node's key.
    pub(crate) digest: String,
}

/// A repository's (or every) instance, counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct HealthCounts {
    pub(crate) instances: u64,
    pub(crate) screened: u64,
    pub(crate) certified: u64,
    /// Kind -> the listed tests of that kind over the screened instances.
    pub(crate) disagreements: BTreeMap<String, u64>,
    /// Kind -> the screened instances with at least one of that kind.
    pub(crate) instances_with: BTreeMap<String, u64>,
    pub(crate) flaky_tests: u64,
}

/// The certified tasks' forger odds, as log2 of a chance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ForgerOdds {
    pub(crate) tasks: u64,
    /// log2 of the mean chance over the tasks.
    pub(crate) mean_log2: f64,
    /// The largest chance: the weakest task.
    pub(crate) worst_log2: f64,
    /// The target every task should meet.
    pub(crate) target_log2: f64,
    /// The tasks above the target, weakest first.
    pub(crate) above_target: Vec<TaskOdds>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct TaskOdds {
    pub(crate) instance_id: String,
    pub(crate) log2: f64,
}

/// A session on a Deep-SWE-shaped task as the dataset's own verifier read
/// it, beside assay's grade.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct DatasetReading {
    pub(crate) session: String,
    pub(crate) task: String,
    /// The dataset verifier's verdict: `resolved` for reward 1.
    pub(crate) reading: Verdict,
    pub(crate) reading_detail: String,
    /// assay's verdict of the scored arm (absent when it was not graded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) assay: Option<Verdict>,
    /// Whether the two agree on resolved or not.
    pub(crate) agree: bool,
    /// The reading's `harbor_grade` node key.
    pub(crate) digest: String,
}

/// Tasks graded with the shaped canaries alone, and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct WeaklyChecked {
    /// Grades of these tasks' sessions.
    pub(crate) grades: u64,
    pub(crate) tasks: Vec<WeakTask>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct WeakTask {
    pub(crate) instance_id: String,
    pub(crate) why: String,
}

/// One origin's accounting, each trial in one bucket: `planned` =
/// `completed` + the `errored` counts + `not_started` + `not_ended`;
/// `started` = `completed` + the `errored` counts = `graded` + the excluded
/// sessions that ran and were never graded; `scored` = `graded` − the
/// excluded grades.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Trials {
    /// Ended without an exception (Harbor) or without `is_error`.
    pub(crate) completed: u64,
    /// Harbor trials whose reward disagrees with assay's regrade (the
    /// published grade is assay's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) disagreements: Vec<Disagreement>,
    /// By exception type (Harbor) or `is_error`.
    pub(crate) errored: BTreeMap<String, u64>,
    /// Every session left out of the scored denominator, with why and
    /// whose doing it is.
    pub(crate) excluded: Vec<ExcludedTrial>,
    /// Sessions with a scored grade.
    pub(crate) graded: u64,
    /// Planned trials that left no trial (cancelled before they started,
    /// pending, running when the job stopped).
    pub(crate) not_ended: u64,
    /// Attempts never run: their task is not graded (uncertified, awaiting
    /// a statement).
    #[serde(default)]
    pub(crate) not_started: u64,
    pub(crate) planned: u64,
    /// Grades in the agents' denominators.
    pub(crate) scored: u64,
    pub(crate) started: u64,
    /// Trials graded against a task whose digest is not the one they ran
    /// (the task changed since): still graded, listed here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) task_changed: Vec<String>,
}

/// A Harbor trial whose reward and assay's regrade disagree.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Disagreement {
    pub(crate) session: String,
    /// Harbor's reward; null: the trial kept none.
    pub(crate) reward: Option<f64>,
    /// assay's verdict, the published one.
    pub(crate) verdict: String,
    /// Why the trial lost its patch or reward, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) why: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ExcludedTrial {
    pub(crate) fault: String,
    pub(crate) session: String,
    pub(crate) why: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Environment {
    pub(crate) executor: ExecutorKind,
    pub(crate) image: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Unchecked {
    pub(crate) grades: u64,
    pub(crate) why: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct NotGraded {
    pub(crate) by_reason: BTreeMap<String, u64>,
    pub(crate) sessions: Vec<NotGradedSession>,
    pub(crate) total: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct NotGradedSession {
    pub(crate) reason: String,
    pub(crate) session: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Scoring {
    pub(crate) arm: Arm,
    pub(crate) fallback_arm: Arm,
    pub(crate) floats: String,
    pub(crate) interval: String,
    /// How a leaderboard's score interval is counted (over tasks).
    pub(crate) leaderboard_interval: String,
}

impl Default for Scoring {
    fn default() -> Self {
        Scoring {
            arm: Arm::SCORED,
            fallback_arm: Arm::CONTRAST,
            floats: String::new(),
            interval: String::new(),
            leaderboard_interval: String::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TamperSuspect {
    pub(crate) agent: String,
    pub(crate) arm: Arm,
    pub(crate) grade: String,
    pub(crate) instance_id: String,
    pub(crate) model: String,
    pub(crate) session: String,
    pub(crate) verdict: Verdict,
    pub(crate) why: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Tasks {
    pub(crate) certified: u64,
    pub(crate) released: u64,
    pub(crate) uncertified: u64,
    pub(crate) uncertified_tasks: Vec<UncertifiedTask>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct UncertifiedTask {
    pub(crate) because: Vec<String>,
    pub(crate) digest: String,
    pub(crate) instance_id: String,
    pub(crate) track: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct VerifierSuspect {
    pub(crate) agent: String,
    pub(crate) exclude: Verdict,
    pub(crate) exclude_grade: String,
    pub(crate) instance_id: String,
    pub(crate) keep: Verdict,
    pub(crate) keep_grade: String,
    pub(crate) model: String,
    pub(crate) session: String,
    pub(crate) task_digest: String,
    pub(crate) track: String,
}

/// One agent/model pair, over its scored grades.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Agent {
    pub(crate) agent: String,
    pub(crate) arms: BTreeMap<String, u64>,
    pub(crate) by_track: BTreeMap<String, Rate>,
    /// Null when no price applies.
    pub(crate) cost_usd: Option<Cost>,
    pub(crate) empty_patch: u64,
    pub(crate) faults: BTreeMap<String, u64>,
    /// Per judge that ran; absent without `[[judge]]`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) judge: Option<BTreeMap<String, AgentJudge>>,
    pub(crate) leaderboard: Leaderboard,
    pub(crate) model: String,
    pub(crate) n: u64,
    /// Per `[[metric]]`; absent without metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) quality: Option<BTreeMap<String, AgentQuality>>,
    pub(crate) resolved: u64,
    pub(crate) resolved_after_rerun: u64,
    pub(crate) resolved_rate: Option<f64>,
    pub(crate) resolved_rate_hi: Option<f64>,
    pub(crate) resolved_rate_lo: Option<f64>,
    pub(crate) run: Runs,
    pub(crate) tokens: Tokens,
    pub(crate) turns: Turns,
    pub(crate) verdicts: BTreeMap<String, u64>,
}

impl Agent {
    /// The pair's own resolved rate, as a track's is given.
    pub(crate) fn rate(&self) -> Rate {
        Rate {
            n: self.n,
            resolved: self.resolved,
            resolved_rate: self.resolved_rate,
            resolved_rate_hi: self.resolved_rate_hi,
            resolved_rate_lo: self.resolved_rate_lo,
        }
    }
}

/// One `[[metric]]` over a pair's scored sessions: what they introduced
/// against gold. Fields in the byte order of their names, as every model
/// struct's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentQuality {
    /// Sessions whose figure could not be measured.
    pub(crate) failed: u64,
    /// Sessions with a figure.
    pub(crate) measured: u64,
    /// The median of the figures (findings introduced per session).
    pub(crate) median_introduced: Option<f64>,
    /// Resolved sessions with a figure.
    pub(crate) resolved: u64,
    /// Of those, the ones that introduced at least one finding.
    pub(crate) resolved_introducing: u64,
    /// `resolved_introducing` / `resolved`; null when none resolved.
    pub(crate) resolved_introducing_share: Option<f64>,
}

/// A resolved rate with its Wilson 95% interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Rate {
    pub(crate) n: u64,
    pub(crate) resolved: u64,
    pub(crate) resolved_rate: Option<f64>,
    pub(crate) resolved_rate_hi: Option<f64>,
    pub(crate) resolved_rate_lo: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cost {
    /// Per attempt: the mean over the sessions that report tokens.
    pub(crate) mean: Option<f64>,
    /// The cost of the sessions that report tokens over how many of them
    /// resolved their task (infrastructure faults left out of both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) per_resolved: Option<f64>,
    pub(crate) reported_sessions: u64,
    pub(crate) reported_total: Option<f64>,
    pub(crate) sessions: u64,
    pub(crate) total: Option<f64>,
    pub(crate) unpriced_kinds: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Leaderboard {
    /// Tasks with at least one attempt that counts.
    pub(crate) attempted: u64,
    /// Attempts that count (infrastructure faults left out).
    pub(crate) attempts: u64,
    /// Tasks with an attempt that counts and none lost to the
    /// infrastructure; present when not every task is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) complete: Option<u64>,
    pub(crate) coverage: Option<f64>,
    /// Attempts left out of the denominator: their run ended on an
    /// infrastructure fault, which says nothing about the agent.
    pub(crate) left_out: Vec<LeftOut>,
    /// pass@k for k = 1 up to the fewest attempts an attempted task had
    /// (the unbiased estimator; a task not attempted counts 0).
    pub(crate) pass_at_k: BTreeMap<String, Option<f64>>,
    /// Attempts that count and resolved.
    pub(crate) resolved: u64,
    /// pass@1: the mean over every task of the share of its attempts that
    /// resolved (a task with none counts 0).
    pub(crate) score: Option<f64>,
    /// pass@1 over the complete tasks only, beside the headline when
    /// some task is not: an outage that took a task's every attempt reads
    /// apart from the agent failing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) score_complete: Option<f64>,
    pub(crate) score_hi: Option<f64>,
    pub(crate) score_lo: Option<f64>,
    pub(crate) tasks: u64,
}

/// An attempt the leaderboard leaves out, and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct LeftOut {
    pub(crate) session: String,
    pub(crate) instance_id: String,
    pub(crate) grade: String,
    pub(crate) why: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Runs {
    pub(crate) duration_ms: Mean,
    pub(crate) ended: BTreeMap<String, u64>,
    pub(crate) is_error: u64,
    pub(crate) is_error_sessions: u64,
    pub(crate) permission_denials: Total,
}

/// A mean over the sessions that report the quantity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Mean {
    pub(crate) mean: Option<f64>,
    pub(crate) sessions: u64,
}

pub(crate) type Turns = Mean;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Total {
    pub(crate) sessions: u64,
    pub(crate) total: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Tokens {
    pub(crate) mean_by_kind: BTreeMap<String, Option<f64>>,
    pub(crate) mean_total: Option<f64>,
    pub(crate) sessions: u64,
}

/// `summary.agents[…].judge[name]`: one judge's readings of the pair's sessions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentJudge {
    /// By criterion name.
    pub(crate) criteria: BTreeMap<String, CriterionMean>,
    pub(crate) no_usable_answer: u64,
    pub(crate) pairwise: Pairwise,
    pub(crate) quotes: Quotes,
    pub(crate) sample_agreement: Agreement,
    pub(crate) sessions: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CriterionMean {
    pub(crate) hi: Option<f64>,
    pub(crate) lo: Option<f64>,
    pub(crate) mean: Option<f64>,
    pub(crate) n: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pairwise {
    pub(crate) appearances: u64,
    pub(crate) preferred: u64,
    pub(crate) preferred_rate: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Quotes {
    pub(crate) low_scores: u64,
    pub(crate) missing: u64,
    pub(crate) missing_rate: Option<f64>,
    pub(crate) quoted: u64,
    pub(crate) scores: u64,
    pub(crate) unverified: u64,
    pub(crate) unverified_rate: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Agreement {
    pub(crate) agreeing: u64,
    pub(crate) pairs: u64,
    pub(crate) rate: Option<f64>,
}

/// `summary.judges[name]`: a judge's settings and its judge-wide numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Judge {
    pub(crate) api: String,
    pub(crate) flagged: Vec<Flag>,
    pub(crate) interval: String,
    pub(crate) model: String,
    pub(crate) no_usable_answer: u64,
    pub(crate) not_judged: u64,
    pub(crate) pairwise: bool,
    pub(crate) position_inconsistency: Inconsistency,
    pub(crate) quotes: Quotes,
    pub(crate) readings: u64,
    pub(crate) sample_agreement: Agreement,
    pub(crate) samples: u64,
    pub(crate) seed: u64,
    pub(crate) settings_digest: String,
    /// Why its nodes were not laid out; null when they were.
    pub(crate) skipped: Option<String>,
    pub(crate) tokens: JudgeTokens,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Inconsistency {
    pub(crate) inconsistent: u64,
    pub(crate) pairs: u64,
    pub(crate) rate: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct JudgeTokens {
    pub(crate) input: u64,
    pub(crate) output: u64,
}

/// A quote flag of one reading.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Flag {
    pub(crate) agent: String,
    pub(crate) criterion: String,
    /// `missing_quote` or `unverified_quote`.
    pub(crate) flag: String,
    pub(crate) instance_id: String,
    pub(crate) label: String,
    pub(crate) mode: Mode,
    pub(crate) model: String,
    /// The judge node key.
    pub(crate) reading: String,
    pub(crate) sample: u32,
    pub(crate) session: String,
    pub(crate) track: String,
}

/// `summary.apps`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Apps {
    pub(crate) tasks: BTreeMap<String, AppTask>,
    pub(crate) agents: BTreeMap<String, AppAgent>,
    /// (session, why) for sessions on tasks whose controls fail.
    pub(crate) not_scored: Vec<(String, String)>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AppTask {
    pub(crate) certified: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) uncertified_because: Option<String>,
    pub(crate) flaky_probes: Vec<String>,
    pub(crate) flaky_flows: Vec<String>,
    /// Its `app_certify` node key.
    pub(crate) digest: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AppAgent {
    /// Sessions on certified tasks.
    pub(crate) sessions: u64,
    /// Layer -> the share of the sessions that reached it (every layer
    /// before it passed).
    pub(crate) reached: BTreeMap<String, Option<f64>>,
    /// Layer -> the share of the sessions that passed it.
    pub(crate) passed: BTreeMap<String, Option<f64>>,
    /// Layer -> fault -> sessions that failed there with that fault.
    pub(crate) failed: BTreeMap<String, BTreeMap<String, u64>>,
    pub(crate) mean_turns: Option<f64>,
    pub(crate) mean_tokens: Option<f64>,
    pub(crate) mean_duration_ms: Option<f64>,
}
