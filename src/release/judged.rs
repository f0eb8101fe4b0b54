//! The judge readings, indexed once: by judge, sorted, whatever order they
//! come in; and the counts the release publishes about them.
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

use assay_judge::{Criterion, Mode};

use crate::model::records::{JudgeInfo, JudgeRecord};

/// One reading with its judge node key.
pub(super) type Read<'a> = (&'a JudgeRecord, &'a str);

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

    pub(super) fn readings(&self, judge: &str) -> &[Read<'a>] {
        self.by_judge.get(judge).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Judges whose nodes were laid out.
    pub(super) fn active(&self) -> impl Iterator<Item = &'a JudgeInfo> + '_ {
        self.judges.iter().filter(|j| j.skipped.is_none())
    }
}

/// One single reading's scores by criterion, with its judge node key.
pub(super) type Sample<'a> = (&'a str, BTreeMap<Criterion, u8>);

/// The single readings of `session` that gave scores.
pub(super) fn singles<'a>(reads: &[Read<'a>], session: &str) -> Vec<Sample<'a>> {
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

/// Counts over a set of readings, restricted to the slots of `sessions`
/// (`None`: every slot).
#[derive(Default)]
pub(super) struct Tally<'a> {
    pub(super) keys: BTreeSet<&'a str>,
    pub(super) scores: u64,
    pub(super) quoted: u64,
    pub(super) unverified: u64,
    pub(super) low: u64,
    pub(super) missing: u64,
    pub(super) appearances: u64,
    pub(super) preferred: u64,
    pub(super) agree_pairs: u64,
    pub(super) agreeing: u64,
    pub(super) agree_keys: BTreeSet<&'a str>,
}

impl<'a> Tally<'a> {
    pub(super) fn of(reads: &[Read<'a>], sessions: Option<&BTreeSet<&str>>) -> Tally<'a> {
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
}

/// Pairs read in both orders, and how many of them flip their preferred
/// session with the order, with the readings that count.
#[derive(Default)]
pub(super) struct Position<'a> {
    pub(super) pairs: u64,
    pub(super) flips: u64,
    pub(super) keys: BTreeSet<&'a str>,
}

impl<'a> Position<'a> {
    pub(super) fn of(reads: &[Read<'a>]) -> Self {
        let mut by_pair: BTreeMap<(&[String], u32), Vec<Read<'a>>> = BTreeMap::new();
        for read in reads {
            if read.0.mode == Mode::Pairwise && read.0.reading.is_some() {
                by_pair
                    .entry((read.0.sessions.as_slice(), read.0.sample))
                    .or_default()
                    .push(*read);
            }
        }
        let mut p = Position::default();
        for list in by_pair.values() {
            let first = |order: [usize; 2]| {
                list.iter()
                    .find(|(r, _)| r.order == order)
                    .and_then(|(r, k)| Some((r.reading.as_ref()?.preferred?, *k)))
            };
            if let (Some((a, ka)), Some((b, kb))) = (first([0, 1]), first([1, 0])) {
                p.pairs += 1;
                p.flips += u64::from(a != b);
                p.keys.extend([ka, kb]);
            }
        }
        p
    }
}
