//! Patches read as `git apply` writes them (docs/security.md): sessions
//! whose paths or added lines try to slip past the exclusion, the reset or
//! the tamper scan, and patches over the caps. Run on either executor by
//! `grading.rs` and `docker.rs`; each fixes nothing and is harmless if the
//! defence fails.

#![allow(dead_code)]

use super::attacks::hostile;
use super::fixture::*;

/// An added content line `++ b/tests/test_ops.py` (the diff line `+++
/// b/tests/test_ops.py`) made the tamper scan take every later added line
/// for test-file content: the `unittest` monkeypatch under it went
/// unflagged. Hunks are walked by their counts now.
pub fn a_framework_reach_below_an_added_line_shaped_like_a_header_is_flagged(executor: Executor) {
    let f = Fixture::on(executor);
    f.default_pipeline();
    let body = "_NOTE = \"\"\"\n++ b/tests/test_ops.py\n\"\"\"\nimport unittest\n\n\ndef _pass(self, result=None):\n    result.startTest(self)\n    result.addSuccess(self)\n    result.stopTest(self)\n\n\nunittest.TestCase.run = _pass\n";
    let patch = hostile(&f, body);
    assert!(
        patch.contains("\n+++ b/tests/test_ops.py\n+\"\"\"\n"),
        "{patch}"
    );
    f.session("evil/desync.json", "p-1", &patch);
    f.build_ok();
    for arm in ["exclude", "keep"] {
        let row = f.row("evil/desync.json", arm);
        assert_eq!(row["verdict"], "unresolved", "{arm}: {row:#?}");
        assert_eq!(row["fault"], "agent", "{arm}: {row:#?}");
        assert!(
            row["tamper"]
                .contains("reaches into the test framework: pkg/__init__.py: `import unittest`"),
            "{arm}: {row:#?}"
        );
    }
}

/// `--- a/tests/test_ops.py` / `+++ b/tests/test_ops.py.orig`: git writes
/// the hidden test file (it takes the shorter name), where assay once saw
/// a new file `tests/test_ops.py.orig` and let the edit through both the
/// policy and the reset. Read as git reads it, the edit is reset.
pub fn a_traditional_diff_to_a_hidden_test_file_under_a_longer_name_is_reset(executor: Executor) {
    let f = Fixture::on(executor);
    f.default_pipeline();
    // The README edit keeps the session from being left out whole.
    let patch = "--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # pkg\n+Notes.\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py.orig\n@@ -1,3 +1,4 @@\n import unittest\n+import pkg.ops; pkg.ops.sub = lambda a, b: a - b\n \n from pkg import ops\n";
    f.session("evil/orig.json", "p-1", patch);
    f.build_ok();
    for arm in ["exclude", "keep"] {
        let row = f.row("evil/orig.json", arm);
        assert_eq!(row["verdict"], "unresolved", "{arm}: {row:#?}");
        assert_eq!(row["fault"], "agent", "{arm}: {row:#?}");
        assert_eq!(row["reset_paths"], "tests/test_ops.py", "{arm}: {row:#?}");
        assert_eq!(
            row["failing"], "tests.test_ops.TestOps.test_sub",
            "{arm}: {row:#?}"
        );
    }
}

