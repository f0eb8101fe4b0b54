//! The bundled examples of compiled languages, built and graded through the
//! real binary: `examples/gocalc` (Go) as its README describes it. The
//! repository is made by the example's own `make-repo.sh` in a temp dir, the
//! pipeline, statements and sessions are the example's, copied unchanged.
//!
//! Needs `go` (Debian's `golang-go`, 1.19, is enough; `.ci/run` installs it).

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use util::{Project, strs};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/gocalc");
const PKG: &str = "example.com/gocalc";

/// A session that fixes nothing: an `init()` in the package prints a
/// passing result for every test it finds in the package's test files (the
/// canaries among them), which `go test -json` turns into pass events, and
/// exits 0 before any test runs.
const FORGE_INIT_PATCH: &str = r#"diff --git a/forge.go b/forge.go
new file mode 100644
--- /dev/null
+++ b/forge.go
@@ -0,0 +1,24 @@
+package gocalc
+
+import (
+	"fmt"
+	"os"
+	"path/filepath"
+	"regexp"
+)
+
+// init runs before any test: it reports every test of the package as
+// passed, in the words test2json turns into pass events, and exits 0.
+// Nothing is fixed.
+func init() {
+	files, _ := filepath.Glob("*_test.go")
+	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
+	for _, f := range files {
+		src, _ := os.ReadFile(f)
+		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
+			fmt.Printf("=== RUN   %s\n--- PASS: %s (0.00s)\n", m[1], m[1])
+		}
+	}
+	fmt.Println("PASS")
+	os.Exit(0)
+}
"#;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// `example.com/gocalc.TestX` for each name, in order.
fn ids(tests: &[&str]) -> Vec<String> {
    tests.iter().map(|t| format!("{PKG}.{t}")).collect()
}

/// The example built once with a fresh cache.
struct Gocalc {
    project: Project,
}

impl Gocalc {
    fn build() -> Gocalc {
        let go = Command::new("go").arg("version").output();
        assert!(
            go.as_ref().is_ok_and(|o| o.status.success()),
            "this test needs `go` on PATH (apt-get install golang-go; .ci/run does): {go:?}"
        );
        let project = Project::new();
        let example = Path::new(EXAMPLE);
        std::fs::copy(
            example.join("pipeline.toml"),
            project.path().join("pipeline.toml"),
        )
        .unwrap();
        for dir in ["statements", "sessions"] {
            copy_dir(&example.join(dir), &project.path().join(dir));
        }
        let forger = serde_json::json!({
            "task": "gocalc-1",
            "agent": "evil",
            "model": "model-b",
            "patch": FORGE_INIT_PATCH,
        });
        std::fs::create_dir_all(project.path().join("sessions/evil")).unwrap();
        std::fs::write(
            project.path().join("sessions/evil/gocalc-1.json"),
            forger.to_string(),
        )
        .unwrap();
        util::example::make_and_build(
            &project,
            example,
            "7d9f907eae03a71b41077031f6bd40a3905fab5c",
        );
        Gocalc { project }
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.project.path().join(rel))
            .unwrap_or_else(|e| panic!("no {rel}: {e}"))
    }

    fn json(&self, rel: &str) -> Value {
        serde_json::from_str(&self.read(rel)).unwrap()
    }

    fn tasks(&self) -> BTreeMap<String, Value> {
        [
            self.read("release/tasks.jsonl"),
            self.read("release/tasks.uncertified.jsonl"),
        ]
        .concat()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["instance_id"].as_str().unwrap().to_owned(), v)
        })
        .collect()
    }

    /// Rows of results.csv keyed by (session, arm).
    fn results(&self) -> BTreeMap<(String, String), BTreeMap<String, String>> {
        util::csv_records(&self.read("release/results.csv"))
            .into_iter()
            .map(|r| ((r["session"].clone(), r["arm"].clone()), r))
            .collect()
    }
}

