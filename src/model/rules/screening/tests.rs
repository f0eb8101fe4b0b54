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
        decision: crate::model::records::Decision::Eligible,
        detail: String::new(),
        test_files: test_files.iter().map(|f| (*f).to_owned()).collect(),
        gold_files: Vec::new(),
        test_patch: String::new(),
        gold_patch: String::new(),
        dataset: None,
    }
}

fn runs(base: Vec<RunRecord>, test: Vec<RunRecord>, gold: Vec<RunRecord>) -> Runs {
    Runs { base, test, gold }
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
        Scope::Suite,
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
        Scope::Suite,
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
        Scope::Suite,
        &BTreeSet::new(),
        &runs(
            vec![passing(&OLD)],
            vec![unbuilt("./median_test.go:6:12: undefined: Median")],
            vec![unbuilt(
                "./median.go:16:1: syntax error: unexpected EOF, expecting }\n./median.go:3:1: more",
            )],
        ),
    );
    let (ok, why) = &rec.controls[&Control::GoldResolves];
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
    assert!(rec.controls[&Control::ReadingsTrusted].0);
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
        Scope::Suite,
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
    assert!(rec.controls[&Control::GoldResolves].0, "{:?}", rec.controls);
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
        (Format::Libtest, "src/kv/mod.rs - kv::Key #2", "Key"),
        (Format::LibtestJson, "src/macros.rs - macros::log", "log"),
        (
            Format::Junit,
            "com.example.CalcTest.multiplies",
            "multiplies",
        ),
    ] {
        assert_eq!(declared_name(format, id), Some(name), "{id}");
    }
}

/// The case: a test patch writing `Ipv4Addr::new(192, …)` must not
/// make doctests whose ids held `(line 192)` (or any number) changed.
#[test]
fn no_test_is_changed_by_a_number_or_a_line_annotation() {
    for (format, id) in [
        (Format::Libtest, "src/lib.rs - (docs)"),
        (Format::Libtest, "src/lib.rs - (line 192)"),
        (Format::Libtest, "src/lib.rs - #2"),
        (Format::Pytest, "tests/test_x.py::test_a::192"),
        (Format::Tap, "192"),
    ] {
        assert_eq!(declared_name(format, id), None, "{id}");
    }
    let changed = changed_words(b"@@ -1 +1 @@\n+    let ip = Ipv4Addr::new(192, 168, 0, 1);\n");
    assert!(changed.contains("192"));
    assert_eq!(
        declared_name(Format::Libtest, "src/kv/mod.rs - kv (line 192)"),
        Some("kv")
    );
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
        Scope::Suite,
        &BTreeSet::new(),
        &runs(vec![passing(&OLD)], vec![empty], vec![passing(&OLD)]),
    );
    let (ok, why) = &rec.controls[&Control::ReadingsTrusted];
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
        // A write the run user may not make, with its path.
        (
            1,
            "go: failed to initialize build cache at /root/.cache/go-build: mkdir /root/.cache: permission denied\n",
            "permission denied on `/root/.cache` (exit 1)",
        ),
        (
            3,
            "mkdir: cannot create directory '/opt/private/x': Permission denied\n",
            "permission denied on `/opt/private/x` (exit 3)",
        ),
        (
            1,
            "PermissionError: [Errno 13] Permission denied: '/opt/x.db'\n",
            "permission denied on `/opt/x.db` (exit 1)",
        ),
        (
            1,
            "touch: cannot touch '/usr/local/x': Read-only file system\n",
            "read-only file system on `/usr/local/x` (exit 1)",
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

/// What a record lists reading by reading goes base, gold, test: the
/// order of the states' words, which the records always had.
#[test]
fn readings_are_listed_in_the_order_of_their_states_words() {
    let untrusted = || RunRecord {
        untrusted: Some("the report holds no tests".into()),
        ..RunRecord::default()
    };
    let rec = reduce(
        &triage(&[]),
        GO,
        Scope::Suite,
        &BTreeSet::new(),
        &runs(vec![untrusted()], vec![untrusted()], vec![untrusted()]),
    );
    let states: Vec<&str> = rec
        .untrusted
        .iter()
        .filter_map(|u| u.split(' ').next())
        .collect();
    assert_eq!(states, ["base", "gold", "test"]);
}

/// A reading whose command could not start makes the whole screening:
/// its logs are read, and nothing is reduced.
#[test]
fn a_screen_reads_the_logs_for_a_broken_environment_before_reducing() {
    let all = runs(vec![passing(&OLD)], vec![exited(127)], vec![passing(&OLD)]);
    let log = |r: &RunRecord| -> Vec<u8> {
        if r.exit_code == Some(127) {
            b"sh: 1: go: not found\n".to_vec()
        } else {
            Vec::new()
        }
    };
    let rec = screen(&triage(&[]), GO, Scope::Suite, b"", &all, &log);
    assert_eq!(
        rec.controls[&Control::EnvironmentBroken].1,
        "the test command could not run: test reading 0: `go` not found (exit 127)"
    );
    let fine = runs(
        vec![passing(&OLD)],
        vec![passing(&OLD)],
        vec![passing(&OLD)],
    );
    let rec = screen(&triage(&[]), GO, Scope::Suite, b"", &fine, &log);
    assert_eq!(names(&rec.pass_to_pass), OLD);
    assert!(!rec.controls.contains_key(&Control::EnvironmentBroken));
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
        [&Control::EnvironmentBroken]
    );
    let (ok, why) = &rec.controls[&Control::EnvironmentBroken];
    assert!(!ok);
    assert_eq!(
        why,
        "the test command could not run: test reading 0: `python3` not found (exit 127)"
    );
    assert!(rec.fail_to_pass.is_empty() && rec.untrusted.is_empty());
}

