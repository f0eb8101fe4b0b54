//! What the release node is given: its params (the prices, the sessions
//! not graded, each input's [`Input`] word in input order) and, while the
//! graph is laid out, the nodes it reads beside what each one is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::release::Price;

/// What each input of the release node is, in input order. Part of the
/// params, so an auditor can recompute the release from its key record alone.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Input {
    /// A task, with its candidate id.
    Task(String),
    /// A Deep-SWE-shaped Harbor folder's assay task: counted in the
    /// Harbor funnel, not as a mined candidate. Its word, part of the
    /// release's params, stays `swe_task`.
    #[serde(rename = "swe_task")]
    DeepSweTask,
    Session,
    Grade,
    Metrics,
    /// A judge reading, with the judge's name.
    Judge(String),
    /// A Harbor task folder, screened.
    HarborTask,
    /// A `[[metric]]` on a graded or a gold tree.
    Quality,
    /// An app task's controls.
    AppCertify,
    /// A session's layers on an app task.
    AppGrade,
    /// The dataset's own verifier's reading of a session on a
    /// Deep-SWE-shaped task that assay grades itself: shown beside
    /// assay's verdict, never counted.
    DatasetReading,
    /// A SWE-bench-family instance's assay task (docs/instances.md):
    /// released as a task, never counted among the mined candidates.
    InstanceTask,
    /// One screening reading of an instance's task (its run record): the
    /// wall time of each control in the dataset-health report.
    InstanceReading {
        /// The task's id, `<name>/<instance_id>`.
        task: String,
        /// `base`, `test` or `gold`.
        state: String,
        reading: u32,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ReleaseParams {
    pub(crate) prices: BTreeMap<String, Price>,
    /// Sessions that were not graded, with why (known when the graph is laid out).
    pub(crate) not_graded: Vec<(String, String)>,
    /// The Harbor jobs among the sessions: their plans and every trial's
    /// outcome, for the trial accounting; left out of the key when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) trials: Vec<crate::sessions::harbor::JobTrials>,
    pub(crate) inputs: Vec<Input>,
    /// The `[[judge]]`s; left out of the key when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) judges: Vec<crate::model::records::JudgeInfo>,
    /// Sealed into manifest.json (`provenance`); absent: nothing added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) provenance: Option<crate::run::provenance::Provenance>,
    /// Each Harbor task folder's newest change (`<dataset>/<folder>` ->
    /// ISO 8601): the date of its task where the folder gives no merge,
    /// and of a release that has no merged PR. Left out of the key when
    /// there is no Harbor dataset.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) harbor_changed: BTreeMap<String, String>,
    /// The `[[instances]]` files' rows, for the funnel; left out of the
    /// key when the pipeline has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) instance_rows: Option<InstanceRows>,
}

/// How many rows the `[[instances]]` files hold, and those that do not
/// read (`<name>/line-<n>`): the funnel's rows before any node ran.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct InstanceRows {
    pub(crate) rows: usize,
    pub(crate) unreadable: Vec<String>,
}

/// The release node's inputs as they are laid out: each node beside what
/// it is (the release params list the latter, in the same order).
#[derive(Default)]
pub(crate) struct ReleaseInputs {
    nodes: Vec<(String, Input)>,
    /// The nodes that may be pushed by several sessions (a task's gold
    /// quality), pushed once.
    once: std::collections::BTreeSet<String>,
}

impl ReleaseInputs {
    pub(crate) fn push(&mut self, node: String, what: Input) {
        self.nodes.push((node, what));
    }

    /// Pushes `node` unless it was pushed this way before; whether it was new.
    pub(crate) fn push_once(&mut self, node: String, what: Input) -> bool {
        let new = self.once.insert(node.clone());
        if new {
            self.push(node, what);
        }
        new
    }

    pub(crate) fn split(self) -> (Vec<String>, Vec<Input>) {
        self.nodes.into_iter().unzip()
    }
}

#[cfg(test)]
mod tests {
    use super::Input;

    /// The inputs' words are part of the release's params, so of its key:
    /// a Deep-SWE folder's task keeps the word `swe_task`.
    #[test]
    fn a_deepswe_task_input_keeps_its_word() {
        let words = serde_json::to_string(&[Input::DeepSweTask, Input::InstanceTask]).unwrap();
        assert_eq!(words, r#"["swe_task","instance_task"]"#);
    }
}
