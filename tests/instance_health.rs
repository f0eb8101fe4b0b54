//! The dataset-health report of SWE-bench-family instances
//! (docs/instances.md, "The dataset-health report") on the real Docker
//! daemon, over instances in SWE-rebench's shape (its `install_config`
//! and `meta`; its image under the family's published name,
//! `swerebench/sweb.eval.x86_64.<id, `__` as `_1776_`>`): one instance
//! whose lists hold, one whose PASS_TO_PASS lists tests that pass or fail
//! by `/dev/urandom`, so the readings of `repeats = 3` differ. The flaky
//! tests are listed as `flaky` disagreements in the task and in
//! summary.json's `instances`, per instance and per repository; every
//! figure the report's section shows is answered by `assay explain`; a
//! second build executes nothing. Beside it, the other families' images
//! and specs (docs/instances.md, "The environment", "The row's own
//! spec"): a Multi-SWE-bench row found under `mswebench/<org>_m_<repo>:
//! pr-<n>`, its image in that family's layout (the repository at
//! `/home/<repo>`, the patches beside it, gone before any run), a SWE-Gym row under `xingyaoww/…_s_…`, and a SWE-rebench row
//! whose own `install_config.test_cmd` is the command run.
//!
//! Fails, never skips, without the daemon.

#![allow(clippy::unwrap_used)]

mod util;

use serde_json::{Value, json};
use util::instances::{
    CALC, Image, Repo, TEST_CALC, TEST_MUL, disagreements, django, released, repository, row,
    sneak, verdict, write,
};

/// Coin tests: each passes or fails by a byte of `/dev/urandom`. Each is
/// read three times in two states; that none of six differs in either
/// state has a chance of 16^-6.
const COINS: usize = 6;

fn coin_file() -> String {
    let mut text =
        "import os\nimport unittest\n\n\nclass CoinTest(unittest.TestCase):\n".to_owned();
    for i in 0..COINS {
        text.push_str(&format!(
            "    def test_coin_{i}(self):\n        self.assertEqual(os.urandom(1)[0] % 2, 0)\n\n"
        ));
    }
    text
}

/// The repository's test patch (`MulTest`) with `tests/test_coin.py` added.
fn with_coins(dir: &std::path::Path, r: &Repo) -> String {
    let git = |args: &[&str]| util::git::git_in(dir, 1, args);
    let tests = format!("{TEST_CALC}{TEST_MUL}");
    write(dir, "tests/test_calc.py", &tests);
    write(dir, "tests/test_coin.py", &coin_file());
    git(&["add", "-A"]);
    let patch = git(&["diff", "--cached", "--binary", &r.base]);
    git(&["reset", "-q", "--hard", &r.base]);
    patch
}

/// A row in SWE-rebench's shape: SWE-bench's fields and its own
/// `install_config` and `meta`.
fn rebench_row(id: &str, r: &Repo, test_patch: &str, f2p: &[String], p2p: &[String]) -> String {
    row(
        id,
        r,
        f2p,
        p2p,
        &[
            ("test_patch", Value::from(test_patch)),
            (
                "install_config",
                json!({"python": "3.11", "install": "pip install -e .", "test_cmd": "pytest -rA"}),
            ),
            ("meta", json!({"llm_score": {"difficulty_score": 1}})),
        ],
    )
}

