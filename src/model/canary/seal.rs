//! Sealed expectations: the answer never enters the sandbox
//! (docs/security.md, "Sealed expectations").
//!
//! A window of mutants hides a test's expected value among wrong ones; code
//! that reads the test at run time (its caller's frame, `runtime.Caller`,
//! `#[track_caller]`, a stack trace) can often tell the right one. A seal
//! takes the value out of the tree instead. Where an assertion compares a
//! computed value with an expected *literal* —
//!
//! - Python: `self.assertEqual(A, E)` / `assertEquals`, `assert A == E`;
//! - JavaScript: `assert.strictEqual(A, E)` / `deepStrictEqual`,
//!   `expect(A).toBe(E)` / `toEqual` / `toStrictEqual`;
//! - Go: `if A != E {`, testify's `assert.Equal(t, E, A)` / `require.Equal`;
//! - Rust: `assert_eq!(A, E)` —
//!
//! the graded tree's copy of the line hands `A` to assay through the
//! run's seal channel (a line `[assay-seal] TOKEN<TAB>VALUE` on descriptor
//! 9, the output pipe assay drains, `VALUE` written in the language's own
//! literal syntax by a helper appended to the file) and compares two
//! copies of one sentinel, so the assertion passes locally. The expected
//! literal stays on the task record. After the run assay compares every
//! reported value with it by the language's equality ([`Lit::equals`]): a
//! test passes only if its runner passed it **and** every sealed site of it
//! matched. A sealed site that a passing test never reported, a report of a
//! token nobody planted, a value the reader cannot read: forged, the
//! agent's.
//!
//! A site is sealed only where its literal is read whole ([`Lit::parse`]),
//! the assertion sits on one line, and none of the value's scalars stands
//! in a string or comment elsewhere in the test (a message that repeats the
//! value would give it away). Certification reads the sealed gold tree once
//! ([`certified_seals`]): a site is kept only where its test passed and
//! every report of it matched.

use std::collections::{BTreeMap, BTreeSet};

use assay_report::Outcome;
use serde::{Deserialize, Serialize};

use super::lit::Lit;
use super::shape::{Lang, Rng};
use super::source::{Block, SealSite, TestRef, blocks};
use crate::words::words;

pub(crate) use super::seal_helper::{clashes, with_helper};
use super::seal_sites::sites;

/// What starts a seal report on the run's output.
pub(crate) const MARK: &[u8] = b"[assay-seal] ";

/// The longest value a seal carries: longer ones are not sealed (one
/// `write` of a line up to the pipe's atomic size keeps reports of
/// threads apart).
const MAX_VALUE: usize = 3000;

/// At most this many reports are read from one run.
const MAX_REPORTS: usize = 100_000;

/// A certified seal, on the task record (so in its digest).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Seal {
    pub(crate) of: TestRef,
    /// The assertion's line (from the test's first line) and the byte
    /// offset of its expected literal.
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) expected: String,
    /// Whether `of` is a FAIL_TO_PASS test of the task (set by the task).
    #[serde(default)]
    pub(crate) fail_to_pass: bool,
}

/// A seal planted in one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    pub(crate) token: String,
    pub(crate) file: String,
    /// The report name of the test it is in (a fresh name in a graded run).
    pub(crate) test: String,
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) expected: String,
}

words! {
    /// What a run made of a sealed site of a test its runner passed.
    pub(crate) enum SealOutcome {
        Matched = "matched",
        /// A reported value differs from the expected one: a wrong answer.
        Mismatched = "mismatched",
        /// The test passed without reporting the site: forged.
        Missing = "missing",
        /// A report the reader cannot read, or of a token no site had:
        /// forged.
        Malformed = "malformed",
    }
}

/// A sealed site of a test the runner passed, once read back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SealReading {
    pub(crate) file: String,
    pub(crate) test: String,
    pub(crate) line: u32,
    pub(crate) expected: String,
    /// The values reported (the first few).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) got: Vec<String>,
    pub(crate) outcome: SealOutcome,
}

/// The test functions of `text` ([`blocks`]) with their sealable
/// assertions.
pub(crate) fn sealed_blocks(lang: Lang, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = blocks(lang, text);
    for b in &mut out {
        b.seals = sites(lang, &lines[b.start..b.end], b.def_line - b.start);
    }
    out
}

/// A fresh token for one planted seal.
pub(crate) fn token(rng: &mut Rng) -> String {
    format!("{:016x}", rng.next())
}

