//! `python -m unittest -v` output (what it writes to stderr; Django's runner
//! prints the same shape).
//!
//! A test announces itself as `method (qualname) ... ` and its status follows
//! (`ok`, `FAIL`, `ERROR`, `skipped 'why'`, `expected failure`, `unexpected
//! success`). The canonical name is the dotted id `module.Class.method`:
//! Python ≥ 3.11 prints it whole in the parentheses, older versions print
//! only `module.Class`, and both spellings map to the same name.
//!
//! The status does not always follow on the same line: a docstring's first
//! line may sit in between, and a test writing to the same stream splits
//! the line (`... warning\nok`, or `... chatterok` without a newline). A
//! status found on a line of its own or after ` ... ` is definite; one only
//! glued to the end of other output is tentative and noted. A test whose
//! status never shows is resolved by the failure listing at the end
//! (`FAIL: method (qualname)`), which also reveals subtest failures that
//! Python < 3.11 never prints inline; failing that it is an error (the
//! process probably died mid-test).
//!
//! Import failures show as `unittest.loader._FailedTest` and become an
//! `Error` named after the module that failed to import; class and module
//! fixtures (`setUpClass (module.Class)`) become `Error`s named
//! `module.Class.setUpClass`. The `Ran N tests` lines are cross-checked.
//!
//! Such a failed import is also a [`BuildFailure`] of the module, read from
//! the failure listing: `ImportError: Failed to import test module:
//! tests.test_x` and the traceback under it are its message. The other
//! modules still run.
//!
//! A failed test's message is its listing block (between the `---` rule
//! and the next rule), the exception first and the traceback after it.

use crate::build::Failures;
use crate::message::TEST_MESSAGE_MAX_LINES;
use crate::pending::Pending;
use crate::{BuildFailure, Collector, Format, Outcome, Report, leading_count, text_lines};

const FAILED_IMPORT_PREFIXES: [&str; 2] = [
    "unittest.loader._FailedTest.",
    "unittest.loader.ModuleImportFailure.",
];
const CLASS_FIXTURES: [&str; 2] = ["setUpClass", "tearDownClass"];
const MODULE_FIXTURES: [&str; 2] = ["setUpModule", "tearDownModule"];

pub(crate) fn parse(input: &[u8]) -> Report {
    let mut p = Parser {
        out: Collector::new(Format::Unittest),
        pending: None,
        unresolved: Vec::new(),
        counted: 0,
        ran: None,
        prev_was_rule: false,
        block: None,
    };
    for (number, line) in text_lines(input) {
        p.line(number, &line);
    }
    p.out.build_failures(build_failures(input));
    p.finish()
}

/// `ImportError: Failed to import test module: tests.test_x` in the failure
/// listing, with the lines under it up to the next rule.
pub(crate) fn build_failures(input: &[u8]) -> Vec<BuildFailure> {
    const HEADER: &str = "ImportError: Failed to import test module: ";
    let mut found = Failures::default();
    let mut block: Option<(String, Vec<String>)> = None;
    for (_, line) in text_lines(input) {
        if let Some(module) = line.strip_prefix(HEADER) {
            if let Some((unit, lines)) = block.take() {
                found.add(&unit, exception_first(lines), false);
            }
            block = Some((module.trim().to_owned(), vec![line.clone()]));
        } else if is_rule(&line, '=') || is_rule(&line, '-') {
            if let Some((unit, lines)) = block.take() {
                found.add(&unit, exception_first(lines), false);
            }
        } else if let Some((_, lines)) = block.as_mut() {
            lines.push(line);
        }
    }
    if let Some((unit, lines)) = block.take() {
        found.add(&unit, exception_first(lines), false);
    }
    found.finish()
}

/// A failed import's lines with the exception that ended its traceback
/// (`SyntaxError: '(' was never closed`, the traceback's last unindented
/// line) second, under the header: a reader of the first lines sees the
/// cause, not the loader's frames.
fn exception_first(mut lines: Vec<String>) -> Vec<String> {
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    if let Some(at) = last.filter(|&at| at > 1) {
        let line = &lines[at];
        if !line.starts_with(char::is_whitespace) && line.contains(": ") {
            let exception = lines.remove(at);
            lines.insert(1, exception);
        }
    }
    lines
}

