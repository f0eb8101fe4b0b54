//! `pytest -rA` console output.
//!
//! The source of truth is the "short test summary info" section, one line
//! per result: `PASSED node_id`, `FAILED node_id - message`, `ERROR …`,
//! `SKIPPED [n] file:line: reason`, `XFAIL …`, `XPASS …`. Only lines inside
//! that section count, so a test printing `PASSED x` to stdout cannot forge a
//! result. The name is the node id (`tests/test_x.py::TestC::test_m[param]`);
//! the file is the part before the first `::`. Skips reported by location
//! only are named `file:line`. Parametrized ids may hold spaces, brackets and
//! ` - `, so the id ends at the first ` - ` outside brackets.
//!
//! When a run has no summary section (pytest without `-rA`), the verbose
//! progress lines (`node_id PASSED  [ 10%]`, or xdist's
//! `[gw0] [ 10%] PASSED node_id`) are used instead, with a note.
//!
//! The closing `=== 3 failed, 5 passed … in 0.03s ===` line is cross-checked
//! with the number of results read; a mismatch (e.g. `-ra` instead of `-rA`,
//! which leaves out passes) is noted.
//!
//! A test module that does not import (ImportError, SyntaxError, any error
//! at import time) is a collection error: its `____ ERROR collecting
//! tests/test_x.py ____` block in the `ERRORS` section (and its `ERROR
//! tests/test_x.py` summary line, which stays an `Error` entry as pytest
//! counts it) is a [`BuildFailure`] of `tests/test_x.py`. The message is the
//! block's first line and its `E   ` lines (the exception), else its first
//! lines. `Interrupted: N errors during collection` means no test ran at
//! all: those failures stopped the run.
//!
//! A failed test's message is its block in the `FAILURES` (or `ERRORS`)
//! section, found by pytest's headline (`TestC.test_m[p]`): the failing
//! source line (`>`), the exception (`E`) and where it was raised; without
//! a block, the summary line's reason.

use std::collections::BTreeMap;

use crate::build::{Failures, MESSAGE_MAX_LINES};
use crate::message::TEST_MESSAGE_MAX_LINES;
use crate::{BuildFailure, Collector, Format, Outcome, Report, leading_count, text_lines};

const STATUSES: [(&str, Outcome); 6] = [
    ("PASSED", Outcome::Passed),
    ("FAILED", Outcome::Failed),
    ("ERROR", Outcome::Error),
    ("SKIPPED", Outcome::Skipped),
    ("XFAIL", Outcome::Passed),
    ("XPASS", Outcome::Passed),
];

pub(crate) fn parse(input: &[u8]) -> Report {
    let mut summary = Collector::new(Format::Pytest);
    let mut verbose = Collector::new(Format::Pytest);
    let mut in_summary = false;
    let mut saw_summary = false;
    let mut stated: Option<usize> = None;
    // `FAILED id - reason`: the summary's one-line reason of each failure.
    let mut reasons: Vec<(String, String)> = Vec::new();
    for (_, line) in text_lines(input) {
        if let Some(title) = section_title(&line) {
            in_summary = title == "short test summary info";
            saw_summary |= in_summary;
        }
        if let Some(n) = stats_total(&line) {
            *stated.get_or_insert(0) += n;
            continue;
        }
        if in_summary {
            if let Some(rest) = line
                .strip_prefix("FAILED ")
                .or_else(|| line.strip_prefix("ERROR "))
            {
                let id = node_id(rest);
                if let Some(reason) = rest[id.len()..].trim_start().strip_prefix("- ") {
                    reasons.push((id.to_owned(), reason.to_owned()));
                }
            }
            summary_line(&mut summary, &line);
        } else {
            verbose_line(&mut verbose, &line);
        }
    }
    let summary_complete = saw_summary && stated == Some(summary.recorded());
    let mut out = if summary_complete || verbose.recorded() == 0 {
        summary
    } else {
        // Without -rA the summary lists only failures and errors: the verbose
        // progress lines carry the rest, and the summary still counts.
        verbose.note(
            "the short test summary is incomplete (run pytest with -rA); read the verbose progress lines",
        );
        for t in summary.finish().tests {
            if verbose.contains(&t.name) {
                verbose.merge(t.name, t.file, t.outcome);
            } else {
                verbose.record(t.name, t.file, t.outcome);
            }
        }
        verbose
    };
    if let Some(stated) = stated
        && stated != out.recorded()
    {
        out.note(format!(
            "pytest's closing line counts {stated} results but {} were read",
            out.recorded()
        ));
    }
    say_failures(&mut out, input, reasons);
    out.build_failures(build_failures(input));
    out.finish()
}

