//! Rust libtest's JSON output (`-Z unstable-options --format json`), one
//! object per line, one `suite` per test binary:
//! `{"type":"suite","event":"started","test_count":5}`,
//! `{"type":"test","event":"started"|"ok"|"failed"|"ignored","name":…}`,
//! `{"type":"suite","event":"ok"|"failed","passed":2,"failed":1,…}`.
//!
//! Lines that are not JSON objects (cargo's own chatter on a shared stream)
//! are skipped; a line that starts like an object but does not parse (a run
//! cut off mid-write) is skipped with a note. An object of a known type whose
//! fields have the wrong shape is a [`ParseError::Schema`]: the producer is
//! not libtest. Names are as libtest gives them (the text format's names
//! match). A test that started but never finished (the binary crashed) is an
//! error, and each suite's counts are cross-checked. A crate that does not
//! compile shows in cargo's text, read as the text format reads it. A
//! failed test's message is its event's `stdout`, from its panic on.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::libtest::doctest_file;
use crate::{Collector, Format, Outcome, ParseError, Report, json_lines, text_lines};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    event: Option<String>,
    name: Option<String>,
    test_count: Option<u64>,
    passed: Option<u64>,
    failed: Option<u64>,
    ignored: Option<u64>,
    measured: Option<u64>,
    /// A failed test's captured output (any JSON: read only if a string).
    #[serde(default)]
    stdout: Option<serde_json::Value>,
}

pub(crate) fn parse(input: &[u8]) -> Result<Report, ParseError> {
    let mut p = Parser {
        out: Collector::new(Format::LibtestJson),
        suite: None,
        started: BTreeMap::new(),
    };
    for (number, line) in text_lines(input) {
        // Valid JSON of the wrong shape is fatal only for libtest's own types.
        let Some(event) = json_lines::event(&mut p.out, number, &line, is_libtest_type)? else {
            continue;
        };
        p.event(number, event);
    }
    p.end_suite(None);
    p.unfinished();
    p.out.build_failures(crate::libtest::build_failures(input));
    Ok(p.out.finish())
}

fn is_libtest_type(v: &serde_json::Value) -> bool {
    matches!(
        v.get("type").and_then(|t| t.as_str()),
        Some("test" | "suite" | "bench")
    )
}

struct Suite {
    line: usize,
    announced: Option<u64>,
    read: u64,
}

struct Parser {
    out: Collector,
    suite: Option<Suite>,
    /// Tests started but not finished, with the line they started on.
    started: BTreeMap<String, usize>,
}

impl Parser {
    fn event(&mut self, number: usize, e: Event) {
        match (e.kind.as_str(), e.event.as_deref()) {
            ("suite", Some("started")) => {
                self.end_suite(None);
                self.suite = Some(Suite {
                    line: number,
                    announced: e.test_count,
                    read: 0,
                });
            }
            ("suite", Some("ok" | "failed")) => {
                let total = [e.passed, e.failed, e.ignored, e.measured]
                    .into_iter()
                    .map(|n| n.unwrap_or(0))
                    .sum();
                self.end_suite(Some(total));
            }
            ("test", Some("started")) => {
                if let Some(name) = e.name {
                    self.started.insert(name, number);
                }
            }
            ("test", Some(event)) => {
                let outcome = match event {
                    "ok" => Outcome::Passed,
                    "failed" => Outcome::Failed,
                    "ignored" => Outcome::Skipped,
                    // `timeout` is a warning; the test still finishes later.
                    _ => return,
                };
                if let Some(name) = e.name {
                    if let Some(stdout) = e.stdout.as_ref().and_then(|v| v.as_str()) {
                        let lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
                        let said = crate::libtest::panic_message(&lines).join("\n");
                        self.out.say(&name, &said);
                    }
                    self.record(name, outcome);
                }
            }
            ("bench", _) => {
                if let Some(name) = e.name {
                    self.record(name, Outcome::Passed);
                }
            }
            _ => {}
        }
    }

    fn record(&mut self, name: String, outcome: Outcome) {
        self.started.remove(&name);
        if let Some(suite) = self.suite.as_mut() {
            suite.read += 1;
        }
        let file = doctest_file(&name);
        self.out.record(name, file, outcome);
    }

