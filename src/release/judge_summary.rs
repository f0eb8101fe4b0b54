//! Assembles the judges' part of [`super::model::Summary`]: `judges` (per
//! judge, its settings and judge-wide numbers) and `agents[…].judge` (per
//! pair, each judge's readings of its sessions). The definitions are in
//! [`super::judged`].

use std::collections::{BTreeMap, BTreeSet};

use assay_judge::{Criterion, Mode};

use super::index::{Graded, Index};
use super::judged::{Position, Read, Sample, Tally, singles};
use super::model::{
    AgentJudge, Agreement, CriterionMean, Flag, Inconsistency, Judge, JudgeTokens, Pairwise, Quotes,
};
use super::sources::{At, Source};
use super::stats::{mean, mean_interval};
use crate::model::records::JudgeOutcome;

/// How many `keys` there are, with them as the source.
fn count_readings(o: &mut At<'_>, name: &str, keys: Vec<&str>) -> u64 {
    o.count(name, keys.len() as u64, &Source::readings(keys))
}

fn rate(k: u64, n: u64) -> Option<f64> {
    (n > 0).then(|| k as f64 / n as f64)
}

fn quotes(o: &mut At<'_>, t: &Tally<'_>) -> Quotes {
    let all = Source::readings(t.keys.iter().copied());
    Quotes {
        scores: o.count("scores", t.scores, &all),
        quoted: o.count("quoted", t.quoted, &all),
        unverified: o.count("unverified", t.unverified, &all),
        unverified_rate: o.float("unverified_rate", rate(t.unverified, t.quoted), &all),
        low_scores: o.count("low_scores", t.low, &all),
        missing: o.count("missing", t.missing, &all),
        missing_rate: o.float("missing_rate", rate(t.missing, t.low), &all),
    }
}

fn agreement(o: &mut At<'_>, t: &Tally<'_>) -> Agreement {
    let agree = Source::readings(t.agree_keys.iter().copied());
    Agreement {
        pairs: o.count("pairs", t.agree_pairs, &agree),
        agreeing: o.count("agreeing", t.agreeing, &agree),
        rate: o.float("rate", rate(t.agreeing, t.agree_pairs), &agree),
    }
}

