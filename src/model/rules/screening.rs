//! Screening: reduces the readings of a candidate (base, test patch only, test
//! and gold), each read `repeats` times, to FAIL_TO_PASS, PASS_TO_PASS, flaky
//! tests and the controls.
//!
//! A reading says one of three things about a test ([`Seen`]): it ran (with
//! an outcome), its unit did not build (the reading records a build failure
//! that accounts for it: the test counts as failed), or nothing. The tests
//! a unit has are the ones it shows in the task's other readings. Then
//! ([`classify`], the whole rule, docs/verdicts.md "Screening"):
//!
//! - FAIL_TO_PASS: fails, is absent or did not build in every test-only
//!   reading, and passes in every gold reading;
//! - PASS_TO_PASS: passes in every base and every gold reading, and in every
//!   test-only reading — or, where its unit did not build in every test-only
//!   reading, the test patch leaves it unchanged (its name is not a word of a
//!   line the test patch changes): a reading that did not build says nothing
//!   about it, and base + the test patch runs an unchanged test as base
//!   does. A changed one stays FAIL_TO_PASS: without a fix it does not build;
//! - flaky: what one state's readings say differs; kept out of both;
//! - controls: the gold patch must resolve (no test of the test patch fails
//!   with it, nothing that passed at base breaks, every unit that built at
//!   base builds), the empty patch must not (at least one FAIL_TO_PASS
//!   test), and every reading must be believable (a reading whose units did
//!   not build is: that is a fact about its tree).

use std::collections::{BTreeMap, BTreeSet};

use assay_report::{Format, IdShape, Outcome, TestFile};

use super::records::{Control, RunRecord, ScreenRecord, TriageRecord};
pub(crate) use super::staging::State;
use super::touched::TouchedFiles;
use crate::words::words;

mod environment;

pub(crate) use environment::{OFFLINE, cause, environment_broken};

words! {
    /// `[screen] scope`: which tests the lists are drawn from.
    #[derive(Default)]
    pub(crate) enum Scope {
        /// Every test the readings name (assay's default: a regression
        /// anywhere in the suite is caught).
        #[default]
        Suite = "suite",
        /// Only the tests of the files the test patch touches (SWE-bench's
        /// convention): fewer regressions caught, a shorter PASS_TO_PASS.
        TouchedFiles = "touched-files",
    }
}

impl Scope {
    pub(crate) fn is_suite(&self) -> bool {
        *self == Scope::Suite
    }

    /// Whether a report in `format` names the file of every test, so that
    /// the touched files can decide (libtest's and TAP's ids carry none).
    pub(crate) fn can_select(format: Format) -> bool {
        format.capabilities().test_file.names_files()
    }
}

/// The readings a screen reads, in the order of its `runs`: every repeat of
/// a state, state by state. The layout names the runs in this order and the
/// job reads them back by it.
pub(crate) fn readings(repeats: u32) -> impl Iterator<Item = (State, u32)> {
    State::ALL
        .into_iter()
        .flat_map(move |state| (0..repeats).map(move |r| (state, r)))
}

/// A screen's readings by state, every repeat of each in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Runs {
    base: Vec<RunRecord>,
    test: Vec<RunRecord>,
    gold: Vec<RunRecord>,
}

impl Runs {
    /// The states as records list them: by word (base, gold, test), so
    /// what a record lists reading by reading keeps its bytes.
    const LISTED: [State; 3] = [State::Base, State::Gold, State::Test];

    pub(crate) fn push(&mut self, state: State, run: RunRecord) {
        self.list_mut(state).push(run);
    }

    fn list_mut(&mut self, state: State) -> &mut Vec<RunRecord> {
        match state {
            State::Base => &mut self.base,
            State::Test => &mut self.test,
            State::Gold => &mut self.gold,
        }
    }

    pub(crate) fn of(&self, state: State) -> &[RunRecord] {
        match state {
            State::Base => &self.base,
            State::Test => &self.test,
            State::Gold => &self.gold,
        }
    }

    /// Every reading, state by state in the [`Runs::LISTED`] order, with
    /// its state and repeat.
    fn listed(&self) -> impl Iterator<Item = (State, usize, &RunRecord)> {
        Self::LISTED.into_iter().flat_map(move |state| {
            self.of(state)
                .iter()
                .enumerate()
                .map(move |(i, r)| (state, i, r))
        })
    }

