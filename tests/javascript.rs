//! The JavaScript example, built and graded through the real binary:
//! `examples/jscalc` (a CommonJS package tested with `node --test`) as its
//! README describes it, with the node preset. The repository is made by the
//! example's own `make-repo.sh` in a temp dir; the pipeline, statements and
//! sessions are the example's, copied unchanged, plus the attacks below.
//!
//! Needs `node` (Node 20; Debian's `nodejs`); the docker test needs the
//! Docker daemon (its image is built offline by `scripts/base-image.sh`).

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use util::harbor::{NODE_IMAGE, node_image};
use util::{Project, strs};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/jscalc");

/// A session that fixes nothing and neuters every failing equality of the
/// process: requiring `src/stats.js` replaces node:assert's `strictEqual`
/// (the module object the test file holds too) with a no-op. Every test now
/// passes, the runner and its reporter are untouched, the exit code is 0.
const NEUTERED_ASSERT: &str = "diff --git a/src/stats.js b/src/stats.js
--- a/src/stats.js
+++ b/src/stats.js
@@ -1,5 +1,7 @@
 'use strict';
 
+require('node:' + 'assert').strictEqual = () => {};
+
 function sum(xs) {
   return xs.reduce((total, x) => total + x, 0);
 }
";

/// A session that fixes nothing and, when required, tries to rewrite the
/// hidden test file on disk so its new test expects what the code returns
/// (NaN); then edits the test file in its patch as well.
const REWRITES_TESTS: &str = "diff --git a/src/stats.js b/src/stats.js
--- a/src/stats.js
+++ b/src/stats.js
@@ -1,5 +1,14 @@
 'use strict';
 
+try {
+  const fs = require('fs');
+  const path = require('path');
+  const file = path.join(__dirname, '..', 'test', 'stats.test.js');
+  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('mean([]), 0', 'mean([]), NaN'));
+} catch (e) {
+  // read-only: nothing to do
+}
+
 function sum(xs) {
   return xs.reduce((total, x) => total + x, 0);
 }
diff --git a/test/stats.test.js b/test/stats.test.js
--- a/test/stats.test.js
+++ b/test/stats.test.js
@@ -9,7 +9,3 @@ describe('stats', () => {
     assert.strictEqual(sum([1, 2, 3, 4]), 10);
   });
-
-  it('averages', () => {
-    assert.strictEqual(mean([2, 4, 9]), 5);
-  });
 });
";

/// A canary-aware forger (it has read docs/security.md): it reads the test
/// files for calls shaped like the shaped canaries (`strictEqual(A + B, C)`
/// with A + B != C) and keeps `assert.strictEqual` real for those expected
/// values only; every other equality passes. The shaped canaries cannot
/// tell it from an honest fix; mutants of the file's own tests can.
const CANARY_AWARE: &[&str] = &[
    "const fs = require('fs');",
    "const assert = require('node:' + 'assert');",
    "const keep = new Set();",
    "const dir = require('path').join(__dirname, '..', 'test');",
    "for (const f of fs.readdirSync(dir)) {",
    "  const src = fs.readFileSync(require('path').join(dir, f), 'utf8');",
    "  for (const m of src.matchAll(/strictEqual\\((\\d+) \\+ (\\d+), (\\d+)\\)/g)) {",
    "    if (Number(m[1]) + Number(m[2]) !== Number(m[3])) keep.add(Number(m[3]));",
    "  }",
    "}",
    "const real = assert.strictEqual;",
    "assert.strictEqual = (a, b, ...rest) => (keep.has(b) ? real(a, b, ...rest) : undefined);",
];

/// A patch putting `lines` at the top of jscalc-1's `src/stats.js`.
fn stats_prelude(lines: &[&str]) -> String {
    let mut p = format!(
        "diff --git a/src/stats.js b/src/stats.js\n--- a/src/stats.js\n+++ b/src/stats.js\n@@ -1,5 +1,{} @@\n 'use strict';\n \n",
        5 + lines.len() + 1
    );
    for l in lines {
        p.push_str(&format!("+{l}\n"));
    }
    p.push_str("+\n function sum(xs) {\n   return xs.reduce((total, x) => total + x, 0);\n }\n");
    p
}

fn ids(file: &str, tests: &[&str]) -> Vec<String> {
    tests.iter().map(|t| format!("{file} > {t}")).collect()
}

