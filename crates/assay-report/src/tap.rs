//! Test Anything Protocol (TAP 12/13/14, as `perl t/x.t`, node-tap or
//! bats print it).
//!
//! Test lines are `ok N - description # DIRECTIVE reason` and `not ok …`;
//! the number and ` - ` are optional. The name is the description (with
//! `\#` unescaped), or `test N` when there is none. `# SKIP` is a skip;
//! `# TODO` marks an expected failure, so `not ok … # TODO` is not a failure
//! (counted as passed, like the harness does). Indented lines (subtests, YAML
//! diagnostics) belong to the parent's `ok`/`not ok` line and are skipped.
//!
//! The plan (`1..N`, at the start or the end) is cross-checked. `Bail out!`
//! stops the stream: it is noted, and the tests that never ran stay absent.
//! A second plan after a complete stream starts a new stream (several `.t`
//! files printed one after another).
//!
//! A failed test's message is the diagnostics under its line: `#` comments
//! and the indented YAML block.

use crate::message::TEST_MESSAGE_MAX_LINES;
use crate::{Collector, Format, Outcome, Report, text_lines};

pub(crate) fn parse(input: &[u8]) -> Report {
    let mut out = Collector::new(Format::Tap);
    let mut stream = Stream::default();
    // The last test line's name and the diagnostics under it (its words).
    let mut diagnosed: Option<(String, Vec<String>)> = None;
    let say = |diagnosed: &mut Option<(String, Vec<String>)>, out: &mut Collector| {
        if let Some((name, lines)) = diagnosed.take() {
            out.say(&name, &lines.join("\n"));
        }
    };
    for (number, line) in text_lines(input) {
        if let Some((_, lines)) = diagnosed.as_mut()
            && is_diagnostic(&line)
        {
            if lines.len() < TEST_MESSAGE_MAX_LINES {
                lines.push(line.trim_end().to_owned());
            }
            continue;
        }
        say(&mut diagnosed, &mut out);
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim_end();
        if let Some(reason) = bail_out(line) {
            let reason = reason.trim();
            out.note(if reason.is_empty() {
                format!("line {number}: Bail out!")
            } else {
                format!("line {number}: Bail out! {reason}")
            });
            stream.check_plan(&mut out, true);
            return out.finish();
        }
        if let Some(planned) = plan(line) {
            if stream.plan.is_some() {
                stream.check_plan(&mut out, false);
                stream = Stream::default();
            }
            stream.plan = Some((planned, number));
            if stream.seen > 0 {
                // A trailing plan closes the stream.
                stream.check_plan(&mut out, false);
                stream = Stream {
                    plan: Some((planned, number)),
                    closed: true,
                    ..Stream::default()
                };
            }
            continue;
        }
        if let Some(test) = test_line(line) {
            if stream.closed {
                stream = Stream::default();
            }
            stream.seen += 1;
            let number = test.number.unwrap_or(stream.last_number + 1);
            stream.last_number = number;
            let name = if test.description.is_empty() {
                format!("test {number}")
            } else {
                test.description
            };
            diagnosed = Some((name.clone(), Vec::new()));
            out.record(name, None, test.outcome);
        }
    }
    say(&mut diagnosed, &mut out);
    stream.check_plan(&mut out, false);
    out.finish()
}

/// A line under a test line that is about it: a `#` comment (Test::More's
/// `#   Failed test …`, `#          got: …`) or an indented one (a YAML
/// block of `message`, `found`, `wanted`, `stack`), but not the harness's
/// closing `# Looks like you failed …`.
fn is_diagnostic(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("# Looks like") || t.starts_with("# Subtest:") {
        return false;
    }
    line.starts_with('#')
        || (line.starts_with([' ', '\t']) && test_line(t).is_none() && plan(t).is_none())
}

#[derive(Default)]
struct Stream {
    /// Planned count and the line of the plan.
    plan: Option<(usize, usize)>,
    seen: usize,
    last_number: usize,
    /// A trailing plan was read; the next test line starts a new stream.
    closed: bool,
}

impl Stream {
    fn check_plan(&self, out: &mut Collector, bailed: bool) {
        match self.plan {
            Some((planned, line)) if planned != self.seen && !self.closed => {
                out.note(format!(
                    "line {line}: plan 1..{planned} but {} tests ran{}",
                    self.seen,
                    if bailed { " before the bail out" } else { "" }
                ));
            }
            None if self.seen > 0 => {
                out.note("no plan line: the stream may have been cut short");
            }
            _ => {}
        }
    }
}

struct TestLine {
    number: Option<usize>,
    description: String,
    outcome: Outcome,
}

fn bail_out(line: &str) -> Option<&str> {
    line.strip_prefix("Bail out!")
}