/// A hidden test file renamed away or deleted, or a directory put where the
/// test patch creates one, kept the test patch from applying:
/// `test_patch_conflict`, ambiguous. The test patch's files are restored
/// (the rename is left out whole) and the session is graded as it is.
pub fn a_hidden_test_file_renamed_away_deleted_or_blocked_is_restored_and_graded(
    executor: Executor,
) {
    let f = Fixture::on(executor);
    f.default_pipeline();
    let renamed = f.diff1(&[
        ("tests/test_ops.py", None),
        ("pkg/old_tests.py", Some(TEST_OPS_BASE)),
    ]);
    assert!(
        renamed.contains("rename from tests/test_ops.py"),
        "{renamed}"
    );
    f.session("evil/renamed.json", "p-1", &renamed);
    f.session(
        "evil/deleted.json",
        "p-1",
        &f.diff1(&[("tests/test_ops.py", None)]),
    );
    // p-2's test patch creates tests/test_mul.py.
    f.session(
        "evil/blocked.json",
        "p-2",
        &f.diff2(&[("tests/test_mul.py/__init__.py", Some("x = 1\n"))]),
    );
    f.build_ok();
    for (session, hidden, failing) in [
        (
            "evil/renamed.json",
            "tests/test_ops.py",
            "tests.test_ops.TestOps.test_sub",
        ),
        (
            "evil/deleted.json",
            "tests/test_ops.py",
            "tests.test_ops.TestOps.test_sub",
        ),
        (
            "evil/blocked.json",
            "tests/test_mul.py",
            "tests.test_mul.TestMul.test_mul",
        ),
    ] {
        for arm in ["exclude", "keep"] {
            let row = f.row(session, arm);
            let at = format!("{session} {arm}: {row:#?}");
            assert_eq!(row["verdict"], "unresolved", "{at}");
            assert_eq!(row["fault"], "agent", "{at}");
            assert_eq!(row["reset_paths"], hidden, "{at}");
            assert_eq!(row["failing"], failing, "{at}");
        }
    }
    let renamed = f.row("evil/renamed.json", "keep");
    assert_eq!(
        renamed["excluded_paths"], "pkg/old_tests.py",
        "{renamed:#?}"
    );
}

/// A 16 MB patch of 100,000 new files held a 2-core build for 6.5 minutes
/// (its tree materialised and removed for every run, rerun and check).
/// Over the default caps (5,000 files, 10 MiB) a patch is refused before
/// anything is staged. The agent label of the second is a spreadsheet
/// formula: results.csv guards it.
pub fn a_patch_over_the_caps_is_refused_before_anything_is_staged(executor: Executor) {
    use std::fmt::Write as _;
    let f = Fixture::on(executor);
    f.default_pipeline();
    let mut files = String::with_capacity(8 << 20);
    for i in 0..100_000 {
        write!(
            files,
            "diff --git a/gen/f{i}.py b/gen/f{i}.py\nnew file mode 100644\nindex 0000000..e69de29\n"
        )
        .unwrap();
    }
    f.session("evil/files.json", "p-1", &files);
    let lines = 1_700_000;
    let mut bytes = format!(
        "diff --git a/big.py b/big.py\nnew file mode 100644\n--- /dev/null\n+++ b/big.py\n@@ -0,0 +1,{lines} @@\n"
    );
    bytes.push_str(&"+x = 1\n".repeat(lines));
    assert!(bytes.len() > 10 << 20);
    f.session("=cmd/bytes.json", "p-1", &bytes);
    let started = std::time::Instant::now();
    let b = f.build_ok();
    let took = started.elapsed();
    if std::env::var_os("ASSAY_TIMINGS").is_some() {
        for line in b.run.stdout.lines().filter(|l| l.contains("duration_ms")) {
            eprintln!("{line}");
        }
    }
    eprintln!("build with a 100,000-file and an 11 MiB patch: {took:?}");
    for (session, why) in [
        (
            "evil/files.json",
            "over the patch cap (100,000 files > 5,000)",
        ),
        (
            "'=cmd/bytes.json",
            "over the patch cap (11,900,099 bytes > 10,485,760)",
        ),
    ] {
        for arm in ["exclude", "keep"] {
            let row = f.row(session, arm);
            assert_eq!(row["verdict"], "patch_apply_failed", "{row:#?}");
            assert_eq!(row["fault"], "agent", "{row:#?}");
            assert_eq!(row["exit_code"], "", "nothing ran: {row:#?}");
            let grade = f.grade_record(session, arm);
            assert_eq!(grade["detail"], why, "{grade:#}");
        }
    }
    assert_eq!(f.row("'=cmd/bytes.json", "exclude")["agent"], "'=cmd");
    assert!(
        took < std::time::Duration::from_secs(60),
        "refusing took {took:?}"
    );
}
