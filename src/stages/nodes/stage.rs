//! `stage`: composes a session's graded tree for one arm — the base, the
//! session patch less what the arm leaves out, then the hidden test patch.
//! An adapter: it fetches the session patch once, reads it and the test
//! patch once, computes the arm's
//! [`Exclusion`](super::rules::policy::Exclusion) once and composes what
//! [`staging`](super::rules::staging) says.

use std::path::PathBuf;
use std::sync::Arc;

use assay_engine::JobCtx;
use assay_git::TreeStore;
use serde::Serialize;

use super::blob;
use super::node::{Kind, Made, NodeKind};
use super::records::{Arm, SessionRecord, Skip, TaskRecord, TreeRecord};
use super::rules::policy::{
    Exclusion, PatchCaps, Policy, TestPatch, globset, session_paths_within,
};
use super::rules::staging;

/// 2: the test patch's files are reset in every arm; a patch that is not a
/// diff fails to apply; the tests-and-infra policy.
/// 3: the record lists the hidden test files (`hidden`).
/// 4: paths as `git apply` reads them (a patch git reads otherwise is
/// `patch_apply_failed`); a hidden test file renamed away, deleted or put
/// in the way of is restored; the patch caps.
/// 5: the record carries the task's run timeout.
pub(crate) const STAGE_VERSION: u32 = 5;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct StageParams {
    pub(crate) arm: Arm,
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
    /// A larger session patch is refused before anything is staged.
    pub(crate) caps: PatchCaps,
}

super::node::inputs! {
    pub(crate) struct StageInputs / StageNames { task: TaskRecord, session: SessionRecord }
}

/// Composes the graded tree: the base, the session patch less what the
/// arm leaves out, then the hidden test patch.
pub(crate) struct Stage {
    pub(crate) params: StageParams,
    pub(crate) store_dir: PathBuf,
}

impl Kind for Stage {
    const NAME: &'static str = NodeKind::Stage.as_str();
    const VERSION: u32 = STAGE_VERSION;
    type Params = StageParams;
    type Inputs = StageInputs;
    type Record = TreeRecord;

    fn params(&self) -> &StageParams {
        &self.params
    }

    async fn run(self: Arc<Self>, i: StageInputs, ctx: JobCtx) -> Result<Made<TreeRecord>, String> {
        tokio::task::spawn_blocking(move || stage(&self.params, &self.store_dir, &i, &ctx))
            .await
            .map_err(|e| format!("stage task: {e}"))?
            .map(Made::record)
    }
}

fn stage(
    p: &StageParams,
    store_dir: &std::path::Path,
    i: &StageInputs,
    ctx: &JobCtx,
) -> Result<TreeRecord, String> {
    let (task, session) = (&i.task, &i.session);
    if let Some(why) = staging::not_graded(task) {
        return Ok(staging::skipped(why));
    }
    let patch = blob(ctx, &session.patch)?;
    let store = TreeStore::open_or_init(store_dir).map_err(|e| e.to_string())?;
    stage_patch(p, &store, task, patch).map(|(record, _)| record)
}

/// The graded tree of `patch` over `task` in `store` (a released task;
/// [`staging::not_graded`] is the caller's), and what the arm left out of
/// it. Shared with the Harbor verifier, which grades a workspace's diff
/// exactly so.
pub(crate) fn stage_patch(
    p: &StageParams,
    store: &TreeStore,
    task: &TaskRecord,
    patch: Vec<u8>,
) -> Result<(TreeRecord, Exclusion), String> {
    let tests = globset(&p.test_globs).map_err(|e| e.to_string())?;
    let paths = match session_paths_within(&patch, p.caps) {
        Err(e) => {
            return Ok((
                staging::skipped(Skip::PatchApplyFailed(e)),
                Exclusion::default(),
            ));
        }
        Ok(paths) => paths,
    };
    let test_patch = TestPatch::read(task.test_patch.as_bytes());
    let exclusion = Exclusion::of(&paths, &test_patch, p.policy, &tests);
    let steps = staging::session_steps(patch, &paths, &exclusion, &task.test_patch);
    let mut record = staging::staged(
        store.compose(&task.base_commit, &steps),
        test_patch.hidden(),
    )?;
    record.timeout_s = task.timeout_s;
    Ok((record, exclusion))
}
