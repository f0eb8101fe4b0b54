//! Assembles [`Summary`] (summary.json): the aggregates, per agent/model,
//! over the scored arm, and the sources of each number (see [`super::sources`]).
//! The judges' part is in `judge_summary`.

use std::collections::{BTreeMap, BTreeSet};

use super::index::{Graded, Index};
use super::judge_summary;
use super::model::{
    Agent, AgentQuality, Cost, Mean, NotGraded, NotGradedSession, Rate, Runs, Scoring, Summary,
    Tasks, Tokens, Total, UncertifiedTask,
};
use super::sources::{At, Name, Source, Sources};
use super::stats::{agent_key, mean, session_cost, wilson};
use crate::model::records::{Arm, Fault, RunFacts, TaskStatus, Verdict};
use crate::model::rules::quality::median;

#[cfg(test)]
pub(super) use super::leaderboard::pass_at_k;
use super::leaderboard::{Board, leaderboard, resolved};
use super::summary_checks::{
    dataset_verifier, environments, forger_odds, not_forgery_checked, tamper_suspects,
    verifier_suspects, weakly_checked,
};

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
        sessions: index
            .not_graded
            .iter()
            .map(|s| Name::from(s.0.as_str()))
            .collect(),
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
                    sessions: sessions.iter().map(|s| Name::from(*s)).collect(),
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

fn tasks(o: &mut At<'_>, index: &Index<'_>) -> Tasks {
    let released: Vec<_> = index
        .tasks
        .iter()
        .filter(|(t, _)| t.status == TaskStatus::Released)
        .collect();
    let all = Source {
        tasks: released.iter().map(|(_, d)| Name::from(*d)).collect(),
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