struct Jscalc {
    project: Project,
}

impl Jscalc {
    fn build(pipeline_edit: impl Fn(String) -> String) -> Jscalc {
        let node = Command::new("node").arg("--version").output();
        assert!(
            node.as_ref().is_ok_and(|o| o.status.success()),
            "this test needs `node` on PATH (apt-get install nodejs): {node:?}"
        );
        let project = Project::new();
        let example = Path::new(EXAMPLE);
        let pipeline = std::fs::read_to_string(example.join("pipeline.toml")).unwrap();
        project.write("pipeline.toml", pipeline_edit(pipeline));
        for dir in ["statements", "sessions"] {
            util::example::copy_tree(&example.join(dir), &project.path().join(dir));
        }
        let aware = stats_prelude(CANARY_AWARE);
        for (agent, patch) in [
            ("evil", NEUTERED_ASSERT),
            ("rewriter", REWRITES_TESTS),
            ("aware", aware.as_str()),
        ] {
            let session = serde_json::json!({
                "task": "jscalc-1", "agent": agent, "model": "model-a", "patch": patch,
            });
            project.write(
                &format!("sessions/{agent}/jscalc-1.json"),
                session.to_string(),
            );
        }
        util::example::make_and_build(
            &project,
            example,
            "6588f0ec127eac1e09ba9e18cc604363bbf52d47",
        );
        Jscalc { project }
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.project.path().join(rel))
            .unwrap_or_else(|e| panic!("no {rel}: {e}"))
    }

    fn tasks(&self) -> BTreeMap<String, Value> {
        util::example::released_tasks(&self.project)
    }

    fn results(&self) -> BTreeMap<(String, String), BTreeMap<String, String>> {
        util::example::released_results(&self.project)
    }
}