#[test]
fn gocalc_builds_certifies_the_task_whose_test_patch_does_not_build_and_blames_broken_builds() {
    let g = Gocalc::build();

    // Screening: all three certified, gocalc-2 (its test patch does not
    // build at base) with only the new test as FAIL_TO_PASS and the old
    // tests of the package as PASS_TO_PASS.
    let funnel = g.json("release/funnel.json");
    assert_eq!(funnel["candidates"], 3, "{funnel:#}");
    assert_eq!(funnel["certified"], 3, "{funnel:#}");
    let tasks = g.tasks();
    let old = [
        "TestAdd", "TestDiv", "TestMean", "TestMul", "TestSub", "TestSum",
    ];
    let with = |extra: &[&str]| {
        let mut v = ids(&old);
        v.extend(ids(extra));
        v.sort();
        v
    };
    for (id, f2p, p2p) in [
        ("gocalc-1", ids(&["TestMeanEmpty"]), with(&[])),
        ("gocalc-2", ids(&["TestMedian"]), with(&["TestMeanEmpty"])),
        (
            "gocalc-3",
            ids(&["TestClampBelow"]),
            with(&["TestMeanEmpty", "TestMedian"]),
        ),
    ] {
        let t = &tasks[id];
        assert_eq!(t["certified"], true, "{id}: {:#}", t["uncertified_because"]);
        assert_eq!(strs(&t["test_ids"]["FAIL_TO_PASS"]), f2p, "{id}");
        assert_eq!(strs(&t["test_ids"]["PASS_TO_PASS"]), p2p, "{id}");
    }

    // Grading: (exclude, keep) verdicts and faults, and what the compiler
    // said where the build broke.
    let results = g.results();
    let expect = [
        ("alpha/gocalc-1.json", ["resolved", "resolved"], None),
        ("alpha/gocalc-2.json", ["resolved", "resolved"], None),
        (
            "alpha/gocalc-3.json",
            ["resolved", "unresolved"],
            Some("./clamp_test.go:6:6: check redeclared in this block"),
        ),
        (
            "beta/gocalc-1.json",
            ["unresolved", "unresolved"],
            Some("./stats.go:15:13: too many return values"),
        ),
        (
            "beta/gocalc-2.json",
            ["unresolved", "unresolved"],
            Some("./median.go:16:1: syntax error: unexpected EOF, expecting }"),
        ),
        ("beta/gocalc-3.json", ["unresolved", "unresolved"], None),
    ];
    // The forger: never resolved, the agent's, and the canaries say why.
    for arm in ["exclude", "keep"] {
        let row = &results[&("evil/gocalc-1.json".to_owned(), arm.to_owned())];
        assert_eq!(
            (row["verdict"].as_str(), row["fault"].as_str()),
            ("unresolved", "agent"),
            "{arm}: {row:#?}"
        );
        let grade = g.project.show_json(&row["grade_digest"]);
        assert!(
            grade["tamper"].to_string().contains("report forged"),
            "{arm}: {grade:#}"
        );
    }
    assert_eq!(results.len(), 2 * expect.len() + 2, "{results:#?}");
    for (session, verdicts, compiler) in expect {
        let task = &tasks[session.split('/').nth(1).unwrap().trim_end_matches(".json")];
        let expected: Vec<String> = {
            let mut v = strs(&task["test_ids"]["FAIL_TO_PASS"]);
            v.extend(strs(&task["test_ids"]["PASS_TO_PASS"]));
            v.sort();
            v
        };
        for (arm, want) in ["exclude", "keep"].into_iter().zip(verdicts) {
            let row = &results[&(session.to_owned(), arm.to_owned())];
            assert_eq!(row["verdict"], want, "{session} {arm}: {row:#?}");
            let fault = if want == "resolved" { "none" } else { "agent" };
            assert_eq!(row["fault"], fault, "{session} {arm}: {row:#?}");
            let grade = g.project.show_json(&row["grade_digest"]);
            let detail = grade["detail"].as_str().unwrap();
            let broken = compiler.filter(|_| want == "unresolved");
            match broken {
                Some(message) => {
                    // A build the patch broke: every expected test failed,
                    // the compiler's message is the reason, nothing rerun.
                    assert_eq!(
                        detail.lines().next().unwrap(),
                        format!("{PKG} does not build: {message}"),
                        "{session} {arm}"
                    );
                    assert_eq!(strs(&grade["failing"]), expected, "{session} {arm}");
                    assert_eq!(grade["reruns"], 0, "{session} {arm}");
                }
                None => assert!(
                    !detail.contains("does not build"),
                    "{session} {arm}: {detail}"
                ),
            }
        }
    }
    let beta3 = &results[&("beta/gocalc-3.json".to_owned(), "exclude".to_owned())];
    assert_eq!(beta3["failing"], format!("{PKG}.TestClampBelow"));
    assert_eq!(
        (beta3["base_check"].as_str(), beta3["new_check"].as_str()),
        ("pass", "fail (1)")
    );
    // The collision: the exclude arm left the agent's own test file out,
    // the keep arm kept it and the package did not compile. The verifier is
    // the suspect, not the agent.
    let alpha3 = &results[&("alpha/gocalc-3.json".to_owned(), "exclude".to_owned())];
    assert_eq!(alpha3["excluded_paths"], "clamp_below_test.go");
    let summary = g.json("release/summary.json");
    let suspects = summary["verifier_suspects"].as_array().unwrap();
    let got: Vec<(&str, &str, &str)> = suspects
        .iter()
        .map(|s| {
            (
                s["session"].as_str().unwrap(),
                s["exclude"].as_str().unwrap(),
                s["keep"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("alpha/gocalc-3.json", "resolved", "unresolved")],
        "{summary:#}"
    );
    assert_eq!(summary["not_graded"]["total"], 0, "{summary:#}");
}

/// How a Go attack tells a canary that must fail from the package's own
/// tests: the canary's body has one shape, `got, want := A + B, C` with
/// A + B != C. Shared by both attacks below (issue 34).
const GO_CANARY_AWARE: &str = r#"
func mustFail() map[string]bool {
	keep := map[string]bool{}
	files, _ := filepath.Glob("*_test.go")
	re := regexp.MustCompile(`func (Test\w+)\(t \*testing\.T\) \{\s*if got, want := (-?\d+) \+ (-?\d+), (-?\d+);`)
	for _, f := range files {
		src, _ := os.ReadFile(f)
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			a, _ := strconv.Atoi(m[2])
			b, _ := strconv.Atoi(m[3])
			c, _ := strconv.Atoi(m[4])
			if a+b != c {
				keep[m[1]] = true
			}
		}
	}
	return keep
}
"#;

/// Attack: `//go:linkname` to the test binary's table of tests (the
/// generated `main.tests`); before any test runs, every test but the
/// canaries that must fail gets an empty body. Nothing is fixed.
const GO_LINKNAME: &str = r#"package gocalc

import (
	"testing"
	_ "unsafe"
)

//go:linkname tests main.tests
var tests []testing.InternalTest

func init() {
	keep := mustFail()
	for i := range tests {
		if !keep[tests[i].Name] {
			tests[i].F = func(*testing.T) {}
		}
	}
}
"#;

/// Attack: an `init` that runs the test binary again as a child and
/// relays its output with every `--- FAIL` turned into `--- PASS`, except
/// the canaries that must fail, then exits with the child's code.
const GO_RELAY: &str = r#"package gocalc

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
)

