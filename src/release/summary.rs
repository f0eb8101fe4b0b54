//! Assembles [`Summary`] (summary.json): the aggregates, per agent/model,
//! over the scored arm, and the sources of each number (see [`super::sources`]).
//! The judges' part is in `judge_summary`.

use std::collections::{BTreeMap, BTreeSet};

use super::index::{Graded, Index};
use super::judge_summary;
use super::model::{
    Agent, AgentQuality, Cost, DatasetReading, Environment, ForgerOdds, Leaderboard, LeftOut, Mean,
    NotGraded, NotGradedSession, Rate, Runs, Scoring, Summary, TamperSuspect, TaskOdds, Tasks,
    Tokens, Total, UncertifiedTask, Unchecked, VerifierSuspect, WeakTask, WeaklyChecked,
};
use super::sources::{At, Source, Sources};
use super::stats::{agent_key, mean, session_cost, wilson, wilson_share};
use crate::model::records::{Arm, Fault, RunFacts, TaskStatus, Verdict};
use crate::model::rules::quality::median;

/// Bumped when the meaning or shape of summary.json changes.
/// 2: a leaderboard counts every attempt (pass@1, pass@k, `left_out`).
const SCHEMA: u64 = 2;

/// The tracks the rate is split by (others found in the grades are added).
pub(crate) const TRACKS: [&str; 2] = ["basic", "spec"];

/// Builds summary.json's model and the sources of its numbers.
pub(super) fn summary(index: &Index<'_>) -> (Summary, Sources) {
    let mut sources = Sources::new();
    let mut root = At::root(&mut sources);
    let schema = root.count("schema", SCHEMA, &Source::default());
    let scoring = Scoring {
        arm: Arm::SCORED,
        fallback_arm: Arm::CONTRAST,
        interval: "Wilson score, 95% (z = 1.959964)".to_owned(),
        leaderboard_interval:
            "Wilson score over tasks, 95% (z = 1.959964): a task's attempts are not independent draws"
                .to_owned(),
        floats: "rounded to 6 decimals".to_owned(),
    };
    let tasks = root.object("tasks", |o| tasks(o, index));
    let agents = root.object("agents", |o| {
        index
            .pairs()
            .into_iter()
            .map(|(agent, model)| {
                let key = agent_key(&agent, &model);
                let value = o.object(&key, |o| {
                    agent_summary(o, index, &agent, &model, index.scored(&agent, &model))
                });
                (key, value)
            })
            .collect()
    });
    let judges = (!index.judged.judges.is_empty())
        .then(|| root.object("judges", |o| judge_summary::judges(o, index)));
    let not_graded = root.object("not_graded", |o| not_graded(o, index));
    let trials = super::trials::trials(&mut root, index);
    let apps = root.object("apps", |o| super::apps::summary(o, index));
    let instances = root.object("instances", |o| super::instances::summary(o, index));
    let summary = Summary {
        apps,
        ranking: ranking(index),
        graded_unsandboxed: index
            .grades
            .iter()
            .any(|g| g.0.sandbox == crate::model::config::Sandbox::None),
        not_forgery_checked: not_forgery_checked(index),
        weakly_checked: weakly_checked(index),
        forger_odds: forger_odds(index),
        instances,
        dataset_verifier: dataset_verifier(index),
        environments: environments(index),
        verifier_suspects: verifier_suspects(index),
        tamper_suspects: tamper_suspects(index),
        agents,
        judges,
        not_graded,
        schema,
        scoring,
        tasks,
        trials,
    };
    (summary, sources)
}

/// Agent keys by leaderboard score (then per-attempt rate, then key), best
/// first; pairs without a score last.
fn ranking(index: &Index<'_>) -> Vec<String> {
    let mut ranked: Vec<(Option<f64>, Option<f64>, String)> = index
        .pairs()
        .into_iter()
        .map(|(agent, model)| {
            let grades = index.scored(&agent, &model);
            let n = grades.len();
            let k = resolved(grades);
            let rate = (n > 0).then(|| k as f64 / n as f64);
            (
                Board::new(index, grades).score(),
                rate,
                agent_key(&agent, &model),
            )
        })
        .collect();
    let desc = |x: Option<f64>| std::cmp::Reverse(x.map(|f| (f * 1e6).round() as i64));
    ranked.sort_by(|a, b| (desc(a.0), desc(a.1), &a.2).cmp(&(desc(b.0), desc(b.1), &b.2)));
    ranked.into_iter().map(|(_, _, k)| k).collect()
}

