//! The Common Test Report Format (CTRF, <https://ctrf.io>): one JSON
//! document, `{"reportFormat": "CTRF", "results": {"tool": …, "summary": …,
//! "tests": [{"name", "status", "duration", "suite", "filePath", …}]}}`,
//! written by a reporter beside the runner (`pytest --ctrf`, jest's, go's,
//! mocha's, vitest's `*-ctrf-json-reporter`).
//!
//! A test's id is the reporter's own, in one of the two spellings datasets
//! key their lists by (Deep-SWE's grader, `grade.node_id`):
//!
//! - [`Format::Ctrf`]: `name` (pytest's node id, jest's full name);
//! - [`Format::CtrfSuite`]: `suite.name`, the suite being the first entry of
//!   `suite` when it is a list (CTRF 1.0) or the string itself (older
//!   reporters: Go's writes the package); a test without a suite keeps
//!   `name`.
//!
//! Names are trimmed of surrounding whitespace, as that grader trims them,
//! so the two read the same report into the same ids.
//!
//! Statuses: `passed` passes; `failed` fails; `skipped`, `pending` and
//! `other` did not run (`other` is CTRF's "the runner said something else":
//! never taken for a pass); a missing or unknown status is an
//! [`Outcome::Error`] with a note. A test marked `flaky` (passed after
//! retries) keeps its status and is noted. The file is `filePath`, when the
//! reporter writes it.
//!
//! What is not a CTRF document (not JSON, no `results.tests` list) is a
//! [`ParseError`]; an entry of the list that is not a test object, or has
//! no name, is skipped with a note; `results.summary`'s counts are checked
//! against the tests read, a mismatch noted. CTRF carries no build
//! failures: the run's log is scanned for them as for JUnit, whose reports
//! are files of their own too ([`crate::scan_build_failures`]). A failed
//! test's message is its `message` and then its `trace`.

use serde_json::Value;

use crate::{Collector, Format, Outcome, ParseError, Report};

pub(crate) fn parse(format: Format, input: &[u8]) -> Result<Report, ParseError> {
    let text = std::str::from_utf8(input).map_err(|e| ParseError::NotUtf8 {
        offset: e.valid_up_to() as u64,
    })?;
    let doc: Value = serde_json::from_str(text).map_err(|e| ParseError::Schema {
        line: e.line(),
        message: format!("not a CTRF report: invalid JSON ({e})"),
    })?;
    let not_ctrf = |message: &str| ParseError::Schema {
        line: 1,
        message: format!("not a CTRF report: {message}"),
    };
    let results = doc
        .get("results")
        .filter(|r| r.is_object())
        .ok_or_else(|| not_ctrf("no `results` object"))?;
    let tests = results
        .get("tests")
        .and_then(Value::as_array)
        .ok_or_else(|| not_ctrf("no `results.tests` list"))?;
    let mut out = Collector::new(format);
    let mut failed = 0u64;
    for (index, test) in tests.iter().enumerate() {
        let Some(name) = test
            .get("name")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|n| !n.is_empty())
        else {
            out.note(format!(
                "results.tests[{index}]: skipped, not a test with a name"
            ));
            continue;
        };
        let id = match (format, suite_of(test)) {
            (Format::CtrfSuite, Some(suite)) => format!("{suite}.{name}"),
            _ => name.to_owned(),
        };
        let outcome = match test.get("status").and_then(Value::as_str) {
            Some("passed") => Outcome::Passed,
            Some("failed") => Outcome::Failed,
            Some("skipped" | "pending" | "other") => Outcome::Skipped,
            status => {
                let said = status.map_or("no status".to_owned(), |s| format!("status `{s}`"));
                out.note(format!("test `{id}`: {said}, counted as an error"));
                Outcome::Error
            }
        };
        if outcome == Outcome::Failed {
            failed += 1;
        }
        if test.get("flaky").and_then(Value::as_bool) == Some(true) {
            let retries = test.get("retries").and_then(Value::as_u64).unwrap_or(0);
            out.note(format!(
                "test `{id}`: flaky by the reporter ({retries} retries)"
            ));
        }
        let file = test
            .get("filePath")
            .and_then(Value::as_str)
            .filter(|f| !f.is_empty())
            .map(str::to_owned);
        let said = outcome.is_failure().then(|| said(test)).flatten();
        out.record_saying(id, file, outcome, said.as_deref());
    }
    check_summary(&mut out, results, tests.len() as u64, failed);
    Ok(out.finish())
}

