//! SWE-bench-family instance files (docs/instances.md) on the real Docker
//! daemon: a small Python repository laid out as SWE-bench's Django spec
//! runs it (`./tests/runtests.py --verbosity 2 … <modules>`), its image
//! built locally `FROM assay-base:bookworm` with the repository at
//! `/testbed` and a future commit kept in its history, tagged under the
//! names SWE-bench gives an instance's image; instances in SWE-bench's
//! schema (lists as JSON strings) generated over it, screened by assay's
//! own controls, their lists compared with assay's readings, and sessions
//! graded. A second build executes nothing.
//!
//! Fails, never skips, without the daemon.

#![allow(clippy::unwrap_used)]

mod util;

use serde_json::Value;
use util::instances::*;

/// SWE-bench-shaped instances over one image become assay tasks: the image
/// is found under each of SWE-bench's names (the local instance image key,
/// the published one with `_1776_`, a row's own `image_name`); the test
/// command is SWE-bench's Django spec over the test patch's modules; the
/// repository's future (a branch and a tag holding the fix) is reported
/// and never reaches a run; assay's lists are compared with each
/// instance's and every disagreement is listed (a FAIL_TO_PASS test that
/// passes at base, a PASS_TO_PASS test that fails at gold, one that never
/// ran); sessions are graded by assay; a second build executes nothing.
#[test]
fn swe_bench_instances_become_tasks_screened_by_assay_and_checked_against_their_lists() {
    util::progress::phase(
        "test swe_bench_instances_become_tasks_screened_by_assay_and_checked_against_their_lists",
    );
    util::harbor::base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 2\n\n[[instances]]\nname = \"sb\"\npath = \"instances.jsonl\"\n",
    );
    let build = p.path().join("image");
    let r = repository(&build.join("repo"));
    let suffix = format!("{:x}", std::process::id());
    let own = format!("assay-test-instance-{suffix}:latest");
    let _image = Image::build(
        &build,
        &[
            &format!("sweb.eval.x86_64.django__calc-{suffix}-1:latest"),
            &format!("swebench/sweb.eval.x86_64.django_1776_calc-{suffix}-2:latest"),
            &own,
        ],
    );
    const ADD: &str = "test_calc.CalcTest.test_add";
    const SUB: &str = "test_calc.CalcTest.test_sub";
    const BROKEN: &str = "test_calc.CalcTest.test_broken";
    const MUL: &str = "test_calc.MulTest.test_mul";
    let (one, two, three) = (
        format!("django__calc-{suffix}-1"),
        format!("django__calc-{suffix}-2"),
        format!("django__calc-{suffix}-3"),
    );
    let d = |ids: &[&str]| ids.iter().map(|i| django(i)).collect::<Vec<_>>();
    let (f1, p1) = (d(&[MUL]), d(&[ADD, SUB]));
    let (f2, p2) = (d(&[MUL, ADD]), d(&[SUB]));
    let (f3, p3) = (d(&[MUL]), d(&[SUB, BROKEN, "test_calc.CalcTest.test_gone"]));
    p.write(
        "instances.jsonl",
        [
            row(&one, &r, &f1, &p1, &[]),
            row(&two, &r, &f2, &p2, &[]),
            row(
                &three,
                &r,
                &f3,
                &p3,
                &[("image_name", Value::from(own.clone()))],
            ),
        ]
        .join("\n"),
    );
    let task_one = format!("sb/{one}");
    p.session("gold", &task_one, &r.gold_patch);
    p.session("empty", &task_one, "");
    p.session(
        "wrong",
        &task_one,
        &r.gold_patch.replace("return a * b", "return a + b"),
    );
    p.session("history", &task_one, &history_patch(&build.join("repo")));

    let first = p.build_json(&[]).code(0);
    for kind in ["instance", "instance_triage", "instance_env", "task"] {
        assert_eq!(first.summary.by_kind[kind].executed, 3, "{kind}");
    }

    // Each image was found by its own name; the future was seen and is
    // gone from the environment.
    let record = p.output_record(&format!("instance:sb/{two}"));
    assert_eq!(
        record["image_name"],
        format!("swebench/sweb.eval.x86_64.django_1776_calc-{suffix}-2:latest"),
        "{record:#}"
    );
    assert_eq!(record["head"], r.base.as_str());
    assert_eq!(record["commits_not_from_base"], 1, "{record:#}");
    let found_refs = record["refs"].to_string();
    assert!(
        found_refs.contains("refs/heads/future") && found_refs.contains("refs/tags/v2"),
        "{record:#}"
    );
    assert_eq!(
        p.output_record(&format!("instance:sb/{three}"))["image_name"],
        own.as_str()
    );

    let t1 = released(&p, &task_one);
    assert_eq!(t1["certified"], true, "{t1:#}");
    assert_eq!(t1["FAIL_TO_PASS"], serde_json::json!(d(&[MUL])), "{t1:#}");
    assert_eq!(t1["dataset"]["FAIL_TO_PASS"], serde_json::json!(f1));
    assert_eq!(t1["dataset"]["family"], "swe-bench");
    assert_eq!(t1["dataset"]["base_commit"], r.base.as_str());
    assert!(disagreements(&t1).is_empty(), "{t1:#}");
    assert!(
        t1["eval_script"]
            .as_str()
            .unwrap()
            .contains("./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"),
        "SWE-bench's Django spec runs it: {t1:#}"
    );
    assert!(
        t1["eval_script"]
            .as_str()
            .unwrap()
            .contains(&format!("git checkout {} -- 'tests/test_calc.py'", r.base)),
        "the published eval script resets the test files to the instance's own base: {t1:#}"
    );
    let t2 = released(&p, &format!("sb/{two}"));
    assert_eq!(
        disagreements(&t2),
        [(django(ADD), "FAIL_TO_PASS".into(), "passes_at_base".into())]
    );
    let t3 = released(&p, &format!("sb/{three}"));
    assert_eq!(
        disagreements(&t3),
        [
            (
                django(BROKEN),
                "PASS_TO_PASS".into(),
                "fails_at_gold".into()
            ),
            (
                django("test_calc.CalcTest.test_gone"),
                "PASS_TO_PASS".into(),
                "never_ran".into()
            ),
        ]
    );

    let text = std::fs::read_to_string(p.path().join("release/results.csv")).unwrap();
    let verdict = |s: &str| -> String {
        util::csv::csv_records(&text)
            .into_iter()
            .find(|row| row["session"] == format!("{s}.json") && row["arm"] == "exclude")
            .unwrap_or_else(|| panic!("no grade of {s}: {text}"))["verdict"]
            .clone()
    };
    assert_eq!(verdict("gold"), "resolved", "{text}");
    assert_eq!(verdict("empty"), "unresolved");
    assert_eq!(verdict("wrong"), "unresolved");
    assert_eq!(
        verdict("history"),
        "unresolved",
        "the image's history reached a graded run"
    );

    let again = p.build_json(&[]).code(0);
    assert_eq!(
        again.summary.total.executed, 0,
        "{:#?}",
        again.summary.by_kind
    );
}