fn resolved(grades: &[Graded<'_>]) -> u64 {
    grades
        .iter()
        .filter(|g| g.0.verdict == Verdict::Resolved)
        .count() as u64
}

/// Per metric: the median of what the pair's sessions introduced, and the
/// share of its resolved sessions that introduced any finding.
fn quality(
    o: &mut At<'_>,
    index: &Index<'_>,
    grades: &[Graded<'_>],
) -> BTreeMap<String, AgentQuality> {
    let mut out = BTreeMap::new();
    for metric in &index.quality.metrics {
        let figures: Vec<(Graded<'_>, Option<u64>)> = grades
            .iter()
            .filter_map(|g| {
                let f = index.quality.get(&g.0.session, metric)?;
                Some((*g, f.introduced()))
            })
            .collect();
        let measured: Vec<Graded<'_>> = figures
            .iter()
            .filter(|(_, n)| n.is_some())
            .map(|(g, _)| *g)
            .collect();
        let failed: Vec<Graded<'_>> = figures
            .iter()
            .filter(|(_, n)| n.is_none())
            .map(|(g, _)| *g)
            .collect();
        let resolved: Vec<(Graded<'_>, u64)> = figures
            .iter()
            .filter(|(g, _)| g.0.verdict == Verdict::Resolved)
            .filter_map(|(g, n)| Some((*g, (*n)?)))
            .collect();
        let introducing = resolved.iter().filter(|(_, n)| *n > 0).count() as u64;
        let mut values: Vec<u64> = figures.iter().filter_map(|(_, n)| *n).collect();
        let all = Source::grades(&measured);
        let of_resolved = Source::grades(resolved.iter().map(|(g, _)| g));
        let r = resolved.len() as u64;
        let q = o.object(metric, |o| AgentQuality {
            failed: o.count("failed", failed.len() as u64, &Source::grades(&failed)),
            measured: o.count("measured", measured.len() as u64, &all),
            median_introduced: o.float("median_introduced", median(&mut values), &all),
            resolved: o.count("resolved", r, &of_resolved),
            resolved_introducing: o.count("resolved_introducing", introducing, &of_resolved),
            resolved_introducing_share: o.float(
                "resolved_introducing_share",
                (r > 0).then(|| introducing as f64 / r as f64),
                &of_resolved,
            ),
        });
        out.insert((*metric).to_owned(), q);
    }
    out
}

fn not_graded(o: &mut At<'_>, index: &Index<'_>) -> NotGraded {
    let all = Source {
        sessions: index.not_graded.iter().map(|s| s.0.clone()).collect(),
        ..Source::default()
    };
    let total = o.count("total", index.not_graded.len() as u64, &all);
    let by_reason = o.object("by_reason", |o| {
        let mut by_reason: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (session, reason) in &index.not_graded {
            by_reason.entry(reason).or_default().push(session);
        }
        by_reason
            .into_iter()
            .map(|(reason, sessions)| {
                let src = Source {
                    sessions: sessions.iter().map(|s| (*s).to_owned()).collect(),
                    ..Source::default()
                };
                let n = o.count(reason, sessions.len() as u64, &src);
                (reason.to_owned(), n)
            })
            .collect()
    });
    let sessions = index
        .not_graded
        .iter()
        .map(|(s, r)| NotGradedSession {
            session: s.clone(),
            reason: r.clone(),
        })
        .collect();
    NotGraded {
        by_reason,
        sessions,
        total,
    }
}

fn verifier_suspects(index: &Index<'_>) -> Vec<VerifierSuspect> {
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
fn tamper_suspects(index: &Index<'_>) -> Vec<TamperSuspect> {
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
fn not_forgery_checked(index: &Index<'_>) -> Option<Vec<Unchecked>> {
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
fn dataset_verifier(index: &Index<'_>) -> Option<Vec<DatasetReading>> {
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

fn weakly_checked(index: &Index<'_>) -> Option<WeaklyChecked> {
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

fn forger_odds(index: &Index<'_>) -> Option<ForgerOdds> {
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
fn environments(index: &Index<'_>) -> Option<Vec<Environment>> {
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

fn tasks(o: &mut At<'_>, index: &Index<'_>) -> Tasks {
    let released: Vec<_> = index
        .tasks
        .iter()
        .filter(|(t, _)| t.status == TaskStatus::Released)
        .collect();
    let all = Source {
        tasks: released.iter().map(|(_, d)| (*d).to_owned()).collect(),
        ..Source::default()
    };
    let certified = released.iter().filter(|(t, _)| t.certified).count() as u64;
    Tasks {
        released: o.count("released", released.len() as u64, &all),
        certified: o.count("certified", certified, &all),
        uncertified: o.count("uncertified", released.len() as u64 - certified, &all),
        uncertified_tasks: released
            .iter()
            .filter(|(t, _)| !t.certified)
            .map(|(t, d)| UncertifiedTask {
                instance_id: t.instance_id.clone(),
                track: t.track.clone(),
                digest: (*d).to_owned(),
                because: t.uncertified_because.clone(),
            })
            .collect(),
    }
}

/// A resolved rate with its Wilson interval, over `grades` less those the
/// infrastructure failed (an API error, an attempt the endpoint failed, a
/// run the executor lost): not the agent's doing, so not in its
/// denominator; `faults.infrastructure` counts them.
fn rate(o: &mut At<'_>, grades: &[Graded<'_>]) -> Rate {
    let grades: Vec<Graded<'_>> = grades
        .iter()
        .filter(|g| g.0.fault != Fault::Infrastructure)
        .cloned()
        .collect();
    let grades = &grades[..];
    let all = Source::grades(grades);
    let n = grades.len() as u64;
    let k = resolved(grades);
    let interval = wilson(k, n);
    Rate {
        n: o.count("n", n, &all),
        resolved: o.count("resolved", k, &all),
        resolved_rate: o.float("resolved_rate", (n > 0).then(|| k as f64 / n as f64), &all),
        resolved_rate_lo: o.float("resolved_rate_lo", interval.map(|i| i.0), &all),
        resolved_rate_hi: o.float("resolved_rate_hi", interval.map(|i| i.1), &all),
    }
}

fn agent_summary(
    o: &mut At<'_>,
    index: &Index<'_>,
    agent: &str,
    model: &str,
    grades: &[Graded<'_>],
) -> Agent {
    let all = Source::grades(grades);
    let Rate {
        n,
        resolved,
        resolved_rate,
        resolved_rate_hi,
        resolved_rate_lo,
    } = rate(o, grades);
    let after_rerun = grades
        .iter()
        .filter(|g| g.0.verdict == Verdict::ResolvedAfterRerun)
        .count() as u64;
    let empty = grades
        .iter()
        .filter(|g| index.empty_patch(&g.0.session))
        .count() as u64;
    Agent {
        agent: agent.to_owned(),
        model: model.to_owned(),
        n,
        resolved,
        resolved_rate,
        resolved_rate_hi,
        resolved_rate_lo,
        resolved_after_rerun: o.count("resolved_after_rerun", after_rerun, &all),
        arms: o.object("arms", |o| counts(o, Arm::ALL, grades, |g| g.0.arm)),
        verdicts: o.object("verdicts", |o| {
            counts(o, &Verdict::GRADED, grades, |g| g.0.verdict)
        }),
        faults: o.object("faults", |o| counts(o, Fault::ALL, grades, |g| g.0.fault)),
        empty_patch: o.count("empty_patch", empty, &all),
        by_track: o.object("by_track", |o| {
            let mut tracks: BTreeMap<&str, Vec<Graded<'_>>> =
                TRACKS.iter().map(|t| (*t, Vec::new())).collect();
            for g in grades {
                tracks.entry(g.0.track.as_str()).or_default().push(g);
            }
            tracks
                .into_iter()
                .map(|(track, gs)| (track.to_owned(), o.object(track, |o| rate(o, &gs))))
                .collect()
        }),
        leaderboard: o.object("leaderboard", |o| leaderboard(o, index, grades)),
        turns: o.object("turns", |o| turns(o, index, grades)),
        tokens: o.object("tokens", |o| tokens(o, index, grades)),
        cost_usd: cost(o, index, model, grades),
        run: o.object("run", |o| run_facts(o, index, grades)),
        quality: (!index.quality.metrics.is_empty())
            .then(|| o.object("quality", |o| quality(o, index, grades))),
        judge: (!index.judged.judges.is_empty())
            .then(|| o.object("judge", |o| judge_summary::agent(o, index, grades))),
    }
}

fn leaderboard(o: &mut At<'_>, index: &Index<'_>, grades: &[Graded<'_>]) -> Leaderboard {
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
                .map(|g| g.1.clone())
                .collect(),
            tasks: self.tasks.iter().map(|d| (*d).to_owned()).collect(),
            left_out: self.left_out.iter().map(|g| g.1.clone()).collect(),
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
pub(super) fn pass_at_k(n: u64, c: u64, k: u64) -> f64 {
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

/// How many of `grades` carry each of `values` (every value listed, zero
/// or not), keyed by its word.
fn counts<'g, T: Copy + PartialEq + std::fmt::Display>(
    o: &mut At<'_>,
    values: &[T],
    grades: &[Graded<'g>],
    key: impl Fn(Graded<'g>) -> T,
) -> BTreeMap<String, u64> {
    let all = Source::grades(grades);
    values
        .iter()
        .map(|v| {
            let n = grades.iter().filter(|g| key(g) == *v).count() as u64;
            let word = v.to_string();
            let n = o.count(&word, n, &all);
            (word, n)
        })
        .collect()
}

fn facts<'a>(index: &Index<'a>, g: &Graded<'_>) -> Option<&'a RunFacts> {
    index.sessions.get(g.0.session.as_str()).map(|s| &s.facts)
}

fn turns(o: &mut At<'_>, index: &Index<'_>, grades: &[Graded<'_>]) -> Mean {
    let with_turns: Vec<(Graded<'_>, u64)> = grades
        .iter()
        .filter_map(|g| Some((*g, facts(index, g)?.turns?)))
        .collect();
    let reporting = Source::grades(with_turns.iter().map(|(g, _)| g));
    Mean {
        sessions: o.count("sessions", with_turns.len() as u64, &Source::grades(grades)),
        mean: o.float(
            "mean",
            mean(with_turns.iter().map(|(_, t)| *t as f64)),
            &reporting,
        ),
    }
}

/// The grades whose sessions report tokens, with them.
fn with_tokens<'a>(
    index: &Index<'a>,
    grades: &[Graded<'a>],
) -> Vec<(Graded<'a>, &'a BTreeMap<String, u64>)> {
    grades
        .iter()
        .filter_map(|g| Some((*g, &facts(index, g)?.tokens)))
        .filter(|(_, t)| !t.is_empty())
        .collect()
}

fn tokens(o: &mut At<'_>, index: &Index<'_>, grades: &[Graded<'_>]) -> Tokens {
    let with_tokens = with_tokens(index, grades);
    let reporting = Source::grades(with_tokens.iter().map(|(g, _)| g));
    let totals = with_tokens
        .iter()
        .map(|(_, t)| t.values().sum::<u64>() as f64);
    Tokens {
        sessions: o.count(
            "sessions",
            with_tokens.len() as u64,
            &Source::grades(grades),
        ),
        mean_total: o.float("mean_total", mean(totals), &reporting),
        mean_by_kind: o.object("mean_by_kind", |o| {
            let mut kinds: BTreeMap<&str, Vec<(Graded<'_>, u64)>> = BTreeMap::new();
            for (g, tokens) in &with_tokens {
                for (kind, n) in *tokens {
                    kinds.entry(kind).or_default().push((*g, *n));
                }
            }
            kinds
                .into_iter()
                .map(|(kind, values)| {
                    let src = Source::grades(values.iter().map(|(g, _)| g));
                    let m = o.float(kind, mean(values.iter().map(|(_, n)| *n as f64)), &src);
                    (kind.to_owned(), m)
                })
                .collect()
        }),
    }
}

/// What the tokens cost, priced per model id where the transcript says which
/// model used what (`modelUsage`), else by the session's model label; None
/// when no price applies.
fn cost(o: &mut At<'_>, index: &Index<'_>, model: &str, grades: &[Graded<'_>]) -> Option<Cost> {
    let with_tokens = with_tokens(index, grades);
    let by_model = |g: &Graded<'_>| facts(index, g).is_some_and(|f| !f.by_model.is_empty());
    if !index.prices.contains_key(model) && !with_tokens.iter().any(|(g, _)| by_model(g)) {
        return None;
    }
    let all = Source::grades(grades);
    let reporting = Source::grades(with_tokens.iter().map(|(g, _)| g));
    let mut o = o.at("cost_usd");
    let mut unpriced = BTreeSet::new();
    let costs: Vec<f64> = with_tokens
        .iter()
        .map(|(g, _)| match facts(index, g) {
            Some(f) => session_cost(index.prices, model, f, &mut unpriced),
            None => 0.0,
        })
        .collect();
    let total = (!costs.is_empty()).then(|| costs.iter().sum());
    // What the agents said they cost: an observation beside the computed
    // cost, never a substitute for it.
    let reported: Vec<(Graded<'_>, f64)> = grades
        .iter()
        .filter_map(|g| Some((*g, facts(index, g)?.reported_cost_usd?)))
        .collect();
    let src = Source::grades(reported.iter().map(|(g, _)| g));
    let counted: Vec<Graded<'_>> = with_tokens
        .iter()
        .filter(|(g, _)| g.0.fault != Fault::Infrastructure)
        .map(|(g, _)| *g)
        .collect();
    let resolved_counted = resolved(&counted);
    let counted_cost: f64 = with_tokens
        .iter()
        .zip(&costs)
        .filter(|((g, _), _)| g.0.fault != Fault::Infrastructure)
        .map(|(_, c)| c)
        .sum();
    Some(Cost {
        sessions: o.count("sessions", costs.len() as u64, &all),
        total: o.float("total", total, &reporting),
        mean: o.float("mean", mean(costs.iter().copied()), &reporting),
        per_resolved: if resolved_counted > 0 {
            o.float(
                "per_resolved",
                Some(counted_cost / resolved_counted as f64),
                &Source::grades(&counted),
            )
        } else {
            None
        },
        unpriced_kinds: unpriced.into_iter().collect(),
        reported_sessions: o.count("reported_sessions", reported.len() as u64, &all),
        reported_total: o.float(
            "reported_total",
            (!reported.is_empty()).then(|| reported.iter().map(|(_, c)| c).sum()),
            &src,
        ),
    })
}

/// How the agents' runs ended, as their session files and transcripts say
/// (`is_error` counts a claimed error too: whose fault it is, the grades
/// say): each count over the sessions that report the fact.
fn run_facts(o: &mut At<'_>, index: &Index<'_>, grades: &[Graded<'_>]) -> Runs {
    let reporting = |f: &dyn Fn(&RunFacts) -> bool| -> Vec<Graded<'_>> {
        grades
            .iter()
            .filter(|g| facts(index, g).is_some_and(f))
            .copied()
            .collect()
    };
    let all = Source::grades(grades);
    let ended = reporting(&|f| f.ended.is_some());
    let ended = o.object("ended", |o| {
        let mut by: BTreeMap<&str, Vec<Graded<'_>>> = BTreeMap::new();
        for g in &ended {
            if let Some(e) = facts(index, g).and_then(|f| f.ended.as_deref()) {
                by.entry(e).or_default().push(g);
            }
        }
        by.into_iter()
            .map(|(e, gs)| {
                (
                    e.to_owned(),
                    o.count(e, gs.len() as u64, &Source::grades(&gs)),
                )
            })
            .collect()
    });
    let told = reporting(&|f| f.ended_in_error().is_some());
    let errored = reporting(&|f| f.ended_in_error() == Some(true));
    let denied = reporting(&|f| f.permission_denials.is_some());
    let timed = reporting(&|f| f.duration_ms.is_some());
    Runs {
        ended,
        is_error_sessions: o.count("is_error_sessions", told.len() as u64, &all),
        is_error: o.count("is_error", errored.len() as u64, &all),
        permission_denials: o.object("permission_denials", |o| Total {
            sessions: o.count("sessions", denied.len() as u64, &all),
            total: o.count(
                "total",
                denied
                    .iter()
                    .filter_map(|g| facts(index, g)?.permission_denials)
                    .sum(),
                &all,
            ),
        }),
        duration_ms: o.object("duration_ms", |o| Mean {
            sessions: o.count("sessions", timed.len() as u64, &all),
            mean: o.float(
                "mean",
                mean(
                    timed
                        .iter()
                        .filter_map(|g| facts(index, g)?.duration_ms)
                        .map(|d| d as f64),
                ),
                &Source::grades(&timed),
            ),
        }),
    }
}
