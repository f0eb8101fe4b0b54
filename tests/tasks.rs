//! The task pipeline through the real binary: each test builds its own small
//! git repository of merged pull requests (Python, stdlib `unittest` only),
//! writes a `pipeline.toml` and runs `assay build`.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;
use util::{Build, Project, Repo, strs};

/// The initial commit: `pkg.ops` with a buggy `sub` and `mul`, one passing test.
fn init_repo(project: &Project) -> Repo {
    let mut r = Repo::new(project, "repo");
    r.put(".gitignore", "__pycache__/\n*.pyc\n")
        .put("README.md", "# pkg\n")
        .put("pkg/__init__.py", "")
        .put("pkg/ops.py", OPS_BUGGY)
        .put("tests/__init__.py", "")
        .put("tests/test_ops.py", &test_ops(&[]));
    r.commit("Initial commit");
    r
}

const OPS_BUGGY: &str = "\
def add(a, b):
    return a + b


def sub(a, b):
    return a + b


def mul(a, b):
    return a + b


def div(a, b):
    return a + b
";

/// OPS_BUGGY with the named functions fixed.
fn ops_fixed(fixed: &[&str]) -> String {
    let mut s = String::from("def add(a, b):\n    return a + b\n");
    for (name, op) in [("sub", "-"), ("mul", "*"), ("div", "/")] {
        let op = if fixed.contains(&name) { op } else { "+" };
        s.push_str(&format!("\n\ndef {name}(a, b):\n    return a {op} b\n"));
    }
    s
}

/// tests/test_ops.py with `test_add` plus the given extra test methods (name, body).
fn test_ops(extra: &[(&str, &str)]) -> String {
    let mut s = String::from(
        "import unittest\n\nfrom pkg import ops\n\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(ops.add(2, 3), 5)\n",
    );
    for (name, body) in extra {
        s.push_str(&format!("\n    def {name}(self):\n        {body}\n"));
    }
    s
}

const T_SUB: (&str, &str) = ("test_sub", "self.assertEqual(ops.sub(5, 3), 2)");
const T_MUL: (&str, &str) = ("test_mul", "self.assertEqual(ops.mul(4, 3), 12)");
const T_DIV: (&str, &str) = ("test_div", "self.assertEqual(ops.div(6, 3), 2)");

fn pipeline(extra_env: &str, rest: &str) -> String {
    format!(
        r#"
statements = "statements"

[[source]]
name = "p"
path = "repo"

[env]
test_command = "python3 -m unittest -v"
report = "unittest"
{extra_env}

{rest}
"#
    )
}

/// `toml` (from [`pipeline`]) with `command` as the test command.
fn with_test_command(toml: String, command: &str) -> String {
    let default = r#"test_command = "python3 -m unittest -v""#;
    assert!(toml.contains(default), "{toml}");
    toml.replace(default, &format!("test_command = {}", toml_str(command)))
}

fn statement(project: &Project, id: &str, text: &str) {
    project.write(&format!("statements/{id}.md"), text);
}

fn build(project: &Project) -> Build {
    let b = project.build_json(&[]);
    assert!(
        !b.run.stderr.contains("panicked"),
        "panicked:\n{}",
        b.run.stderr
    );
    b
}

/// The released tasks, certified (`tasks.jsonl`) or not
/// (`tasks.uncertified.jsonl`), by SWE-bench instance id.
fn tasks(project: &Project) -> BTreeMap<String, Value> {
    let text: String = ["release/tasks.jsonl", "release/tasks.uncertified.jsonl"]
        .iter()
        .map(|f| {
            std::fs::read_to_string(project.path().join(f))
                .unwrap_or_else(|e| panic!("no {f}: {e}"))
        })
        .collect();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["instance_id"].as_str().unwrap().to_owned(), v)
        })
        .collect()
}