/// Gives each failed test its words: its block of the `FAILURES` or
/// `ERRORS` section (found by pytest's headline, the node id after the
/// file with `::` as `.`; a headline two tests share names neither), else
/// the summary line's reason.
fn say_failures(out: &mut Collector, input: &[u8], reasons: Vec<(String, String)>) {
    let mut blocks: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    let mut section = String::new();
    let mut block: Option<(String, Vec<String>)> = None;
    let mut flush = |block: &mut Option<(String, Vec<String>)>| {
        if let Some((headline, lines)) = block.take() {
            blocks
                .entry(headline)
                .and_modify(|b| *b = None)
                .or_insert(Some(failure_message(lines)));
        }
    };
    for (_, line) in text_lines(input) {
        if let Some(title) = section_title(&line) {
            flush(&mut block);
            title.clone_into(&mut section);
            continue;
        }
        if section != "FAILURES" && section != "ERRORS" {
            continue;
        }
        if let Some(title) = rule_title(&line, '_') {
            flush(&mut block);
            let headline = ["ERROR at setup of ", "ERROR at teardown of "]
                .iter()
                .find_map(|p| title.strip_prefix(p))
                .unwrap_or(title);
            block = Some((headline.to_owned(), Vec::new()));
        } else if let Some((_, lines)) = block.as_mut()
            && lines.len() < 4 * TEST_MESSAGE_MAX_LINES
        {
            lines.push(line);
        }
    }
    flush(&mut block);
    let failing: Vec<String> = out
        .tests
        .values()
        .filter(|t| t.outcome.is_failure())
        .map(|t| t.name.clone())
        .collect();
    for name in failing {
        let headline = name.split_once("::").map(|(_, h)| h.replace("::", "."));
        if let Some(Some(lines)) = headline.and_then(|h| blocks.get(&h)) {
            out.say(&name, &lines.join("\n"));
        }
    }
    for (id, reason) in reasons {
        out.say(&id, &reason);
    }
}

/// A failure block's words: its `>` (the failing line) and `E` (the
/// exception) lines and the closing `file:line: Exception`; without `E`
/// lines, the block as it is.
fn failure_message(lines: Vec<String>) -> Vec<String> {
    let said: Vec<String> = lines
        .iter()
        .filter(|l| l.starts_with('>') || l.starts_with("E "))
        .cloned()
        .collect();
    if !said.iter().any(|l| l.starts_with("E ")) {
        return lines;
    }
    let location = lines
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .filter(|l| !l.starts_with("E ") && l.contains(": "));
    said.into_iter().chain(location.cloned()).collect()
}

/// Collection errors: the `ERROR collecting` blocks of the `ERRORS` section
/// and the summary's `ERROR file` lines (no `::`: a file, not a test).
pub(crate) fn build_failures(input: &[u8]) -> Vec<BuildFailure> {
    let mut found = Failures::default();
    let mut section = String::new();
    let mut block: Option<(String, Vec<String>)> = None;
    let mut interrupted = false;
    let flush = |block: &mut Option<(String, Vec<String>)>, found: &mut Failures| {
        if let Some((unit, lines)) = block.take() {
            found.add(&unit, collection_message(lines), false);
        }
    };
    for (_, line) in text_lines(input) {
        if let Some(title) = section_title(&line) {
            flush(&mut block, &mut found);
            title.clone_into(&mut section);
            continue;
        }
        if line.starts_with("!!")
            && line.contains("Interrupted: ")
            && line.contains("during collection")
        {
            interrupted = true;
        }
        match section.as_str() {
            "ERRORS" => {
                if let Some(title) = rule_title(&line, '_') {
                    flush(&mut block, &mut found);
                    block = title
                        .strip_prefix("ERROR collecting ")
                        .map(|unit| (unit.to_owned(), Vec::new()));
                } else if let Some((_, lines)) = block.as_mut() {
                    lines.push(line);
                }
            }
            "short test summary info" => {
                if let Some(rest) = line.strip_prefix("ERROR ") {
                    let id = node_id(rest);
                    if !id.is_empty() && !id.contains("::") {
                        let reason = rest
                            .split_once(" - ")
                            .map(|(_, r)| vec![r.to_owned()])
                            .unwrap_or_default();
                        found.add(id, reason, false);
                    }
                }
            }
            _ => {}
        }
    }
    flush(&mut block, &mut found);
    if interrupted {
        found.stop_run();
    }
    found.finish()
}