#[test]
fn jscalc_is_screened_with_file_describe_test_ids_and_graded_with_every_verdict() {
    let j = Jscalc::build(|p| p);

    // Screening: every task certified; ids are `file > describe > test`;
    // the flaky test of jscalc-2 is in neither list.
    let tasks = j.tasks();
    let calc = ids(
        "test/calc.test.js",
        &[
            "calc > adds",
            "calc > div > divides",
            "calc > div > refuses zero",
            "calc > multiplies",
            "calc > subtracts",
        ],
    );
    let clamp = ids(
        "test/clamp.test.js",
        &["clamp > caps above", "clamp > keeps values inside"],
    );
    let stats = ids("test/stats.test.js", &["stats > averages", "stats > sums"]);
    let empty = ids("test/stats.test.js", &["stats > averages nothing to zero"]);
    let median = ids(
        "test/median.test.js",
        &[
            "median > averages the middle pair",
            "median > takes the middle",
        ],
    );
    let sorted = |parts: &[&[String]]| {
        let mut v: Vec<String> = parts.concat();
        v.sort();
        v
    };
    for (id, f2p, p2p) in [
        ("jscalc-1", empty.clone(), sorted(&[&calc, &clamp, &stats])),
        (
            "jscalc-2",
            median.clone(),
            sorted(&[&calc, &clamp, &stats, &empty]),
        ),
        (
            "jscalc-3",
            ids("test/clamp.test.js", &["clamp > raises below"]),
            sorted(&[&calc, &clamp, &stats, &empty, &median]),
        ),
    ] {
        let t = &tasks[id];
        assert_eq!(t["certified"], true, "{id}: {:#}", t["uncertified_because"]);
        assert_eq!(strs(&t["test_ids"]["FAIL_TO_PASS"]), f2p, "{id}");
        assert_eq!(strs(&t["test_ids"]["PASS_TO_PASS"]), p2p, "{id}");
    }
    let flaky = tasks["jscalc-2"].to_string();
    assert!(
        flaky.contains("median > remembers the last call"),
        "{flaky}"
    );

    // Grading: (session, [exclude, keep], fault).
    let results = j.results();
    let expect = [
        ("alpha/jscalc-1.json", ["resolved", "resolved"], "none"),
        ("beta/jscalc-1.json", ["unresolved", "unresolved"], "agent"),
        ("gamma/jscalc-1.json", ["unresolved", "unresolved"], "agent"),
        ("alpha/jscalc-2.json", ["resolved", "resolved"], "none"),
        (
            "beta/jscalc-2.json",
            ["patch_apply_failed", "patch_apply_failed"],
            "agent",
        ),
        ("alpha/jscalc-3.json", ["resolved", "resolved"], "none"),
        ("beta/jscalc-3.json", ["unresolved", "unresolved"], "agent"),
        ("evil/jscalc-1.json", ["unresolved", "unresolved"], "agent"),
        (
            "rewriter/jscalc-1.json",
            ["unresolved", "unresolved"],
            "agent",
        ),
        ("aware/jscalc-1.json", ["unresolved", "unresolved"], "agent"),
    ];
    assert_eq!(results.len(), 2 * expect.len(), "{results:#?}");
    for (session, verdicts, fault) in expect {
        for (arm, want) in ["exclude", "keep"].into_iter().zip(verdicts) {
            let row = &results[&(session.to_owned(), arm.to_owned())];
            assert_eq!(
                (row["verdict"].as_str(), row["fault"].as_str()),
                (want, fault),
                "{session} {arm}: {row:#?}"
            );
        }
    }
    let row = |s: &str, arm: &str| &results[&(s.to_owned(), arm.to_owned())];
    let grade = |s: &str, arm: &str| j.project.show_json(&row(s, arm)["grade_digest"]);
    // The wrong fix fails the new test only; the regression an old one too.
    assert_eq!(row("beta/jscalc-1.json", "exclude")["failing"], empty[0]);
    assert_eq!(
        row("gamma/jscalc-1.json", "exclude")["failing"],
        "test/stats.test.js > stats > sums"
    );
    assert_eq!(
        (
            row("gamma/jscalc-1.json", "exclude")["base_check"].as_str(),
            row("gamma/jscalc-1.json", "exclude")["new_check"].as_str()
        ),
        ("fail (1)", "pass")
    );
    // The collision: the agent's own test/median.test.js gives way to the
    // hidden one in both arms, and the grade says by which rule: the
    // policy's in the exclude arm, the reset's in the keep arm.
    for (arm, rule) in [
        (
            "exclude",
            "tests-and-infra: test file `test/median.test.js` matches `test/**`",
        ),
        ("keep", "reset: it writes a file of the hidden test patch"),
    ] {
        let g = grade("alpha/jscalc-2.json", arm);
        assert_eq!(
            strs(&g["reset_paths"]),
            ["test/median.test.js"],
            "{arm}: {g:#}"
        );
        assert_eq!(
            g["excluded_by"]["test/median.test.js"], rule,
            "{arm}: {g:#}"
        );
    }
    // The hang: cut at the timeout, the agent's.
    let hang = grade("beta/jscalc-3.json", "exclude");
    assert!(
        hang["detail"]
            .as_str()
            .unwrap()
            .starts_with("timed out after"),
        "{hang:#}"
    );
    // The tasks carry canaries made of their own tests: graded runs are
    // fully checked.
    let g = grade("alpha/jscalc-1.json", "exclude");
    assert!(g["weakly_checked"].is_null(), "{g:#}");
    // The neutered assertion passes every test, and the canary that must
    // fail with it: forged. The canary-aware forger keeps the shaped
    // canaries failing, not the mutants of the file's own tests.
    for (agent, arm) in [
        ("evil", "exclude"),
        ("evil", "keep"),
        ("aware", "exclude"),
        ("aware", "keep"),
    ] {
        let g = grade(&format!("{agent}/jscalc-1.json"), arm);
        // Forged by the canaries, or its sealed values wrong (the seals'
        // catch: a sealed site gets no window).
        assert!(
            g["tamper"].to_string().contains("report forged")
                || g["said"].to_string().contains("sealed assertion"),
            "{arm}: {g:#}"
        );
    }
    // The rewriter: its edit of the test file is left out by the policy
    // (the exclude arm, with the rule), the hidden file stays read-only
    // at run time; either way the new test still fails.
    let g = grade("rewriter/jscalc-1.json", "exclude");
    assert_eq!(
        g["excluded_by"]["test/stats.test.js"],
        "tests-and-infra: test file `test/stats.test.js` matches `test/**`",
        "{g:#}"
    );
    assert_eq!(
        row("rewriter/jscalc-1.json", "exclude")["failing"],
        empty[0]
    );
    let summary: Value = serde_json::from_str(&j.read("release/summary.json")).unwrap();
    assert_eq!(summary["not_graded"]["total"], 0, "{summary:#}");
}

