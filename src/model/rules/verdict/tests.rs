use super::*;
use crate::model::records::TaskStatus;
use assay_report::BuildFailure;

const PKG: &str = "example.com/gocalc";

fn task(f2p: &[&str], p2p: &[&str]) -> TaskRecord {
    let ids = |v: &[&str]| v.iter().map(|t| format!("{PKG}.{t}")).collect();
    TaskRecord {
        instance_id: "gocalc-1".into(),
        repo: "gocalc".into(),
        fail_to_pass: ids(f2p),
        pass_to_pass: ids(p2p),
        track: "basic".into(),
        status: TaskStatus::Released,
        certified: true,
        ..TaskRecord::default()
    }
}

fn broken(unit: &str, message: &str) -> RunRecord {
    RunRecord {
        exit_code: Some(2),
        build_failures: vec![BuildFailure {
            unit: unit.to_owned(),
            message: message.to_owned(),
            stopped_run: false,
        }],
        ..RunRecord::default()
    }
}

const TOO_MANY: &str =
    "./stats.go:15:13: too many return values\n\thave (number, nil)\n\twant (float64)";

#[test]
fn a_patch_that_breaks_the_build_is_unresolved_the_agents_with_the_compilers_message() {
    let task = task(&["TestMeanEmpty"], &["TestAdd", "TestMean"]);
    let run = broken(PKG, TOO_MANY);
    let unbuilt = Unbuilt::of(Format::GoTestJson, &task, &run);
    assert_eq!(unbuilt.tests.len(), 3);
    let s = settle(&unbuilt, Vec::new(), &[], 0);
    assert_eq!((s.verdict, s.fault), (Verdict::Unresolved, Fault::Agent));
    assert_eq!(s.detail, format!("{PKG} does not build: {TOO_MANY}"));
    assert_eq!(
        s.failing,
        [
            format!("{PKG}.TestAdd"),
            format!("{PKG}.TestMean"),
            format!("{PKG}.TestMeanEmpty")
        ]
    );
}

#[test]
fn only_the_broken_units_tests_are_unbuilt_and_the_rest_still_count() {
    // Two packages: the agent broke `other`; gocalc's tests ran.
    let task = task(&["TestMeanEmpty"], &["TestAdd"]);
    let mut run = broken(
        "example.com/gocalc/other",
        "other.go:1:1: expected 'package'",
    );
    run.tests.insert(format!("{PKG}.TestAdd"), Outcome::Passed);
    run.tests
        .insert(format!("{PKG}.TestMeanEmpty"), Outcome::Failed);
    let unbuilt = Unbuilt::of(Format::GoTestJson, &task, &run);
    assert!(unbuilt.tests.is_empty());
    let s = settle(&unbuilt, vec![format!("{PKG}.TestMeanEmpty")], &[], 1);
    assert_eq!(s.verdict, Verdict::Unresolved);
    assert_eq!(s.detail, "1 tests still fail after 1 reruns");
    // Both at once: the compiler's message first.
    let mut run = broken(PKG, "x.go:1: boom");
    run.build_failures.push(BuildFailure {
        unit: "example.com/z".into(),
        message: String::new(),
        stopped_run: false,
    });
    let mut t = task.clone();
    t.pass_to_pass.push("example.com/z.TestZ".into());
    let unbuilt = Unbuilt::of(Format::GoTestJson, &t, &run);
    let s = settle(&unbuilt, vec!["example.com/y.TestY".into()], &[], 2);
    assert_eq!(
        s.detail,
        format!(
            "{PKG} does not build: x.go:1: boom; example.com/z does not build: \
             (the runner printed no reason); 1 tests still fail after 2 reruns"
        )
    );
    assert_eq!(s.failing.len(), 4);
}