/// The block's first line (`ImportError while importing test module …`)
/// unless it is a traceback frame, then pytest's `E   ` lines; without
/// those, the block as it is.
fn collection_message(lines: Vec<String>) -> Vec<String> {
    let errors: Vec<&String> = lines.iter().filter(|l| l.starts_with("E ")).collect();
    if errors.is_empty() {
        return lines;
    }
    let head = lines
        .first()
        .filter(|l| !l.starts_with("E ") && !l.contains(": in "));
    head.into_iter()
        .chain(errors)
        .take(MESSAGE_MAX_LINES + 1)
        .cloned()
        .collect()
}

/// The title of a `____ title ____` rule (pytest's per-item headers).
fn rule_title(line: &str, c: char) -> Option<&str> {
    let inner = line.strip_prefix(c)?.strip_suffix(c)?;
    let title = inner.trim_matches(c).trim();
    (!title.is_empty()).then_some(title)
}

/// The title of a `==== title ====` section rule.
fn section_title(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("==")?.strip_suffix("==")?;
    let title = inner.trim_matches('=').trim();
    (inner.starts_with(['=', ' ']) && !title.is_empty()).then_some(title)
}

/// The total of pytest's closing line: `=== 1 failed, 2 passed in 0.1s ===`
/// (or without the rules under `-q`). Deselected tests and warnings are not
/// results.
fn stats_total(line: &str) -> Option<usize> {
    let inner = line.trim().trim_matches('=').trim();
    let (counts, time) = inner.rsplit_once(" in ")?;
    if !time.trim_start().starts_with(|c: char| c.is_ascii_digit()) || !time.contains('s') {
        return None;
    }
    let mut total = 0;
    for part in counts.split(", ") {
        let (n, word) = leading_count(part)?;
        match word {
            "passed" | "failed" | "skipped" | "xfailed" | "xpassed" | "error" | "errors" => {
                total += n
            }
            "deselected" | "warning" | "warnings" | "rerun" | "reruns" | "subtests passed"
            | "subtests failed" | "subtests skipped" => {}
            _ => return None,
        }
    }
    Some(total)
}

fn summary_line(out: &mut Collector, line: &str) {
    let Some((word, rest)) = line.split_once(' ') else {
        return;
    };
    let Some(&(_, outcome)) = STATUSES.iter().find(|(w, _)| *w == word) else {
        return;
    };
    if word == "SKIPPED" {
        skipped_line(out, rest);
        return;
    }
    let id = node_id(rest);
    if !id.is_empty() {
        out.record(id.to_owned(), Some(file_of(id).to_owned()), outcome);
    }
}

/// `[3] tests/test_x.py:12: reason`, or a node id where pytest gives one.
fn skipped_line(out: &mut Collector, rest: &str) {
    let (count, rest) = match rest
        .strip_prefix('[')
        .and_then(|r| r.split_once("] "))
        .and_then(|(n, r)| Some((n.parse::<usize>().ok()?, r)))
    {
        Some((n, r)) => (n, r),
        None => (1, rest),
    };
    let location = match rest.split_once(": ") {
        Some((loc, _)) if !loc.contains("::") => loc,
        _ => node_id(rest),
    };
    if location.is_empty() {
        return;
    }
    let file = match location.rsplit_once(':') {
        Some((file, line)) if !location.contains("::") && line.parse::<u32>().is_ok() => file,
        _ => file_of(location),
    };
    out.record(location.to_owned(), Some(file.to_owned()), Outcome::Skipped);
    // A grouped skip (`[3]`) stands for several results in pytest's count.
    out.count_more(count.saturating_sub(1));
}

