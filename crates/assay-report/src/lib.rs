//! Test report parsers: turn what a test runner printed (or wrote) into
//! per-test outcomes that grading can compare across runs.
//!
//! Every verdict in a release rests on these outcomes, so the parsers favour
//! saying "I am not sure" over guessing:
//!
//! - A test's `name` is a canonical id that stays the same from run to run
//!   (and across runner versions where the runner's own spelling changed), so
//!   outcomes of the base, test-patch and gold runs can be joined by name.
//! - Anything odd (a count that does not add up, a duplicate name, a test that
//!   started but never finished, a bail out) becomes a human-readable note in
//!   [`Report::notes`]; the parsers never silently drop evidence.
//! - Output is deterministic: tests are sorted by name, duplicates are merged
//!   with the worst outcome winning, notes keep input order.
//! - Garbage input never panics: it yields a [`ParseError`] or a report with
//!   no tests, which [`assess`] then calls untrustworthy.
//! - A unit that did not build (a Go package, a crate, a test module that
//!   does not import) is a [`BuildFailure`] in [`Report::build_failures`], not
//!   a test: a report with no tests but a recognised build failure is
//!   [`Trust::BuildFailed`], one with neither stays untrustworthy. The shapes
//!   recognised per format are in `docs/languages.md`.
//! - Expected failures (unittest `expected failure`, pytest `XFAIL`, TAP
//!   `not ok … # TODO`) count as [`Outcome::Passed`], as each runner's own exit
//!   status does; unexpected successes count as the runner counts them
//!   (unittest: failure; pytest non-strict `XPASS`: pass).
//!
//! One file per format; the shared types and the `Collector` that enforces
//! the invariants above live here.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use build::{BuildFailure, MESSAGE_MAX_BYTES, MESSAGE_MAX_LINES, build_failure_for, unit_of};
pub use capability::{Canaries, Capabilities, IdShape, KeepGoing, TestFile};
pub use message::{TEST_MESSAGE_MAX_BYTES, TEST_MESSAGE_MAX_LINES};

mod build;
mod capability;
mod ctrf;
mod go_json;
mod jest_json;
mod json_document;
mod json_lines;
mod junit;
mod junit_log;
mod libtest;
mod libtest_json;
mod message;
mod mocha_json;
mod pending;
mod pytest;
mod tap;
mod tree_path;
mod unittest;

pub use tree_path::MAX_ID_BYTES;

/// The report formats `assay` can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// JUnit XML (`testsuites` / `testsuite` / `testcase`).
    Junit,
    /// `pytest -rA` console output (short test summary section).
    Pytest,
    /// `python -m unittest -v` output (stderr).
    Unittest,
    /// Rust libtest's default text output (`cargo test`).
    Libtest,
    /// Rust libtest's `--format json` output, one object per line.
    LibtestJson,
    /// `go test -json` output, one object per line.
    GoTestJson,
    /// Test Anything Protocol.
    Tap,
    /// A CTRF JSON document, each test by its `name`.
    Ctrf,
    /// A CTRF JSON document, each test by `suite.name` (its suite's first
    /// entry and its name; `name` alone when it has no suite).
    CtrfSuite,
    /// jest's JSON report, and vitest's and assay's `node --test` reporter's
    /// in its shape.
    JestJson,
    /// mocha's `--reporter json`.
    MochaJson,
}

impl Format {
    /// Every format, in declaration order.
    pub const ALL: [Format; 11] = [
        Format::Junit,
        Format::Pytest,
        Format::Unittest,
        Format::Libtest,
        Format::LibtestJson,
        Format::GoTestJson,
        Format::Tap,
        Format::Ctrf,
        Format::CtrfSuite,
        Format::JestJson,
        Format::MochaJson,
    ];