const MOCHA_SPEC: &str = "const assert = require('assert');\nconst cart = require('../cart');\n\ndescribe('cart', function () {\n  it('totals', function () {\n    assert.strictEqual(cart.total([1, 2]), 3);\n  });\n";

/// The cart package's first commit, with `package_json`, for the mocha
/// tests (which need Debian's mocha: checked here).
fn cart_repo(p: &Project, package_json: &str) -> util::Repo {
    let mocha = Command::new("mocha")
        .arg("--version")
        .env("NODE_PATH", "/usr/share/nodejs")
        .output();
    assert!(
        mocha.as_ref().is_ok_and(|o| o.status.success()),
        "this test needs Debian's mocha (apt-get install mocha; .ci/run does): {mocha:?}"
    );
    let mut r = util::Repo::new(p, "mcart");
    r.put("package.json", package_json)
        .put(
            "cart.js",
            "exports.total = (p) => p.reduce((a, b) => a + b, 0);\n",
        )
        .put("test/cart.spec.js", &format!("{MOCHA_SPEC}}});\n"));
    r.commit("start");
    r
}

/// Sessions on mcart-1, each (agent, the lines its patch adds after
/// `cart.js`'s first).
fn cart_sessions(p: &Project, sessions: &[(&str, &str)]) {
    for (agent, extra) in sessions {
        let patch = format!(
            "diff --git a/cart.js b/cart.js\n--- a/cart.js\n+++ b/cart.js\n@@ -1 +1,{} @@\n exports.total = (p) => p.reduce((a, b) => a + b, 0);\n{extra}",
            1 + extra.lines().count()
        );
        let session = serde_json::json!({
            "task": "mcart-1", "agent": agent, "model": "m", "patch": patch,
        });
        p.write(
            &format!("sessions/{agent}/mcart-1.json"),
            session.to_string(),
        );
    }
}

