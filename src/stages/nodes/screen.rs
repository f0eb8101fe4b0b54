//! `screen`: reduces the readings of a candidate (base, test patch only, test
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
use std::sync::Arc;

use assay_engine::{Digest, JobCtx};
use assay_report::{Format, Outcome};
use serde::Serialize;

use super::node::{Kind, Made, NodeKind};
use super::records::{RunRecord, ScreenRecord, TriageRecord};
use super::tree::State;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct ScreenParams {
    pub(crate) repeats: u32,
    /// How test ids map to the units that did not build.
    pub(crate) report: Format,
}

/// The readings a screen reads, in the order of its `runs`: every repeat of
/// a state, state by state. The layout names the runs in this order and the
/// job reads them back by it.
pub(crate) fn readings(repeats: u32) -> impl Iterator<Item = (State, u32)> {
    State::ALL
        .into_iter()
        .flat_map(move |state| (0..repeats).map(move |r| (state, r)))
}

super::node::inputs! {
    pub(crate) struct ScreenInputs / ScreenNames { triage: TriageRecord; ..runs: [RunRecord] }
}

pub(crate) struct Screen(pub(crate) ScreenParams);

impl Kind for Screen {
    const NAME: &'static str = NodeKind::Screen.as_str();
    /// 2: a unit that did not build counts its tests as failed; PASS_TO_PASS
    /// may rest on base and gold where the test-only state did not build.
    /// 3: a command that could not run (exit 126/127, not found) is
    /// `environment_broken`, and nothing else.
    const VERSION: u32 = 3;
    type Params = ScreenParams;
    type Inputs = ScreenInputs;
    type Record = ScreenRecord;

    fn params(&self) -> &ScreenParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        inputs: ScreenInputs,
        ctx: JobCtx,
    ) -> Result<Made<ScreenRecord>, String> {
        let triage = &inputs.triage;
        let expected = readings(self.0.repeats).count();
        if inputs.runs.len() != expected {
            return Err(format!(
                "{} runs, {expected} expected ({} repeats of each state)",
                inputs.runs.len(),
                self.0.repeats
            ));
        }
        let mut runs: BTreeMap<&'static str, Vec<RunRecord>> = BTreeMap::new();
        for ((state, _), run) in readings(self.0.repeats).zip(inputs.runs) {
            runs.entry(state.as_str()).or_default().push(run.record);
        }
        let test_patch = if triage.test_patch.is_empty() {
            Vec::new()
        } else {
            let d: Digest = triage.test_patch.parse()?;
            ctx.blobs.get(&d).map_err(|e| e.to_string())?
        };
        // A reading whose command could not start says nothing about the
        // tests: the task is uncertified for that alone.
        let mut broken = Vec::new();
        for (state, list) in &runs {
            for (i, run) in list.iter().enumerate() {
                let log = match run.log.parse::<Digest>() {
                    Ok(d) => ctx.blobs.get(&d).unwrap_or_default(),
                    Err(_) => Vec::new(),
                };
                let log = String::from_utf8_lossy(&log);
                if let Some(why) = environment_broken(run, &log) {
                    broken.push(format!("{state} reading {i}: {why}"));
                }
            }
        }
        Ok(Made::record(if broken.is_empty() {
            reduce(triage, self.0.report, &changed_words(&test_patch), &runs)
        } else {
            broken_record(triage, &broken)
        }))
    }
}

/// Why a reading's test command could not run at all, if it could not:
/// exit 126 (not executable) or 127 (not found), or a shell's "command not
/// found" / a missing interpreter in a log without a single test. Names the
/// command where the log does, and the exit code.
pub(crate) fn environment_broken(run: &RunRecord, log: &str) -> Option<String> {
    let code = run.exit_code;
    let named = log.lines().find_map(not_found_command);
    let by_code = matches!(code, Some(126 | 127));
    // Without the exit code, only a log that ran nothing and built nothing
    // (a build failure is a fact about the tree, not the environment).
    let ran_something = !run.tests.is_empty() || !run.build_failures.is_empty();
    if !by_code && (named.is_none() || ran_something || code == Some(0)) {
        return None;
    }
    let exit = code.map_or_else(|| "no exit code".to_owned(), |c| format!("exit {c}"));
    Some(match (named, code) {
        (Some((cmd, what)), _) => format!("`{cmd}` {what} ({exit})"),
        (None, Some(126)) => format!("the test command could not be executed ({exit})"),
        (None, _) => format!("the test command was not found ({exit})"),
    })
}

