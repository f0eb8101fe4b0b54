//! The shape of what was graded — the session patch after the exclusion
//! policy of the scored arm — measured from the diff text: lines
//! added/removed outside tests, files touched, size against the gold patch,
//! added lint suppressions and comment lines, and the empty-patch flag.
//! Sections are read as `git apply` reads them (an added line shaped like a
//! header is content).

use std::collections::BTreeSet;

use assay_git::AddedLines;
use globset::GlobSet;

use super::policy::{PatchCaps, Policy, TestPatch, excluded_paths, session_paths};
use super::records::{MetricsRecord, TaskRecord};

const SUPPRESSIONS: &[&str] = &[
    "# noqa",
    "# type: ignore",
    "# pylint: disable",
    "# pragma: no cover",
    "eslint-disable",
    "@ts-ignore",
    "@ts-expect-error",
    "#[allow(",
    "//nolint",
    "// nolint",
    "@SuppressWarnings",
];

/// (added, removed, files, suppressions, comments) of the non-test,
/// non-excluded part of a patch, its sections read as `git apply` reads
/// them (an added line shaped like a header is content). A patch that
/// cannot be read measures nothing.
fn measure(
    patch: &[u8],
    skip: &dyn Fn(&str) -> bool,
    lines: AddedLines,
) -> (u64, u64, u64, u64, u64) {
    let (mut added, mut removed, mut files, mut supp, mut comments) = (0, 0, 0, 0, 0);
    if patch.iter().all(u8::is_ascii_whitespace) {
        return (0, 0, 0, 0, 0);
    }
    let sections = assay_git::parse_patch_with(patch, lines).unwrap_or_default();
    for f in sections.iter().filter(|f| !skip(&f.path.path)) {
        files += 1;
        added += f.lines_added;
        removed += f.lines_removed;
        for line in &f.added {
            let text = line.text.as_str();
            if SUPPRESSIONS.iter().any(|s| text.contains(s)) {
                supp += 1;
            }
            let t = text.trim_start();
            if t.starts_with('#')
                || t.starts_with("//")
                || t.starts_with("/*")
                || t.starts_with('*')
                || t.starts_with("\"\"\"")
            {
                comments += 1;
            }
        }
    }
    (added, removed, files, supp, comments)
}

/// The metrics of a session's `patch` on `task`: the part outside tests
/// and outside what `policy` leaves out (the reset is not subtracted: the
/// shape is the agent's), against the gold patch's.
pub(crate) fn shape(
    session: &str,
    patch: &[u8],
    task: &TaskRecord,
    policy: Policy,
    tests: &GlobSet,
    caps: PatchCaps,
) -> MetricsRecord {
    // Not a patch: nothing is left out of it (and nothing of it measured).
    let paths = session_paths(patch).unwrap_or_default();
    let test_patch = TestPatch::read(task.test_patch.as_bytes());
    let excluded = excluded_paths(&paths, &test_patch, policy, tests);
    let excluded: BTreeSet<&str> = excluded.iter().map(String::as_str).collect();
    let skip = |path: &str| tests.is_match(path) || excluded.contains(path);
    // A patch over the byte cap is never graded: its lines are counted,
    // not read.
    let lines = match caps.over_bytes(patch.len() as u64) {
        Some(_) => AddedLines::Count,
        None => AddedLines::Keep,
    };
    let (a, r, f, s, c) = measure(patch, &skip, lines);
    let gold = |path: &str| tests.is_match(path);
    let (ga, gr, _, _, _) = measure(task.patch.as_bytes(), &gold, AddedLines::Keep);
    MetricsRecord {
        session: session.to_owned(),
        lines_added: a,
        lines_removed: r,
        files_touched: f,
        size_vs_gold: (ga + gr > 0)
            .then(|| ((a + r) as f64 / (ga + gr) as f64 * 1000.0).round() / 1000.0),
        suppressions_added: s,
        comment_lines_added: c,
        empty_patch: patch.iter().all(u8::is_ascii_whitespace),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_code_lines_suppressions_and_comments_outside_tests() {
        let patch = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1,3 @@\n-    return a / b\n+    # guard\n+    return a / b  # noqa\n+    x = 1\ndiff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -1,0 +2 @@\n+    assert True\n";
        let (a, r, f, s, c) = super::measure(
            patch.as_bytes(),
            &|p: &str| p.starts_with("tests/"),
            super::AddedLines::Keep,
        );
        assert_eq!((a, r, f, s, c), (3, 1, 1, 1, 1));
    }

    /// An added line `+++ b/tests/x.py` is content of the hunk it is in:
    /// it neither ends the file being measured nor starts a test file.
    #[test]
    fn a_line_shaped_like_a_header_is_measured_as_content() {
        let patch = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1,4 @@\n x\n+++ b/tests/test_x.py\n+# a comment\n+y = 1  # noqa\n";
        let (a, r, f, s, c) = super::measure(
            patch.as_bytes(),
            &|p: &str| p.starts_with("tests/"),
            super::AddedLines::Keep,
        );
        assert_eq!((a, r, f, s, c), (3, 0, 1, 1, 1));
    }

    /// What the arm's policy leaves out is not the agent's shape; the gold
    /// patch's non-test lines are the measure of size.
    #[test]
    fn the_shape_leaves_out_tests_and_what_the_policy_leaves_out() {
        use super::{PatchCaps, Policy, TaskRecord};
        let patch = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1,2 @@\n a\n+b\ndiff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+import os\n";
        let task = TaskRecord {
            patch: "--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1,3 @@\n a\n+b\n+c\n".into(),
            ..TaskRecord::default()
        };
        let tests = super::super::policy::globset(&["tests/**".to_owned()]).expect("globs");
        let of = |policy| {
            super::shape(
                "s",
                patch.as_bytes(),
                &task,
                policy,
                &tests,
                PatchCaps::default(),
            )
        };
        let m = of(Policy::TestsAndInfra);
        assert_eq!((m.files_touched, m.lines_added), (1, 1));
        assert_eq!(m.size_vs_gold, Some(0.5));
        assert!(!m.empty_patch);
        let m = of(Policy::None);
        assert_eq!((m.files_touched, m.lines_added), (2, 2));
        assert!(of(Policy::None).session == "s");
    }
}