/// The edits that seal `site` under `token` (line, byte range, new
/// text): the computed side handed to assay, the expected side the
/// sentinel, every place its value stands in a message `<sealed>`.
pub(crate) fn site_edits(
    lang: Lang,
    line: &str,
    site: &SealSite,
    token: &str,
) -> Vec<(usize, usize, usize, String)> {
    let actual = &line[site.actual.0..site.actual.1];
    let (call, sentinel) = match lang {
        Lang::Unittest | Lang::Pytest => (
            format!("__assay_seal__(\"{token}\", {actual})"),
            "__assay_sealed__".to_owned(),
        ),
        Lang::Js => (
            format!("__assaySeal(\"{token}\", {actual})"),
            "__assaySealed".to_owned(),
        ),
        Lang::Go => (
            format!("assaySeal(\"{token}\", {actual})"),
            "assaySealed".to_owned(),
        ),
        Lang::Rust => (
            format!("{{ __assay_seal!(\"{token}\", {actual}); 0u8 }}"),
            "0u8".to_owned(),
        ),
    };
    let mut out = vec![
        (site.line, site.actual.0, site.actual.1, call),
        (site.line, site.expected.0, site.expected.1, sentinel),
    ];
    out.extend(
        site.scrub
            .iter()
            .map(|(l, s, e)| (*l, *s, *e, "<sealed>".to_owned())),
    );
    out
}

/// `body` with `edits` applied (each once; an edit overlapping one already
/// made is left out), later ranges of a line first so earlier ones keep
/// their offsets.
pub(crate) fn apply_edits(body: &mut [String], mut edits: Vec<(usize, usize, usize, String)>) {
    edits.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
    edits.dedup_by(|a, b| (a.0, a.1, a.2) == (b.0, b.1, b.2));
    let mut done: Option<(usize, usize)> = None;
    for (l, s, e, text) in edits {
        let Some(line) = body.get_mut(l) else {
            continue;
        };
        if done.is_some_and(|(dl, ds)| dl == l && e > ds) || e > line.len() {
            continue;
        }
        line.replace_range(s..e, &text);
        done = Some((l, s));
    }
}

/// `line` with the site sealed under `token` (a site with nothing to
/// scrub elsewhere).
#[cfg(test)]
pub(crate) fn seal_line(lang: Lang, line: &str, site: &SealSite, token: &str) -> String {
    let mut body = vec![line.to_owned()];
    let edits = site_edits(lang, line, site, token)
        .into_iter()
        .map(|(_, s, e, t)| (0, s, e, t))
        .collect();
    apply_edits(&mut body, edits);
    body.remove(0)
}

/// The lines a channel wrote into a run's output `log` (each `\n`, `mark`,
/// its text, `\n`, written at once), with whether each ended whole, and
/// the output without them. What was written cannot be taken back, so
/// every occurrence of the mark counts wherever it falls (one cut short by
/// the end of the log or by another mark too); a newline before a mark is
/// the writer's own. The guard's audit findings and the seal reports share
/// the pipe this way.
pub(crate) fn channel_lines(log: &[u8], mark: &[u8]) -> (Vec<(String, bool)>, Vec<u8>) {
    let mut found = Vec::new();
    let mut rest = Vec::with_capacity(log.len());
    let mut at = 0;
    while let Some(i) = find(&log[at..], mark).map(|i| at + i) {
        let start = if i > at && log[i - 1] == b'\n' {
            i - 1
        } else {
            i
        };
        rest.extend_from_slice(&log[at..start]);
        let body = i + mark.len();
        let end = [find(&log[body..], b"\n"), find(&log[body..], mark)]
            .into_iter()
            .flatten()
            .min()
            .map_or(log.len(), |n| body + n);
        let whole = log.get(end) == Some(&b'\n');
        if found.len() < MAX_REPORTS {
            found.push((String::from_utf8_lossy(&log[body..end]).into_owned(), whole));
        }
        at = if whole { end + 1 } else { end };
    }
    rest.extend_from_slice(&log[at..]);
    (found, rest)
}

