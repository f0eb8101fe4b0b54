//! `metrics`: the shape of what was graded — the session patch after the
//! exclusion policy of the scored arm — measured from the diff text: lines
//! added/removed outside tests, files touched, size against the gold patch,
//! added lint suppressions and comment lines, and the empty-patch flag.

use std::sync::Arc;

use assay_engine::{Digest, JobCtx};
use serde::Serialize;

use assay_git::AddedLines;

use super::grade::{PatchCaps, Policy, excluded_paths, session_paths};
use super::node::{Kind, Made, NodeKind};
use super::records::{MetricsRecord, SessionRecord, TaskRecord};

#[derive(Clone, Debug, Serialize)]
pub(crate) struct MetricsParams {
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
    pub(crate) caps: PatchCaps,
}

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
pub(crate) fn measure(
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

super::node::inputs! {
    pub(crate) struct MetricsInputs / MetricsNames { task: TaskRecord, session: SessionRecord }
}

pub(crate) struct Metrics(pub(crate) MetricsParams);

impl Kind for Metrics {
    const NAME: &'static str = NodeKind::Metrics.as_str();
    /// 2: sections read as `git apply` reads them.
    const VERSION: u32 = 2;
    type Params = MetricsParams;
    type Inputs = MetricsInputs;
    type Record = MetricsRecord;

    fn params(&self) -> &MetricsParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        i: MetricsInputs,
        ctx: JobCtx,
    ) -> Result<Made<MetricsRecord>, String> {
        let p = &self.0;
        let (task, session) = (&i.task, &i.session);
        let d: Digest = session.patch.parse()?;
        let patch = ctx.blobs.get(&d).map_err(|e| e.to_string())?;
        let tests = super::triage::globset(&p.test_globs).map_err(|e| e.to_string())?;
        let paths = session_paths(&patch).unwrap_or_default();
        let excluded = excluded_paths(&paths, task.test_patch.as_bytes(), p.policy, &tests);
        let excluded: std::collections::BTreeSet<&str> =
            excluded.iter().map(String::as_str).collect();
        let skip = |path: &str| tests.is_match(path) || excluded.contains(path);
        // A patch over the byte cap is never graded: its lines are counted,
        // not read.
        let lines = match p.caps.over_bytes(patch.len() as u64) {
            Some(_) => AddedLines::Count,
            None => AddedLines::Keep,
        };
        let (a, r, f, s, c) = measure(&patch, &skip, lines);
        let gold = |path: &str| tests.is_match(path);
        let (ga, gr, _, _, _) = measure(task.patch.as_bytes(), &gold, AddedLines::Keep);
        Ok(Made::record(MetricsRecord {
            session: session.id.clone(),
            lines_added: a,
            lines_removed: r,
            files_touched: f,
            size_vs_gold: (ga + gr > 0)
                .then(|| ((a + r) as f64 / (ga + gr) as f64 * 1000.0).round() / 1000.0),
            suppressions_added: s,
            comment_lines_added: c,
            empty_patch: patch.iter().all(u8::is_ascii_whitespace),
        }))
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
}
