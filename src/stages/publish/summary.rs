//! `summary.json`: the aggregates, per agent/model, over the scored arm.
//!
//! While it builds the JSON it records, for every number, what the number
//! was computed from (grade node keys, task digests, session ids): the
//! manifest lists them so an auditor can recompute each number from its
//! grades. A count lists its whole population (the verdict count
//! `ineligible: 0` is a statement about every grade of the group); a mean
//! lists only the sessions that report the measured quantity.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::{Graded, Index, TRACKS, agent_key, round6, wilson};
use crate::stages::records::{Arm, Fault, TaskStatus, Verdict};

/// Bumped when the meaning or shape of summary.json changes.
const SCHEMA: u64 = 1;

/// What one published number was computed from.
#[derive(Clone, Debug, Default)]
pub(super) struct Source {
    pub(super) grades: BTreeSet<String>,
    pub(super) tasks: BTreeSet<String>,
    pub(super) sessions: BTreeSet<String>,
    /// Judge node keys.
    pub(super) readings: BTreeSet<String>,
}

impl Source {
    fn grades<'a>(grades: impl IntoIterator<Item = &'a Graded<'a>>) -> Self {
        Source {
            grades: grades.into_iter().map(|g| g.1.clone()).collect(),
            ..Source::default()
        }
    }
}

/// Path (see [`segment`]) -> source.
pub(super) type Sources = BTreeMap<String, Source>;

/// One step of a number's path: `.key` for a plain key (lowercase letters,
/// digits, `_`), `[key]` for any other key with `%`, `[` and `]`
/// percent-encoded, `[i]` for an array index. Paths start at `summary`.
pub(super) fn segment(key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if plain {
        format!(".{key}")
    } else {
        format!(
            "[{}]",
            key.replace('%', "%25")
                .replace('[', "%5B")
                .replace(']', "%5D")
        )
    }
}

/// An object under construction at a path, recording the sources of its numbers.
pub(super) struct Obj<'s> {
    path: String,
    map: Map<String, Value>,
    sources: &'s mut Sources,
}

impl<'s> Obj<'s> {
    fn new(path: String, sources: &'s mut Sources) -> Self {
        Obj {
            path,
            map: Map::new(),
            sources,
        }
    }

    fn child_path(&self, key: &str) -> String {
        format!("{}{}", self.path, segment(key))
    }

    pub(super) fn text(&mut self, key: &str, value: impl Into<Value>) {
        self.map.insert(key.to_owned(), value.into());
    }

    pub(super) fn count(&mut self, key: &str, value: u64, source: &Source) {
        self.sources.insert(self.child_path(key), source.clone());
        self.map.insert(key.to_owned(), Value::from(value));
    }

    /// A float (rounded) or null.
    pub(super) fn float(&mut self, key: &str, value: Option<f64>, source: &Source) {
        let value = value.map(round6).filter(|x| x.is_finite());
        if value.is_some() {
            self.sources.insert(self.child_path(key), source.clone());
        }
        self.map
            .insert(key.to_owned(), value.map_or(Value::Null, Value::from));
    }

