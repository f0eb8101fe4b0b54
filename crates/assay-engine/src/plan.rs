//! The dry run of a build (`assay plan`): every node's key walked in
//! dependency order exactly as [`build`](crate::build) walks it, and what
//! the build would do with it — reuse it, run it (and why), or wait for an
//! output that does not exist yet. Nothing is executed or written.

use std::collections::{BTreeSet, HashMap};

use crate::graph::Graph;
use crate::key::Digest;
use crate::scheduler::{node_key, verify_hit};
use crate::store::{BuildManifest, ManifestEntry, Store, StoreError};

/// What `assay plan` shows for one node.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlanEntry {
    pub name: String,
    pub kind: String,
    pub key: Option<String>,
    #[serde(flatten)]
    pub state: PlanState,
}

#[derive(Clone, Debug, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PlanState {
    /// Cached and valid: would be reused.
    Cached,
    /// Would execute, and why.
    Run { reason: String },
    /// Its key depends on an output that does not exist yet.
    Blocked { on: String },
}

/// Decides, without running anything, what a build would do.
pub fn plan(
    store: &Store,
    graph: &Graph,
    reread: &BTreeSet<String>,
    previous: Option<&BuildManifest>,
) -> Result<Vec<PlanEntry>, StoreError> {
    let index = store.load_hits(graph.len())?;
    let n = graph.len();
    let mut outputs: Vec<Option<Digest>> = vec![None; n];
    let mut blocked_on: Vec<Option<String>> = vec![None; n];
    let mut entries: Vec<Option<PlanEntry>> = (0..n).map(|_| None).collect();
    let mut deps = Vec::new();
    let mut encoded = Vec::new();
    let previous_by_name: HashMap<&str, &ManifestEntry> = previous
        .map(|m| m.entries.iter().map(|e| (e.name.as_str(), e)).collect())
        .unwrap_or_default();
    for &id in &graph.order {
        let spec = graph.node(id);
        let entry = match node_key(graph, id, |d| outputs[d], &mut deps, &mut encoded) {
            Err(d) => {
                let on = blocked_on[d]
                    .clone()
                    .unwrap_or_else(|| graph.node(d).name.clone());
                blocked_on[id] = Some(on.clone());
                PlanEntry {
                    name: spec.name.clone(),
                    kind: spec.kind.clone(),
                    key: None,
                    state: PlanState::Blocked { on },
                }
            }
            Ok(key) => {
                let prev = previous_by_name.get(spec.name.as_str()).copied();
                let reread_it = spec.observation && reread.contains(&spec.kind);
                let state = match index.get(&key) {
                Some(row) if !reread_it => match verify_hit(store, row, spec.job.as_ref()) {
                    Ok(()) => {
                        outputs[id] = Some(row.output);
                        PlanState::Cached
                    }
                    Err(p) => PlanState::Run {
                        reason: format!("cached result unusable: {p}"),
                    },
                },
                Some(_) => PlanState::Run {
                    reason: "--reread asks to observe it again".into(),
                },
                None => PlanState::Run {
                    reason: match prev.and_then(|p| p.key) {
                        None => "new node".into(),
                        Some(k) if k == key => {
                            "same key as last build, but not cached (it failed or was collected)"
                                .into()
                        }
                        Some(_) => {
                            "its key changed since the last build (see `assay explain`)".into()
                        }
                    },
                },
            };
                PlanEntry {
                    name: spec.name.clone(),
                    kind: spec.kind.clone(),
                    key: Some(key.to_hex()),
                    state,
                }
            }
        };
        if !matches!(entry.state, PlanState::Cached) && blocked_on[id].is_none() {
            blocked_on[id] = Some(spec.name.clone());
        }
        entries[id] = Some(entry);
    }
    Ok(entries.into_iter().flatten().collect())
}