/// The node id at the start of `text`: up to the first ` - ` that is not
/// inside a parametrization's brackets.
fn node_id(text: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 && text[i..].starts_with(" - ") => return text[..i].trim(),
            _ => {}
        }
    }
    if depth > 0 {
        // Unbalanced brackets: fall back to the first separator.
        if let Some((id, _)) = text.split_once(" - ") {
            return id.trim();
        }
    }
    text.trim()
}

fn file_of(id: &str) -> &str {
    id.split_once("::").map_or(id, |(file, _)| file)
}

/// `tests/x.py::test_a PASSED   [ 10%]`, `tests/x.py::test_b SKIPPED (why)`,
/// or xdist's `[gw1] [ 10%] PASSED tests/x.py::test_a`.
fn verbose_line(out: &mut Collector, line: &str) {
    let line = line.trim_end();
    if let Some(rest) = line.strip_prefix("[gw") {
        let rest = rest
            .split_once("] ")
            .map(|(_, r)| r)
            .and_then(|r| r.strip_prefix('[').and_then(|r| r.split_once("] ")))
            .map_or("", |(_, r)| r);
        if let Some((word, id)) = rest.split_once(' ')
            && let Some(&(_, outcome)) = STATUSES.iter().find(|(w, _)| *w == word)
            && id.contains("::")
        {
            let id = node_id(id);
            out.record(id.to_owned(), Some(file_of(id).to_owned()), outcome);
        }
        return;
    }
    let Some(first) = line.split(' ').next() else {
        return;
    };
    if !first.contains("::") {
        return;
    }
    let line = strip_progress(line);
    let found = STATUSES
        .iter()
        .filter_map(|&(word, outcome)| {
            let needle = format!(" {word}");
            line.rmatch_indices(needle.as_str())
                .map(|(i, _)| i)
                .find(|&i| {
                    let after = &line[i + needle.len()..];
                    after.is_empty() || after.starts_with(" (")
                })
                .map(|i| (i, outcome))
        })
        .max_by_key(|(i, _)| *i);
    if let Some((i, outcome)) = found {
        let id = line[..i].trim();
        out.record(id.to_owned(), Some(file_of(id).to_owned()), outcome);
    }
}

