//! Rust libtest's default text output, as `cargo test` prints it: one
//! `running N tests` … `test result:` block per test binary (unit tests,
//! each integration test, doc tests), concatenated.
//!
//! Result lines are `test path::to::name ... ok|FAILED|ignored` (also
//! `ignored, reason`, and `bench: …` for benchmarks run as tests). The name
//! is the path as printed, minus the test-mode suffix libtest appends
//! (` - should panic`, ` - compile fail`), so it matches the JSON format's
//! name. Doc tests are named `src/lib.rs - item (line 3)` and get that file;
//! the report keeps them under ids without the line ([`stable_doctest_ids`]:
//! `src/lib.rs - item`), so a patch that moves lines renames no test.
//!
//! With `--nocapture --test-threads=1` a test's output can land between
//! `... ` and its status; a status glued to other text is taken tentatively
//! and noted. Each block's own counts (`running N tests`, `test result: …
//! N passed; N failed; N ignored; N measured`) are cross-checked, and a block
//! that never reaches its `test result:` line (the test binary crashed) is
//! noted, its started-but-unfinished test counted as an error.
//!
//! A crate whose tests do not compile never prints a block: cargo prints
//! `error: could not compile `name` (test "x") due to …` after rustc's
//! diagnostics and runs no test at all (it builds every test target first,
//! `--no-fail-fast` or not). That line is a [`BuildFailure`] of the crate,
//! with the diagnostics before it (from their first `error` line, without
//! cargo's status lines) as its message; the JSON format reads cargo's text
//! the same way.
//!
//! A failed test's message is its `---- name stdout ----` section of the
//! `failures:` listing, from its panic on (the location, the assertion,
//! `left` and `right`, the first frames).

use crate::build::{Failures, MESSAGE_MAX_LINES};
use crate::message::TEST_MESSAGE_MAX_LINES;
use crate::pending::Pending;
use crate::{BuildFailure, Collector, Format, Outcome, Report, leading_count, text_lines};

const MODE_SUFFIXES: [&str; 3] = [" - should panic", " - compile fail", " - compile"];

pub(crate) fn parse(input: &[u8]) -> Report {
    let mut p = Parser {
        out: Collector::new(Format::Libtest),
        block: None,
        pending: None,
    };
    for (number, line) in text_lines(input) {
        p.line(number, &line);
    }
    p.end_block(None);
    say_failures(&mut p.out, input);
    p.out.build_failures(build_failures(input));
    p.out.finish()
}

/// Gives each failed test the words of its `---- name stdout ----` section
/// in the `failures:` listing: from its panic (`thread '…' panicked at`:
/// the location, the assertion, left and right, the first frames), else
/// what it printed.
fn say_failures(out: &mut Collector, input: &[u8]) {
    let mut section: Option<(String, Vec<String>)> = None;
    let flush = |section: &mut Option<(String, Vec<String>)>, out: &mut Collector| {
        if let Some((name, lines)) = section.take() {
            out.say(&name, &panic_message(&lines).join("\n"));
        }
    };
    for (_, line) in text_lines(input) {
        let header = line.strip_prefix("---- ").and_then(|r| {
            r.strip_suffix(" stdout ----")
                .or_else(|| r.strip_suffix(" stderr ----"))
        });
        if let Some(raw) = header {
            flush(&mut section, out);
            section = Some((canonical_name(raw), Vec::new()));
        } else if line == "failures:" || line.starts_with("test result: ") {
            flush(&mut section, out);
        } else if let Some((_, lines)) = section.as_mut()
            && lines.len() < 4 * TEST_MESSAGE_MAX_LINES
        {
            lines.push(line);
        }
    }
    flush(&mut section, out);
}

