//! `metrics`: the shape of what was graded — the session patch after the
//! exclusion policy of the scored arm — measured from the diff text: lines
//! added/removed outside tests, files touched, size against the gold patch,
//! added lint suppressions and comment lines, and the empty-patch flag.

use std::sync::Arc;

use assay_engine::{Digest, Job, JobCtx, JobError, JobFuture, Output};
use serde::Serialize;

use super::grade::{Policy, excluded_paths};
use super::records::{MetricsRecord, SessionRecord, TaskRecord};

pub(super) const KIND_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct MetricsParams {
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
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

/// (added, removed, files, suppressions, comments) of the non-test, non-excluded part of a patch.
pub(crate) fn measure(patch: &str, skip: &dyn Fn(&str) -> bool) -> (u64, u64, u64, u64, u64) {
    let (mut added, mut removed, mut files, mut supp, mut comments) = (0, 0, 0, 0, 0);
    let mut current_skipped = true;
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = rest.rsplit(" b/").next().unwrap_or(rest).trim_matches('"');
            current_skipped = skip(path);
            if !current_skipped {
                files += 1;
            }
            continue;
        }
        if current_skipped || line.starts_with("+++") || line.starts_with("---") {
            continue;
        }
        if let Some(text) = line.strip_prefix('+') {
            added += 1;
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
        } else if line.starts_with('-') {
            removed += 1;
        }
    }
    (added, removed, files, supp, comments)
}

struct MetricsJob(MetricsParams);

impl Job for MetricsJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let p = self.0.clone();
        Box::pin(async move {
            let err = |e: &dyn std::fmt::Display| JobError::new(format!("metrics: {e}"));
            let task: TaskRecord = serde_json::from_slice(&ctx.inputs[0]).map_err(|e| err(&e))?;
            let session: SessionRecord =
                serde_json::from_slice(&ctx.inputs[1]).map_err(|e| err(&e))?;
            let d: Digest = session.patch.parse().map_err(|e: String| err(&e))?;
            let patch = ctx.blobs.get(&d).map_err(|e| err(&e))?;
            let tests = super::triage::globset(&p.test_globs).map_err(|e| err(&e))?;
            let excluded = excluded_paths(&patch, task.test_patch.as_bytes(), p.policy, &tests)
                .unwrap_or_default();
            let text = String::from_utf8_lossy(&patch);
            let skip = |path: &str| tests.is_match(path) || excluded.iter().any(|e| e == path);
            let (a, r, f, s, c) = measure(&text, &skip);
            let (ga, gr, _, _, _) = measure(&task.patch, &|path: &str| tests.is_match(path));
            let record = MetricsRecord {
                session: session.id,
                lines_added: a,
                lines_removed: r,
                files_touched: f,
                size_vs_gold: (ga + gr > 0)
                    .then(|| ((a + r) as f64 / (ga + gr) as f64 * 1000.0).round() / 1000.0),
                suppressions_added: s,
                comment_lines_added: c,
                empty_patch: text.trim().is_empty(),
            };
            Ok(Output {
                bytes: serde_json::to_vec(&record).map_err(|e| err(&e))?,
                attachments: Vec::new(),
            })
        })
    }
}

pub(crate) fn job(p: MetricsParams) -> Arc<dyn Job> {
    Arc::new(MetricsJob(p))
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_code_lines_suppressions_and_comments_outside_tests() {
        let patch = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,2 +1,3 @@\n-    return a / b\n+    # guard\n+    return a / b  # noqa\n+    x = 1\ndiff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -1 +1,2 @@\n+    assert True\n";
        let (a, r, f, s, c) = super::measure(patch, &|p: &str| p.starts_with("tests/"));
        assert_eq!((a, r, f, s, c), (3, 1, 1, 1, 1));
    }
}