    /// Every reading, in the [`Runs::LISTED`] order.
    fn all(&self) -> impl Iterator<Item = &RunRecord> {
        self.listed().map(|(_, _, r)| r)
    }
}

/// The screening of a candidate: `test_patch` is its bytes, `log` reads a
/// reading's log. A reading whose command could not start says nothing
/// about the tests: the task is uncertified for that alone
/// ([`broken_record`]); otherwise the readings are reduced ([`reduce`]).
pub(crate) fn screen(
    triage: &TriageRecord,
    format: Format,
    scope: Scope,
    test_patch: &[u8],
    runs: &Runs,
    log: &dyn Fn(&RunRecord) -> Vec<u8>,
) -> ScreenRecord {
    // Each reason once, with the readings that gave it.
    let mut broken: Vec<(String, Vec<String>)> = Vec::new();
    let mut readings = 0;
    for (state, i, run) in runs.listed() {
        readings += 1;
        let log = log(run);
        if let Some(why) = environment_broken(run, &String::from_utf8_lossy(&log)) {
            let reading = format!("{} reading {i}", state.as_str());
            match broken.iter_mut().find(|(w, _)| *w == why) {
                Some((_, at)) => at.push(reading),
                None => broken.push((why, vec![reading])),
            }
        }
    }
    if broken.is_empty() {
        return reduce(triage, format, scope, &changed_words(test_patch), runs);
    }
    let lines: Vec<String> = broken
        .into_iter()
        .map(|(why, at)| match at.as_slice() {
            [one] => format!("{one}: {why}"),
            _ if at.len() == readings => format!("every reading: {why}"),
            _ => format!("{}: {why}", at.join(", ")),
        })
        .collect();
    broken_record(triage, &lines)
}

/// The screening of a candidate whose test command could not run: only the
/// `environment_broken` control, failed, naming what broke; no control that
/// would derive from the readings (they read nothing), no test lists.
pub(crate) fn broken_record(triage: &TriageRecord, broken: &[String]) -> ScreenRecord {
    let mut rec = ScreenRecord {
        id: triage.id.clone(),
        ..ScreenRecord::default()
    };
    rec.controls.insert(
        Control::EnvironmentBroken,
        (
            false,
            format!("the test command could not run: {}", broken.join("; ")),
        ),
    );
    rec
}

/// What one reading says about one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    Ran(Outcome),
    /// Not in the report, and a build failure of the reading accounts for
    /// it: failed.
    Unbuilt,
    /// Not in the report, and nothing says why.
    Absent,
}

impl Seen {
    fn passed(self) -> bool {
        self == Seen::Ran(Outcome::Passed)
    }

    /// Failed, errored, or did not build.
    fn failed(self) -> bool {
        match self {
            Seen::Ran(o) => o.is_failure(),
            Seen::Unbuilt => true,
            Seen::Absent => false,
        }
    }

    fn ran(self) -> bool {
        matches!(self, Seen::Ran(_))
    }

    /// How `readings` in the screen record shows it.
    fn shown(self) -> Outcome {
        match self {
            Seen::Ran(o) => o,
            Seen::Unbuilt => Outcome::Error,
            Seen::Absent => Outcome::Skipped,
        }
    }
}

/// Where [`classify`] puts a test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    FailToPass,
    PassToPass,
    Flaky,
    /// Passed at base, fails (or does not build) with the gold patch.
    Regression,
    /// A test of the test patch that fails (or does not build) with the gold patch.
    GoldFailure,
    /// In neither list (e.g. a new test that passes without the fix).
    Neither,
}

/// What every reading of one state says about one test.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Readings<'a> {
    pub(crate) base: &'a [Seen],
    pub(crate) test: &'a [Seen],
    pub(crate) gold: &'a [Seen],
}

fn all(v: &[Seen], f: impl Fn(Seen) -> bool) -> bool {
    !v.is_empty() && v.iter().all(|s| f(*s))
}