#[test]
fn a_run_stopped_by_a_build_failure_covers_every_expected_test() {
    let task = task(&["multiplies"], &["adds"]);
    let mut run = broken("tinycalc", "error[E0425]: cannot find function `mul`");
    run.build_failures[0].stopped_run = true;
    let unbuilt = Unbuilt::of(Format::Libtest, &task, &run);
    assert_eq!(unbuilt.tests.len(), 2);
    assert_eq!(unbuilt.failures.len(), 1);
}

#[test]
fn without_build_failures_settle_decides_as_before() {
    let none = Unbuilt::default();
    let s = settle(&none, Vec::new(), &[], 0);
    assert_eq!(
        (s.verdict, s.fault, s.detail.as_str()),
        (Verdict::Resolved, Fault::None, "")
    );
    let s = settle(&none, Vec::new(), &[], 2);
    assert_eq!(
        (s.verdict, s.fault, s.detail.as_str()),
        (
            Verdict::ResolvedAfterRerun,
            Fault::FlakyTest,
            "passed on rerun 2"
        )
    );
    let s = settle(&none, vec!["t".into()], &[], 3);
    assert_eq!(
        (s.verdict, s.fault, s.detail.as_str()),
        (
            Verdict::Unresolved,
            Fault::Agent,
            "1 tests still fail after 3 reruns"
        )
    );
}

#[test]
fn a_run_that_died_of_an_api_error_is_not_the_agents_fault() {
    let errored = crate::model::records::RunFacts {
        is_error: Some(true),
        ..Default::default()
    };
    let (mut fault, mut detail) = (Fault::Agent, "2 tests still fail after 3 reruns".to_owned());
    blame_infrastructure(&mut fault, &mut detail, &errored);
    assert_eq!(fault, Fault::Infrastructure);
    assert_eq!(
        detail,
        "2 tests still fail after 3 reruns; the agent's run ended with is_error (an API or infrastructure failure)"
    );
    // Only the agent's blame moves; a run that ended well keeps it.
    let (mut fault, mut detail) = (Fault::Harness, String::new());
    blame_infrastructure(&mut fault, &mut detail, &errored);
    assert_eq!(fault, Fault::Harness);
    let (mut fault, mut detail) = (Fault::Agent, String::new());
    let fine = crate::model::records::RunFacts {
        is_error: Some(false),
        ..Default::default()
    };
    blame_infrastructure(&mut fault, &mut detail, &fine);
    assert_eq!(fault, Fault::Agent);
}

// ---- decide: one graded session in memory, no process ----------------

const F2P: &str = "tests.test_ops.TestOps.test_divide";
const P2P: &str = "tests.test_ops.TestOps.test_add";
const PATCH: &str =
    "--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1,2 @@\n def divide(a, b):\n+    return a / b\n";

/// A certified, released task graded over a staged tree, with a plain
/// patch to non-test code.
struct Case {
    task: TaskRecord,
    tree: TreeRecord,
    facts: RunFacts,
    patch: Vec<u8>,
    excluded: Vec<String>,
    tests: globset::GlobSet,
}

impl Case {
    fn new() -> Case {
        let globs = ["tests/**".to_owned()];
        Case {
            task: TaskRecord {
                instance_id: "calc-1".into(),
                fail_to_pass: vec![F2P.into()],
                pass_to_pass: vec![P2P.into()],
                certified: true,
                ..TaskRecord::default()
            },
            tree: TreeRecord {
                tree: Some("4b825dc642cb6eb9a060e54bf8d69288fbee4904".into()),
                skipped: None,
                hidden: Vec::new(),
                timeout_s: None,
                canaries: None,
                rebuild: Vec::new(),
            },
            facts: RunFacts::default(),
            patch: PATCH.as_bytes().to_vec(),
            excluded: Vec::new(),
            tests: super::super::policy::globset(&globs).expect("globs"),
        }
    }

    fn skipped(skip: Skip) -> Case {
        let mut case = Case::new();
        case.tree = TreeRecord {
            tree: None,
            skipped: Some(skip),
            hidden: Vec::new(),
            timeout_s: None,
            canaries: None,
            rebuild: Vec::new(),
        };
        case
    }

