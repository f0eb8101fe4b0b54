//! Deep-SWE-shaped Harbor task folders (docs/harbor.md, "Deep-SWE tasks")
//! on the real Docker daemon: folders in Deep-SWE v1.1's layout
//! (`tests/config.json` with the base commit, the whitelists and a CTRF
//! `suite.name` grade; `tests/test.patch`; `solution/solution.patch`;
//! `instruction.md`; an `environment/Dockerfile` that puts a Python
//! repository the test makes at `/app` on `assay-base:bookworm`), screened
//! by their own no-op and oracle, their verifier's CTRF reports read back,
//! the lists recomputed and every disagreement with the whitelists listed
//! in harbor-tasks.jsonl. A second build executes nothing.
//!
//! Fails, never skips, without the daemon.

#![allow(clippy::unwrap_used)]

mod util;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use util::example::ROOT;
use util::git::git_in;
use util::harbor::{assert_no_screening_containers, by_folder, harbor_tasks};

fn base_image() {
    util::progress::phase("setup: scripts/base-image.sh");
    let out = Command::new(Path::new(ROOT).join("scripts/base-image.sh"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/base-image.sh failed (these tests need the Docker daemon):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
const TEST_CALC: &str = "\
import unittest

import calc


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(calc.add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(calc.sub(5, 3), 2)

    def test_broken(self):
        self.assertEqual(calc.add(2, 2), 5)
";
const TEST_MUL: &str = "\
import unittest

import calc


class MulTest(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(calc.mul(2, 3), 6)

    def test_mul_zero(self):
        self.assertEqual(calc.mul(7, 0), 0)
";

/// The verifier's reporter: runs the project's unittest suite and writes
/// a CTRF report, each test's `suite` its `module.Class`.
const CTRF_RUNNER: &str = r#"import json, sys, unittest

def flat(s):
    for t in s:
        if isinstance(t, unittest.TestSuite):
            yield from flat(t)
        else:
            yield t

tests = []
for t in flat(unittest.TestLoader().discover("tests", top_level_dir=".")):
    r = unittest.TestResult()
    t.run(r)
    status = "skipped" if r.skipped else ("passed" if r.wasSuccessful() else "failed")
    suite, name = t.id().rsplit(".", 1)
    tests.append({"name": name, "suite": [suite], "status": status, "duration": 0})
summary = {"tests": len(tests), "passed": sum(t["status"] == "passed" for t in tests),
           "failed": sum(t["status"] == "failed" for t in tests),
           "skipped": sum(t["status"] == "skipped" for t in tests), "pending": 0, "other": 0,
           "start": 0, "stop": 0}
doc = {"reportFormat": "CTRF", "specVersion": "1.0.0",
       "results": {"tool": {"name": "unittest"}, "summary": summary, "tests": tests}}
open(sys.argv[1], "w").write(json.dumps(doc))
"#;

/// The verifier's grader, by Deep-SWE's rules: a whitelisted test missing
/// from the report failed; reward 1 iff every FAIL_TO_PASS and
/// PASS_TO_PASS test passed.
const GRADE: &str = r#"import json
config = json.load(open("/tests/config.json"))
seen = {}
for path in config["grade"]["reports"]:
    for t in json.load(open(path))["results"]["tests"]:
        seen[t["suite"][0] + "." + t["name"]] = t["status"]
ok = all(seen.get(i) == "passed" for i in config["f2p_node_ids"] + config["p2p_node_ids"])
json.dump({"reward": 1 if ok and config["f2p_node_ids"] else 0}, open("/logs/verifier/reward.json", "w"))
"#;

/// Deep-SWE's verifier frame: apply the test patch, run the suites (the
/// task-specific part between the markers, with the reporter the image
/// installed), grade, move the reports.
const TEST_SH: &str = "#!/bin/bash
set -uo pipefail
mkdir -p /logs/verifier
cd /app || exit 6
git apply --whitespace=nowarn /tests/test.patch || exit 1
export RUN_LOG=/logs/verifier/run.log
run_log() { echo \"+ $*\" >> \"$RUN_LOG\"; \"$@\" 2>&1 | tee -a \"$RUN_LOG\"; return \"${PIPESTATUS[0]}\"; }
# >>> RUN TESTS (task-specific) <<<
run_log python3 /usr/local/lib/ctrf_runner.py /logs/verifier/new-ctrf.json
# >>> END RUN TESTS <<<
python3 /tests/grade.py
mkdir -p /logs/verifier/reports
mv /logs/verifier/new-ctrf.json /logs/verifier/reports/
";

/// A task folder in Deep-SWE v1.1's layout under `root/name`, whose
/// whitelists are `f2p` and `p2p`.
fn deep_swe_task(root: &Path, name: &str, f2p: &[&str], p2p: &[&str]) {
    let dir = root.join(name);
    let repo = dir.join("environment/repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| git_in(&repo, 1, args);
    git(&["init", "-q", "-b", "main"]);
    write(&repo, "calc.py", CALC);
    write(&repo, "tests/__init__.py", "");
    write(&repo, "tests/test_calc.py", TEST_CALC);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    let base = git(&["rev-parse", "HEAD"]).trim().to_owned();
    // The test patch and the solution, as diffs from the base; the
    // repository keeps the base alone.
    write(&repo, "tests/test_mul.py", TEST_MUL);
    git(&["add", "-A"]);
    let test_patch = git(&["diff", "--cached", "--binary", &base]);
    git(&["reset", "-q", "--hard", &base]);
    write(
        &repo,
        "calc.py",
        &format!("{CALC}\n\ndef mul(a, b):\n    return a * b\n"),
    );
    let gold_patch = git(&["diff", "--binary", &base]);
    git(&["reset", "-q", "--hard", &base]);
    let ids = |v: &[&str]| serde_json::to_string(v).unwrap();
    let config = format!(
        "{{\n \"base_commit\": \"{base}\",\n \"f2p_node_ids\": {},\n \"p2p_node_ids\": {},\n \"grade\": {{\"format\": \"ctrf\", \"node_id\": \"suite.name\", \"tool_label\": \"unittest\", \"reports\": [\"/logs/verifier/new-ctrf.json\"]}}\n}}\n",
        ids(f2p),
        ids(p2p)
    );
    for (rel, text) in [
        (
            "task.toml",
            format!(
                "schema_version = \"1.3\"\n\n[task]\nname = \"ds/{name}\"\n\n[metadata]\nbase_commit_hash = \"{base}\"\n\n[verifier]\ntimeout_sec = 120.0\n\n[agent]\ntimeout_sec = 120.0\n"
            ),
        ),
        ("instruction.md", "Add `calc.mul(a, b)`.\n".to_owned()),
        (
            "environment/Dockerfile",
            "FROM assay-base:bookworm\nUSER root\nCOPY ctrf_runner.py /usr/local/lib/ctrf_runner.py\nCOPY repo /app\nWORKDIR /app\n".to_owned(),
        ),
        ("environment/ctrf_runner.py", CTRF_RUNNER.to_owned()),
        ("tests/config.json", config),
        ("tests/test.patch", test_patch),
        ("tests/test.sh", TEST_SH.to_owned()),
        ("tests/grade.py", GRADE.to_owned()),
        ("solution/solution.patch", gold_patch),
        (
            "solution/solve.sh",
            "#!/bin/bash\ncd /app && git apply --whitespace=nowarn /solution/solution.patch\n"
                .to_owned(),
        ),
    ] {
        write(&dir, rel, &text);
    }
}

/// Names `image` as the task's prebuilt environment (`[environment]
/// docker_image`, as Deep-SWE's task.toml does).
fn prebuilt(root: &Path, name: &str, image: &str) {
    let toml = root.join(name).join("task.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str(&format!("\n[environment]\ndocker_image = \"{image}\"\n"));
    std::fs::write(toml, text).unwrap();
}

/// (test, whitelist, kind) of each whitelist disagreement of a line.
fn disagreements(line: &Value) -> Vec<(String, String, String)> {
    line["swe"]["whitelist_disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap().to_owned();
            (s("test"), s("whitelist"), s("kind"))
        })
        .collect()
}

fn owned(v: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    v.iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

#[test]
fn deep_swe_folders_are_screened_and_their_whitelists_checked_against_assays_readings() {
    util::progress::phase(
        "test deep_swe_folders_are_screened_and_their_whitelists_checked_against_assays_readings",
    );
    base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\n\n[screen]\nrepeats = 2\n\n[[harbor_dataset]]\nname = \"ds\"\npath = \"ds\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let ds = p.path().join("ds");
    const ADD: &str = "tests.test_calc.CalcTest.test_add";
    const SUB: &str = "tests.test_calc.CalcTest.test_sub";
    const BROKEN: &str = "tests.test_calc.CalcTest.test_broken";
    const MUL: &str = "tests.test_mul.MulTest.test_mul";
    const MUL_ZERO: &str = "tests.test_mul.MulTest.test_mul_zero";
    // Certified by its own controls, though its FAIL_TO_PASS holds a test
    // that passes before the fix and leaves out one that the fix makes pass.
    deep_swe_task(&ds, "calc-1", &[MUL, ADD], &[SUB]);
    // A PASS_TO_PASS test that fails at gold: its oracle cannot score.
    deep_swe_task(&ds, "calc-2", &[MUL, MUL_ZERO], &[SUB, BROKEN]);
    // Environments: calc-1 names a prebuilt image this machine lacks (its
    // Dockerfile is built instead), calc-2 one it has (used as it is).
    prebuilt(&ds, "calc-1", "assay-no-such-image:deepswe");
    let image = format!("assay-test-deepswe/calc-2:{}", std::process::id());
    let built = Command::new("docker")
        .args(["build", "--network", "none", "-q", "-t", &image])
        .arg(ds.join("calc-2/environment"))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let image_id = String::from_utf8_lossy(&built.stdout).trim().to_owned();
    prebuilt(&ds, "calc-2", &image);
    // Hostile: a verifier that leaves a 20 MiB report behind, and a
    // config that names a report outside /logs/verifier. Each fails only
    // its own reading or task.
    deep_swe_task(&ds, "huge-report", &[MUL, MUL_ZERO], &[SUB]);
    let huge = ds.join("huge-report/tests/test.sh");
    let mut text = std::fs::read_to_string(&huge).unwrap();
    text.push_str(
        "head -c 20000000 /dev/zero | tr '\\0' '{' > /logs/verifier/reports/new-ctrf.json\n",
    );
    std::fs::write(&huge, text).unwrap();
    deep_swe_task(&ds, "bad-config", &[MUL, MUL_ZERO], &[SUB]);
    let config = ds.join("bad-config/tests/config.json");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("/logs/verifier/new-ctrf.json", "/etc/passwd");
    std::fs::write(&config, text).unwrap();

    let first = p.build_json(&[]).code(0);
    assert_eq!(first.summary.by_kind["harbor_task"].executed, 4);
    let (released, lines) = harbor_tasks(&p);
    let by_folder = |f: &str| by_folder(&lines, f);

    let one = by_folder("calc-1");
    assert_eq!(one["certified"], true, "{one:#}");
    assert_eq!(
        one["environment"]["fallback"],
        "the image `assay-no-such-image:deepswe` is not on this machine: built from environment/Dockerfile"
    );
    let swe = &one["swe"];
    assert_eq!(swe["report"], "ctrf-suite", "{swe:#}");
    assert_eq!(
        swe["unread"],
        Value::Null,
        "every reading's report was read: {swe:#}"
    );
    assert_eq!(
        swe["fail_to_pass"],
        serde_json::json!([MUL, MUL_ZERO]),
        "{swe:#}"
    );
    assert_eq!(
        swe["pass_to_pass"],
        serde_json::json!([ADD, SUB]),
        "{swe:#}"
    );
    assert_eq!(swe["flaky"], serde_json::json!([]));
    assert_eq!(swe["test_files"], serde_json::json!(["tests/test_mul.py"]));
    assert_eq!(swe["gold_files"], serde_json::json!(["calc.py"]));
    assert_eq!(
        disagreements(&one),
        owned(&[
            (ADD, "FAIL_TO_PASS", "passes_before_fix"),
            (MUL_ZERO, "none", "not_whitelisted"),
        ])
    );
    assert_eq!(
        swe["whitelist_disagreements"][0]["readings"],
        "nop: passed, passed; oracle: passed, passed"
    );

    let two = by_folder("calc-2");
    assert_eq!(two["certified"], false, "{two:#}");
    assert_eq!(
        two["environment"]["image"],
        image_id.as_str(),
        "the prebuilt image"
    );
    assert_eq!(two["environment"]["fallback"], Value::Null);
    assert!(
        two["uncertified_because"]
            .to_string()
            .contains("oracle_fails"),
        "{two:#}"
    );
    assert_eq!(
        disagreements(&two),
        owned(&[(BROKEN, "PASS_TO_PASS", "fails_at_gold")])
    );

    let huge = by_folder("huge-report");
    assert_eq!(huge["certified"], true, "its rewards hold: {huge:#}");
    let unread = huge["swe"]["unread"].as_array().unwrap();
    assert_eq!(unread.len(), 4, "every reading: {huge:#}");
    assert!(
        unread
            .iter()
            .all(|u| u.as_str().unwrap().ends_with("over the cap")),
        "{unread:?}"
    );
    let bad = by_folder("bad-config");
    assert_eq!(bad["certified"], false, "{bad:#}");
    let why = bad["uncertified_because"].to_string();
    assert!(
        why.contains("swe_config_invalid: tests/config.json: the report `/etc/passwd` is not a file under /logs/verifier/"),
        "{why}"
    );
    assert_eq!(bad["swe"], Value::Null);

    assert_no_screening_containers(&lines);

    let again = p.build_json(&[]).code(0);
    assert_eq!(again.summary.by_kind["harbor_task"].executed, 0);
    assert_eq!(harbor_tasks(&p).0, released, "the same release");
    let removed = Command::new("docker")
        .args(["rmi", &image])
        .output()
        .unwrap();
    assert!(removed.status.success());
}

/// `results.csv` by session and arm.
fn grades(p: &util::Project) -> std::collections::BTreeMap<(String, String), Value> {
    let text = std::fs::read_to_string(p.path().join("release/results.csv")).unwrap();
    util::csv::csv_records(&text)
        .into_iter()
        .map(|r| {
            let key = (r["session"].clone(), r["arm"].clone());
            (key, serde_json::to_value(r).unwrap())
        })
        .collect()
}

/// A patch of the repository at `repo` (its base checked out) that makes
/// `calc` end the interpreter when imported, and adds assay's merged
/// report's file with every test of `passed` passed.
fn forged_report_patch(repo: &Path, passed: &[&str]) -> String {
    let git = |args: &[&str]| git_in(repo, 1, args);
    let tests: Vec<Value> = passed
        .iter()
        .map(|id| {
            let (suite, name) = id.rsplit_once('.').unwrap();
            serde_json::json!({"name": name, "suite": [suite], "status": "passed"})
        })
        .collect();
    let report = serde_json::json!({"reportFormat": "CTRF", "results": {"tests": tests}});
    write(repo, ".assay-swe-report.json", &report.to_string());
    write(repo, "calc.py", &format!("import os\nos._exit(0)\n{CALC}"));
    git(&["add", "-A"]);
    let patch = git(&["diff", "--cached", "--binary"]);
    git(&["reset", "-q", "--hard"]);
    patch
}

/// The released task `id` of `release/tasks.jsonl`.
fn released(p: &util::Project, id: &str) -> Value {
    let text = std::fs::read_to_string(p.path().join("release/tasks.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|t| t["instance_id"] == id)
        .unwrap_or_else(|| {
            let uncertified =
                std::fs::read_to_string(p.path().join("release/tasks.uncertified.jsonl"))
                    .unwrap_or_default();
            panic!("no task {id} in tasks.jsonl ({text}); uncertified: {uncertified}")
        })
}

/// A certified Deep-SWE-shaped folder becomes an assay task: its base tree
/// is the image's `/app`, it is screened by assay's own runs (three states)
/// in the image, its lists are assay's (beside the whitelist
/// disagreements of the dataset's screening), it is released in
/// tasks.jsonl, and sessions on it are graded by assay (arms, verdicts)
/// with the dataset's own verifier's reading shown beside and not counted.
/// A second build executes nothing; a changed test patch reruns that task
/// alone.
#[test]
fn a_deep_swe_folder_becomes_an_assay_task_graded_by_assay_with_the_datasets_reading_beside() {
    util::progress::phase(
        "test a_deep_swe_folder_becomes_an_assay_task_graded_by_assay_with_the_datasets_reading_beside",
    );
    base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"ds\"\npath = \"ds\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let ds = p.path().join("ds");
    const ADD: &str = "tests.test_calc.CalcTest.test_add";
    const SUB: &str = "tests.test_calc.CalcTest.test_sub";
    const MUL: &str = "tests.test_mul.MulTest.test_mul";
    // Its FAIL_TO_PASS whitelist holds a test that passes before the fix.
    deep_swe_task(&ds, "calc-1", &[MUL, ADD], &[SUB]);
    deep_swe_task(&ds, "calc-3", &[MUL], &[SUB]);
    let gold = std::fs::read_to_string(ds.join("calc-1/solution/solution.patch")).unwrap();
    p.session("gold", "ds/calc-1", &gold);
    p.session("empty", "ds/calc-1", "");
    p.session(
        "wrong",
        "ds/calc-1",
        &gold.replace("return a * b", "return a + b"),
    );

    // Hostile: a patch that stops the suites before they report (its
    // module ends the interpreter when imported) and leaves a report of
    // its own where assay's merged one goes, every test passed.
    let forged = forged_report_patch(
        &ds.join("calc-1/environment/repo"),
        &[MUL, "tests.test_mul.MulTest.test_mul_zero", ADD, SUB],
    );
    p.session("forged", "ds/calc-1", &forged);

    let first = p.build_json(&[]).code(0);
    for kind in ["swe_triage", "swe_env", "task"] {
        assert_eq!(first.summary.by_kind[kind].executed, 2, "{kind}");
    }
    // Counted in the Harbor funnel, as far as assay's own controls took
    // them; no pull request was mined.
    let funnel: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/funnel.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(funnel["candidates"], 0, "{funnel:#}");
    assert_eq!(funnel["tasks_released"], 0, "{funnel:#}");
    let swe = &funnel["harbor"]["assay_tasks"];
    assert_eq!(
        (&swe["tasks"], &swe["screened"], &swe["certified"]),
        (&Value::from(2), &Value::from(2), &Value::from(2)),
        "{funnel:#}"
    );
    assert_eq!(
        swe["certified_tasks"],
        serde_json::json!(["ds/calc-1", "ds/calc-3"])
    );
    assert!(
        first.run.stderr.contains(
            "as assay tasks: 2 -> 2 screened -> 2 certified by assay's controls (ds/calc-1, ds/calc-3)"
        ) && !first.run.stderr.contains("funnel: 0 candidates"),
        "{}",
        first.run.stderr
    );
    let html = std::fs::read_to_string(p.path().join("release/report.html")).unwrap();
    assert!(
        html.contains("Harbor tasks as assay tasks") && html.contains("<code>ds/calc-3</code>"),
        "the report's Harbor funnel names them"
    );
    util::figures::explained(
        &p,
        &[],
        &p.path().join("release"),
        5,
        &[
            "funnel.harbor.assay_tasks.certified",
            "funnel.harbor.assay_tasks.uncertified",
        ],
    );
    let task = released(&p, "ds/calc-1");
    assert_eq!(
        task["FAIL_TO_PASS"],
        serde_json::json!([MUL, "tests.test_mul.MulTest.test_mul_zero"]),
        "{task:#}"
    );
    let p2p = task["PASS_TO_PASS"].to_string();
    assert!(p2p.contains(ADD) && p2p.contains(SUB), "{task:#}");
    assert_eq!(
        task["problem_statement"].as_str().unwrap().trim(),
        "Add `calc.mul(a, b)`."
    );
    assert_eq!(task["base_commit"].as_str().unwrap().len(), 40, "{task:#}");
    // The dataset's screening and its whitelist disagreements stay.
    let (_, lines) = harbor_tasks(&p);
    assert_eq!(
        disagreements(&by_folder(&lines, "calc-1"))[0],
        (
            ADD.to_owned(),
            "FAIL_TO_PASS".to_owned(),
            "passes_before_fix".to_owned()
        )
    );

    let g = grades(&p);
    let verdict = |s: &str| {
        let r = &g[&(s.to_owned(), "exclude".to_owned())];
        (
            r["verdict"].as_str().unwrap().to_owned(),
            r["fault"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(
        verdict("gold.json"),
        ("resolved".into(), "none".into()),
        "{g:#?}"
    );
    assert_eq!(verdict("empty.json").0, "unresolved");
    assert_eq!(verdict("wrong.json").0, "unresolved");
    let (forged_verdict, forged_fault) = verdict("forged.json");
    assert!(
        forged_verdict != "resolved" && forged_fault == "agent",
        "the tree's own report is never read: {:#?}",
        g[&("forged.json".to_owned(), "exclude".to_owned())]
    );
    assert_eq!(
        g[&("gold.json".to_owned(), "exclude".to_owned())]["instance_id"],
        "ds/calc-1"
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    let alpha = &summary["agents"]["alpha/model-a"];
    assert_eq!(
        (alpha["n"].as_u64(), alpha["resolved"].as_u64()),
        (Some(4), Some(1)),
        "assay's grades are the ones counted, once per session: {alpha:#}"
    );
    let readings = summary["dataset_verifier"].as_array().unwrap();
    let reading = |s: &str| {
        readings
            .iter()
            .find(|r| r["session"] == s)
            .unwrap_or_else(|| panic!("no reading of {s}: {readings:#?}"))
    };
    assert_eq!(reading("gold.json")["reading"], "resolved");
    assert_eq!(reading("gold.json")["assay"], "resolved");
    assert_eq!(reading("gold.json")["agree"], true);
    assert_eq!(reading("wrong.json")["reading"], "unresolved");
    assert_eq!(reading("empty.json")["agree"], true);
    assert_ne!(reading("forged.json")["reading"], "resolved");

    let again = p.build_json(&[]).code(0);
    assert_eq!(
        again.summary.total.executed, 0,
        "{:#?}",
        again.summary.by_kind
    );

    // calc-3's test patch gains a file: that task alone is screened again.
    let patch = ds.join("calc-3/tests/test.patch");
    let mut text = std::fs::read_to_string(&patch).unwrap();
    text.push_str("diff --git a/tests/test_extra.py b/tests/test_extra.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_extra.py\n@@ -0,0 +1 @@\n+# more\n");
    std::fs::write(&patch, text).unwrap();
    let changed = p.build_json(&[]).code(0);
    for kind in ["harbor_task", "swe_triage", "swe_env", "task"] {
        assert_eq!(
            changed.summary.by_kind[kind].executed, 1,
            "{kind}: {:#?}",
            changed.summary.by_kind
        );
    }
    assert_eq!(
        changed.summary.by_kind["grade"].executed, 0,
        "calc-1's sessions keep their grades"
    );
}

/// An `[[agent]]` on a Deep-SWE-shaped task: it runs in a container of the
/// task's environment image with its model calls through assay's proxy
/// (a scripted endpoint on loopback, the key injected by the proxy), and
/// its workspace diff is graded by assay, with the dataset's verifier's
/// reading beside. A hostile agent writes reward files where Harbor's
/// verifier looks (`/logs/verifier`, `/tests`) and in its workspace, and a
/// passing test file of its own: nothing of it reaches a grade, which is
/// made in fresh containers from the diff alone.
#[test]
fn agents_attempt_a_deep_swe_task_in_its_image_and_their_writes_outside_the_diff_reach_no_grade() {
    util::progress::phase(
        "test agents_attempt_a_deep_swe_task_in_its_image_and_their_writes_outside_the_diff_reach_no_grade",
    );
    base_image();
    const KEY: &str = "sk-deepswe-test-key-0123456789";
    util::project::set_env(vec![("OPENAI_API_KEY".into(), KEY.into())]);
    let llm = util::llm::Llm::start(|_, seen| {
        let content = if seen.body.contains("forger") {
            ""
        } else {
            "\n\ndef mul(a, b):\n    return a * b\n"
        };
        let body = serde_json::json!({"choices": [{"message": {"content": content}}]});
        (200, body.to_string())
    });
    let agent = |label: &str| {
        format!(
            r#"
[[agent]]
label = "{label}"
model = "script-1"
base_url = "{url}"
key_env = "OPENAI_API_KEY"
tracks = ["basic"]
command = '''
python3 - <<'PY'
import json, os, urllib.request
base = os.environ["ASSAY_BASE_URL"]
req = urllib.request.Request(base + "/chat/completions", data=json.dumps({{"model": "{label}"}}).encode(),
    headers={{"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"}})
code = json.loads(urllib.request.urlopen(req).read())["choices"][0]["message"]["content"]
open("calc.py", "a").write(code)
if "{label}" == "forger":
    for path in ["/logs/verifier/reward.json", "/logs/verifier/reward.txt", "/tests/test.sh", "logs/verifier/reward.json"]:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").write('{{"reward": 1}}')
            print("wrote", path)
        except OSError as e:
            print("not written", path, type(e).__name__)
    os.makedirs("tests", exist_ok=True)
    open("tests/test_mul.py", "w").write("def test_mul():\n    pass\n")
print("agent-done")
PY
'''
"#,
            url = llm.url()
        )
    };
    let p = util::Project::new().pipeline(&format!(
        "cache = \"cache\"\nrelease = \"release\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"ds\"\npath = \"ds\"\n{}{}",
        agent("scripted"),
        agent("forger")
    ));
    let _images = util::harbor::BuiltImages::of(&p);
    let ds = p.path().join("ds");
    deep_swe_task(
        &ds,
        "calc-1",
        &["tests.test_mul.MulTest.test_mul"],
        &["tests.test_calc.CalcTest.test_sub"],
    );
    let first = p.build_json(&[]).code(0);
    assert_eq!(first.summary.by_kind["attempt"].executed, 2);
    let forger = p.output_record("attempt:agent/forger/ds/calc-1/0");
    let log = String::from_utf8(p.blob(forger["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("agent-done"), "{log}");
    assert!(
        !log.contains("wrote /logs") && !log.contains("wrote /tests"),
        "the image's root is read-only to the agent: {log}"
    );
    assert!(
        llm.seen()
            .iter()
            .all(|s| s.authorization.as_deref() == Some(&format!("Bearer {KEY}"))),
        "the proxy injects the key"
    );
    let g = grades(&p);
    let verdict = |s: &str| {
        let r = &g[&(s.to_owned(), "exclude".to_owned())];
        r["verdict"].as_str().unwrap().to_owned()
    };
    assert_eq!(verdict("agent/scripted/ds/calc-1/0"), "resolved", "{g:#?}");
    assert_eq!(verdict("agent/forger/ds/calc-1/0"), "unresolved", "{g:#?}");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    let readings = summary["dataset_verifier"].to_string();
    assert!(
        readings.contains("agent/forger/ds/calc-1/0")
            && readings.contains("agent/scripted/ds/calc-1/0"),
        "{readings}"
    );
    for r in summary["dataset_verifier"].as_array().unwrap() {
        assert_eq!(r["agree"], true, "{r:#}");
    }
    assert_eq!(p.build_json(&[]).code(0).summary.total.executed, 0);
}

/// The CTRF report of Deep-SWE's reporter with every test of `passed`
/// passed.
fn all_passed(passed: &[&str]) -> String {
    let tests: Vec<Value> = passed
        .iter()
        .map(|id| {
            let (suite, name) = id.rsplit_once('.').unwrap();
            serde_json::json!({"name": name, "suite": [suite], "status": "passed"})
        })
        .collect();
    serde_json::json!({"reportFormat": "CTRF", "results": {"tool": {"name": "unittest"}, "tests": tests}})
        .to_string()
}

/// A trial of a Harbor job on the Deep-SWE task `ds/calc-1`, as Harbor
/// writes it: `result.json` with the agent and the verifier's reward, the
/// agent's diff as `pre_artifacts.sh` collected it (`artifacts/model.patch`)
/// and, when `forged`, every file the task's own verifier leaves in
/// `verifier/` saying every test passed.
fn swe_trial(
    job: &Path,
    name: &str,
    agent: &str,
    reward: Option<f64>,
    patch: Option<&str>,
    forged: Option<&str>,
) {
    let dir = job.join(name);
    std::fs::create_dir_all(dir.join("verifier")).unwrap();
    let result = serde_json::json!({
        "task_name": "ds/calc-1",
        "trial_name": name,
        "agent_info": {"name": agent, "model_info": {"name": "m"}},
        "agent_result": {},
        "verifier_result": reward.map(|r| serde_json::json!({"rewards": {"reward": r}})),
    });
    write(&dir, "result.json", &result.to_string());
    if let Some(patch) = patch {
        write(&dir, "artifacts/model.patch", patch);
    }
    if let Some(report) = forged {
        write(&dir, "verifier/reward.json", r#"{"reward": 1}"#);
        write(&dir, "verifier/reward.txt", "1\n");
        write(&dir, "verifier/ctrf.json", report);
        write(&dir, "verifier/reports/new-ctrf.json", report);
        write(&dir, "verifier/test-stdout.txt", "all tests passed\n");
    }
}

/// A patch of the repository at `repo` (its base checked out) whose
/// `calc`, when imported by the suites, makes assay's merged report's path
/// a symbolic link to `target` holding `report` (every test passed),
/// read-only; `in_tree` adds `target` to the tree by the patch, else `calc`
/// writes it where `target` names (outside the tree). `mul` stays missing:
/// the real reading fails.
fn report_link_patch(repo: &Path, target: &str, report: &str, in_tree: bool) -> String {
    let git = |args: &[&str]| git_in(repo, 1, args);
    let plant = format!(
        "import os\n\
         _R = '.assay-swe-report.json'\n\
         _T = {target:?}\n\
         if not {in_tree}:\n    \
         with open(_T, 'w') as _f:\n        \
         _f.write({report:?})\n\
         os.chmod(_T, 0o444)\n\
         try:\n    \
         os.unlink(_R)\n\
         except OSError:\n    \
         pass\n\
         os.symlink(_T, _R)\n",
        in_tree = if in_tree { "True" } else { "False" },
    );
    if in_tree {
        write(repo, target, report);
    }
    write(repo, "calc.py", &format!("{plant}{CALC}"));
    git(&["add", "-A"]);
    let patch = git(&["diff", "--cached", "--binary"]);
    git(&["reset", "-q", "--hard"]);
    git(&["clean", "-qfd"]);
    patch
}

/// A Harbor job run on a Deep-SWE-shaped task (trials as Harbor writes
/// them: the agent's diff in `artifacts/model.patch`, the task's own
/// verifier's reward and reports in `verifier/`) is imported and graded by
/// assay — its own runs of the hidden tests, canaries and all — with the
/// dataset verifier's reading beside: a gold trial `resolved`, a trial that
/// kept nothing the agent's `unresolved`. Hostile: a trial whose folder
/// carries a reward of 1 and reports of every test passed, over a diff that
/// does not solve the task, gets no `resolved` from them (they are listed
/// as Harbor's disagreement, never read for the verdict); sessions whose
/// code plants assay's merged report's path as a symbolic link to a report
/// of its own (in the tree, or outside it) while the suites run get the
/// real reading, not theirs.
#[test]
fn a_harbor_job_on_a_deep_swe_task_is_graded_by_assay_and_forged_rewards_reports_and_report_links_get_nothing()
 {
    util::progress::phase(
        "test a_harbor_job_on_a_deep_swe_task_is_graded_by_assay_and_forged_rewards_reports_and_report_links_get_nothing",
    );
    base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"ds\"\npath = \"ds\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let ds = p.path().join("ds");
    const MUL: &str = "tests.test_mul.MulTest.test_mul";
    const ZERO: &str = "tests.test_mul.MulTest.test_mul_zero";
    const ADD: &str = "tests.test_calc.CalcTest.test_add";
    const SUB: &str = "tests.test_calc.CalcTest.test_sub";
    deep_swe_task(&ds, "calc-1", &[MUL], &[SUB]);
    let repo = ds.join("calc-1/environment/repo");
    let gold = std::fs::read_to_string(ds.join("calc-1/solution/solution.patch")).unwrap();
    let wrong = gold.replace("return a * b", "return a + b");
    let forged_report = all_passed(&[MUL, ZERO, ADD, SUB]);

    let job = p.path().join("sessions/harbor/ds-job");
    write(&job, "config.json", "{}");
    write(&job, "result.json", r#"{"n_total_trials": 4}"#);
    swe_trial(&job, "oracle__1", "oracle", Some(1.0), Some(&gold), None);
    swe_trial(&job, "solved__1", "beta", Some(1.0), Some(&gold), None);
    swe_trial(
        &job,
        "forged__1",
        "beta",
        Some(1.0),
        Some(&wrong),
        Some(&forged_report),
    );
    swe_trial(&job, "lost__1", "beta", None, None, None);

    let linked_in = report_link_patch(&repo, "forged.json", &forged_report, true);
    p.session("linked-in", "ds/calc-1", &linked_in);
    let linked_out = report_link_patch(&repo, "/tmp/forged.json", &forged_report, false);
    p.session("linked-out", "ds/calc-1", &linked_out);

    p.build_json(&[]).code(0);
    let g = grades(&p);
    let verdict = |s: &str| {
        let r = g
            .get(&(s.to_owned(), "exclude".to_owned()))
            .unwrap_or_else(|| panic!("{s} not graded: {g:#?}"));
        (
            r["verdict"].as_str().unwrap().to_owned(),
            r["fault"].as_str().unwrap().to_owned(),
        )
    };
    let trial = |t: &str| verdict(&format!("harbor/ds-job/{t}"));
    assert_eq!(trial("oracle__1"), ("resolved".into(), "none".into()));
    assert_eq!(trial("solved__1"), ("resolved".into(), "none".into()));
    assert_eq!(
        trial("forged__1"),
        ("unresolved".into(), "agent".into()),
        "the trial's reward and reports are not read: {g:#?}"
    );
    assert_eq!(trial("lost__1"), ("unresolved".into(), "agent".into()));
    assert_eq!(
        g[&("harbor/ds-job/solved__1".to_owned(), "exclude".to_owned())]["instance_id"],
        "ds/calc-1"
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    let beta = &summary["agents"]["beta/m"];
    assert_eq!(
        (beta["n"].as_u64(), beta["resolved"].as_u64()),
        (Some(3), Some(1)),
        "{beta:#}"
    );
    let readings = summary["dataset_verifier"].as_array().unwrap();
    let reading = |s: &str| {
        readings
            .iter()
            .find(|r| r["session"] == s)
            .unwrap_or_else(|| panic!("no reading of {s}: {readings:#?}"))
    };
    assert_eq!(reading("harbor/ds-job/solved__1")["reading"], "resolved");
    assert_eq!(reading("harbor/ds-job/forged__1")["reading"], "unresolved");
    let trials = &summary["trials"]["harbor:harbor/ds-job"];
    let disagreeing = trials["disagreements"].to_string();
    assert!(
        disagreeing.contains("forged__1") && disagreeing.contains("lost__1"),
        "Harbor's reward is listed where assay disagrees: {trials:#}"
    );

    // The report links: the real reading (test_mul failed), never theirs.
    for s in ["linked-in.json", "linked-out.json"] {
        assert_eq!(verdict(s).0, "unresolved", "{s}: {g:#?}");
        let run = p.output_record(&format!("run:{s}:exclude"));
        assert!(run["report_error"].is_null(), "{s}: {run:#}");
        let tests = run["tests"].as_object().unwrap();
        assert!(
            tests
                .iter()
                .any(|(id, outcome)| id.contains("test_mul") && outcome == "failed"),
            "{s}: the merged report is the suites' own: {run:#}"
        );
    }
    assert_eq!(p.build_json(&[]).code(0).summary.total.executed, 0);
}

/// Deep-SWE's Go frame, its reporter replaced by a small one of the
/// test's: `go test -json` read into a CTRF report, each test's `suite`
/// its package's import path (so `suite.name` is
/// `example.com/calc.TestMul`, as Deep-SWE's Go whitelists are).
const GO_CTRF: &str = r#"import json, sys
status = {"pass": "passed", "fail": "failed", "skip": "skipped"}
tests = {}
for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    t = e.get("Test")
    if t and "/" not in t and e.get("Action") in status:
        tests[(e["Package"], t)] = status[e["Action"]]
out = [{"name": n, "suite": [p], "status": s, "duration": 0} for (p, n), s in sorted(tests.items())]
summary = {"tests": len(out), "passed": sum(t["status"] == "passed" for t in out),
           "failed": sum(t["status"] == "failed" for t in out),
           "skipped": sum(t["status"] == "skipped" for t in out), "pending": 0, "other": 0,
           "start": 0, "stop": 0}
json.dump({"reportFormat": "CTRF", "specVersion": "1.0.0",
           "results": {"tool": {"name": "gotest"}, "summary": summary, "tests": out}},
          open(sys.argv[1], "w"))
"#;

/// The Go frame's task-specific part, as Deep-SWE's Go tasks write it: the
/// whole suite into `base-ctrf.json`, the scored test, behind a build tag
/// only the test patch carries, into `new-ctrf.json`.
const GO_TEST_SH: &str = "#!/bin/bash
set -uo pipefail
mkdir -p /logs/verifier
cd /app || exit 6
git apply --whitespace=nowarn /tests/test.patch || exit 1
export RUN_LOG=/logs/verifier/run.log
run_log() { echo \"+ $*\" >> \"$RUN_LOG\"; \"$@\" 2>&1 | tee -a \"$RUN_LOG\"; return \"${PIPESTATUS[0]}\"; }
# >>> RUN TESTS (task-specific) <<<
export GOCACHE=\"${GOCACHE:-/tmp/go-cache}\"
set +e
go test -json -count=1 ./... 2>>\"$RUN_LOG\" | python3 /usr/local/lib/go2ctrf.py /logs/verifier/base-ctrf.json
go test -json -count=1 -tags scored -run '^TestMul$' . 2>>\"$RUN_LOG\" | python3 /usr/local/lib/go2ctrf.py /logs/verifier/new-ctrf.json
set -e
# >>> END RUN TESTS <<<
python3 /tests/grade.py
mkdir -p /logs/verifier/reports
mv /logs/verifier/base-ctrf.json /logs/verifier/new-ctrf.json /logs/verifier/reports/
";

const GO_CALC: &str = "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n";
const GO_CALC_TEST: &str = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n\nfunc TestSub(t *testing.T) {\n\tif Sub(5, 3) != 2 {\n\t\tt.Fatal(Sub(5, 3))\n\t}\n}\n";
const GO_MUL_TEST: &str = "//go:build scored\n\npackage calc\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal(Mul(2, 3))\n\t}\n}\n";

/// A Deep-SWE-shaped folder of a Go module (`example.com/calc`) under
/// `root/name`: the test patch adds `TestMul` behind the `scored` tag, the
/// solution adds `Mul`; two reports, as Deep-SWE's Go tasks write.
fn deep_swe_go_task(root: &Path, name: &str) {
    deep_swe_go_task_in(root, name, "", GO_TEST_SH);
}

/// [`deep_swe_go_task`] with `image` (Dockerfile lines) after its `FROM`
/// and `test_sh` as its verifier.
fn deep_swe_go_task_in(root: &Path, name: &str, image: &str, test_sh: &str) {
    let dir = root.join(name);
    let repo = dir.join("environment/repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| git_in(&repo, 1, args);
    git(&["init", "-q", "-b", "main"]);
    write(&repo, "go.mod", "module example.com/calc\n\ngo 1.19\n");
    write(&repo, "calc.go", GO_CALC);
    write(&repo, "calc_test.go", GO_CALC_TEST);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    let base = git(&["rev-parse", "HEAD"]).trim().to_owned();
    write(&repo, "mul_test.go", GO_MUL_TEST);
    git(&["add", "-A"]);
    let test_patch = git(&["diff", "--cached", "--binary", &base]);
    git(&["reset", "-q", "--hard", &base]);
    write(
        &repo,
        "calc.go",
        &format!("{GO_CALC}\nfunc Mul(a, b int) int {{\n\treturn a * b\n}}\n"),
    );
    let gold_patch = git(&["diff", "--binary", &base]);
    git(&["reset", "-q", "--hard", &base]);
    let config = format!(
        "{{\n \"base_commit\": \"{base}\",\n \"f2p_node_ids\": [\"example.com/calc.TestMul\"],\n \"p2p_node_ids\": [\"example.com/calc.TestAdd\", \"example.com/calc.TestSub\"],\n \"grade\": {{\"format\": \"ctrf\", \"node_id\": \"suite.name\", \"tool_label\": \"gotest\", \"reports\": [\"/logs/verifier/base-ctrf.json\", \"/logs/verifier/new-ctrf.json\"]}}\n}}\n"
    );
    for (rel, text) in [
        (
            "task.toml",
            format!(
                "schema_version = \"1.3\"\n\n[task]\nname = \"ds/{name}\"\n\n[metadata]\nbase_commit_hash = \"{base}\"\n\n[verifier]\ntimeout_sec = 300.0\n\n[agent]\ntimeout_sec = 120.0\n"
            ),
        ),
        ("instruction.md", "Add `Mul(a, b int) int`.\n".to_owned()),
        (
            "environment/Dockerfile",
            format!(
                "FROM {}\nUSER root\n{image}COPY go2ctrf.py /usr/local/lib/go2ctrf.py\nCOPY repo /app\nWORKDIR /app\n",
                util::harbor::go_image()
            ),
        ),
        ("environment/go2ctrf.py", GO_CTRF.to_owned()),
        ("tests/config.json", config),
        ("tests/test.patch", test_patch),
        ("tests/test.sh", test_sh.to_owned()),
        ("tests/grade.py", GRADE.to_owned()),
        ("solution/solution.patch", gold_patch),
        (
            "solution/solve.sh",
            "#!/bin/bash\ncd /app && git apply --whitespace=nowarn /solution/solution.patch\n"
                .to_owned(),
        ),
    ] {
        write(&dir, rel, &text);
    }
}

/// A Go task in Deep-SWE's layout, its verifier writing two CTRF reports
/// (the whole suite, and the scored test behind a build tag): certified by
/// its own controls with no whitelist disagreement, released with assay's
/// lists equal to the whitelists (the two reports merged), and a gold, an
/// empty and a wrong session graded by assay with the dataset's reading
/// beside, agreeing. A second build executes nothing.
#[test]
fn a_go_deep_swe_folder_with_two_reports_is_screened_and_graded_by_assay() {
    util::progress::phase(
        "test a_go_deep_swe_folder_with_two_reports_is_screened_and_graded_by_assay",
    );
    base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"ds\"\npath = \"ds\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let ds = p.path().join("ds");
    deep_swe_go_task(&ds, "go-calc");
    let gold = std::fs::read_to_string(ds.join("go-calc/solution/solution.patch")).unwrap();
    p.session("gold", "ds/go-calc", &gold);
    p.session("empty", "ds/go-calc", "");
    p.session(
        "wrong",
        "ds/go-calc",
        &gold.replace("return a * b", "return a + b"),
    );

    let first = p.build_json(&[]).code(0);
    let (_, lines) = harbor_tasks(&p);
    let line = by_folder(&lines, "go-calc");
    assert_eq!(line["certified"], true, "{line:#}");
    assert_eq!(disagreements(&line), Vec::new(), "{line:#}");
    for kind in ["swe_triage", "swe_env", "task"] {
        assert_eq!(first.summary.by_kind[kind].executed, 1, "{kind}");
    }
    let task = released(&p, "ds/go-calc");
    assert_eq!(
        task["FAIL_TO_PASS"],
        serde_json::json!(["example.com/calc.TestMul"]),
        "{task:#}"
    );
    assert_eq!(
        task["PASS_TO_PASS"],
        serde_json::json!(["example.com/calc.TestAdd", "example.com/calc.TestSub"]),
        "{task:#}"
    );

    let g = grades(&p);
    let verdict = |s: &str| {
        let r = &g[&(s.to_owned(), "exclude".to_owned())];
        (
            r["verdict"].as_str().unwrap().to_owned(),
            r["fault"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(
        verdict("gold.json"),
        ("resolved".into(), "none".into()),
        "{g:#?}"
    );
    assert_eq!(verdict("empty.json"), ("unresolved".into(), "agent".into()));
    assert_eq!(verdict("wrong.json"), ("unresolved".into(), "agent".into()));
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    for r in summary["dataset_verifier"].as_array().unwrap() {
        assert_eq!(r["agree"], true, "{r:#}");
    }

    let again = p.build_json(&[]).code(0);
    assert_eq!(
        again.summary.total.executed, 0,
        "{:#?}",
        again.summary.by_kind
    );
}

/// Deep-SWE's Go frame as its images expect it: the build cache where the
/// image's `ENV` points it, no default of the verifier's own.
fn go_test_sh_with_the_images_cache() -> String {
    let default = "export GOCACHE=\"${GOCACHE:-/tmp/go-cache}\"\n";
    assert!(GO_TEST_SH.contains(default));
    GO_TEST_SH.replace(default, "")
}

/// A file of package `calc` a hostile session adds beside the gold fix:
/// every test binary built from it first fails if a file another run
/// planted in the image user's home is there (a run's token is a file of
/// its own fresh tree, so the two `go test` of one run share it), then
/// plants one (named with `tag`), and tries to write a host path and
/// assay's guard. `session` makes each session's tree its own, so each
/// is run.
fn planting_probe(host_path: &Path, tag: &str, session: &str) -> String {
    format!(
        r#"// {session}
package calc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func runToken() string {{
	if b, err := os.ReadFile(".probe-token"); err == nil {{
		return string(b)
	}}
	t := fmt.Sprint(time.Now().UnixNano(), os.Getpid())
	_ = os.WriteFile(".probe-token", []byte(t), 0o644)
	return t
}}

func init() {{
	token := runToken()
	dir := "/root/.cache"
	seen, _ := filepath.Glob(filepath.Join(dir, "assay-planted-*"))
	for _, p := range seen {{
		if !strings.HasSuffix(p, "-"+token) {{
			panic("a file another run planted is here: " + p)
		}}
	}}
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "assay-planted-{tag}-"+token), []byte("x"), 0o644)
	_ = os.WriteFile({host:?}, []byte("escaped"), 0o644)
	_ = os.WriteFile("/assay/guard/sitecustomize.py", []byte("import os\n"), 0o644)
}}
"#,
        host = host_path.display().to_string(),
    )
}

/// A Go image whose `ENV` keeps the build cache under root's home
/// (`GOCACHE=/root/.cache/go-build`, as Deep-SWE's Go images do) and whose
/// verifier writes there: its runs write a fresh copy of the home, so the
/// task certifies as an assay task and a gold session resolves. Two
/// hostile sessions plant files there and try a host path and assay's
/// guard: neither sees what the other planted (each run's copy is its
/// own), the host path is never written, and the environment's image
/// keeps nothing of theirs.
#[test]
fn a_go_image_that_keeps_its_build_cache_under_roots_home_certifies_and_no_run_keeps_what_it_wrote_there()
 {
    util::progress::phase(
        "test a_go_image_that_keeps_its_build_cache_under_roots_home_certifies_and_no_run_keeps_what_it_wrote_there",
    );
    base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"ds\"\npath = \"ds\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let ds = p.path().join("ds");
    deep_swe_go_task_in(
        &ds,
        "go-home",
        "ENV GOCACHE=/root/.cache/go-build\n",
        &go_test_sh_with_the_images_cache(),
    );
    let gold = std::fs::read_to_string(ds.join("go-home/solution/solution.patch")).unwrap();
    p.session("gold", "ds/go-home", &gold);
    let escaped = p.path().join("escaped-from-a-run");
    let tag = format!("{}x{}", std::process::id(), line!());
    let repo = ds.join("go-home/environment/repo");
    for s in ["hostile-1", "hostile-2"] {
        write(&repo, "zz_probe.go", &planting_probe(&escaped, &tag, s));
        write(
            &repo,
            "calc.go",
            &format!("{GO_CALC}\nfunc Mul(a, b int) int {{\n\treturn a * b\n}}\n"),
        );
        git_in(&repo, 1, &["add", "-A"]);
        let hostile = git_in(&repo, 1, &["diff", "--cached", "--binary"]);
        git_in(&repo, 1, &["reset", "-q", "--hard"]);
        p.session(s, "ds/go-home", &hostile);
    }

    p.build_json(&[]).code(0);
    let task = released(&p, "ds/go-home");
    assert_eq!(
        task["FAIL_TO_PASS"],
        serde_json::json!(["example.com/calc.TestMul"]),
        "{task:#}"
    );
    let g = grades(&p);
    for s in ["gold.json", "hostile-1.json", "hostile-2.json"] {
        let r = &g[&(s.to_owned(), "exclude".to_owned())];
        assert_eq!(r["verdict"], "resolved", "{s}: {g:#?}");
    }
    assert!(!escaped.exists(), "a run wrote the host path {escaped:?}");
    // No volume the daemon keeps holds what a run planted: each run's copy
    // went with its container.
    let root = Command::new("docker")
        .args(["info", "--format", "{{.DockerRootDir}}"])
        .output()
        .unwrap();
    let volumes = Path::new(String::from_utf8_lossy(&root.stdout).trim()).join("volumes");
    let planted: Vec<_> = std::fs::read_dir(&volumes)
        .unwrap()
        .flatten()
        .filter_map(|v| std::fs::read_dir(v.path().join("_data/.cache")).ok())
        .flatten()
        .flatten()
        .filter(|f| {
            f.file_name()
                .to_string_lossy()
                .starts_with(&format!("assay-planted-{tag}-"))
        })
        .map(|f| f.path())
        .collect();
    assert_eq!(
        planted,
        Vec::<std::path::PathBuf>::new(),
        "a run's file outlived it"
    );
    let env = p.output_record("swe_env:ds/go-home");
    let image = env["image"].as_str().unwrap();
    let kept = Command::new("docker")
        .args([
            "run",
            "--rm",
            "--network",
            "none",
            "--user",
            "0:0",
            "--entrypoint",
            "sh",
        ])
        .args([
            image,
            "-c",
            "ls -a /root/.cache; cat /assay/guard/sitecustomize.py | head -c 200",
        ])
        .output()
        .unwrap();
    let kept = String::from_utf8_lossy(&kept.stdout);
    assert!(
        !kept.contains("assay-planted-"),
        "the image kept a run's file: {kept}"
    );
    assert!(!kept.starts_with("import os\n"), "{kept}");
}

/// A Go image whose `ENV` puts the build cache where no run may write (a
/// root-only directory outside any home): the task is uncertified as an
/// assay task with the permission error and its path in the reason, never
/// `empty_patch_fails`; the dataset's own controls (run as the image's
/// root) certify it.
#[test]
fn a_build_cache_the_run_may_not_write_is_named_in_the_tasks_reason() {
    util::progress::phase("test a_build_cache_the_run_may_not_write_is_named_in_the_tasks_reason");
    base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"ds\"\npath = \"ds\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let ds = p.path().join("ds");
    deep_swe_go_task_in(
        &ds,
        "go-private",
        "RUN mkdir -m 700 /opt/gocache\nENV GOCACHE=/opt/gocache\n",
        &go_test_sh_with_the_images_cache(),
    );
    // Exit 8: every task assay screened found its environment broken.
    let built = p.build_json(&[]).code(8);
    assert!(
        built
            .run
            .stderr
            .contains("permission denied on `/opt/gocache"),
        "{}",
        built.run.stderr
    );
    let (_, lines) = harbor_tasks(&p);
    assert_eq!(by_folder(&lines, "go-private")["certified"], true);
    let text = std::fs::read_to_string(p.path().join("release/tasks.uncertified.jsonl")).unwrap();
    let task = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|t| t["instance_id"] == "ds/go-private")
        .unwrap_or_else(|| panic!("ds/go-private is not uncertified: {text}"));
    let why = task["uncertified_because"].to_string();
    assert!(
        why.contains("environment_broken") && why.contains("permission denied on `/opt/gocache"),
        "{why}"
    );
    assert!(!why.contains("empty_patch_fails"), "{why}");
}

/// A Deep-SWE-shaped task assay certified, exported as a Harbor task
/// folder (its environment the image assay screened it in, its verifier
/// assay's): Harbor's own CLI lints it, its oracle scores 1 and its no-op
/// 0, offline; the two jobs come back as sessions and are graded by the
/// build as assay grades them.
#[test]
fn an_exported_deep_swe_task_passes_harbors_oracle_fails_its_no_op_and_comes_back_graded() {
    util::progress::phase(
        "test an_exported_deep_swe_task_passes_harbors_oracle_fails_its_no_op_and_comes_back_graded",
    );
    base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"ds\"\npath = \"ds\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let ds = p.path().join("ds");
    deep_swe_task(&ds, "calc-3", &["tests.test_mul.MulTest.test_mul"], &[]);
    std::fs::create_dir_all(p.path().join("sessions")).unwrap();
    p.build_json(&[]).code(0);
    let digest = released(&p, "ds/calc-3")["digest"]
        .as_str()
        .unwrap()
        .to_owned();

    let dataset = p.path().join("harbor-tasks");
    let out = p
        .run(&["export", "--harbor", dataset.to_str().unwrap()])
        .code(0);
    assert!(out.stdout.contains("1 certified task"), "{}", out.stdout);
    let folder = std::fs::read_dir(&dataset)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .next()
        .unwrap();
    let toml = std::fs::read_to_string(folder.join("task.toml")).unwrap();
    assert!(
        toml.contains(&format!("assay_digest = \"{digest}\"")),
        "{toml}"
    );
    util::harbor::harbor_cli(
        p.path(),
        &[
            "lint",
            "--ignore",
            "shared-verifier",
            folder.to_str().unwrap(),
        ],
    );

    let nonet = p.path().join("nonet.yaml");
    std::fs::write(&nonet, "services:\n  main:\n    network_mode: none\n").unwrap();
    let jobs = p.path().join("sessions/harbor");
    for (agent, want) in [("oracle", 1.0), ("nop", 0.0)] {
        util::harbor::harbor_cli(
            p.path(),
            &[
                "run",
                "-p",
                dataset.to_str().unwrap(),
                "-a",
                agent,
                "-e",
                "docker",
                "-n",
                "1",
                "-o",
                jobs.to_str().unwrap(),
                "--job-name",
                agent,
                "-y",
                "--extra-docker-compose",
                nonet.to_str().unwrap(),
            ],
        );
        let trial = std::fs::read_dir(jobs.join(agent))
            .unwrap()
            .flatten()
            .find(|e| e.path().join("result.json").is_file())
            .unwrap()
            .path();
        let result: Value =
            serde_json::from_slice(&std::fs::read(trial.join("result.json")).unwrap()).unwrap();
        assert_eq!(
            result["verifier_result"]["rewards"]["reward"].as_f64(),
            Some(want),
            "{agent}: {result:#}"
        );
        let verdict: Value = serde_json::from_slice(
            &std::fs::read(trial.join("verifier/assay-verdict.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            verdict["digest"].as_str(),
            Some(digest.as_str()),
            "{verdict:#}"
        );
    }

    p.build_json(&[]).code(0);
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    for (agent, resolved) in [("oracle", 1), ("nop", 0)] {
        let t = &summary["trials"][format!("harbor:harbor/{agent}")];
        assert_eq!(t["graded"].as_u64(), Some(1), "{t:#}");
        let a = &summary["agents"][format!("{agent}/none")];
        assert_eq!(
            (a["n"].as_u64(), a["resolved"].as_u64()),
            (Some(1), Some(resolved)),
            "{a:#}"
        );
    }
}