/// A row that does not read fails its own `instance` node alone, with the
/// file, the line and the field; a row whose image the daemon does not
/// have is declined with every name tried; the other rows build.
#[test]
fn a_bad_row_fails_its_instance_alone_and_a_missing_image_is_declined_with_the_names_tried() {
    util::progress::phase(
        "test a_bad_row_fails_its_instance_alone_and_a_missing_image_is_declined_with_the_names_tried",
    );
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\n\n[[instances]]\nname = \"sb\"\npath = \"instances.jsonl\"\n",
    );
    let r = repository(&p.path().join("repo"));
    let id = format!("django__none-{:x}", std::process::id());
    p.write(
        "instances.jsonl",
        [
            row(&id, &r, &["a".to_owned()], &[], &[]),
            row(
                "django__bad-2",
                &r,
                &[],
                &[],
                &[("FAIL_TO_PASS", Value::from("[\"a\""))],
            ),
        ]
        .join("\n"),
    );
    let build = p.build_json(&[]).code(1);
    assert_eq!(build.names("node_failed"), ["instance:sb/line-2"]);
    let failed = build
        .events
        .iter()
        .find(|e| e["event"] == "node_failed")
        .unwrap();
    let reason = failed["reason"].as_str().unwrap();
    assert_eq!(failed["class"], "input", "{failed:#}");
    assert!(
        reason.contains(
            "instances.jsonl: line 2: `FAIL_TO_PASS` is a string that is not a JSON list"
        ),
        "{reason}"
    );
    let task = released(&p, &format!("sb/{id}"));
    let why = task["uncertified_because"].to_string();
    assert!(
        why.contains("no_image")
            && why.contains(&format!("sweb.eval.x86_64.{id}:latest"))
            && why.contains(&format!(
                "swebench/sweb.eval.x86_64.{}:latest",
                id.replace("__", "_1776_")
            )),
        "{task:#}"
    );
    // With no reading, no listed test is said to disagree (`never_ran`).
    assert!(disagreements(&task).is_empty(), "{task:#}");
}