    fn decide(&self, readings: &Readings) -> Decision {
        let graded = Graded {
            task: &self.task,
            tree: &self.tree,
            facts: &self.facts,
            format: Format::Unittest,
            limits: Limits {
                timeout_s: 600,
                log_cap: 1024,
                write: 1 << 30,
            },
            patch: &self.patch,
            excluded: &self.excluded,
            tests: &self.tests,
            allowed: &[],
        };
        decide(&graded, readings)
    }

    fn decide_first(&self, first: RunRecord) -> Decision {
        self.decide(&Readings {
            first,
            ..Readings::default()
        })
    }
}

fn reading(outcomes: &[(&str, Outcome)]) -> RunRecord {
    RunRecord {
        exit_code: Some(0),
        tests: outcomes
            .iter()
            .map(|(t, o)| ((*t).to_owned(), *o))
            .collect(),
        ..RunRecord::default()
    }
}

fn green() -> RunRecord {
    reading(&[(F2P, Outcome::Passed), (P2P, Outcome::Passed)])
}

fn red() -> RunRecord {
    RunRecord {
        exit_code: Some(1),
        ..reading(&[(F2P, Outcome::Failed), (P2P, Outcome::Passed)])
    }
}

/// The two canaries of `tests/test_ops.py` as a reading saw them.
fn canaries(pass: Option<Outcome>, fail: Option<Outcome>) -> Vec<canary::Canary> {
    [(canary::Must::Pass, pass), (canary::Must::Fail, fail)]
        .into_iter()
        .map(|(must, seen)| canary::Canary {
            file: "tests/test_ops.py".into(),
            name: format!("TestValueOrder.test_{}", must.as_str()),
            must,
            seen,
            expected: true,
            of: None,
            original: None,
        })
        .collect()
}

#[test]
fn a_reading_whose_must_fail_canary_passed_is_forged_whatever_it_says() {
    let honest = RunRecord {
        canaries: canaries(Some(Outcome::Passed), Some(Outcome::Failed)),
        ..green()
    };
    assert_eq!(Case::new().decide_first(honest).verdict, Verdict::Resolved);
    for first in [green(), red()] {
        let forged = RunRecord {
            canaries: canaries(Some(Outcome::Passed), Some(Outcome::Passed)),
            ..first
        };
        let d = Case::new().decide_first(forged);
        assert_eq!((d.verdict, d.fault), (Verdict::Unresolved, Fault::Agent));
        assert!(d.detail.starts_with("report forged"), "{}", d.detail);
        assert!(d.tamper.iter().any(|t| t.starts_with("report forged")));
    }
}

#[test]
fn a_passing_reading_without_its_canaries_is_forged_a_failing_one_is_not() {
    let missing = RunRecord {
        canaries: canaries(None, None),
        ..green()
    };
    let d = Case::new().decide_first(missing);
    assert_eq!((d.verdict, d.fault), (Verdict::Unresolved, Fault::Agent));
    assert!(d.detail.contains("is missing"), "{}", d.detail);
    // A red reading is the agent's anyway: it says which tests failed,
    // not that it was forged.
    let red_missing = RunRecord {
        canaries: canaries(None, None),
        ..red()
    };
    let d = Case::new().decide_first(red_missing);
    assert_eq!(d.verdict, Verdict::Unresolved);
    assert!(!d.detail.contains("forged"), "{}", d.detail);
    // A rerun that passed without its canaries forges the rerun verdict.
    let d = Case::new().decide(&Readings {
        first: red(),
        reruns: vec![RunRecord {
            canaries: canaries(Some(Outcome::Failed), None),
            ..green()
        }],
        ..Readings::default()
    });
    assert_eq!((d.verdict, d.fault), (Verdict::Unresolved, Fault::Agent));
    assert!(d.detail.starts_with("report forged"), "{}", d.detail);
}