/// The dotted module of a test id: `tests.test_x.T.test_a` → `tests.test_x`.
pub(crate) fn module_of(id: &str) -> Option<String> {
    let (module, _) = split_module(id);
    (!module.is_empty()).then_some(module)
}

struct Parser {
    out: Collector,
    pending: Option<Pending>,
    /// Tests that never showed a status, with the line they started on.
    unresolved: Vec<(String, usize)>,
    /// Results that unittest counts in `Ran N tests` (fixtures excluded).
    counted: usize,
    ran: Option<usize>,
    prev_was_rule: bool,
    /// The listing block being read: the test it names, whether its `---`
    /// rule has passed (its words follow), and its lines.
    block: Option<(String, bool, Vec<String>)>,
}

impl Parser {
    fn line(&mut self, number: usize, line: &str) {
        let is_equals_rule = is_rule(line, '=');
        let after_rule = std::mem::replace(&mut self.prev_was_rule, is_equals_rule);
        if after_rule && let Some((outcome, desc)) = listing_header(line) {
            self.close_pending();
            if let Some((id, _)) = parse_description(desc) {
                self.block = Some((identify(&id).0, false, Vec::new()));
                self.listing(id, outcome);
            }
            return;
        }
        let is_dash_rule = is_rule(line, '-');
        if let Some((_, words, lines)) = self.block.as_mut()
            && !is_equals_rule
            && ran_count(line).is_none()
        {
            match (*words, is_dash_rule) {
                (false, true) => *words = true,
                (true, false) if lines.len() < 4 * TEST_MESSAGE_MAX_LINES => {
                    lines.push(line.to_owned())
                }
                (true, true) => self.say_block(),
                _ => {}
            }
        } else {
            self.say_block();
        }
        if is_equals_rule || is_dash_rule {
            self.close_pending();
            return;
        }
        if let Some(ran) = ran_count(line) {
            self.close_pending();
            *self.ran.get_or_insert(0) += ran;
            return;
        }
        if let Some(indented) = line.strip_prefix("  ")
            && let Some((id, rest)) = parse_description(indented)
            && let Some(outcome) = rest.rsplit_once(" ... ").and_then(|(_, s)| status(s))
        {
            self.subtest(id, outcome);
            return;
        }
        match parse_description(line) {
            Some((id, rest)) if rest.is_empty() || rest.starts_with(" ... ") => {
                self.close_pending();
                let after = rest.strip_prefix(" ... ").unwrap_or("");
                match status(after) {
                    Some(outcome) => self.record(id, outcome),
                    None => {
                        self.pending = Some(Pending {
                            id,
                            line: number,
                            tentative: glued_status(after),
                        })
                    }
                }
            }
            _ => self.continuation(line),
        }
    }

    /// A line while a test's status is outstanding: docstring, output, or
    /// the status itself.
    fn continuation(&mut self, line: &str) {
        let Some(pending) = self.pending.as_mut() else {
            return;
        };
        let definite = line
            .rsplit_once(" ... ")
            .and_then(|(_, s)| status(s))
            .or_else(|| status(line));
        if let Some(outcome) = definite {
            if let Some(p) = self.pending.take() {
                self.record(p.id, outcome);
            }
        } else if let Some(outcome) = glued_status(line) {
            pending.tentative = Some(outcome);
        }
    }

    fn close_pending(&mut self) {
        self.settle_pending(false);
    }

    /// As [`Parser::close_pending`]; when the run `crashed` (no `Ran N
    /// tests` line), a tentative status is not believed.
    fn settle_pending(&mut self, crashed: bool) {
        let Some(p) = self.pending.take() else {
            return;
        };
        match p.settle(crashed, &mut self.out, canonical_name) {
            Ok((id, outcome)) => self.record(id, outcome),
            Err(unfinished) => self.unresolved.push(unfinished),
        }
    }

