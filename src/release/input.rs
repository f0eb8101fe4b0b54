//! What the release is computed from: the release node's inputs, decoded.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::model::Funnel;
use crate::model::records::{GradeRecord, MetricsRecord, QualityRecord, SessionRecord, TaskRecord};
use crate::model::records::{JudgeInfo, JudgeRecord};
use crate::run::provenance::Provenance;

/// USD per million tokens, by token kind (input, output, cache_read, …).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Price(pub(crate) BTreeMap<String, f64>);

#[derive(Default)]
pub(crate) struct PublishInput {
    /// Released tasks (certified or not) with their digests.
    pub(crate) tasks: Vec<(TaskRecord, String)>,
    /// The certified reward-only Harbor tasks (no assay task of theirs:
    /// graded by their own verifier), by `harbor_task` node key: on the
    /// basic track of the leaderboard's denominator.
    pub(crate) harbor_tasks: Vec<String>,
    /// Every Harbor task folder as screened (certified or not), sorted by
    /// id: the report names each with its reasons and its controls'
    /// readings.
    pub(crate) harbor_screens: Vec<HarborScreen>,
    /// Every grade with its grade node key.
    pub(crate) grades: Vec<(GradeRecord, String)>,
    /// The dataset's own verifier's readings of sessions on
    /// Deep-SWE-shaped tasks assay grades itself, with their node keys.
    pub(crate) dataset_readings: Vec<(GradeRecord, String)>,
    pub(crate) metrics: Vec<MetricsRecord>,
    /// Every `[[metric]]` record (graded and gold trees) with its node key.
    pub(crate) quality: Vec<(QualityRecord, String)>,
    pub(crate) sessions: Vec<SessionRecord>,
    /// Sessions not graded, with why (unknown task, uncertified task, unreadable file).
    pub(crate) not_graded: Vec<(String, String)>,
    /// The Harbor jobs among the sessions (the trial accounting).
    pub(crate) trials: Vec<crate::sessions::harbor::JobTrials>,
    /// model label -> price.
    pub(crate) prices: BTreeMap<String, Price>,
    /// The `[[judge]]`s; none: nothing judged, nothing said.
    pub(crate) judges: Vec<JudgeInfo>,
    /// Every judge reading: (judge name, record, judge node key).
    pub(crate) readings: Vec<(String, JudgeRecord, String)>,
    /// Session patch blob digest -> its bytes (the report shows them).
    pub(crate) patches: BTreeMap<String, Vec<u8>>,
    /// Session transcript blob digest -> its bytes (redacted when the
    /// session was laid out or the attempt stored it): the transcript pages.
    pub(crate) transcripts: BTreeMap<String, Vec<u8>>,
    /// What the report's header says the release is.
    pub(crate) about: About,
    /// Every app task's controls, with its `app_certify` node key.
    pub(crate) app_tasks: Vec<(crate::model::rules::app::AppCertifyRecord, String)>,
    /// Every session's layers on an app task, with its `app_grade` node key.
    pub(crate) app_grades: Vec<(crate::model::rules::app::AppGradeRecord, String)>,
    /// Screenshot blob digest -> its PNG: each failing browser step's.
    pub(crate) shots: BTreeMap<String, Vec<u8>>,
    /// Every screening reading of an instance's task: the dataset-health
    /// report's control times (none without `[[instances]]`).
    pub(crate) instance_readings: Vec<InstanceReading>,
}

/// One screening reading of a SWE-bench-family instance's task.
#[derive(Clone, Debug, Default)]
pub(crate) struct InstanceReading {
    /// The task's id, `<name>/<instance_id>`.
    pub(crate) task: String,
    /// `base`, `test` or `gold`.
    pub(crate) state: String,
    pub(crate) reading: u32,
    /// Its wall time; None when it did not run (the instance declined).
    pub(crate) seconds: Option<f64>,
    /// The run node's key.
    pub(crate) key: String,
}

/// A Harbor task folder as its screening left it: what the report shows
/// of it beside assay's own readings.
#[derive(Clone, Debug, Default)]
pub(crate) struct HarborScreen {
    /// `<dataset>/<folder>`.
    pub(crate) id: String,
    pub(crate) certified: bool,
    pub(crate) because: Vec<String>,
    /// The dataset's own verifier's reward in each reading of each control
    /// (`nop`, `oracle`), in order; None where it wrote none.
    pub(crate) readings: BTreeMap<String, Vec<Option<f64>>>,
}

/// The release as the report's header describes it: nothing here enters
/// summary.json or results.csv; the provenance (with the release node's
/// key) is sealed into manifest.json.
#[derive(Default)]
pub(crate) struct About {
    /// Candidates (PRs) → eligible → screened → certified, and the tasks.
    pub(crate) funnel: Funnel,
    pub(crate) provenance: Option<Provenance>,
    /// The release node's key (the release digest, which covers this file,
    /// can only be in manifest.json).
    pub(crate) release_node: String,
    /// The newest change of a Harbor task folder (ISO 8601), when the
    /// pipeline has any: the date of a release that has no merged PR.
    pub(crate) harbor_changed: Option<String>,
}