/// The screening rule for one test (module docs): `in_test_patch`, the
/// test lives in a file of the test patch (or shows at base in no
/// reading); `changed`, its name is a word of a line the test patch
/// changes.
pub(crate) fn classify(r: Readings<'_>, in_test_patch: bool, changed: bool) -> Class {
    let flaky = [r.base, r.test, r.gold]
        .iter()
        .any(|v| v.windows(2).any(|w| w[0] != w[1]));
    if flaky {
        return Class::Flaky;
    }
    let passed_around = all(r.base, Seen::passed) && all(r.gold, Seen::passed);
    // The test-only state did not build it and it is the test base ran: that
    // state's readings say nothing, base and gold decide.
    let unchanged_unbuilt = all(r.test, |s| s == Seen::Unbuilt) && !changed;
    if all(r.test, |s| s.failed() || s == Seen::Absent) && all(r.gold, Seen::passed) {
        if passed_around && unchanged_unbuilt {
            Class::PassToPass
        } else {
            Class::FailToPass
        }
    } else if passed_around && all(r.test, Seen::passed) {
        Class::PassToPass
    } else if all(r.base, Seen::passed) && all(r.gold, Seen::failed) {
        Class::Regression
    } else if in_test_patch && all(r.gold, Seen::failed) {
        Class::GoldFailure
    } else {
        Class::Neither
    }
}

/// The words (identifiers) of the lines a patch adds or removes, and of its
/// hunk headers (where git names the enclosing function): a test whose name
/// is among them is one the patch changes.
pub(crate) fn changed_words(patch: &[u8]) -> BTreeSet<String> {
    let text = String::from_utf8_lossy(patch);
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let changed = if line.starts_with("+++ ") || line.starts_with("--- ") {
            continue;
        } else if let Some(rest) = line.strip_prefix("@@") {
            rest.split_once("@@").map_or("", |(_, header)| header)
        } else if let Some(rest) = line.strip_prefix(['+', '-']) {
            rest
        } else {
            continue;
        };
        out.extend(
            changed
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .map(str::to_owned),
        );
    }
    out
}

/// The name a test is declared under in its source: the id without its
/// package or module, class, subtest and parameters
/// (`example.com/calc.TestDiv/by_zero` → `TestDiv`,
/// `tests/test_x.py::T::test_a[1]` → `test_a`, `tests.test_x.T.test_a` →
/// `test_a`, the doctest `src/lib.rs - kv::Key #2` → `Key`). `None` when
/// that is no identifier (a number, a line annotation, the crate's docs):
/// a test is never taken for changed because a number the patch writes
/// happens to be in its id.
pub(crate) fn declared_name(format: Format, id: &str) -> Option<&str> {
    let mut rest = id;
    if format.capabilities().ids == IdShape::GoPackage
        && let Some(unit) = assay_report::unit_of(format, id, None)
    {
        rest = &id[unit.len() + 1..];
        rest = rest.split('/').next().unwrap_or(rest);
    }
    if let Some((_, item)) = assay_report::doctest_item(format, id) {
        // A doctest: its item; the crate's own docs declare no name.
        if item.starts_with('(') {
            return None;
        }
        rest = item;
    }
    let rest = rest.split('[').next().unwrap_or(rest);
    rest.rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .find(|w| !w.is_empty())
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
}

/// The test files a test patch touches, as a report names a test's file
/// ([`TouchedFiles`]): a path, or for Go the package of the directory a
/// touched `_test.go` file is in (a package ending in `/<dir>`; the root
/// directory's package is the one every other package of the readings
/// extends).
struct Touched<'a> {
    files: TouchedFiles<'a>,
    /// Go: the root package.
    go: Option<Option<&'a str>>,
}

impl<'a> Touched<'a> {
    /// `units`: every test file (Go: package) the readings name.
    fn new(format: Format, files: &BTreeSet<&'a str>, units: &BTreeSet<&'a str>) -> Touched<'a> {
        let go = (format.capabilities().test_file == TestFile::GoPackage).then(|| {
            // The shortest package, if every other one extends it.
            units.iter().min_by_key(|p| p.len()).copied().filter(|p| {
                units
                    .iter()
                    .all(|q| q == p || q.strip_prefix(*p).is_some_and(|r| r.starts_with('/')))
            })
        });
        Touched {
            files: TouchedFiles::of(files.iter().copied()),
            go,
        }
    }

    /// Whether a test in `file` (as its report names it) is in a touched file.
    fn holds(&self, file: Option<&str>) -> bool {
        let Some(file) = file else {
            return false;
        };
        match &self.go {
            None => self.files.contains(file),
            Some(root) => self.files.go_dirs().iter().any(|dir| match *dir {
                "" => *root == Some(file),
                dir => file == dir || file.ends_with(&format!("/{dir}")),
            }),
        }
    }
}