    /// The kebab-case name used in config files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Junit => "junit",
            Format::Pytest => "pytest",
            Format::Unittest => "unittest",
            Format::Libtest => "libtest",
            Format::LibtestJson => "libtest-json",
            Format::GoTestJson => "go-test-json",
            Format::Tap => "tap",
            Format::Ctrf => "ctrf",
            Format::CtrfSuite => "ctrf-suite",
            Format::JestJson => "jest-json",
            Format::MochaJson => "mocha-json",
        }
    }

    /// What assay can do with this format's reports (the module
    /// `capability`): one row per format, each written out in full.
    pub const fn capabilities(self) -> Capabilities {
        match self {
            Format::Junit => Capabilities {
                ids: IdShape::Converted,
                test_file: TestFile::Path,
                // `pytest --junitxml`: the canaries of its `.py` files.
                canaries: Some(Canaries::Pytest),
                keep_going: None,
                swebench_parser: None,
            },
            Format::Pytest => Capabilities {
                ids: IdShape::PytestNode,
                test_file: TestFile::Path,
                canaries: Some(Canaries::Pytest),
                keep_going: None,
                swebench_parser: Some("parse_log_pytest"),
            },
            Format::Unittest => Capabilities {
                ids: IdShape::UnittestDotted,
                test_file: TestFile::Path,
                canaries: Some(Canaries::Unittest),
                keep_going: None,
                // `method (module.Class.method) ... ok`: Django's runner
                // and `python -m unittest -v` print the same lines.
                swebench_parser: Some("parse_log_django"),
            },
            Format::Libtest | Format::LibtestJson => Capabilities {
                ids: IdShape::Libtest,
                test_file: TestFile::None,
                canaries: Some(Canaries::Rust),
                keep_going: Some(KeepGoing {
                    runner: "cargo test",
                    flag: "--no-fail-fast",
                }),
                swebench_parser: None,
            },
            Format::GoTestJson => Capabilities {
                ids: IdShape::GoPackage,
                test_file: TestFile::GoPackage,
                canaries: Some(Canaries::Go),
                keep_going: None,
                swebench_parser: None,
            },
            Format::Tap => Capabilities {
                ids: IdShape::Plain,
                test_file: TestFile::None,
                canaries: None,
                keep_going: None,
                swebench_parser: None,
            },
            Format::Ctrf | Format::CtrfSuite => Capabilities {
                ids: IdShape::Converted,
                test_file: TestFile::Path,
                canaries: None,
                keep_going: None,
                swebench_parser: None,
            },
            Format::JestJson | Format::MochaJson => Capabilities {
                ids: IdShape::TitlePath,
                test_file: TestFile::Path,
                canaries: Some(Canaries::Js),
                keep_going: None,
                swebench_parser: None,
            },
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error(
    "unknown report format `{0}` (expected one of: junit, pytest, unittest, libtest, libtest-json, go-test-json, tap, ctrf, ctrf-suite, jest-json, mocha-json)"
)]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// What happened to one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Ran and passed (including expected failures, see the crate docs).
    Passed,
    /// Ran and an assertion failed.
    Failed,
    /// Errored or crashed: a fixture or import blew up, the test never
    /// reported a result, or its package did not build.
    Error,
    /// Did not run (skipped, ignored).
    Skipped,
}

impl Outcome {
    /// True for [`Outcome::Failed`] and [`Outcome::Error`].
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::Error)
    }

    /// Rank for merging duplicates: the higher one wins. A skip outranks a
    /// pass because "not shown to pass" is the safer reading.
    fn severity(self) -> u8 {
        match self {
            Outcome::Passed => 0,
            Outcome::Skipped => 1,
            Outcome::Failed => 2,
            Outcome::Error => 3,
        }
    }

    /// The worse of two outcomes.
    fn worst(self, other: Outcome) -> Outcome {
        if other.severity() > self.severity() {
            other
        } else {
            self
        }
    }
}

/// One test's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestResult {
    /// Canonical id, stable across runs (see the per-format modules).
    pub name: String,
    /// The file (or, for Go, the package) the test lives in, when the format
    /// says so; lets a caller rerun only the failing files.
    pub file: Option<String>,
    pub outcome: Outcome,
    /// A failed or errored test's own words, where the format carries them
    /// (the assertion, expected/actual, the exception and its first frames),
    /// capped at [`TEST_MESSAGE_MAX_BYTES`]. Absent for a passing test and
    /// where the report says nothing; left out of the serialized form then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Everything read from one report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub format: Format,
    /// Sorted by name, names unique.
    pub tests: Vec<TestResult>,
    /// Anomalies found while parsing, in input order.
    pub notes: Vec<String>,
    /// Units that did not build, sorted by unit, units unique. Left out of
    /// the serialized form when empty, so reports without one keep their
    /// bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub build_failures: Vec<BuildFailure>,
}

impl Report {
    /// A report with nothing in it, for a run that left no report file: fill
    /// it with [`Report::add_build_failures`] from [`scan_build_failures`].
    pub fn empty(format: Format) -> Report {
        Report {
            format,
            tests: Vec::new(),
            notes: Vec::new(),
            build_failures: Vec::new(),
        }
    }

    /// Merges build failures found elsewhere (the run's log, when the report
    /// is a file of its own) into this report, keeping the order and
    /// uniqueness of [`Report::build_failures`].
    pub fn add_build_failures(&mut self, found: impl IntoIterator<Item = BuildFailure>) {
        let mut all = build::Failures::default();
        all.extend(std::mem::take(&mut self.build_failures));
        all.extend(found);
        self.build_failures = all.finish();
    }

    /// The build failure that explains why the test `name` (in `file`, when
    /// known) has no result: the failure of its unit ([`unit_of`]), else a
    /// failure that stopped the whole run. `None`: no build failure accounts
    /// for it.
    pub fn build_failure_for(&self, name: &str, file: Option<&str>) -> Option<&BuildFailure> {
        build_failure_for(self.format, &self.build_failures, name, file)
    }

