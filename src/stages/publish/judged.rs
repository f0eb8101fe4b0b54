//! The judges' part of the release: what summary.json, results.csv and
//! report.html say about the readings. Like the rest of [`super::publish`],
//! a pure function of its input, whatever order the readings come in.
//!
//! Definitions (docs/judge.md "In the release"):
//! - a session's score on a criterion is the mean over its *single* readings
//!   (one per sample) of that criterion; an agent/model's mean is the mean
//!   of its scored sessions' scores, with a Student t 95% interval over
//!   sessions (`mean ± t(0.975, n−1)·s/√n`, `s` the sample standard
//!   deviation; none for n < 2), clamped to the 1–5 scale;
//! - sample agreement: over every pair of single readings of one session
//!   (two samples) and every criterion, the share giving the same score;
//! - position inconsistency: over every (pair, sample) read in both orders,
//!   the share whose preferred session flips when the order flips;
//! - quotes: over every score of every reading (single and pairwise), the
//!   share of quoted scores whose quote is not in the patch (`unverified`),
//!   and of scores ≤ 3 that carry no quote (`missing`);
//! - a reading with `no_usable_answer` has no score and is only counted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use assay_judge::{Criterion, Mode};
use serde_json::{Value, json};

use super::html::esc;
use super::summary::{Obj, Source};
use super::{Graded, Index};
use crate::stages::judge::{JudgeInfo, JudgeOutcome, JudgeRecord};

/// One reading with its judge node key.
type Read<'a> = (&'a JudgeRecord, &'a str);

/// The readings, by judge, sorted.
pub(crate) struct Judged<'a> {
    pub(crate) judges: &'a [JudgeInfo],
    by_judge: BTreeMap<&'a str, Vec<Read<'a>>>,
}

impl<'a> Judged<'a> {
    pub(super) fn new(
        judges: &'a [JudgeInfo],
        readings: &'a [(String, JudgeRecord, String)],
    ) -> Self {
        let mut by_judge: BTreeMap<&str, Vec<Read<'a>>> = BTreeMap::new();
        for (judge, record, key) in readings {
            by_judge
                .entry(judge.as_str())
                .or_default()
                .push((record, key.as_str()));
        }
        for list in by_judge.values_mut() {
            list.sort_by(|a, b| {
                (&a.0.sessions, &a.0.order, a.0.sample, a.1).cmp(&(
                    &b.0.sessions,
                    &b.0.order,
                    b.0.sample,
                    b.1,
                ))
            });
        }
        Judged { judges, by_judge }
    }

    /// `{name: settings digest}` for the manifest.
    pub(super) fn settings_digests(&self) -> Value {
        let map: BTreeMap<&str, &str> = self
            .judges
            .iter()
            .map(|j| (j.name.as_str(), j.settings_digest.as_str()))
            .collect();
        json!(map)
    }

    fn readings(&self, judge: &str) -> &[Read<'a>] {
        self.by_judge.get(judge).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Judges whose nodes were laid out.
    fn active(&self) -> impl Iterator<Item = &'a JudgeInfo> + '_ {
        self.judges.iter().filter(|j| j.skipped.is_none())
    }
}

/// One single reading's scores by criterion, with its judge node key.
type Sample<'a> = (&'a str, BTreeMap<Criterion, u8>);

/// The single readings of `session` that gave scores.
fn singles<'a>(reads: &[Read<'a>], session: &str) -> Vec<Sample<'a>> {
    reads
        .iter()
        .filter(|(r, _)| r.mode == Mode::Single && r.sessions.first().is_some_and(|s| s == session))
        .filter_map(|(r, key)| {
            let review = r.reading.as_ref()?.reviews.first()?;
            Some((
                *key,
                review
                    .scores
                    .iter()
                    .map(|s| (s.criterion, s.score))
                    .collect(),
            ))
        })
        .collect()
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The mean and its t 95% interval (clamped to 1–5), see the module docs.
pub(crate) fn mean_interval(values: &[f64]) -> (Option<f64>, Option<(f64, f64)>) {
    let Some(m) = mean(values) else {
        return (None, None);
    };
    let n = values.len();
    if n < 2 {
        return (Some(m), None);
    }
    let var = values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64;
    let half = t975((n - 1) as f64) * (var / n as f64).sqrt();
    (Some(m), Some(((m - half).max(1.0), (m + half).min(5.0))))
}