#[test]
fn swe_rebench_instances_with_a_flaky_listed_test_get_a_dataset_health_report() {
    util::progress::phase(
        "test swe_rebench_instances_with_a_flaky_listed_test_get_a_dataset_health_report",
    );
    util::harbor::base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 3\n\n[[instances]]\nname = \"rb\"\npath = \"instances.jsonl\"\n",
    );
    let build = p.path().join("image");
    let r = repository(&build.join("repo"));
    let coins_patch = with_coins(&build.join("repo"), &r);
    let suffix = format!("{:x}", std::process::id());
    let (clean, flaky) = (
        format!("acme__calc-{suffix}-1"),
        format!("acme__calc-{suffix}-2"),
    );
    let published = |id: &str| {
        format!(
            "swerebench/sweb.eval.x86_64.{}:latest",
            id.replace("__", "_1776_")
        )
    };
    let _image = Image::build(&build, &[&published(&clean), &published(&flaky)]);

    const ADD: &str = "test_calc.CalcTest.test_add";
    const SUB: &str = "test_calc.CalcTest.test_sub";
    const MUL: &str = "test_calc.MulTest.test_mul";
    let coins: Vec<String> = (0..COINS)
        .map(|i| django(&format!("test_coin.CoinTest.test_coin_{i}")))
        .collect();
    let f2p = vec![django(MUL)];
    let p2p = vec![django(ADD), django(SUB)];
    let flaky_p2p: Vec<String> = p2p.iter().chain(&coins).cloned().collect();
    p.write(
        "instances.jsonl",
        [
            rebench_row(&clean, &r, &r.test_patch, &f2p, &p2p),
            rebench_row(&flaky, &r, &coins_patch, &f2p, &flaky_p2p),
        ]
        .join("\n"),
    );

    // A gold session, graded on the clean instance's task.
    let (task_clean, task_flaky) = (format!("rb/{clean}"), format!("rb/{flaky}"));
    p.session("gold", &task_clean, &r.gold_patch);

    let first = p.build_json(&[]).code(0);
    assert_eq!(first.summary.by_kind["instance"].executed, 2);
    assert_eq!(
        p.output_record(&format!("instance:{task_flaky}"))["image_name"],
        published(&flaky).as_str(),
        "found under SWE-rebench's published name"
    );

    // The task records: the family inferred from the rows, the coins flaky.
    let t1 = released(&p, &task_clean);
    assert_eq!(t1["dataset"]["family"], "swe-rebench", "{t1:#}");
    assert_eq!(t1["certified"], true, "{t1:#}");
    assert!(disagreements(&t1).is_empty(), "{t1:#}");
    let t2 = released(&p, &task_flaky);
    let found = disagreements(&t2);
    // A coin that came up the same in every reading of both states is not
    // flaky: failing throughout with the gold patch, it fails at gold.
    for (test, list, kind) in &found {
        assert!(
            coins.contains(test)
                && list == "PASS_TO_PASS"
                && (kind == "flaky" || kind == "fails_at_gold"),
            "only the coins disagree: {found:?}"
        );
    }
    let flaky_found = found.iter().filter(|(_, _, k)| k == "flaky").count();
    assert!(flaky_found > 0, "{found:?}");

    // summary.json's dataset-health report.
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    let health = &summary["instances"];
    let one = &health["tasks"][&task_clean];
    assert_eq!(one["certified"], true, "{health:#}");
    assert_eq!(one["family"], "swe-rebench");
    assert_eq!(one["repo"], "django/django");
    assert_eq!(
        one["disagreements"],
        json!({"passes_at_base": 0, "fails_at_gold": 0, "flaky": 0, "never_ran": 0})
    );
    for state in ["base", "test", "gold"] {
        for reading in ["r0", "r1", "r2"] {
            let s = one["seconds"][state][reading].as_f64();
            assert!(s.is_some_and(|s| s > 0.0), "{state} {reading}: {one:#}");
        }
    }
    let two = &health["tasks"][&task_flaky];
    assert_eq!(two["disagreements"]["flaky"], flaky_found, "{two:#}");
    assert_eq!(
        two["disagreements"]["fails_at_gold"],
        found.len() - flaky_found,
        "{two:#}"
    );
    assert!(
        two["flaky"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t.as_str().unwrap().contains("test_coin_")),
        "assay's own flaky tests are listed: {two:#}"
    );
    let repo = &health["repos"]["django/django"];
    assert_eq!(repo["instances"], 2, "{health:#}");
    assert_eq!(repo["screened"], 2);
    assert_eq!(repo["disagreements"]["flaky"], flaky_found);
    assert_eq!(repo["instances_with"]["flaky"], 1);
    assert_eq!(health["total"], *repo);

    // The report's section, linked from the funnel, every figure named
    // and answered by `assay explain`.
    let html = std::fs::read_to_string(p.path().join("release/report.html")).unwrap();
    assert!(
        html.contains("<h2 id=\"datasets\">Dataset health</h2>")
            && html.contains("href=\"#datasets\""),
        "the report has the section, linked"
    );
    util::figures::explained(
        &p,
        &[],
        &p.path().join("release"),
        10,
        &[
            "summary.instances.repos[django/django].disagreements.flaky",
            &format!("summary.instances.tasks[{task_flaky}].seconds.gold.r2"),
            "summary.instances.total.certified",
        ],
    );

    let again = p.build_json(&[]).code(0);
    assert_eq!(
        again.summary.total.executed, 0,
        "{:#?}",
        again.summary.by_kind
    );
}