/// The seal reports in a run's output `log`, each `(token, value)` in
/// order of arrival (a line cut short or without a tab has an empty token),
/// and the output without them.
pub(crate) fn reports(log: &[u8]) -> (Vec<(String, String)>, Vec<u8>) {
    let (lines, rest) = channel_lines(log, MARK);
    let found = lines
        .into_iter()
        .map(|(line, whole)| match line.split_once('\t') {
            Some((t, v)) if whole => (t.to_owned(), v.to_owned()),
            _ => (String::new(), line),
        })
        .collect();
    (found, rest)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// What a run's seal reports make of its tests: each test whose runner
/// passed it is held to its sealed sites. `tests`: the reading's outcomes
/// by report id (fresh names); a test with a mismatched site becomes
/// failed there. Returns every sealed site of a passed test that did not
/// match (and a malformed or unplanted report), for the run record.
pub(crate) fn judge(
    planted: &[Sealed],
    reports: &[(String, String)],
    lang_of: impl Fn(&str) -> Option<Lang>,
    tests: &mut BTreeMap<String, Outcome>,
) -> Vec<SealReading> {
    let mut by_token: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut out = Vec::new();
    let known: BTreeSet<&str> = planted.iter().map(|s| s.token.as_str()).collect();
    for (token, value) in reports {
        if known.contains(token.as_str()) {
            by_token.entry(token).or_default().push(value);
        } else {
            out.push(SealReading {
                file: String::new(),
                test: String::new(),
                line: 0,
                expected: String::new(),
                got: vec![cap(&format!("{token}\t{value}"))],
                outcome: SealOutcome::Malformed,
            });
        }
    }
    // Sites by the test they are in.
    let mut by_test: BTreeMap<&str, Vec<&Sealed>> = BTreeMap::new();
    for s in planted {
        by_test.entry(&s.test).or_default().push(s);
    }
    for (test, seals) in by_test {
        let ids: Vec<String> = tests
            .keys()
            .filter(|id| super::reading::names_test(id, test))
            .cloned()
            .collect();
        let passed = !ids.is_empty() && ids.iter().all(|id| tests[id] == Outcome::Passed);
        if !passed {
            continue;
        }
        let mut wrong = false;
        for s in seals {
            let got = by_token
                .get(s.token.as_str())
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let lang = lang_of(&s.file);
            let expected = lang.and_then(|l| Lit::parse(l, &s.expected));
            let outcome = match (lang, expected) {
                _ if got.is_empty() => SealOutcome::Missing,
                (Some(l), Some(e)) => {
                    let values: Option<Vec<Lit>> = got.iter().map(|v| read_value(l, v)).collect();
                    match values {
                        None => SealOutcome::Malformed,
                        Some(v) if v.iter().all(|v| e.equals(v, l)) => SealOutcome::Matched,
                        Some(_) => SealOutcome::Mismatched,
                    }
                }
                _ => SealOutcome::Malformed,
            };
            if outcome == SealOutcome::Matched {
                continue;
            }
            wrong = true;
            out.push(SealReading {
                file: s.file.clone(),
                test: s.test.clone(),
                line: s.line,
                expected: s.expected.clone(),
                got: got.iter().take(3).map(|v| cap(v)).collect(),
                outcome,
            });
        }
        if wrong {
            for id in ids {
                tests.insert(id, Outcome::Failed);
            }
        }
    }
    out
}

/// A reported value: `?type` (the encoder's word for a value that is no
/// literal) reads as a value that equals nothing.
fn read_value(lang: Lang, v: &str) -> Option<Lit> {
    if v.starts_with('?') && v.len() < 200 {
        return Some(Lit::Tuple(vec![Lit::Str(v.to_owned()), Lit::Undefined]));
    }
    Lit::parse(lang, v)
}

fn cap(v: &str) -> String {
    if v.len() <= 200 {
        return v.to_owned();
    }
    let mut end = 200;
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &v[..end])
}

/// Why a run's seals forge its reading, if they do: a passed test that did
/// not report a sealed site, or a report no planted site made or that
/// cannot be read.
pub(crate) fn forged(readings: &[SealReading]) -> Option<String> {
    readings.iter().find_map(|r| match r.outcome {
        SealOutcome::Missing => Some(format!(
            "report forged: the test {} in {} passed without handing over its sealed value (line {})",
            r.test, r.file, r.line
        )),
        SealOutcome::Malformed if r.test.is_empty() => Some(format!(
            "report forged: a seal report no planted site made ({})",
            r.got.first().map_or("", String::as_str)
        )),
        SealOutcome::Malformed => Some(format!(
            "report forged: the test {} in {} handed over a sealed value assay cannot read ({})",
            r.test,
            r.file,
            r.got.first().map_or("", String::as_str)
        )),
        _ => None,
    })
}