    /// The outcome of the test called `name`, if the report has it.
    pub fn outcome(&self, name: &str) -> Option<Outcome> {
        self.tests
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()
            .and_then(|i| self.tests.get(i))
            .map(|t| t.outcome)
    }

    /// True when any test failed or errored.
    pub fn has_failures(&self) -> bool {
        self.tests.iter().any(|t| t.outcome.is_failure())
    }
}

/// Why a report could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ParseError {
    /// The XML is malformed or uses something this parser refuses (such as
    /// an entity that is not one of the five predefined ones).
    #[error("invalid XML at byte {offset}: {message}")]
    Xml { offset: u64, message: String },
    /// Well-formed XML, but not a JUnit report.
    #[error("not a JUnit report: {message} (at byte {offset})")]
    NotJunit { offset: u64, message: String },
    /// The input must be UTF-8 and is not.
    #[error("input is not valid UTF-8 at byte {offset}")]
    NotUtf8 { offset: u64 },
    /// A line is valid JSON of the expected kind, but a field has the wrong
    /// shape (e.g. a test name that is a number).
    #[error("line {line}: {message}")]
    Schema { line: usize, message: String },
    /// Not the JSON document the format is (none, or two of them).
    #[error("not a report of this format: {message}")]
    Json { message: String },
    /// A test id or file no runner could have written: a path outside the
    /// tree or climbing out of it, a control character, an id too long.
    #[error("refused: {message}")]
    Refused { message: String },
}

/// What selects the test `id` of a report in `format` on its runner's
/// command line (a rerun's `{tests}`): the id itself, except a libtest
/// doctest, whose stable id carries no line: its file and item up to the
/// line annotation (`src/lib.rs - add (line`, libtest filters by substring).
pub fn selector(format: Format, id: &str) -> String {
    match format.capabilities().ids {
        IdShape::Libtest => libtest::selector(id),
        IdShape::GoPackage
        | IdShape::PytestNode
        | IdShape::UnittestDotted
        | IdShape::TitlePath
        | IdShape::Converted
        | IdShape::Plain => id.to_owned(),
    }
}

/// A libtest doctest's file and item (without an order number or a line
/// annotation; `(docs)` for the crate's own docs), or None for any other
/// test or format.
pub fn doctest_item(format: Format, id: &str) -> Option<(&str, &str)> {
    match format.capabilities().ids {
        IdShape::Libtest => libtest::doctest_item(id),
        IdShape::GoPackage
        | IdShape::PytestNode
        | IdShape::UnittestDotted
        | IdShape::TitlePath
        | IdShape::Converted
        | IdShape::Plain => None,
    }
}

/// Parses `input` as a report in `format`. For the console formats (all
/// but JUnit, CTRF, jest-json and mocha-json, whose input is the report file) build
/// failures printed in `input` land in [`Report::build_failures`]. Paths are
/// kept as the report prints them: a run's report is read with [`parse_under`].
pub fn parse(format: Format, input: &[u8]) -> Result<Report, ParseError> {
    parse_under(format, input, &[])
}

/// [`parse`] for a run whose tree the runner saw at `roots` (the sandbox's
/// path, the directory on this machine): the formats that name test files by
/// absolute path (`jest-json`, `mocha-json`) name them relative to the tree,
/// resolved through symlinks, and refuse a file outside it.
pub fn parse_under(
    format: Format,
    input: &[u8],
    roots: &[&std::path::Path],
) -> Result<Report, ParseError> {
    match format {
        Format::JestJson => jest_json::parse(input, roots),
        Format::MochaJson => mocha_json::parse(input, roots),
        Format::Junit => junit::parse(input),
        Format::Pytest => Ok(pytest::parse(input)),
        Format::Unittest => Ok(unittest::parse(input)),
        Format::Libtest => Ok(libtest::parse(input)),
        Format::LibtestJson => libtest_json::parse(input),
        Format::GoTestJson => go_json::parse(input),
        Format::Tap => Ok(tap::parse(input)),
        Format::Ctrf | Format::CtrfSuite => ctrf::parse(format, input),
    }
}

/// The build failures printed in a run's output `log`, for a format whose
/// report is a file of its own (JUnit, CTRF): the producers of that file fail
/// before writing it. For JUnit and CTRF every producer's shapes are looked for (Maven,
/// Gradle, `tsc`, .NET, and the Go, cargo and Python runners behind
/// gotestsum, nextest and `pytest --junitxml`); for the console formats this
/// is what [`parse`] finds in the same bytes; TAP has none.
pub fn scan_build_failures(format: Format, log: &[u8]) -> Vec<BuildFailure> {
    match format {
        Format::Junit | Format::Ctrf | Format::CtrfSuite => junit_log::scan(log),
        Format::Pytest => pytest::build_failures(log),
        Format::Unittest => unittest::build_failures(log),
        Format::Libtest | Format::LibtestJson => libtest::build_failures(log),
        Format::GoTestJson => go_json::parse(log)
            .map(|r| r.build_failures)
            .unwrap_or_else(|_| go_json::text_build_failures(log)),
        Format::Tap | Format::JestJson | Format::MochaJson => Vec::new(),
    }
}

