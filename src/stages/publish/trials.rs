//! summary.json's `trials`: every attempt on paper and what became of it,
//! by origin — each Harbor job (`harbor:<path>`: its `n_total_trials`, its
//! trial folders, their exceptions), assay's own `attempts` and the session
//! `sessions` files alike — down to the scored denominator, with every
//! session left out of it named, with why and whose doing it is.

use std::collections::{BTreeMap, BTreeSet};

use super::index::{Graded, Index};
use super::model::{ExcludedTrial, Trials};
use super::sources::{At, Source};
use crate::stages::records::Fault;

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

fn account(
    o: &mut At<'_>,
    index: &Index<'_>,
    origin: &Origin<'_>,
    scored: &BTreeMap<&str, Graded<'_>>,
    not_graded: &BTreeMap<&str, &str>,
) -> Trials {
    let sessions = |ids: &mut dyn Iterator<Item = &str>| Source {
        sessions: ids.map(str::to_owned).collect(),
        ..Source::default()
    };
    let population = sessions(&mut origin.ids.iter().copied());
    let trial_of = |id: &str| origin.job.and_then(|j| j.trials.get(id));
    // How each started session ended: its exception (Harbor), `is_error`,
    // or completed.
    let mut errored: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut completed = Vec::new();
    for id in &origin.ids {
        let ended = match trial_of(id) {
            Some(t) => t.exception.clone(),
            None if origin.job.is_some() => Some("unreadable".to_owned()),
            None => index
                .sessions
                .get(id)
                .and_then(|s| s.facts.is_error)
                .filter(|e| *e)
                .map(|_| "is_error".to_owned()),
        };
        match ended {
            Some(kind) => errored.entry(kind).or_default().push(id),
            None => completed.push(*id),
        }
    }
    let mut excluded = Vec::new();
    let mut graded = Vec::new();
    let mut counted = Vec::new();
    let mut task_changed = Vec::new();
    for id in &origin.ids {
        if let Some(why) = not_graded.get(id) {
            let fault = trial_of(id)
                .and_then(|t| t.blame.clone())
                .unwrap_or_else(|| Fault::None.as_str().to_owned());
            excluded.push(ExcludedTrial {
                fault,
                session: (*id).to_owned(),
                why: (*why).to_owned(),
            });
        } else if let Some(g) = scored.get(id) {
            graded.push(*g);
            if let Some(ran) = trial_of(id).and_then(|t| t.task_digest.as_deref())
                && ran != g.0.task_digest
            {
                task_changed.push((*id).to_owned());
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
    let started = origin.ids.len() as u64;
    let (planned, not_ended) = match origin.job {
        Some(j) => (j.planned, j.not_ended),
        None => (started, 0),
    };
    Trials {
        completed: o.count(
            "completed",
            completed.len() as u64,
            &sessions(&mut completed.iter().copied()),
        ),
        errored: o.object("errored", |o| {
            errored
                .iter()
                .map(|(kind, ids)| {
                    let n = o.count(kind, ids.len() as u64, &sessions(&mut ids.iter().copied()));
                    (kind.clone(), n)
                })
                .collect()
        }),
        excluded,
        graded: o.count("graded", graded.len() as u64, &Source::grades(&graded)),
        not_ended: o.count("not_ended", not_ended, &population),
        planned: o.count("planned", planned, &population),
        scored: o.count("scored", counted.len() as u64, &Source::grades(&counted)),
        started: o.count("started", started, &population),
        task_changed,
    }
}
