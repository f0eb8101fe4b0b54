//! Python's import guard: every test run (screening, graded, reruns,
//! checks) gets a read-only directory first on `PYTHONPATH` whose
//! `sitecustomize.py` keeps the standard library and the test framework
//! from being shadowed by modules of the tree (a `unittest/` package at the
//! tree's root that prints a passing report). How it works is the Python
//! file's own docstring (`guard/sitecustomize.py`); what it does not cover
//! is in docs/security.md.
//!
//! The same file installs an audit hook that reports tampering with the
//! runner from inside its process (docs/security.md, "Tampering with the
//! runner is evidence"): each finding is a line on the run's output pipe,
//! written at the moment of the event through descriptor [`AUDIT_FD`]
//! (which the test command's shell opens, [`with_channel`]); [`findings`]
//! reads them back out of the log. The hidden test files reach it as
//! `ASSAY_HIDDEN`.
//!
//! Screening runs get it too, so that a repository the guard breaks fails
//! its controls (uncertified, the harness's) instead of failing only its
//! graded runs (which would blame the agent). Environment setup does not:
//! it runs the maintainer's commands, never the tree.
//!
//! The file is assay's, never the run's: locally it is written into the
//! run's scratch directory and bound read-only at [`assay_exec::sandbox::GUARD`];
//! on Docker it is part of the environment image, root's and read-only, at
//! [`assay_docker::GUARD_DIR`]. Changing what it does changes what runs
//! observe: bump the run kind's version (and, for Docker, it enters the
//! image's spec and the confinement's key by its digest).

use std::path::Path;

/// The guard's source, with the tree's path still the sandbox's.
const SITECUSTOMIZE: &str = include_str!("guard/sitecustomize.py");

/// The line of [`SITECUSTOMIZE`] that names the tree.
const TREE_LINE: &str = "_TREE = \"/assay/tree\"\n";

/// The file name the guard directory holds.
pub(crate) const FILE: &str = "sitecustomize.py";

/// The guard for a run whose tree is at `tree` (as the run sees it).
pub(crate) fn source(tree: &str) -> String {
    let literal = serde_json::to_string(tree).unwrap_or_else(|_| "\"/assay/tree\"".into());
    SITECUSTOMIZE.replacen(TREE_LINE, &format!("_TREE = {literal}\n"), 1)
}

/// blake3 of the guard as a sandboxed run gets it: keys what the Docker
/// image carries.
pub(crate) fn digest() -> &'static str {
    static DIGEST: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        blake3::hash(source(assay_exec::sandbox::TREE).as_bytes())
            .to_hex()
            .to_string()
    });
    &DIGEST
}

/// Writes the guard for a tree seen at `tree` into the directory `dir`
/// (created; the run sees it through a read-only bind, or, unsandboxed, as
/// a file it does not own when assay is root).
pub(crate) fn write(dir: &Path, tree: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    let file = dir.join(FILE);
    std::fs::write(&file, source(tree))?;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444))
}

/// The descriptor a test command's shell duplicates its stderr (the output
/// pipe assay drains) onto before the command runs (`ASSAY_AUDIT_FD`): the
/// audit hook's channel even when the command sends stderr to a report
/// file in the tree, which the run could rewrite. One digit: dash
/// redirects no higher.
pub(crate) const AUDIT_FD: u32 = 9;

/// `command` as a test run's shell runs it: with the audit hook's channel
/// ([`AUDIT_FD`]) opened first, on the command's first line (the shell's
/// messages keep their line numbers: `sh: 1: pytest: not found`).
pub(crate) fn with_channel(command: &str) -> String {
    format!("exec {AUDIT_FD}>&2; {command}")
}

/// What starts a line of the audit hook's on the run's output (the guard's
/// `_MARK`).
const MARK: &[u8] = b"[assay-audit] ";

/// At most this many findings are kept per run: more only come from code
/// writing lines shaped like them, which can only hurt itself.
const MAX_FINDINGS: usize = 64;