/// Whether a run's report can be believed, given the runner's exit status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Trust {
    Trusted,
    /// The report holds no test result because units did not build (see
    /// [`Report::build_failures`]); the exit status agrees. Not "no usable
    /// report": the tests of those units count as failed. The text names the
    /// units, for the grade's evidence.
    BuildFailed(String),
    /// The reason, for the grade's evidence.
    Untrustworthy(String),
}

/// Cross-checks a report against the exit code of the command that produced
/// it (`None`: killed by a signal). A report whose failures (failed tests
/// and build failures) disagree with the exit status is untrustworthy: a
/// spoofed or truncated report must not decide a verdict. A report that
/// holds no tests is untrustworthy too, unless it records a build failure
/// and the command failed: then it is [`Trust::BuildFailed`].
pub fn assess(exit_code: Option<i32>, report: &Report) -> Trust {
    let broken = report.build_failures.len();
    if report.tests.is_empty() {
        if broken == 0 {
            return Trust::Untrustworthy("the report holds no tests".to_owned());
        }
        let units: Vec<&str> = report
            .build_failures
            .iter()
            .map(|b| b.unit.as_str())
            .collect();
        let units = units.join(", ");
        return match exit_code {
            Some(code) if code != 0 => Trust::BuildFailed(format!(
                "no test ran: {broken} unit(s) did not build ({units}); exit code {code}"
            )),
            Some(_) => Trust::Untrustworthy(format!(
                "exit code 0 but the output shows {broken} unit(s) that did not build ({units})"
            )),
            None => Trust::Untrustworthy(format!(
                "the run was killed by a signal; the output shows {broken} unit(s) that did not build ({units})"
            )),
        };
    }
    let failures = broken
        + report
            .tests
            .iter()
            .filter(|t| t.outcome.is_failure())
            .count();
    match exit_code {
        None if failures == 0 => Trust::Untrustworthy(
            "the run was killed by a signal but the report shows no failure".to_owned(),
        ),
        Some(0) if failures > 0 => Trust::Untrustworthy(format!(
            "exit code 0 but the report shows {failures} failed or errored test(s) or unbuilt unit(s)"
        )),
        Some(code) if code != 0 && failures == 0 => Trust::Untrustworthy(format!(
            "exit code {code} but the report shows no failed or errored test"
        )),
        _ => Trust::Trusted,
    }
}

/// Gathers results while a parser walks its input and enforces the report
/// invariants: unique sorted names, worst outcome wins, notes on duplicates.
struct Collector {
    format: Format,
    tests: BTreeMap<String, TestResult>,
    notes: Vec<String>,
    recorded: usize,
    build_failures: build::Failures,
    /// What each test said, by name: joined and capped at the end, kept
    /// only for tests that ended failed or errored.
    said: BTreeMap<String, Vec<String>>,
}

impl Collector {
    fn new(format: Format) -> Self {
        Collector {
            format,
            tests: BTreeMap::new(),
            notes: Vec::new(),
            recorded: 0,
            build_failures: build::Failures::default(),
            said: BTreeMap::new(),
        }
    }

    /// Records what the test `name` said when it failed (its lines); the
    /// first non-blank message wins. Kept only if the test ends failed or
    /// errored.
    fn say(&mut self, name: &str, message: &str) {
        if message.trim().is_empty() {
            return;
        }
        let lines = self.said.entry(name.to_owned()).or_default();
        if lines.is_empty() {
            lines.extend(message.lines().map(str::to_owned));
        }
    }

    /// [`Collector::record`] with what the test said.
    fn record_saying(
        &mut self,
        name: String,
        file: Option<String>,
        outcome: Outcome,
        message: Option<&str>,
    ) {
        if let Some(m) = message {
            self.say(&name, m);
        }
        self.record(name, file, outcome);
    }

    /// Records one reported result; a second result for the same name is
    /// merged (worst wins) and noted.
    fn record(&mut self, name: String, file: Option<String>, outcome: Outcome) {
        self.recorded += 1;
        if let Some(existing) = self.tests.get(&name) {
            let note = format!(
                "duplicate test `{name}`: {:?} then {:?}, kept the worse",
                existing.outcome, outcome
            );
            self.notes.push(note);
        }
        self.merge(name, file, outcome);
    }