/// A toolchain manager's proxy that finds no toolchain (rustup in a sandbox
/// that cannot see its home) is a command that could not start, named.
#[test]
fn a_toolchain_proxy_without_a_toolchain_is_a_broken_environment() {
    let rustup = "error: rustup could not choose a version of cargo to run, because one wasn't \
                  specified explicitly, and no default is configured.\n\
                  help: run 'rustup default stable' to download the latest stable release of Rust.\n";
    assert_eq!(
        environment_broken(&exited(1), rustup).as_deref(),
        Some("`cargo` has no toolchain (rustup could not choose one) (exit 1)")
    );
    assert_eq!(
        environment_broken(
            &exited(1),
            "error: toolchain 'nightly-2020-01-01-x86_64-unknown-linux-gnu' is not installed\n"
        )
        .as_deref(),
        Some("`rustup` lacks the toolchain it was asked for (exit 1)")
    );
    assert_eq!(
        environment_broken(
            &exited(1),
            "pyenv: version `3.9.1' is not installed (set by x)\n"
        )
        .as_deref(),
        Some("`pyenv` lacks the Python version it was asked for (exit 1)")
    );
}

/// A failed setup: every reading says the same, once, with the command
/// that failed, its exit code and the end of its log.
#[test]
fn a_failed_setup_is_named_once_with_its_command_and_log_end() {
    let failed = || RunRecord {
        env_failed: true,
        exit_code: Some(101),
        untrusted: Some(
            "the environment's setup failed: `cargo vendor > cfg` exited with 101".into(),
        ),
        ..RunRecord::default()
    };
    let all = runs(vec![failed()], vec![failed()], vec![failed()]);
    let log = |_: &RunRecord| -> Vec<u8> {
        b"    Updating crates.io index\nerror: failed to get `serde` as a dependency\n\nCaused by:\n  network unreachable\nassay: setup exited\n"
            .to_vec()
    };
    let rec = screen(&triage(&[]), Format::Libtest, Scope::Suite, b"", &all, &log);
    assert_eq!(
        rec.controls[&Control::EnvironmentBroken].1,
        "the test command could not run: every reading: the environment's setup failed: \
         `cargo vendor > cfg` exited with 101; its log ends: error: failed to get `serde` \
         as a dependency / Caused by: / network unreachable"
    );
}

