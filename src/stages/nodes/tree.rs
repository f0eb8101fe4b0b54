//! `tree`: the exact file tree of one state of a candidate — the base commit,
//! plus the test patch, plus the gold patch — composed in assay's own object
//! store (`cache/git`, borrowing the source's objects through alternates). Its
//! output is the git tree id, a content digest: identical trees give identical
//! outputs, so the runs over them share keys.

use std::path::PathBuf;
use std::sync::Arc;

use assay_engine::{Digest, JobCtx};
use assay_git::TreeStore;
use serde::Serialize;

use super::node::{Kind, Made, NodeKind};
use super::records::{Skip, TreeRecord, TriageRecord};
use super::rules::staging;
pub(crate) use super::rules::staging::State;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct TreeParams {
    pub(crate) state: State,
}

super::node::inputs! {
    pub(crate) struct TreeInputs / TreeNames { triage: TriageRecord }
}

pub(crate) struct Tree {
    pub(crate) params: TreeParams,
    /// assay's object store (`cache/git`); not in the key (tree ids are content).
    pub(crate) store_dir: PathBuf,
}

impl Kind for Tree {
    const NAME: &'static str = NodeKind::Tree.as_str();
    const VERSION: u32 = 1;
    type Params = TreeParams;
    type Inputs = TreeInputs;
    type Record = TreeRecord;

    fn params(&self) -> &TreeParams {
        &self.params
    }

    async fn run(self: Arc<Self>, i: TreeInputs, ctx: JobCtx) -> Result<Made<TreeRecord>, String> {
        let triage = i.triage.record;
        tokio::task::spawn_blocking(move || {
            compose(self.params.state, &triage, &self.store_dir, &ctx).map(Made::record)
        })
        .await
        .map_err(|e| format!("tree task: {e}"))?
    }
}

fn compose(
    state: State,
    triage: &TriageRecord,
    store_dir: &std::path::Path,
    ctx: &JobCtx,
) -> Result<TreeRecord, String> {
    if !triage.eligible() {
        return Ok(staging::skipped(Skip::Declined(triage.decision)));
    }
    let store = TreeStore::open_or_init(store_dir).map_err(|e| e.to_string())?;
    let mut steps = Vec::new();
    for (step, digest) in state.patches(triage) {
        let d: Digest = digest.parse()?;
        steps.push(step.of(ctx.blobs.get(&d).map_err(|e| e.to_string())?));
    }
    Ok(match store.compose(&triage.base, &steps) {
        Ok(tree) => TreeRecord {
            tree: Some(tree),
            skipped: None,
            hidden: Vec::new(),
            timeout_s: None,
            canaries: None,
        },
        Err(e) => state.unstaged(&e),
    })
}