    /// Folds an extra piece of evidence about a test into its entry (or
    /// creates it) without counting it as a new result: for sub-results such
    /// as unittest subtests, or a failure listing repeating a progress line.
    fn merge(&mut self, name: String, file: Option<String>, outcome: Outcome) {
        match self.tests.get_mut(&name) {
            Some(existing) => {
                existing.outcome = existing.outcome.worst(outcome);
                if existing.file.is_none() {
                    existing.file = file;
                }
            }
            None => {
                self.tests.insert(
                    name.clone(),
                    TestResult {
                        name,
                        file,
                        outcome,
                        message: None,
                    },
                );
            }
        }
    }

    /// Counts `n` more results that share an entry already recorded (pytest
    /// groups identical skips as `SKIPPED [3] file:line`).
    fn count_more(&mut self, n: usize) {
        self.recorded += n;
    }

    fn contains(&self, name: &str) -> bool {
        self.tests.contains_key(name)
    }

    fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// How many results [`Collector::record`] took, duplicates included: the
    /// number to compare with a runner's own count.
    fn recorded(&self) -> usize {
        self.recorded
    }

    /// Adds the build failures found in the input.
    fn build_failures(&mut self, found: Vec<BuildFailure>) {
        self.build_failures.extend(found);
    }

    fn finish(mut self) -> Report {
        for (name, lines) in std::mem::take(&mut self.said) {
            if let Some(t) = self.tests.get_mut(&name)
                && t.outcome.is_failure()
            {
                t.message = message::capped(&lines);
            }
        }
        if self.format.capabilities().ids == IdShape::Libtest {
            libtest::stable_doctest_ids(&mut self.tests);
        }
        Report {
            format: self.format,
            tests: self.tests.into_values().collect(),
            notes: self.notes,
            build_failures: self.build_failures.finish(),
        }
    }
}

/// Splits console output into lines numbered from 1, tolerating invalid
/// UTF-8, `\r\n` endings and ANSI colour codes (runners colour their output
/// when they think they talk to a terminal).
fn text_lines(input: &[u8]) -> impl Iterator<Item = (usize, String)> + '_ {
    input.split(|&b| b == b'\n').enumerate().map(|(i, raw)| {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        (i + 1, strip_ansi(&String::from_utf8_lossy(raw)))
    })
}