    /// Closes the current suite; `total` comes from its closing event,
    /// `None` when there was none (the binary died).
    fn end_suite(&mut self, total: Option<u64>) {
        let Some(suite) = self.suite.take() else {
            return;
        };
        match total {
            None => {
                self.unfinished();
                self.out.note(format!(
                    "line {}: suite ended without its closing event after {} results (crashed?)",
                    suite.line, suite.read
                ));
            }
            Some(total) => {
                if let Some(announced) = suite.announced.filter(|&a| a != total) {
                    self.out.note(format!(
                        "line {}: suite announced {announced} tests but counted {total}",
                        suite.line
                    ));
                }
                if total != suite.read {
                    self.out.note(format!(
                        "line {}: suite counts {total} tests but {} results were read",
                        suite.line, suite.read
                    ));
                }
            }
        }
    }

    fn unfinished(&mut self) {
        for (name, line) in std::mem::take(&mut self.started) {
            self.out.note(format!(
                "line {line}: `{name}` started but never finished; counted as an error"
            ));
            let file = doctest_file(&name);
            self.out.record(name, file, Outcome::Error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libtest::tests::{TINYCALC_MESSAGE, TINYLIB, outcomes};
    use crate::testing::failures;

    #[test]
    fn cargo_test_json_fixture_with_cargo_chatter() {
        let r = parse(include_bytes!("../tests/fixtures/libtest_json.txt")).unwrap();
        assert_eq!(outcomes(&r), TINYLIB, "same names as the text format");
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn crate_that_does_not_compile_in_json_mode() {
        // `cargo test -- -Z unstable-options --format json` never reaches the
        // harness when the test does not compile: cargo's text only (the
        // capture is byte-identical to the text format's, see the README).
        let r = parse(include_bytes!("../tests/fixtures/libtest_build_fail.txt")).unwrap();
        assert!(r.tests.is_empty(), "{:?}", r.tests);
        assert_eq!(failures(&r), [("tinycalc", TINYCALC_MESSAGE, true)]);
        let r = parse(include_bytes!("../tests/fixtures/libtest_json.txt")).unwrap();
        assert!(r.build_failures.is_empty(), "{:?}", r.build_failures);
    }

    #[test]
    fn started_but_never_finished_is_an_error() {
        let input = br#"{ "type": "suite", "event": "started", "test_count": 2 }
{ "type": "test", "event": "started", "name": "a::ok" }
{ "type": "test", "event": "started", "name": "a::crash" }
{ "type": "test", "name": "a::ok", "event": "ok" }
{ "type": "test", "name": "a::cra
"#;
        let r = parse(input).unwrap();
        assert_eq!(
            outcomes(&r),
            [
                ("a::crash", None, Outcome::Error),
                ("a::ok", None, Outcome::Passed)
            ]
        );
        // Malformed last line, unfinished test, missing suite end.
        assert_eq!(r.notes.len(), 3, "{:?}", r.notes);
    }

    #[test]
    fn wrong_shape_is_a_schema_error_with_the_line() {
        let input = b"{\"type\":\"suite\",\"event\":\"started\",\"test_count\":1}\n{\"type\":\"test\",\"event\":\"ok\",\"name\":42}\n";
        let err = parse(input).unwrap_err();
        assert!(matches!(err, ParseError::Schema { line: 2, .. }), "{err}");
        // Someone else's JSON is ignored.
        let r = parse(b"{\"Action\":\"pass\",\"Test\":5}\n{\"type\":5}\n").unwrap();
        assert!(r.tests.is_empty());
    }

    #[test]
    fn garbage_gives_no_tests() {
        for input in [&b"{{{{"[..], b"\xff{\x00", b"[1,2]\n{}\nnull", b""] {
            let r = parse(input).unwrap();
            assert!(r.tests.is_empty(), "{input:?}");
        }
    }

    #[test]
    fn a_failed_tests_message_starts_at_its_panic() {
        let r = parse(include_bytes!("../tests/fixtures/libtest_json.txt")).unwrap();
        crate::libtest::tests::wrong_sum_says_its_panic(&r);
    }
}