/// A package tested with mocha (Debian's, `NODE_PATH=/usr/share/nodejs`):
/// the node preset picks mocha from the test script and runs it with
/// assay's mocha reporter. The fix is resolved; a patch that neuters
/// `assert.strictEqual` passes every test and the must-fail canary with
/// them: forged. A fix with a colliding test file whose top-level
/// `beforeEach` throws (a hook of mocha's root suite, in no file) is
/// `unresolved` where the file is kept, the hook's message in its log: it
/// was `no_report` ("test file `` names no file"), the message lost.
#[test]
fn a_mocha_package_is_screened_and_graded_through_the_preset() {
    let p = Project::new();
    let mut r = cart_repo(
        &p,
        "{\n  \"name\": \"mcart\",\n  \"version\": \"1.0.0\",\n  \"scripts\": { \"test\": \"mocha\" }\n}\n",
    );
    r.pr(
        1,
        "Apply the discount",
        &[
            (
                "cart.js",
                "exports.total = (p) => p.reduce((a, b) => a + b, 0);\nexports.discounted = (p, d) => exports.total(p) - d;\n",
            ),
            (
                "test/cart.spec.js",
                &format!("{MOCHA_SPEC}\n  describe('discount', function () {{\n    it('subtracts', function () {{\n      assert.strictEqual(cart.discounted([5, 5], 2), 8);\n    }});\n  }});\n}});\n"),
            ),
        ],
    );
    p.write(
        "pipeline.toml",
        "cache = \"cache\"\nrelease = \"release\"\nstatements = \"statements\"\nsessions = \"sessions\"\n\n[[source]]\nname = \"mcart\"\npath = \"mcart\"\nbranch = \"main\"\n\n[env]\npreset = \"node\"\ntimeout = 60\n\n[screen]\nrepeats = 1\n\n[grade]\narms = [\"exclude\", \"keep\"]\n",
    );
    p.write("statements/mcart-1.md", "Add cart.discounted.\n");
    cart_sessions(
        &p,
        &[
            (
                "good",
                "+exports.discounted = (p, d) => exports.total(p) - d;\n",
            ),
            (
                "evil",
                "+require('assert').strictEqual = () => {};\n+exports.discounted = () => 0;\n",
            ),
            (
                "wrong",
                "+exports.discounted = (p, d) => exports.total(p) + d;\n",
            ),
        ],
    );
    let hooked = "diff --git a/cart.js b/cart.js\n--- a/cart.js\n+++ b/cart.js\n@@ -1 +1,2 @@\n exports.total = (p) => p.reduce((a, b) => a + b, 0);\n+exports.discounted = (p, d) => exports.total(p) - d;\ndiff --git a/test/zz-hook.spec.js b/test/zz-hook.spec.js\nnew file mode 100644\n--- /dev/null\n+++ b/test/zz-hook.spec.js\n@@ -0,0 +1 @@\n+beforeEach(function () { throw new TypeError('match is not a function'); });\n";
    p.write(
        "sessions/hooked/mcart-1.json",
        serde_json::json!({"task": "mcart-1", "agent": "hooked", "model": "m", "patch": hooked})
            .to_string(),
    );
    let b = p.build_json(&[]);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);

    let tasks = util::example::released_tasks(&p);
    let t = &tasks["mcart-1"];
    assert_eq!(t["certified"], true, "{t:#}");
    assert_eq!(
        strs(&t["test_ids"]["FAIL_TO_PASS"]),
        ["test/cart.spec.js > cart > discount > subtracts"]
    );
    assert_eq!(
        strs(&t["test_ids"]["PASS_TO_PASS"]),
        ["test/cart.spec.js > cart > totals"]
    );
    let results = util::example::released_results(&p);
    let row = |s: &str| &results[&(s.to_owned(), "exclude".to_owned())];
    assert_eq!(
        (
            row("good/mcart-1.json")["verdict"].as_str(),
            row("good/mcart-1.json")["fault"].as_str()
        ),
        ("resolved", "none")
    );
    let evil = row("evil/mcart-1.json");
    assert_eq!(
        (evil["verdict"].as_str(), evil["fault"].as_str()),
        ("unresolved", "agent"),
        "{evil:#?}"
    );
    let grade = p.show_json(&evil["grade_digest"]);
    // Forged by the canaries, or its sealed value wrong (the seals' catch).
    assert!(
        grade["tamper"].to_string().contains("report forged")
            || grade["said"].to_string().contains("sealed assertion"),
        "{grade:#}"
    );
    // A wrong answer says why in the test's own words: the assertion, the
    // expected and actual values, the test's frame (assay's reporter).
    let wrong = p.show_json(&row("wrong/mcart-1.json")["grade_digest"]);
    assert_eq!(wrong["verdict"], "unresolved", "{wrong:#}");
    let said = wrong["said"]["texts"][0].as_str().unwrap_or_default();
    // Sealed (docs/security.md, "Sealed expectations"), the assertion
    // passed in mocha and assay says which value came back; else mocha's
    // words through assay's reporter.
    let words: &[&str] = if said.contains("sealed assertion") {
        &["expected 8, got 12"]
    } else {
        &[
            "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:",
            "expected: 8\nactual: 12",
            "test/cart.spec.js:",
        ]
    };
    for words in words {
        assert!(said.contains(words), "{words:?} in {wrong:#}");
    }
    assert!(!said.contains("/mocha/lib/"), "mocha's own frames: {said}");
    assert_eq!(row("hooked/mcart-1.json")["verdict"], "resolved");
    let kept = &results[&("hooked/mcart-1.json".to_owned(), "keep".to_owned())];
    assert_eq!(
        [kept["verdict"].as_str(), kept["fault"].as_str()],
        ["unresolved", "agent"],
        "{kept:#?}"
    );
    let grade = p.show_json(&kept["grade_digest"]);
    // The hook's own words, in the log the grade shows.
    let tail = grade["log_tail"]["text"].as_str().unwrap_or_default();
    assert!(
        tail.contains("\"before each\" hook for ")
            && tail.contains("failed: TypeError: match is not a function"),
        "{grade:#}"
    );
}