/// The audit hook's findings in a run's output `log`, each `EVENT: detail`
/// in order of arrival, without repeats; and the output without them.
///
/// The hook writes each finding as `\n`, [`MARK`], the event, a tab, the
/// detail, `\n`, at the moment of the event, into the output pipe assay
/// drains: what was written cannot be taken back, so every occurrence of
/// the mark counts wherever it falls (one cut short by the end of the log
/// or by another mark too). Those bytes are taken out again, so that the
/// runner's own output (a unittest report is the log) reads as it would
/// have without the hook.
pub(crate) fn findings(log: &[u8]) -> (Vec<String>, Vec<u8>) {
    let (lines, rest) = crate::model::canary::channel_lines(log, MARK);
    let mut found: Vec<String> = Vec::new();
    for (line, _) in lines {
        let finding = match line.split_once('\t') {
            Some((event, detail)) => format!("{}: {}", event.trim(), detail.trim()),
            None => line.trim().to_owned(),
        };
        if !found.contains(&finding) && found.len() < MAX_FINDINGS {
            found.push(finding);
        }
    }
    (found, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_read_wherever_they_fall_and_taken_out_of_the_output() {
        let log = b"test_add ... ok\ntest_sub ... \n[assay-audit] sys.settrace\tcalled by pkg/__init__.py:3\nok\n\
                    \n[assay-audit] runner.changed\tunittest.result.TestResult.addFailure replaced\n\
                    tail[assay-audit] import\tctypes[assay-audit] exec\tcut";
        let (found, rest) = findings(log);
        assert_eq!(
            found,
            [
                "sys.settrace: called by pkg/__init__.py:3",
                "runner.changed: unittest.result.TestResult.addFailure replaced",
                "import: ctypes",
                "exec: cut",
            ]
        );
        assert_eq!(rest, b"test_add ... ok\ntest_sub ... ok\ntail");
        assert_eq!(
            crate::model::rules::verdict::audit_rule(&found[1]),
            "runner.changed"
        );
        let (none, same) = findings(b"Ran 2 tests\n\nOK\n");
        assert!(none.is_empty());
        assert_eq!(same, b"Ran 2 tests\n\nOK\n");
    }

    #[test]
    fn the_tree_line_is_there_to_be_replaced() {
        assert_eq!(SITECUSTOMIZE.matches(TREE_LINE).count(), 1);
        let host = source("/cache/tmp/run-x/tr\"ee");
        assert!(
            host.contains("_TREE = \"/cache/tmp/run-x/tr\\\"ee\"\n"),
            "{host}"
        );
        assert!(!host.contains(TREE_LINE));
        assert_eq!(source(assay_exec::sandbox::TREE), SITECUSTOMIZE);
    }

    /// `python3 -c CODE` in `tree` (first on its `sys.path`), with the guard
    /// on `PYTHONPATH` or not; its stdout and stderr.
    fn python(tree: &Path, guard: Option<&Path>, code: &str) -> String {
        let mut cmd = std::process::Command::new("python3");
        cmd.args(["-c", code])
            .current_dir(tree)
            .env_remove("PYTHONPATH")
            .env("PYTHONDONTWRITEBYTECODE", "1");
        if let Some(dir) = guard {
            cmd.env("PYTHONPATH", dir);
        }
        let out = cmd.output().unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    #[test]
    fn a_tree_cannot_stand_in_for_the_standard_library_or_pytest() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("unittest")).unwrap();
        std::fs::write(
            tree.join("unittest/__init__.py"),
            "print('FAKE unittest')\n",
        )
        .unwrap();
        std::fs::write(tree.join("json.py"), "print('FAKE json')\n").unwrap();
        std::fs::write(tree.join("pytest.py"), "print('FAKE pytest')\n").unwrap();
        std::fs::write(tree.join("mine.py"), "print('own module')\n").unwrap();
        let code = "import unittest, json, mine\n\
                    try:\n    import pytest\nexcept ImportError as e:\n    print(e)\n";
        // Unguarded, the tree wins: the attack is real.
        let bare = python(&tree, None, code);
        assert!(
            bare.contains("FAKE unittest") && bare.contains("FAKE json"),
            "{bare}"
        );
        let guard = dir.path().join("guard");
        write(&guard, tree.to_str().unwrap()).unwrap();
        let guarded = python(&tree, Some(&guard), code);
        assert!(!guarded.contains("FAKE"), "{guarded}");
        // The tree's own modules still import from it.
        assert!(guarded.contains("own module"), "{guarded}");
    }
}

#[cfg(test)]
mod audit_tests {
    use std::path::{Path, PathBuf};