const JS_CALC: &str = "exports.add = (a, b) => a + b;\n";
const JS_TEST: &str = "\
const test = require('node:test');
const assert = require('node:assert');
const calc = require('../calc');

test('adds', () => { assert.strictEqual(calc.add(2, 3), 5); });
";
const JS_MUL_TEST: &str = "test('muls', () => { assert.strictEqual(calc.mul(3, 4), 12); });\n";

/// A JavaScript repository in the shape of Multi-SWE-bench's: its base,
/// the test patch (`muls`) and the gold patch (`calc.mul`).
fn js_repository(dir: &std::path::Path) -> Repo {
    std::fs::create_dir_all(dir).unwrap();
    let git = |args: &[&str]| util::git::git_in(dir, 1, args);
    git(&["init", "-q", "-b", "main"]);
    write(dir, "calc.js", JS_CALC);
    write(dir, "test/calc.test.js", JS_TEST);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    let base = git(&["rev-parse", "HEAD"]).trim().to_owned();
    write(dir, "test/calc.test.js", &format!("{JS_TEST}{JS_MUL_TEST}"));
    git(&["add", "-A"]);
    let test_patch = git(&["diff", "--cached", "--binary", &base]);
    git(&["reset", "-q", "--hard", &base]);
    write(
        dir,
        "calc.js",
        &format!("{JS_CALC}exports.mul = (a, b) => a * b;\n"),
    );
    let gold_patch = git(&["diff", "--binary", &base]);
    git(&["reset", "-q", "--hard", &base]);
    Repo {
        base,
        test_patch,
        gold_patch,
    }
}