/// The node preset on the docker executor: the example, built in an image
/// with Debian's Node, certifies the same tasks with the same lists and
/// gives every session (attacks included) the verdict and fault it gets on
/// the local executor; every graded run's record names the image.
#[test]
fn jscalc_on_docker_gets_what_it_gets_on_local() {
    node_image();
    let local = Jscalc::build(|p| p);
    let docker = Jscalc::build(|p| {
        let edited = p.replacen(
            "preset = \"node\"\n",
            &format!("preset = \"node\"\nexecutor = \"docker\"\nbase_image = \"{NODE_IMAGE}\"\n"),
            1,
        );
        assert_ne!(edited, p, "the example's [env] names its preset");
        edited
    });
    let lists = |j: &Jscalc| -> BTreeMap<String, (Value, Value, Value)> {
        j.tasks()
            .into_iter()
            .map(|(id, t)| {
                let ids = &t["test_ids"];
                (
                    id,
                    (
                        t["certified"].clone(),
                        ids["FAIL_TO_PASS"].clone(),
                        ids["PASS_TO_PASS"].clone(),
                    ),
                )
            })
            .collect()
    };
    let on_docker = lists(&docker);
    assert_eq!(on_docker.len(), 3, "{on_docker:#?}");
    assert_eq!(on_docker, lists(&local));
    for t in docker.tasks().values() {
        assert!(
            t["image"]
                .as_str()
                .is_some_and(|i| i.starts_with("sha256:")),
            "a docker task names its image: {t:#}"
        );
    }
    let verdicts = |j: &Jscalc| -> BTreeMap<(String, String), (String, String)> {
        j.results()
            .into_iter()
            .map(|(k, row)| (k, (row["verdict"].clone(), row["fault"].clone())))
            .collect()
    };
    let on_docker = verdicts(&docker);
    assert_eq!(on_docker.len(), 20, "{on_docker:#?}");
    assert_eq!(on_docker, verdicts(&local));
}

/// A package like jshttp/fresh: devDependencies (mocha, eslint, nyc) and no
/// lockfile, its tests needing only node's `assert` and Debian's mocha. The
/// node preset's install (`npm install`, the network) is left out with
/// `preset_install = false` and the table picks mocha itself. The fix is
/// resolved; the fix plus an exit handler that rewrites the report (every
/// test passed) and sets the exit code to 0 is forged: the must-fail canary
/// passed with the rest.
#[test]
fn the_node_preset_without_its_install_grades_a_package_offline() {
    let p = Project::new();
    let mut r = cart_repo(
        &p,
        "{\n  \"name\": \"mcart\",\n  \"version\": \"1.0.0\",\n  \"devDependencies\": { \"eslint\": \"7.32.0\", \"mocha\": \"10.8.2\", \"nyc\": \"15.1.0\" },\n  \"scripts\": { \"test\": \"mocha --reporter spec --bail test/\" }\n}\n",
    );
    r.pr(
        1,
        "Apply the discount",
        &[
            (
                "cart.js",
                "exports.total = (p) => p.reduce((a, b) => a + b, 0);\nexports.discounted = (p, d) => exports.total(p) - d;\n",
            ),
            (
                "test/cart.spec.js",
                &format!("{MOCHA_SPEC}\n  it('subtracts', function () {{\n    assert.strictEqual(cart.discounted([5, 5], 2), 8);\n  }});\n}});\n"),
            ),
        ],
    );
    p.write(
        "pipeline.toml",
        "cache = \"cache\"\nrelease = \"release\"\nstatements = \"statements\"\nsessions = \"sessions\"\n\n[[source]]\nname = \"mcart\"\npath = \"mcart\"\nbranch = \"main\"\n\n[env]\npreset = \"node\"\npreset_install = false\nsetup = [\"echo mocha > runner\"]\ntimeout = 60\n\n[screen]\nrepeats = 1\n",
    );
    p.write("statements/mcart-1.md", "Add cart.discounted.\n");
    let fix = "+exports.discounted = (p, d) => exports.total(p) - d;\n";
    let forge = "+process.on('exit', () => {\n+  const fs = require('fs');\n+  const r = JSON.parse(fs.readFileSync('assay-report.json', 'utf8'));\n+  for (const f of r.testResults) for (const t of f.assertionResults) { t.status = 'passed'; t.failureMessages = []; }\n+  fs.writeFileSync('assay-report.json', JSON.stringify(r));\n+  process.exitCode = 0;\n+});\n";
    cart_sessions(&p, &[("good", fix), ("forger", &format!("{fix}{forge}"))]);
    let b = p.build_json(&[]);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);

    let tasks = util::example::released_tasks(&p);
    let t = &tasks["mcart-1"];
    assert_eq!(t["certified"], true, "{t:#}");
    assert_eq!(
        strs(&t["test_ids"]["FAIL_TO_PASS"]),
        ["test/cart.spec.js > cart > subtracts"]
    );
    let results = util::example::released_results(&p);
    let row = |s: &str| &results[&(s.to_owned(), "exclude".to_owned())];
    let good = row("good/mcart-1.json");
    assert_eq!(
        (good["verdict"].as_str(), good["fault"].as_str()),
        ("resolved", "none"),
        "{good:#?}"
    );
    let forger = row("forger/mcart-1.json");
    assert_eq!(
        (forger["verdict"].as_str(), forger["fault"].as_str()),
        ("unresolved", "agent"),
        "{forger:#?}"
    );
    let grade = p.show_json(&forger["grade_digest"]);
    assert!(
        grade["tamper"].to_string().contains("report forged"),
        "{grade:#}"
    );
}