/// The first line of a compiler's message, with how many more there are.
pub(crate) fn first_line(message: &str) -> String {
    let mut lines = message.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("(no message)").trim().to_owned();
    match lines.count() {
        0 => first,
        n => format!("{first} (+{n} more lines)"),
    }
}

/// The screening reduction (module docs), a pure function of the readings:
/// `changed` is [`changed_words`] of the test patch.
pub(crate) fn reduce(
    triage: &TriageRecord,
    format: Format,
    scope: Scope,
    changed: &BTreeSet<String>,
    runs: &Runs,
) -> ScreenRecord {
    let mut rec = ScreenRecord {
        id: triage.id.clone(),
        ..ScreenRecord::default()
    };
    if let Some(skip) = runs.all().find_map(|r| r.skipped.clone()) {
        rec.skipped = Some(skip);
        return rec;
    }
    // The run's own time: what it waited for a CPU the machine gave to
    // other work is not counted, as the graded runs' clock does not.
    rec.slowest_s = runs
        .all()
        .map(|r| r.duration_ms.saturating_sub(r.cpu_stalled_ms.unwrap_or(0)))
        .max()
        .map(super::timeout::bucket);
    rec.loudest_log_bytes = runs.all().map(|r| r.log_bytes).max();
    run_findings(&mut rec, runs);
    sort_tests(&mut rec, triage, format, scope, changed, runs);
    controls(&mut rec, runs);
    rec
}

/// What each reading says beside its tests: why it is not trusted (or its
/// report unreadable), the audit findings (one a rule), the build failures.
fn run_findings(rec: &mut ScreenRecord, runs: &Runs) {
    for (state, i, r) in runs.listed() {
        let state = state.as_str();
        if let Some(why) = &r.untrusted {
            rec.untrusted.push(format!("{state} reading {i}: {why}"));
        }
        if let Some(e) = &r.report_error {
            rec.untrusted
                .push(format!("{state} reading {i}: report unreadable: {e}"));
        }
        for finding in &r.audit {
            let rule = super::verdict::audit_rule(finding);
            if !rec
                .audit_off
                .iter()
                .any(|o| super::verdict::audit_rule(o) == rule)
            {
                rec.audit_off
                    .push(format!("{finding} ({state} reading {i})"));
            }
        }
        for b in &r.build_failures {
            rec.build_failures.push(format!(
                "{state} reading {i}: {}: {}",
                b.unit,
                first_line(&b.message)
            ));
        }
    }
}

/// Each test the readings name, in scope, into FAIL_TO_PASS, PASS_TO_PASS,
/// flaky, regressions or gold failures ([`classify`]), its readings kept.
fn sort_tests(
    rec: &mut ScreenRecord,
    triage: &TriageRecord,
    format: Format,
    scope: Scope,
    changed: &BTreeSet<String>,
    runs: &Runs,
) {
    let names: BTreeSet<&String> = runs.all().flat_map(|r| r.tests.keys()).collect();
    // Where two readings name a test's file, the later in the listed order
    // is kept.
    let files: BTreeMap<&String, &String> = runs.all().flat_map(|r| r.files.iter()).collect();
    let test_files: BTreeSet<&str> = triage.test_files.iter().map(String::as_str).collect();
    let touched = (scope == Scope::TouchedFiles).then(|| {
        let units: BTreeSet<&str> = files.values().map(|f| f.as_str()).collect();
        Touched::new(format, &test_files, &units)
    });
    for name in names {
        let file = files.get(name).map(|f| f.as_str());
        if touched.as_ref().is_some_and(|t| !t.holds(file)) {
            rec.out_of_scope += 1;
            continue;
        }
        let read = |state: State| -> Vec<Seen> {
            runs.of(state)
                .iter()
                .map(|r| match r.tests.get(name) {
                    Some(o) => Seen::Ran(*o),
                    None if r.build_failure_for(format, name, file).is_some() => Seen::Unbuilt,
                    None => Seen::Absent,
                })
                .collect()
        };
        let (base, test, gold) = (read(State::Base), read(State::Test), read(State::Gold));
        for (state, v) in [
            (State::Base, &base),
            (State::Test, &test),
            (State::Gold, &gold),
        ] {
            rec.readings
                .entry(state.as_str().to_owned())
                .or_default()
                .insert(name.clone(), v.iter().map(|s| s.shown()).collect());
        }
        let in_test_patch =
            file.is_some_and(|f| test_files.contains(f)) || !base.iter().any(|s| s.ran());
        let readings = Readings {
            base: &base,
            test: &test,
            gold: &gold,
        };
        let is_changed = declared_name(format, name).is_some_and(|n| changed.contains(n));
        let list = match classify(readings, in_test_patch, is_changed) {
            Class::FailToPass => &mut rec.fail_to_pass,
            Class::PassToPass => &mut rec.pass_to_pass,
            Class::Flaky => &mut rec.flaky,
            Class::Regression => &mut rec.regressions,
            Class::GoldFailure => &mut rec.gold_failures,
            Class::Neither => continue,
        };
        list.push(name.clone());
    }
}

