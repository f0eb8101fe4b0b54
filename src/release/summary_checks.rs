//! The checks' part of summary.json: suspects (verifier, tamper), grades
//! not forgery-checked, the dataset verifiers' readings, weakly checked
//! tasks, the forger odds and the images the work ran in.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::records::Verdict;
use crate::release::index::Index;
use crate::release::model::{
    DatasetReading, Environment, ForgerOdds, TamperSuspect, TaskOdds, Unchecked, VerifierSuspect,
    WeakTask, WeaklyChecked,
};

pub(super) fn verifier_suspects(index: &Index<'_>) -> Vec<VerifierSuspect> {
    index
        .suspects
        .iter()
        .map(|s| {
            let ex = &s.exclude.0;
            VerifierSuspect {
                session: ex.session.clone(),
                instance_id: ex.instance_id.clone(),
                track: ex.track.clone(),
                task_digest: ex.task_digest.clone(),
                agent: ex.agent.clone(),
                model: ex.model.clone(),
                exclude: ex.verdict,
                keep: s.keep.0.verdict,
                exclude_grade: s.exclude.1.clone(),
                keep_grade: s.keep.1.clone(),
            }
        })
        .collect()
}

/// Every grade with a tamper suspect, in either arm (docs/verdicts.md).
pub(super) fn tamper_suspects(index: &Index<'_>) -> Vec<TamperSuspect> {
    index
        .grades
        .iter()
        .filter(|g| !g.0.tamper.is_empty())
        .map(|g| TamperSuspect {
            session: g.0.session.clone(),
            instance_id: g.0.instance_id.clone(),
            agent: g.0.agent.clone(),
            model: g.0.model.clone(),
            arm: g.0.arm,
            verdict: g.0.verdict,
            why: g.0.tamper.clone(),
            grade: g.1.clone(),
        })
        .collect()
}

/// Grades whose run carried no canary (docs/security.md), by why: their
/// verdicts are not forgery-checked. None when every grade was.
pub(super) fn not_forgery_checked(index: &Index<'_>) -> Option<Vec<Unchecked>> {
    let mut unchecked: BTreeMap<&str, u64> = BTreeMap::new();
    for g in &index.grades {
        if let Some(why) = &g.0.unchecked {
            *unchecked.entry(why.as_str()).or_default() += 1;
        }
    }
    (!unchecked.is_empty()).then(|| {
        unchecked
            .into_iter()
            .map(|(why, grades)| Unchecked {
                why: why.to_owned(),
                grades,
            })
            .collect()
    })
}

/// Certified tasks whose runs carry the shaped canaries, and their grades.
/// Each dataset verifier's reading beside the scored grade of its session.
pub(super) fn dataset_verifier(index: &Index<'_>) -> Option<Vec<DatasetReading>> {
    if index.dataset_readings.is_empty() {
        return None;
    }
    let scored = index.scored_by_session();
    let mut out: Vec<DatasetReading> = index
        .dataset_readings
        .iter()
        .map(|(r, key)| {
            let assay = scored.get(r.session.as_str()).map(|g| g.0.verdict);
            let passed = |v: Verdict| matches!(v, Verdict::Resolved | Verdict::ResolvedAfterRerun);
            DatasetReading {
                session: r.session.clone(),
                task: r.instance_id.clone(),
                reading: r.verdict,
                reading_detail: r.detail.clone(),
                assay,
                agree: assay.is_some_and(|a| passed(a) == passed(r.verdict)),
                digest: key.clone(),
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.session, &a.digest).cmp(&(&b.session, &b.digest)));
    Some(out)
}

pub(super) fn weakly_checked(index: &Index<'_>) -> Option<WeaklyChecked> {
    let tasks: Vec<WeakTask> = index
        .tasks
        .iter()
        .filter_map(|(t, _)| {
            t.weakly_checked.as_ref().map(|why| WeakTask {
                instance_id: t.instance_id.clone(),
                why: why.clone(),
            })
        })
        .collect();
    let grades = index
        .grades
        .iter()
        .filter(|g| g.0.weakly_checked.is_some())
        .count() as u64;
    (!tasks.is_empty()).then_some(WeaklyChecked { grades, tasks })
}

/// The target of a task's forger odds: 1 in 1,024.
const ODDS_TARGET_LOG2: f64 = -10.0;

pub(super) fn forger_odds(index: &Index<'_>) -> Option<ForgerOdds> {
    let figures: Vec<(&str, f64)> = index
        .tasks
        .iter()
        .filter(|(t, _)| t.certified)
        .filter_map(|(t, _)| Some((t.instance_id.as_str(), t.forger_odds_log2?)))
        .collect();
    if figures.is_empty() {
        return None;
    }
    let round = |x: f64| (x * 100.0).round() / 100.0;
    let mean = figures.iter().map(|(_, b)| b.exp2()).sum::<f64>() / figures.len() as f64;
    let worst = figures.iter().map(|(_, b)| *b).fold(f64::MIN, f64::max);
    let mut above: Vec<TaskOdds> = figures
        .iter()
        .filter(|(_, b)| *b > ODDS_TARGET_LOG2)
        .map(|(id, b)| TaskOdds {
            instance_id: (*id).to_owned(),
            log2: round(*b),
        })
        .collect();
    above.sort_by(|a, b| {
        b.log2
            .total_cmp(&a.log2)
            .then(a.instance_id.cmp(&b.instance_id))
    });
    above.dedup();
    Some(ForgerOdds {
        tasks: figures.len() as u64,
        mean_log2: round(mean.log2()),
        worst_log2: round(worst),
        target_log2: ODDS_TARGET_LOG2,
        above_target: above,
    })
}

/// The images tasks were certified and sessions graded in, when any were
/// (docker); None when everything ran locally.
pub(super) fn environments(index: &Index<'_>) -> Option<Vec<Environment>> {
    let environments: BTreeSet<(crate::model::config::ExecutorKind, &str)> = index
        .tasks
        .iter()
        .map(|(t, _)| (&t.executor, &t.image))
        .chain(index.grades.iter().map(|g| (&g.0.executor, &g.0.image)))
        .filter_map(|(e, i)| Some(((*e)?, i.as_deref()?)))
        .collect();
    (!environments.is_empty()).then(|| {
        environments
            .into_iter()
            .map(|(executor, image)| Environment {
                executor,
                image: image.to_owned(),
            })
            .collect()
    })
}
