//! The grading fixture (after `tests/grading.rs`, which tests every verdict
//! with it): a small Python repository with two merged pull requests, its
//! statements and a `sessions/` directory, on either executor (the hostile
//! sessions graded with it are in `attacks.rs`).
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
    /// `[env] executor = "slurm"`, on the cluster `SLURM_CONF` names
    /// (`super::project::set_env`): the local sandbox on its nodes.
    Slurm,
}

impl Executor {
    /// The `sandbox` column of results.csv for a run on this executor.
    pub fn sandbox(self) -> &'static str {
        match self {
            Executor::Local | Executor::Slurm => "bwrap",
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

/// [`Fixture::clamp`]'s `clamp` before its fix: negatives pass through.
pub const CLAMP_BASE: &str = "

def clamp(x):
    return x
";

/// `clamp` fixed.
pub const CLAMP_FIXED: &str = "

def clamp(x):
    return max(x, 0)
";

/// [`Fixture::clamp`]'s hidden test: the 0 it expects is written again in
/// a comment and in the failure message.
pub const TEST_CLAMP: &str = "
    def test_clamp(self):
        # a negative clamps to 0
        self.assertEqual(ops.clamp(-7), 0, \"clamp(-7) should be 0\")
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
        Fixture::with_task1(executor, files, OPS_BASE, OPS_SUB, TEST_SUB)
    }

    /// The fixture whose p-1 fixes `clamp` instead of `sub` ([`OPS_CLAMP`]),
    /// its hidden test [`TEST_CLAMP`] expecting a 0 that its failure
    /// message and a comment write again: a value no seal can take from a
    /// window (issue 47), and the smallest a window may hold.
    pub fn clamp(executor: Executor) -> Fixture {
        let base = format!("{OPS_BASE}{CLAMP_BASE}");
        let fixed = format!("{OPS_SUB}{CLAMP_FIXED}");
        Fixture::with_task1(executor, &[], &base, &fixed, TEST_CLAMP)
    }

    /// The correct fix of [`Fixture::clamp`]'s p-1.
    pub fn fix_clamp(&self) -> String {
        self.diff1(&[("pkg/ops.py", Some(&format!("{OPS_BASE}{CLAMP_FIXED}")))])
    }

    fn with_task1(
        executor: Executor,
        files: &[(&str, &str)],
        ops_base: &str,
        ops_fixed: &str,
        test_new: &str,
    ) -> Fixture {
        let project = Project::new();
        let mut r = Repo::new(&project, "repo");
        r.put(".gitignore", "__pycache__/\n*.pyc\n")
            .put("README.md", "# pkg\n")
            .put("pkg/__init__.py", "")
            .put("pkg/ops.py", ops_base)
            .put("tests/__init__.py", "")
            .put("tests/test_ops.py", TEST_OPS_BASE);
        for (path, text) in files {
            r.put(path, text);
        }
        r.commit("Initial commit");
        let base1 = r.head();
        let test_ops_sub = format!("{TEST_OPS_BASE}{test_new}");
        r.pr(
            1,
            "Fix sub",
            &[
                ("pkg/ops.py", ops_fixed),
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

    /// The slurm executor's node-local cache: `ROOT/NODE/{envs,runs}`.
    pub fn node_cache(&self) -> PathBuf {
        self.project.path().join("node-cache")
    }

    pub fn pipeline_with_timeout(&self, exclusion: &str, log_cap: u64, timeout: u64, extra: &str) {
        let exclusion = if exclusion.is_empty() {
            String::new()
        } else {
            format!("exclusion = \"{exclusion}\"")
        };
        let executor = match self.executor {
            Executor::Local => String::new(),
            Executor::Docker => "executor = \"docker\"\n".into(),
            // The nodes' own cache in the project's temp dir (never /tmp's).
            Executor::Slurm => format!(
                "executor = \"slurm\"\nslurm = {{ nodes = 2, node_cache = \"{}\" }}\n",
                self.node_cache().display()
            ),
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

    /// The blob of the grade's receipt `what` (`log`, `rerun 1 log`, …), as
    /// text.
    pub fn evidence(&self, grade: &Value, what: &str) -> String {
        let digest = grade["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["what"] == what)
            .unwrap_or_else(|| panic!("no {what} receipt: {grade:#}"))["digest"]
            .as_str()
            .unwrap()
            .to_owned();
        String::from_utf8_lossy(&self.project.blob(&digest)).into_owned()
    }

    pub fn build_ok(&self) -> Build {
        let b = self.build(&[]);
        let failed: Vec<String> = b
            .events
            .iter()
            .filter(|e| e["event"] == "node_failed")
            .map(|e| format!("{}: {}", e["name"], e["reason"]))
            .collect();
        assert_eq!(
            b.run.code,
            0,
            "build failed\n--- stderr\n{}\n--- failed\n{}\n--- summary\n{:?}",
            b.run.stderr,
            failed.join("\n"),
            b.summary
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

    /// The released task `id`, from `release/tasks.jsonl`.
    pub fn released_task(&self, id: &str) -> Value {
        let text = std::fs::read_to_string(self.path().join("release/tasks.jsonl"))
            .unwrap_or_else(|e| panic!("no tasks.jsonl: {e}"));
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|t| t["instance_id"] == id)
            .unwrap_or_else(|| panic!("no task {id} in {text}"))
    }
}

/// The base image, built once per test process if the daemon lacks it; a
/// daemon that does not answer fails the test here.
pub fn docker_base_image() {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let info = std::process::Command::new("docker")
            .args(["info", "--format", "{{.ServerVersion}}"])
            .output()
            .expect("run `docker info`");
        assert!(
            info.status.success(),
            "these tests need a running Docker daemon:\n{}",
            String::from_utf8_lossy(&info.stderr)
        );
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/base-image.sh");
        let out = std::process::Command::new(script)
            .output()
            .expect("run scripts/base-image.sh");
        assert!(
            out.status.success(),
            "scripts/base-image.sh failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// Asserts the verdict of both arms, showing the whole row when it differs.
pub fn assert_verdict(f: &Fixture, session: &str, exclude: &str, keep: &str) {
    for (arm, want) in [("exclude", exclude), ("keep", keep)] {
        let row = f.row(session, arm);
        assert_eq!(row["verdict"], want, "{session} {arm}: {row:#?}");
    }
}

/// `sub` is right only when its test files are named on the command line
/// (a rerun of failing files): the whole-suite run of a tree fails, a rerun
/// passes. Order-dependent code, as flaky as a graded run can see: graded
/// runs get no attempt number.
pub const OPS_FLAKY: &str = r#"import sys


def _named_files():
    return any(arg.endswith(".py") for arg in sys.argv[1:])


_WARM = _named_files()


def add(a, b):
    return a + b


def sub(a, b):
    return a - b if _WARM else a + b


def mul(a, b):
    return a + b
"#;

/// One session of each verdict the fixture can give, written into `f`.
pub fn every_verdict(f: &Fixture) {
    f.session("a/fix.json", "p-1", &f.fix1());
    f.session(
        "a/flaky.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_FLAKY))]),
    );
    let wrong = OPS_BASE.replace(
        "def sub(a, b):\n    return a + b",
        "def sub(a, b):\n    return b - a",
    );
    f.session(
        "a/wrong.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(&wrong))]),
    );
    f.session("a/empty.json", "p-1", "");
    f.session("a/mul.json", "p-2", &f.fix2());
    f.session(
        "a/stale.json",
        "p-1",
        &f.checkout.diff(
            &f.base1,
            &[("README.md", "# pkg, wip\n")],
            &[("README.md", Some("# pkg, done\n"))],
        ),
    );
    f.session(
        "a/exit0.json",
        "p-1",
        &super::attacks::hostile(f, "import os\nos._exit(0)\n"),
    );
    f.session(
        "a/exit127.json",
        "p-1",
        &super::attacks::hostile(f, "import os\nos._exit(127)\n"),
    );
    f.session(
        "a/flood.json",
        "p-1",
        &f.diff1(&[
            ("pkg/ops.py", Some(OPS_SUB)),
            ("pkg/__init__.py", Some("print('x' * (2 << 20))\n")),
        ]),
    );
    f.session(
        "a/collide.json",
        "p-2",
        &f.diff2(&[
            ("pkg/ops.py", Some(OPS_SUB_MUL)),
            ("tests/test_mul.py", Some(TEST_EXTRA)),
        ]),
    );
    f.session(
        "a/extra.json",
        "p-1",
        &f.diff1(&[
            ("pkg/ops.py", Some(OPS_SUB)),
            ("tests/test_extra.py", Some(TEST_EXTRA)),
        ]),
    );
}

/// `other` (the fixture graded on another executor) gives `local`'s
/// verdicts, faults, failing tests, checks, reruns and tamper findings,
/// every verdict of [`every_verdict`] among them, with its own sandbox.
pub fn same_verdicts(local: &Fixture, other: &Fixture) {
    let (l, d) = (local.results(), other.results());
    assert_eq!(
        l.keys().collect::<Vec<_>>(),
        d.keys().collect::<Vec<_>>(),
        "the same grades"
    );
    let mut verdicts = std::collections::BTreeSet::new();
    for (key, lrow) in &l {
        let drow = &d[key];
        for column in [
            "verdict",
            "fault",
            "failing",
            "base_check",
            "new_check",
            "reruns",
            "tamper",
        ] {
            assert_eq!(
                lrow[column], drow[column],
                "{key:?} {column}: local {lrow:#?}\n{:?} {drow:#?}",
                other.executor
            );
        }
        // A grade with no run (the patch did not apply) has no sandbox.
        let sandboxes = (lrow["sandbox"].as_str(), drow["sandbox"].as_str());
        assert!(
            sandboxes == ("bwrap", other.executor.sandbox()) || sandboxes == ("", ""),
            "{key:?}: {sandboxes:?}"
        );
        verdicts.insert(lrow["verdict"].clone());
    }
    for v in [
        "resolved",
        "resolved_after_rerun",
        "unresolved",
        "patch_apply_failed",
        "no_report",
        "ineligible",
    ] {
        assert!(verdicts.contains(v), "no {v} among {verdicts:?}");
    }
}