/// A failed test's output from its panic on (what it printed before is
/// chatter), or all of it when it did not panic.
pub(crate) fn panic_message(lines: &[String]) -> &[String] {
    let start = lines
        .iter()
        .position(|l| {
            l.starts_with("thread '") && l.contains("' panicked at") || l.contains(" panicked at ")
        })
        .unwrap_or(0);
    &lines[start..]
}

/// cargo's `error: could not compile `crate`` lines, each with the rustc
/// diagnostics printed since the previous one.
pub(crate) fn build_failures(input: &[u8]) -> Vec<BuildFailure> {
    let mut found = Failures::default();
    let mut diagnostics: Vec<String> = Vec::new();
    for (_, line) in text_lines(input) {
        if let Some(rest) = line.strip_prefix("error: could not compile `") {
            if let Some((krate, _)) = rest.split_once('`') {
                found.add(krate, std::mem::take(&mut diagnostics), true);
            }
            continue;
        }
        if is_cargo_status(&line) || line.starts_with("For more information about") {
            continue;
        }
        if diagnostics.is_empty() && !line.starts_with("error") {
            continue;
        }
        // Only the first lines are kept; a long log must not pile up here.
        if diagnostics.len() <= MESSAGE_MAX_LINES {
            diagnostics.push(line);
        }
    }
    found.finish()
}

/// `   Compiling tinycalc v0.1.0 (…)`, `warning: build failed, waiting …`:
/// cargo's progress, not the compiler's message.
fn is_cargo_status(line: &str) -> bool {
    const STATUS: [&str; 10] = [
        "Compiling ",
        "Checking ",
        "Building ",
        "Fresh ",
        "Blocking ",
        "Downloading ",
        "Downloaded ",
        "Updating ",
        "Locking ",
        "Adding ",
    ];
    let trimmed = line.trim_start();
    (line.starts_with(' ') && STATUS.iter().any(|s| trimmed.starts_with(s)))
        || line.starts_with("warning: build failed, waiting for other jobs")
}

/// One `running N tests` block.
struct Block {
    line: usize,
    announced: usize,
    read: usize,
}

struct Parser {
    out: Collector,
    block: Option<Block>,
    pending: Option<Pending>,
}

impl Parser {
    fn line(&mut self, number: usize, line: &str) {
        if let Some(announced) = running_count(line) {
            self.end_block(None);
            self.block = Some(Block {
                line: number,
                announced,
                read: 0,
            });
            return;
        }
        if let Some(counted) = line.strip_prefix("test result: ") {
            self.end_block(Some(result_total(counted)));
            return;
        }
        if let Some((raw_name, after)) = line
            .strip_prefix("test ")
            .and_then(|rest| rest.split_once(" ... "))
        {
            self.close_pending();
            let name = canonical_name(raw_name);
            if name.is_empty() {
                return;
            }
            match status(after) {
                Some(outcome) => self.record(name, outcome),
                None => {
                    self.pending = Some(Pending {
                        id: name,
                        line: number,
                        tentative: glued_status(after),
                    })
                }
            }
            return;
        }
        if let Some(pending) = self.pending.as_mut() {
            if let Some(outcome) = status(line) {
                if let Some(p) = self.pending.take() {
                    self.record(p.id, outcome);
                }
            } else if let Some(outcome) = glued_status(line) {
                pending.tentative = Some(outcome);
            }
        }
    }

    fn record(&mut self, name: String, outcome: Outcome) {
        if let Some(block) = self.block.as_mut() {
            block.read += 1;
        }
        let file = doctest_file(&name);
        self.out.record(name, file, outcome);
    }

    /// Settles a test whose status was not on its own line: a tentative
    /// status if one was seen, else it never finished.
    fn close_pending(&mut self) {
        self.settle_pending(false);
    }