func init() {
	if os.Getenv("RELAY_CHILD") != "" {
		return
	}
	keep := mustFail()
	self, _ := os.Executable()
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), "RELAY_CHILD=1")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	status := regexp.MustCompile(`--- FAIL: (\w+)`)
	for _, l := range bytes.SplitAfter(out.Bytes(), []byte("\n")) {
		if m := status.FindSubmatch(l); m != nil && !keep[string(m[1])] {
			l = bytes.Replace(l, []byte("--- FAIL"), []byte("--- PASS"), 1)
		}
		os.Stdout.Write(l)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	os.Exit(code)
}
"#;

/// A patch creating each `(path, text)`.
fn new_files(files: &[(&str, &str)]) -> String {
    let mut p = String::new();
    for (path, text) in files {
        let lines: Vec<&str> = text.lines().collect();
        p.push_str(&format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
            lines.len()
        ));
        for l in lines {
            p.push_str(&format!("+{l}\n"));
        }
    }
    p
}

/// Issue 34's Go attacks, written by someone who read the canaries' shape:
/// a `//go:linkname` into the test binary's test table and an `init` that
/// rewrites the runner's output. Each fixes nothing; the static flags make
/// them `unresolved`/agent. Allowed for the task (`[[grade.allow_tamper]]`)
/// their flags are listed with the reason and not in effect: then both
/// come out `resolved`, which shows that nothing else catches them today.
#[test]
fn go_attacks_on_the_runner_are_static_tamper_flags() {
    let go = Command::new("go").arg("version").output();
    assert!(
        go.as_ref().is_ok_and(|o| o.status.success()),
        "this test needs `go` on PATH: {go:?}"
    );
    let project = Project::new();
    let example = Path::new(EXAMPLE);
    let pipeline = std::fs::read_to_string(example.join("pipeline.toml"))
        .unwrap()
        .replace("repeats = 2", "repeats = 1")
        .replace("arms = [\"exclude\", \"keep\"]", "arms = [\"exclude\"]");
    project.write("pipeline.toml", &pipeline);
    copy_dir(
        &example.join("statements"),
        &project.path().join("statements"),
    );
    let imports = "package gocalc\n\nimport (\n\t\"os\"\n\t\"path/filepath\"\n\t\"regexp\"\n\t\"strconv\"\n)\n";
    let aware = format!("{imports}{GO_CANARY_AWARE}");
    for (agent, file, text) in [
        ("linkname", "table.go", GO_LINKNAME),
        ("relay", "relay.go", GO_RELAY),
    ] {
        let patch = new_files(&[(file, text), ("aware.go", &aware)]);
        let session = serde_json::json!({
            "task": "gocalc-1", "agent": agent, "model": "m", "patch": patch,
        });
        project.write(
            &format!("sessions/{agent}/gocalc-1.json"),
            session.to_string(),
        );
    }
    let made = Command::new(example.join("make-repo.sh"))
        .arg(project.path().join("repo"))
        .output()
        .unwrap();
    assert!(made.status.success(), "make-repo.sh: {made:?}");
    let allow = "\n[[grade.allow_tamper]]\ntask = \"gocalc-*\"\nrule = \"go-linkname\"\nreason = \"attack test: shows the linkname attack beats the rest\"\n\n[[grade.allow_tamper]]\ntask = \"gocalc-1\"\nrule = \"go-fd-rewrite\"\nreason = \"attack test: shows the relay beats the rest\"\n\n[[grade.allow_tamper]]\ntask = \"gocalc-1\"\nrule = \"go-testing-reach\"\nreason = \"attack test: the linkname attack names testing.InternalTest\"\n";
    for (file, release) in [
        ("allowed.toml", "release-allowed"),
        ("allowed-own.toml", "release-own"),
    ] {
        project.write(
            file,
            // The shaped build gets a cache of its own: runs are reused
            // by key, and the key does not name the canaries' kind.
            pipeline
                .replace("release = \"release\"", &format!("release = \"{release}\""))
                .replace("cache = \"cache\"", &format!("cache = \"cache-{release}\""))
                + allow,
        );
    }
    // Every defence; the flags allowed, with the shaped canaries alone
    // (the attacks were written against those); the flags allowed, with
    // the canaries made of the task's own tests (docs/security.md).
    for (file, release, shaped) in [
        ("pipeline.toml", "release", false),
        ("allowed.toml", "release-allowed", true),
        ("allowed-own.toml", "release-own", false),
    ] {
        let mut cmd = project.command(&["build", "--json", "-p", file]);
        if shaped {
            cmd.env("ASSAY_CANARIES", "shaped");
        }
        let b = util::Build::from(util::Run::from(cmd.output().unwrap()));
        assert_eq!(b.run.code, 0, "{file}: {}", b.run.stderr);
        let rows: BTreeMap<String, BTreeMap<String, String>> = util::csv_records(
            &std::fs::read_to_string(project.path().join(release).join("results.csv")).unwrap(),
        )
        .into_iter()
        .map(|r| (r["agent"].clone(), r))
        .collect();
        for (agent, rule) in [("linkname", "go-linkname"), ("relay", "go-fd-rewrite")] {
            let row = &rows[agent];
            let grade = project.show_json_in(file, &row["grade_digest"]);
            let tamper = grade["tamper"].to_string();
            assert!(
                tamper.contains(&format!("static flag {rule}: ")),
                "{release} {agent}: {grade:#}"
            );
            let verdict = (row["verdict"].as_str(), row["fault"].as_str());
            let detail = grade["detail"].as_str().unwrap();
            match release {
                "release" => {
                    assert_eq!(verdict, ("unresolved", "agent"), "{agent}: {grade:#}");
                    // A sealed test the attack passed without its value
                    // (the seals' catch) or the flag in effect.
                    let sealed = grade["said"].to_string().contains("sealed assertion");
                    assert!(
                        detail.starts_with("tamper suspect, never scored resolved: ")
                            || detail.starts_with("report forged: ")
                            || sealed,
                        "{agent}: {grade:#}"
                    );
                }
                "release-allowed" => {
                    // Nothing but the flag stands between the attack and a
                    // pass: the shaped canaries that must fail still fail.
                    assert_eq!(verdict, ("resolved", "none"), "{agent} allowed: {grade:#}");
                    assert!(tamper.contains("(allowed: attack test: "), "{grade:#}");
                }
                _ => {
                    // The canaries made of the task's own tests, or the
                    // seals (gocalc-1's only site, a Go 0, seldom gets a
                    // window), catch it without the flag.
                    let sealed = grade["said"].to_string().contains("sealed assertion");
                    assert_eq!(verdict, ("unresolved", "agent"), "{agent} own: {grade:#}");
                    assert!(
                        tamper.contains("report forged") || sealed,
                        "{agent} own: {grade:#}"
                    );
                }
            }
        }
    }
}