/// The command a shell's or `env`'s error line says is missing (or not
/// executable), with what it says: `bash: python3: command not found`,
/// `sh: 1: python3: not found`, `/usr/bin/env: 'python3': No such file or
/// directory`, `bash: ./run.sh: Permission denied`.
fn not_found_command(line: &str) -> Option<(String, &'static str)> {
    let line = line.trim();
    let unquote = |s: &str| {
        s.trim()
            .trim_matches(|c| matches!(c, '\'' | '"' | '‘' | '’' | '`'))
            .to_owned()
    };
    let last_field = |head: &str| head.rsplit(": ").next().map(unquote);
    if let Some(head) = line.strip_suffix(": command not found") {
        return Some((last_field(head)?, "not found"));
    }
    // dash's shape (`sh: 1: pytest: not found`); other tools say "not found" too.
    if let Some(head) = line.strip_suffix(": not found")
        && ["sh: ", "/bin/sh: ", "dash: "]
            .iter()
            .any(|p| line.starts_with(p))
    {
        return Some((last_field(head)?, "not found"));
    }
    if line.starts_with("/usr/bin/env: ") || line.starts_with("env: ") {
        let head = line.strip_suffix(": No such file or directory")?;
        return Some((last_field(head)?, "not found (missing interpreter)"));
    }
    if let Some(head) = line.strip_suffix(": Permission denied")
        && (line.starts_with("bash: ") || line.starts_with("sh: "))
    {
        return Some((last_field(head)?, "not executable"));
    }
    None
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
        "environment_broken".into(),
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
/// `test_a`).
pub(crate) fn declared_name(format: Format, id: &str) -> &str {
    let mut rest = id;
    if format == Format::GoTestJson
        && let Some(unit) = assay_report::unit_of(format, id, None)
    {
        rest = &id[unit.len() + 1..];
        rest = rest.split('/').next().unwrap_or(rest);
    }
    let rest = rest.split('[').next().unwrap_or(rest);
    rest.rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .find(|w| !w.is_empty())
        .unwrap_or(rest)
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
    changed: &BTreeSet<String>,
    runs: &BTreeMap<&'static str, Vec<RunRecord>>,
) -> ScreenRecord {
    let mut rec = ScreenRecord {
        id: triage.id.clone(),
        ..ScreenRecord::default()
    };
    if let Some(skip) = runs.values().flatten().find_map(|r| r.skipped.clone()) {
        rec.skipped = Some(skip);
        return rec;
    }
    for (state, list) in runs {
        for (i, r) in list.iter().enumerate() {
            if let Some(why) = &r.untrusted {
                rec.untrusted.push(format!("{state} reading {i}: {why}"));
            }
            if let Some(e) = &r.report_error {
                rec.untrusted
                    .push(format!("{state} reading {i}: report unreadable: {e}"));
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
    let names: BTreeSet<&String> = runs
        .values()
        .flatten()
        .flat_map(|r| r.tests.keys())
        .collect();
    let files: BTreeMap<&String, &String> = runs
        .values()
        .flatten()
        .flat_map(|r| r.files.iter())
        .collect();
    let test_files: BTreeSet<&str> = triage.test_files.iter().map(String::as_str).collect();
    let empty = Vec::new();
    for name in names {
        let file = files.get(name).map(|f| f.as_str());
        let read = |state: &str| -> Vec<Seen> {
            runs.get(state)
                .unwrap_or(&empty)
                .iter()
                .map(|r| match r.tests.get(name) {
                    Some(o) => Seen::Ran(*o),
                    None if r.build_failure_for(format, name, file).is_some() => Seen::Unbuilt,
                    None => Seen::Absent,
                })
                .collect()
        };
        let (base, test, gold) = (read("base"), read("test"), read("gold"));
        for (state, v) in [("base", &base), ("test", &test), ("gold", &gold)] {
            rec.readings
                .entry(state.to_owned())
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
        let is_changed = changed.contains(declared_name(format, name));
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
        "gold_resolves".into(),
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
        "empty_patch_fails".into(),
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
        "readings_trusted".into(),
        (
            trusted,
            if trusted {
                "every reading's report is believable".into()
            } else {
                rec.untrusted.join("; ")
            },
        ),
    );
    rec
}

/// The units that do not build with the gold patch though they build in
/// every base reading, each with the compiler's first line: the control
/// fails on them whether or not a test of theirs is known.
fn gold_unbuilt(runs: &BTreeMap<&'static str, Vec<RunRecord>>) -> Vec<String> {
    let at_base: BTreeSet<&str> = runs
        .get("base")
        .into_iter()
        .flatten()
        .flat_map(|r| r.build_failures.iter().map(|b| b.unit.as_str()))
        .collect();
    let mut out: BTreeMap<&str, &str> = BTreeMap::new();
    for b in runs
        .get("gold")
        .into_iter()
        .flatten()
        .flat_map(|r| &r.build_failures)
    {
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
fn cascades(runs: &BTreeMap<&'static str, Vec<RunRecord>>) -> Vec<String> {
    let mut out = BTreeSet::new();
    for (state, list) in runs {
        for r in list {
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
                        "{file}: all {} tests errored in the {state} state",
                        outcomes.len()
                    ));
                }
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_report::BuildFailure;

    const GO: Format = Format::GoTestJson;
    const PKG: &str = "example.com/gocalc";

    fn id(test: &str) -> String {
        format!("{PKG}.{test}")
    }

    /// A reading in which these tests ran with these outcomes.
    fn ran(tests: &[(&str, Outcome)]) -> RunRecord {
        let mut r = RunRecord::default();
        for (t, o) in tests {
            r.tests.insert(id(t), *o);
            r.files.insert(id(t), PKG.to_owned());
        }
        r
    }

    /// A reading in which the package did not build: no test, one failure.
    fn unbuilt(message: &str) -> RunRecord {
        RunRecord {
            exit_code: Some(2),
            build_failures: vec![BuildFailure {
                unit: PKG.to_owned(),
                message: message.to_owned(),
                stopped_run: false,
            }],
            ..RunRecord::default()
        }
    }

    fn passing(tests: &[&str]) -> RunRecord {
        let all: Vec<(&str, Outcome)> = tests.iter().map(|t| (*t, Outcome::Passed)).collect();
        ran(&all)
    }

    fn triage(test_files: &[&str]) -> TriageRecord {
        TriageRecord {
            id: "gocalc-2".into(),
            repo: "gocalc".into(),
            base: String::new(),
            head: String::new(),
            title: String::new(),
            body: String::new(),
            decision: crate::stages::records::Decision::Eligible,
            detail: String::new(),
            test_files: test_files.iter().map(|f| (*f).to_owned()).collect(),
            gold_files: Vec::new(),
            test_patch: String::new(),
            gold_patch: String::new(),
        }
    }

    fn runs(
        base: Vec<RunRecord>,
        test: Vec<RunRecord>,
        gold: Vec<RunRecord>,
    ) -> BTreeMap<&'static str, Vec<RunRecord>> {
        BTreeMap::from([("base", base), ("test", test), ("gold", gold)])
    }

    fn names(list: &[String]) -> Vec<&str> {
        list.iter()
            .map(|n| n.strip_prefix(&format!("{PKG}.")).unwrap_or(n))
            .collect()
    }

    const OLD: [&str; 3] = ["TestAdd", "TestMean", "TestSum"];
    /// gocalc's PR #2: a new test file calling what the PR adds.
    const MEDIAN_TEST_PATCH: &str = "\
diff --git a/median_test.go b/median_test.go
new file mode 100644
--- /dev/null
+++ b/median_test.go
@@ -0,0 +1,9 @@
+package gocalc
+
+import \"testing\"
+
+func TestMedian(t *testing.T) {
+\tif got := Median([]float64{3, 1, 2}); got != 2 {
+\t\tt.Fatalf(\"got %v\", got)
+\t}
+}
";

    fn median_task(test_patch: &str) -> ScreenRecord {
        let with_median: Vec<&str> = OLD.iter().copied().chain(["TestMedian"]).collect();
        reduce(
            &triage(&["median_test.go"]),
            GO,
            &changed_words(test_patch.as_bytes()),
            &runs(
                vec![passing(&OLD), passing(&OLD)],
                vec![
                    unbuilt("./median_test.go:6:12: undefined: Median"),
                    unbuilt("./median_test.go:6:12: undefined: Median"),
                ],
                vec![passing(&with_median), passing(&with_median)],
            ),
        )
    }

    #[test]
    fn a_test_patch_that_does_not_build_gives_its_new_tests_as_fail_to_pass_and_the_old_as_pass_to_pass()
     {
        let rec = median_task(MEDIAN_TEST_PATCH);
        assert_eq!(names(&rec.fail_to_pass), ["TestMedian"]);
        assert_eq!(names(&rec.pass_to_pass), OLD);
        assert!(rec.flaky.is_empty() && rec.gold_failures.is_empty() && rec.regressions.is_empty());
        // Every control holds: a reading that did not build is believed.
        for (name, (ok, why)) in &rec.controls {
            assert!(ok, "{name}: {why}");
        }
        assert!(rec.untrusted.is_empty(), "{:?}", rec.untrusted);
        assert_eq!(
            rec.build_failures,
            [
                "test reading 0: example.com/gocalc: ./median_test.go:6:12: undefined: Median",
                "test reading 1: example.com/gocalc: ./median_test.go:6:12: undefined: Median",
            ]
        );
        // The readings show a test whose unit did not build as an error.
        assert_eq!(
            rec.readings["test"][&id("TestAdd")],
            [Outcome::Error, Outcome::Error]
        );
    }

    #[test]
    fn an_old_test_the_test_patch_changes_stays_fail_to_pass_when_its_unit_does_not_build() {
        // The test patch also edits TestMean's body (the hunk header names it)
        // and TestSum's signature line: without the fix neither builds, and
        // base ran other versions of them.
        let patch = format!(
            "{MEDIAN_TEST_PATCH}{}",
            "\
diff --git a/stats_test.go b/stats_test.go
--- a/stats_test.go
+++ b/stats_test.go
@@ -10,3 +10,3 @@ func TestMean(t *testing.T) {
-\tcheck(t, Mean(xs), 2)
+\tcheck(t, Mean(xs), Median(xs))
 }
-func TestSum(t *testing.T) {
+func TestSum(t *testing.T) { // with Median
"
        );
        let rec = median_task(&patch);
        assert_eq!(
            names(&rec.fail_to_pass),
            ["TestMean", "TestMedian", "TestSum"]
        );
        assert_eq!(names(&rec.pass_to_pass), ["TestAdd"]);
    }

    #[test]
    fn a_test_only_state_that_builds_decides_as_before() {
        let rec = reduce(
            &triage(&["mean_test.go"]),
            GO,
            &BTreeSet::new(),
            &runs(
                vec![passing(&OLD)],
                vec![ran(&[
                    ("TestAdd", Outcome::Passed),
                    ("TestMean", Outcome::Passed),
                    ("TestSum", Outcome::Passed),
                    ("TestMeanEmpty", Outcome::Failed),
                ])],
                vec![passing(&[
                    "TestAdd",
                    "TestMean",
                    "TestSum",
                    "TestMeanEmpty",
                ])],
            ),
        );
        assert_eq!(names(&rec.fail_to_pass), ["TestMeanEmpty"]);
        assert_eq!(names(&rec.pass_to_pass), ["TestAdd", "TestMean", "TestSum"]);
    }

    #[test]
    fn a_gold_state_that_does_not_build_uncertifies_naming_the_compiler() {
        let rec = reduce(
            &triage(&["median_test.go"]),
            GO,
            &BTreeSet::new(),
            &runs(
                vec![passing(&OLD)],
                vec![unbuilt("./median_test.go:6:12: undefined: Median")],
                vec![unbuilt(
                    "./median.go:16:1: syntax error: unexpected EOF, expecting }\n./median.go:3:1: more",
                )],
            ),
        );
        let (ok, why) = &rec.controls["gold_resolves"];
        assert!(!ok);
        assert!(
            why.contains(
                "with the gold patch example.com/gocalc does not build: ./median.go:16:1: syntax error: unexpected EOF, expecting } (+1 more lines)"
            ),
            "{why}"
        );
        assert!(!why.contains("holds no tests"), "{why}");
        assert_eq!(names(&rec.regressions), OLD);
        assert!(rec.pass_to_pass.is_empty());
        // The readings themselves are believable.
        assert!(rec.controls["readings_trusted"].0);
    }

    #[test]
    fn a_unit_that_fails_to_build_at_base_and_with_gold_is_not_the_gold_patchs_doing() {
        let broken = || {
            let mut r = unbuilt("undefined: x");
            r.build_failures[0].unit = "example.com/gocalc/vendored".into();
            r.tests = passing(&OLD).tests;
            r
        };
        let rec = reduce(
            &triage(&[]),
            GO,
            &BTreeSet::new(),
            &runs(
                vec![broken()],
                vec![{
                    let mut r = broken();
                    r.tests.insert(id("TestNew"), Outcome::Failed);
                    r
                }],
                vec![{
                    let mut r = broken();
                    r.tests.insert(id("TestNew"), Outcome::Passed);
                    r
                }],
            ),
        );
        assert!(rec.controls["gold_resolves"].0, "{:?}", rec.controls);
        assert_eq!(names(&rec.fail_to_pass), ["TestNew"]);
    }

    #[test]
    fn a_reading_that_builds_once_and_not_once_is_flaky() {
        let r = Readings {
            base: &[Seen::Ran(Outcome::Passed)],
            test: &[Seen::Unbuilt, Seen::Ran(Outcome::Passed)],
            gold: &[Seen::Ran(Outcome::Passed)],
        };
        assert_eq!(classify(r, false, false), Class::Flaky);
    }

    #[test]
    fn classify_covers_the_rule() {
        use Seen::{Absent, Ran, Unbuilt};
        let p = Ran(Outcome::Passed);
        let f = Ran(Outcome::Failed);
        let s = Ran(Outcome::Skipped);
        let c = |base: &[Seen], test: &[Seen], gold: &[Seen], in_tp: bool, changed: bool| {
            classify(Readings { base, test, gold }, in_tp, changed)
        };
        // New test: absent or unbuilt without the fix, passes with it.
        assert_eq!(c(&[Absent], &[f], &[p], true, true), Class::FailToPass);
        assert_eq!(
            c(&[Absent], &[Unbuilt], &[p], true, true),
            Class::FailToPass
        );
        assert_eq!(c(&[Absent], &[Absent], &[p], true, true), Class::FailToPass);
        // An old test the test patch changed, failing without the fix.
        assert_eq!(c(&[p], &[f], &[p], true, true), Class::FailToPass);
        // Old, unbuilt in the test-only state: unchanged → PASS_TO_PASS.
        assert_eq!(c(&[p], &[Unbuilt], &[p], false, false), Class::PassToPass);
        assert_eq!(c(&[p], &[Unbuilt], &[p], true, true), Class::FailToPass);
        // Failed at base and unbuilt: the fix makes it pass, nothing says it passed before.
        assert_eq!(c(&[f], &[Unbuilt], &[p], false, false), Class::FailToPass);
        // Plain PASS_TO_PASS.
        assert_eq!(c(&[p], &[p], &[p], false, true), Class::PassToPass);
        // A skip without the fix is neither.
        assert_eq!(c(&[p], &[s], &[p], false, false), Class::Neither);
        // New and passing without the fix: neither.
        assert_eq!(c(&[Absent], &[p], &[p], true, false), Class::Neither);
        // The gold patch breaks or does not build what passed at base.
        assert_eq!(c(&[p], &[p], &[f], false, false), Class::Regression);
        assert_eq!(
            c(&[p], &[Unbuilt], &[Unbuilt], false, false),
            Class::Regression
        );
        // A test of the test patch that does not build with the gold patch.
        assert_eq!(
            c(&[Absent], &[Unbuilt], &[Unbuilt], true, true),
            Class::GoldFailure
        );
    }

    #[test]
    fn changed_words_are_the_changed_lines_and_hunk_headers() {
        let w = changed_words(
            b"diff --git a/x_test.go b/x_test.go\n--- a/x_test.go\n+++ b/x_test.go\n\
@@ -1,4 +1,4 @@ func TestHeader(t *testing.T) {\n context TestContext\n-old TestRemoved\n+new TestAdded_2(x)\n",
        );
        for word in ["TestHeader", "TestRemoved", "TestAdded_2", "testing", "x"] {
            assert!(w.contains(word), "{word}: {w:?}");
        }
        for word in ["TestContext", "x_test", "go", "b"] {
            assert!(!w.contains(word), "{word}: {w:?}");
        }
    }

    #[test]
    fn declared_names_drop_package_class_subtest_and_parameters() {
        for (format, id, name) in [
            (GO, "example.com/calc.TestDiv/by_zero.x", "TestDiv"),
            (GO, "gopkg.in/yaml.v3.TestDecode", "TestDecode"),
            (
                Format::Pytest,
                "tests/test_x.py::T::test_a[a.b/c]",
                "test_a",
            ),
            (Format::Pytest, "tests/test_x.py::test_b", "test_b"),
            (Format::Unittest, "tests.test_x.T.test_c", "test_c"),
            (Format::Libtest, "tests::adds", "adds"),
            (
                Format::Junit,
                "com.example.CalcTest.multiplies",
                "multiplies",
            ),
        ] {
            assert_eq!(declared_name(format, id), name, "{id}");
        }
    }

    #[test]
    fn an_untrusted_reading_still_fails_the_control() {
        let mut empty = RunRecord {
            exit_code: Some(1),
            untrusted: Some("the report holds no tests".into()),
            ..RunRecord::default()
        };
        empty.tests.clear();
        let rec = reduce(
            &triage(&[]),
            GO,
            &BTreeSet::new(),
            &runs(vec![passing(&OLD)], vec![empty], vec![passing(&OLD)]),
        );
        let (ok, why) = &rec.controls["readings_trusted"];
        assert!(!ok);
        assert_eq!(why, "test reading 0: the report holds no tests");
    }

    fn exited(code: i32) -> RunRecord {
        RunRecord {
            exit_code: Some(code),
            ..RunRecord::default()
        }
    }

    #[test]
    fn a_command_that_cannot_start_names_itself_and_its_exit_code() {
        let cases = [
            (
                127,
                "bash: line 1: python3: command not found\n",
                "`python3` not found (exit 127)",
            ),
            (
                127,
                "sh: 1: pytest: not found\n",
                "`pytest` not found (exit 127)",
            ),
            (
                127,
                "/usr/bin/env: \u{2018}python3\u{2019}: No such file or directory\n",
                "`python3` not found (missing interpreter) (exit 127)",
            ),
            (
                126,
                "bash: ./run-tests.sh: Permission denied\n",
                "`./run-tests.sh` not executable (exit 126)",
            ),
            (127, "", "the test command was not found (exit 127)"),
            (126, "", "the test command could not be executed (exit 126)"),
            // Not 127, but the shell says so and nothing ran.
            (
                2,
                "bash: tox: command not found\n",
                "`tox` not found (exit 2)",
            ),
        ];
        for (code, log, want) in cases {
            assert_eq!(
                environment_broken(&exited(code), log).as_deref(),
                Some(want),
                "{log:?}"
            );
        }
        // A failing test run that merely prints such a line is not broken.
        let mut ran_tests = ran(&[("TestAdd", Outcome::Failed)]);
        ran_tests.exit_code = Some(1);
        assert_eq!(
            environment_broken(&ran_tests, "sh: 1: foo: not found\n"),
            None
        );
        assert_eq!(
            environment_broken(&exited(1), "FAILED (failures=1)\n"),
            None
        );
        assert_eq!(
            environment_broken(&exited(0), "x: command not found\n"),
            None
        );
        // Other tools' "not found" is not the shell's.
        assert_eq!(
            environment_broken(&exited(1), "go: example.com/x@v1: not found\n"),
            None
        );
    }

    #[test]
    fn the_readings_go_state_by_state_every_repeat_of_one_before_the_next() {
        // The layout names the screen's runs in this order and the job reads
        // them back by it: base, then the test-only state, then gold.
        let order: Vec<(&str, u32)> = readings(2).map(|(s, r)| (s.as_str(), r)).collect();
        assert_eq!(
            order,
            [
                ("base", 0),
                ("base", 1),
                ("test", 0),
                ("test", 1),
                ("gold", 0),
                ("gold", 1)
            ]
        );
        assert_eq!(readings(0).count(), 0);
    }

    #[test]
    fn a_broken_environment_is_the_only_reason_given() {
        let rec = broken_record(
            &triage(&[]),
            &["test reading 0: `python3` not found (exit 127)".to_owned()],
        );
        assert_eq!(
            rec.controls.keys().collect::<Vec<_>>(),
            ["environment_broken"]
        );
        let (ok, why) = &rec.controls["environment_broken"];
        assert!(!ok);
        assert_eq!(
            why,
            "the test command could not run: test reading 0: `python3` not found (exit 127)"
        );
        assert!(rec.fail_to_pass.is_empty() && rec.untrusted.is_empty());
    }
}
