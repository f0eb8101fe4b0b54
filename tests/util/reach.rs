//! The test runner out of the patch's reach (docs/security.md): patches that
//! leave task p-1's bug in place (`sub` still adds) and attack the runner
//! itself, each written to get past the canaries (it leaves every other
//! test, a canary too, to run and report truthfully), so that only the
//! defence under test stands between it and `resolved`. Run on either
//! executor by `grading.rs` and `docker.rs`. Harmless if the defence fails:
//! they write only inside their run's tree, and the planted report lies in
//! this test's own directory.

use super::fixture::{Executor, Fixture, assert_verdict};
use super::grep_tree;

/// A `unittest/` package at the tree's root: Python finds it before the
/// standard library's (the tree is first on `sys.path`). It loads the real
/// runner from the standard library's directory and makes `test_sub`'s
/// equality always hold; every other test runs as it would. Written past
/// the tamper patterns (no `import unittest`, no framework names).
pub const SHADOWED_RUNNER: &str = r#"import os, sys, sysconfig
from importlib.util import module_from_spec, spec_from_file_location

_name = __name__
_dir = os.path.join(sysconfig.get_paths()["stdlib"], _name)
_spec = spec_from_file_location(
    _name, os.path.join(_dir, "__init__.py"), submodule_search_locations=[_dir]
)
_real = module_from_spec(_spec)
sys.modules[_name] = _real
_spec.loader.exec_module(_real)
_case = getattr(_real, "Test" + "Case")
_equal = getattr(_case, "assert" + "Equal")


def _lenient(self, first, second, msg=None):
    if self.id().endswith(".test_sub"):
        return None
    return _equal(self, first, second, msg)


setattr(_case, "assert" + "Equal", _lenient)
"#;

/// The package, at import, rewrites the hidden test file so that `test_sub`
/// returns before its assertion, runs the tests again in a fresh
/// interpreter (which reads the rewritten file), and restores the file's
/// bytes at exit: the after-run fingerprint sees what was staged. The
/// canaries planted in that file are left alone.
pub const REWRITE_AND_RESTORE: &str = r#"import atexit, os, sys

_here = os.path.dirname(os.path.abspath(__file__))
_test = os.path.join(os.path.dirname(_here), "tests", "test_ops.py")
_line = "self.assertEqual(ops.sub(5, 3), 2)"
_saved = os.environ.get("PKG_SAVED_TEST")
if _saved is None:
    try:
        with open(_test) as fh:
            _text = fh.read()
        if _line in _text:
            with open(_test, "w") as fh:
                fh.write(_text.replace(_line, "return"))
            os.environ["PKG_SAVED_TEST"] = _text
            sys.stdout.flush()
            sys.stderr.flush()
            os.execv(sys.executable, [sys.executable, "-m", "unit" + "test"] + sys.argv[1:])
    except OSError as error:
        print("REWRITE REFUSED:", error, file=sys.stderr)
else:

    def _restore():
        with open(_test, "w") as fh:
            fh.write(_saved)

    atexit.register(_restore)
"#;