/// Removes ANSI CSI escape sequences (`ESC [ … final-byte`).
fn strip_ansi(line: &str) -> String {
    if !line.contains('\u{1b}') {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `"2 passed"` style count words, as printed in runner summaries.
fn leading_count(text: &str) -> Option<(usize, &str)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let n = text.get(..end)?.parse().ok()?;
    Some((n, text.get(end..)?.trim()))
}

/// Helpers shared by the parsers' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use crate::Report;

    /// `(unit, message, stopped_run)` of each build failure.
    pub(crate) fn failures(r: &Report) -> Vec<(&str, &str, bool)> {
        r.build_failures
            .iter()
            .map(|b| (b.unit.as_str(), b.message.as_str(), b.stopped_run))
            .collect()
    }

    /// `(test, message)` of each test that carries a message.
    pub(crate) fn messages(r: &Report) -> Vec<(&str, &str)> {
        r.tests
            .iter()
            .filter_map(|t| Some((t.name.as_str(), t.message.as_deref()?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(outcomes: &[(&str, Outcome)]) -> Report {
        let mut c = Collector::new(Format::Tap);
        for (name, outcome) in outcomes {
            c.record((*name).to_owned(), None, *outcome);
        }
        c.finish()
    }

    #[test]
    fn format_names_round_trip_through_from_str_display_and_serde() {
        for format in Format::ALL {
            let name = format.to_string();
            assert_eq!(name.parse::<Format>(), Ok(format));
            let json = serde_json::to_string(&format).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Format>(&json).unwrap(), format);
        }
        assert_eq!(
            "go-test-json".parse::<Format>(),
            Ok(Format::GoTestJson),
            "kebab names as documented"
        );
        assert_eq!(
            "libtest_json".parse::<Format>(),
            Err(UnknownFormat("libtest_json".to_owned()))
        );
    }

    #[test]
    fn outcome_serializes_snake_case() {
        assert_eq!(
            serde_json::to_string(&Outcome::Skipped).unwrap(),
            "\"skipped\""
        );
        let r = report(&[("a", Outcome::Error)]);
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            json,
            r#"{"format":"tap","tests":[{"name":"a","file":null,"outcome":"error"}],"notes":[]}"#
        );
        assert_eq!(serde_json::from_str::<Report>(&json).unwrap(), r);
    }

    #[test]
    fn duplicates_merge_worst_wins_with_a_note_and_sorted() {
        let r = report(&[
            ("b", Outcome::Passed),
            ("a", Outcome::Failed),
            ("b", Outcome::Failed),
            ("b", Outcome::Passed),
            ("c", Outcome::Passed),
            ("c", Outcome::Skipped),
        ]);
        let names: Vec<_> = r.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(r.outcome("b"), Some(Outcome::Failed));
        assert_eq!(r.outcome("c"), Some(Outcome::Skipped));
        assert_eq!(r.outcome("zzz"), None);
        assert_eq!(r.notes.len(), 3, "{:?}", r.notes);
    }

    #[test]
    fn assess_zero_tests_is_untrustworthy() {
        let r = report(&[]);
        assert!(matches!(assess(Some(0), &r), Trust::Untrustworthy(_)));
        assert!(matches!(assess(Some(1), &r), Trust::Untrustworthy(_)));
    }

    #[test]
    fn assess_exit_1_with_all_passed_is_a_spoofed_report() {
        let r = report(&[("a", Outcome::Passed), ("b", Outcome::Skipped)]);
        let Trust::Untrustworthy(reason) = assess(Some(1), &r) else {
            panic!("exit 1 with an all-green report must not be trusted");
        };
        assert!(reason.contains("exit code 1"), "{reason}");
    }

    #[test]
    fn assess_exit_0_with_failures_is_untrustworthy() {
        for bad in [Outcome::Failed, Outcome::Error] {
            let r = report(&[("a", Outcome::Passed), ("b", bad)]);
            assert!(matches!(assess(Some(0), &r), Trust::Untrustworthy(_)));
        }
    }

    #[test]
    fn assess_killed_by_signal() {
        let green = report(&[("a", Outcome::Passed)]);
        assert!(matches!(assess(None, &green), Trust::Untrustworthy(_)));
        let red = report(&[("a", Outcome::Passed), ("b", Outcome::Error)]);
        assert_eq!(assess(None, &red), Trust::Trusted);
    }

    #[test]
    fn assess_consistent_reports_are_trusted() {
        let green = report(&[("a", Outcome::Passed), ("s", Outcome::Skipped)]);
        assert_eq!(assess(Some(0), &green), Trust::Trusted);
        let red = report(&[("a", Outcome::Passed), ("b", Outcome::Failed)]);
        assert_eq!(assess(Some(1), &red), Trust::Trusted);
        assert_eq!(assess(Some(101), &red), Trust::Trusted);
    }

    #[test]
    fn ansi_codes_are_stripped() {
        assert_eq!(
            strip_ansi("\u{1b}[32mPASSED\u{1b}[0m tests/a.py::t"),
            "PASSED tests/a.py::t"
        );
        assert_eq!(strip_ansi("plain"), "plain");
    }

    #[test]
    fn every_parser_survives_garbage() {
        let inputs: [&[u8]; 9] = [
            b"",
            b"\n\n\n",
            b"\xff\xfe\x00garbage\x00\x80",
            b"{\"type\":",
            b"<testsuite><testcase",
            b"test  ... \nok\nnot ok\n1..\n  FAIL: \n=====\nFAIL: (\n",
            b"{}\n[]\n{\"Action\":5}\n{\"type\":\"test\"}\n",
            b"<<<>>>&&&;;;",
            b"\x1b[\x1b[31\x1b",
        ];
        // The one input that is not garbage to one format: bare `ok` and
        // `not ok` lines are TAP test points (numbered 1 and 2).
        let tap_points = inputs[5];
        let mut errors = 0;
        for format in Format::ALL {
            for input in inputs {
                // Never a panic: an error, or a report with no tests that is
                // never trusted, whatever the exit code.
                let r = match parse(format, input) {
                    Err(_) => {
                        errors += 1;
                        continue;
                    }
                    Ok(r) => r,
                };
                if format == Format::Tap && input == tap_points {
                    let got: Vec<(&str, Outcome)> = r
                        .tests
                        .iter()
                        .map(|t| (t.name.as_str(), t.outcome))
                        .collect();
                    assert_eq!(
                        got,
                        [("test 1", Outcome::Passed), ("test 2", Outcome::Failed)],
                        "{r:?}"
                    );
                    assert!(matches!(assess(Some(0), &r), Trust::Untrustworthy(_)));
                    continue;
                }
                assert!(r.tests.is_empty(), "{format} on {input:?}: {r:?}");
                for exit in [Some(0), Some(1), None] {
                    assert!(
                        matches!(assess(exit, &r), Trust::Untrustworthy(_)),
                        "{format} on {input:?}, exit {exit:?}: an empty report was trusted"
                    );
                }
            }
        }
        // JUnit, both CTRF spellings, jest-json and mocha-json refuse all
        // nine, go-test-json the object with a numeric Action.
        assert_eq!(errors, 46);
    }

    fn fixture(format: Format, bytes: &[u8]) -> Report {
        parse(format, bytes).unwrap()
    }

    #[test]
    fn assess_real_fixtures_with_their_real_exit_codes() {
        // Exit codes as observed when the fixtures were captured.
        let cases = [
            (
                Format::Unittest,
                &include_bytes!("../tests/fixtures/unittest_py311.txt")[..],
                1,
            ),
            (
                Format::Pytest,
                include_bytes!("../tests/fixtures/pytest_ra.txt"),
                1,
            ),
            (
                Format::Pytest,
                include_bytes!("../tests/fixtures/pytest_collection_error.txt"),
                2,
            ),
            (
                Format::Libtest,
                include_bytes!("../tests/fixtures/libtest.txt"),
                101,
            ),
            (
                Format::LibtestJson,
                include_bytes!("../tests/fixtures/libtest_json.txt"),
                101,
            ),
            (
                Format::Junit,
                include_bytes!("../tests/fixtures/junit_pytest.xml"),
                1,
            ),
            (
                Format::Tap,
                include_bytes!("../tests/fixtures/tap_basic.txt"),
                1,
            ),
        ];
        for (format, bytes, exit) in cases {
            let r = fixture(format, bytes);
            assert_eq!(assess(Some(exit), &r), Trust::Trusted, "{format}");
            assert!(
                matches!(assess(Some(0), &r), Trust::Untrustworthy(_)),
                "{format}"
            );
        }
        // A bail out leaves only passes behind: perl exited 255.
        let bailed = fixture(
            Format::Tap,
            include_bytes!("../tests/fixtures/tap_bail.txt"),
        );
        assert!(matches!(
            assess(Some(255), &bailed),
            Trust::Untrustworthy(_)
        ));
    }

    fn broken(units: &[&str]) -> Report {
        let mut r = report(&[]);
        r.add_build_failures(units.iter().map(|u| BuildFailure {
            unit: (*u).to_owned(),
            message: format!("{u}: undefined: Mul"),
            stopped_run: false,
        }));
        r
    }

    #[test]
    fn assess_no_tests_but_a_build_failure_is_build_failed_not_no_tests() {
        let r = broken(&["example.com/calc", "example.com/calc/x"]);
        for exit in [1, 2, 101] {
            let Trust::BuildFailed(why) = assess(Some(exit), &r) else {
                panic!("exit {exit}: {:?}", assess(Some(exit), &r));
            };
            assert!(
                why.contains("example.com/calc, example.com/calc/x"),
                "{why}"
            );
            assert!(!why.contains("holds no tests"), "{why}");
        }
        // The exit status must agree: a "build failure" in a green run, or in
        // a run killed from outside, is not believed.
        assert!(matches!(assess(Some(0), &r), Trust::Untrustworthy(_)));
        assert!(matches!(assess(None, &r), Trust::Untrustworthy(_)));
    }

    #[test]
    fn assess_no_tests_and_no_build_failure_stays_untrustworthy() {
        let Trust::Untrustworthy(why) = assess(Some(2), &report(&[])) else {
            panic!("an empty report must stay untrusted");
        };
        assert_eq!(why, "the report holds no tests");
        // Real output with no test and no recognised build failure: go's own
        // module error, and cargo failing before it compiled anything.
        for (format, log) in [
            (
                Format::GoTestJson,
                &b"go: updates to go.mod needed; to update it:\n\tgo mod tidy\n"[..],
            ),
            (
                Format::Libtest,
                b"error: failed to parse manifest at `/w/Cargo.toml`\n",
            ),
            (
                Format::Pytest,
                b"ERROR: file or directory not found: tests/x.py\n",
            ),
            (
                Format::Unittest,
                b"\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n",
            ),
        ] {
            let r = fixture(format, log);
            assert!(
                r.build_failures.is_empty(),
                "{format}: {:?}",
                r.build_failures
            );
            assert!(
                matches!(assess(Some(1), &r), Trust::Untrustworthy(_)),
                "{format}"
            );
        }
    }

    #[test]
    fn assess_counts_unbuilt_units_as_failures_when_tests_ran() {
        let mut r = report(&[("p.TestA", Outcome::Passed)]);
        r.add_build_failures(broken(&["q"]).build_failures);
        assert_eq!(assess(Some(1), &r), Trust::Trusted);
        assert!(matches!(assess(Some(0), &r), Trust::Untrustworthy(_)));
    }

    #[test]
    fn assess_build_failure_fixtures_with_their_real_exit_codes() {
        let cases = [
            (
                Format::GoTestJson,
                &include_bytes!("../tests/fixtures/go_test_json_build_fail_go119.txt")[..],
                2,
                false,
            ),
            (
                Format::GoTestJson,
                include_bytes!("../tests/fixtures/go_test_json_build_fail_go124.txt"),
                1,
                false,
            ),
            (
                Format::GoTestJson,
                include_bytes!("../tests/fixtures/go_test_json_collision_go119.txt"),
                2,
                true,
            ),
            (
                Format::Libtest,
                include_bytes!("../tests/fixtures/libtest_build_fail.txt"),
                101,
                false,
            ),
            (
                Format::LibtestJson,
                include_bytes!("../tests/fixtures/libtest_build_fail.txt"),
                101,
                false,
            ),
            (
                Format::Libtest,
                include_bytes!("../tests/fixtures/libtest_build_fail_workspace.txt"),
                101,
                false,
            ),
            // pytest and unittest count a module that did not import as an
            // error result of their own: the report holds that entry.
            (
                Format::Pytest,
                include_bytes!("../tests/fixtures/pytest_build_fail.txt"),
                2,
                true,
            ),
            (
                Format::Unittest,
                include_bytes!("../tests/fixtures/unittest_build_fail.txt"),
                1,
                true,
            ),
        ];
        for (format, bytes, exit, has_tests) in cases {
            let r = fixture(format, bytes);
            assert!(!r.build_failures.is_empty(), "{format}");
            assert_eq!(!r.tests.is_empty(), has_tests, "{format}");
            let trust = assess(Some(exit), &r);
            if has_tests {
                assert_eq!(trust, Trust::Trusted, "{format}");
            } else {
                assert!(
                    matches!(trust, Trust::BuildFailed(_)),
                    "{format}: {trust:?}"
                );
            }
            assert!(
                matches!(assess(Some(0), &r), Trust::Untrustworthy(_)),
                "{format}"
            );
            // What parse finds is what a scan of the same log finds.
            assert_eq!(
                scan_build_failures(format, bytes),
                r.build_failures,
                "{format}"
            );
        }
    }

    #[test]
    fn junit_report_missing_the_log_says_why() {
        // Maven failed to compile the tests: surefire wrote no XML, so the
        // caller reads the log.
        let log = include_bytes!("../tests/fixtures/maven_compile_error.txt");
        let mut r = Report::empty(Format::Junit);
        r.add_build_failures(scan_build_failures(Format::Junit, log));
        assert!(matches!(assess(Some(1), &r), Trust::BuildFailed(_)));
        let covered = r.build_failure_for("com.example.calc.CalcTest.multiplies", None);
        assert_eq!(covered.map(|b| b.unit.as_str()), Some("calc"));
        // The XML itself never holds build failures.
        let xml = fixture(
            Format::Junit,
            include_bytes!("../tests/fixtures/junit_pytest.xml"),
        );
        assert!(xml.build_failures.is_empty());
        assert!(scan_build_failures(Format::Tap, log).is_empty());
    }

    #[test]
    fn build_failure_for_maps_tests_to_their_unit() {
        let go = fixture(
            Format::GoTestJson,
            include_bytes!("../tests/fixtures/go_test_json_collision_go119.txt"),
        );
        let unit = |r: &Report, name: &str, file: Option<&str>| {
            r.build_failure_for(name, file).map(|b| b.unit.clone())
        };
        assert_eq!(
            unit(&go, "example.com/shapes/calc.TestHalf", None).as_deref(),
            Some("example.com/shapes/calc")
        );
        assert_eq!(
            unit(&go, "example.com/shapes/calc.TestHalfNegative/sub", None).as_deref(),
            Some("example.com/shapes/calc")
        );
        assert_eq!(unit(&go, "example.com/shapes/geom.TestArea", None), None);
        assert_eq!(
            unit(&go, "anything", Some("example.com/shapes/remote")).as_deref(),
            Some("example.com/shapes/remote")
        );
        // cargo stops the run: every test of it is covered.
        let rust = fixture(
            Format::Libtest,
            include_bytes!("../tests/fixtures/libtest_build_fail.txt"),
        );
        assert_eq!(unit(&rust, "multiplies", None).as_deref(), Some("tinycalc"));
        assert_eq!(unit(&report(&[]), "multiplies", None), None);
    }

    #[test]
    fn build_failures_serialize_and_round_trip() {
        let r = fixture(
            Format::GoTestJson,
            include_bytes!("../tests/fixtures/go_test_json_build_fail_go119.txt"),
        );
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            json,
            r#"{"format":"go-test-json","tests":[],"notes":[],"build_failures":[{"unit":"example.com/calc","message":"./calc_test.go:12:5: undefined: Mul","stopped_run":false}]}"#
        );
        assert_eq!(serde_json::from_str::<Report>(&json).unwrap(), r);
        // Older records without the field still read.
        let old: Report =
            serde_json::from_str(r#"{"format":"tap","tests":[],"notes":[]}"#).unwrap();
        assert!(old.build_failures.is_empty());
    }

    #[test]
    fn assess_spoofed_all_passed_text_with_exit_1() {
        // An agent's code prints a convincing green run, but the runner failed.
        let spoof = b"test_a (tests.test_x.T.test_a) ... ok\n\
----------------------------------------------------------------------\n\
Ran 1 test in 0.001s\n\nOK\n";
        let r = fixture(Format::Unittest, spoof);
        assert_eq!(r.tests.len(), 1);
        assert!(matches!(assess(Some(1), &r), Trust::Untrustworthy(_)));
    }
}