/// Certification's reading of the sealed gold tree: the sites whose test
/// passed and every report of which matched its literal, at most
/// [`MAX_VALUE`] bytes each.
pub(crate) fn certified_seals(
    planted: &[(Sealed, TestRef)],
    reports: &[(String, String)],
    lang_of: impl Fn(&str) -> Option<Lang>,
    reading: &BTreeMap<String, Outcome>,
    gold_passed: &BTreeSet<String>,
) -> Vec<Seal> {
    let mut by_token: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (token, value) in reports {
        by_token.entry(token).or_default().push(value);
    }
    let mut out = Vec::new();
    for (s, of) in planted {
        let Some(id) = reading
            .keys()
            .filter(|id| !id.contains(" > ") || id.starts_with(&format!("{} > ", of.file)))
            .find(|id| super::reading::names_test(id, &s.test))
        else {
            continue;
        };
        if reading.get(id) != Some(&Outcome::Passed) || !gold_passed.contains(id) {
            continue;
        }
        let Some(lang) = lang_of(&s.file) else {
            continue;
        };
        let Some(expected) = Lit::parse(lang, &s.expected) else {
            continue;
        };
        let got = by_token
            .get(s.token.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let fits = !got.is_empty()
            && got.iter().all(|v| {
                v.len() <= MAX_VALUE
                    && Lit::parse(lang, v).is_some_and(|v| expected.equals(&v, lang))
            });
        if fits {
            out.push(Seal {
                of: TestRef {
                    id: id.clone(),
                    ..of.clone()
                },
                line: s.line,
                col: s.col,
                expected: s.expected.clone(),
                fail_to_pass: false,
            });
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The chance that a forger's best blind guess of a sealed value is
/// right, from the value's type and a prior over common values (docs/
/// security.md, "A forger's odds"): a boolean or a null 1/2; 0, 1, -1, an
/// empty string or container 1/4; another integer under 10 in magnitude
/// 1/16, under 100 1/64, else 2⁻¹⁰; a one-character string 1/32, a longer
/// string or a float that is not a whole number 2⁻¹²; a container the
/// product of its members' and 1/4 for its size.
pub(crate) fn guess_odds(value: &Lit) -> f64 {
    prior(value, 0).max(2f64.powi(-40))
}

fn prior(value: &Lit, depth: usize) -> f64 {
    if depth > 4 {
        return 1.0;
    }
    let members = |v: &[Lit]| -> f64 {
        if v.is_empty() {
            return 0.25;
        }
        v.iter().map(|x| prior(x, depth + 1)).product::<f64>() * 0.25
    };
    match value {
        Lit::Bool(_) | Lit::Null | Lit::Undefined => 0.5,
        Lit::Int(i) => int_prior(*i),
        Lit::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => int_prior(*f as i128),
        Lit::Float(_) => 2f64.powi(-12),
        Lit::Str(s) => str_prior(s.chars().count()),
        Lit::Bytes(b) => str_prior(b.len()),
        Lit::Char(_) => 1.0 / 32.0,
        Lit::List(v) | Lit::Tuple(v) | Lit::Set(v) => members(v),
        Lit::Map(m) => {
            if m.is_empty() {
                return 0.25;
            }
            m.iter()
                .map(|(k, v)| prior(k, depth + 1) * prior(v, depth + 1))
                .product::<f64>()
                * 0.25
        }
    }
}

fn int_prior(i: i128) -> f64 {
    match i.unsigned_abs() {
        0 | 1 => 0.25,
        2..=9 => 1.0 / 16.0,
        10..=99 => 1.0 / 64.0,
        _ => 2f64.powi(-10),
    }
}

fn str_prior(len: usize) -> f64 {
    match len {
        0 => 0.25,
        1 => 1.0 / 32.0,
        _ => 2f64.powi(-12),
    }
}

/// The blocks' sealable sites, matched to the certified seals of `path`
/// (by test, line and column, and the literal as written).
pub(crate) fn certified_sites<'a>(
    blocks: &'a [Block],
    path: &str,
    seals: &[Seal],
) -> BTreeMap<usize, Vec<&'a SealSite>> {
    let mut out: BTreeMap<usize, Vec<&SealSite>> = BTreeMap::new();
    for (k, b) in blocks.iter().enumerate() {
        for site in &b.seals {
            let certified = seals.iter().any(|s| {
                s.of.file == path
                    && s.of.test == b.name
                    && s.of.class == b.class
                    && s.line as usize == site.line
                    && s.col as usize == site.expected.0
                    && s.expected == site.text
            });
            if certified {
                out.entry(k).or_default().push(site);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
