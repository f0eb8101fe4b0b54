//! A mined task whose runner writes CTRF (`report = "ctrf-suite"`,
//! docs/languages.md "CTRF"): screened, and a gold, an empty and a wrong
//! session graded on the CTRF report; a session that makes the reporter
//! write a broken report, and one that makes it write a huge one, fail
//! only their own grade.

#![allow(clippy::unwrap_used)]

mod util;

use util::fixture::{Fixture, OPS_BASE, OPS_SUB, assert_verdict};

/// Runs the unittest suite (or the files given, a rerun's `{files}`) and
/// writes `ctrf.json`: each test's `suite` its `module.Class` (as a list,
/// CTRF 1.0), its `name` the method, its `filePath` the module's file.
const CTRF_RUNNER: &str = r#"import json
import sys
import unittest
loader = unittest.defaultTestLoader
if len(sys.argv) > 1:
    suite = unittest.TestSuite(
        loader.loadTestsFromName(p[:-3].replace("/", ".")) for p in sys.argv[1:]
    )
else:
    suite = loader.discover(".")
tests = []
pending = [suite]
while pending:
    t = pending.pop(0)
    if isinstance(t, unittest.TestSuite):
        pending[:0] = list(t)
        continue
    r = unittest.TestResult()
    t.run(r)
    status = "skipped" if r.skipped else ("passed" if r.wasSuccessful() else "failed")
    cls, _, name = t.id().rpartition(".")
    path = cls.rpartition(".")[0].replace(".", "/") + ".py"
    tests.append({"name": name, "suite": [cls], "status": status, "duration": 0, "filePath": path})
failed = sum(t["status"] == "failed" for t in tests)
summary = {"tests": len(tests), "passed": sum(t["status"] == "passed" for t in tests),
           "failed": failed, "skipped": sum(t["status"] == "skipped" for t in tests),
           "pending": 0, "other": 0, "start": 0, "stop": 0}
with open("ctrf.json", "w") as fh:
    json.dump({"reportFormat": "CTRF", "specVersion": "1.0.0",
               "results": {"tool": {"name": "unittest"}, "summary": summary, "tests": tests}}, fh)
sys.exit(1 if failed else 0)
"#;

#[test]
fn ctrf_reports_screen_and_grade_and_a_broken_or_huge_one_fails_only_its_session() {
    let f = Fixture::with_base_files(&[("tools/ctrf_run.py", CTRF_RUNNER)]);
    f.default_pipeline();
    f.edit_pipeline(
        "test_command = \"python3 -m unittest -v\"\nreport = \"unittest\"\n",
        "test_command = \"python3 tools/ctrf_run.py\"\nreport = \"ctrf-suite\"\nreport_file = \"ctrf.json\"\n",
    );
    f.edit_pipeline(
        "rerun_command = \"python3 -m unittest -v {files}\"",
        "rerun_command = \"python3 tools/ctrf_run.py {files}\"",
    );
    let wrong = OPS_BASE.replacen("return a + b", "return a * b", 2);
    f.session("a/gold.json", "p-1", &f.fix1());
    f.session("a/empty.json", "p-1", "");
    f.session(
        "a/wrong.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(&wrong))]),
    );
    // The reporter rewritten: a report cut off mid-write, and one of
    // 5 MiB (over the 1 MiB log cap the fixture's runs keep).
    let broken = CTRF_RUNNER.replace(
        "sys.exit(",
        "open(\"ctrf.json\", \"w\").write('{\"results\": {\"tests\": [')\nsys.exit(",
    );
    f.session(
        "b/broken.json",
        "p-1",
        &f.diff1(&[
            ("pkg/ops.py", Some(OPS_SUB)),
            ("tools/ctrf_run.py", Some(&broken)),
        ]),
    );
    let huge = CTRF_RUNNER.replace(
        "sys.exit(",
        "open(\"ctrf.json\", \"a\").write(\" \" * (5 << 20))\nsys.exit(",
    );
    f.session(
        "b/huge.json",
        "p-1",
        &f.diff1(&[
            ("pkg/ops.py", Some(OPS_SUB)),
            ("tools/ctrf_run.py", Some(&huge)),
        ]),
    );
    f.build(&[]).code(0);

    // Screened on the CTRF report, by suite.name ids.
    let task = f.released_task("p-1");
    assert_eq!(task["certified"], true, "{task:#}");
    assert_eq!(
        task["test_ids"]["FAIL_TO_PASS"],
        serde_json::json!(["tests.test_ops.TestOps.test_sub"]),
        "{task:#}"
    );
    assert_verdict(&f, "a/gold.json", "resolved", "resolved");
    assert_verdict(&f, "a/empty.json", "unresolved", "unresolved");
    assert_verdict(&f, "a/wrong.json", "unresolved", "unresolved");
    let row = f.row("a/wrong.json", "exclude");
    assert!(
        row["failing"].contains("tests.test_ops.TestOps.test_sub"),
        "{row:#?}"
    );
    // The right fix, but no report to believe: never resolved, the
    // agent's (its controls reported normally), and nobody else's grade moves.
    for session in ["b/broken.json", "b/huge.json"] {
        let row = f.row(session, "exclude");
        assert_eq!(row["verdict"], "no_report", "{session}: {row:#?}");
        assert_eq!(row["fault"], "agent", "{session}: {row:#?}");
    }
}