/// Student's t 0.975 quantile with `df` degrees of freedom: the `t` with
/// P(|T| > t) = 0.05, found by bisection on the exact tail
/// `I_{df/(df+t²)}(df/2, 1/2)` (scipy's `t.ppf(0.975, df)` to ~1e-12).
pub(crate) fn t975(df: f64) -> f64 {
    let tail = |t: f64| incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    let (mut lo, mut hi) = (0.0_f64, 1.0e3_f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if tail(mid) > 0.05 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// The regularised incomplete beta function `I_x(a, b)` (Lentz's continued
/// fraction, as in Numerical Recipes' `betai`).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Counts over a set of readings, restricted to the slots of `sessions`
/// (`None`: every slot).
#[derive(Default)]
struct Tally<'a> {
    keys: BTreeSet<&'a str>,
    scores: u64,
    quoted: u64,
    unverified: u64,
    low: u64,
    missing: u64,
    appearances: u64,
    preferred: u64,
    agree_pairs: u64,
    agreeing: u64,
    agree_keys: BTreeSet<&'a str>,
}

impl<'a> Tally<'a> {
    fn of(reads: &[Read<'a>], sessions: Option<&BTreeSet<&str>>) -> Tally<'a> {
        let mut t = Tally::default();
        let counts = |s: &str| sessions.is_none_or(|set| set.contains(s));
        for (r, key) in reads {
            let Some(reading) = &r.reading else { continue };
            let session_of = |slot: usize| r.sessions.get(slot).map(String::as_str);
            for review in &reading.reviews {
                if !session_of(review.slot).is_some_and(counts) {
                    continue;
                }
                t.keys.insert(key);
                for s in &review.scores {
                    t.scores += 1;
                    t.quoted += u64::from(s.quote.is_some());
                    t.low += u64::from(s.score <= assay_judge::QUOTE_REQUIRED_AT_OR_BELOW);
                }
                let mine = |f: &&assay_judge::QuoteFlag| f.slot == review.slot;
                t.missing += reading.missing_quotes.iter().filter(mine).count() as u64;
                t.unverified += reading.unverified_quotes.iter().filter(mine).count() as u64;
                if reading.mode == Mode::Pairwise {
                    t.appearances += 1;
                    t.preferred += u64::from(reading.preferred == Some(review.slot));
                }
            }
        }
        // Sample agreement, per session over its single readings.
        let mut per_session: BTreeMap<&str, Vec<Sample<'a>>> = BTreeMap::new();
        for (r, _) in reads {
            if let Some(s) = r.sessions.first()
                && r.mode == Mode::Single
                && counts(s)
            {
                per_session
                    .entry(s.as_str())
                    .or_insert_with(|| singles(reads, s));
            }
        }
        for samples in per_session.values() {
            for (i, (ka, a)) in samples.iter().enumerate() {
                for (kb, b) in &samples[i + 1..] {
                    for c in Criterion::ALL {
                        t.agree_pairs += 1;
                        t.agreeing += u64::from(a.get(&c) == b.get(&c));
                    }
                    t.agree_keys.extend([*ka, *kb]);
                }
            }
        }
        t
    }

    fn source(&self) -> Source {
        readings(self.keys.iter().copied())
    }

    fn write(&self, o: &mut Obj<'_>) {
        let all = self.source();
        let rate = |k: u64, n: u64| (n > 0).then(|| k as f64 / n as f64);
        o.object("quotes", |o| {
            o.count("scores", self.scores, &all);
            o.count("quoted", self.quoted, &all);
            o.count("unverified", self.unverified, &all);
            o.float("unverified_rate", rate(self.unverified, self.quoted), &all);
            o.count("low_scores", self.low, &all);
            o.count("missing", self.missing, &all);
            o.float("missing_rate", rate(self.missing, self.low), &all);
        });
        let agree = readings(self.agree_keys.iter().copied());
        o.object("sample_agreement", |o| {
            o.count("pairs", self.agree_pairs, &agree);
            o.count("agreeing", self.agreeing, &agree);
            o.float("rate", rate(self.agreeing, self.agree_pairs), &agree);
        });
    }
}

fn readings<'k>(keys: impl IntoIterator<Item = &'k str>) -> Source {
    Source {
        readings: keys.into_iter().map(str::to_owned).collect(),
        ..Source::default()
    }
}

/// `summary.agents[…].judge`: one object per judge that ran.
pub(super) fn agent(o: &mut Obj<'_>, index: &Index<'_>, grades: &[Graded<'_>]) {
    let sessions: BTreeSet<&str> = grades.iter().map(|g| g.0.session.as_str()).collect();
    for j in index.judged.active() {
        let reads = index.judged.readings(&j.name);
        o.object(&j.name, |o| {
            let scored: Vec<(&str, Vec<Sample<'_>>)> = sessions
                .iter()
                .map(|s| (*s, singles(reads, s)))
                .filter(|(_, v)| !v.is_empty())
                .collect();
            let used = readings(scored.iter().flat_map(|(_, v)| v.iter().map(|(k, _)| *k)));
            o.count("sessions", scored.len() as u64, &used);
            o.object("criteria", |o| {
                for c in Criterion::ALL {
                    let values: Vec<f64> = scored
                        .iter()
                        .filter_map(|(_, v)| {
                            let xs: Vec<f64> = v
                                .iter()
                                .filter_map(|(_, m)| m.get(&c))
                                .map(|x| f64::from(*x))
                                .collect();
                            mean(&xs)
                        })
                        .collect();
                    let (m, interval) = mean_interval(&values);
                    o.object(c.name(), |o| {
                        o.count("n", values.len() as u64, &used);
                        o.float("mean", m, &used);
                        o.float("lo", interval.map(|i| i.0), &used);
                        o.float("hi", interval.map(|i| i.1), &used);
                    });
                }
            });
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
            o.count(
                "no_usable_answer",
                no_answer.len() as u64,
                &readings(no_answer),
            );
            let tally = Tally::of(&mine, Some(&sessions));
            tally.write(o);
            let pair_keys = readings(
                mine.iter()
                    .filter(|(r, _)| r.mode == Mode::Pairwise && r.reading.is_some())
                    .map(|(_, k)| *k),
            );
            o.object("pairwise", |o| {
                o.count("appearances", tally.appearances, &pair_keys);
                o.count("preferred", tally.preferred, &pair_keys);
                o.float(
                    "preferred_rate",
                    (tally.appearances > 0)
                        .then(|| tally.preferred as f64 / tally.appearances as f64),
                    &pair_keys,
                );
            });
        });
    }
}

/// `summary.judges`: per judge, its settings and the judge-wide numbers.
pub(super) fn judges(o: &mut Obj<'_>, index: &Index<'_>) {
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
    for j in index.judged.judges {
        let reads = index.judged.readings(&j.name);
        o.object(&j.name, |o| {
            let none = Source::default();
            o.text("api", j.api.as_str());
            o.text("model", j.model.as_str());
            o.count("samples", u64::from(j.samples), &none);
            o.text("pairwise", j.pairwise);
            o.count("seed", j.seed, &none);
            o.text("settings_digest", j.settings_digest.as_str());
            o.text(
                "skipped",
                j.skipped.clone().map_or(Value::Null, Value::from),
            );
            o.text(
                "interval",
                "Student t 95% over sessions (each the mean of its samples), clamped to 1-5",
            );
            let of = |outcome: JudgeOutcome| -> Vec<&str> {
                reads
                    .iter()
                    .filter(|(r, _)| r.outcome == outcome)
                    .map(|(_, k)| *k)
                    .collect()
            };
            for (name, outcome) in [
                ("readings", JudgeOutcome::Reading),
                ("no_usable_answer", JudgeOutcome::NoUsableAnswer),
                ("not_judged", JudgeOutcome::NotJudged),
            ] {
                let keys = of(outcome);
                o.count(name, keys.len() as u64, &readings(keys));
            }
            let every = readings(reads.iter().map(|(_, k)| *k));
            o.object("tokens", |o| {
                o.count(
                    "input",
                    reads.iter().map(|(r, _)| r.usage.input_tokens).sum(),
                    &every,
                );
                o.count(
                    "output",
                    reads.iter().map(|(r, _)| r.usage.output_tokens).sum(),
                    &every,
                );
            });
            Tally::of(reads, None).write(o);
            position(o, reads);
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
                        flagged.push(json!({
                            "flag": flag,
                            "session": session,
                            "agent": agent,
                            "model": model,
                            "instance_id": r.instance_id,
                            "track": r.track,
                            "mode": r.mode,
                            "sample": r.sample,
                            "criterion": f.criterion.name(),
                            "label": f.label.as_str(),
                            "reading": key,
                        }));
                    }
                }
            }
            o.text("flagged", flagged);
        });
    }
}

/// Pairs read in both orders whose preferred session flips with the order.
fn position(o: &mut Obj<'_>, reads: &[Read<'_>]) {
    let mut by_pair: BTreeMap<(&[String], u32), Vec<Read<'_>>> = BTreeMap::new();
    for read in reads {
        if read.0.mode == Mode::Pairwise && read.0.reading.is_some() {
            by_pair
                .entry((read.0.sessions.as_slice(), read.0.sample))
                .or_default()
                .push(*read);
        }
    }
    let mut keys = BTreeSet::new();
    let (mut pairs, mut flips) = (0u64, 0u64);
    for list in by_pair.values() {
        let first = |order: [usize; 2]| {
            list.iter()
                .find(|(r, _)| r.order == order)
                .and_then(|(r, k)| Some((r.reading.as_ref()?.preferred?, *k)))
        };
        if let (Some((a, ka)), Some((b, kb))) = (first([0, 1]), first([1, 0])) {
            pairs += 1;
            flips += u64::from(a != b);
            keys.extend([ka, kb]);
        }
    }
    let src = readings(keys);
    o.object("position_inconsistency", |o| {
        o.count("pairs", pairs, &src);
        o.count("inconsistent", flips, &src);
        o.float(
            "rate",
            (pairs > 0).then(|| flips as f64 / pairs as f64),
            &src,
        );
    });
}

