//! The leaderboard of one agent and model: every certified task of its
//! tracks in the denominator, pass@1 and pass@k over the attempts that
//! count ([`Board`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::records::{Fault, TaskStatus, Verdict};
use crate::release::index::{Graded, Index};
use crate::release::model::{Leaderboard, LeftOut};
use crate::release::sources::{At, Name, Source};
use crate::release::stats::{mean, wilson_share};

pub(super) fn leaderboard(o: &mut At<'_>, index: &Index<'_>, grades: &[Graded<'_>]) -> Leaderboard {
    let board = Board::new(index, grades);
    let src = board.source();
    let n = board.tasks.len() as u64;
    let attempted = board.attempts.len() as u64;
    let counted: Vec<Graded<'_>> = board.attempts.values().flatten().copied().collect();
    let frac = |k: u64| (n > 0).then(|| k as f64 / n as f64);
    let score = board.score();
    let interval = score.and_then(|p| wilson_share(p, n));
    let complete = board.complete();
    let partial = (complete.len() as u64) < n;
    Leaderboard {
        tasks: o.count("tasks", n, &src),
        attempted: o.count("attempted", attempted, &src),
        attempts: o.count("attempts", counted.len() as u64, &src),
        resolved: o.count("resolved", resolved(&counted), &src),
        complete: partial.then(|| o.count("complete", complete.len() as u64, &src)),
        coverage: o.float("coverage", frac(attempted), &src),
        score: o.float("score", score, &src),
        score_complete: if partial {
            o.float("score_complete", board.share_over(&complete), &src)
        } else {
            None
        },
        score_lo: o.float("score_lo", interval.map(|i| i.0), &src),
        score_hi: o.float("score_hi", interval.map(|i| i.1), &src),
        pass_at_k: o.object("pass_at_k", |o| {
            (1..=board.max_k())
                .map(|k| {
                    let key = k.to_string();
                    let value = o.float(&key, board.pass_at(k), &src);
                    (key, value)
                })
                .collect()
        }),
        left_out: board
            .left_out
            .iter()
            .map(|g| LeftOut {
                session: g.0.session.clone(),
                instance_id: g.0.instance_id.clone(),
                grade: g.1.clone(),
                why: format!("{} ({}): {}", g.0.verdict, g.0.fault, g.0.detail),
            })
            .collect(),
    }
}

/// A pair's standing over the whole certified task set of the tracks it
/// was scored on, as a leaderboard counts it (docs/verdicts.md,
/// "Attempts"): every certified task of those tracks (a certified
/// reward-only Harbor task on the basic track) is in the denominator; a task's attempts are every graded session of the pair on
/// it, less those whose run ended on an infrastructure fault (left out and
/// listed); the score is pass@1, the mean over the tasks of the share of
/// their attempts that resolved, a task without an attempt counting 0.
pub(super) struct Board<'a> {
    /// Digests of the certified tasks of the pair's tracks.
    pub(super) tasks: BTreeSet<&'a str>,
    /// Task digest -> the attempts that count, by session id.
    pub(super) attempts: BTreeMap<&'a str, Vec<Graded<'a>>>,
    /// Attempts on those tasks left out (infrastructure), by session id.
    pub(super) left_out: Vec<Graded<'a>>,
}

impl<'a> Board<'a> {
    pub(super) fn new(index: &Index<'a>, grades: &[Graded<'a>]) -> Self {
        let tracks: BTreeSet<&str> = grades.iter().map(|g| g.0.track.as_str()).collect();
        // A reward-only Harbor task is on the basic track (its one
        // statement, `instruction.md`).
        let harbor = tracks
            .contains("basic")
            .then_some(&index.harbor_tasks)
            .into_iter()
            .flatten()
            .copied();
        let tasks: BTreeSet<&'a str> = index
            .tasks
            .iter()
            .filter(|(t, _)| t.certified && t.status == TaskStatus::Released)
            .filter(|(t, _)| tracks.contains(t.track.as_str()))
            .map(|(_, d)| *d)
            .chain(harbor)
            .collect();
        let mut attempts: BTreeMap<&'a str, Vec<Graded<'a>>> = BTreeMap::new();
        let mut left_out = Vec::new();
        for g in grades {
            let Some(d) = tasks.get(g.0.task_digest.as_str()) else {
                continue;
            };
            if g.0.fault == Fault::Infrastructure {
                left_out.push(*g);
            } else {
                attempts.entry(d).or_default().push(*g);
            }
        }
        for a in attempts.values_mut() {
            a.sort_by(|x, y| x.0.session.cmp(&y.0.session));
        }
        left_out.sort_by(|x, y| x.0.session.cmp(&y.0.session));
        Board {
            tasks,
            attempts,
            left_out,
        }
    }

    /// The tasks, the attempts that count and those left out.
    fn source(&self) -> Source {
        Source {
            grades: self
                .attempts
                .values()
                .flatten()
                .map(|g| Name::from(g.1.as_str()))
                .collect(),
            tasks: self.tasks.iter().map(|d| Name::from(*d)).collect(),
            left_out: self
                .left_out
                .iter()
                .map(|g| Name::from(g.1.as_str()))
                .collect(),
            ..Source::default()
        }
    }

    /// pass@1; None without a task.
    pub(super) fn score(&self) -> Option<f64> {
        self.pass_at(1)
    }

    /// The tasks with an attempt that counts and none left out.
    fn complete(&self) -> BTreeSet<&'a str> {
        let lost: BTreeSet<&str> = self
            .left_out
            .iter()
            .map(|g| g.0.task_digest.as_str())
            .collect();
        self.attempts
            .keys()
            .filter(|d| !lost.contains(*d))
            .copied()
            .collect()
    }

    /// pass@1 over `tasks` alone; None without one.
    fn share_over(&self, tasks: &BTreeSet<&'a str>) -> Option<f64> {
        let shares = tasks.iter().filter_map(|d| {
            let a = self.attempts.get(d)?;
            Some(resolved(a) as f64 / a.len() as f64)
        });
        mean(shares)
    }

    /// The largest k every attempted task has k attempts for (0 without
    /// an attempt).
    fn max_k(&self) -> u64 {
        self.attempts
            .values()
            .map(|a| a.len() as u64)
            .min()
            .unwrap_or(0)
    }

    /// pass@k over every task: per task with n attempts of which c
    /// resolved, 1 − C(n−c, k)/C(n, k) (the unbiased estimator), a task
    /// without an attempt 0; None without a task, or when an attempted
    /// task has fewer than k attempts.
    pub(super) fn pass_at(&self, k: u64) -> Option<f64> {
        if self.tasks.is_empty() || k == 0 || k > self.max_k().max(1) {
            return None;
        }
        let sum: f64 = self
            .attempts
            .values()
            .map(|a| {
                let n = a.len() as u64;
                pass_at_k(n, resolved(a), k)
            })
            .sum();
        Some(sum / self.tasks.len() as f64)
    }
}

/// 1 − C(n−c, k)/C(n, k): the chance that k of n attempts, c of them
/// right, drawn without replacement, hold a right one.
pub(crate) fn pass_at_k(n: u64, c: u64, k: u64) -> f64 {
    if n < k {
        return 0.0;
    }
    if n - c < k {
        return 1.0;
    }
    let mut none = 1.0;
    for i in 0..k {
        none *= (n - c - i) as f64 / (n - i) as f64;
    }
    1.0 - none
}

/// How many of `grades` resolved.
pub(super) fn resolved(grades: &[Graded<'_>]) -> u64 {
    grades
        .iter()
        .filter(|g| g.0.verdict == Verdict::Resolved)
        .count() as u64
}