/// A window's mutant of the FAIL_TO_PASS test, as a reading saw it, with
/// its original's outcome there.
fn mutant(seen: Outcome, original: Outcome) -> canary::Canary {
    canary::Canary {
        file: "tests/test_ops.py".into(),
        name: "TestOps.test_value_order".into(),
        must: canary::Must::Fail,
        seen: Some(seen),
        expected: true,
        of: Some(F2P.into()),
        original: Some(original),
    }
}

/// A forger picks one member of a window per run; a wrong pick
/// failed the original and passed a mutant (a wrong answer, no forgery),
/// and a rerun with a fresh placement was a free guess that read as a
/// flaky test.
#[test]
fn a_test_that_failed_with_a_wrong_window_value_and_passed_on_a_rerun_was_guessed() {
    let wrong_pick = RunRecord {
        canaries: vec![mutant(Outcome::Passed, Outcome::Failed)],
        ..red()
    };
    let right_pick = RunRecord {
        canaries: vec![mutant(Outcome::Failed, Outcome::Passed)],
        ..reading(&[(F2P, Outcome::Passed)])
    };
    let d = Case::new().decide(&Readings {
        first: wrong_pick.clone(),
        reruns: vec![right_pick.clone()],
        ..Readings::default()
    });
    let (verdict, fault, detail) = verdict_of(&d);
    assert_eq!((verdict, fault), (Verdict::Unresolved, Fault::Agent));
    assert!(
        detail.contains("failed in the graded run with a wrong value of its window")
            && detail.contains("passed in rerun 1"),
        "{detail}"
    );
    // The wrong pick in a rerun, the right one in a later rerun: the same.
    let d = Case::new().decide(&Readings {
        first: red(),
        reruns: vec![wrong_pick.clone(), right_pick.clone()],
        ..Readings::default()
    });
    assert_eq!((d.verdict, d.fault), (Verdict::Unresolved, Fault::Agent));
    assert!(d.detail.contains("failed in rerun 1"), "{}", d.detail);
    // An honest flake: every mutant failed in the failing run too.
    let flake = RunRecord {
        canaries: vec![mutant(Outcome::Failed, Outcome::Failed)],
        ..red()
    };
    let d = Case::new().decide(&Readings {
        first: flake,
        reruns: vec![right_pick],
        ..Readings::default()
    });
    assert_eq!(
        (d.verdict, d.fault),
        (Verdict::ResolvedAfterRerun, Fault::FlakyTest)
    );
    // A wrong value that stays wrong: unresolved for its failure, no guess.
    let d = Case::new().decide(&Readings {
        first: wrong_pick.clone(),
        reruns: vec![wrong_pick],
        ..Readings::default()
    });
    assert_eq!((d.verdict, d.fault), (Verdict::Unresolved, Fault::Agent));
    assert!(d.detail.contains("still fail"), "{}", d.detail);
}

fn verdict_of(d: &Decision) -> (Verdict, Fault, &str) {
    (d.verdict, d.fault, d.detail.as_str())
}

#[test]
fn every_expected_test_passing_at_once_is_resolved() {
    let d = Case::new().decide_first(green());
    assert_eq!(verdict_of(&d), (Verdict::Resolved, Fault::None, ""));
    assert_eq!(
        (d.base_check.as_str(), d.new_check.as_str()),
        ("pass", "pass")
    );
    assert!(d.failing.is_empty() && d.tamper.is_empty());
}

#[test]
fn a_failure_that_passes_on_a_rerun_is_resolved_after_rerun_and_the_flaky_tests() {
    let d = Case::new().decide(&Readings {
        first: red(),
        reruns: vec![reading(&[(F2P, Outcome::Passed)])],
        ..Readings::default()
    });
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::ResolvedAfterRerun,
            Fault::FlakyTest,
            "passed on rerun 1"
        )
    );
    // The checks say what the graded run saw, before any rerun.
    assert_eq!(
        (d.base_check.as_str(), d.new_check.as_str()),
        ("pass", "fail (1)")
    );
}