    /// As [`Parser::close_pending`]; when the binary `crashed`, a tentative
    /// status is not believed: whatever was glued to the output, the test
    /// did not finish.
    fn settle_pending(&mut self, crashed: bool) {
        let Some(p) = self.pending.take() else {
            return;
        };
        match p.settle(crashed, &mut self.out, str::to_owned) {
            Ok((name, outcome)) => self.record(name, outcome),
            Err((name, line)) => {
                self.out.note(format!(
                    "line {line}: `{name}` started but printed no status; counted as an error"
                ));
                self.record(name, Outcome::Error);
            }
        }
    }

    /// Closes the current block; `total` is the sum from its `test result:`
    /// line, `None` when the block ended without one.
    fn end_block(&mut self, total: Option<Option<usize>>) {
        self.settle_pending(total.is_none());
        let Some(block) = self.block.take() else {
            return;
        };
        match total {
            None => self.out.note(format!(
                "line {}: test binary ended without a `test result:` line after {} of {} tests (crashed?)",
                block.line, block.read, block.announced
            )),
            Some(total) => {
                if block.read != block.announced {
                    self.out.note(format!(
                        "line {}: `running {} tests` but {} results were read",
                        block.line, block.announced, block.read
                    ));
                } else if total.is_some_and(|t| t != block.read) {
                    self.out.note(format!(
                        "line {}: the `test result:` counts disagree with the {} results read",
                        block.line, block.read
                    ));
                }
            }
        }
    }
}

/// `running 5 tests` / `running 1 test`.
fn running_count(line: &str) -> Option<usize> {
    let (n, rest) = leading_count(line.strip_prefix("running ")?)?;
    matches!(rest, "test" | "tests").then_some(n)
}

/// `ok. 2 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out; …`:
/// the number of results the block printed.
fn result_total(text: &str) -> Option<usize> {
    let (_, counts) = text.split_once(". ")?;
    let mut total = None;
    for part in counts.split("; ") {
        if let Some((n, "passed" | "failed" | "ignored" | "measured")) = leading_count(part) {
            *total.get_or_insert(0) += n;
        }
    }
    total
}

fn status(text: &str) -> Option<Outcome> {
    let t = text.trim();
    match t {
        "ok" => Some(Outcome::Passed),
        "FAILED" => Some(Outcome::Failed),
        "ignored" => Some(Outcome::Skipped),
        _ if t.starts_with("ignored, ") => Some(Outcome::Skipped),
        _ if t.starts_with("bench:") => Some(Outcome::Passed),
        _ => None,
    }
}

fn glued_status(text: &str) -> Option<Outcome> {
    let t = text.trim_end();
    if t.ends_with("FAILED") {
        Some(Outcome::Failed)
    } else if t.ends_with("ok") {
        Some(Outcome::Passed)
    } else if t.ends_with("ignored") {
        Some(Outcome::Skipped)
    } else {
        None
    }
}

/// The test's name without libtest's test-mode suffix.
pub(crate) fn canonical_name(raw: &str) -> String {
    let raw = raw.trim();
    MODE_SUFFIXES
        .iter()
        .find_map(|s| raw.strip_suffix(s))
        .unwrap_or(raw)
        .to_owned()
}

/// `src/lib.rs - add (line 3)` → `src/lib.rs` (also for the stable id
/// `src/lib.rs - add`, see [`stable_doctest_ids`]).
pub(crate) fn doctest_file(name: &str) -> Option<String> {
    doctest_file_str(name).map(str::to_owned)
}

fn doctest_file_str(name: &str) -> Option<&str> {
    let (file, _) = name.split_once(" - ")?;
    (file.ends_with(".rs") && !file.contains(' ')).then_some(file)
}

/// A doctest's name as libtest prints it, split: `src/lib.rs - add (line 3)`
/// → (`src/lib.rs`, `add`, 3). The item is empty for the crate's or a
/// module's own docs (`src/lib.rs - (line 1)`).
fn doctest_parts(name: &str) -> Option<(&str, &str, u64)> {
    let file = doctest_file_str(name)?;
    let rest = &name[file.len() + 3..];
    let (item, line) = rest
        .strip_suffix(')')?
        .rsplit_once("(line ")
        .map(|(item, line)| (item.trim_end(), line))?;
    Some((file, item, line.parse().ok()?))
}

