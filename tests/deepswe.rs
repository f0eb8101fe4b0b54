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

const TEST_SH: &str = "#!/bin/bash
set -uo pipefail
mkdir -p /logs/verifier
cd /app || exit 6
git apply --whitespace=nowarn /tests/test.patch || exit 1
python3 /tests/ctrf_runner.py /logs/verifier/new-ctrf.json
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
            "FROM assay-base:bookworm\nUSER root\nCOPY repo /app\nWORKDIR /app\n".to_owned(),
        ),
        ("tests/config.json", config),
        ("tests/test.patch", test_patch),
        ("tests/test.sh", TEST_SH.to_owned()),
        ("tests/ctrf_runner.py", CTRF_RUNNER.to_owned()),
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