    fn record(&mut self, id: String, outcome: Outcome) {
        let (name, file, is_fixture) = identify(&id);
        let outcome = if is_failed_import(&id) {
            Outcome::Error
        } else {
            outcome
        };
        if !is_fixture {
            self.counted += 1;
        }
        self.out.record(name, file, outcome);
    }

    /// Python ≥ 3.11 prints failing subtests indented under their test; they
    /// settle the parent's outcome. Skipped subtests do not: the parent's own
    /// status decides.
    fn subtest(&mut self, id: String, outcome: Outcome) {
        if !outcome.is_failure() {
            return;
        }
        if self.pending.as_ref().is_some_and(|p| p.id == id) {
            self.pending = None;
            self.record(id, outcome);
        } else {
            let (name, file, _) = identify(&id);
            self.out.merge(name, file, outcome);
        }
    }

    /// The listing block read so far, as its test's words.
    fn say_block(&mut self) {
        if let Some((name, _, lines)) = self.block.take() {
            self.out.say(&name, &traceback_message(lines).join("\n"));
        }
    }

    /// A `FAIL:` / `ERROR:` block in the listing after the run.
    fn listing(&mut self, id: String, outcome: Outcome) {
        if let Some(i) = self.unresolved.iter().position(|(u, _)| *u == id) {
            self.unresolved.remove(i);
            self.record(id, outcome);
            return;
        }
        let (name, file, _) = identify(&id);
        if !self.out.contains(&name) {
            self.out.note(format!(
                "`{name}` appears only in the failure listing, not in the progress lines"
            ));
        }
        self.out.merge(name, file, outcome);
    }

    fn finish(mut self) -> Report {
        self.say_block();
        self.settle_pending(self.ran.is_none());
        for (id, line) in std::mem::take(&mut self.unresolved) {
            self.out.note(format!(
                "line {line}: `{}` started but printed no status; counted as an error",
                canonical_name(&id)
            ));
            self.record(id, Outcome::Error);
        }
        match self.ran {
            Some(ran) if ran != self.counted => self.out.note(format!(
                "unittest reports `Ran {ran} tests` but {} results were read",
                self.counted
            )),
            None if self.counted > 0 => self
                .out
                .note("no `Ran N tests` line: the run may have been cut short"),
            _ => {}
        }
        self.out.finish()
    }
}

/// Parses `method (qualname)` at the start of `line`, returning the dotted
/// test id and whatever follows the closing parenthesis.
fn parse_description(line: &str) -> Option<(String, &str)> {
    let (method, rest) = line.split_once(" (")?;
    let (qual, rest) = rest.split_once(')')?;
    let ident = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|part| {
                !part.is_empty()
                    && !part.starts_with(|c: char| c.is_ascii_digit())
                    && part.chars().all(|c| c.is_alphanumeric() || c == '_')
            })
    };
    if !ident(method) || !ident(qual) {
        return None;
    }
    let id = if qual
        .strip_suffix(method)
        .is_some_and(|prefix| prefix.ends_with('.'))
    {
        qual.to_owned()
    } else {
        format!("{qual}.{method}")
    };
    Some((id, rest))
}

/// The status text unittest prints after ` ... `, exactly.
fn status(text: &str) -> Option<Outcome> {
    match text.trim() {
        "ok" | "expected failure" => Some(Outcome::Passed),
        "FAIL" | "unexpected success" => Some(Outcome::Failed),
        "ERROR" => Some(Outcome::Error),
        t if t == "skipped" || (t.starts_with("skipped ") && t.len() > 8) => Some(Outcome::Skipped),
        _ => None,
    }
}

/// A status glued to the end of a test's own output (`chatterok`).
fn glued_status(text: &str) -> Option<Outcome> {
    let t = text.trim_end();
    if t.is_empty() {
        return None;
    }
    const SUFFIXES: [(&str, Outcome); 5] = [
        ("unexpected success", Outcome::Failed),
        ("expected failure", Outcome::Passed),
        ("ERROR", Outcome::Error),
        ("FAIL", Outcome::Failed),
        ("ok", Outcome::Passed),
    ];
    if let Some((_, outcome)) = SUFFIXES.iter().find(|(s, _)| t.ends_with(s)) {
        return Some(*outcome);
    }
    t.ends_with('\'')
        .then(|| t.rfind("skipped '"))
        .flatten()
        .map(|_| Outcome::Skipped)
}

