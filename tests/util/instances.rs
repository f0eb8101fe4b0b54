//! The fixtures of the SWE-bench-family instance tests (`tests/instances.rs`,
//! `tests/instance_health.rs`): a small Python repository laid out as
//! SWE-bench's Django spec runs it, its instance image built locally
//! `FROM assay-base:bookworm` under the names a family gives it, rows in
//! SWE-bench's schema over it, session files, and the released tasks read
//! back.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::git::git_in;

pub fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
pub const TEST_CALC: &str = "\
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
pub const TEST_MUL: &str = "

class MulTest(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(calc.mul(3, 4), 12)
";
/// Django's runner as SWE-bench calls it: flags, then dotted modules
/// under `tests/`; `unittest -v`'s lines on stderr.
pub const RUNTESTS: &str = include_str!("../instances/runtests.py");

/// The repository, its base, and the two patches: the test patch adds
/// `MulTest` to `tests/test_calc.py`, the gold patch `calc.mul`. The fix is also
/// committed on a branch `future` (and tagged): history after the base
/// that the image keeps.
pub struct Repo {
    pub base: String,
    pub test_patch: String,
    pub gold_patch: String,
}

pub fn repository(dir: &Path) -> Repo {
    std::fs::create_dir_all(dir).unwrap();
    let git = |args: &[&str]| git_in(dir, 1, args);
    git(&["init", "-q", "-b", "main"]);
    write(dir, "calc.py", CALC);
    write(dir, "tests/test_calc.py", TEST_CALC);
    write(dir, "tests/runtests.py", RUNTESTS);
    std::fs::set_permissions(
        dir.join("tests/runtests.py"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    let base = git(&["rev-parse", "HEAD"]).trim().to_owned();
    write(dir, "tests/test_calc.py", &format!("{TEST_CALC}{TEST_MUL}"));
    git(&["add", "-A"]);
    let test_patch = git(&["diff", "--cached", "--binary", &base]);
    git(&["reset", "-q", "--hard", &base]);
    write(
        dir,
        "calc.py",
        &format!("{CALC}\n\ndef mul(a, b):\n    return a * b\n"),
    );
    let gold_patch = git(&["diff", "--binary", &base]);
    git(&["checkout", "-q", "-b", "future"]);
    git(&["commit", "-q", "-am", "the fix, after the base"]);
    git(&["tag", "v2"]);
    git(&["checkout", "-q", "main"]);
    Repo {
        base,
        test_patch,
        gold_patch,
    }
}

/// The instance image, built from `dir` (`repo` copied to `/testbed`,
/// `WORKDIR /testbed/` as SWE-bench's instance Dockerfile writes it,
/// its `.git` and the future commit in it) and tagged with each of `tags`;
/// removed when dropped.
pub struct Image(pub Vec<String>);

impl Image {
    pub fn build(dir: &Path, tags: &[&str]) -> Image {
        Image::build_from("assay-base:bookworm", dir, tags)
    }

    /// As [`Image::build`], `FROM` the image `base`.
    pub fn build_from(base: &str, dir: &Path, tags: &[&str]) -> Image {
        Image::build_with(
            &format!("FROM {base}\nUSER root\nCOPY repo /testbed\nWORKDIR /testbed/\n"),
            dir,
            tags,
        )
    }

    /// The image of `dockerfile`, built in `dir`, tagged `tags`.
    pub fn build_with(dockerfile: &str, dir: &Path, tags: &[&str]) -> Image {
        write(dir, "Dockerfile", dockerfile);
        let mut cmd = Command::new("docker");
        cmd.args(["build", "-q"]);
        for tag in tags {
            cmd.args(["-t", tag]);
        }
        let out = cmd.arg(dir).output().unwrap();
        assert!(
            out.status.success(),
            "docker build: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Image(tags.iter().map(|t| (*t).to_owned()).collect())
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = Command::new("docker").arg("rmi").args(&self.0).output();
    }
}

/// A row in SWE-bench's schema, its lists as JSON strings (the Hugging
/// Face datasets' form).
pub fn row(id: &str, r: &Repo, f2p: &[String], p2p: &[String], extra: &[(&str, Value)]) -> String {
    let ids = |v: &[String]| serde_json::to_string(v).unwrap();
    let mut v = serde_json::json!({
        "repo": "django/django",
        "instance_id": id,
        "base_commit": r.base,
        "patch": r.gold_patch,
        "test_patch": r.test_patch,
        "problem_statement": "Add `calc.mul(a, b)`.\n",
        "hints_text": "",
        "created_at": "2026-01-05T10:00:00Z",
        "version": "3.0",
        "FAIL_TO_PASS": ids(f2p),
        "PASS_TO_PASS": ids(p2p),
        "environment_setup_commit": r.base,
    });
    for (k, val) in extra {
        v[*k] = val.clone();
    }
    v.to_string()
}

/// The SWE-bench form of a test id (`parse_log_django`'s keys).
pub fn django(id: &str) -> String {
    let method = id.rsplit('.').next().unwrap();
    format!("{method} ({id})")
}

pub fn lines(p: &super::Project, file: &str) -> Vec<Value> {
    std::fs::read_to_string(p.path().join("release").join(file))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn released(p: &super::Project, id: &str) -> Value {
    lines(p, "tasks.jsonl")
        .into_iter()
        .chain(lines(p, "tasks.uncertified.jsonl"))
        .find(|t| t["instance_id"] == id)
        .unwrap_or_else(|| panic!("no task {id} in the release"))
}

/// (test, list, kind) of each disagreement of a released task.
pub fn disagreements(task: &Value) -> Vec<(String, String, String)> {
    task["dataset"]["disagreements"]
        .as_array()
        .unwrap_or_else(|| panic!("no dataset lists: {task:#}"))
        .iter()
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap().to_owned();
            (s("test"), s("list"), s("kind"))
        })
        .collect()
}

/// A patch that finds the fix in the image's history (any repository it
/// can reach: the working directory, the tree, `/testbed`) and writes it
/// over `calc.py` before the tests import it: it resolves only if the
/// history reached the graded run.
pub fn history_patch(repo: &Path) -> String {
    let git = |args: &[&str]| git_in(repo, 1, args);
    write(
        repo,
        "calc.py",
        &format!("{CALC}\n{}", sneak("future:calc.py", "def mul")),
    );
    git(&["add", "-A"]);
    let patch = git(&["diff", "--cached", "--binary"]);
    git(&["reset", "-q", "--hard"]);
    patch
}

/// Python that looks for `rev` (`git show`) in every repository a run can
/// reach (the working directory, the tree, `/testbed`) and runs it when it
/// holds `needle`: code that finds the fix in the image's history.
pub fn sneak(rev: &str, needle: &str) -> String {
    format!(
        "\
import os
import subprocess

for _d in ('/testbed', '/assay/tree', os.getcwd()):
    _r = subprocess.run(['git', '-C', _d, 'show', '{rev}'], capture_output=True, text=True)
    if _r.returncode == 0 and '{needle}' in _r.stdout:
        exec(_r.stdout)
        break
"
    )
}

/// The row of the instance over `r` whose FAIL_TO_PASS is the test patch's
/// `MulTest.test_mul` and PASS_TO_PASS `CalcTest.test_add`.
pub fn mul_row(id: &str, r: &Repo) -> String {
    row(
        id,
        r,
        &[django("test_calc.MulTest.test_mul")],
        &[django("test_calc.CalcTest.test_add")],
        &[],
    )
}

/// The verdict of `session`'s scored arm in the release's results.csv.
pub fn verdict(p: &super::Project, session: &str) -> String {
    let text = std::fs::read_to_string(p.path().join("release/results.csv")).unwrap();
    super::csv::csv_records(&text)
        .into_iter()
        .find(|row| row["session"] == session && row["arm"] == "exclude")
        .unwrap_or_else(|| panic!("no grade of {session}: {text}"))["verdict"]
        .clone()
}
