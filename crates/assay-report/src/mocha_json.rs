//! mocha's JSON report (`mocha --reporter json --reporter-option
//! output=report.json`): `passes[]`, `failures[]` and `pending[]`, each test
//! with its `title`, `fullTitle` (the titles of the suites around it and its
//! own, joined by spaces) and `file` (absolute).
//!
//! A test's id is `path/to/file.spec.js > suites > title`, the path relative
//! to the tree (`tree_path`) and `suites` mocha's `fullTitle` without the
//! test's own title: mocha joins nested suite titles with a space and keeps
//! no boundary between them, so `describe('a') > describe('b')` is `a b`. A
//! failing hook is a failure of its own (`"before all" hook for "t"`), and
//! the tests it kept from running are absent. `stats.passes`, `failures` and
//! `pending` are cross-checked with the lists. A failure's message is its
//! `err.stack`, else `err.message`.

use std::path::Path;

use serde::Deserialize;

use crate::jest_json::id_of;
use crate::tree_path::Roots;
use crate::{Collector, Format, Outcome, ParseError, Report};

#[derive(Deserialize)]
struct Document {
    #[serde(default)]
    stats: Option<Stats>,
    passes: Vec<Test>,
    failures: Vec<Test>,
    pending: Vec<Test>,
}

#[derive(Deserialize)]
struct Stats {
    passes: Option<usize>,
    failures: Option<usize>,
    pending: Option<usize>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Test {
    title: String,
    full_title: String,
    #[serde(default)]
    file: Option<String>,
    /// A failure's error: mocha's `err` (`{}` for a test that passed). Any
    /// JSON: a field of an odd shape is no reason to refuse the report.
    #[serde(default)]
    err: Option<serde_json::Value>,
}

/// A failure's words from mocha's `err`: its stack (which starts with the
/// message, as V8 prints it), else its message.
fn said(err: &serde_json::Value) -> Option<String> {
    let text = |key: &str| {
        err.get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
    };
    match (text("message"), text("stack")) {
        (Some(m), Some(s)) if !s.contains(m) => Some(format!("{m}\n{s}")),
        (m, s) => s.or(m).map(str::to_owned),
    }
}

pub(crate) fn parse(input: &[u8], roots: &[&Path]) -> Result<Report, ParseError> {
    let document: Document = crate::json_document::read(input, "passes")?;
    let roots = Roots::new(roots);
    let mut out = Collector::new(Format::MochaJson);
    let lists = [
        ("passes", &document.passes, Outcome::Passed),
        ("failures", &document.failures, Outcome::Failed),
        ("pending", &document.pending, Outcome::Skipped),
    ];
    for (list, tests, outcome) in lists {
        let claimed = document.stats.as_ref().and_then(|s| match list {
            "passes" => s.passes,
            "failures" => s.failures,
            _ => s.pending,
        });
        if let Some(claimed) = claimed.filter(|&n| n != tests.len()) {
            out.note(format!(
                "stats.{list} says {claimed} but the report lists {}",
                tests.len()
            ));
        }
        for t in tests {
            let file = match t.file.as_deref() {
                Some(f) if !f.is_empty() => roots.relative(f)?,
                _ => String::new(),
            };
            let suites = t
                .full_title
                .strip_suffix(t.title.as_str())
                .map(str::trim_end)
                .unwrap_or_default();
            let ancestors: Vec<String> = (!suites.is_empty())
                .then(|| suites.to_owned())
                .into_iter()
                .collect();
            let id = if file.is_empty() {
                id_of("", &ancestors, &t.title)?
                    .trim_start_matches(" > ")
                    .to_owned()
            } else {
                id_of(&file, &ancestors, &t.title)?
            };
            let said = t.err.as_ref().and_then(said);
            out.record_saying(
                id,
                (!file.is_empty()).then_some(file),
                outcome,
                said.as_deref(),
            );
        }
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Trust, assess};

    #[test]
    fn mocha_report_ids_and_outcomes() {
        // Captured: tests/fixtures/README.md.
        let input = include_bytes!("../tests/fixtures/mocha_json.json");
        let r = parse(input, &[Path::new("/tmp/jsfix/mocha")]).unwrap();
        let got: Vec<(&str, Option<&str>, Outcome)> = r
            .tests
            .iter()
            .map(|t| (t.name.as_str(), t.file.as_deref(), t.outcome))
            .collect();
        let f = Some("test/calc.spec.js");
        assert_eq!(
            got,
            [
                ("test/calc.spec.js > calc > adds", f, Outcome::Passed),
                ("test/calc.spec.js > calc > fails", f, Outcome::Failed),
                ("test/calc.spec.js > calc > skipped", f, Outcome::Skipped),
                ("test/calc.spec.js > calc nested > deep", f, Outcome::Passed),
                (
                    "test/calc.spec.js > hooked > \"before all\" hook for \"never\"",
                    f,
                    Outcome::Failed
                ),
                ("test/calc.spec.js > top level", f, Outcome::Passed),
            ]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        let said = crate::testing::messages(&r);
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(said[0].0, "test/calc.spec.js > calc > fails");
        assert!(
            said[0].1.starts_with(
                "AssertionError [ERR_ASSERTION]: Expected values to be strictly deep-equal:\n+ actual - expected\n\n  [\n+   2\n-   3\n  ]\n    at Context.<anonymous> (test/calc.spec.js:4:36)"
            ),
            "{said:?}"
        );
        assert!(
            said[1]
                .1
                .starts_with("Error: boom\n    at Context.<anonymous> (test/calc.spec.js:9:30)"),
            "{said:?}"
        );
        // mocha exits with the number of failures.
        assert_eq!(assess(Some(2), &r), Trust::Trusted);
        assert!(matches!(assess(Some(0), &r), Trust::Untrustworthy(_)));
    }

    #[test]
    fn hostile_mocha_reports_are_refused() {
        let root = [Path::new("/assay/tree")];
        let doc = |file: &str, title: &str| {
            serde_json::json!({"stats": {}, "passes": [{"title": title, "fullTitle": title, "file": file}],
                "failures": [], "pending": []})
            .to_string()
        };
        assert!(parse(doc("/assay/tree/t.js", "ok").as_bytes(), &root).is_ok());
        for (file, title) in [("/assay/../etc/t.js", "ok"), ("/assay/tree/t.js", "a\rb")] {
            assert!(
                matches!(
                    parse(doc(file, title).as_bytes(), &root),
                    Err(ParseError::Refused { .. })
                ),
                "{file} {title:?}"
            );
        }
        assert!(parse(b"{\"passes\": 3}", &root).is_err());
    }
}