/// The word that stands for an empty item in a stable doctest id.
const CRATE_DOCS: &str = "(docs)";

/// Renames the doctests of a libtest report to ids that do not depend on
/// where they sit in their file: `src/lib.rs - add (line 3)` becomes
/// `src/lib.rs - add`; an item with several doctests numbers the later ones
/// in source order (`src/lib.rs - add #2`), and the crate's own docs are
/// `src/lib.rs - (docs)`. A patch that moves lines renames no test; one that
/// inserts a doctest above another of the same item renumbers them.
pub(crate) fn stable_doctest_ids(
    tests: &mut std::collections::BTreeMap<String, crate::TestResult>,
) {
    use std::collections::BTreeMap;
    let mut items: BTreeMap<(String, String), Vec<(u64, String)>> = BTreeMap::new();
    for name in tests.keys() {
        if let Some((file, item, line)) = doctest_parts(name) {
            items
                .entry((file.to_owned(), item.to_owned()))
                .or_default()
                .push((line, name.clone()));
        }
    }
    for ((file, item), mut found) in items {
        found.sort();
        let item = if item.is_empty() { CRATE_DOCS } else { &item };
        for (k, (_, old)) in found.into_iter().enumerate() {
            let id = match k {
                0 => format!("{file} - {item}"),
                k => format!("{file} - {item} #{}", k + 1),
            };
            if let Some(mut t) = tests.remove(&old) {
                t.name = id.clone();
                tests.insert(id, t);
            }
        }
    }
}

/// A doctest id's file and item, without an order number or a line
/// annotation (`src/lib.rs - add #2` and `src/lib.rs - add (line 3)` →
/// (`src/lib.rs`, `add`); the crate's docs → (`src/lib.rs`, `(docs)`));
/// None for any other test.
pub(crate) fn doctest_item(id: &str) -> Option<(&str, &str)> {
    let file = doctest_file_str(id)?;
    let item = &id[file.len() + 3..];
    let item = match item.rsplit_once(" #") {
        Some((item, n)) if n.parse::<u32>().is_ok() => item,
        _ => item,
    };
    let item = match item.rsplit_once("(line ") {
        Some((item, line)) if line.ends_with(')') => item.trim_end(),
        _ => item,
    };
    Some((file, if item.is_empty() { CRATE_DOCS } else { item }))
}