/// Issue 47: `Mean` finds the test that called it with `runtime.Caller`,
/// reads that line of the `_test.go` file and returns the literal its
/// comparison expects. Nothing is fixed (an empty slice still gives NaN),
/// and no construct the static flags know is used: standard APIs and a
/// file read. Harmless: it only reads files.
const GO_CALLER_READER: &str = r#"diff --git a/stats.go b/stats.go
--- a/stats.go
+++ b/stats.go
@@ -12,4 +12,7 @@ func Sum(xs []float64) float64 {
 // Mean returns the arithmetic mean of xs.
 func Mean(xs []float64) float64 {
+	if v, ok := expected(); ok {
+		return v
+	}
 	return Sum(xs) / float64(len(xs))
 }
diff --git a/caller.go b/caller.go
new file mode 100644
--- /dev/null
+++ b/caller.go
@@ -0,0 +1,29 @@
+package gocalc
+
+import (
+	"os"
+	"regexp"
+	"runtime"
+	"strconv"
+	"strings"
+)
+
+// expected reads the line that called Mean and returns the value its
+// comparison expects.
+func expected() (float64, bool) {
+	_, file, line, ok := runtime.Caller(2)
+	if !ok {
+		return 0, false
+	}
+	src, err := os.ReadFile(file)
+	lines := strings.Split(string(src), "\n")
+	if err != nil || line < 1 || line > len(lines) {
+		return 0, false
+	}
+	m := regexp.MustCompile(`!= (-?[0-9.]+) \{`).FindStringSubmatch(lines[line-1])
+	if m == nil {
+		return 0, false
+	}
+	v, err := strconv.ParseFloat(m[1], 64)
+	return v, err == nil
+}
"#;

/// Issue 47: a Go call-site reader passes when nothing but the shaped
/// canaries stands in its way and seals are off (the attack is real); with
/// seals the expected value is not in the tree and it is `unresolved`,
/// the agent's, while the example's honest sessions keep their verdicts.
#[test]
fn a_go_call_site_reader_finds_no_expected_value_in_a_sealed_tree() {
    let go = Command::new("go").arg("version").output();
    assert!(
        go.as_ref().is_ok_and(|o| o.status.success()),
        "this test needs `go` on PATH: {go:?}"
    );
    let example = Path::new(EXAMPLE);
    let build = |vars: &[(&str, &str)]| {
        let project = Project::new();
        let pipeline = std::fs::read_to_string(example.join("pipeline.toml"))
            .unwrap()
            .replace("repeats = 2", "repeats = 1")
            .replace("arms = [\"exclude\", \"keep\"]", "arms = [\"exclude\"]");
        project.write("pipeline.toml", &pipeline);
        copy_dir(
            &example.join("statements"),
            &project.path().join("statements"),
        );
        let session = serde_json::json!({
            "task": "gocalc-1", "agent": "reader", "model": "m", "patch": GO_CALLER_READER,
        });
        project.write("sessions/reader/gocalc-1.json", session.to_string());
        util::example::make_repo(
            &project,
            example,
            "7d9f907eae03a71b41077031f6bd40a3905fab5c",
        );
        let mut cmd = project.command(&["build", "--json"]);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let b = util::Build::from(util::Run::from(cmd.output().unwrap()));
        assert_eq!(b.run.code, 0, "{vars:?}: {}", b.run.stderr);
        let csv = std::fs::read_to_string(project.path().join("release/results.csv")).unwrap();
        let row = util::csv_records(&csv)
            .into_iter()
            .find(|r| r["agent"] == "reader")
            .unwrap();
        let task = std::fs::read_to_string(project.path().join("release/tasks.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|t| t["instance_id"] == "gocalc-1")
            .unwrap();
        (project, row, task)
    };
    let (_p, row, _) = build(&[("ASSAY_SEALS", "off"), ("ASSAY_CANARIES", "shaped")]);
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("resolved", "none"),
        "unsealed: {row:#?}"
    );
    let (_p, row, task) = build(&[("ASSAY_CANARIES", "sealed")]);
    assert_eq!(task["canaries"]["fail_to_pass_seals"], 1, "{task:#}");
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("unresolved", "agent"),
        "sealed: {row:#?}"
    );
    let (p, row, _) = build(&[]);
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("unresolved", "agent"),
        "every defence: {row:#?}"
    );
    // The sealed tree: the hidden file as a graded run got it holds no
    // `!= 0` and no `want 0` (its message scrubbed with the seal).
    let grade = p.show_json(&row["grade_digest"]);
    assert!(grade.to_string().contains("TestMeanEmpty"), "{grade:#}");
}

