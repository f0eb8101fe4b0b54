//! `results.csv`: one row per grade (session × arm), RFC 4180, rows sorted by
//! (agent, model, session, arm). Lists are joined with `;`; a missing value is
//! an empty field. A list longer than [`LIST_CAP`] characters is written by
//! its count (`1871 tests: …`), the full list staying in the grade record
//! (`assay show <grade_digest>`): a regression that fails thousands of tests
//! made a field of 169,604 characters, and Python's `csv` refuses any over
//! 131,072, so the whole file could not be read.
//!
//! Labels, paths and test ids come from sessions and repositories, and a
//! spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` (or a tab
//! or carriage return before one) as a formula: `=HYPERLINK(...)` as an
//! agent label would run on the reader's machine. Such a text field gets a
//! leading `'` ([`guard`]); a field that is a number stays as it is.

use std::collections::BTreeSet;

use assay_judge::Criterion;

use super::index::{Graded, Index};
use super::judged::{Read, Tally, singles};
use super::stats::{mean, round6, session_cost};
use crate::model::records::{GradeRecord, MetricsRecord, RunFacts};

const HEADER: [&str; 39] = [
    "session",
    "instance_id",
    "track",
    "agent",
    "model",
    "arm",
    "policy",
    "verdict",
    "fault",
    "failing",
    "not_run",
    "excluded_paths",
    "exit_code",
    "base_check",
    "new_check",
    "base_exit",
    "new_exit",
    "reruns",
    "redactions",
    "grade_digest",
    "task_digest",
    "lines_added",
    "lines_removed",
    "files_touched",
    "size_vs_gold",
    "suppressions_added",
    "comment_lines_added",
    "empty_patch",
    "turns",
    "tokens_total",
    "reset_paths",
    "tamper",
    "sandbox",
    "ended",
    "is_error",
    "permission_denials",
    "duration_ms",
    "cost_usd",
    "reported_cost_usd",
];

/// Where the parts of a split results.csv live, beside it.
pub(crate) const DIR: &str = "results";