/// A JavaScript instance (a repository SWE-bench's spec does not run) in
/// Multi-SWE-bench's row shape (`org`, `repo`, `number`, `base.sha`,
/// `fix_patch`, `f2p_tests` / `p2p_tests` keyed by test name; no
/// `instance_id`, no image name) and an image with Debian's Node tagged
/// as Multi-SWE-bench names its images (`mswebench/<org>_m_<repo>:pr-<n>`):
/// the family inferred, the image found under that name, screened with the
/// pipeline's `test_command` and `report` (node's own runner, TAP),
/// certified, its lists agreeing, and in the dataset-health report.
#[test]
fn a_multi_swe_bench_row_is_found_under_its_family_name_and_certified() {
    util::progress::phase(
        "test a_multi_swe_bench_row_is_found_under_its_family_name_and_certified",
    );
    util::harbor::node_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[[instances]]\nname = \"ms\"\npath = \"instances.json\"\ntest_command = \"node --test --test-reporter=tap test/\"\nreport = \"tap\"\n",
    );
    let build = p.path().join("image");
    let r = js_repository(&build.join("repo"));
    let repo = format!("jscalc{:x}", std::process::id());
    let image = format!("mswebench/acme_m_{repo}:pr-7");
    // Multi-SWE-bench's layout: `WORKDIR /home/`, the repository at
    // `/home/<repo>`, the pull request's patches beside it.
    write(&build, "fix.patch", &r.gold_patch);
    write(&build, "test.patch", &r.test_patch);
    let _image = Image::build_with(
        &format!(
            "FROM {}\nUSER root\nWORKDIR /home/\nCOPY repo /home/{repo}\nCOPY fix.patch test.patch /home/\n",
            util::harbor::NODE_IMAGE
        ),
        &build,
        &[&image],
    );
    let task = format!("ms/acme__{repo}-7");
    p.session("gold", &task, &r.gold_patch);
    p.session("peek", &task, &peeking_patch(&build.join("repo")));
    let test = |run: &str| json!({"run": run, "test": run, "fix": "PASS"});
    let one = json!({
        "org": "acme",
        "repo": repo,
        "number": 7,
        "state": "closed",
        "title": "Add mul",
        "body": "",
        "base": {"label": "acme:main", "ref": "main", "sha": r.base},
        "resolved_issues": [{"number": 6, "title": "Add `calc.mul(a, b)`", "body": "Please."}],
        "fix_patch": r.gold_patch,
        "test_patch": r.test_patch,
        "fixed_tests": {"muls": test("NONE")},
        "p2p_tests": {"adds": test("PASS")},
        "f2p_tests": {},
        "s2p_tests": {},
        "n2p_tests": {"muls": test("NONE")},
    });
    // A JSON array, not JSONL.
    p.write("instances.json", json!([one]).to_string());

    p.build_json(&[]).code(0);
    let record = p.output_record(&format!("instance:{task}"));
    assert_eq!(record["family"], "multi-swe-bench", "{record:#}");
    assert_eq!(record["workdir"], format!("/home/{repo}"), "{record:#}");
    assert_eq!(
        record["removed"],
        json!(["/home/fix.patch", "/home/test.patch"]),
        "{record:#}"
    );
    assert_ne!(record["found_image"], record["image"], "{record:#}");
    // The gold patch resolves; code that looks for the image's copy of
    // it finds nothing.
    assert_eq!(verdict(&p, "gold.json"), "resolved");
    assert_eq!(verdict(&p, "peek.json"), "unresolved");
    assert_eq!(record["names_tried"], json!([image]), "{record:#}");
    assert_eq!(record["image_name"], image.as_str(), "{record:#}");
    assert_eq!(record["test_command"]["from"], "pipeline", "{record:#}");
    let t = released(&p, &task);
    assert_eq!(t["certified"], true, "{t:#}");
    assert_eq!(t["FAIL_TO_PASS"], json!(["muls"]), "{t:#}");
    assert_eq!(t["dataset"]["FAIL_TO_PASS"], json!(["muls"]), "{t:#}");
    assert!(disagreements(&t).is_empty(), "{t:#}");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    let in_repo = &summary["instances"]["repos"][&format!("acme/{repo}")];
    assert_eq!(
        (in_repo["instances"].clone(), in_repo["certified"].clone()),
        (json!(1), json!(1)),
        "{summary:#}"
    );
    assert!(
        summary["instances"]["tasks"][&task]["seconds"]["gold"]["r0"]
            .as_f64()
            .is_some_and(|s| s > 0.0),
        "{summary:#}"
    );
}

const ADD: &str = "test_calc.CalcTest.test_add";
const SUB: &str = "test_calc.CalcTest.test_sub";
const MUL: &str = "test_calc.MulTest.test_mul";

/// A patch whose `calc.js` defines `mul` only when it can read the image's
/// copy of the gold patch (`/home/fix.patch`) or of the test patch.
fn peeking_patch(repo: &std::path::Path) -> String {
    let git = |args: &[&str]| util::git::git_in(repo, 1, args);
    write(
        repo,
        "calc.js",
        &format!(
            "{JS_CALC}for (const f of ['/home/fix.patch', '/home/test.patch']) {{\n  try {{\n    if (require('fs').readFileSync(f, 'utf8').includes('a * b')) exports.mul = (a, b) => a * b;\n  }} catch (e) {{}}\n}}\n"
        ),
    );
    let patch = git(&["diff", "--binary"]);
    git(&["checkout", "--", "calc.js"]);
    patch
}