fn funnel(project: &Project) -> Value {
    let text = std::fs::read_to_string(project.path().join("release/funnel.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn kind(b: &Build, k: &str) -> util::Counts {
    b.summary.by_kind.get(k).cloned().unwrap_or_default()
}

/// A repo with one clean fix PR (#1: `sub`), statement included; more PRs may follow.
fn one_fix(project: &Project) -> Repo {
    let mut r = init_repo(project);
    r.pr(
        1,
        "Fix sub",
        &[
            ("pkg/ops.py", &ops_fixed(&["sub"])),
            ("tests/test_ops.py", &test_ops(&[T_SUB])),
        ],
    );
    statement(project, "p-1", "sub(5, 3) returns 8.\n");
    r
}

/// A build whose only task awaits its statement printed `0 certified`,
/// hiding that its screening passed.
#[test]
fn a_certified_task_awaiting_its_statement_is_named_on_the_funnel_line() {
    let project = Project::new();
    let mut r = init_repo(&project);
    r.pr(
        1,
        "Fix sub",
        &[
            ("pkg/ops.py", &ops_fixed(&["sub"])),
            ("tests/test_ops.py", &test_ops(&[T_SUB])),
        ],
    );
    project.write("statements/README", "no statement yet\n");
    project.write("pipeline.toml", pipeline("", ""));
    let b = build(&project);
    assert_eq!(b.run.code, 0, "stderr:\n{}", b.run.stderr);
    let f = funnel(&project);
    assert_eq!(
        (
            f["certified"].clone(),
            f["awaiting_statement_certified"].clone()
        ),
        (0.into(), 1.into()),
        "{f:#}"
    );
    assert!(
        b.run.stderr.contains(
            "-> 1 certified (0 released, 1 awaiting a statement: released once it is written)\n"
        ),
        "{}",
        b.run.stderr
    );
}

#[test]
fn decline_reasons_are_counted_and_a_clean_fix_is_certified() {
    let project = Project::new();
    let mut r = one_fix(&project);
    r.pr(
        2,
        "Docs",
        &[
            ("docs/usage.md", "# usage\n"),
            ("README.md", "# pkg\n\nMore.\n"),
        ],
    );
    r.pr(3, "Code only", &[("pkg/extra.py", "X = 1\n")]);
    r.pr(
        4,
        "Tests only",
        &[("tests/test_more.py", "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        pass\n")],
    );
    project.write("pipeline.toml", pipeline("", ""));
    let b = build(&project);
    assert_eq!(b.run.code, 0, "stderr:\n{}", b.run.stderr);

    let f = funnel(&project);
    assert_eq!(f["candidates"], 4, "{f:#}");
    assert_eq!(f["eligible"], 1, "{f:#}");
    assert_eq!(f["certified"], 1, "{f:#}");
    assert_eq!(f["declined"]["docs_only"], 1, "{f:#}");
    assert_eq!(f["declined"]["no_test_change"], 1, "{f:#}");
    assert_eq!(f["declined"]["no_code_change"], 1, "{f:#}");

    let t = tasks(&project);
    assert_eq!(t.keys().collect::<Vec<_>>(), ["p-1"], "{t:#?}");
    let p1 = &t["p-1"];
    assert_eq!(p1["certified"], true, "{p1:#}");
    assert_eq!(p1["status"], "released", "{p1:#}");
    assert_eq!(
        strs(&p1["test_ids"]["FAIL_TO_PASS"]),
        ["tests.test_ops.TestOps.test_sub"],
        "{p1:#}"
    );
    assert_eq!(
        strs(&p1["test_ids"]["PASS_TO_PASS"]),
        ["tests.test_ops.TestOps.test_add"],
        "{p1:#}"
    );
    assert!(strs(&p1["uncertified_because"]).is_empty(), "{p1:#}");
}

#[test]
fn a_second_build_executes_nothing() {
    let project = Project::new();
    one_fix(&project);
    project.write("pipeline.toml", pipeline("", ""));
    let first = build(&project);
    assert_eq!(first.run.code, 0, "stderr:\n{}", first.run.stderr);
    assert!(kind(&first, "run").executed >= 6, "{:?}", first.summary);
    let before = std::fs::read_to_string(project.path().join("release/tasks.jsonl")).unwrap();

    let second = build(&project);
    assert_eq!(second.run.code, 0, "stderr:\n{}", second.run.stderr);
    assert_eq!(second.summary.total.executed, 0, "{:?}", second.summary);
    assert_eq!(second.summary.total.failed, 0, "{:?}", second.summary);
    let run = kind(&second, "run");
    assert_eq!(run.executed, 0);
    assert_eq!(
        run.reused,
        kind(&first, "run").executed,
        "{:?}",
        second.summary
    );
    let after = std::fs::read_to_string(project.path().join("release/tasks.jsonl")).unwrap();
    assert_eq!(before, after);
}

#[test]
fn a_changed_statement_re_releases_only_its_task() {
    let project = Project::new();
    let mut r = one_fix(&project);
    r.pr(
        2,
        "Fix mul",
        &[
            ("pkg/ops.py", &ops_fixed(&["sub", "mul"])),
            ("tests/test_ops.py", &test_ops(&[T_SUB, T_MUL])),
        ],
    );
    statement(&project, "p-2", "mul(4, 3) returns 7.\n");
    project.write("pipeline.toml", pipeline("", ""));
    let first = build(&project);
    assert_eq!(first.run.code, 0, "stderr:\n{}", first.run.stderr);
    let t1 = tasks(&project);
    assert_eq!(t1.len(), 2, "{t1:#?}");

    statement(&project, "p-1", "sub(5, 3) returns 8, expected 2.\n");
    let second = build(&project);
    assert_eq!(second.run.code, 0, "stderr:\n{}", second.run.stderr);
    let t2 = tasks(&project);
    assert_ne!(t1["p-1"]["digest"], t2["p-1"]["digest"]);
    assert_eq!(t1["p-2"]["digest"], t2["p-2"]["digest"]);
    assert_eq!(
        t2["p-1"]["problem_statement"],
        "sub(5, 3) returns 8, expected 2.\n"
    );
    assert_eq!(kind(&second, "task").executed, 1, "{:?}", second.summary);
    assert_eq!(kind(&second, "run").executed, 0, "{:?}", second.summary);
    assert_eq!(kind(&second, "screen").executed, 0, "{:?}", second.summary);
    assert_eq!(kind(&second, "triage").executed, 0, "{:?}", second.summary);
    // The one executed task node is p-1's; p-2's is reused.
    let ran: Vec<String> = second
        .names("node_finished")
        .into_iter()
        .filter(|n| n.starts_with("task:"))
        .collect();
    assert_eq!(ran, ["task:p-1"]);
    assert!(
        second.names("node_reused").contains(&"task:p-2".to_owned()),
        "{:?}",
        second.names("node_reused")
    );
}

#[test]
fn topic_split_accepted_and_rejected() {
    let project = Project::new();
    let mut r = init_repo(&project);
    r.pr(
        1,
        "Fix sub and mul",
        &[
            ("pkg/ops.py", &ops_fixed(&["sub", "mul"])),
            ("tests/test_ops.py", &test_ops(&[T_SUB, T_MUL])),
        ],
    );
    r.pr(
        2,
        "Fix div",
        &[
            ("pkg/ops.py", &ops_fixed(&["sub", "mul", "div"])),
            ("tests/test_ops.py", &test_ops(&[T_SUB, T_MUL, T_DIV])),
        ],
    );
    for id in ["p-1-a", "p-1-b", "p-2-a", "p-2-b"] {
        statement(&project, id, &format!("statement of {id}\n"));
    }
    project.write(
        "pipeline.toml",
        pipeline(
            "",
            r#"
[[topic_split]]
candidate = "p-1"
topics = { a = "test_sub", b = "test_mul" }

[[topic_split]]
candidate = "p-2"
topics = { a = "test_sub", b = "test_mul" }
"#,
        ),
    );
    let b = build(&project);
    assert_eq!(b.run.code, 0, "stderr:\n{}", b.run.stderr);
    let t = tasks(&project);
    assert_eq!(t.keys().collect::<Vec<_>>(), ["p-1-a", "p-1-b"], "{t:#?}");
    assert_eq!(
        strs(&t["p-1-a"]["test_ids"]["FAIL_TO_PASS"]),
        ["tests.test_ops.TestOps.test_sub"]
    );
    assert_eq!(
        strs(&t["p-1-b"]["test_ids"]["FAIL_TO_PASS"]),
        ["tests.test_ops.TestOps.test_mul"]
    );
    assert_eq!(t["p-1-a"]["certified"], true, "{:#}", t["p-1-a"]);
    assert_eq!(t["p-1-b"]["certified"], true, "{:#}", t["p-1-b"]);
    let f = funnel(&project);
    // Both topic tasks of p-2 are declined: test_div matches no pattern.
    assert_eq!(f["declined"]["topic_split_rejected"], 2, "{f:#}");
    assert_eq!(f["certified"], 1, "{f:#}");
    assert!(!t.contains_key("p-2") && !t.contains_key("p-2-a"), "{t:#?}");
}

#[test]
fn a_flipping_test_is_flaky_and_in_neither_list() {
    let project = Project::new();
    let mut r = init_repo(&project);
    let flaky = r#"import os
import unittest


class TestFlaky(unittest.TestCase):
    def test_flips(self):
        # Every other attempt at a tree fails.
        count = int(os.environ["ASSAY_ATTEMPT"]) + 1
        self.assertEqual(count % 2, 0, f"run #{count}")
"#;
    r.pr(
        1,
        "Fix sub",
        &[
            ("pkg/ops.py", &ops_fixed(&["sub"])),
            ("tests/test_ops.py", &test_ops(&[T_SUB])),
            ("tests/test_flaky.py", flaky),
        ],
    );
    statement(&project, "p-1", "sub(5, 3) returns 8.\n");
    project.write("pipeline.toml", pipeline("", ""));
    let b = build(&project);
    assert_eq!(b.run.code, 0, "stderr:\n{}", b.run.stderr);
    let t = tasks(&project);
    let p1 = &t["p-1"];
    let name = "tests.test_flaky.TestFlaky.test_flips";
    assert_eq!(strs(&p1["flaky"]), [name], "{p1:#}");
    assert!(
        !strs(&p1["test_ids"]["FAIL_TO_PASS"]).contains(&name.to_owned()),
        "{p1:#}"
    );
    assert!(
        !strs(&p1["test_ids"]["PASS_TO_PASS"]).contains(&name.to_owned()),
        "{p1:#}"
    );
    assert_eq!(
        strs(&p1["test_ids"]["FAIL_TO_PASS"]),
        ["tests.test_ops.TestOps.test_sub"],
        "{p1:#}"
    );
}

#[test]
fn a_test_failing_with_the_gold_patch_is_uncertified() {
    let project = Project::new();
    let mut r = init_repo(&project);
    r.pr(
        1,
        "Fix sub",
        &[
            ("pkg/ops.py", &ops_fixed(&["sub"])),
            (
                "tests/test_ops.py",
                &test_ops(&[T_SUB, ("test_needs_missing", "import nonexistent_pkg_xyz")]),
            ),
        ],
    );
    statement(&project, "p-1", "sub(5, 3) returns 8.\n");
    project.write("pipeline.toml", pipeline("", ""));
    let b = build(&project);
    assert_eq!(b.run.code, 0, "stderr:\n{}", b.run.stderr);
    let t = tasks(&project);
    let p1 = &t["p-1"];
    assert_eq!(p1["certified"], false, "{p1:#}");
    let why = strs(&p1["uncertified_because"]);
    assert!(
        why.iter().any(|w| w.starts_with("gold_resolves")
            && w.contains("tests.test_ops.TestOps.test_needs_missing")),
        "{why:?}"
    );
    assert_eq!(
        strs(&p1["test_ids"]["FAIL_TO_PASS"]),
        ["tests.test_ops.TestOps.test_sub"],
        "{p1:#}"
    );
    assert_eq!(funnel(&project)["certified"], 0);
}

#[test]
fn a_spoofed_exit_code_is_not_trusted() {
    let project = Project::new();
    one_fix(&project);
    let toml = with_test_command(pipeline("", ""), "python3 -m unittest -v; exit 1");
    project.write("pipeline.toml", toml);
    let b = build(&project);
    let t = tasks(&project);
    let p1 = &t["p-1"];
    assert_eq!(p1["certified"], false, "{p1:#}");
    let why = strs(&p1["uncertified_because"]);
    assert!(
        why.iter()
            .any(|w| w.starts_with("readings_trusted") && w.contains("exit code 1")),
        "{why:?}"
    );
    let _ = b;
}

/// A test command that is not installed reads nothing: the task is
/// uncertified as `environment_broken`, naming the command and its exit
/// code, and with no reason derived from readings that never happened.
#[test]
fn a_missing_test_command_is_environment_broken_and_nothing_else() {
    let project = Project::new();
    one_fix(&project);
    let toml = with_test_command(pipeline("", ""), "nosuch-runner-xyz -v");
    project.write("pipeline.toml", toml);
    let b = build(&project);
    // The one task screened found its environment broken: the build exits
    // 8 and says what broke.
    b.run
        .environment_broken("`nosuch-runner-xyz` not found (exit 127)");
    let p1 = &tasks(&project)["p-1"];
    assert_eq!(p1["certified"], false, "{p1:#}");
    assert_eq!(p1["status"], "uncertified", "{p1:#}");
    let why = strs(&p1["uncertified_because"]);
    assert_eq!(why.len(), 1, "{why:?}");
    let why = why.first().unwrap();
    assert!(why.starts_with("environment_broken: "), "{why}");
    assert!(
        why.contains("`nosuch-runner-xyz` not found (exit 127)"),
        "{why}"
    );
    assert_eq!(
        funnel(&project)["uncertified_because"]["environment_broken"],
        1
    );
}

#[test]
fn a_timeout_kills_the_whole_process_tree() {
    let project = Project::new();
    one_fix(&project);
    // A background child, an orphaned grandchild (its subshell exits at
    // once), a daemon that left the session, then the shell itself sleeps;
    // all far longer than the timeout. Unique lengths name them in /proc.
    let t = 300 + std::process::id() % 1000;
    let cmd = format!("sleep {t}.1 & (sleep {t}.2 &); (setsid sleep {t}.3 &); sleep {t}.4");
    let toml = with_test_command(pipeline("timeout = 2", "[screen]\nrepeats = 1\n"), &cmd);
    project.write("pipeline.toml", toml);
    // Were the timeout not enforced, this build would last the sleeps.
    build(&project);
    // The build has returned: every process of every run is gone already.
    let alive = util::live_with(&format!("sleep\0{t}."));
    for p in &alive {
        let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
    }
    assert!(alive.is_empty(), "still running after the build: {alive:?}");
    let t = tasks(&project);
    let p1 = &t["p-1"];
    assert_eq!(p1["certified"], false, "{p1:#}");
    let why = strs(&p1["uncertified_because"]).join("\n");
    assert!(why.contains("timed out after 2 s"), "{why}");
}

fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

#[test]
fn gc_removes_environments_no_kept_build_reached() {
    let project = Project::new();
    one_fix(&project);
    project.write(
        "pipeline.toml",
        pipeline(r#"setup = ["echo one > marker"]"#, ""),
    );
    assert_eq!(build(&project).run.code, 0);
    let envs = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(project.cache().join("envs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let old = envs();
    assert_eq!(old.len(), 1);
    // A changed setup is a new environment key: a second directory.
    project.write(
        "pipeline.toml",
        pipeline(r#"setup = ["echo two > marker"]"#, ""),
    );
    assert_eq!(build(&project).run.code, 0);
    assert_eq!(envs().len(), 2);

    let dry = project.run(&["gc", "--keep", "1"]).code(0);
    assert!(
        dry.stdout.contains("1 environment directories"),
        "{}",
        dry.stdout
    );
    assert_eq!(envs().len(), 2, "a dry run deletes nothing");
    project.run(&["gc", "--keep", "1", "--apply"]).code(0);
    let left = envs();
    assert_eq!(left.len(), 1);
    assert_ne!(
        left, old,
        "the environment of the last build is the one kept"
    );
    project.run(&["verify"]).code(0);
    let again = build(&project);
    assert_eq!(again.summary.total.executed, 0, "{:?}", again.summary);
}

#[test]
fn an_explicit_candidates_file_replaces_the_history() {
    let project = Project::new();
    one_fix(&project);
    let head = Command::new("git")
        .args([
            "-C",
            &project.path().join("repo").display().to_string(),
            "rev-parse",
            "HEAD",
        ])
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    // The same PR under another id, named by revisions the file gives.
    project.write(
        "candidates.jsonl",
        format!(
            "{{\"id\": \"p-77\", \"base\": \"{head}^1\", \"head\": \"{head}\", \"title\": \"Fix sub\"}}\n\n"
        ),
    );
    statement(&project, "p-77", "sub(5, 3) returns 8.\n");
    let toml = pipeline("", "").replace(
        "path = \"repo\"",
        "path = \"repo\"\ncandidates = \"candidates.jsonl\"",
    );
    project.write("pipeline.toml", toml);
    let b = build(&project);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    let t = tasks(&project);
    assert_eq!(
        t.keys().cloned().collect::<Vec<_>>(),
        vec!["p-77".to_owned()]
    );
    assert!(t["p-77"]["certified"].as_bool().unwrap());
    assert_eq!(funnel(&project)["candidates"], 1);

    // A malformed line is a config error pointing into the file.
    project.write("candidates.jsonl", "{\"id\": \"p-78\"\n");
    project
        .run(&["build"])
        .code(3)
        .stderr_has("candidates.jsonl")
        .stderr_has("line 1");
}

#[test]
fn too_many_files_is_declined() {
    let project = Project::new();
    one_fix(&project);
    project.write("pipeline.toml", pipeline("", "[triage]\nmax_files = 1\n"));
    assert_eq!(build(&project).run.code, 0);
    let f = funnel(&project);
    assert_eq!(f["declined"]["too_many_files"], 1, "{f}");
    assert_eq!(f["eligible"], 0);
    assert!(tasks(&project).is_empty());
}

#[test]
fn a_failing_environment_setup_is_recorded_and_certifies_nothing() {
    let project = Project::new();
    one_fix(&project);
    project.write(
        "pipeline.toml",
        pipeline(r#"setup = ["echo preparing", "exit 3"]"#, ""),
    );
    let b = build(&project);
    // A recorded outcome, not a crash: the release is written, and as every
    // screened task's environment is broken the build exits 8 saying what
    // broke — the failing command, its exit code, the end of its log.
    b.run.environment_broken("environment's setup failed");
    let t = tasks(&project);
    let task = &t["p-1"];
    assert!(!task["certified"].as_bool().unwrap());
    let why = strs(&task["uncertified_because"]).join(" | ");
    assert!(
        why.contains("environment_broken: ")
            && why.contains("the environment's setup failed: `exit 3` exited with 3")
            && why.contains("its log ends: preparing"),
        "{why}"
    );
    // The setup log is kept as evidence: the env record names it by digest.
    let env = b
        .names("node_finished")
        .into_iter()
        .find(|n| n.starts_with("env:"))
        .expect("an env node ran");
    let record: Value =
        serde_json::from_str(&project.run(&["explain", &env, "--json"]).code(0).stdout).unwrap();
    let shown = project
        .run(&["show", record["output"].as_str().unwrap()])
        .code(0)
        .stdout;
    let env_record: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(env_record["ok"], false);
    assert_eq!(env_record["exit_code"], 3);
    project
        .run(&["show", env_record["setup_log"].as_str().unwrap()])
        .code(0)
        .stdout_has("preparing");
    let envs = std::fs::read_dir(project.cache().join("envs"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(envs, 0, "a failed environment leaves no directory behind");
}

#[test]
fn missing_statement_and_session_directories_are_config_errors() {
    let project = Project::new();
    one_fix(&project);
    let toml = pipeline("", "").replace("statements = \"statements\"", "statements = \"nope\"");
    project.write("pipeline.toml", toml);
    project
        .run(&["build"])
        .code(3)
        .stderr_has("the statements directory")
        .stderr_has("statements = \"nope\"");
    let toml = pipeline("", "").replace(
        "statements = \"statements\"",
        "statements = \"statements\"\nsessions = \"gone\"",
    );
    project.write("pipeline.toml", toml);
    project
        .run(&["build"])
        .code(3)
        .stderr_has("the sessions directory")
        .stderr_has("sessions = \"gone\"");
}

/// Pairs of run nodes that were in flight at once, read from the order of
/// the build's events: a run started between another's start and finish.
/// The scheduler emits `node_started` once a job holds its resources and
/// `node_finished` once it is done, so the order is the truth, with no clock.
fn overlapping_runs(b: &Build) -> Vec<(String, String)> {
    let mut running: Vec<String> = Vec::new();
    let mut pairs = Vec::new();
    for e in &b.events {
        let Some(name) = e["name"].as_str().filter(|n| n.starts_with("run:")) else {
            continue;
        };
        if e["event"] == "node_started" {
            pairs.extend(running.iter().map(|r| (r.clone(), name.to_owned())));
            running.push(name.to_owned());
        } else if e["event"] == "node_finished" || e["event"] == "node_failed" {
            running.retain(|r| r != name);
        }
    }
    pairs
}

/// A build of the one fix under these `[env]` lines, with far more slots
/// than nodes (nothing but the environment holds a run back, and the two
/// repeats of a state become ready together): the pairs of runs that
/// overlapped, with the build, once all six runs executed.
fn overlaps_under(env: &str) -> (Build, Vec<(String, String)>) {
    let project = Project::new();
    one_fix(&project);
    project.write("pipeline.toml", pipeline(env, ""));
    let b = project.build_json(&["--jobs", "16"]);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    assert_eq!(kind(&b, "run").executed, 6, "{:?}", b.summary);
    let overlaps = overlapping_runs(&b);
    (b, overlaps)
}

#[test]
fn runs_of_one_environment_are_serial_unless_configured_otherwise() {
    // Unsandboxed, runs may write the environment: they take turns.
    let (_, overlaps) = overlaps_under(r#"sandbox = "none""#);
    assert!(overlaps.is_empty(), "serial runs overlapped: {overlaps:?}");

    let (b, overlaps) = overlaps_under("sandbox = \"none\"\nserial = false");
    assert!(
        !overlaps.is_empty(),
        "with serial = false runs may overlap, and with 16 slots they do: {:?}",
        b.names("node_started")
    );

    // Under bubblewrap (the default) a run sees the environment read-only
    // and shares nothing with another: runs overlap, serial or not.
    let (b, overlaps) = overlaps_under("");
    assert!(
        !overlaps.is_empty(),
        "sandboxed runs share nothing, and with 16 slots they overlap: {:?}",
        b.names("node_started")
    );
}

#[test]
fn a_report_file_left_as_a_symlink_is_not_followed() {
    let project = Project::new();
    one_fix(&project);
    // A file outside the tree, holding a marker that must never reach the cache.
    let outside = tempfile::tempdir().unwrap();
    let marker = format!("outside-marker-{}", std::process::id());
    let target = outside.path().join("secret.xml");
    std::fs::write(&target, &marker).unwrap();
    let toml = pipeline("", "")
        .replace(
            "test_command = \"python3 -m unittest -v\"",
            &format!(
                "test_command = \"python3 -m unittest -v; ln -sf {} report.xml\"\nreport_file = \"report.xml\"",
                target.display()
            ),
        )
        .replace("report = \"unittest\"", "report = \"junit\"");
    project.write("pipeline.toml", toml);
    assert_eq!(build(&project).run.code, 0);
    let t = tasks(&project);
    let why = strs(&t["p-1"]["uncertified_because"]).join(" | ");
    assert!(why.contains("symbolic link"), "{why}");
    let hits: Vec<_> = walk_files(&project.cache())
        .into_iter()
        .filter(|f| {
            let bytes = std::fs::read(f).unwrap_or_default();
            bytes.windows(marker.len()).any(|w| w == marker.as_bytes())
        })
        .collect();
    assert!(
        hits.is_empty(),
        "the linked file reached the cache: {hits:?}"
    );
}

fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            out.extend(walk_files(&p));
        } else if e.file_type().map(|t| t.is_file()).unwrap_or(false) {
            out.push(p);
        }
    }
    out
}

#[test]
fn reexecute_checks_the_advertised_kinds_and_reads_runs_as_observations() {
    let project = Project::new();
    one_fix(&project);
    // Every reading prints fresh random bytes, so a run read again never
    // reproduces its stored record: an observation, not a function.
    let toml = with_test_command(
        pipeline("", ""),
        "python3 -c 'import os; print(os.urandom(16).hex())' && python3 -m unittest -v",
    );
    project.write("pipeline.toml", toml);
    let b = build(&project);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    let tasks_before = std::fs::read(project.path().join("release/tasks.jsonl")).unwrap();

    // The kinds the README advertises reproduce their outputs exactly.
    project
        .run(&["verify", "--reexecute", "triage,screen,task"])
        .code(0)
        .stdout_has(
            "re-executed 3 nodes of kinds triage,screen,task: 3 identical, 0 differ, 0 verdicts changed, 0 observations read differently",
        );

    // Runs read again differ, and that is a new reading, not a mismatch.
    let runs = kind(&b, "run").executed;
    assert_eq!(runs, 6, "{:?}", b.summary);
    let reread = project.run(&["verify", "--reexecute", "run"]).code(0);
    assert!(
        reread.stdout.contains(&format!(
            "re-executed {runs} nodes of kinds run: 0 identical, 0 differ, 0 verdicts changed, {runs} observations read differently"
        )),
        "{}",
        reread.stdout
    );
    let rereads = reread
        .stderr
        .lines()
        .filter(|l| l.starts_with("REREAD   run:p-1:") && l.contains("an observation"))
        .count();
    assert_eq!(rereads as u64, runs, "{}", reread.stderr);
    // Nothing was committed: the next build has nothing to do, the release
    // is unchanged and the cache still verifies.
    let again = build(&project);
    assert_eq!(again.summary.total.executed, 0, "{:?}", again.summary);
    assert_eq!(
        std::fs::read(project.path().join("release/tasks.jsonl")).unwrap(),
        tasks_before
    );
    project.run(&["verify"]).code(0);

    // A forged screening (FAIL_TO_PASS grows a test) whose digest is forged to
    // match: the cache's own check accepts it, re-execution does not.
    let mut screen = project.output_record("screen:p-1");
    let f2p = screen["fail_to_pass"].as_array_mut().unwrap();
    assert_eq!(f2p.len(), 1, "{screen:#}");
    f2p.push(Value::from("tests.test_ops.TestOps.test_add"));
    let forged = serde_json::to_vec(&screen).unwrap();
    let conn = rusqlite::Connection::open(project.cache().join("index.sqlite")).unwrap();
    let changed = conn
        .execute(
            "UPDATE nodes SET inline = ?1, output = ?2 WHERE name = 'screen:p-1'",
            rusqlite::params![forged, blake3::hash(&forged).as_bytes().to_vec()],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    assert_eq!(
        project.output_record("screen:p-1")["fail_to_pass"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "the forgery took"
    );
    project.run(&["verify", "--cache-only"]).code(0);
    let out = project
        .run(&[
            "verify",
            "--cache-only",
            "--reexecute",
            "triage,screen,task",
        ])
        .code(4);
    assert!(out.stderr.contains("DIFFERS  screen:p-1"), "{}", out.stderr);
    assert!(!out.stderr.contains("triage:p-1"), "{}", out.stderr);
    // `task:p-1` read the forged output, so its key has no row: not checked.
    assert!(
        out.stdout
            .contains("re-executed 2 nodes of kinds triage,screen,task: 1 identical, 1 differ"),
        "{}",
        out.stdout
    );
}

/// `pipeline.toml` with two sources and `envs` as its environment tables.
fn two_sources(source_p: &str, source_q: &str, envs: &str) -> String {
    format!(
        "[[source]]\nname = \"p\"\npath = \"repo\"\n{source_p}\n[[source]]\nname = \"q\"\npath = \"repo\"\n{source_q}\n{envs}"
    )
}

const ENV_A: &str = "[env.a]\ntest_command = \"true\"\nreport = \"tap\"\n";
const ENV_B: &str = "[env.b]\ntest_command = \"true\"\nreport = \"tap\"\n";

#[test]
fn environments_per_source_are_checked_with_a_pointer_into_the_file() {
    let project = Project::new();
    let cases: [(String, &[&str]); 7] = [
        (
            two_sources("env = \"a\"", "env = \"c\"", &format!("{ENV_A}{ENV_B}")),
            &[
                "no environment `c`",
                "env = \"c\"",
                "the environments are: a, b",
            ],
        ),
        (
            two_sources("env = \"a\"", "", &format!("{ENV_A}{ENV_B}")),
            &[
                "names no environment, and there are several",
                "add `env = \"NAME\"`",
            ],
        ),
        (
            two_sources(
                "env = \"a\"",
                "",
                "[env]\ntest_command = \"true\"\nreport = \"tap\"\n",
            ),
            &[
                "this pipeline has one unnamed [env]",
                "rename [env] to [env.a]",
            ],
        ),
        (
            two_sources("", "", "[env]\ntest_comand = \"true\"\nreport = \"tap\"\n"),
            &["unknown field `test_comand`", "test_command"],
        ),
        (
            two_sources(
                "env = \"a\"",
                "env = \"a\"",
                &format!("[env]\nrepot = \"tap\"\n{ENV_A}"),
            ),
            &[
                "expected a key of [env]",
                "[env.NAME] table",
                "repot = \"tap\"",
            ],
        ),
        (
            two_sources(
                "",
                "",
                "[env]\nexecutor = \"podman\"\ntest_command = \"true\"\nreport = \"tap\"\n",
            ),
            &["unknown executor `podman`", "use `local`"],
        ),
        (
            two_sources(
                "",
                "",
                "[env]\nexecutor = \"docker\"\ncpus = 0\ntest_command = \"true\"\nreport = \"tap\"\n",
            ),
            &["`cpus` must be a positive number", "cpus = 0"],
        ),
    ];
    for (toml, needles) in cases {
        project.write("pipeline.toml", &toml);
        let mut run = project.run(&["build"]).code(3);
        for needle in needles {
            run = run.stderr_has(needle);
        }
    }
}

#[test]
fn one_named_environment_serves_a_source_that_names_none() {
    let project = Project::new();
    one_fix(&project);
    let toml = pipeline("", "").replace("[env]", "[env.only]");
    project.write("pipeline.toml", toml);
    let b = build(&project);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    assert_eq!(tasks(&project)["p-1"]["certified"], true);
}
