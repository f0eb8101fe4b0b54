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

use super::adapter::{Kind, Made, NodeKind};
use crate::model::rebuild::{RebuildRule, RebuildSpec};
use crate::model::records::{Skip, TreeRecord, TriageRecord};
use crate::model::rules::rebuild;
use crate::model::rules::staging;
pub(crate) use crate::model::rules::staging::State;
use crate::run::error::{Kinded, NodeError};

#[derive(Clone, Debug, Serialize)]
pub(crate) struct TreeParams {
    pub(crate) state: State,
    /// `[env] rebuild`: the rules a tree may need. Left out of the key when
    /// none (the keys stay what they were); editing one recomposes the
    /// trees, and only those whose record changes rerun what reads them.
    #[serde(skip_serializing_if = "RebuildSpec::is_unset")]
    pub(crate) rebuild: RebuildSpec,
}

super::adapter::inputs! {
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

    async fn run(
        self: Arc<Self>,
        i: TreeInputs,
        ctx: JobCtx,
    ) -> Result<Made<TreeRecord>, NodeError> {
        let triage = i.triage.record;
        tokio::task::spawn_blocking(move || {
            compose(&self.params, &triage, &self.store_dir, &ctx).map(Made::record)
        })
        .await
        .map_err(|e| NodeError::internal(format!("tree task: {e}")))?
    }
}

fn compose(
    params: &TreeParams,
    triage: &TriageRecord,
    store_dir: &std::path::Path,
    ctx: &JobCtx,
) -> Result<TreeRecord, NodeError> {
    if !triage.eligible() {
        return Ok(staging::skipped(Skip::Declined(triage.decision)));
    }
    let store = TreeStore::open_or_init(store_dir).cache()?;
    let state = params.state;
    let mut steps = Vec::new();
    for (step, digest) in state.patches(triage) {
        let d: Digest = digest.parse().internal()?;
        steps.push(step.of(ctx.blobs.get(&d).cache()?));
    }
    Ok(match store.compose(&triage.base, &steps) {
        Ok(tree) => TreeRecord {
            rebuild: rebuilds(&store, &triage.base, &tree, &params.rebuild)?,
            tree: Some(tree),
            skipped: None,
            hidden: Vec::new(),
            timeout_s: None,
            canaries: None,
        },
        Err(e) => state.unstaged(&e),
    })
}

/// The rules of `spec` that `tree` needs: those matching a path in which
/// it differs from the tree of `base` (a commit), as the store holds both.
/// Detected rules are read from the base tree's manifests, which no patch
/// can change. The trees are in assay's object store: a failure to read
/// them is the cache's.
pub(crate) fn rebuilds(
    store: &TreeStore,
    base: &str,
    tree: &str,
    spec: &RebuildSpec,
) -> Result<Vec<RebuildRule>, NodeError> {
    if spec.is_unset() {
        return Ok(Vec::new());
    }
    let err = |e: assay_git::GitError| NodeError::cache(format!("the paths the tree changes: {e}"));
    let base_tree = store.tree_of(base).map_err(err)?;
    let before = store.entries(&base_tree).map_err(err)?;
    let rules = if spec.detect {
        detected(store, &before).map_err(err)?
    } else {
        spec.rules.clone()
    };
    if rules.is_empty() {
        return Ok(Vec::new());
    }
    let after = store.entries(tree).map_err(err)?;
    let changed = rebuild::changed_paths(
        before
            .iter()
            .map(|e| (e.path.as_str(), e.mode, e.id.as_str())),
        after
            .iter()
            .map(|e| (e.path.as_str(), e.mode, e.id.as_str())),
    );
    Ok(rebuild::matching(&rules, &changed))
}

/// The rules of the workspace manifests among `entries` (a base tree's):
/// the members `pnpm-workspace.yaml` names, else those of the root
/// `package.json`, and every `package.json` outside `node_modules`, of at
/// most 1 MiB each.
fn detected(
    store: &TreeStore,
    entries: &[assay_git::TreeEntry],
) -> Result<Vec<RebuildRule>, assay_git::GitError> {
    const MANIFEST_MAX: usize = 1 << 20;
    let root = |name: &str| {
        entries
            .iter()
            .find(|e| e.path == name && e.mode != 0o120000)
    };
    let globs = match (root("pnpm-workspace.yaml"), root("package.json")) {
        (Some(pnpm), _) => rebuild::pnpm_members(&store.read_blob(&pnpm.id)?),
        (None, Some(npm)) => rebuild::npm_members(&store.read_blob(&npm.id)?),
        (None, None) => Vec::new(),
    };
    if globs.is_empty() {
        return Ok(Vec::new());
    }
    let mut packages = Vec::new();
    for e in entries {
        let Some(dir) = e.path.strip_suffix("/package.json") else {
            continue;
        };
        if e.mode == 0o120000 || dir.split('/').any(|c| c == "node_modules") {
            continue;
        }
        let bytes = store.read_blob(&e.id)?;
        if bytes.len() <= MANIFEST_MAX {
            packages.push((dir.to_owned(), bytes));
        }
    }
    Ok(rebuild::detect(&globs, &packages))
}
