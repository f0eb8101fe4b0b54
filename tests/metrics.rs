//! `[[metric]]`: quality figures from the project's own tools, through the
//! real binary. Python: the grading fixture (`util::fixture`) with a lint
//! tool of its own in its base commit, counted by a pattern, by its exit
//! code and by its JSON; Go: a module built here, counted by `go vet`;
//! TypeScript: `any` added, counted from the patches. Every figure is
//! checked against a count made by hand from the session's patch.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeMap;
use std::process::Command;

use util::fixture::*;
use util::{Build, Project, Repo};

/// The project's own lint tool: every `print(` call in a Python file
/// outside `tools/` is a finding (`path:line: P001 print call`, or a JSON
/// list with `--json`); it exits 1 when it found any.
const LINT: &str = r#"import json
import os
import sys

found = []
for root, dirs, files in os.walk("."):
    dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "tools")
    for name in sorted(files):
        if not name.endswith(".py"):
            continue
        path = os.path.join(root, name)
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if "pr" + "int(" in line:
                    found.append((path, n))
if "--json" in sys.argv:
    print(json.dumps([{"file": p, "line": n} for p, n in found]))
else:
    for p, n in found:
        print(f"{p}:{n}: P001 print call")
sys.exit(1 if found else 0)
"#;

const PRINTS: &str = r#"
[[metric]]
name = "prints"
command = "python3 tools/lint.py"
count = "lines"
pattern = '^(?P<path>[^:\s]+):\d+: P001'

[[metric]]
name = "lint-exit"
command = "python3 tools/lint.py"
count = "exit"
"#;

const PRINTS_JSON: &str = r#"
[[metric]]
name = "prints-json"
command = "python3 tools/lint.py --json"
count = "json"
json = "*"
path_key = "file"
"#;

const ANY: &str = r#"
[[metric]]
name = "any"
preset = "ts-any"
"#;

/// `sub` fixed, with `extra` lines after it.
fn ops_with(extra: &str) -> String {
    format!("{OPS_SUB}{extra}")
}

/// The kinds a build executed, with how many of each.
fn executed(b: &Build) -> BTreeMap<String, u64> {
    b.summary
        .by_kind
        .iter()
        .filter(|(_, c)| c.executed > 0)
        .map(|(k, c)| (k.clone(), c.executed))
        .collect()
}

fn cell(f: &Fixture, session: &str, column: &str) -> String {
    let row = f.row(session, "exclude");
    row.get(column)
        .unwrap_or_else(|| panic!("no column {column}: {row:#?}"))
        .clone()
}