/// The judge columns of results.csv: with one judge `judge_overall`,
/// `judge_samples`, `judge_missing_quotes`, `judge_unverified_quotes`; with
/// several, each once per judge as `judge_overall:<name>`, ….
pub(super) struct Columns<'i, 'a> {
    index: &'i Index<'a>,
    scored: BTreeSet<&'i str>,
}

const COLUMNS: [&str; 4] = [
    "judge_overall",
    "judge_samples",
    "judge_missing_quotes",
    "judge_unverified_quotes",
];

impl<'i, 'a> Columns<'i, 'a> {
    pub(super) fn new(index: &'i Index<'a>) -> Self {
        let scored = index
            .groups
            .values()
            .flatten()
            .map(|g| g.1.as_str())
            .collect();
        Columns { index, scored }
    }

    pub(super) fn header(&self) -> Vec<String> {
        let judges = self.index.judged.judges;
        judges
            .iter()
            .flat_map(|j| {
                COLUMNS.iter().map(move |c| {
                    if judges.len() == 1 {
                        (*c).to_owned()
                    } else {
                        format!("{c}:{}", j.name)
                    }
                })
            })
            .collect()
    }

    /// The cells of one grade's row: filled on the scored grade of a session.
    pub(super) fn cells(&self, graded: Graded<'_>) -> Vec<String> {
        let mut out = Vec::new();
        for j in self.index.judged.judges {
            if !self.scored.contains(graded.1.as_str()) || j.skipped.is_some() {
                out.extend(COLUMNS.iter().map(|_| String::new()));
                continue;
            }
            let session = graded.0.session.as_str();
            let reads = self.index.judged.readings(&j.name);
            let samples = singles(reads, session);
            let overall: Vec<f64> = samples
                .iter()
                .filter_map(|(_, m)| m.get(&Criterion::Overall))
                .map(|x| f64::from(*x))
                .collect();
            let mine: Vec<Read<'_>> = reads
                .iter()
                .filter(|(r, _)| r.sessions.iter().any(|s| s == session))
                .copied()
                .collect();
            let only: BTreeSet<&str> = [session].into();
            let t = Tally::of(&mine, Some(&only));
            out.push(
                mean(&overall)
                    .map(|m| super::round6(m).to_string())
                    .unwrap_or_default(),
            );
            out.push(samples.len().to_string());
            out.push(t.missing.to_string());
            out.push(t.unverified.to_string());
        }
        out
    }
}