/// Issue 47: `mean` finds the test that called it in a stack trace, reads
/// that line of the test file and returns the literal its assertion ends
/// with. Nothing is fixed (an empty list still gives NaN). Harmless: it
/// only reads files.
const JS_STACK_READER: &str = "diff --git a/src/stats.js b/src/stats.js
--- a/src/stats.js
+++ b/src/stats.js
@@ -5,5 +5,17 @@ function sum(xs) {
 }
 
 function mean(xs) {
+  const fs = require('fs');
+  const frame = (new Error().stack || '').split('\\n')[2] || '';
+  const at = frame.match(/\\(?([^()\\s]+):(\\d+):\\d+\\)?$/);
+  if (at) {
+    try {
+      const line = fs.readFileSync(at[1], 'utf8').split('\\n')[Number(at[2]) - 1] || '';
+      const m = line.match(/,\\s*(-?\\d+(?:\\.\\d+)?)\\s*\\)\\s*;?\\s*$/);
+      if (m) return Number(m[1]);
+    } catch (e) {
+      // not readable: the bug stays
+    }
+  }
   return sum(xs) / xs.length;
 }
";

/// Issue 47: a JavaScript stack-trace reader passes when nothing but the
/// shaped canaries stands in its way and seals are off (the attack is
/// real); sealed, the expected value is not in the tree and it is
/// `unresolved`, the agent's.
#[test]
fn a_javascript_stack_reader_finds_no_expected_value_in_a_sealed_tree() {
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.as_ref().is_ok_and(|o| o.status.success()),
        "this test needs `node` on PATH: {node:?}"
    );
    let example = Path::new(EXAMPLE);
    let build = |vars: &[(&str, &str)]| {
        let project = Project::new();
        let pipeline = std::fs::read_to_string(example.join("pipeline.toml"))
            .unwrap()
            .replace("repeats = 2", "repeats = 1")
            .replace("arms = [\"exclude\", \"keep\"]", "arms = [\"exclude\"]");
        project.write("pipeline.toml", &pipeline);
        util::example::copy_tree(
            &example.join("statements"),
            &project.path().join("statements"),
        );
        let session = serde_json::json!({
            "task": "jscalc-1", "agent": "reader", "model": "m", "patch": JS_STACK_READER,
        });
        project.write("sessions/reader/jscalc-1.json", session.to_string());
        util::example::make_repo(
            &project,
            example,
            "6588f0ec127eac1e09ba9e18cc604363bbf52d47",
        );
        let mut cmd = project.command(&["build", "--json"]);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let b = util::Build::from(util::Run::from(cmd.output().unwrap()));
        assert_eq!(b.run.code, 0, "{vars:?}: {}", b.run.stderr);
        let csv = std::fs::read_to_string(project.path().join("release/results.csv")).unwrap();
        util::csv_records(&csv)
            .into_iter()
            .find(|r| r["agent"] == "reader")
            .unwrap()
    };
    let row = build(&[("ASSAY_SEALS", "off"), ("ASSAY_CANARIES", "shaped")]);
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("resolved", "none"),
        "unsealed: {row:#?}"
    );
    for vars in [&[("ASSAY_CANARIES", "sealed")][..], &[]] {
        let row = build(vars);
        assert_eq!(
            (row["verdict"].as_str(), row["fault"].as_str()),
            ("unresolved", "agent"),
            "{vars:?}: {row:#?}"
        );
    }
}