    /// Builds a nested object at `key`.
    pub(super) fn object(&mut self, key: &str, build: impl FnOnce(&mut Obj<'_>)) {
        let mut child = Obj::new(self.child_path(key), self.sources);
        build(&mut child);
        let map = child.map;
        self.map.insert(key.to_owned(), Value::Object(map));
    }

    fn rate(&mut self, grades: &[Graded<'_>]) {
        let all = Source::grades(grades);
        let n = grades.len() as u64;
        let k = grades
            .iter()
            .filter(|g| g.0.verdict == Verdict::Resolved)
            .count() as u64;
        self.count("n", n, &all);
        self.count("resolved", k, &all);
        self.float("resolved_rate", (n > 0).then(|| k as f64 / n as f64), &all);
        let interval = wilson(k, n);
        self.float("resolved_rate_lo", interval.map(|i| i.0), &all);
        self.float("resolved_rate_hi", interval.map(|i| i.1), &all);
    }
}

/// Builds summary.json and the sources of its numbers.
pub(super) fn summary(index: &Index<'_>) -> (Value, Sources) {
    let mut sources = Sources::new();
    let mut root = Obj::new("summary".to_owned(), &mut sources);
    root.count("schema", SCHEMA, &Source::default());
    root.object("scoring", |o| {
        o.text("arm", Arm::SCORED.as_str());
        o.text("fallback_arm", Arm::CONTRAST.as_str());
        o.text("interval", "Wilson score, 95% (z = 1.959964)");
        o.text("floats", "rounded to 6 decimals");
    });
    root.object("tasks", |o| tasks(o, index));
    root.object("agents", |o| {
        for (agent, model) in index.pairs() {
            let empty = Vec::new();
            let grades = index
                .groups
                .get(&(agent.clone(), model.clone()))
                .unwrap_or(&empty);
            o.object(&agent_key(&agent, &model), |o| {
                agent_summary(o, index, &agent, &model, grades)
            });
        }
    });
    // Agent keys by leaderboard score (then per-attempt rate, then key),
    // best first; pairs without a score last.
    let mut ranked: Vec<(Option<f64>, Option<f64>, String)> = index
        .pairs()
        .into_iter()
        .map(|(agent, model)| {
            let empty = Vec::new();
            let grades = index
                .groups
                .get(&(agent.clone(), model.clone()))
                .unwrap_or(&empty);
            let n = grades.len();
            let k = grades
                .iter()
                .filter(|g| g.0.verdict == Verdict::Resolved)
                .count();
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
    root.text(
        "ranking",
        ranked.into_iter().map(|(_, _, k)| k).collect::<Vec<_>>(),
    );
    if !index.judged.judges.is_empty() {
        root.object("judges", |o| super::judged::judges(o, index));
    }
    root.object("not_graded", |o| {
        let all = Source {
            sessions: index.not_graded.iter().map(|s| s.0.clone()).collect(),
            ..Source::default()
        };
        o.count("total", index.not_graded.len() as u64, &all);
        o.object("by_reason", |o| {
            let mut by_reason: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (session, reason) in &index.not_graded {
                by_reason.entry(reason).or_default().push(session);
            }
            for (reason, sessions) in by_reason {
                let src = Source {
                    sessions: sessions.iter().map(|s| (*s).to_owned()).collect(),
                    ..Source::default()
                };
                o.count(reason, sessions.len() as u64, &src);
            }
        });
        let list: Vec<Value> = index
            .not_graded
            .iter()
            .map(|(s, r)| json!({ "session": s, "reason": r }))
            .collect();
        o.text("sessions", list);
    });
    let suspects: Vec<Value> = index
        .suspects
        .iter()
        .map(|s| {
            json!({
                "session": s.exclude.0.session,
                "instance_id": s.exclude.0.instance_id,
                "track": s.exclude.0.track,
                "task_digest": s.exclude.0.task_digest,
                "agent": s.exclude.0.agent,
                "model": s.exclude.0.model,
                "exclude": s.exclude.0.verdict,
                "keep": s.keep.0.verdict,
                "exclude_grade": s.exclude.1,
                "keep_grade": s.keep.1,
            })
        })
        .collect();
    root.text("verifier_suspects", suspects);
    // Every grade with a tamper suspect, in either arm (docs/verdicts.md).
    let tamper: Vec<Value> = index
        .grades
        .iter()
        .filter(|g| !g.0.tamper.is_empty())
        .map(|g| {
            json!({
                "session": g.0.session,
                "instance_id": g.0.instance_id,
                "agent": g.0.agent,
                "model": g.0.model,
                "arm": g.0.arm,
                "verdict": g.0.verdict,
                "why": g.0.tamper,
                "grade": g.1,
            })
        })
        .collect();
    root.text("tamper_suspects", tamper);
    // How the graded code was confined: `bwrap`, or `none` (unsandboxed).
    let mut sandboxes: Vec<&str> = index
        .grades
        .iter()
        .map(|g| g.0.sandbox.as_str())
        .filter(|s| !s.is_empty())
        .collect();
    sandboxes.sort_unstable();
    sandboxes.dedup();
    root.text(
        "graded_unsandboxed",
        Value::Bool(sandboxes.contains(&"none")),
    );
    // Grades whose run carried no canary (docs/security.md), by why: their
    // verdicts are not forgery-checked. Absent when every grade was.
    let mut unchecked: BTreeMap<&str, u64> = BTreeMap::new();
    for g in &index.grades {
        if let Some(why) = &g.0.unchecked {
            *unchecked.entry(why.as_str()).or_default() += 1;
        }
    }
    if !unchecked.is_empty() {
        let list: Vec<Value> = unchecked
            .into_iter()
            .map(|(why, grades)| json!({ "why": why, "grades": grades }))
            .collect();
        root.text("not_forgery_checked", list);
    }
    // The images tasks were certified and sessions graded in, when any were
    // (docker); absent when everything ran locally.
    let environments: BTreeSet<(&str, &str)> = index
        .tasks
        .iter()
        .map(|(t, _)| (&t.executor, &t.image))
        .chain(index.grades.iter().map(|g| (&g.0.executor, &g.0.image)))
        .filter_map(|(e, i)| Some((e.as_deref()?, i.as_deref()?)))
        .collect();
    if !environments.is_empty() {
        let list: Vec<Value> = environments
            .into_iter()
            .map(|(executor, image)| json!({ "executor": executor, "image": image }))
            .collect();
        root.text("environments", list);
    }
    let value = Value::Object(root.map);
    (value, sources)
}

/// Pretty JSON with a final newline.
pub(super) fn to_bytes(value: &Value) -> Vec<u8> {
    format!("{value:#}\n").into_bytes()
}

fn tasks(o: &mut Obj<'_>, index: &Index<'_>) {
    let released: Vec<_> = index
        .tasks
        .iter()
        .filter(|(t, _)| t.status == TaskStatus::Released)
        .collect();
    let digests = |f: &dyn Fn(bool) -> bool| Source {
        tasks: released
            .iter()
            .filter(|(t, _)| f(t.certified))
            .map(|(_, d)| (*d).to_owned())
            .collect(),
        ..Source::default()
    };
    let all = digests(&|_| true);
    o.count("released", released.len() as u64, &all);
    o.count(
        "certified",
        released.iter().filter(|(t, _)| t.certified).count() as u64,
        &all,
    );
    o.count(
        "uncertified",
        released.iter().filter(|(t, _)| !t.certified).count() as u64,
        &all,
    );
    let uncertified: Vec<Value> = released
        .iter()
        .filter(|(t, _)| !t.certified)
        .map(|(t, d)| {
            json!({
                "instance_id": t.instance_id,
                "track": t.track,
                "digest": d,
                "because": t.uncertified_because,
            })
        })
        .collect();
    o.text("uncertified_tasks", uncertified);
}

fn agent_summary(
    o: &mut Obj<'_>,
    index: &Index<'_>,
    agent: &str,
    model: &str,
    grades: &[Graded<'_>],
) {
    let all = Source::grades(grades);
    o.text("agent", agent);
    o.text("model", model);
    o.rate(grades);
    o.count(
        "resolved_after_rerun",
        grades
            .iter()
            .filter(|g| g.0.verdict == Verdict::ResolvedAfterRerun)
            .count() as u64,
        &all,
    );
    o.object("arms", |o| {
        counts(o, Arm::ALL, grades, |g| g.0.arm);
    });
    o.object("verdicts", |o| {
        counts(o, &Verdict::GRADED, grades, |g| g.0.verdict);
    });
    o.object("faults", |o| {
        counts(o, Fault::ALL, grades, |g| g.0.fault);
    });
    let empty = grades
        .iter()
        .filter(|g| {
            index
                .metrics
                .get(g.0.session.as_str())
                .is_some_and(|m| m.empty_patch)
        })
        .count();
    o.count("empty_patch", empty as u64, &all);
    o.object("by_track", |o| {
        let mut tracks: BTreeMap<&str, Vec<Graded<'_>>> =
            TRACKS.iter().map(|t| (*t, Vec::new())).collect();
        for g in grades {
            tracks.entry(g.0.track.as_str()).or_default().push(g);
        }
        for (track, gs) in tracks {
            o.object(track, |o| o.rate(&gs));
        }
    });
    o.object("leaderboard", |o| {
        let board = Board::new(index, grades);
        o.count("tasks", board.tasks.len() as u64, &board.source());
        o.count("attempted", board.attempted.len() as u64, &board.source());
        o.count("resolved", board.resolved, &board.source());
        let n = board.tasks.len() as u64;
        let frac = |k: u64| (n > 0).then(|| k as f64 / n as f64);
        o.float(
            "coverage",
            frac(board.attempted.len() as u64),
            &board.source(),
        );
        o.float("score", frac(board.resolved), &board.source());
        let interval = wilson(board.resolved, n);
        o.float("score_lo", interval.map(|i| i.0), &board.source());
        o.float("score_hi", interval.map(|i| i.1), &board.source());
    });
    usage(o, index, model, grades);
    o.object("run", |o| run_facts(o, index, grades));
    if !index.judged.judges.is_empty() {
        o.object("judge", |o| super::judged::agent(o, index, grades));
    }
}

/// A pair's standing over the whole certified task set of the tracks it
/// was scored on, as a leaderboard counts it: every certified task of those
/// tracks is in the denominator, and a task it never attempted counts as
/// unresolved. A task attempted more than once counts by its first attempt
/// (lowest session id): one attempt per task, as a leaderboard run has.
pub(super) struct Board<'a> {
    /// Digests of the certified tasks of the pair's tracks.
    pub(super) tasks: BTreeSet<&'a str>,
    /// Task digest -> the first attempt's grade.
    pub(super) attempted: BTreeMap<&'a str, Graded<'a>>,
    pub(super) resolved: u64,
}

impl<'a> Board<'a> {
    pub(super) fn new(index: &Index<'a>, grades: &[Graded<'a>]) -> Self {
        let tracks: BTreeSet<&str> = grades.iter().map(|g| g.0.track.as_str()).collect();
        let tasks: BTreeSet<&'a str> = index
            .tasks
            .iter()
            .filter(|(t, _)| t.certified && t.status == TaskStatus::Released)
            .filter(|(t, _)| tracks.contains(t.track.as_str()))
            .map(|(_, d)| *d)
            .collect();
        let mut attempted: BTreeMap<&'a str, Graded<'a>> = BTreeMap::new();
        for g in grades {
            if let Some(d) = tasks.get(g.0.task_digest.as_str()) {
                attempted
                    .entry(d)
                    .and_modify(|first| {
                        if g.0.session < first.0.session {
                            *first = g;
                        }
                    })
                    .or_insert(g);
            }
        }
        let resolved = attempted
            .values()
            .filter(|g| g.0.verdict == Verdict::Resolved)
            .count() as u64;
        Board {
            tasks,
            attempted,
            resolved,
        }
    }

    /// The denominator's tasks alone.
    fn task_source(&self) -> Source {
        Source {
            tasks: self.tasks.iter().map(|d| (*d).to_owned()).collect(),
            ..Source::default()
        }
    }

    /// The tasks and the attempts that count.
    fn source(&self) -> Source {
        Source {
            grades: self.attempted.values().map(|g| g.1.clone()).collect(),
            ..self.task_source()
        }
    }

    /// resolved / tasks; None without a task.
    pub(super) fn score(&self) -> Option<f64> {
        (!self.tasks.is_empty()).then(|| self.resolved as f64 / self.tasks.len() as f64)
    }
}

/// Counts of `key(grade)`, every one of `known` present, others added.
/// How many of `grades` carry each of `values` (every value listed, zero
/// or not), keyed by its word.
fn counts<'g, T: Copy + PartialEq + std::fmt::Display>(
    o: &mut Obj<'_>,
    values: &[T],
    grades: &[Graded<'g>],
    key: impl Fn(Graded<'g>) -> T,
) {
    let all = Source::grades(grades);
    let counts: BTreeMap<String, u64> = values
        .iter()
        .map(|v| {
            let n = grades.iter().filter(|g| key(g) == *v).count();
            (v.to_string(), n as u64)
        })
        .collect();
    for (k, c) in counts {
        o.count(&k, c, &all);
    }
}

/// Turns, tokens and cost, over the sessions that report them.
fn usage(o: &mut Obj<'_>, index: &Index<'_>, model: &str, grades: &[Graded<'_>]) {
    let all = Source::grades(grades);
    let facts = |g: &Graded<'_>| index.sessions.get(g.0.session.as_str()).map(|s| &s.facts);
    let with_turns: Vec<(Graded<'_>, u64)> = grades
        .iter()
        .filter_map(|g| Some((*g, facts(g)?.turns?)))
        .collect();
    o.object("turns", |o| {
        o.count("sessions", with_turns.len() as u64, &all);
        let mean = mean(with_turns.iter().map(|(_, t)| *t as f64));
        o.float(
            "mean",
            mean,
            &Source::grades(with_turns.iter().map(|(g, _)| g)),
        );
    });
    let with_tokens: Vec<(Graded<'_>, &BTreeMap<String, u64>)> = grades
        .iter()
        .filter_map(|g| Some((*g, &facts(g)?.tokens)))
        .filter(|(_, t)| !t.is_empty())
        .collect();
    let reporting = Source::grades(with_tokens.iter().map(|(g, _)| g));
    o.object("tokens", |o| {
        o.count("sessions", with_tokens.len() as u64, &all);
        let totals = with_tokens
            .iter()
            .map(|(_, t)| t.values().sum::<u64>() as f64);
        o.float("mean_total", mean(totals), &reporting);
        o.object("mean_by_kind", |o| {
            let mut kinds: BTreeMap<&str, Vec<(Graded<'_>, u64)>> = BTreeMap::new();
            for (g, tokens) in &with_tokens {
                for (kind, n) in *tokens {
                    kinds.entry(kind).or_default().push((*g, *n));
                }
            }
            for (kind, values) in kinds {
                let src = Source::grades(values.iter().map(|(g, _)| g));
                o.float(kind, mean(values.iter().map(|(_, n)| *n as f64)), &src);
            }
        });
    });
    // Priced per model id where the transcript says which model used what
    // (`modelUsage`), else by the session's model label.
    let by_model = |g: &Graded<'_>| facts(g).is_some_and(|f| !f.by_model.is_empty());
    if !index.prices.contains_key(model) && !with_tokens.iter().any(|(g, _)| by_model(g)) {
        o.text("cost_usd", Value::Null);
        return;
    }
    o.object("cost_usd", |o| {
        let mut unpriced = BTreeSet::new();
        let costs: Vec<f64> = with_tokens
            .iter()
            .map(|(g, _)| match facts(g) {
                Some(f) => super::session_cost(index.prices, model, f, &mut unpriced),
                None => 0.0,
            })
            .collect();
        let total = (!costs.is_empty()).then(|| costs.iter().sum());
        o.count("sessions", costs.len() as u64, &all);
        o.float("total", total, &reporting);
        o.float("mean", mean(costs.iter().copied()), &reporting);
        o.text("unpriced_kinds", unpriced.into_iter().collect::<Vec<_>>());
        // What the agents said they cost: an observation beside the computed
        // cost, never a substitute for it.
        let reported: Vec<(Graded<'_>, f64)> = grades
            .iter()
            .filter_map(|g| Some((*g, facts(g)?.reported_cost_usd?)))
            .collect();
        let src = Source::grades(reported.iter().map(|(g, _)| g));
        o.count("reported_sessions", reported.len() as u64, &all);
        o.float(
            "reported_total",
            (!reported.is_empty()).then(|| reported.iter().map(|(_, c)| c).sum()),
            &src,
        );
    });
}

/// How the agents' runs ended, as their session files and transcripts say:
/// each count over the sessions that report the fact.
fn run_facts(o: &mut Obj<'_>, index: &Index<'_>, grades: &[Graded<'_>]) {
    let facts = |g: &Graded<'_>| index.sessions.get(g.0.session.as_str()).map(|s| &s.facts);
    let reporting = |f: &dyn Fn(&crate::stages::records::RunFacts) -> bool| -> Vec<Graded<'_>> {
        grades
            .iter()
            .filter(|g| facts(g).is_some_and(f))
            .copied()
            .collect()
    };
    let all = Source::grades(grades);
    let ended = reporting(&|f| f.ended.is_some());
    o.object("ended", |o| {
        let mut by: BTreeMap<&str, Vec<Graded<'_>>> = BTreeMap::new();
        for g in &ended {
            if let Some(e) = facts(g).and_then(|f| f.ended.as_deref()) {
                by.entry(e).or_default().push(g);
            }
        }
        for (e, gs) in by {
            o.count(e, gs.len() as u64, &Source::grades(&gs));
        }
    });
    let told = reporting(&|f| f.is_error.is_some());
    let errored = reporting(&|f| f.is_error == Some(true));
    o.count("is_error_sessions", told.len() as u64, &all);
    o.count("is_error", errored.len() as u64, &all);
    let denied = reporting(&|f| f.permission_denials.is_some());
    o.object("permission_denials", |o| {
        o.count("sessions", denied.len() as u64, &all);
        let total: u64 = denied
            .iter()
            .filter_map(|g| facts(g)?.permission_denials)
            .sum();
        o.count("total", total, &all);
    });
    let timed = reporting(&|f| f.duration_ms.is_some());
    o.object("duration_ms", |o| {
        o.count("sessions", timed.len() as u64, &all);
        let values = timed.iter().filter_map(|g| facts(g)?.duration_ms);
        o.float(
            "mean",
            mean(values.map(|d| d as f64)),
            &Source::grades(&timed),
        );
    });
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0u64), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}