/// Sessions on p-1 introducing 0, 1 and 2 print calls, one putting its
/// print calls in a test file of its own, one adding `any` in TypeScript;
/// figures against counts by hand, then the caching: a rebuild executes
/// nothing, a new metric executes only metric nodes (and the release).
#[test]
fn figures_are_what_each_session_introduced_against_gold() {
    let f = Fixture::with_base_files(&[("tools/lint.py", LINT)]);
    // Nothing excluded, so the session's own test file is in its graded
    // tree: its finding is there, and not counted.
    f.pipeline("none", 1 << 20, PRINTS);
    f.session("a/clean.json", "p-1", &f.fix1());
    let one = ops_with("\n\ndef debug(x):\n    print(x)\n");
    f.session("a/one.json", "p-1", &f.diff1(&[("pkg/ops.py", Some(&one))]));
    let two = ops_with("\n\ndef debug(x):\n    print(x)\n");
    f.session(
        "a/two.json",
        "p-1",
        &f.diff1(&[
            ("pkg/ops.py", Some(&two)),
            (
                "pkg/trace.py",
                Some("def trace(x):\n    print('trace', x)\n"),
            ),
        ]),
    );
    f.session(
        "a/in-test.json",
        "p-1",
        &f.diff1(&[
            ("pkg/ops.py", Some(OPS_SUB)),
            (
                "tests/test_noisy.py",
                Some(&format!("{TEST_EXTRA}\nprint('noise')\n")),
            ),
        ]),
    );
    let ts = "export function id(x: any): any {\n  return x as any;\n}\n";
    f.session(
        "a/ts.json",
        "p-1",
        &f.diff1(&[
            ("pkg/ops.py", Some(OPS_SUB)),
            ("web/id.ts", Some(ts)),
            ("web/id.test.ts", Some("let y: any = 1;\n")),
        ]),
    );
    let first = f.build_ok();
    assert_eq!(first.summary.total.failed, 0, "{:?}", first.summary);
    // Per metric, one node per session and one for the task's gold tree.
    assert_eq!(
        executed(&first)["quality"],
        2 * (5 + 1),
        "{:?}",
        first.summary
    );

    // By hand: gold has no print call; `one` adds one, `two` two (one in
    // a file of its own); `in-test`'s is in a test file.
    for (session, prints, exit) in [
        ("a/clean.json", "0", "0"),
        ("a/one.json", "1", "1"),
        ("a/two.json", "2", "1"),
        // The exit code names no file: the test file's print counts there.
        ("a/in-test.json", "0", "1"),
        ("a/ts.json", "0", "0"),
    ] {
        assert_eq!(cell(&f, session, "quality.prints"), prints, "{session}");
        assert_eq!(cell(&f, session, "quality.lint-exit"), exit, "{session}");
        assert_eq!(cell(&f, session, "verdict"), "resolved", "{session}");
    }
    let summary = f.summary();
    let q = &summary["agents"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()["quality"]["prints"];
    // Figures 0, 1, 2, 0, 0; every session resolved, two introduced some.
    assert_eq!(q["measured"], 5, "{q}");
    assert_eq!(q["median_introduced"], 0.0, "{q}");
    assert_eq!(q["resolved"], 5, "{q}");
    assert_eq!(q["resolved_introducing"], 2, "{q}");
    assert_eq!(q["resolved_introducing_share"], 0.4, "{q}");
    let html = std::fs::read_to_string(f.path().join("release/report.html")).unwrap();
    assert!(
        html.contains("findings introduced against gold"),
        "no quality section"
    );
    util::figures::explained(
        &f.project,
        &[],
        &f.path().join("release"),
        10,
        &[
            ".quality.prints.measured",
            ".quality.prints.resolved_introducing_share",
        ],
    );

    // Nothing changed: nothing runs.
    let second = f.build_ok();
    assert_eq!(second.summary.total.executed, 0, "{:?}", second.summary);
    // The audit recomputes the release, figures included, from the cache.
    f.project.run(&["verify"]).code(0);

    // A new metric: its nodes and the release, nothing else.
    f.edit_pipeline(
        "[[metric]]\nname = \"prints\"",
        &format!("{ANY}\n[[metric]]\nname = \"prints\""),
    );
    let third = f.build_ok();
    assert_eq!(
        executed(&third),
        BTreeMap::from([("quality".to_owned(), 5 + 1), ("release".to_owned(), 1)]),
        "{:?}",
        third.summary
    );
    // `id.ts` adds three `any`; the test file's is not counted; gold adds none.
    assert_eq!(cell(&f, "a/ts.json", "quality.any"), "3");
    assert_eq!(cell(&f, "a/one.json", "quality.any"), "0");
}

/// The metric's command runs the tree's own tool, which the session may
/// rewrite: a flood of output and a malformed JSON document each fail
/// that session's metric node, with the reason in the report, and nothing
/// else (its grade, the other metric, the other sessions).
#[test]
fn hostile_metric_output_fails_only_its_node() {
    let f = Fixture::with_base_files(&[("tools/lint.py", LINT)]);
    f.pipeline("", 1 << 20, &format!("{PRINTS}{PRINTS_JSON}"));
    f.session("a/clean.json", "p-1", &f.fix1());
    let flood = "import sys\nsys.stdout.write('x:1: P001 ' * 400000)\n";
    f.session(
        "evil/flood.json",
        "p-1",
        &f.diff1(&[
            ("pkg/ops.py", Some(OPS_SUB)),
            ("tools/lint.py", Some(flood)),
        ]),
    );
    let garbage = "import sys\nprint('[{\"file\": ' if '--json' in sys.argv else '')\n";
    f.session(
        "evil/garbage.json",
        "p-1",
        &f.diff1(&[
            ("pkg/ops.py", Some(OPS_SUB)),
            ("tools/lint.py", Some(garbage)),
        ]),
    );
    let b = f.build_ok();
    assert_eq!(b.summary.total.failed, 0, "{:?}", b.summary);
    for session in ["a/clean.json", "evil/flood.json", "evil/garbage.json"] {
        assert_eq!(cell(&f, session, "verdict"), "resolved", "{session}");
    }
    assert_eq!(cell(&f, "a/clean.json", "quality.prints"), "0");
    assert_eq!(cell(&f, "a/clean.json", "quality.prints-json"), "0");
    // The flood: over the log cap, so not counted (its exit code still is).
    assert_eq!(cell(&f, "evil/flood.json", "quality.prints"), "");
    assert_eq!(cell(&f, "evil/flood.json", "quality.prints-json"), "");
    assert_eq!(cell(&f, "evil/flood.json", "quality.lint-exit"), "0");
    // The malformed document: no JSON figure, the pattern's stands.
    assert_eq!(cell(&f, "evil/garbage.json", "quality.prints-json"), "");
    assert_eq!(cell(&f, "evil/garbage.json", "quality.prints"), "0");
    let html = std::fs::read_to_string(f.path().join("release/report.html")).unwrap();
    for why in [
        "the output exceeded the log cap",
        "the output is not the JSON the metric counts",
    ] {
        assert!(html.contains(why), "the report lacks {why:?}");
    }
    let summary = f.summary();
    let agents = summary["agents"].as_object().unwrap();
    let evil = agents
        .iter()
        .find(|(k, _)| k.starts_with("evil"))
        .unwrap()
        .1;
    // The flood fails both counts of the output, the malformed document one.
    assert_eq!(evil["quality"]["prints"]["failed"], 1, "{evil}");
    assert_eq!(evil["quality"]["prints-json"]["failed"], 2, "{evil}");
    assert_eq!(evil["quality"]["lint-exit"]["failed"], 0, "{evil}");
}

/// A bad `[[metric]]` is a configuration error pointing into the file.
#[test]
fn an_unknown_metric_preset_is_a_config_error_with_the_presets() {
    let f = Fixture::new();
    f.pipeline(
        "",
        1 << 20,
        "[[metric]]\nname = \"x\"\npreset = \"tslint\"\n",
    );
    f.project
        .run(&["build"])
        .code(3)
        .stderr_has("unknown metric preset `tslint`")
        .stderr_has("go-vet");
}

/// A repository built here: `base` in its initial commit, then PR #1
/// (`pr`), released as task `<name>-1` under `pipeline` (its `[env]` and
/// metrics), with sessions written by [`Built::session`].
struct Built {
    project: Project,
    checkout: util::Checkout,
    base: String,
    task: String,
}

impl Built {
    fn new(name: &str, base: &[(&str, &str)], pr: &[(&str, &str)], pipeline: &str) -> Built {
        let project = Project::new();
        let mut r = Repo::new(&project, "repo");
        for (path, text) in base {
            r.put(path, text);
        }
        r.commit("Initial commit");
        let head = r.head();
        r.pr(1, "Fix sub", pr);
        let task = format!("{name}-1");
        project.write(&format!("statements/{task}.md"), "sub(5, 3) returns 8.\n");
        std::fs::create_dir_all(project.path().join("sessions")).unwrap();
        let checkout = r.checkout(&project, "work");
        project.write(
            "pipeline.toml",
            format!(
                "statements = \"statements\"\nsessions = \"sessions\"\n\n[[source]]\nname = \"{name}\"\npath = \"repo\"\n\n[grade]\nexclusion = \"none\"\nreruns = 0\n\n{pipeline}"
            ),
        );
        Built {
            project,
            checkout,
            base: head,
            task,
        }
    }

    /// `sessions/<id>`: these files changed against the task's base.
    fn session(&self, id: &str, files: &[(&str, Option<&str>)]) {
        let patch = self.checkout.diff(&self.base, &[], files);
        let v = serde_json::json!({"task": self.task, "agent": "a", "model": "m", "patch": patch});
        self.project.write(&format!("sessions/{id}"), v.to_string());
    }

    /// Builds, and gives each session's `column` of results.csv.
    fn column(&self, column: &str) -> BTreeMap<String, String> {
        let b = self.project.build_json(&[]);
        assert_eq!(b.run.code, 0, "{}\n{:?}", b.run.stderr, b.summary);
        let text =
            std::fs::read_to_string(self.project.path().join("release/results.csv")).unwrap();
        util::csv_records(&text)
            .into_iter()
            .map(|r| (r["session"].clone(), r[column].clone()))
            .collect()
    }
}

/// `program` answers `version_arg`, or the test says how to install it.
fn needs(program: &str, version_arg: &str, install: &str) {
    let v = Command::new(program).arg(version_arg).output();
    assert!(
        v.as_ref().is_ok_and(|o| o.status.success()),
        "this test needs `{program}` on PATH ({install}; .ci/run does): {v:?}"
    );
}

const GO_BASE: &str = "package calc\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Sub(a, b int) int { return a + b }\n";
const GO_FIXED: &str = "package calc\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Sub(a, b int) int { return a - b }\n";
const GO_TEST: &str = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n";
const GO_TEST_SUB: &str =
    "\nfunc TestSub(t *testing.T) {\n\tif Sub(5, 3) != 2 {\n\t\tt.Fatal(\"sub\")\n\t}\n}\n";
/// A `go vet` finding: a format verb with an argument of the wrong type.
const GO_VET_BAD: &str =
    "package calc\n\nimport \"fmt\"\n\nfunc Show(a int) string { return fmt.Sprintf(\"%s\", a) }\n";

/// `go vet` on a module built here: a session adding one finding, one
/// adding one in a test file of its own, one adding none.
#[test]
fn go_vet_counts_what_a_session_introduced() {
    needs("go", "version", "apt-get install golang-go");
    let go_env = "env GOPATH=$HOME/go GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local";
    let b = Built::new(
        "calc",
        &[
            ("go.mod", "module example.com/calc\n\ngo 1.19\n"),
            ("calc.go", GO_BASE),
            ("calc_test.go", GO_TEST),
        ],
        &[
            ("calc.go", GO_FIXED),
            ("calc_test.go", &format!("{GO_TEST}{GO_TEST_SUB}")),
        ],
        &format!(
            r#"
[env]
setup = ["{go_env} go test -run '^$' unicode/utf8 > /dev/null"]
warm = {{ GOCACHE = "go-cache" }}
key_files = ["go.mod"]
test_command = "{go_env} go test -json ./..."
report = "go-test-json"
timeout = 300

[[metric]]
name = "vet"
preset = "go-vet"
"#
        ),
    );
    b.session("a/clean.json", &[("calc.go", Some(GO_FIXED))]);
    b.session(
        "a/vet.json",
        &[("calc.go", Some(GO_FIXED)), ("show.go", Some(GO_VET_BAD))],
    );
    let in_test = GO_VET_BAD.replace("func Show", "func showForTest");
    b.session(
        "a/vet-in-test.json",
        &[
            ("calc.go", Some(GO_FIXED)),
            ("show_test.go", Some(&in_test)),
        ],
    );
    assert_eq!(
        b.column("quality.vet"),
        BTreeMap::from([
            ("a/clean.json".to_owned(), "0".to_owned()),
            ("a/vet.json".to_owned(), "1".to_owned()),
            ("a/vet-in-test.json".to_owned(), "0".to_owned()),
        ])
    );
}

const TS_CONFIG: &str = r#"{"compilerOptions": {"target": "es2020", "module": "commonjs", "strict": true, "outDir": "build", "types": []}, "include": ["src/**/*.ts", "test/**/*.ts"]}
"#;
const TS_BASE: &str = "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport function sub(a: number, b: number): number {\n  return a + b;\n}\n";
const TS_FIXED: &str = "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport function sub(a: number, b: number): number {\n  return a - b;\n}\n";
const TS_TEST: &str = "declare const require: any;\nconst test = require(\"node:test\");\nconst assert = require(\"node:assert\");\nimport { add, sub } from \"../src/calc\";\n\ntest(\"add\", () => {\n  assert.strictEqual(add(2, 3), 5);\n});\n";
const TS_TEST_SUB: &str = "\ntest(\"sub\", () => {\n  assert.strictEqual(sub(5, 3), 2);\n});\n";
/// Two type errors `tsc` reports.
const TS_BAD: &str = "export const one: number = \"1\";\nexport const two: string = 2;\n";

/// `tsc` (Debian's node-typescript) on a TypeScript package tested with
/// `node --test`: sessions adding 0, 1 and 2 type errors, and one adding
/// two in a test file.
#[test]
fn tsc_counts_the_type_errors_a_session_introduced() {
    needs("tsc", "--version", "apt-get install node-typescript");
    let b = Built::new(
        "tscalc",
        &[
            ("tsconfig.json", TS_CONFIG),
            ("src/calc.ts", TS_BASE),
            ("test/calc.test.ts", TS_TEST),
        ],
        &[
            ("src/calc.ts", TS_FIXED),
            ("test/calc.test.ts", &format!("{TS_TEST}{TS_TEST_SUB}")),
        ],
        r#"
[env]
test_command = "tsc -p . > /dev/null; node --test --test-reporter=tap build/test/"
report = "tap"
timeout = 300

[[metric]]
name = "tsc"
preset = "tsc"
"#,
    );
    let one = TS_BAD.lines().next().unwrap();
    b.session("a/clean.json", &[("src/calc.ts", Some(TS_FIXED))]);
    b.session(
        "a/one.json",
        &[("src/calc.ts", Some(TS_FIXED)), ("src/bad.ts", Some(one))],
    );
    b.session(
        "a/two.json",
        &[
            ("src/calc.ts", Some(TS_FIXED)),
            ("src/bad.ts", Some(TS_BAD)),
        ],
    );
    b.session(
        "a/in-test.json",
        &[
            ("src/calc.ts", Some(TS_FIXED)),
            ("test/bad.test.ts", Some(TS_BAD)),
        ],
    );
    assert_eq!(
        b.column("quality.tsc"),
        BTreeMap::from([
            ("a/clean.json".to_owned(), "0".to_owned()),
            ("a/one.json".to_owned(), "1".to_owned()),
            ("a/two.json".to_owned(), "2".to_owned()),
            ("a/in-test.json".to_owned(), "0".to_owned()),
        ])
    );
    let verdicts = b.column("verdict");
    assert!(verdicts.values().all(|v| v == "resolved"), "{verdicts:?}");
}
