//! summary.json's `trials`: every attempt on paper and what became of it,
//! by origin — each Harbor job (`harbor:<path>`: its `n_total_trials`, its
//! trial folders, their exceptions), assay's own `attempts` and the session
//! `sessions` files alike — down to the scored denominator, with every
//! session left out of it named, with why and whose doing it is.
//!
//! The counts come from a [`Ledger`] that puts each trial on paper in
//! exactly one bucket — completed, errored (by type), not started, or not
//! ended (planned, with no trial to show) — so `planned` is their sum by
//! construction, never a figure read beside them (Harbor's own stats count
//! a cancelled trial that left a folder once more).
//!
//! Beside the counts, every Harbor trial whose reward disagrees with
//! assay's regrade is listed (`disagreements`): the grade is assay's, the
//! reward a reading that the agent, root in the verifier's container, could
//! have written.

use std::collections::{BTreeMap, BTreeSet};

use super::index::{Graded, Index};
use super::model::{Disagreement, ExcludedTrial, Trials};
use super::sources::{At, Name, Source};
use crate::model::records::Fault;

/// The origin of a session id that no Harbor job holds.
fn origin_of(id: &str) -> &'static str {
    if id.starts_with("agent/") {
        "attempts"
    } else {
        "sessions"
    }
}

/// One origin's sessions and plan.
#[derive(Default)]
struct Origin<'a> {
    ids: BTreeSet<&'a str>,
    /// A Harbor job's plan; None: the sessions found are the plan.
    job: Option<&'a crate::sessions::harbor::JobTrials>,
}

pub(super) fn trials(o: &mut At<'_>, index: &Index<'_>) -> Option<BTreeMap<String, Trials>> {
    let mut origins: BTreeMap<String, Origin<'_>> = BTreeMap::new();
    let mut in_job: BTreeMap<&str, String> = BTreeMap::new();
    for job in index.jobs {
        let key = format!("harbor:{}", job.job);
        let origin = origins.entry(key.clone()).or_default();
        origin.job = Some(job);
        for id in job.trials.keys() {
            origin.ids.insert(id);
            in_job.insert(id, key.clone());
        }
    }
    let all = index
        .sessions
        .keys()
        .copied()
        .chain(index.not_graded.iter().map(|(s, _)| s.as_str()));
    for id in all {
        let key = match in_job.get(id) {
            Some(k) => k.clone(),
            // An unreadable trial result is still one of its job's trials.
            None => match index
                .jobs
                .iter()
                .find(|j| id.starts_with(&format!("{}/", j.job)))
            {
                Some(j) => format!("harbor:{}", j.job),
                None => origin_of(id).to_owned(),
            },
        };
        origins.entry(key).or_default().ids.insert(id);
    }
    if origins.is_empty() {
        return None;
    }
    let scored = index.scored_by_session();
    let not_graded: BTreeMap<&str, &str> = index
        .not_graded
        .iter()
        .map(|(s, why)| (s.as_str(), why.as_str()))
        .collect();
    Some(o.object("trials", |o| {
        origins
            .iter()
            .map(|(key, origin)| {
                let value = o.object(key, |o| account(o, index, origin, &scored, &not_graded));
                (key.clone(), value)
            })
            .collect()
    }))
}

/// Where one trial on paper ended up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Bucket {
    /// Ran and ended without an exception (or `is_error`).
    Completed,
    /// Ran and ended with this exception type (`is_error`,
    /// `claimed_error`, `unreadable`).
    Errored(String),
    /// Never ran: an attempt skipped because its task is not graded.
    NotStarted,
}

/// An origin's trials, each in exactly one bucket, and its planned trials
/// that left nothing to name (`not_ended`: cancelled before they started,
/// pending, running when the job stopped).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Ledger<'a> {
    pub(super) completed: Vec<&'a str>,
    pub(super) errored: BTreeMap<String, Vec<&'a str>>,
    pub(super) not_started: Vec<&'a str>,
    pub(super) not_ended: u64,
}