#[test]
fn a_failure_every_rerun_repeats_is_unresolved_the_agents() {
    let d = Case::new().decide(&Readings {
        first: red(),
        reruns: vec![red(), red(), red()],
        ..Readings::default()
    });
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::Unresolved,
            Fault::Agent,
            "1 tests still fail after 3 reruns"
        )
    );
    assert_eq!(d.failing, [F2P]);
}

#[test]
fn a_session_patch_that_does_not_apply_is_patch_apply_failed_the_agents() {
    let case = Case::skipped(Skip::PatchApplyFailed(
        "error: corrupt patch at line 7".into(),
    ));
    let d = case.decide_first(RunRecord::default());
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::PatchApplyFailed,
            Fault::Agent,
            "error: corrupt patch at line 7"
        )
    );
    assert_eq!(
        (d.base_check.as_str(), d.new_check.as_str()),
        ("not run", "not run")
    );
}

#[test]
fn a_test_patch_that_conflicts_with_the_session_is_ambiguous() {
    let case = Case::skipped(Skip::TestPatchConflict(
        "tests/test_ops.py: does not apply".into(),
    ));
    let d = case.decide_first(RunRecord::default());
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::TestPatchConflict,
            Fault::Ambiguous,
            "tests/test_ops.py: does not apply"
        )
    );
}

#[test]
fn a_run_without_a_usable_report_is_no_report_the_agents_on_a_certified_task() {
    let first = RunRecord {
        report_error: Some("no test report was written".into()),
        ..RunRecord::default()
    };
    let d = Case::new().decide_first(first);
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::NoReport,
            Fault::Agent,
            "no test report was written"
        )
    );
    let d = Case::new().decide_first(RunRecord::default());
    assert_eq!(
        verdict_of(&d),
        (Verdict::NoReport, Fault::Agent, "the report holds no tests")
    );
}

#[test]
fn a_command_the_environment_cannot_run_is_env_setup_failed_the_harnesss() {
    // On a certified task the controls ran the same command: exit 127
    // is the patch's code, whatever the report says.
    let first = RunRecord {
        exit_code: Some(127),
        ..green()
    };
    let d = Case::new().decide_first(first);
    assert_eq!((d.verdict, d.fault), (Verdict::NoReport, Fault::Agent));
    assert!(
        d.detail.contains("controls ran the same command"),
        "{}",
        d.detail
    );
    let first = RunRecord {
        env_failed: true,
        ..green()
    };
    let d = Case::new().decide_first(first);
    assert_eq!(
        (d.verdict, d.fault),
        (Verdict::EnvSetupFailed, Fault::Harness)
    );
}

#[test]
fn a_cut_log_is_ineligible_never_scored_and_the_agents_where_the_controls_were_quiet() {
    let first = RunRecord {
        log_truncated: true,
        log_bytes: 4096,
        ..green()
    };
    let cut = "the evidence (4096 bytes) exceeds the cap (1024 bytes); the stored log was cut \
               after 1024 bytes, and a grade is never scored on a cut log; ";
    let mut case = Case::new();
    // Every control stayed under the cap: the flood is the patch's.
    case.task.loudest_screening_log = Some(1024);
    let d = case.decide_first(first.clone());
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::Ineligible,
            Fault::Agent,
            &*format!(
                "{cut}the task's controls stayed under the cap in every screening reading (the \
                 most one wrote: 1024 bytes): the flood is the patch's"
            )
        )
    );
    // A control overflowed too: the cap is the harness's.
    case.task.loudest_screening_log = Some(1025);
    let d = case.decide_first(first.clone());
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::Ineligible,
            Fault::Harness,
            &*format!(
                "{cut}a control of the task overflowed the cap at screening too (1025 bytes): \
                 the cap, not the patch, is at fault"
            )
        )
    );
    // A record from before the count: never the agent's.
    case.task.loudest_screening_log = None;
    let d = case.decide_first(first);
    assert_eq!((d.verdict, d.fault), (Verdict::Ineligible, Fault::Harness));
}