/// `summary.agents[…].judge`: one object per judge that ran.
pub(super) fn agent(
    o: &mut At<'_>,
    index: &Index<'_>,
    grades: &[Graded<'_>],
) -> BTreeMap<String, AgentJudge> {
    let sessions: BTreeSet<&str> = grades.iter().map(|g| g.0.session.as_str()).collect();
    let mut out = BTreeMap::new();
    for j in index.judged.active() {
        let reads = index.judged.readings(&j.name);
        let judged = o.object(&j.name, |o| agent_judge(o, reads, &sessions));
        out.insert(j.name.clone(), judged);
    }
    out
}

fn agent_judge(o: &mut At<'_>, reads: &[Read<'_>], sessions: &BTreeSet<&str>) -> AgentJudge {
    let scored: Vec<(&str, Vec<Sample<'_>>)> = sessions
        .iter()
        .map(|s| (*s, singles(reads, s)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let used = Source::readings(scored.iter().flat_map(|(_, v)| v.iter().map(|(k, _)| *k)));
    let mine: Vec<Read<'_>> = reads
        .iter()
        .filter(|(r, _)| r.sessions.iter().any(|s| sessions.contains(s.as_str())))
        .copied()
        .collect();
    let no_answer: Vec<&str> = mine
        .iter()
        .filter(|(r, _)| r.outcome == JudgeOutcome::NoUsableAnswer)
        .map(|(_, k)| *k)
        .collect();
    let tally = Tally::of(&mine, Some(sessions));
    let pair_keys = Source::readings(
        mine.iter()
            .filter(|(r, _)| r.mode == Mode::Pairwise && r.reading.is_some())
            .map(|(_, k)| *k),
    );
    AgentJudge {
        sessions: o.count("sessions", scored.len() as u64, &used),
        criteria: o.object("criteria", |o| {
            Criterion::ALL
                .iter()
                .map(|c| {
                    let values: Vec<f64> = scored
                        .iter()
                        .filter_map(|(_, v)| {
                            mean(
                                v.iter()
                                    .filter_map(|(_, m)| m.get(c))
                                    .map(|x| f64::from(*x)),
                            )
                        })
                        .collect();
                    let (m, interval) = mean_interval(&values);
                    let value = o.object(c.name(), |o| CriterionMean {
                        n: o.count("n", values.len() as u64, &used),
                        mean: o.float("mean", m, &used),
                        lo: o.float("lo", interval.map(|i| i.0), &used),
                        hi: o.float("hi", interval.map(|i| i.1), &used),
                    });
                    (c.name().to_owned(), value)
                })
                .collect()
        }),
        no_usable_answer: o.count(
            "no_usable_answer",
            no_answer.len() as u64,
            &Source::readings(no_answer),
        ),
        quotes: o.object("quotes", |o| quotes(o, &tally)),
        sample_agreement: o.object("sample_agreement", |o| agreement(o, &tally)),
        pairwise: o.object("pairwise", |o| Pairwise {
            appearances: o.count("appearances", tally.appearances, &pair_keys),
            preferred: o.count("preferred", tally.preferred, &pair_keys),
            preferred_rate: o.float(
                "preferred_rate",
                rate(tally.preferred, tally.appearances),
                &pair_keys,
            ),
        }),
    }
}

/// `summary.judges`: per judge, its settings and the judge-wide numbers.
pub(super) fn judges(o: &mut At<'_>, index: &Index<'_>) -> BTreeMap<String, Judge> {
    let agents: BTreeMap<&str, (&str, &str)> = index
        .groups
        .values()
        .flatten()
        .map(|g| {
            (
                g.0.session.as_str(),
                (g.0.agent.as_str(), g.0.model.as_str()),
            )
        })
        .collect();
    let mut out = BTreeMap::new();
    for j in index.judged.judges {
        let reads = index.judged.readings(&j.name);
        let none = Source::default();
        let of = |outcome: JudgeOutcome| -> Vec<&str> {
            reads
                .iter()
                .filter(|(r, _)| r.outcome == outcome)
                .map(|(_, k)| *k)
                .collect()
        };
        let every = Source::readings(reads.iter().map(|(_, k)| *k));
        let tally = Tally::of(reads, None);
        let position = Position::of(reads);
        let judge = o.object(&j.name, |o| Judge {
            api: j.api.clone(),
            model: j.model.clone(),
            samples: o.count("samples", u64::from(j.samples), &none),
            pairwise: j.pairwise,
            seed: o.count("seed", j.seed, &none),
            settings_digest: j.settings_digest.clone(),
            skipped: j.skipped.clone(),
            interval: "Student t 95% over sessions (each the mean of its samples), clamped to 1-5"
                .to_owned(),
            readings: count_readings(o, "readings", of(JudgeOutcome::Reading)),
            no_usable_answer: count_readings(
                o,
                "no_usable_answer",
                of(JudgeOutcome::NoUsableAnswer),
            ),
            not_judged: count_readings(o, "not_judged", of(JudgeOutcome::NotJudged)),
            tokens: o.object("tokens", |o| JudgeTokens {
                input: o.count(
                    "input",
                    reads.iter().map(|(r, _)| r.usage.input_tokens).sum(),
                    &every,
                ),
                output: o.count(
                    "output",
                    reads.iter().map(|(r, _)| r.usage.output_tokens).sum(),
                    &every,
                ),
            }),
            quotes: o.object("quotes", |o| quotes(o, &tally)),
            sample_agreement: o.object("sample_agreement", |o| agreement(o, &tally)),
            position_inconsistency: o.object("position_inconsistency", |o| {
                let src = Source::readings(position.keys.iter().copied());
                Inconsistency {
                    pairs: o.count("pairs", position.pairs, &src),
                    inconsistent: o.count("inconsistent", position.flips, &src),
                    rate: o.float("rate", rate(position.flips, position.pairs), &src),
                }
            }),
            flagged: flagged(reads, &agents),
        });
        out.insert(j.name.clone(), judge);
    }
    out
}

/// Every quote flag of every reading, in reading order.
fn flagged(reads: &[Read<'_>], agents: &BTreeMap<&str, (&str, &str)>) -> Vec<Flag> {
    let mut flagged = Vec::new();
    for (r, key) in reads {
        let Some(reading) = &r.reading else { continue };
        for (flag, list) in [
            ("missing_quote", &reading.missing_quotes),
            ("unverified_quote", &reading.unverified_quotes),
        ] {
            for f in list {
                let session = r.sessions.get(f.slot).map(String::as_str).unwrap_or("");
                let (agent, model) = agents.get(session).copied().unwrap_or(("", ""));
                flagged.push(Flag {
                    flag: flag.to_owned(),
                    session: session.to_owned(),
                    agent: agent.to_owned(),
                    model: model.to_owned(),
                    instance_id: r.instance_id.clone(),
                    track: r.track.clone(),
                    mode: r.mode,
                    sample: r.sample,
                    criterion: f.criterion.name().to_owned(),
                    label: f.label.as_str().to_owned(),
                    reading: (*key).to_owned(),
                });
            }
        }
    }
    flagged
}
