//! Build failures: the units (a Go package, a Rust crate, a Python test
//! module, a Maven project, a TypeScript file) whose tests never ran because
//! they did not compile or import, read from what the runner printed.
//!
//! A pull request's test patch usually uses what the pull request adds, so at
//! the base commit its tests do not build; an agent's patch can break the
//! build as well. Either way no test result names those tests, and a reader
//! has to tell "did not build" from "produced no usable report": the first
//! is a fact about the tree, the second about the harness.
//!
//! Each format's module recognises its own runner's shapes (see
//! `docs/languages.md`); this module holds what they share: the record, the
//! cap on the kept message, and the mapping from a test to its unit.
//!
//! Units are named as the runner names them, so that [`unit_of`] can map a
//! test id to the same string:
//!
//! | format | unit | a test's unit |
//! |---|---|---|
//! | `go-test-json` | package import path (`example.com/calc`) | the test's `file` (the parser sets it to the package), else the id up to `.TestXxx` / `.BenchmarkXxx` / `.ExampleXxx` / `.FuzzXxx` |
//! | `pytest` | test file as pytest prints it (`tests/test_x.py`) | the `file`, else the node id before `::` |
//! | `unittest` | dotted test module (`tests.test_x`) | the `file` as a module, else the id without its method and class(es) |
//! | `libtest`, `libtest-json` | crate (`tinycalc`) | none: ids carry no crate |
//! | `junit`, `ctrf`, `ctrf-suite` | Maven project, Gradle task, TypeScript file, .NET project, Go package, … | a Go-shaped id's package (gotestsum's JUnit, Go's CTRF converters: `package.TestXxx`); else none |
//! | `tap` | — (no build failure is recognised) | none |
//! | `jest-json`, `mocha-json` | test file relative to the tree (`src/a.test.ts`) | the `file`, else the id before ` > ` |
//!
//! Where a test has no unit, only a failure that stopped the whole run
//! ([`BuildFailure::stopped_run`]) covers it: cargo, Maven, Gradle and `tsc`
//! build everything before any test runs, and pytest stops at a collection
//! error unless told to continue.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Format, IdShape};

/// At most this many lines of a compiler's message are kept …
pub const MESSAGE_MAX_LINES: usize = 20;
/// … and at most this many bytes.
pub const MESSAGE_MAX_BYTES: usize = 2048;

/// One unit that failed to build, with the first lines of why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildFailure {
    /// What did not build, named as the runner names it (table in the
    /// module docs of `build.rs`, and `docs/languages.md`).
    pub unit: String,
    /// The first lines of the compiler's (or importer's) message, capped at
    /// [`MESSAGE_MAX_LINES`] lines and [`MESSAGE_MAX_BYTES`] bytes; a cut
    /// message ends with a line `…`. May be empty when the runner named the
    /// unit but printed no reason.
    pub message: String,
    /// The failure stopped the whole run: no test of any unit ran after it
    /// (cargo, Maven, Gradle, `tsc`, an interrupted pytest collection).
    pub stopped_run: bool,
}

/// Collects build failures while a parser walks its input: one entry per
/// unit, the first non-empty message wins, capped when finished.
#[derive(Debug, Default)]
pub(crate) struct Failures(BTreeMap<String, (Vec<String>, bool)>);

impl Failures {
    pub(crate) fn add(&mut self, unit: &str, lines: Vec<String>, stopped_run: bool) {
        let unit = unit.trim();
        if unit.is_empty() {
            return;
        }
        let entry = self.0.entry(unit.to_owned()).or_default();
        if entry.0.is_empty() {
            entry.0 = lines;
        }
        entry.1 |= stopped_run;
    }