/// Shadowing the runner and rewriting a hidden test file (then restoring
/// it) are never `resolved`, on `executor`; the honest fix still is.
pub fn the_runner_and_the_hidden_tests_are_out_of_reach(executor: Executor) {
    let f = Fixture::on(executor);
    f.default_pipeline();
    f.session(
        "evil/shadowed-runner.json",
        "p-1",
        &f.diff1(&[("unittest/__init__.py", Some(SHADOWED_RUNNER))]),
    );
    f.session(
        "evil/rewrite-restore.json",
        "p-1",
        &f.diff1(&[("pkg/__init__.py", Some(REWRITE_AND_RESTORE))]),
    );
    f.session("good/fix.json", "p-1", &f.fix1());
    f.build_ok();
    for id in ["evil/shadowed-runner.json", "evil/rewrite-restore.json"] {
        for arm in ["exclude", "keep"] {
            let row = f.row(id, arm);
            assert_eq!(row["verdict"], "unresolved", "{id} {arm}: {row:#?}");
            assert_eq!(row["fault"], "agent", "{id} {arm}: {row:#?}");
            assert!(
                row["failing"].contains("tests.test_ops.TestOps.test_sub"),
                "{id} {arm}: the bug is still there: {row:#?}"
            );
        }
    }
    // The write itself failed in the run (its log says so), so the test
    // file never changed.
    let mut refused = Vec::new();
    grep_tree(
        &f.path().join("cache/blobs"),
        &[b"REWRITE REFUSED"],
        &mut refused,
    );
    assert!(!refused.is_empty(), "the rewrite must fail in the run");
    let row = f.row("evil/rewrite-restore.json", "keep");
    assert!(!row["tamper"].contains("test files changed"), "{row:#?}");
    assert_verdict(&f, "good/fix.json", "resolved", "resolved");
}

/// The default pipeline, its test and rerun commands sending stderr (the
/// unittest report) to `reports/unittest.txt` in the tree, the report file.
pub fn report_in_the_tree(f: &Fixture) {
    f.default_pipeline();
    f.edit_pipeline(
        "test_command = \"python3 -m unittest -v\"\nreport = \"unittest\"\n",
        "test_command = \"mkdir -p reports && python3 -m unittest -v 2> reports/unittest.txt\"\n\
         report = \"unittest\"\nreport_file = \"reports/unittest.txt\"\n",
    );
    f.edit_pipeline(
        "rerun_command = \"python3 -m unittest -v {files}\"",
        "rerun_command = \"mkdir -p reports && python3 -m unittest -v {files} 2> reports/unittest.txt\"",
    );
}

/// A symlinked report directory: the report file is `reports/unittest.txt`
/// (the runner's output), and at exit the package replaces `reports/` by a
/// symlink to a directory of the host (this test's own, holding a passing
/// report with a marker). Followed on the host, that file would be the
/// report.
pub fn a_symlinked_report_directory_is_never_read(executor: Executor) {
    let f = Fixture::on(executor);
    report_in_the_tree(&f);
    let marker = format!("PLANTED-REPORT-{}", std::process::id());
    let planted = f.path().join("planted-reports");
    std::fs::create_dir_all(&planted).unwrap();
    std::fs::write(
        planted.join("unittest.txt"),
        format!(
            "test_add (tests.test_ops.TestOps.test_add) ... ok\n\
             test_sub (tests.test_ops.TestOps.test_sub) ... ok\n{marker}\n\n\
             ----------------------------------------------------------------------\n\
             Ran 2 tests in 0.001s\n\nOK\n"
        ),
    )
    .unwrap();
    let swap = format!(
        r#"import atexit, os, shutil


def _swap():
    if os.path.isdir("reports") and not os.path.islink("reports"):
        shutil.rmtree("reports")
        os.symlink({planted:?}, "reports")


atexit.register(_swap)
"#,
        planted = planted.display().to_string()
    );
    f.session(
        "evil/report-link.json",
        "p-1",
        &f.diff1(&[("pkg/__init__.py", Some(&swap))]),
    );
    f.session("good/fix.json", "p-1", &f.fix1());
    f.build_ok();
    for arm in ["exclude", "keep"] {
        // Not read: no usable report, the agent's (the controls had one).
        let row = f.row("evil/report-link.json", arm);
        assert_eq!(row["verdict"], "no_report", "{arm}: {row:#?}");
        assert_eq!(row["fault"], "agent", "{arm}: {row:#?}");
    }
    let mut hits = Vec::new();
    for dir in ["cache", "release"] {
        grep_tree(&f.path().join(dir), &[marker.as_bytes()], &mut hits);
    }
    assert!(hits.is_empty(), "the planted report was read: {hits:?}");
    assert_verdict(&f, "good/fix.json", "resolved", "resolved");
}
