//! `metrics`: the shape of what was graded — the session patch after the
//! exclusion policy of the scored arm — measured from the diff text: lines
//! added/removed outside tests, files touched, size against the gold patch,
//! added lint suppressions and comment lines, and the empty-patch flag.

use std::sync::Arc;

use assay_engine::{Digest, JobCtx};
use serde::Serialize;

use super::grade::{Policy, excluded_paths};
use super::node::{Kind, Made};
use super::records::{MetricsRecord, SessionRecord, TaskRecord};

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

super::node::inputs! {
    pub(crate) struct MetricsInputs / MetricsNames { task: TaskRecord, session: SessionRecord }
}

pub(crate) struct Metrics(pub(crate) MetricsParams);

impl Kind for Metrics {
    const NAME: &'static str = "metrics";
    const VERSION: u32 = 1;
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
        let excluded = excluded_paths(&patch, task.test_patch.as_bytes(), p.policy, &tests)
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&patch);
        let skip = |path: &str| tests.is_match(path) || excluded.iter().any(|e| e == path);
        let (a, r, f, s, c) = measure(&text, &skip);
        let (ga, gr, _, _, _) = measure(&task.patch, &|path: &str| tests.is_match(path));
        Ok(Made::record(MetricsRecord {
            session: session.id.clone(),
            lines_added: a,
            lines_removed: r,
            files_touched: f,
            size_vs_gold: (ga + gr > 0)
                .then(|| ((a + r) as f64 / (ga + gr) as f64 * 1000.0).round() / 1000.0),
            suppressions_added: s,
            comment_lines_added: c,
            empty_patch: text.trim().is_empty(),
        }))
    }
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
