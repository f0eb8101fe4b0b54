//! Re-executing cached nodes to check them: an auditor's `verify --reexecute`.
//!
//! Every node's key is recomputed from the cache (a node whose key has no row
//! cannot be checked, nor can anything downstream of it). Nodes of the chosen
//! kinds are executed again on their cached inputs and the digest of what they
//! produce is compared with the stored output. Nothing is committed: the index
//! is not written, and no build is recorded (jobs may add content-addressed
//! blobs, which changes nothing). For observation kinds (test runs) a
//! difference is an observation, not necessarily corruption.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde::Serialize;
use tokio::task::JoinSet;

use crate::exclusive::Held;
use crate::graph::{Graph, NodeId};
use crate::job::JobCtx;
use crate::key::Digest;
use crate::scheduler::node_key;
use crate::store::{Store, StoreError};

/// One re-executed node.
#[derive(Clone, Debug, Serialize)]
pub struct Recheck {
    pub name: String,
    pub kind: String,
    pub key: String,
    pub stored: String,
    /// The digest of the new output, or why the job failed.
    pub recomputed: Result<String, String>,
    /// An observation (a test run): a difference is a new reading.
    pub observation: bool,
    /// The stored output's bytes and the re-executed output's bytes, for
    /// callers that compare what an observation *means* (a verdict) rather
    /// than its bytes.
    #[serde(skip)]
    pub stored_bytes: Option<Vec<u8>>,
    #[serde(skip)]
    pub new_bytes: Option<Vec<u8>>,
}

impl Recheck {
    pub fn same(&self) -> bool {
        self.recomputed.as_ref().is_ok_and(|d| *d == self.stored)
    }
}

/// What `recheck` did: the re-executed nodes, and the nodes it could not key
/// because they (or something upstream) are not cached.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RecheckReport {
    pub checked: Vec<Recheck>,
    pub not_cached: Vec<String>,
}

pub async fn recheck(
    store: &Store,
    graph: &Graph,
    kinds: &BTreeSet<String>,
    jobs: usize,
) -> Result<RecheckReport, StoreError> {
    let index = store.load_index()?;
    let n = graph.len();
    let mut outputs: Vec<Option<Digest>> = vec![None; n];
    let mut keys: Vec<Option<Digest>> = vec![None; n];
    let mut report = RecheckReport::default();
    let mut chosen = Vec::new();
    let mut deps = Vec::new();
    let mut buf = Vec::new();
    for &id in &graph.order {
        let spec = graph.node(id);
        let Ok(key) = node_key(graph, id, |d| outputs[d], &mut deps, &mut buf) else {
            report.not_cached.push(spec.name.clone());
            continue;
        };
        match index.get(&key) {
            Some(row) => {
                outputs[id] = Some(row.output);
                keys[id] = Some(key);
                if kinds.contains(&spec.kind) {
                    chosen.push(id);
                }
            }
            None => report.not_cached.push(spec.name.clone()),
        }
    }
    let mut running = JoinSet::new();
    let mut task_node: HashMap<tokio::task::Id, NodeId> = HashMap::new();
    let mut held = Held::default();
    let mut queue: VecDeque<NodeId> = chosen.into();
    loop {
        while running.len() < jobs.max(1) {
            let Some(id) = held.take_free(graph, &mut queue, |id| *id) else {
                break;
            };
            let spec = graph.node(id);
            let key = keys[id].unwrap_or(Digest([0; 32]));
            let stored = outputs[id].unwrap_or(Digest([0; 32]));
            let stored_bytes = index.get(&key).and_then(|row| store.output_bytes(row).ok());
            let (ctx, broken) = JobCtx::assemble(store, graph, id, key, |d| {
                let dkey = keys[d].unwrap_or(Digest([0; 32]));
                let bytes = match index.get(&dkey).map(|row| store.output_bytes(row)) {
                    Some(Ok(bytes)) => Ok(Arc::new(bytes)),
                    Some(Err(e)) => Err(e.to_string()),
                    None => Err("an input is not cached".into()),
                };
                (dkey, bytes)
            });
            let fut = spec.job.run(ctx);
            let (name, kind, observation) =
                (spec.name.clone(), spec.kind.clone(), spec.observation);
            let handle = running.spawn(async move {
                let (recomputed, new_bytes) = match broken {
                    Some(e) => (Err(format!("cannot read an input: {e}")), None),
                    None => match fut.await {
                        Ok(out) => (Ok(Digest::of(&out.bytes).to_hex()), Some(out.bytes)),
                        Err(e) => (Err(e.to_string()), None),
                    },
                };
                Recheck {
                    name,
                    kind,
                    key: key.to_hex(),
                    stored: stored.to_hex(),
                    recomputed,
                    observation,
                    stored_bytes,
                    new_bytes,
                }
            });
            task_node.insert(handle.id(), id);
        }
        let Some(joined) = running.join_next_with_id().await else {
            break;
        };
        let tid = match &joined {
            Ok((tid, _)) => *tid,
            Err(e) => e.id(),
        };
        if let Some(id) = task_node.remove(&tid) {
            held.release(graph, id);
        }
        match joined {
            Ok((_, r)) => report.checked.push(r),
            Err(e) => report.checked.push(Recheck {
                name: "?".into(),
                kind: "?".into(),
                key: String::new(),
                stored: String::new(),
                recomputed: Err(format!("the job panicked: {e}")),
                observation: false,
                stored_bytes: None,
                new_bytes: None,
            }),
        }
    }
    report.checked.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(report)
}