    /// Adds one more line to a unit's message (a compiler that prints one
    /// line per error); a line already there is not repeated.
    pub(crate) fn append(&mut self, unit: &str, line: &str, stopped_run: bool) {
        let unit = unit.trim();
        if unit.is_empty() {
            return;
        }
        let entry = self.0.entry(unit.to_owned()).or_default();
        if entry.0.len() <= MESSAGE_MAX_LINES && !entry.0.iter().any(|l| l == line) {
            entry.0.push(line.to_owned());
        }
        entry.1 |= stopped_run;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `unit` is recorded.
    pub(crate) fn has(&self, unit: &str) -> bool {
        self.0.contains_key(unit.trim())
    }

    /// Marks every unit recorded so far as having stopped the run.
    pub(crate) fn stop_run(&mut self) {
        for entry in self.0.values_mut() {
            entry.1 = true;
        }
    }

    pub(crate) fn extend(&mut self, found: impl IntoIterator<Item = BuildFailure>) {
        for f in found {
            let lines = f.message.lines().map(str::to_owned).collect();
            self.add(&f.unit, lines, f.stopped_run);
        }
    }

    /// Sorted by unit, units unique.
    pub(crate) fn finish(self) -> Vec<BuildFailure> {
        self.0
            .into_iter()
            .map(|(unit, (lines, stopped_run))| BuildFailure {
                unit,
                message: capped(&lines),
                stopped_run,
            })
            .collect()
    }
}

/// Joins `lines` (without trailing blank lines) into a message within the
/// caps; a cut message ends with `…`.
fn capped(lines: &[String]) -> String {
    crate::message::cut(lines, MESSAGE_MAX_LINES, MESSAGE_MAX_BYTES)
}

/// The unit a test belongs to, in the spelling of [`BuildFailure::unit`]:
/// `name` is the test's canonical id and `file` its [`crate::TestResult::file`]
/// when known (pass it: it is the reliable half). `None` when the format's
/// ids carry no unit (libtest, JUnit, TAP, CTRF) or the id is not one of the
/// format's shapes. The mapping is the table in `docs/languages.md`.
pub fn unit_of(format: Format, name: &str, file: Option<&str>) -> Option<String> {
    let file = file.filter(|f| !f.is_empty());
    match format.capabilities().ids {
        IdShape::GoPackage => file.map(str::to_owned).or_else(|| go_package(name)),
        IdShape::PytestNode => Some(file.map_or_else(|| pytest_file(name), str::to_owned)),
        IdShape::UnittestDotted => match file {
            Some(f) => f.strip_suffix(".py").map(|m| m.replace(['/', '\\'], ".")),
            None => crate::unittest::module_of(name),
        },
        IdShape::TitlePath => Some(
            file.unwrap_or_else(|| name.split(" > ").next().unwrap_or(name))
                .to_owned(),
        ),
        // gotestsum's JUnit and Go's CTRF converters: `package.TestXxx`.
        IdShape::Converted => go_package(name),
        IdShape::Libtest | IdShape::Plain => None,
    }
}

/// The build failure among `failures` (sorted by unit, as
/// [`crate::Report::build_failures`] keeps them) that explains why the test
/// `name` (in `file`, when known) has no result: its unit's ([`unit_of`]),
/// else one that stopped the whole run. For callers that keep the failures
/// apart from their report (a run's record); [`crate::Report::build_failure_for`]
/// is this over the report's own.
pub fn build_failure_for<'a>(
    format: Format,
    failures: &'a [BuildFailure],
    name: &str,
    file: Option<&str>,
) -> Option<&'a BuildFailure> {
    unit_of(format, name, file)
        .and_then(|unit| {
            failures
                .binary_search_by(|b| b.unit.as_str().cmp(&unit))
                .ok()
                .and_then(|i| failures.get(i))
        })
        .or_else(|| failures.iter().find(|b| b.stopped_run))
}

/// `example.com/calc.TestDivide/by_zero` → `example.com/calc`: the id up to
/// the first `.` followed by a Go test function's name (`Test`, `Benchmark`,
/// `Example` or `Fuzz`, then nothing, `_`, or a character that is not a
/// lower-case letter, as `go test` requires).
fn go_package(name: &str) -> Option<String> {
    const KINDS: [&str; 4] = ["Test", "Benchmark", "Example", "Fuzz"];
    name.match_indices('.').find_map(|(i, _)| {
        let rest = &name[i + 1..];
        let func = rest.split('/').next().unwrap_or(rest);
        let is_test = KINDS.iter().any(|k| {
            func.strip_prefix(k)
                .is_some_and(|after| !after.starts_with(|c: char| c.is_lowercase()))
        }) && func.chars().all(|c| c.is_alphanumeric() || c == '_');
        (is_test && i > 0).then(|| name[..i].to_owned())
    })
}