/// The report's judge section, from summary.json.
pub(super) fn html(h: &mut String, summary: &Value) {
    let Some(judges) = summary["judges"].as_object() else {
        return;
    };
    h.push_str("<h2>Judge readings</h2>\n<p>Blind LLM reviews of the graded patches (docs/judge.md). \
        Scores 1–5; a session's score is the mean of its samples; intervals are Student t 95% over sessions.</p>\n");
    let pct = |v: &Value| {
        v.as_f64()
            .map(|x| format!("{:.1}%", x * 100.0))
            .unwrap_or_else(|| "–".to_owned())
    };
    for (name, j) in judges {
        let _ = writeln!(
            h,
            "<h3>{}</h3>\n<p><code>{}</code> model <code>{}</code>, {} sample(s){}, settings digest <code>{}</code>.</p>",
            esc(name),
            esc(j["api"].as_str().unwrap_or_default()),
            esc(j["model"].as_str().unwrap_or_default()),
            j["samples"],
            if j["pairwise"] == Value::Bool(true) {
                ", pairwise in both orders"
            } else {
                ""
            },
            esc(j["settings_digest"].as_str().unwrap_or_default()),
        );
        if let Some(why) = j["skipped"].as_str() {
            let _ = writeln!(h, "<p><strong>Skipped:</strong> {}.</p>", esc(why));
            continue;
        }
        let _ = writeln!(
            h,
            "<p>{} readings, {} without a usable answer, {} not judged. Sample agreement {}; \
             position inconsistency {} of {} pairs ({}); unverified quotes {}; low scores without a quote {}.</p>",
            j["readings"],
            j["no_usable_answer"],
            j["not_judged"],
            pct(&j["sample_agreement"]["rate"]),
            j["position_inconsistency"]["inconsistent"],
            j["position_inconsistency"]["pairs"],
            pct(&j["position_inconsistency"]["rate"]),
            pct(&j["quotes"]["unverified_rate"]),
            pct(&j["quotes"]["missing_rate"]),
        );
        h.push_str("<table>\n<tr><th>agent / model</th><th>sessions</th>");
        for c in Criterion::ALL {
            let _ = write!(h, "<th>{}</th>", c.name());
        }
        h.push_str("<th>unverified quotes</th><th>preferred</th></tr>\n");
        for a in summary["agents"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            let r = &a["judge"][name.as_str()];
            if r.is_null() {
                continue;
            }
            let _ = write!(
                h,
                "<tr><td>{} / {}</td><td class=\"n\">{}</td>",
                esc(a["agent"].as_str().unwrap_or_default()),
                esc(a["model"].as_str().unwrap_or_default()),
                r["sessions"]
            );
            for c in Criterion::ALL {
                let m = &r["criteria"][c.name()];
                let text = match (m["mean"].as_f64(), m["lo"].as_f64(), m["hi"].as_f64()) {
                    (Some(x), Some(lo), Some(hi)) => format!("{x:.2} [{lo:.2}, {hi:.2}]"),
                    (Some(x), _, _) => format!("{x:.2}"),
                    _ => "–".to_owned(),
                };
                let _ = write!(h, "<td class=\"n\">{text}</td>");
            }
            let _ = writeln!(
                h,
                "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                pct(&r["quotes"]["unverified_rate"]),
                pct(&r["pairwise"]["preferred_rate"])
            );
        }
        h.push_str("</table>\n");
        let flagged = j["flagged"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if !flagged.is_empty() {
            h.push_str("<table>\n<tr><th>flag</th><th>session</th><th>agent / model</th><th>task</th><th>criterion</th><th>sample</th></tr>\n");
            const SHOWN: usize = 50;
            for f in flagged.iter().take(SHOWN) {
                let s = |k: &str| esc(f[k].as_str().unwrap_or_default());
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{} / {}</td><td>{} ({})</td><td>{}</td><td class=\"n\">{}</td></tr>",
                    s("flag"),
                    s("session"),
                    s("agent"),
                    s("model"),
                    s("instance_id"),
                    s("track"),
                    s("criterion"),
                    f["sample"]
                );
            }
            h.push_str("</table>\n");
            if flagged.len() > SHOWN {
                let _ = writeln!(
                    h,
                    "<p class=\"muted\">… and {} more flags (summary.json lists them all).</p>",
                    flagged.len() - SHOWN
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use assay_judge::{Labels, PatchReview, QuoteFlag, Reading, Score, Usage};
    use serde_json::json;

    use super::super::tests::{grade, task};
    use super::super::{PublishInput, publish};
    use super::*;

    #[test]
    fn t_quantiles_match_the_table() {
        for (df, t) in [
            (1.0, 12.706205),
            (2.0, 4.302653),
            (5.0, 2.570582),
            (10.0, 2.228139),
            (30.0, 2.042272),
            (1000.0, 1.962339),
        ] {
            assert!((t975(df) - t).abs() < 1e-6, "df {df}: {}", t975(df));
        }
    }

    #[test]
    fn intervals_need_two_sessions_and_stay_on_the_scale() {
        assert_eq!(mean_interval(&[]), (None, None));
        assert_eq!(mean_interval(&[3.0]), (Some(3.0), None));
        assert_eq!(mean_interval(&[4.0, 5.0]), (Some(4.5), Some((1.0, 5.0))));
        let (m, i) = mean_interval(&[3.0, 3.0, 3.0]);
        assert_eq!((m, i), (Some(3.0), Some((3.0, 3.0))));
        let (_, i) = mean_interval(&[2.0, 3.0, 4.0, 3.0]);
        let (lo, hi) = i.unwrap_or_default();
        // mean 3, s/√n = 0.408248, t(3) = 3.182446: half = 1.299228
        assert!(
            (lo - 1.700772).abs() < 1e-6 && (hi - 4.299228).abs() < 1e-6,
            "{lo} {hi}"
        );
    }

    fn review(slot: usize, scores: [u8; 6], quote: Option<&str>) -> PatchReview {
        let labels = Labels::for_task(0, "t", 2);
        PatchReview {
            label: labels.get(slot).cloned().unwrap_or_else(|| unreachable!()),
            slot,
            scores: Criterion::ALL
                .iter()
                .zip(scores)
                .map(|(c, score)| Score {
                    criterion: *c,
                    score,
                    rationale: "r".into(),
                    quote: quote.map(str::to_owned),
                })
                .collect(),
        }
    }

    fn record(
        sessions: &[&str],
        order: [usize; 2],
        sample: u32,
        reviews: Vec<PatchReview>,
    ) -> JudgeRecord {
        let pair = sessions.len() == 2;
        let missing: Vec<QuoteFlag> = reviews
            .iter()
            .flat_map(|r| {
                r.scores
                    .iter()
                    .filter(|s| s.score <= 3 && s.quote.is_none())
                    .map(|s| QuoteFlag {
                        label: r.label.clone(),
                        slot: r.slot,
                        criterion: s.criterion,
                    })
            })
            .collect();
        let preferred = pair.then(|| order[0]);
        JudgeRecord {
            instance_id: "t1".into(),
            track: "basic".into(),
            task_digest: "task-t1".into(),
            sessions: sessions.iter().map(|s| (*s).to_owned()).collect(),
            order: if pair { order.to_vec() } else { vec![0] },
            mode: if pair { Mode::Pairwise } else { Mode::Single },
            sample,
            model: "judge-m".into(),
            outcome: JudgeOutcome::Reading,
            detail: String::new(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 2,
            },
            attempts: 1,
            reading: Some(Reading {
                mode: if pair { Mode::Pairwise } else { Mode::Single },
                sample,
                reviews,
                preferred,
                missing_quotes: missing,
                unverified_quotes: vec![],
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 2,
                },
                attempts: 1,
                retried_because: vec![],
                request_digest: "d".into(),
                answer: "{}".into(),
            }),
        }
    }

    fn input() -> PublishInput {
        let r = |name: &str, rec: JudgeRecord| ("j".to_owned(), rec, name.to_owned());
        PublishInput {
            tasks: vec![task("t1", "basic", true)],
            grades: vec![
                grade("s1", "alpha", "m", "exclude", "resolved", "none"),
                grade("s2", "beta", "m", "exclude", "resolved", "none"),
            ],
            metrics: vec![],
            sessions: vec![],
            not_graded: vec![],
            prices: BTreeMap::new(),
            judges: vec![JudgeInfo {
                name: "j".into(),
                api: "openai".into(),
                model: "judge-m".into(),
                samples: 2,
                pairwise: true,
                seed: 0,
                settings_digest: "sd".into(),
                skipped: None,
            }],
            readings: vec![
                r(
                    "k1",
                    record(
                        &["s1"],
                        [0, 1],
                        0,
                        vec![review(0, [4, 4, 4, 4, 4, 4], None)],
                    ),
                ),
                r(
                    "k2",
                    record(
                        &["s1"],
                        [0, 1],
                        1,
                        vec![review(0, [5, 4, 4, 4, 4, 4], None)],
                    ),
                ),
                r(
                    "k3",
                    record(&["s2"], [0, 1], 0, vec![review(0, [2; 6], None)]),
                ),
                // Each order prefers the patch shown first: a flip.
                r(
                    "k4",
                    record(
                        &["s1", "s2"],
                        [0, 1],
                        0,
                        vec![review(0, [4; 6], None), review(1, [3; 6], Some("x"))],
                    ),
                ),
                r(
                    "k5",
                    record(
                        &["s1", "s2"],
                        [1, 0],
                        0,
                        vec![review(1, [3; 6], Some("x")), review(0, [4; 6], None)],
                    ),
                ),
            ],
            ..PublishInput::default()
        }
    }

    fn json(files: &BTreeMap<String, Vec<u8>>, name: &str) -> Value {
        serde_json::from_slice(&files[name]).unwrap_or_default()
    }

    #[test]
    fn readings_become_means_agreement_flips_and_quote_flags() {
        let files = publish(&input());
        let s = json(&files, "summary.json");
        let j = &s["judges"]["j"];
        assert_eq!(j["readings"], 5, "{j:#}");
        assert_eq!(j["position_inconsistency"]["pairs"], 1);
        assert_eq!(j["position_inconsistency"]["rate"], 1.0);
        // s1's two samples agree on 5 of 6 criteria.
        assert_eq!(j["sample_agreement"]["pairs"], 6);
        assert_eq!(j["sample_agreement"]["agreeing"], 5);
        // s2: 6 low scores without a quote alone, 12 in the pairs' quoted threes.
        assert_eq!(j["quotes"]["missing"], 6);
        assert_eq!(j["quotes"]["low_scores"], 18);
        assert_eq!(j["flagged"].as_array().map(Vec::len), Some(6));
        assert_eq!(j["flagged"][0]["agent"], "beta");
        let a = &s["agents"]["alpha/m"]["judge"]["j"];
        assert_eq!(a["criteria"]["overall"]["mean"], 4.0, "{a:#}");
        assert_eq!(a["criteria"]["correctness"]["mean"], 4.5);
        assert_eq!(a["criteria"]["overall"]["lo"], Value::Null, "one session");
        assert_eq!(a["pairwise"]["appearances"], 2);
        assert_eq!(a["pairwise"]["preferred"], 1);
        // beta: 18 low scores (6 alone, 12 in the pairs), 6 of them unquoted.
        let b = &s["agents"]["beta/m"]["judge"]["j"]["quotes"];
        assert_eq!(
            (&b["low_scores"], &b["missing_rate"]),
            (&json!(18), &json!(0.333333))
        );

        let csv = String::from_utf8(files["results.csv"].clone()).unwrap_or_default();
        let mut lines = csv.lines();
        assert!(lines.next().unwrap_or_default().ends_with(
            ",sandbox,ended,is_error,permission_denials,duration_ms,cost_usd,reported_cost_usd,\
             judge_overall,judge_samples,judge_missing_quotes,judge_unverified_quotes"
        ));
        assert!(
            lines
                .next()
                .unwrap_or_default()
                .ends_with(",bwrap,,,,,,,4,2,0,0")
        );
        assert!(
            lines
                .next()
                .unwrap_or_default()
                .ends_with(",bwrap,,,,,,,2,1,6,0")
        );

        let m = json(&files, "manifest.json");
        let n = m["numbers"]
            .as_array()
            .and_then(|ns| {
                ns.iter()
                    .find(|n| n["path"] == "summary.judges.j.position_inconsistency.rate")
            })
            .cloned()
            .unwrap_or_default();
        assert_eq!(n["readings"], serde_json::json!(["k4", "k5"]), "{n}");
        assert_eq!(m["judges"], json!({"j": "sd"}));
        let html = String::from_utf8(files["report.html"].clone()).unwrap_or_default();
        assert!(html.contains("<h2>Judge readings</h2>"));
    }

    #[test]
    fn the_order_of_the_readings_does_not_matter() {
        let a = publish(&input());
        let mut shuffled = input();
        shuffled.readings.reverse();
        shuffled.readings.swap(0, 2);
        assert_eq!(a, publish(&shuffled));
    }

    #[test]
    fn without_judges_nothing_is_said() {
        let mut plain = input();
        plain.judges.clear();
        plain.readings.clear();
        let files = publish(&plain);
        let s = json(&files, "summary.json");
        assert!(s.get("judges").is_none());
        assert!(s["agents"]["alpha/m"].get("judge").is_none());
        let csv = String::from_utf8(files["results.csv"].clone()).unwrap_or_default();
        assert!(!csv.contains("judge"));
    }

    #[test]
    fn several_judges_get_columns_by_name_and_a_skipped_one_says_why() {
        let mut two = input();
        let mut other = two.judges[0].clone();
        other.name = "k".into();
        other.skipped = Some("the variable K that should hold the API key is not set".into());
        two.judges.push(other);
        let files = publish(&two);
        let csv = String::from_utf8(files["results.csv"].clone()).unwrap_or_default();
        assert!(csv.contains(",judge_overall:j,") && csv.contains(",judge_overall:k,"));
        let s = json(&files, "summary.json");
        assert_eq!(
            s["judges"]["k"]["skipped"],
            "the variable K that should hold the API key is not set"
        );
        assert!(s["agents"]["alpha/m"]["judge"].get("k").is_none());
    }
}