/// A listing block's words with the exception first: the lines after the
/// traceback's last frame (`AssertionError: 3.5 != 3`, a diff), then the
/// traceback, so the cap never cuts the exception off.
fn traceback_message(lines: Vec<String>) -> Vec<String> {
    let Some(last_frame) = lines.iter().rposition(|l| l.starts_with("  File \"")) else {
        return lines;
    };
    let end = lines[last_frame + 1..]
        .iter()
        .position(|l| !l.starts_with("    "))
        .map_or(lines.len(), |i| last_frame + 1 + i);
    let (frames, exception) = lines.split_at(end);
    let said = exception
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    exception[..said].iter().chain(frames).cloned().collect()
}

/// `FAIL: desc`, `ERROR: desc`, `UNEXPECTED SUCCESS: desc` in the listing.
fn listing_header(line: &str) -> Option<(Outcome, &str)> {
    if let Some(desc) = line.strip_prefix("FAIL: ") {
        Some((Outcome::Failed, desc))
    } else if let Some(desc) = line.strip_prefix("ERROR: ") {
        Some((Outcome::Error, desc))
    } else {
        line.strip_prefix("UNEXPECTED SUCCESS: ")
            .map(|desc| (Outcome::Failed, desc))
    }
}

fn is_rule(line: &str, c: char) -> bool {
    line.len() >= 20 && line.chars().all(|x| x == c)
}

/// `Ran 10 tests in 0.001s`.
fn ran_count(line: &str) -> Option<usize> {
    let (n, rest) = leading_count(line.strip_prefix("Ran ")?)?;
    (rest.starts_with("test in ") || rest.starts_with("tests in ")).then_some(n)
}

fn is_failed_import(id: &str) -> bool {
    FAILED_IMPORT_PREFIXES.iter().any(|p| id.starts_with(p))
}

fn canonical_name(id: &str) -> String {
    identify(id).0
}

/// Canonical name, derived file, and whether the id is a class/module
/// fixture rather than a test.
fn identify(id: &str) -> (String, Option<String>, bool) {
    if let Some(module) = FAILED_IMPORT_PREFIXES
        .iter()
        .find_map(|p| id.strip_prefix(p))
    {
        return (module.to_owned(), module_file(module), false);
    }
    let (module, is_fixture) = split_module(id);
    (id.to_owned(), module_file(&module), is_fixture)
}

/// The module part of a test id, and whether the id is a class or module
/// fixture rather than a test.
fn split_module(id: &str) -> (String, bool) {
    let mut parts: Vec<&str> = id.split('.').collect();
    let method = parts.pop().unwrap_or_default();
    let is_fixture = if MODULE_FIXTURES.contains(&method) {
        true
    } else {
        // Drop the class, then any enclosing classes (nested TestCases).
        let is_class_fixture = CLASS_FIXTURES.contains(&method);
        parts.pop();
        while parts.len() > 1
            && parts
                .last()
                .is_some_and(|p| p.starts_with(|c: char| c.is_uppercase()))
        {
            parts.pop();
        }
        is_class_fixture
    };
    (parts.join("."), is_fixture)
}