/// `tests/test_x.py::T::test_a[p]` → `tests/test_x.py`; a skip named by
/// location (`tests/test_x.py:12`) → `tests/test_x.py`.
fn pytest_file(name: &str) -> String {
    if let Some((file, _)) = name.split_once("::") {
        return file.to_owned();
    }
    match name.rsplit_once(':') {
        Some((file, line)) if line.parse::<u32>().is_ok() => file.to_owned(),
        _ => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn messages_are_capped_by_lines_and_bytes() {
        let short = lines("a\nb\n\n\n");
        assert_eq!(capped(&short), "a\nb");
        let many: Vec<String> = (0..30).map(|i| format!("line {i}")).collect();
        let m = capped(&many);
        assert_eq!(m.lines().count(), MESSAGE_MAX_LINES);
        assert!(m.ends_with("line 18\n…"), "{m}");
        let wide = vec!["é".repeat(3000)];
        let m = capped(&wide);
        assert!(m.len() <= MESSAGE_MAX_BYTES, "{}", m.len());
        assert!(m.ends_with('…'));
        let exact: Vec<String> = (0..MESSAGE_MAX_LINES).map(|i| i.to_string()).collect();
        assert!(!capped(&exact).contains('…'));
    }

    #[test]
    fn first_message_wins_and_units_are_sorted() {
        let mut f = Failures::default();
        f.add("b", Vec::new(), false);
        f.add("a", lines("first"), false);
        f.add("a", lines("second"), true);
        f.add("b", lines("late but the first with text"), false);
        f.add("  ", lines("no unit"), false);
        let v = f.finish();
        let got: Vec<_> = v
            .iter()
            .map(|b| (b.unit.as_str(), b.message.as_str(), b.stopped_run))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "first", true),
                ("b", "late but the first with text", false)
            ]
        );
    }

    #[test]
    fn go_units_from_ids() {
        let f = Format::GoTestJson;
        for (name, unit) in [
            ("example.com/calc.TestAdd", Some("example.com/calc")),
            (
                "example.com/calc.TestDivide/by_zero",
                Some("example.com/calc"),
            ),
            (
                "example.com/calc.TestDivide/x.TestY",
                Some("example.com/calc"),
            ),
            ("gopkg.in/yaml.v3.TestDecode", Some("gopkg.in/yaml.v3")),
            (
                "example.com/x.Testing/y.Test_z",
                Some("example.com/x.Testing/y"),
            ),
            (
                "github.com/spf13/pflag.ExampleFlagSet",
                Some("github.com/spf13/pflag"),
            ),
            ("p.BenchmarkSum", Some("p")),
            ("p.Test", Some("p")),
            ("example.com/calc", None),
            (".TestA", None),
        ] {
            assert_eq!(unit_of(f, name, None).as_deref(), unit, "{name}");
        }
        assert_eq!(
            unit_of(f, "whatever", Some("example.com/q")).as_deref(),
            Some("example.com/q")
        );
    }

    #[test]
    fn python_units_from_ids() {
        let p = Format::Pytest;
        assert_eq!(
            unit_of(p, "tests/test_x.py::T::test_a[a::b]", None).as_deref(),
            Some("tests/test_x.py")
        );
        assert_eq!(
            unit_of(p, "tests/test_x.py:12", None).as_deref(),
            Some("tests/test_x.py")
        );
        assert_eq!(
            unit_of(p, "tests/test_x.py", None).as_deref(),
            Some("tests/test_x.py")
        );
        let u = Format::Unittest;
        assert_eq!(
            unit_of(u, "tests.test_ops.TestDivide.test_wrong", None).as_deref(),
            Some("tests.test_ops")
        );
        assert_eq!(
            unit_of(u, "tests.test_ops.Outer.Inner.test_a", None).as_deref(),
            Some("tests.test_ops")
        );
        assert_eq!(
            unit_of(u, "tests.test_broken", Some("tests/test_broken.py")).as_deref(),
            Some("tests.test_broken")
        );
        for f in [
            Format::Libtest,
            Format::LibtestJson,
            Format::Junit,
            Format::Tap,
            Format::Ctrf,
            Format::CtrfSuite,
        ] {
            assert_eq!(unit_of(f, "tests::adds", Some("src/lib.rs")), None);
        }
        // Go's tests through a JUnit or CTRF converter keep their package.
        for f in [Format::Junit, Format::Ctrf, Format::CtrfSuite] {
            assert_eq!(
                unit_of(f, "example.com/calc.TestAdd/x", None).as_deref(),
                Some("example.com/calc")
            );
        }
    }
}