impl<'a> Ledger<'a> {
    /// `trials` sorted into buckets; `plan`: the number planned, when
    /// something besides the trials says (a Harbor job's
    /// `n_total_trials`). A plan smaller than the trials found is raised to
    /// them: a trial that ran was planned.
    pub(super) fn new(
        trials: impl IntoIterator<Item = (&'a str, Bucket)>,
        plan: Option<u64>,
    ) -> Self {
        let mut l = Ledger::default();
        let mut found = 0u64;
        for (id, bucket) in trials {
            found += 1;
            match bucket {
                Bucket::Completed => l.completed.push(id),
                Bucket::Errored(kind) => l.errored.entry(kind).or_default().push(id),
                Bucket::NotStarted => l.not_started.push(id),
            }
        }
        l.not_ended = plan.unwrap_or(found).saturating_sub(found);
        l
    }

    pub(super) fn errored(&self) -> u64 {
        self.errored.values().map(|v| v.len() as u64).sum()
    }

    pub(super) fn started(&self) -> u64 {
        self.completed.len() as u64 + self.errored()
    }

    pub(super) fn planned(&self) -> u64 {
        self.started() + self.not_started.len() as u64 + self.not_ended
    }
}

/// Whether Harbor's reward and assay's verdict disagree: a reward of 1 for
/// a grade that did not pass, a reward below 1 for one that did, or no
/// reward for a trial assay graded.
fn disagrees(reward: Option<f64>, passed: bool) -> bool {
    match reward {
        None => true,
        Some(r) => (r >= 1.0) != passed,
    }
}

fn account(
    o: &mut At<'_>,
    index: &Index<'_>,
    origin: &Origin<'_>,
    scored: &BTreeMap<&str, Graded<'_>>,
    not_graded: &BTreeMap<&str, &str>,
) -> Trials {
    let sessions = |ids: &mut dyn Iterator<Item = &str>| Source {
        sessions: ids.map(Name::from).collect(),
        ..Source::default()
    };
    let population = sessions(&mut origin.ids.iter().copied());
    let trial_of = |id: &str| origin.job.and_then(|j| j.trials.get(id));
    let attempts = origin.job.is_none() && origin.ids.iter().all(|id| origin_of(id) == "attempts");
    let bucket = |id: &str| -> Bucket {
        // An attempt assay did not grade was not run: the rule that stops
        // its grade (task uncertified, awaiting a statement) stops its run
        // first (nodes/attempt.rs).
        if attempts && not_graded.contains_key(id) {
            return Bucket::NotStarted;
        }
        let ended = match trial_of(id) {
            Some(t) => t.exception.clone(),
            None if origin.job.is_some() => Some("unreadable".to_owned()),
            // A witnessed error, else the run's own claim of one: both
            // are how it ended, whoever is charged for it.
            None => index.sessions.get(id).and_then(|s| {
                let f = &s.facts;
                match (f.is_error, f.claimed_error) {
                    (Some(true), _) => Some("is_error".to_owned()),
                    (_, Some(true)) => Some("claimed_error".to_owned()),
                    _ => None,
                }
            }),
        };
        ended.map_or(Bucket::Completed, Bucket::Errored)
    };
    let ledger = Ledger::new(
        origin.ids.iter().map(|id| (*id, bucket(id))),
        origin.job.map(|j| j.planned),
    );
    let mut excluded = Vec::new();
    let mut graded = Vec::new();
    let mut counted = Vec::new();
    let mut task_changed = Vec::new();
    let mut disagreements = Vec::new();
    for id in &origin.ids {
        if let Some(why) = not_graded.get(id) {
            let fault = trial_of(id)
                .and_then(|t| t.lost.as_ref().map(|l| l.to.clone()).or(t.blame.clone()))
                .unwrap_or_else(|| Fault::None.as_str().to_owned());
            excluded.push(ExcludedTrial {
                fault,
                session: (*id).to_owned(),
                why: (*why).to_owned(),
            });
        } else if let Some(g) = scored.get(id) {
            graded.push(*g);
            if let Some(t) = trial_of(id) {
                // Another digest of the same content is the task screened
                // on another executor, not a changed task.
                let graded_content = || {
                    index
                        .tasks
                        .iter()
                        .find(|(_, d)| *d == g.0.task_digest)
                        .map(|(task, _)| task.content_digest())
                };
                if let Some(ran) = t.task_digest.as_deref()
                    && ran != g.0.task_digest
                    && (t.task_content.is_none() || t.task_content != graded_content())
                {
                    task_changed.push((*id).to_owned());
                }
                if disagrees(t.reward, g.0.verdict.passed()) {
                    disagreements.push(Disagreement {
                        session: (*id).to_owned(),
                        reward: t.reward,
                        verdict: g.0.verdict.to_string(),
                        why: t.lost.as_ref().map(|l| l.why.clone()),
                    });
                }
            }
            if g.0.fault == Fault::Infrastructure {
                excluded.push(ExcludedTrial {
                    fault: g.0.fault.as_str().to_owned(),
                    session: (*id).to_owned(),
                    why: format!(
                        "graded {}: the infrastructure's doing, not counted against the agent",
                        g.0.verdict
                    ),
                });
            } else {
                counted.push(*g);
            }
        }
    }
    let ids = |v: &[&str]| sessions(&mut v.iter().copied());
    let started: Vec<&str> = ledger
        .completed
        .iter()
        .chain(ledger.errored.values().flatten())
        .copied()
        .collect();
    Trials {
        completed: o.count(
            "completed",
            ledger.completed.len() as u64,
            &ids(&ledger.completed),
        ),
        disagreements,
        errored: o.object("errored", |o| {
            ledger
                .errored
                .iter()
                .map(|(kind, v)| (kind.clone(), o.count(kind, v.len() as u64, &ids(v))))
                .collect()
        }),
        excluded,
        graded: o.count("graded", graded.len() as u64, &Source::grades(&graded)),
        // Planned trials that never ended left no session: the count names
        // the job's trials that did.
        not_ended: o.count("not_ended", ledger.not_ended, &population),
        not_started: o.count(
            "not_started",
            ledger.not_started.len() as u64,
            &ids(&ledger.not_started),
        ),
        planned: o.count("planned", ledger.planned(), &population),
        scored: o.count("scored", counted.len() as u64, &Source::grades(&counted)),
        started: o.count("started", ledger.started(), &ids(&started)),
        task_changed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any mix of outcomes and any plan: each trial sits in exactly one
    /// bucket, and planned = completed + errored + not started + not
    /// ended, started = completed + errored, never below the trials found.
    #[test]
    fn every_trial_on_paper_is_in_exactly_one_bucket() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..2000 {
            let n = next(12);
            let names: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
            let kinds = ["CancelledError", "AgentTimeoutError", "is_error"];
            let trials: Vec<(&str, Bucket)> = names
                .iter()
                .map(|id| {
                    let b = match next(4) {
                        0 => Bucket::Completed,
                        1 => Bucket::NotStarted,
                        _ => Bucket::Errored(kinds[next(3) as usize].to_owned()),
                    };
                    (id.as_str(), b)
                })
                .collect();
            let plan = match next(3) {
                0 => None,
                _ => Some(next(16)),
            };
            let l = Ledger::new(trials.clone(), plan);
            let mut seen: Vec<&str> = l
                .completed
                .iter()
                .chain(l.errored.values().flatten())
                .chain(&l.not_started)
                .copied()
                .collect();
            seen.sort_unstable();
            let mut all: Vec<&str> = trials.iter().map(|(id, _)| *id).collect();
            all.sort_unstable();
            assert_eq!(seen, all, "each trial exactly once");
            assert_eq!(
                l.planned(),
                l.completed.len() as u64 + l.errored() + l.not_started.len() as u64 + l.not_ended
            );
            assert_eq!(l.started(), l.completed.len() as u64 + l.errored());
            assert_eq!(l.planned(), plan.unwrap_or(n).max(n));
        }
    }

    /// A crashed job: 5 planned, 4 trial folders (one of
    /// them cancelled with a result), Harbor's stats saying 2 not ended.
    #[test]
    fn a_cancelled_trial_with_a_folder_is_counted_once() {
        let trials = [
            ("a", Bucket::Completed),
            ("b", Bucket::Completed),
            ("c", Bucket::Errored("AgentTimeoutError".into())),
            ("d", Bucket::Errored("CancelledError".into())),
        ];
        let l = Ledger::new(trials, Some(5));
        assert_eq!((l.planned(), l.started(), l.not_ended), (5, 4, 1));
    }

    #[test]
    fn a_reward_disagrees_with_a_grade_that_says_otherwise() {
        assert!(disagrees(Some(1.0), false));
        assert!(disagrees(Some(0.0), true));
        assert!(disagrees(None, false));
        assert!(!disagrees(Some(1.0), true));
        assert!(!disagrees(Some(0.0), false));
    }
}