/// A session whose code vet rejects (`go test` runs vet first: the package's
/// tests never run, `[build failed]`).
const VET_PATCH: &str = r#"diff --git a/describe.go b/describe.go
new file mode 100644
--- /dev/null
+++ b/describe.go
@@ -0,0 +1,6 @@
+package gocalc
+
+import "fmt"
+
+// Describe names x.
+func Describe(x int) string { return fmt.Sprintf("%d", "x") }
"#;

/// vet's words for [`VET_PATCH`].
const VET_SAYS: &str = "describe.go:6:38: fmt.Sprintf format %d has arg \"x\" of wrong type string";

/// A converter as datasets put behind `go test -json` (Deep-SWE's images):
/// reads its stdout (the test2json events, and the go command's own `FAIL
/// … [build failed]` line) and writes `ctrf.json`; the go command's stderr,
/// where vet's words go, is the run's log.
const GO_CTRF: &str = r#"import json, sys
tests, bad = [], 0
for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        bad |= line.startswith("FAIL")
        continue
    status = {"pass": "passed", "fail": "failed", "skip": "skipped"}.get(e.get("Action"))
    if e.get("Test") and status:
        tests.append({"name": e["Test"], "suite": e["Package"], "status": status})
    bad |= e.get("Action") == "fail"