    /// A tree whose hidden test file is `tests/test_x.py`, and the guard
    /// for it.
    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("tests")).unwrap();
        std::fs::write(
            tree.join("tests/test_x.py"),
            // CRLF: read in text mode, it is other bytes and the same file.
            "def f(x):\r\n    return x\r\n\r\n\r\ndef test_f():\r\n    assert f(1) == 2\r\n",
        )
        .unwrap();
        let guard = dir.path().join("guard");
        super::write(&guard, tree.to_str().unwrap()).unwrap();
        (dir, tree, guard)
    }

    /// `python3 -c CODE` in `tree` under `guard` (none: unguarded), the
    /// hidden file named; its stdout and stderr.
    fn run(tree: &Path, guard: Option<&Path>, code: &str) -> String {
        run_with(tree, guard, code, &[])
    }

    fn run_with(tree: &Path, guard: Option<&Path>, code: &str, vars: &[(&str, &str)]) -> String {
        let mut cmd = std::process::Command::new("python3");
        cmd.envs(vars.iter().copied());
        cmd.args(["-c", code])
            .current_dir(tree)
            .env_remove("PYTHONPATH")
            .env_remove("ASSAY_AUDIT_FD")
            .env("ASSAY_HIDDEN", "tests/test_x.py")
            .env("PYTHONDONTWRITEBYTECODE", "1");
        if let Some(dir) = guard {
            cmd.env("PYTHONPATH", dir);
        }
        let out = cmd.output().unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// The file read in text mode, compiled and run; then what pytest's
    /// assertion rewriting does to it, in small (each assert becomes `@py`
    /// assignments and an `if not …: raise`), run; then
    /// an AST whose test returns before its assertion, and the file's
    /// source changed, each compiled and run; then a marshalled code object
    /// of a changed file (a planted `.pyc`), made unguarded, run.
    const COMPILES: &str = r#"import ast, marshal, os, sys
path = os.path.abspath("tests/test_x.py")
src = open(path).read()
exec(compile(src, path, "exec"), {})
print("TEXT RAN")

class Rewrite(ast.NodeTransformer):
    def visit_Assert(self, node):
        keep = ast.Assign(targets=[ast.Name("@py_assert1", ast.Store())], value=node.test)
        check = ast.If(
            test=ast.UnaryOp(ast.Not(), ast.Name("@py_assert1", ast.Load())),
            body=[ast.Raise(exc=ast.Call(ast.Name("AssertionError", ast.Load()), [], []), cause=None)],
            orelse=[],
        )
        return [ast.copy_location(keep, node), ast.copy_location(check, node)]

tree = Rewrite().visit(ast.parse(src))
tree.body.insert(0, ast.Import(names=[ast.alias("builtins", "@py_builtins")]))
tree = ast.fix_missing_locations(tree)
exec(compile(tree, path, "exec"), {})
print("REWRITE RAN")
for what, source in (
    ("AST", ast.parse(src.replace("assert f(1) == 2", "return"))),
    ("SOURCE", src.replace("f(1) == 2", "True")),
):
    try:
        exec(compile(source, path, "exec"), {})
        print(what, "RAN")
    except RuntimeError as error:
        print(what, "REFUSED", error)
planted = os.environ.get("PLANTED")
if planted:
    try:
        exec(marshal.loads(bytes.fromhex(planted)), {})
        print("PYC RAN")
    except RuntimeError as error:
        print("PYC REFUSED", error)
else:
    print(marshal.dumps(compile(src.replace("f(1) == 2", "True"), path, "exec")).hex())
"#;

    #[test]
    fn a_hidden_test_compiled_from_other_source_is_refused_and_reported() {
        let (_dir, tree, guard) = tree();
        let bare = run(&tree, None, COMPILES);
        assert!(
            bare.contains("AST RAN") && bare.contains("SOURCE RAN"),
            "{bare}"
        );
        let planted = bare.lines().last().unwrap().to_owned();
        let guarded = run_with(&tree, Some(&guard), COMPILES, &[("PLANTED", &planted)]);
        // pytest's rewriting passes; the rest is refused, each reported:
        // source when it is compiled, an AST (whose `compile` event names
        // no file) and a marshalled code object when they would run.
        assert!(guarded.contains("TEXT RAN"), "{guarded}");
        assert!(guarded.contains("REWRITE RAN"), "{guarded}");
        assert!(guarded.contains("AST REFUSED"), "{guarded}");
        assert!(guarded.contains("SOURCE REFUSED"), "{guarded}");
        assert!(guarded.contains("PYC REFUSED"), "{guarded}");
        let (found, _) = super::findings(guarded.as_bytes());
        assert_eq!(
            found
                .iter()
                .map(|f| crate::model::rules::verdict::audit_rule(f))
                .collect::<Vec<_>>(),
            ["exec", "compile"],
            "{guarded}"
        );
    }

    /// The channel closed, or another file put in its place, before a
    /// finding: the action is refused, not done unseen.
    #[test]
    fn a_finding_the_channel_cannot_carry_refuses_the_action() {
        let (_dir, tree, guard) = tree();
        for cut in [
            "os.closerange(3, 4096)",
            "null = os.open('/dev/null', os.O_WRONLY)\nfor n in range(3, 64):\n    if n != null: os.dup2(null, n)",
        ] {
            let code = format!(
                "import os, sys\n{cut}\ntry:\n    sys.settrace(None)\n    print('TRACED')\nexcept RuntimeError as e:\n    print('REFUSED', e)\n"
            );
            assert!(run(&tree, None, &code).contains("TRACED"));
            let guarded = run(&tree, Some(&guard), &code);
            assert!(
                guarded.contains("REFUSED") && guarded.contains("channel is gone"),
                "{cut}: {guarded}"
            );
        }
        // With the channel whole, the same call is reported and done.
        let whole = run(
            &tree,
            Some(&guard),
            "import sys\nsys.settrace(None)\nprint('TRACED')",
        );
        let (found, rest) = super::findings(whole.as_bytes());
        assert_eq!(found, ["sys.settrace: called by code outside the tree"]);
        assert!(String::from_utf8_lossy(&rest).contains("TRACED"));
    }
}