/// A project of one `[[instances]]` file `instances.jsonl` (`family`
/// given, or inferred), the Python repository's image tagged `image`, and
/// one row over it, `row(id, repo, f2p, p2p)`; built once.
fn one_row_project(
    family: Option<&str>,
    image: impl Fn(&str) -> String,
    row: impl Fn(&str, &Repo, &[String], &[String]) -> String,
) -> (util::Project, String, Image) {
    util::harbor::base_image();
    let family = family.map_or(String::new(), |f| format!("family = \"{f}\"\n"));
    let p = util::Project::new().pipeline(&format!(
        "cache = \"cache\"\nrelease = \"release\"\n\n[[instances]]\nname = \"ds\"\npath = \"instances.jsonl\"\n{family}"
    ));
    let build = p.path().join("image");
    let r = repository(&build.join("repo"));
    let id = format!("acme__calc-{:x}", std::process::id());
    let built = Image::build(&build, &[&image(&id)]);
    let (f2p, p2p) = (vec![django(MUL)], vec![django(ADD), django(SUB)]);
    p.write("instances.jsonl", row(&id, &r, &f2p, &p2p));
    p.build_json(&[]).code(0);
    (p, format!("ds/{id}"), built)
}

/// A SWE-Gym row (SWE-bench's schema, `family = "swe-gym"`) found under
/// SWE-Gym's image name (`xingyaoww/sweb.eval.x86_64.<id, `__` as `_s_`>`)
/// and certified by SWE-bench's spec.
#[test]
fn a_swe_gym_row_is_found_under_its_family_name() {
    util::progress::phase("test a_swe_gym_row_is_found_under_its_family_name");
    let image = |id: &str| format!("xingyaoww/sweb.eval.x86_64.{}", id.replace("__", "_s_"));
    let (p, task, _image) = one_row_project(Some("swe-gym"), image, |id, r, f2p, p2p| {
        row(id, r, f2p, p2p, &[])
    });
    let record = p.output_record(&format!("instance:{task}"));
    let id = task.trim_start_matches("ds/");
    assert_eq!(record["family"], "swe-gym", "{record:#}");
    assert_eq!(record["image_name"], image(id).as_str(), "{record:#}");
    assert_eq!(record["names_tried"][1], image(id).as_str(), "{record:#}");
    assert_eq!(
        record["test_command"]["from"], "swe-bench-spec",
        "{record:#}"
    );
    let t = released(&p, &task);
    assert_eq!(t["certified"], true, "{t:#}");
    assert!(disagreements(&t).is_empty(), "{t:#}");
}

/// A SWE-rebench row whose own `install_config` names a test command (a
/// list, run as written) and `parse_log_django`: that command runs, not
/// SWE-bench's spec's. It leaves `test_sub` out, so the row's
/// `PASS_TO_PASS` test `test_sub` is `never_ran`, which the spec's command
/// (the whole module) would have run.
#[test]
fn a_swe_rebench_rows_own_test_command_is_the_one_run() {
    util::progress::phase("test a_swe_rebench_rows_own_test_command_is_the_one_run");
    let command = "./tests/runtests.py --verbosity 2 test_calc.MulTest test_calc.CalcTest.test_add";
    let image = |id: &str| {
        format!(
            "swerebench/sweb.eval.x86_64.{}:latest",
            id.replace("__", "_1776_")
        )
    };
    let (p, task, _image) = one_row_project(None, image, |id, r, f2p, p2p| {
        let config = json!({"test_cmd": [command], "log_parser": "parse_log_django"});
        row(id, r, f2p, p2p, &[("install_config", config)])
    });
    let t = released(&p, &task);
    assert_eq!(
        disagreements(&t),
        [(
            django(SUB),
            "PASS_TO_PASS".to_owned(),
            "never_ran".to_owned()
        )],
        "the row's own command ran: {t:#}"
    );
    let record = p.output_record(&format!("instance:{task}"));
    assert_eq!(record["family"], "swe-rebench", "{record:#}");
    assert_eq!(
        (
            record["test_command"]["from"].clone(),
            record["test_command"]["command"].clone(),
            record["test_command"]["report"].clone()
        ),
        (json!("install_config"), json!(command), json!("unittest")),
        "{record:#}"
    );
}