/// `tests.test_ops` → `tests/test_ops.py`.
fn module_file(module: &str) -> Option<String> {
    (!module.is_empty()).then(|| format!("{}.py", module.replace('.', "/")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TestResult;
    use crate::testing::failures;

    fn outcomes(r: &Report) -> Vec<(&str, Outcome)> {
        r.tests
            .iter()
            .map(|t| (t.name.as_str(), t.outcome))
            .collect()
    }

    const OPS: [(&str, Outcome); 10] = [
        ("tests.test_broken", Outcome::Error),
        ("tests.test_ops.TestDivide.test_by_zero", Outcome::Error),
        (
            "tests.test_ops.TestDivide.test_expected_failure",
            Outcome::Passed,
        ),
        ("tests.test_ops.TestDivide.test_noisy", Outcome::Passed),
        ("tests.test_ops.TestDivide.test_simple", Outcome::Passed),
        ("tests.test_ops.TestDivide.test_skipped", Outcome::Skipped),
        (
            "tests.test_ops.TestDivide.test_unexpected_success",
            Outcome::Failed,
        ),
        ("tests.test_ops.TestDivide.test_wrong", Outcome::Failed),
        ("tests.test_ops.TestMultiply.test_ints", Outcome::Passed),
        ("tests.test_ops.TestMultiply.test_subtests", Outcome::Failed),
    ];

    #[test]
    fn python_311_fixture() {
        let r = parse(include_bytes!("../tests/fixtures/unittest_py311.txt"));
        assert_eq!(outcomes(&r), OPS);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert_eq!(
            r.tests[0],
            TestResult {
                name: "tests.test_broken".to_owned(),
                file: Some("tests/test_broken.py".to_owned()),
                outcome: Outcome::Error,
                message: r.tests[0].message.clone(),
            }
        );
        let said = crate::testing::messages(&r);
        let of = |name: &str| said.iter().find(|(t, _)| *t == name).map(|(_, m)| *m);
        assert_eq!(
            of("tests.test_ops.TestDivide.test_wrong"),
            Some(
                "AssertionError: 3.5 != 3\nTraceback (most recent call last):\n  File \"/tmp/ut/tests/test_ops.py\", line 16, in test_wrong\n    self.assertEqual(7 / 2, 3)"
            )
        );
        assert!(
            of("tests.test_ops.TestDivide.test_by_zero")
                .is_some_and(|m| m.starts_with("ZeroDivisionError: division by zero\nTraceback")),
            "{said:?}"
        );
        assert!(
            of("tests.test_ops.TestMultiply.test_subtests")
                .is_some_and(|m| m.starts_with("AssertionError: 2 not less than 2\n")),
            "{said:?}"
        );
        assert!(
            of("tests.test_broken").is_some_and(|m| m.starts_with("ModuleNotFoundError")),
            "{said:?}"
        );
        assert!(
            r.tests[1..]
                .iter()
                .all(|t| t.file.as_deref() == Some("tests/test_ops.py"))
        );
    }

    #[test]
    fn failed_imports_of_an_added_api_and_a_syntax_error() {
        let r = parse(include_bytes!("../tests/fixtures/unittest_build_fail.txt"));
        assert_eq!(
            outcomes(&r),
            [
                ("tests.test_add.TestAdd.test_add", Outcome::Passed),
                ("tests.test_mul", Outcome::Error),
                ("tests.test_syntax", Outcome::Error),
            ]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        let got = failures(&r);
        let units: Vec<(&str, bool)> = got.iter().map(|(u, _, s)| (*u, *s)).collect();
        assert_eq!(
            units,
            [("tests.test_mul", false), ("tests.test_syntax", false)]
        );
        // The exception that ended the traceback comes second, under the
        // header: the cause before the loader's frames.
        let (_, mul, _) = got[0];
        assert!(
            mul.starts_with(
                "ImportError: Failed to import test module: tests.test_mul\n\
                 ImportError: cannot import name 'mul' from 'calc' (/tmp/t14-py/calc/__init__.py)\n\
                 Traceback"
            ),
            "{mul}"
        );
        assert_eq!(mul.lines().count(), 10, "{mul}");
        assert_eq!(
            got[1].1.lines().nth(1),
            Some("SyntaxError: invalid syntax"),
            "{}",
            got[1].1
        );
        let unit = |name: &str| r.build_failure_for(name, None).map(|b| b.unit.as_str());
        assert_eq!(
            unit("tests.test_mul.TestMul.test_mul"),
            Some("tests.test_mul")
        );
        assert_eq!(unit("tests.test_add.TestAdd.test_add"), None);
    }

    #[test]
    fn python_38_fixture_gives_the_same_names() {
        // 3.8 prints `(module.Class)` and never prints failing subtests
        // inline: test_subtests is settled by the failure listing.
        let r = parse(include_bytes!("../tests/fixtures/unittest_py38.txt"));
        assert_eq!(outcomes(&r), OPS);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        let got = failures(&r);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "tests.test_broken");
        assert_eq!(
            got[0].1.lines().nth(1),
            Some("ModuleNotFoundError: No module named 'does_not_exist_module'"),
            "{}",
            got[0].1
        );
    }

    #[test]
    fn setup_class_error_and_glued_status() {
        let r = parse(include_bytes!(
            "../tests/fixtures/unittest_setup_class_interleaved.txt"
        ));
        assert_eq!(
            outcomes(&r),
            [
                (
                    "tests.test_setup.TestBrokenSetup.setUpClass",
                    Outcome::Error
                ),
                ("tests.test_setup.TestFine.test_c", Outcome::Passed),
            ]
        );
        assert_eq!(r.tests[0].file.as_deref(), Some("tests/test_setup.py"));
        // `Ran 1 test` agrees: fixtures are not counted; the glued `ok` is noted.
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(r.notes[0].contains("glued"), "{:?}", r.notes);
    }

    #[test]
    fn old_style_failed_import_and_module_fixture() {
        let input = b"tests.test_gone (unittest.loader._FailedTest) ... ERROR\n\
setUpModule (tests.test_db) ... ERROR\n\
\n\
----------------------------------------------------------------------\n\
Ran 1 test in 0.001s\n\
\n\
FAILED (errors=2)\n";
        let r = parse(input);
        assert_eq!(
            outcomes(&r),
            [
                ("tests.test_db.setUpModule", Outcome::Error),
                ("tests.test_gone", Outcome::Error)
            ]
        );
        assert_eq!(r.tests[0].file.as_deref(), Some("tests/test_db.py"));
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn docstring_and_output_split_the_status_line() {
        let input = b"test_a (pkg.test_m.T.test_a)\nDoes a thing. ... ok\n\
test_b (pkg.test_m.T.test_b) ... some output\nmore output\nFAIL\n\
test_c (pkg.test_m.T.test_c) ... skipped 'no db'\n\
Ran 3 tests in 0.1s\n";
        let r = parse(input);
        assert_eq!(
            outcomes(&r),
            [
                ("pkg.test_m.T.test_a", Outcome::Passed),
                ("pkg.test_m.T.test_b", Outcome::Failed),
                ("pkg.test_m.T.test_c", Outcome::Skipped),
            ]
        );
        assert_eq!(r.tests[0].file.as_deref(), Some("pkg/test_m.py"));
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn crash_mid_test_is_an_error_and_count_mismatch_is_noted() {
        let input =
            b"test_a (m.T.test_a) ... ok\ntest_b (m.T.test_b) ... looks ok\nSegmentation fault\n";
        let r = parse(input);
        assert_eq!(
            outcomes(&r),
            [
                ("m.T.test_a", Outcome::Passed),
                ("m.T.test_b", Outcome::Error)
            ]
        );
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);

        let r = parse(b"test_a (m.T.test_a) ... ok\nRan 2 tests in 0.0s\n");
        assert!(
            r.notes.iter().any(|n| n.contains("Ran 2 tests")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn garbage_gives_no_tests() {
        for input in [
            &b"( ... ok\n) ... FAIL"[..],
            b"\xff\xfe",
            b"====================\nFAIL: \nFAIL: x (\n",
            b"Ran many tests in 1s",
        ] {
            let r = parse(input);
            assert!(r.tests.is_empty(), "{input:?}: {r:?}");
        }
        assert!(parse(b"just some text\nok\nFAIL\n").tests.is_empty());
    }

    #[test]
    fn a_well_formed_line_is_a_test_even_with_odd_names() {
        // `method (class) ... ok` is the pre-3.11 verbose line; it is read
        // as exactly that, not as garbage.
        let r = parse(b"hello (world) ... ok");
        assert_eq!(outcomes(&r), [("world.hello", Outcome::Passed)], "{r:?}");
    }
}