#[cfg(test)]
mod runner_tests {
    use std::path::{Path, PathBuf};

    /// A tree with a module `mod.py` holding `code`, and the guard for it.
    fn tree(code: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join("mod.py"), code).unwrap();
        let guard = dir.path().join("guard");
        super::write(&guard, tree.to_str().unwrap()).unwrap();
        (dir, tree, guard)
    }

    /// `python3 -c CODE` in `tree` with the guard on `PYTHONPATH`: the
    /// hook's findings.
    fn findings(tree: &Path, guard: &Path, code: &str) -> Vec<String> {
        let out = std::process::Command::new("python3")
            .args(["-c", code])
            .current_dir(tree)
            .env("PYTHONPATH", guard)
            .env_remove("ASSAY_AUDIT_FD")
            .env_remove("PYTHONHOME")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .unwrap();
        super::findings(&out.stderr).0
    }

    /// Each way of starting Python from the run: the ordinary ones are
    /// nothing; each that would start it without the guard is a
    /// `python.unguarded` finding naming why.
    #[test]
    fn a_python_started_without_the_guard_is_reported() {
        let (_dir, tree, guard) = tree("");
        let honest = "import os, subprocess, sys\n\
                      subprocess.run([sys.executable, '-c', 'pass'])\n\
                      subprocess.run(['python3', '-B', '-c', 'pass', '-I'])\n\
                      subprocess.run('python3 -c pass && true', shell=True)\n\
                      subprocess.run(['env', 'X=1', 'python3', '-c', 'pass'])\n\
                      os.system('python3 -c pass')\n\
                      subprocess.run(['true'], env={})\n\
                      pp = 'src:' + os.environ['PYTHONPATH']\n\
                      subprocess.run([sys.executable, '-c', 'pass'], env=dict(os.environ, PYTHONPATH=pp))\n";
        assert_eq!(findings(&tree, &guard, honest), Vec::<String>::new());
        for (start, why) in [
            (
                "subprocess.run([sys.executable, '-I', '-c', 'pass'])",
                "(-I)",
            ),
            (
                "subprocess.run([sys.executable, '-bS', '-c', 'pass'])",
                "(-S)",
            ),
            ("subprocess.run(['/proc/self/exe', '-Ec', 'pass'])", "(-E)"),
            (
                "subprocess.run(['env', '-i', 'python3', '-c', 'pass'])",
                "(PYTHONPATH without",
            ),
            (
                "subprocess.run('unset PYTHONPATH; python3 -c pass', shell=True)",
                "(PYTHONPATH without",
            ),
            (
                "os.system('PYTHONPATH= python3 -c pass')",
                "(PYTHONPATH without",
            ),
            (
                "subprocess.run(['timeout', '5', 'python3', '-Ic', 'pass'])",
                "(-I)",
            ),
            (
                "os.putenv('PYTHONPATH', '')\nsubprocess.run([sys.executable, '-c', 'pass'])",
                "(PYTHONPATH without",
            ),
            (
                "os.execv(sys.executable, [sys.executable, '-I', '-c', 'pass'])",
                "(-I)",
            ),
            (
                "os.makedirs('x'); open('x/sitecustomize.py', 'w').close()\n\
                 pp = 'x:' + os.environ['PYTHONPATH']\n\
                 subprocess.run([sys.executable, '-c', 'pass'], env=dict(os.environ, PYTHONPATH=pp))",
                "(another sitecustomize before the guard, in ",
            ),
        ] {
            let found = findings(
                &tree,
                &guard,
                &format!("import os, subprocess, sys\n{start}\n"),
            );
            assert!(
                found.len() == 1
                    && found[0].starts_with("python.unguarded: ")
                    && found[0].contains(why),
                "{start}: {found:?}"
            );
        }
    }

    /// unittest's result object given its own `addFailure` while a test
    /// runs, and its class's wrapped and put back by an `atexit` handler
    /// registered after the guard's: both seen at the test's checkpoint; the
    /// class patched before the guard took it: seen by its code's file; the
    /// checkpoint's own defaults read: seen.
    #[test]
    fn the_runner_is_checked_at_each_test_on_its_objects_too() {
        let suite = "import unittest\n\n\
                     class T(unittest.TestCase):\n    def test_a(self):\n        PATCH\n        self.fail('x')\n\n\
                     unittest.main(module=__name__, argv=['t'], exit=False)\n";
        let object = "import sys; r = sys._getframe().f_back.f_back.f_locals['result']; \
                      r.addFailure = lambda test, err: r.addSuccess(test)";
        // Patched by the tree's code right after its own `import unittest`,
        // before the guard took the runner: the code's file tells.
        let (_early, early_tree, early_guard) = tree(
            "import unittest\n\
             unittest.TextTestResult.addFailure = lambda self, test, err: self.addSuccess(test)\n",
        );
        assert_eq!(
            findings(
                &early_tree,
                &early_guard,
                &format!("import mod\n{}", suite.replace("PATCH", "pass"))
            ),
            [
                "runner.changed: unittest.runner.TextTestResult.addFailure replaced by mod.py \
                 before the guard took it"
            ]
        );
        let (_dir, tree, guard) = tree("");
        assert_eq!(
            findings(&tree, &guard, &suite.replace("PATCH", object)),
            [
                "runner.object: unittest.runner.TextTestResult.addFailure replaced on a \
              TextTestResult object while the tests ran"
            ]
        );
        // `exec` first: the guard takes the runner at the next import or
        // exec after it loaded (the tests' own imports, in a real run), so
        // what is patched after that is what the check must see.
        let restored = "import atexit, unittest\nexec('pass')\n\
                        R = unittest.TextTestResult\nfail = R.addFailure\n\
                        R.addFailure = lambda self, test, err: self.addSuccess(test)\n\
                        atexit.register(setattr, R, 'addFailure', fail)\n";
        assert_eq!(
            findings(
                &tree,
                &guard,
                &format!("{restored}{}", suite.replace("PATCH", "pass"))
            ),
            [
                "runner.changed: unittest.runner.TextTestResult.addFailure replaced while the tests ran"
            ]
        );
        // What the checkpoint holds is reached only through its defaults.
        assert_eq!(
            findings(
                &tree,
                &guard,
                "import unittest\nunittest.TestResult.stopTest.__defaults__\n"
            ),
            ["guard.read: the guard's checkpoint __defaults__ read by code outside the tree"]
        );
    }

    /// The tree's code giving a runner function other code (its identity
    /// stays, so only the `object.__setattr__` event can see it), and
    /// replacing a runner class's method (seen at exit): both reported,
    /// with where they were done.
    #[test]
    fn the_runner_changed_by_the_trees_code_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(
            tree.join("mod.py"),
            "import unittest\n\
             unittest.TestCase.assertTrue.__code__ = (lambda self, expr, msg=None: None).__code__\n\
             unittest.TestResult.addError = unittest.TestResult.addSuccess\n",
        )
        .unwrap();
        let guard = dir.path().join("guard");
        super::write(&guard, tree.to_str().unwrap()).unwrap();
        let out = std::process::Command::new("python3")
            .args(["-c", "import mod"])
            .current_dir(&tree)
            .env("PYTHONPATH", &guard)
            .env_remove("ASSAY_AUDIT_FD")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .unwrap();
        let (found, _) = super::findings(&out.stderr);
        assert_eq!(
            found,
            [
                "object.__setattr__: __code__ of unittest.case set by mod.py:2",
                "runner.changed: unittest.result.TestResult.addError replaced while the tests ran",
            ],
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