/// `1..N`, possibly followed by `# SKIP reason`.
fn plan(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("1..")?;
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let tail = rest.get(end..)?.trim_start();
    if !(tail.is_empty() || tail.starts_with('#')) {
        return None;
    }
    rest.get(..end)?.parse().ok()
}

fn test_line(line: &str) -> Option<TestLine> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix("not ok") {
        (false, rest)
    } else {
        (true, line.strip_prefix("ok")?)
    };
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let rest = rest.trim_start();
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let number = rest.get(..digits).and_then(|d| d.parse().ok());
    let rest = rest.get(digits..).unwrap_or_default().trim_start();
    let rest = rest.strip_prefix("- ").unwrap_or(rest);
    let rest = if rest == "-" { "" } else { rest };
    let (description, directive) = split_directive(rest);
    let outcome = match directive.map(|d| d.to_ascii_uppercase()) {
        Some(d) if d.starts_with("SKIP") => Outcome::Skipped,
        Some(d) if d.starts_with("TODO") => Outcome::Passed,
        _ if ok => Outcome::Passed,
        _ => Outcome::Failed,
    };
    Some(TestLine {
        number,
        description: description.trim().replace("\\#", "#"),
        outcome,
    })
}

/// Splits `description # directive` at the first unescaped `#`.
fn split_directive(text: &str) -> (&str, Option<&str>) {
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            '\\' => escaped = !escaped,
            '#' if !escaped => return (&text[..i], Some(text[i + 1..].trim())),
            _ => escaped = false,
        }
    }
    (text, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes(r: &Report) -> Vec<(&str, Outcome)> {
        r.tests
            .iter()
            .map(|t| (t.name.as_str(), t.outcome))
            .collect()
    }

    #[test]
    fn perl_test_more_fixture() {
        let r = parse(include_bytes!("../tests/fixtures/tap_basic.txt"));
        assert_eq!(
            outcomes(&r),
            [
                ("addition works", Outcome::Passed),
                ("final - with dash", Outcome::Passed),
                ("parses dates", Outcome::Passed),
                ("parses times", Outcome::Passed),
                ("subtraction is broken", Outcome::Failed),
                ("test 3", Outcome::Passed),
                ("test 4", Outcome::Skipped),
            ]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert!(r.tests.iter().all(|t| t.file.is_none()));
        assert_eq!(
            crate::testing::messages(&r),
            [(
                "subtraction is broken",
                "#   Failed test 'subtraction is broken'\n#   at t/basic.t line 6."
            )]
        );
    }

    #[test]
    fn a_yaml_block_is_its_tests_words() {
        let r = parse(b"TAP version 13\n1..2\nnot ok 1 - adds\n  ---\n  message: 'expected 3, got 4'\n  ...\nok 2 - subtracts\n");
        assert_eq!(
            crate::testing::messages(&r),
            [("adds", "  ---\n  message: 'expected 3, got 4'\n  ...")]
        );
    }

    #[test]
    fn bail_out_fixture() {
        let r = parse(include_bytes!("../tests/fixtures/tap_bail.txt"));
        assert_eq!(
            outcomes(&r),
            [("connects", Outcome::Passed), ("logs in", Outcome::Passed)]
        );
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        assert!(r.notes[0].contains("database went away"), "{:?}", r.notes);
        assert!(r.notes[1].contains("plan 1..4 but 2"), "{:?}", r.notes);
    }

    #[test]
    fn tap14_with_trailing_plan_subtests_yaml_and_escapes() {
        let input = b"TAP version 14\n\
# Subtest: group\n    ok 1 - inner\n    1..1\n\
ok 1 - group\n\
not ok 2 - has \\# hash # todo later\n\
not ok - no number\n  ---\n  message: boom\n  ...\n\
ok 4 # SKIP\n\
ok\n\
1..5\n";
        let r = parse(input);
        assert_eq!(
            outcomes(&r),
            [
                ("group", Outcome::Passed),
                ("has # hash", Outcome::Passed),
                ("no number", Outcome::Failed),
                ("test 4", Outcome::Skipped),
                ("test 5", Outcome::Passed),
            ]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn plan_mismatch_and_two_streams() {
        let r = parse(b"1..3\nok 1 - a\nok 2 - b\n");
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);

        let r = parse(b"1..1\nok 1 - a\n1..2\nok 1 - b\nnot ok 2 - c\n");
        assert_eq!(
            outcomes(&r),
            [
                ("a", Outcome::Passed),
                ("b", Outcome::Passed),
                ("c", Outcome::Failed)
            ]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn skipped_plan_holds_no_tests() {
        let r = parse(b"1..0 # SKIP no database\n");
        assert!(r.tests.is_empty());
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn garbage_gives_no_tests() {
        for input in [
            &b"okay\nnot okay\n1..x\nokkk\n"[..],
            b"\xff\xfe\x00",
            b"1..\n# ok 1\n",
        ] {
            assert!(parse(input).tests.is_empty(), "{input:?}");
        }
    }
}