/// results.csv, or, past `above` bytes, its parts `results/0000.csv`, …:
/// each the header and the next rows, in order, about `per` bytes or
/// fewer (a row is never cut), so the parts read one after the other are
/// the whole file's rows. Every part is listed in manifest.json with its
/// digest, as every file is. Each is handed to `put` as it is cut.
pub(super) fn files<E>(
    index: &Index<'_>,
    above: usize,
    per: usize,
    put: &mut dyn FnMut(String, Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    let (text, rows) = results(index);
    if text.len() <= above {
        return put("results.csv".to_owned(), text.into_bytes());
    }
    let header = &text[..rows.first().copied().unwrap_or(text.len())];
    let mut at = 0;
    let mut part = String::from(header);
    let ends = rows.iter().skip(1).copied().chain([text.len()]);
    for (start, end) in rows.iter().copied().zip(ends) {
        if part.len() > header.len() && part.len() + (end - start) > per {
            let full = std::mem::replace(&mut part, String::from(header));
            put(format!("{DIR}/{at:04}.csv"), full.into_bytes())?;
            at += 1;
        }
        part.push_str(&text[start..end]);
    }
    put(format!("{DIR}/{at:04}.csv"), part.into_bytes())
}

/// The whole of results.csv and where each row after the header starts.
fn results(index: &Index<'_>) -> (String, Vec<usize>) {
    let mut out = String::new();
    let mut rows = Vec::new();
    let judged = JudgeColumns::new(index);
    let judge_header = judged.header().into_iter();
    let metrics = &index.quality.metrics;
    let apps = !index.app_grades.is_empty();
    let header: Vec<String> = HEADER
        .iter()
        .map(|h| (*h).to_owned())
        .chain(metrics.iter().map(|m| format!("quality.{m}")))
        .chain(judge_header)
        .chain(apps.then(|| "layers".to_owned()))
        .collect();
    let width = header.len() - usize::from(apps);
    push_row(&mut out, header.into_iter());
    for graded in &index.grades {
        let (g, key) = (&graded.0, &graded.1);
        let m = index.metrics.get(g.session.as_str());
        let facts = index.sessions.get(g.session.as_str()).map(|s| &s.facts);
        let num =
            |f: &dyn Fn(&MetricsRecord) -> u64| m.map(|m| f(m).to_string()).unwrap_or_default();
        let row = [
            g.session.clone(),
            // SWE-bench's id, as tasks.jsonl has it (`calc-1__spec`).
            crate::run::swebench::instance_id(&g.instance_id, &g.track),
            g.track.clone(),
            g.agent.clone(),
            g.model.clone(),
            g.arm.to_string(),
            g.policy.to_string(),
            g.verdict.to_string(),
            g.fault.to_string(),
            list(&g.failing, "tests"),
            list(&g.not_run, "tests"),
            list(&g.excluded_paths, "paths"),
            g.exit_code.map(|c| c.to_string()).unwrap_or_default(),
            g.base_check.clone(),
            g.new_check.clone(),
            g.base_exit.map(|c| c.to_string()).unwrap_or_default(),
            g.new_exit.map(|c| c.to_string()).unwrap_or_default(),
            g.reruns.to_string(),
            g.redactions.to_string(),
            key.clone(),
            g.task_digest.clone(),
            num(&|m| m.lines_added),
            num(&|m| m.lines_removed),
            num(&|m| m.files_touched),
            m.and_then(|m| m.size_vs_gold)
                .map(|x| round6(x).to_string())
                .unwrap_or_default(),
            num(&|m| m.suppressions_added),
            num(&|m| m.comment_lines_added),
            if m.is_some() || facts.is_some() {
                index.empty_patch(&g.session).to_string()
            } else {
                String::new()
            },
            facts
                .and_then(|f| f.turns)
                .map(|t| t.to_string())
                .unwrap_or_default(),
            facts
                .filter(|f| !f.tokens.is_empty())
                .map(|f| f.tokens.values().sum::<u64>().to_string())
                .unwrap_or_default(),
            list(&g.reset_paths, "paths"),
            list(&g.tamper, "suspects"),
            g.sandbox.to_string(),
            facts.and_then(|f| f.ended.clone()).unwrap_or_default(),
            facts
                .and_then(RunFacts::ended_in_error)
                .map(|b| b.to_string())
                .unwrap_or_default(),
            facts
                .and_then(|f| f.permission_denials)
                .map(|n| n.to_string())
                .unwrap_or_default(),
            facts
                .and_then(|f| f.duration_ms)
                .map(|n| n.to_string())
                .unwrap_or_default(),
            cost(index, g, facts),
            facts
                .and_then(|f| f.reported_cost_usd)
                .map(|c| round6(c).to_string())
                .unwrap_or_default(),
        ];
        // What the session introduced against gold; empty where the
        // metric could not be measured (its node says why).
        let quality = metrics.iter().map(|m| {
            index
                .quality
                .get(&g.session, m)
                .and_then(|f| f.introduced())
                .map(|n| n.to_string())
                .unwrap_or_default()
        });
        rows.push(out.len());
        push_row(
            &mut out,
            row.into_iter()
                .chain(quality)
                .chain(judged.cells(graded))
                .chain(apps.then(String::new)),
        );
    }
    for row in super::apps::csv_rows(index, width, &column) {
        rows.push(out.len());
        push_row(&mut out, row.into_iter());
    }
    (out, rows)
}

/// The most characters a list field holds; longer lists go by count.
const LIST_CAP: usize = 4096;

/// A list field: its items joined with `;`, or, past [`LIST_CAP`], how many
/// `what` there are and where the list is.
fn list(items: &[String], what: &str) -> String {
    let joined = items.join(";");
    if joined.len() <= LIST_CAP {
        return joined;
    }
    format!(
        "{} {what}: the full list is in the grade record (assay show <grade_digest>)",
        items.len()
    )
}

/// The position of a fixed column of results.csv.
fn column(name: &str) -> Option<usize> {
    HEADER.iter().position(|h| *h == name)
}

/// The session's cost by `[prices]` (empty without tokens, or when no price
/// applies to any of them).
fn cost(index: &Index<'_>, g: &GradeRecord, facts: Option<&RunFacts>) -> String {
    let Some(f) = facts.filter(|f| !f.tokens.is_empty() || !f.by_model.is_empty()) else {
        return String::new();
    };
    if f.by_model.is_empty() && !index.prices.contains_key(&g.model) {
        return String::new();
    }
    let mut unpriced = BTreeSet::new();
    round6(session_cost(index.prices, &g.model, f, &mut unpriced)).to_string()
}

/// The judge columns of results.csv: with one judge `judge_overall`,
/// `judge_samples`, `judge_missing_quotes`, `judge_unverified_quotes`; with
/// several, each once per judge as `judge_overall:<name>`, ….
struct JudgeColumns<'i, 'a> {
    index: &'i Index<'a>,
    scored: BTreeSet<&'i str>,
}

const JUDGE_COLUMNS: [&str; 4] = [
    "judge_overall",
    "judge_samples",
    "judge_missing_quotes",
    "judge_unverified_quotes",
];

impl<'i, 'a> JudgeColumns<'i, 'a> {
    fn new(index: &'i Index<'a>) -> Self {
        let scored = index
            .groups
            .values()
            .flatten()
            .map(|g| g.1.as_str())
            .collect();
        JudgeColumns { index, scored }
    }

    fn header(&self) -> Vec<String> {
        let judges = self.index.judged.judges;
        judges
            .iter()
            .flat_map(|j| {
                JUDGE_COLUMNS.iter().map(move |c| {
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
    fn cells(&self, graded: Graded<'_>) -> Vec<String> {
        let mut out = Vec::new();
        for j in self.index.judged.judges {
            if !self.scored.contains(graded.1.as_str()) || j.skipped.is_some() {
                out.extend(JUDGE_COLUMNS.iter().map(|_| String::new()));
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
                mean(overall)
                    .map(|m| round6(m).to_string())
                    .unwrap_or_default(),
            );
            out.push(samples.len().to_string());
            out.push(t.missing.to_string());
            out.push(t.unverified.to_string());
        }
        out
    }
}

/// Rows end with CRLF, as RFC 4180 says.
fn push_row(out: &mut String, fields: impl Iterator<Item = String>) {
    for (i, field) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&quote(&guard(field)));
    }
    out.push_str("\r\n");
}

/// A text field a spreadsheet would read as a formula, with a `'` before
/// it; every other field (numbers among them, `-3` or `-1.5e-3`) as it is.
pub(super) fn guard(field: String) -> String {
    let formula = field.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let number = field.parse::<f64>().is_ok()
        && field
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
    if formula && !number {
        format!("'{field}")
    } else {
        field
    }
}

/// Quotes a field holding a comma, a quote, CR or LF; doubles its quotes.
pub(super) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::guard;

    #[test]
    fn a_text_field_shaped_like_a_formula_is_guarded_and_numbers_are_not() {
        for (field, want) in [
            ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
            ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\t=1", "'\t=1"),
            ("\r=1", "'\r=1"),
            ("-1", "-1"),
            ("-0.25", "-0.25"),
            ("+7", "+7"),
            ("1e-3", "1e-3"),
            ("-inf", "'-inf"),
            ("agent-a", "agent-a"),
            ("", ""),
        ] {
            assert_eq!(guard(field.to_owned()), want, "{field:?}");
        }
    }
}