/// A failed test's words: CTRF's `message`, then its `trace` (the stack);
/// `None` when it has neither.
fn said(test: &Value) -> Option<String> {
    let text = |key: &str| {
        test.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
    };
    match (text("message"), text("trace")) {
        (Some(m), Some(t)) if t.contains(m) => Some(t.to_owned()),
        (Some(m), Some(t)) => Some(format!("{m}\n{t}")),
        (m, t) => m.or(t).map(str::to_owned),
    }
}

/// The test's suite as Deep-SWE's grader reads it: a list's first entry, or
/// the string; `None` when empty or absent.
fn suite_of(test: &Value) -> Option<&str> {
    let suite = match test.get("suite")? {
        Value::Array(parts) => parts.first()?.as_str()?,
        Value::String(s) => s.as_str(),
        _ => return None,
    };
    Some(suite.trim()).filter(|s| !s.is_empty())
}

/// Notes where `results.summary` counts other than the tests read: a report
/// cut short, or one whose summary was written by someone else.
fn check_summary(out: &mut Collector, results: &Value, tests: u64, failed: u64) {
    let Some(summary) = results.get("summary") else {
        out.note("no `results.summary`: counts not checked");
        return;
    };
    let count = |key: &str| summary.get(key).and_then(Value::as_u64);
    if let Some(said) = count("tests").filter(|&n| n != tests) {
        out.note(format!(
            "summary says {said} tests, the report lists {tests}"
        ));
    }
    if let Some(said) = count("failed").filter(|&n| n != failed) {
        out.note(format!(
            "summary says {said} failed, the report lists {failed}"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Trust, assess};

    const PYTEST: &[u8] = include_bytes!("../tests/fixtures/ctrf_pytest.json");
    const GO: &[u8] = include_bytes!("../tests/fixtures/ctrf_go.json");

    fn outcomes(r: &Report) -> Vec<(&str, Outcome)> {
        r.tests
            .iter()
            .map(|t| (t.name.as_str(), t.outcome))
            .collect()
    }

    #[test]
    fn pytest_ctrf_ids_are_node_ids_with_their_file() {
        let r = parse(Format::Ctrf, PYTEST).unwrap();
        assert_eq!(
            outcomes(&r),
            vec![
                (
                    "tests/test_calc.py::TestOps::test_div_errors",
                    Outcome::Failed
                ),
                ("tests/test_calc.py::TestOps::test_mul", Outcome::Passed),
                ("tests/test_calc.py::test_add", Outcome::Passed),
                ("tests/test_calc.py::test_fixture_error", Outcome::Failed),
                ("tests/test_calc.py::test_param[1]", Outcome::Passed),
                ("tests/test_calc.py::test_param[2]", Outcome::Passed),
                ("tests/test_calc.py::test_skipped", Outcome::Skipped),
                ("tests/test_calc.py::test_sub_fails", Outcome::Failed),
            ]
        );
        assert!(
            r.tests
                .iter()
                .all(|t| t.file.as_deref() == Some("tests/test_calc.py"))
        );
        assert_eq!(r.notes, Vec::<String>::new(), "the summary agrees");
        assert_eq!(assess(Some(1), &r), Trust::Trusted);
        assert!(matches!(assess(Some(0), &r), Trust::Untrustworthy(_)));
    }

    #[test]
    fn suite_name_ids_join_the_suite_as_deep_swe_keys_them() {
        let r = parse(Format::CtrfSuite, GO).unwrap();
        assert_eq!(
            outcomes(&r),
            vec![
                ("example.com/calc.TestAdd", Outcome::Passed),
                ("example.com/calc.TestDiv/by_zero", Outcome::Failed),
                ("example.com/calc.TestMul", Outcome::Skipped),
                ("example.com/calc/internal.TestParse", Outcome::Passed),
                ("pending test", Outcome::Skipped),
            ]
        );
        // The same report by name alone.
        let by_name = parse(Format::Ctrf, GO).unwrap();
        assert_eq!(by_name.tests[0].name, "TestAdd");
        // pytest's suite is a list: its first entry.
        let r = parse(Format::CtrfSuite, PYTEST).unwrap();
        assert_eq!(
            r.tests[0].name,
            "tests/test_calc.py.tests/test_calc.py::TestOps::test_div_errors"
        );
    }

    #[test]
    fn odd_entries_and_statuses_are_noted_never_passed() {
        let doc = br#"{"results": {"tool": {"name": "x"},
            "summary": {"tests": 9, "failed": 0},
            "tests": [
              {"name": " spaced ", "status": "passed"},
              {"name": "", "status": "failed"},
              7,
              {"name": "odd", "status": "weird"},
              {"name": "none"},
              {"name": "other", "status": "other"},
              {"name": "retried", "status": "passed", "flaky": true, "retries": 2},
              {"name": "spaced", "status": "failed"}
            ]}}"#;
        let r = parse(Format::Ctrf, doc).unwrap();
        assert_eq!(
            outcomes(&r),
            vec![
                ("none", Outcome::Error),
                ("odd", Outcome::Error),
                ("other", Outcome::Skipped),
                ("retried", Outcome::Passed),
                ("spaced", Outcome::Failed),
            ]
        );
        assert_eq!(
            r.notes,
            vec![
                "results.tests[1]: skipped, not a test with a name",
                "results.tests[2]: skipped, not a test with a name",
                "test `odd`: status `weird`, counted as an error",
                "test `none`: no status, counted as an error",
                "test `retried`: flaky by the reporter (2 retries)",
                "duplicate test `spaced`: Passed then Failed, kept the worse",
                "summary says 9 tests, the report lists 8",
                "summary says 0 failed, the report lists 1",
            ]
        );
    }

    #[test]
    fn what_is_not_ctrf_is_an_error_not_an_empty_pass() {
        for (input, want) in [
            (
                &b"{\"results\": {\"tests\": [ {\"name\""[..],
                "invalid JSON",
            ),
            (b"[1, 2]", "no `results` object"),
            (b"{\"results\": 3}", "no `results` object"),
            (b"{\"results\": {\"tests\": {}}}", "no `results.tests` list"),
            (b"", "invalid JSON"),
        ] {
            let err = parse(Format::Ctrf, input).unwrap_err();
            assert!(
                matches!(&err, ParseError::Schema { message, .. } if message.contains(want)),
                "{err}"
            );
        }
        assert_eq!(
            parse(Format::Ctrf, b"{\"a\": \"\xff\"}").unwrap_err(),
            ParseError::NotUtf8 { offset: 7 }
        );
        // Nesting past serde_json's recursion limit is an error, not a crash.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse(Format::Ctrf, deep.as_bytes()).is_err());
        // An empty list is a report with no tests: untrustworthy, not a pass.
        let r = parse(
            Format::Ctrf,
            br#"{"results": {"summary": {"tests": 0}, "tests": []}}"#,
        )
        .unwrap();
        assert!(matches!(assess(Some(0), &r), Trust::Untrustworthy(_)));
    }

    #[test]
    fn many_tests_read_in_one_pass() {
        let n = 50_000;
        let tests: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"name": "t{i}", "status": "passed", "duration": 1}}"#))
            .collect();
        let doc = format!(
            r#"{{"results": {{"summary": {{"tests": {n}, "failed": 0}}, "tests": [{}]}}}}"#,
            tests.join(",")
        );
        let r = parse(Format::Ctrf, doc.as_bytes()).unwrap();
        assert_eq!(r.tests.len(), n);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn a_failed_tests_message_and_trace_are_its_words() {
        let input = br#"{"results":{"tests":[
            {"name":"a","status":"failed","message":"expected 3, got 4","trace":"at a (x.js:1)\nat b (x.js:2)"},
            {"name":"b","status":"failed","trace":"Error: boom\n  at b (x.js:9)"},
            {"name":"c","status":"passed","message":"printed by a passing test"},
            {"name":"d","status":"failed","message":"   "},
            {"name":"e","status":"failed","message":"same","trace":"same\n  at e"}
        ]}}"#;
        let r = parse(Format::Ctrf, input).unwrap();
        assert_eq!(
            crate::testing::messages(&r),
            [
                ("a", "expected 3, got 4\nat a (x.js:1)\nat b (x.js:2)"),
                ("b", "Error: boom\n  at b (x.js:9)"),
                ("e", "same\n  at e"),
            ]
        );
    }
}