/// Drops a trailing `[ 42%]` progress marker.
fn strip_progress(line: &str) -> &str {
    if line.ends_with("%]")
        && let Some(i) = line.rfind('[')
    {
        return line[..i].trim_end();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::failures;

    fn outcomes(r: &Report) -> Vec<(&str, Option<&str>, Outcome)> {
        r.tests
            .iter()
            .map(|t| (t.name.as_str(), t.file.as_deref(), t.outcome))
            .collect()
    }

    const OPS: &str = "tests/test_ops.py";

    fn expected_ra() -> Vec<(&'static str, Option<&'static str>, Outcome)> {
        vec![
            (
                "tests/test_broken.py",
                Some("tests/test_broken.py"),
                Outcome::Error,
            ),
            ("tests/test_ops.py:21", Some(OPS), Outcome::Skipped),
            ("tests/test_ops.py:27", Some(OPS), Outcome::Skipped),
            (
                "tests/test_ops.py::TestDivide::test_by_zero",
                Some(OPS),
                Outcome::Passed,
            ),
            (
                "tests/test_ops.py::TestDivide::test_wrong",
                Some(OPS),
                Outcome::Failed,
            ),
            ("tests/test_ops.py::test_add", Some(OPS), Outcome::Passed),
            (
                "tests/test_ops.py::test_split[-0]",
                Some(OPS),
                Outcome::Passed,
            ),
            (
                "tests/test_ops.py::test_split[a b-2]",
                Some(OPS),
                Outcome::Passed,
            ),
            (
                "tests/test_ops.py::test_split[x [y] z-3]",
                Some(OPS),
                Outcome::Passed,
            ),
            ("tests/test_ops.py::test_sub", Some(OPS), Outcome::Failed),
            (
                "tests/test_ops.py::test_uses_broken_fixture",
                Some(OPS),
                Outcome::Error,
            ),
            ("tests/test_ops.py::test_xfail", Some(OPS), Outcome::Passed),
            ("tests/test_ops.py::test_xpass", Some(OPS), Outcome::Passed),
            (
                "tests/test_ops.py::test_xpass_strict",
                Some(OPS),
                Outcome::Failed,
            ),
        ]
    }

    /// The verbose lines name skips by node id, not by location.
    fn expected_ra_verbose() -> Vec<(&'static str, Option<&'static str>, Outcome)> {
        let mut v = expected_ra();
        v.retain(|(_, _, o)| *o != Outcome::Skipped);
        v.push((
            "tests/test_ops.py::test_skip_inside",
            Some(OPS),
            Outcome::Skipped,
        ));
        v.push((
            "tests/test_ops.py::test_skipped",
            Some(OPS),
            Outcome::Skipped,
        ));
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }

    const NO_MODULE: &str =
        "ImportError while importing test module '/tmp/pt/tests/test_broken.py'.
E   ModuleNotFoundError: No module named 'does_not_exist_module'";

    #[test]
    fn ra_fixture() {
        let r = parse(include_bytes!("../tests/fixtures/pytest_ra.txt"));
        assert_eq!(outcomes(&r), expected_ra());
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        // --continue-on-collection-errors: the other files ran.
        assert_eq!(failures(&r), [("tests/test_broken.py", NO_MODULE, false)]);
        assert_eq!(
            crate::testing::messages(&r),
            [
                (
                    "tests/test_ops.py::TestDivide::test_wrong",
                    ">       assert 7 / 2 == 3\nE       assert (7 / 2) == 3\ntests/test_ops.py:56: AssertionError"
                ),
                (
                    "tests/test_ops.py::test_sub",
                    ">       assert 3 - 1 == 1\nE       assert (3 - 1) == 1\ntests/test_ops.py:9: AssertionError"
                ),
                (
                    "tests/test_ops.py::test_uses_broken_fixture",
                    ">       raise RuntimeError(\"fixture exploded\")\nE       RuntimeError: fixture exploded\ntests/test_ops.py:14: RuntimeError"
                ),
                ("tests/test_ops.py::test_xpass_strict", "[XPASS(strict)]"),
            ]
        );
    }

    #[test]
    fn a_failure_without_its_block_keeps_the_summarys_reason() {
        let r = parse(b"=== short test summary info ===\nFAILED t.py::test_a[x - y] - TypeError: match is not a function\n=== 1 failed in 0.1s ===\n");
        assert_eq!(
            crate::testing::messages(&r),
            [("t.py::test_a[x - y]", "TypeError: match is not a function")]
        );
    }

    #[test]
    fn collection_errors_of_an_added_api_and_a_syntax_error_stop_the_run() {
        let r = parse(include_bytes!("../tests/fixtures/pytest_build_fail.txt"));
        assert_eq!(
            outcomes(&r),
            [
                (
                    "tests/test_mul.py",
                    Some("tests/test_mul.py"),
                    Outcome::Error
                ),
                (
                    "tests/test_syntax.py",
                    Some("tests/test_syntax.py"),
                    Outcome::Error
                ),
            ]
        );
        assert_eq!(
            failures(&r),
            [
                (
                    "tests/test_mul.py",
                    "ImportError while importing test module '/tmp/t14-py/tests/test_mul.py'.
E   ImportError: cannot import name 'mul' from 'calc' (/tmp/t14-py/calc/__init__.py)",
                    true
                ),
                (
                    "tests/test_syntax.py",
                    "E     File \"/tmp/t14-py/tests/test_syntax.py\", line 6
E       self.assertEqual(1 +, 1)
E                           ^
E   SyntaxError: invalid syntax",
                    true
                ),
            ]
        );
        // The interrupted run covers the tests of the file that did load.
        let covered = r.build_failure_for("tests/test_add.py::TestAdd::test_add", None);
        assert_eq!(covered.map(|b| b.unit.as_str()), Some("tests/test_mul.py"));
    }

    #[test]
    fn summary_error_line_alone_is_a_collection_error() {
        let input = b"===== short test summary info =====\n\
ERROR tests/test_a.py - ModuleNotFoundError: No module named 'x'\n\
ERROR tests/test_b.py::test_fixture - RuntimeError: boom\n\
===== 2 errors in 0.10s =====\n";
        let r = parse(input);
        assert_eq!(
            failures(&r),
            [(
                "tests/test_a.py",
                "ModuleNotFoundError: No module named 'x'",
                false
            )]
        );
    }

    #[test]
    fn collection_error_fixture() {
        let r = parse(include_bytes!(
            "../tests/fixtures/pytest_collection_error.txt"
        ));
        assert_eq!(
            outcomes(&r),
            [(
                "tests/test_broken.py",
                Some("tests/test_broken.py"),
                Outcome::Error
            )]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert_eq!(failures(&r), [("tests/test_broken.py", NO_MODULE, true)]);
    }

    #[test]
    fn verbose_fallback_without_summary_section() {
        // pytest_v.txt was run with -v and without -rA: its summary section
        // lists only failures and errors; the progress lines give the rest.
        let r = parse(include_bytes!("../tests/fixtures/pytest_v.txt"));
        assert_eq!(outcomes(&r), expected_ra_verbose());
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(r.notes[0].contains("-rA"), "{:?}", r.notes);

        let input = b"tests/t.py::test_a PASSED                [ 50%]\n\
tests/t.py::test_b[x - y] SKIPPED (no db)  [100%]\n\
[gw1] [ 75%] FAILED tests/t.py::test_c[1] \n\
tests/t.py::test_a ERROR\n\
===== 1 passed, 1 skipped, 1 failed, 1 error in 0.10s =====\n";
        let r = parse(input);
        assert_eq!(
            outcomes(&r),
            [
                ("tests/t.py::test_a", Some("tests/t.py"), Outcome::Error),
                (
                    "tests/t.py::test_b[x - y]",
                    Some("tests/t.py"),
                    Outcome::Skipped
                ),
                ("tests/t.py::test_c[1]", Some("tests/t.py"), Outcome::Failed),
            ]
        );
        // The fallback is noted, and the teardown error duplicates test_a.
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
    }

    #[test]
    fn summary_lines_outside_the_section_are_ignored() {
        let input = b"PASSED tests/fake.py::test_spoof\n\
========== short test summary info ==========\n\
FAILED tests/t.py::test_a[a - b] - assert 1 == 2\n\
SKIPPED [2] tests/t.py:40: slow\n\
SKIPPED [1] tests/t.py::test_c - no db\n\
XFAIL tests/t.py::test_d - reason: known\n\
========== 1 failed, 3 skipped, 1 xfailed, 2 warnings in 1.00s ==========\n\
PASSED tests/fake.py::test_after\n";
        let r = parse(input);
        assert_eq!(
            outcomes(&r),
            [
                ("tests/t.py:40", Some("tests/t.py"), Outcome::Skipped),
                (
                    "tests/t.py::test_a[a - b]",
                    Some("tests/t.py"),
                    Outcome::Failed
                ),
                ("tests/t.py::test_c", Some("tests/t.py"), Outcome::Skipped),
                ("tests/t.py::test_d", Some("tests/t.py"), Outcome::Passed),
            ]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn coloured_output() {
        let input = b"\x1b[36m====== short test summary info ======\x1b[0m\n\
\x1b[32mPASSED\x1b[0m tests/t.py::test_a\n\
\x1b[31m====== \x1b[32m1 passed\x1b[0m\x1b[31m in 0.01s ======\x1b[0m\n";
        let r = parse(input);
        assert_eq!(
            outcomes(&r),
            [("tests/t.py::test_a", Some("tests/t.py"), Outcome::Passed)]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn garbage_gives_no_tests() {
        for input in [
            &b"PASSED\nFAILED \nSKIPPED [x\n"[..],
            b"===== short test summary info =====\nPASSED \nSKIPPED [1] \nFAILED  - x\n",
            b"\xff\x00::PASSED",
        ] {
            let r = parse(input);
            assert!(r.tests.is_empty(), "{input:?}: {r:?}");
        }
    }

    #[test]
    fn an_error_line_naming_only_a_path_is_an_error_of_that_path() {
        // `ERROR path` is how pytest reports a collection error of a file, so
        // even an odd path is kept as an error (it can only make a run look
        // worse), exactly once.
        let r = parse(b"===== short test summary info =====\nPASSED \nERROR [[[[");
        assert_eq!(outcomes(&r), [("[[[[", Some("[[[["), Outcome::Error)]);
    }
}
