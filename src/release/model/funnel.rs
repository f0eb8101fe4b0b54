//! `funnel.json`: the pull requests, Harbor tasks and `[[instances]]` rows
//! from candidates to released tasks, with the reasons for every loss.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::records::{TaskRecord, TaskStatus};
use crate::model::rules::funnel::Reason;

/// `funnel.json`: candidates (PRs) → eligible → screened → certified, with
/// the reasons for every loss.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Funnel {
    pub(crate) candidates: usize,
    pub(crate) eligible: usize,
    pub(crate) screened: usize,
    pub(crate) certified: usize,
    pub(crate) tasks_released: usize,
    pub(crate) uncertified: usize,
    pub(crate) awaiting_statement: usize,
    /// Of those awaiting a statement, the tasks whose screening certified
    /// them: ready to release once written; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) awaiting_statement_certified: usize,
    pub(crate) declined: BTreeMap<String, usize>,
    pub(crate) uncertified_because: BTreeMap<String, usize>,
    /// The `[[harbor_dataset]]`s' tasks; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) harbor: Option<HarborFunnel>,
    /// The `[[instances]]` files' rows; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) instances: Option<InstanceFunnel>,
}

/// The rows of `[[instances]]` files as assay tasks (docs/instances.md):
/// how many rows, how many did not read (which: `<name>/line-<n>`), how
/// many of those that read had their image on the daemon; then, as the
/// Deep-SWE-shaped Harbor tasks', how far assay's own controls took them,
/// each task counted once, under its first reason.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct InstanceFunnel {
    pub(crate) rows: usize,
    pub(crate) unreadable: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) unreadable_rows: Vec<String>,
    pub(crate) images_found: usize,
    pub(crate) tasks: SweFunnel,
}

impl InstanceFunnel {
    /// `rows` rows, `unreadable` of them not read (`<name>/line-<n>`);
    /// their tasks not yet counted.
    pub(crate) fn of_rows(rows: usize, unreadable: &[String]) -> InstanceFunnel {
        InstanceFunnel {
            rows,
            unreadable: unreadable.len(),
            unreadable_rows: unreadable.to_vec(),
            ..InstanceFunnel::default()
        }
    }

    /// Counts the task of a row that read.
    pub(crate) fn count(&mut self, task: &TaskRecord) {
        let no_image = task.status == TaskStatus::Declined
            && task.uncertified_because.first().is_some_and(|r| {
                Reason::word_of(r) == crate::model::records::Decision::NoImage.as_str()
            });
        if !no_image {
            self.images_found += 1;
        }
        self.tasks.count(task);
    }

    /// The build's summary line.
    pub(crate) fn line(&self) -> String {
        let t = &self.tasks;
        let mut line = format!(
            "instances: {} rows ({} unreadable) -> {} images found -> {} screened -> {} certified by assay's controls",
            self.rows, self.unreadable, self.images_found, t.screened, t.certified
        );
        if !t.declined.is_empty() {
            line.push_str(&format!("; declined: {}", by_word(&t.declined)));
        }
        if !t.uncertified_because.is_empty() {
            line.push_str(&format!(
                "; uncertified: {}",
                by_word(&t.uncertified_because)
            ));
        }
        line
    }
}

/// A Harbor dataset's tasks: how many, how many certified (and which:
/// `<dataset>/<folder>`), and why not, counting each task once per reason
/// however many of its readings gave it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct HarborFunnel {
    pub(crate) tasks: usize,
    pub(crate) certified: usize,
    /// `tasks` less `certified`: the tasks `uncertified_tasks` names.
    #[serde(default)]
    pub(crate) uncertified: usize,
    pub(crate) uncertified_because: BTreeMap<String, usize>,
    #[serde(default)]
    pub(crate) certified_tasks: Vec<String>,
    /// Each uncertified task (`<dataset>/<folder>`) with its reasons: the
    /// tasks `uncertified_because` counts, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) uncertified_tasks: BTreeMap<String, Vec<String>>,
    /// The Deep-SWE-shaped folders among them taken in as assay tasks;
    /// absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) assay_tasks: Option<SweFunnel>,
}

/// Deep-SWE-shaped Harbor folders as assay tasks (docs/harbor.md,
/// "Deep-SWE tasks as assay tasks"): how many, how many assay's triage
/// declined (the dataset's controls failed, no suites' part) and why, how
/// many assay's own controls screened and certified (which), and why not,
/// each task counted once, under its first reason.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SweFunnel {
    pub(crate) tasks: usize,
    pub(crate) declined: BTreeMap<String, usize>,
    pub(crate) screened: usize,
    pub(crate) certified: usize,
    /// Screened and not certified: what `uncertified_because` counts.
    #[serde(default)]
    pub(crate) uncertified: usize,
    pub(crate) uncertified_because: BTreeMap<String, usize>,
    pub(crate) certified_tasks: Vec<String>,
}

impl SweFunnel {
    /// Counts `task`; whether it is released (screened, a statement).
    pub(crate) fn count(&mut self, task: &TaskRecord) -> bool {
        self.tasks += 1;
        let first = task.uncertified_because.first().map(String::as_str);
        let word = || first.map(Reason::word_of).unwrap_or_default().to_owned();
        match task.status {
            TaskStatus::Declined => {
                *self.declined.entry(word()).or_default() += 1;
                return false;
            }
            TaskStatus::AwaitingStatement => {
                self.screened += 1;
                *self
                    .declined
                    .entry("awaiting_statement".into())
                    .or_default() += 1;
                return false;
            }
            TaskStatus::Released => {}
        }
        self.screened += 1;
        if task.certified {
            self.certified += 1;
            self.certified_tasks.push(task.instance_id.clone());
        } else {
            self.uncertified += 1;
            *self.uncertified_because.entry(word()).or_default() += 1;
        }
        true
    }
}

/// `k n, k n` of a count by word.
fn by_word(counts: &BTreeMap<String, usize>) -> String {
    counts
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl HarborFunnel {
    /// The build's summary line: tasks screened, certified (which), and
    /// why the others are not; then the Deep-SWE-shaped ones taken in as
    /// assay tasks, as far as assay's own controls took them.
    pub(crate) fn line(&self) -> String {
        let mut line = format!(
            "harbor: {} tasks screened -> {} certified{}{}",
            self.tasks,
            self.certified,
            if self.certified_tasks.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.certified_tasks.join(", "))
            },
            if self.uncertified_because.is_empty() {
                String::new()
            } else {
                format!("; uncertified: {}", by_word(&self.uncertified_because))
            }
        );
        if let Some(swe) = &self.assay_tasks {
            line.push_str(&format!(
                "\n  as assay tasks: {} -> {} screened -> {} certified by assay's controls{}",
                swe.tasks,
                swe.screened,
                swe.certified,
                if swe.certified_tasks.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", swe.certified_tasks.join(", "))
                }
            ));
            if !swe.declined.is_empty() {
                line.push_str(&format!("; declined: {}", by_word(&swe.declined)));
            }
            if !swe.uncertified_because.is_empty() {
                line.push_str(&format!(
                    "; uncertified: {}",
                    by_word(&swe.uncertified_because)
                ));
            }
        }
        line
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
