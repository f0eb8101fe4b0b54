//! `[screen] scope = "touched-files"` with `[env] touched_command`: graded
//! runs run only the test files the task's test patch touches
//! (docs/stages.md, "Scope"). On the grading fixture (`util::fixture`):
//! task `p-2`'s test patch creates `tests/test_mul.py` and leaves
//! `tests/test_ops.py` (`test_add`, `test_sub`) untouched; `p-1`'s appends
//! `test_sub` to `tests/test_ops.py`.

#![allow(clippy::unwrap_used)]

mod util;

use serde_json::Value;
use util::fixture::*;
use util::forgery::{FAKE_REPORT, NEUTERED_ASSERT};

const TOUCHED: &str = "touched_command = \"python3 -m unittest -v {files}\"\n";

/// The fixture under the touched-files scope; its graded runs scoped when
/// `touched`.
fn scoped_fixture(touched: bool) -> Fixture {
    let f = Fixture::new();
    f.pipeline("", 1 << 20, "[screen]\nscope = \"touched-files\"\n");
    if touched {
        f.edit_pipeline(
            "report = \"unittest\"\n",
            &format!("report = \"unittest\"\n{TOUCHED}"),
        );
    }
    f
}

/// The test ids a node's run record names.
fn tests_of(f: &Fixture, run_node: &str) -> Vec<String> {
    let rec: Value = f.project.output_record(run_node);
    rec["tests"].as_object().unwrap().keys().cloned().collect()
}

/// `p-2`'s sessions: a right fix, a wrong one, and a right one that breaks
/// `sub`, whose test is in a file the test patch does not touch.
fn p2_sessions(f: &Fixture) {
    let wrong = OPS_SUB_MUL.replace("return a * b", "return a * b + 1");
    let breaks_sub = OPS_SUB_MUL.replace("return a - b", "return a + b");
    f.session("a/fix.json", "p-2", &f.fix2());
    f.session(
        "a/wrong.json",
        "p-2",
        &f.diff2(&[("pkg/ops.py", Some(&wrong))]),
    );
    f.session(
        "a/breaks-sub.json",
        "p-2",
        &f.diff2(&[("pkg/ops.py", Some(&breaks_sub))]),
    );
}

fn p2_verdicts_hold(f: &Fixture) {
    assert_verdict(f, "a/fix.json", "resolved", "resolved");
    assert_verdict(f, "a/wrong.json", "unresolved", "unresolved");
    // The documented trade-off: a test of an untouched file is not checked.
    assert_verdict(f, "a/breaks-sub.json", "resolved", "resolved");
}

/// The graded runs of a scoped pipeline name no test of an untouched file,
/// the verdicts stay right, and turning the option on reruns the graded
/// runs and grades, and rewrites the tasks (their eval script runs the
/// same command): the screening is reused.
#[test]
fn a_scoped_graded_run_runs_only_the_touched_test_files() {
    let f = scoped_fixture(false);
    p2_sessions(&f);
    f.build_ok();
    p2_verdicts_hold(&f);
    // The whole suite ran: the untouched file's tests are in the report.
    let whole = tests_of(&f, "run:a/breaks-sub.json:exclude");
    assert!(
        whole.iter().any(|t| t.contains("tests.test_ops")),
        "{whole:?}"
    );

    f.edit_pipeline(
        "report = \"unittest\"\n",
        &format!("report = \"unittest\"\n{TOUCHED}"),
    );
    let b = f.build_ok();
    for kind in ["screen", "triage", "tree", "env"] {
        let c = b.summary.by_kind.get(kind).cloned().unwrap_or_default();
        assert_eq!(c.executed, 0, "{kind} reran: {:?}", b.summary);
    }
    // SWE-bench's harness runs what the graded runs ran.
    let p2 = f.released_task("p-2");
    let script = p2["eval_script"].as_str().unwrap();
    assert!(
        script.contains("python3 -m unittest -v tests/test_mul.py"),
        "{script}"
    );
    // Only the graded runs ran again: one per session (its two arms
    // stage one tree, and share its run), and the grades over them.
    assert_eq!(b.summary.by_kind["run"].executed, 3, "{:?}", b.summary);
    assert_eq!(b.summary.by_kind["grade"].executed, 6, "{:?}", b.summary);
    p2_verdicts_hold(&f);
    for session in ["a/fix.json", "a/wrong.json", "a/breaks-sub.json"] {
        for arm in ["exclude", "keep"] {
            let tests = tests_of(&f, &format!("run:{session}:{arm}"));
            assert!(
                !tests.is_empty() && tests.iter().all(|t| t.contains("tests.test_mul.")),
                "{session} {arm}: {tests:?}"
            );
        }
    }
    // Every graded run still carried its canaries.
    let grade = f.grade_record("a/fix.json", "exclude");
    assert!(grade.get("unchecked").is_none(), "{grade:#}");
    let log = f.evidence(&grade, "log");
    assert!(!log.contains("test_ops"), "{log}");
}

/// A rerun of the whole test command keeps the scope; a grade's checks and
/// reruns of chosen files run as written.
#[test]
fn a_scoped_grade_reruns_the_touched_files_when_it_reruns_the_whole_command() {
    let f = scoped_fixture(true);
    // No rerun_command: a failing grade reruns the (scoped) test command.
    f.edit_pipeline("rerun_command = \"python3 -m unittest -v {files}\"\n", "");
    let wrong = OPS_SUB_MUL.replace("return a * b", "return a * b + 1");
    f.session(
        "a/wrong.json",
        "p-2",
        &f.diff2(&[("pkg/ops.py", Some(&wrong))]),
    );
    f.build_ok();
    assert_verdict(&f, "a/wrong.json", "unresolved", "unresolved");
    let grade = f.grade_record("a/wrong.json", "exclude");
    let rerun = f.evidence(&grade, "rerun 1 log");
    assert!(rerun.contains("tests.test_mul"), "{rerun}");
    assert!(!rerun.contains("tests.test_ops"), "{rerun}");
}

/// The canaries are planted in the hidden test files, which are the files
/// a scoped run runs: a forged report is still caught.
#[test]
fn a_forged_report_is_caught_on_a_scoped_run() {
    let f = scoped_fixture(true);
    for (id, body) in [
        ("evil/fake-report.json", FAKE_REPORT),
        ("evil/neutered.json", NEUTERED_ASSERT),
    ] {
        f.session(id, "p-1", &f.diff1(&[("pkg/__init__.py", Some(body))]));
    }
    f.session("good/fix.json", "p-1", &f.fix1());
    f.build_ok();
    for id in ["evil/fake-report.json", "evil/neutered.json"] {
        for arm in ["exclude", "keep"] {
            let row = f.row(id, arm);
            assert_eq!(row["verdict"], "unresolved", "{id} {arm}: {row:#?}");
            assert_eq!(row["fault"], "agent", "{id} {arm}: {row:#?}");
            let grade = f.project.show_json(&row["grade_digest"]);
            assert!(
                grade["tamper"].to_string().contains("report forged"),
                "{id} {arm}: {grade:#}"
            );
        }
    }
    assert_verdict(&f, "good/fix.json", "resolved", "resolved");
    let grade = f.grade_record("good/fix.json", "exclude");
    assert!(grade.get("unchecked").is_none(), "{grade:#}");
    let log = f.evidence(&grade, "log");
    assert!(log.contains("tests.test_ops"), "{log}");
}