/// What selects the test `id` (a stable id) on libtest's command line: a
/// doctest's file and item up to its line annotation (libtest filters by
/// substring: `src/lib.rs - add (line` runs the item's doctests and no
/// other item's); any other test, its name.
pub(crate) fn selector(id: &str) -> String {
    match doctest_item(id) {
        Some((file, CRATE_DOCS)) => format!("{file} - (line"),
        Some((file, item)) => format!("{file} - {item} (line"),
        None => id.to_owned(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::failures;

    pub(crate) fn outcomes(r: &Report) -> Vec<(&str, Option<&str>, Outcome)> {
        r.tests
            .iter()
            .map(|t| (t.name.as_str(), t.file.as_deref(), t.outcome))
            .collect()
    }

    pub(crate) const TINYLIB: [(&str, Option<&str>, Outcome); 8] = [
        ("it_adds", None, Outcome::Passed),
        ("it_prints_without_newline", None, Outcome::Passed),
        ("src/lib.rs - add", Some("src/lib.rs"), Outcome::Passed),
        ("tests::adds", None, Outcome::Passed),
        ("tests::nested::panics", None, Outcome::Passed),
        ("tests::online", None, Outcome::Skipped),
        ("tests::slow", None, Outcome::Skipped),
        ("tests::wrong_sum", None, Outcome::Failed),
    ];

    #[test]
    fn cargo_test_fixture_with_three_binaries() {
        let r = parse(include_bytes!("../tests/fixtures/libtest.txt"));
        assert_eq!(outcomes(&r), TINYLIB);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert!(r.build_failures.is_empty(), "{:?}", r.build_failures);
    }

    pub(crate) const TINYCALC_MESSAGE: &str = "error[E0432]: unresolved import `tinycalc::mul`
 --> tests/mul.rs:1:21
  |
1 | use tinycalc::{add, mul};
  |                     ^^^ no `mul` in the root";

    #[test]
    fn test_that_does_not_compile_is_a_build_failure_of_the_crate() {
        let r = parse(include_bytes!("../tests/fixtures/libtest_build_fail.txt"));
        assert!(r.tests.is_empty(), "{:?}", r.tests);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert_eq!(failures(&r), [("tinycalc", TINYCALC_MESSAGE, true)]);
    }

    #[test]
    fn workspace_member_that_does_not_compile_stops_every_test() {
        // `good` compiled, but cargo ran no test binary at all.
        let r = parse(include_bytes!(
            "../tests/fixtures/libtest_build_fail_workspace.txt"
        ));
        assert!(r.tests.is_empty(), "{:?}", r.tests);
        let got = failures(&r);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "broken");
        assert!(
            got[0]
                .1
                .starts_with("error[E0308]: mismatched types\n --> broken/src/lib.rs:9:22"),
            "{}",
            got[0].1
        );
        assert!(!got[0].1.contains("Compiling"), "{}", got[0].1);
    }

    #[test]
    fn two_crates_each_get_their_own_diagnostics() {
        let input = b"   Compiling a v0.1.0\n\
warning: unused variable: `x`\n\
error[E0425]: cannot find value `y` in this scope\n\
error: could not compile `a` (lib) due to 1 previous error; 1 warning emitted\n\
warning: build failed, waiting for other jobs to finish...\n\
error: expected one of `!` or `::`, found `fn`\n\
error: could not compile `b-c` (test \"it\") due to 1 previous error\n\
error: could not compile `a` (lib test) due to 1 previous error\n";
        let r = parse(input);
        assert_eq!(
            failures(&r),
            [
                (
                    "a",
                    "error[E0425]: cannot find value `y` in this scope",
                    true
                ),
                (
                    "b-c",
                    "error: expected one of `!` or `::`, found `fn`",
                    true
                ),
            ]
        );
    }

    #[test]
    fn nocapture_output_between_name_and_status() {
        let input = b"running 3 tests\n\
test a::one ... hello from one\nok\n\
test a::two ... printed without newlineFAILED\n\
test a::three ... ignored, slow\n\
\n\
test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out\n";
        let r = parse(input);
        assert_eq!(
            outcomes(&r),
            [
                ("a::one", None, Outcome::Passed),
                ("a::three", None, Outcome::Skipped),
                ("a::two", None, Outcome::Failed),
            ]
        );
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    }

    #[test]
    fn crashed_binary_is_noted_and_its_running_test_errors() {
        let input = b"running 3 tests\n\
test a::one ... ok\n\
test a::two ... look\n\
error: test failed, to rerun pass `--lib`\n\
\n\
Caused by:\n  process didn't exit successfully: `x` (signal: 11, SIGSEGV: invalid memory reference)\n\
\n\
running 1 test\n\
test b::one ... ok\n\
\n\
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n";
        let r = parse(input);
        assert_eq!(
            outcomes(&r),
            [
                ("a::one", None, Outcome::Passed),
                ("a::two", None, Outcome::Error),
                ("b::one", None, Outcome::Passed),
            ]
        );
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        assert!(r.notes[1].contains("2 of 3"), "{:?}", r.notes);
    }

    #[test]
    fn same_name_in_two_binaries_is_merged_and_noted() {
        let input = b"running 1 test\ntest tests::it ... ok\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n\
running 1 test\ntest tests::it ... FAILED\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n";
        let r = parse(input);
        assert_eq!(outcomes(&r), [("tests::it", None, Outcome::Failed)]);
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    }

    #[test]
    fn count_mismatch_is_noted() {
        let r = parse(b"running 2 tests\ntest a ... ok\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n");
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        // The announced count agrees but the result line does not.
        let r = parse(b"running 1 test\ntest a ... ok\ntest result: ok. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n");
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(r.notes[0].contains("`test result:`"), "{:?}", r.notes);
    }

    #[test]
    fn garbage_gives_no_tests() {
        for input in [
            &b"test  ... ok\nrunning x tests\ntest result: \n"[..],
            b"\xff\xfe\x00",
            b"test result: ok. ; ; ;\n",
        ] {
            assert!(parse(input).tests.is_empty(), "{input:?}");
        }
    }

    #[test]
    fn doctests_are_named_without_their_line_and_numbered_in_source_order() {
        let log = b"running 5 tests\n\
test src/macros.rs - macros::log (line 16) ... ok\n\
test src/macros.rs - macros::log (line 104) ... FAILED\n\
test src/macros.rs - macros::log (line 9) ... ok\n\
test src/lib.rs - (line 1) ... ok\n\
test src/kv/mod.rs - kv::Key (line 192) - compile fail ... ok\n\
\n\
test result: FAILED. 4 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n";
        let r = parse(log);
        assert_eq!(
            outcomes(&r),
            [
                (
                    "src/kv/mod.rs - kv::Key",
                    Some("src/kv/mod.rs"),
                    Outcome::Passed
                ),
                ("src/lib.rs - (docs)", Some("src/lib.rs"), Outcome::Passed),
                // Lines 9, 16, 104: by number, not as libtest sorts the text.
                (
                    "src/macros.rs - macros::log",
                    Some("src/macros.rs"),
                    Outcome::Passed
                ),
                (
                    "src/macros.rs - macros::log #2",
                    Some("src/macros.rs"),
                    Outcome::Passed
                ),
                (
                    "src/macros.rs - macros::log #3",
                    Some("src/macros.rs"),
                    Outcome::Failed
                ),
            ]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn a_moved_doctest_keeps_its_id() {
        let at = |line: u32| {
            let log = format!(
                "running 1 test\ntest src/lib.rs - add (line {line}) ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
            );
            outcomes(&parse(log.as_bytes()))[0].0.to_owned()
        };
        assert_eq!(at(3), at(4));
    }

    #[test]
    fn a_doctest_is_selected_by_its_file_and_item_up_to_the_line() {
        assert_eq!(selector("src/lib.rs - add"), "src/lib.rs - add (line");
        assert_eq!(selector("src/lib.rs - add #2"), "src/lib.rs - add (line");
        assert_eq!(selector("src/lib.rs - (docs)"), "src/lib.rs - (line");
        assert_eq!(selector("tests::adds"), "tests::adds");
        assert_eq!(selector("it_adds"), "it_adds");
    }

    #[test]
    fn a_failed_tests_message_starts_at_its_panic() {
        wrong_sum_says_its_panic(&parse(include_bytes!("../tests/fixtures/libtest.txt")));
    }

    /// The fixtures' failing test's words, in either format: from its
    /// panic on.
    pub(crate) fn wrong_sum_says_its_panic(r: &Report) {
        let said = crate::testing::messages(r);
        assert_eq!(said.len(), 1, "{said:?}");
        assert_eq!(said[0].0, "tests::wrong_sum");
        assert!(
            said[0].1.contains("panicked at src/lib.rs:22:9:\nassertion `left == right` failed\n  left: 4\n right: 5\nstack backtrace:"),
            "{said:?}"
        );
        assert!(
            said[0].1.starts_with("thread 'tests::wrong_sum'"),
            "{said:?}"
        );
    }
}