/// The controls: the gold patch resolves, the empty patch fails, every
/// reading is believable (and the cascades, for the record).
fn controls(rec: &mut ScreenRecord, runs: &Runs) {
    rec.cascades = cascades(runs);
    let gold_unbuilt = gold_unbuilt(runs);
    let gold_ok =
        rec.gold_failures.is_empty() && rec.regressions.is_empty() && gold_unbuilt.is_empty();
    let mut gold_why = Vec::new();
    if !(rec.gold_failures.is_empty() && rec.regressions.is_empty()) {
        gold_why.push(format!(
            "with the gold patch these still fail: {}",
            rec.gold_failures
                .iter()
                .chain(&rec.regressions)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    gold_why.extend(gold_unbuilt);
    rec.controls.insert(
        Control::GoldResolves,
        (
            gold_ok,
            if gold_ok {
                "every test of the test patch passes with the gold patch".into()
            } else {
                gold_why.join("; ")
            },
        ),
    );
    let empty_ok = !rec.fail_to_pass.is_empty();
    rec.controls.insert(
        Control::EmptyPatchFails,
        (
            empty_ok,
            if empty_ok {
                format!(
                    "{} FAIL_TO_PASS tests fail without a fix",
                    rec.fail_to_pass.len()
                )
            } else {
                "no FAIL_TO_PASS test: an empty patch would resolve this task".into()
            },
        ),
    );
    let trusted = rec.untrusted.is_empty();
    rec.controls.insert(
        Control::ReadingsTrusted,
        (
            trusted,
            if trusted {
                "every reading's report is believable".into()
            } else {
                rec.untrusted.join("; ")
            },
        ),
    );
}

/// The units that do not build with the gold patch though they build in
/// every base reading, each with the compiler's first line: the control
/// fails on them whether or not a test of theirs is known.
fn gold_unbuilt(runs: &Runs) -> Vec<String> {
    let at_base: BTreeSet<&str> = runs
        .of(State::Base)
        .iter()
        .flat_map(|r| r.build_failures.iter().map(|b| b.unit.as_str()))
        .collect();
    let mut out: BTreeMap<&str, &str> = BTreeMap::new();
    for b in runs.of(State::Gold).iter().flat_map(|r| &r.build_failures) {
        if !at_base.contains(b.unit.as_str()) {
            out.entry(b.unit.as_str()).or_insert(b.message.as_str());
        }
    }
    out.into_iter()
        .map(|(unit, message)| {
            format!(
                "with the gold patch {unit} does not build: {}",
                first_line(message)
            )
        })
        .collect()
}

/// A file whose every test errored in a reading while other files ran: one
/// failure (an import, a fixture) took the whole file down.
fn cascades(runs: &Runs) -> Vec<String> {
    let mut out = BTreeSet::new();
    for (state, _, r) in runs.listed() {
        let mut by_file: BTreeMap<&String, Vec<Outcome>> = BTreeMap::new();
        for (name, o) in &r.tests {
            if let Some(f) = r.files.get(name) {
                by_file.entry(f).or_default().push(*o);
            }
        }
        if by_file.len() < 2 {
            continue;
        }
        for (file, outcomes) in by_file {
            if outcomes.len() >= 2 && outcomes.iter().all(|o| *o == Outcome::Error) {
                out.insert(format!(
                    "{file}: all {} tests errored in the {} state",
                    outcomes.len(),
                    state.as_str()
                ));
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests;