#[test]
fn a_task_not_released_and_certified_is_not_graded_and_blames_no_one() {
    let case = Case::skipped(Skip::NotGraded("task calc-1 is uncertified".into()));
    let d = case.decide_first(RunRecord::default());
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::NotGraded,
            Fault::None,
            "task calc-1 is uncertified"
        )
    );
}

#[test]
fn no_fault_when_resolved_even_if_the_agents_run_ended_with_is_error() {
    let mut case = Case::new();
    case.facts.is_error = Some(true);
    let d = case.decide_first(green());
    assert_eq!(verdict_of(&d), (Verdict::Resolved, Fault::None, ""));
}

#[test]
fn the_agents_fault_when_its_code_times_out_or_hits_a_sandbox_limit() {
    let timed_out = RunRecord {
        timed_out: true,
        ..green()
    };
    let d = Case::new().decide_first(timed_out);
    assert_eq!(
        verdict_of(&d),
        (Verdict::Unresolved, Fault::Agent, "timed out after 600 s")
    );
    let limited = RunRecord {
        limit: Some("memory".into()),
        ..green()
    };
    let d = Case::new().decide_first(limited);
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::Unresolved,
            Fault::Agent,
            "the run hit its memory limit"
        )
    );
    let wrote = RunRecord {
        limit: Some("write".into()),
        ..green()
    };
    assert_eq!(
        verdict_of(&Case::new().decide_first(wrote)),
        (
            Verdict::Unresolved,
            Fault::Agent,
            "the run hit its write limit: it wrote over 1 GiB into its tree"
        )
    );
}

#[test]
fn a_flaky_test_fault_counts_the_reruns_it_took() {
    let d = Case::new().decide(&Readings {
        first: red(),
        reruns: vec![red(), reading(&[(F2P, Outcome::Passed)])],
        ..Readings::default()
    });
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::ResolvedAfterRerun,
            Fault::FlakyTest,
            "passed on rerun 2"
        )
    );
}

#[test]
fn an_ambiguous_fault_does_not_move_to_infrastructure() {
    let mut case = Case::skipped(Skip::TestPatchConflict("conflict".into()));
    case.facts.is_error = Some(true);
    let d = case.decide_first(RunRecord::default());
    assert_eq!(
        verdict_of(&d),
        (Verdict::TestPatchConflict, Fault::Ambiguous, "conflict")
    );
}

#[test]
fn the_harnesss_fault_when_an_uncertified_task_gives_no_report() {
    let mut case = Case::new();
    case.task.certified = false;
    let d = case.decide_first(RunRecord::default());
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::NoReport,
            Fault::Harness,
            "the report holds no tests"
        )
    );
}

#[test]
fn infrastructure_takes_the_agents_blame_when_its_run_ended_with_is_error() {
    let mut case = Case::new();
    case.facts.is_error = Some(true);
    let d = case.decide(&Readings {
        first: red(),
        reruns: vec![red()],
        ..Readings::default()
    });
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::Unresolved,
            Fault::Infrastructure,
            "1 tests still fail after 1 reruns; the agent's run ended with is_error \
             (an API or infrastructure failure)"
        )
    );
}

#[test]
fn a_test_file_changed_by_a_rerun_demotes_a_resolved_grade_to_the_agents_unresolved() {
    let mut again = reading(&[(F2P, Outcome::Passed)]);
    again.changed_test_files = vec!["tests/test_ops.py".into()];
    let mut case = Case::new();
    // Tamper stays the agent's even when its run ended with is_error.
    case.facts.is_error = Some(true);
    let d = case.decide(&Readings {
        first: red(),
        reruns: vec![again],
        ..Readings::default()
    });
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::Unresolved,
            Fault::Agent,
            "tamper suspect, never scored resolved: test files changed during the run: \
             tests/test_ops.py"
        )
    );
    assert_eq!(
        d.tamper,
        ["test files changed during the run: tests/test_ops.py"]
    );
}