json.dump({"results": {"tool": {"name": "go"}, "tests": tests}}, open("ctrf.json", "w"))
sys.exit(1 if bad else 0)
"#;

/// gocalc-1 with one session whose code vet rejects, its report read as
/// `report` (the example's `go-test-json`, or CTRF written from `go test
/// -json` by a converter): the grade is a build failure, `unresolved` and
/// the agent's, with vet's words in its detail, its `said` and the report's
/// session section; never `no_report`.
fn vet_failure_is_a_build_failure_with_the_vets_words(ctrf: bool) {
    let project = Project::new();
    let example = Path::new(EXAMPLE);
    let mut pipeline = std::fs::read_to_string(example.join("pipeline.toml")).unwrap();
    if ctrf {
        let go = "env GOPATH=$HOME/go GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local go test -json";
        let convert = format!("| python3 -c '{GO_CTRF}'");
        pipeline = pipeline
            .replace(
                &format!("test_command = \"{go} ./...\"\nreport = \"go-test-json\""),
                &format!("test_command = '''{go} ./... {convert}'''\nreport = \"ctrf-suite\"\nreport_file = \"ctrf.json\""),
            )
            .replace(
                &format!("rerun_command = \"{go} {{files}}\""),
                &format!("rerun_command = '''{go} {{files}} {convert}'''"),
            );
        assert!(pipeline.contains("report = \"ctrf-suite\""), "{pipeline}");
        assert!(pipeline.contains("{files} | python3"), "{pipeline}");
    }
    std::fs::write(project.path().join("pipeline.toml"), pipeline).unwrap();
    copy_dir(
        &example.join("statements"),
        &project.path().join("statements"),
    );
    let session = serde_json::json!({
        "task": "gocalc-1", "agent": "vet", "model": "model-a", "patch": VET_PATCH,
    });
    std::fs::create_dir_all(project.path().join("sessions/vet")).unwrap();
    std::fs::write(
        project.path().join("sessions/vet/gocalc-1.json"),
        session.to_string(),
    )
    .unwrap();
    util::example::make_and_build(
        &project,
        example,
        "7d9f907eae03a71b41077031f6bd40a3905fab5c",
    );
    let results = util::example::released_results(&project);
    let row = &results[&("vet/gocalc-1.json".to_owned(), "exclude".to_owned())];
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("unresolved", "agent"),
        "{row:#?}"
    );
    let grade = project.show_json(&row["grade_digest"]);
    let detail = grade["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(&format!("{PKG} does not build: ")) && detail.contains(VET_SAYS),
        "{grade:#}"
    );
    let said = grade["said"]["texts"][0].as_str().unwrap_or_default();
    assert!(said.contains(VET_SAYS), "{grade:#}");
    // The session's section says it first.
    let pages = std::fs::read_dir(project.path().join("release/pages")).unwrap();
    let page = pages
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .find(|p| p.contains("id=\"sessions\"") && p.contains("vet/gocalc-1.json"))
        .expect("gocalc-1's page");
    let why = page.find("<strong>Why</strong>").expect("a why");
    let first = &page[why..];
    assert!(
        first.contains("<p><strong>First failure</strong>: <code>example.com/gocalc.TestAdd</code></p>\n<pre class=\"log said\">example.com/gocalc does not build: ./describe.go:6:38: fmt.Sprintf format %d has arg &quot;x&quot; of wrong type string</pre>"),
        "{first}"
    );
}

#[test]
fn a_vet_failure_under_go_test_json_is_a_build_failure_with_the_vets_words() {
    vet_failure_is_a_build_failure_with_the_vets_words(false);
}

#[test]
fn a_vet_failure_under_ctrf_from_go_test_json_is_a_build_failure_with_the_vets_words() {
    vet_failure_is_a_build_failure_with_the_vets_words(true);
}