/// A SWE-smith row (no test patch; its `patch` the bug; its image holding
/// the repository clean at the commit its `repo` names, found under the
/// row's `image_name`): the task is made from the image with the bug
/// applied, its gold the way back; the lists hold (`test_sub` fails with
/// the bug, passes clean); the gold and empty predictions are resolved
/// and unresolved, and code that reads the clean file from the image's
/// repository (`git show HEAD:calc.py`) finds none.
#[test]
fn a_swe_smith_row_is_the_bug_applied_to_its_clean_image() {
    util::progress::phase("test a_swe_smith_row_is_the_bug_applied_to_its_clean_image");
    util::harbor::base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[[instances]]\nname = \"sm\"\npath = \"instances.jsonl\"\ntest_command = \"./tests/runtests.py --verbosity 2 test_calc\"\nreport = \"unittest\"\n",
    );
    let build = p.path().join("image");
    let dir = build.join("repo");
    let r = repository(&dir);
    let git = |args: &[&str]| util::git::git_in(&dir, 1, args);
    // The bug, the way back and a peek, each against the bug's tree.
    let buggy = CALC.replace("return a - b", "return a + b");
    write(&dir, "calc.py", &buggy);
    let bug = git(&["diff", "--binary"]);
    git(&["add", "calc.py"]);
    write(&dir, "calc.py", CALC);
    let fix = git(&["diff", "--binary"]);
    write(
        &dir,
        "calc.py",
        &format!("{buggy}\n{}", sneak("HEAD:calc.py", "a - b")),
    );
    let peek = git(&["diff", "--binary"]);
    git(&["reset", "-q", "--hard"]);
    assert_eq!(git(&["rev-parse", "HEAD"]).trim(), r.base);
    let pid = format!("{:x}", std::process::id());
    let commit8 = &r.base[..8];
    let image = format!("swebench/swesmith.x86_64.acme_1776_calc{pid}.{commit8}");
    let _image = Image::build(&build, &[&image]);
    let id = format!("acme__calc{pid}.{commit8}.func_pm_op_swap__1");
    let one = json!({
        "instance_id": id,
        "repo": format!("swesmith/acme__calc{pid}.{commit8}"),
        "patch": bug,
        "FAIL_TO_PASS": [django(SUB)],
        "PASS_TO_PASS": [django(ADD)],
        "created_at": "2026-01-05T10:00:00",
        "image_name": image,
        "base_commit": "b".repeat(40),
        "problem_statement": "`calc.sub(5, 3)` gives 8.",
    });
    p.write("instances.jsonl", one.to_string());
    let task = format!("sm/{id}");
    p.session("fix", &task, &fix);
    p.session("empty", &task, "");
    p.session("peek", &task, &peek);

    p.build_json(&[]).code(0);
    let record = p.output_record(&format!("instance:{task}"));
    assert_eq!(record["family"], "swe-smith", "{record:#}");
    assert_eq!(record["bug_applied"], true, "{record:#}");
    assert_ne!(record["found_image"], record["image"], "{record:#}");
    let t = released(&p, &task);
    assert_eq!(t["certified"], true, "{t:#}");
    assert_eq!(t["FAIL_TO_PASS"], json!([django(SUB)]), "{t:#}");
    assert!(disagreements(&t).is_empty(), "{t:#}");
    assert!(
        t["patch"].as_str().unwrap().contains("+    return a - b"),
        "the gold is the way back from the bug: {t:#}"
    );
    assert_eq!(verdict(&p, "fix.json"), "resolved");
    assert_eq!(verdict(&p, "empty.json"), "unresolved");
    assert_eq!(verdict(&p, "peek.json"), "unresolved");
    assert_eq!(p.build_json(&[]).summary.total.executed, 0);
}