#[test]
fn neutralised_infrastructure_is_listed_but_leaves_a_resolved_grade_alone() {
    let mut case = Case::new();
    case.patch = b"--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+import os\n".to_vec();
    case.excluded = vec!["conftest.py".into()];
    let d = case.decide_first(green());
    assert_eq!(d.verdict, Verdict::Resolved);
    assert_eq!(
        d.tamper,
        ["touches test infrastructure: conftest.py (neutralised)"]
    );
    // Kept (the `keep` arm), it is in effect.
    case.excluded.clear();
    let d = case.decide_first(green());
    assert_eq!((d.verdict, d.fault), (Verdict::Unresolved, Fault::Agent));
}

#[test]
fn reruns_are_asked_for_the_failing_tests_until_they_pass_or_run_out() {
    let case = Case::new();
    let mut readings = Readings {
        first: red(),
        ..Readings::default()
    };
    let next = |r: &Readings| next_rerun(Format::Unittest, &case.task, r, 2, false);
    assert_eq!(next(&readings), Some(vec![F2P.to_owned()]));
    readings.reruns.push(red());
    assert_eq!(next(&readings), Some(vec![F2P.to_owned()]));
    readings.reruns.push(red());
    assert_eq!(next(&readings), None, "two reruns at most");
    readings.reruns = vec![reading(&[(F2P, Outcome::Passed)])];
    assert_eq!(next(&readings), None, "nothing fails any more");
    readings.first = green();
    readings.reruns.clear();
    assert_eq!(next(&readings), None, "nothing failed");
}

/// An empty patch is the base state, whose FAIL_TO_PASS tests failed in
/// every screening reading: no rerun can change its verdict.
#[test]
fn an_empty_patch_is_never_rerun() {
    let case = Case::new();
    let readings = Readings {
        first: red(),
        ..Readings::default()
    };
    assert_eq!(
        next_rerun(Format::Unittest, &case.task, &readings, 3, true),
        None
    );
    assert!(next_rerun(Format::Unittest, &case.task, &readings, 3, false).is_some());
}

#[test]
fn only_a_usable_report_is_worth_checks_and_reruns() {
    let case = Case::new();
    assert!(reads_report(&case.task, &case.tree, &red()));
    let timed_out = RunRecord {
        timed_out: true,
        ..red()
    };
    assert!(!reads_report(&case.task, &case.tree, &timed_out));
    let skipped = Case::skipped(Skip::PatchApplyFailed(String::new()));
    assert!(!reads_report(&skipped.task, &skipped.tree, &red()));
}

#[test]
fn a_run_the_executor_lost_is_ineligible_the_infrastructures_and_regraded() {
    let lost = |why: &str| RunRecord {
        lost: Some(why.into()),
        untrusted: Some(why.into()),
        ..RunRecord::default()
    };
    let d = Case::new().decide_first(lost("slurm: 3 tries"));
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::Ineligible,
            Fault::Infrastructure,
            "the executor lost a run of it (slurm: 3 tries); the next build runs it again"
        )
    );
    assert!(!stands(d.verdict, d.fault));
    // A rerun lost after a failing first run: the reading is unfinished.
    let d = Case::new().decide(&Readings {
        first: red(),
        reruns: vec![lost("slurm: node n2 died")],
        ..Readings::default()
    });
    assert_eq!(
        (d.verdict, d.fault),
        (Verdict::Ineligible, Fault::Infrastructure)
    );
    // The infrastructure's blame never stands in for the agent's or the
    // harness's own grades.
    for (verdict, fault) in [
        (Verdict::Ineligible, Fault::Harness),
        (Verdict::Unresolved, Fault::Infrastructure),
        (Verdict::Resolved, Fault::None),
    ] {
        assert!(stands(verdict, fault));
    }
}