/// `[screen] scope = "touched-files"`: the lists come only from the test
/// files the test patch touches (SWE-bench's convention); the rest is
/// counted, in no list.
#[test]
fn the_touched_files_scope_draws_the_lists_from_the_test_patchs_files() {
    let py = |tests: &[(&str, &str, Outcome)]| {
        let mut r = RunRecord::default();
        for (file, t, o) in tests {
            let id = format!("{file}::{t}");
            r.tests.insert(id.clone(), *o);
            r.files.insert(id, (*file).to_owned());
        }
        r
    };
    use Outcome::{Failed, Passed};
    let (a, b) = ("tests/test_a.py", "tests/test_b.py");
    let base = py(&[(a, "test_old", Passed), (b, "test_other", Passed)]);
    let test = py(&[
        (a, "test_old", Passed),
        (a, "test_new", Failed),
        (b, "test_other", Passed),
    ]);
    let gold = py(&[
        (a, "test_old", Passed),
        (a, "test_new", Passed),
        (b, "test_other", Passed),
    ]);
    let all = runs(vec![base], vec![test], vec![gold]);
    let suite = reduce(
        &triage(&[a]),
        Format::Pytest,
        Scope::Suite,
        &BTreeSet::new(),
        &all,
    );
    assert_eq!(suite.fail_to_pass, ["tests/test_a.py::test_new"]);
    assert_eq!(
        suite.pass_to_pass,
        ["tests/test_a.py::test_old", "tests/test_b.py::test_other"]
    );
    assert_eq!(suite.out_of_scope, 0);
    let touched = reduce(
        &triage(&[a]),
        Format::Pytest,
        Scope::TouchedFiles,
        &BTreeSet::new(),
        &all,
    );
    assert_eq!(touched.fail_to_pass, ["tests/test_a.py::test_new"]);
    assert_eq!(touched.pass_to_pass, ["tests/test_a.py::test_old"]);
    assert_eq!(touched.out_of_scope, 1);
    assert!(!touched.readings["base"].contains_key("tests/test_b.py::test_other"));

    // Go: a test's file is its package; the root directory's `_test.go`
    // file is the root package's, a subdirectory's its package.
    let go = |tests: &[(&str, &str)]| {
        let mut r = RunRecord::default();
        for (pkg, t) in tests {
            let id = format!("{pkg}.{t}");
            r.tests.insert(id.clone(), Passed);
            r.files.insert(id, (*pkg).to_owned());
        }
        r
    };
    let sub = "example.com/gocalc/stats";
    let reading = || go(&[(PKG, "TestAdd"), (sub, "TestMean")]);
    let all = runs(vec![reading()], vec![reading()], vec![reading()]);
    let root = reduce(
        &triage(&["add_test.go"]),
        GO,
        Scope::TouchedFiles,
        &BTreeSet::new(),
        &all,
    );
    assert_eq!(names(&root.pass_to_pass), ["TestAdd"]);
    let nested = reduce(
        &triage(&["stats/mean_test.go"]),
        GO,
        Scope::TouchedFiles,
        &BTreeSet::new(),
        &all,
    );
    assert_eq!(nested.pass_to_pass, ["example.com/gocalc/stats.TestMean"]);
    assert!(!Scope::can_select(Format::Libtest) && Scope::can_select(Format::Unittest));
}

/// A rule of the audit hook that honest readings trip is turned off for
/// the task, once per rule, with its first finding and the reading.
#[test]
fn an_audit_rule_a_reading_trips_is_turned_off_once_with_its_first_finding() {
    let mut gold = passing(&OLD);
    gold.audit = vec![
        "sys.settrace: called by code outside the tree".into(),
        "import: ctypes loaded by numpy/core/_internal.py:12".into(),
    ];
    let mut again = gold.clone();
    again.audit[0] = "sys.settrace: called by tests/test_trace.py:7".into();
    let rec = reduce(
        &triage(&[]),
        GO,
        Scope::Suite,
        &BTreeSet::new(),
        &runs(vec![passing(&OLD)], vec![passing(&OLD)], vec![gold, again]),
    );
    assert_eq!(
        rec.audit_off,
        [
            "sys.settrace: called by code outside the tree (gold reading 0)",
            "import: ctypes loaded by numpy/core/_internal.py:12 (gold reading 0)",
        ]
    );
}