/// cargo stops at the first failing test binary: the integration tests
/// after it are in no report. They did not fail; the reason says so.
#[test]
fn tests_no_report_names_did_not_run_and_are_counted_apart() {
    let mut case = Case::new();
    case.task.pass_to_pass = vec![P2P.into(), "it_adds".into(), "it_subtracts".into()];
    let stopped = || RunRecord {
        exit_code: Some(101),
        ..reading(&[(F2P, Outcome::Failed), (P2P, Outcome::Passed)])
    };
    let d = case.decide(&Readings {
        first: stopped(),
        reruns: vec![stopped()],
        ..Readings::default()
    });
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::Unresolved,
            Fault::Agent,
            "1 tests still fail after 1 reruns; 2 tests did not run \
             (no run's report names them: the runner stopped before them)"
        )
    );
    assert_eq!(d.failing, ["it_adds", "it_subtracts", F2P]);
    assert_eq!(d.not_run, ["it_adds", "it_subtracts"]);
    // Named by a rerun, a test ran.
    let d = case.decide(&Readings {
        first: stopped(),
        reruns: vec![reading(&[
            (F2P, Outcome::Failed),
            ("it_adds", Outcome::Failed),
        ])],
        ..Readings::default()
    });
    assert_eq!(d.not_run, ["it_subtracts"]);
}

/// The audit hook's finding in any run keeps a passing grade from
/// `resolved`, the agent's; a rule the task's gold readings tripped
/// (`audit_off`) is not held against it.
#[test]
fn an_audit_finding_demotes_a_pass_unless_the_gold_suite_trips_its_rule() {
    let mut traced = green();
    traced.audit = vec!["sys.settrace: called by pkg/__init__.py:3".into()];
    let mut case = Case::new();
    let d = case.decide_first(traced.clone());
    assert_eq!(
        verdict_of(&d),
        (
            Verdict::Unresolved,
            Fault::Agent,
            "tamper suspect, never scored resolved: tampers with the runner (audit event \
             `sys.settrace`): called by pkg/__init__.py:3"
        )
    );
    case.task.audit_off =
        vec!["sys.settrace: called by tests/test_trace.py:7 (gold reading 1)".into()];
    let d = case.decide_first(traced.clone());
    assert_eq!(d.verdict, Verdict::Resolved);
    assert!(d.tamper.is_empty(), "{:?}", d.tamper);
    // Another rule still counts.
    traced
        .audit
        .push("import: ctypes loaded by pkg/__init__.py:1".into());
    let d = case.decide_first(traced);
    assert_eq!(d.verdict, Verdict::Unresolved);
    assert_eq!(
        d.tamper,
        ["tampers with the runner (audit event `import`): ctypes loaded by pkg/__init__.py:1"]
    );
}

/// A session file whose transcript ends in a `RateLimitError` it wrote
/// itself: no witness saw it, so the red grade stays the agent's (counted)
/// and the claim is said, not believed; a witness's `is_error` (the proxy,
/// a Harbor job's controls) still moves the blame.
#[test]
fn a_claimed_rate_limit_error_in_the_agents_own_file_leaves_the_grade_its_own() {
    let claimed = "the run's own file claims an API or infrastructure failure \
                   (claimed_error), which no witness of assay's saw: the agent's, counted";
    let witnessed = "the agent's run ended with is_error (an API or infrastructure failure)";
    for (is_error, fault, why) in [
        (None, Fault::Agent, claimed),
        (Some(false), Fault::Agent, claimed),
        (Some(true), Fault::Infrastructure, witnessed),
    ] {
        let mut case = Case::new();
        case.facts.ended = Some("RateLimitError".into());
        case.facts.claimed_error = Some(true);
        case.facts.is_error = is_error;
        let d = case.decide(&Readings {
            first: red(),
            reruns: vec![red()],
            ..Readings::default()
        });
        let detail = format!("1 tests still fail after 1 reruns; {why}");
        assert_eq!(
            verdict_of(&d),
            (Verdict::Unresolved, fault, detail.as_str()),
            "{is_error:?}"
        );
    }
}
