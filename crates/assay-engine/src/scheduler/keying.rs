//! A node's key from its dependencies' outputs, the check of a cache hit,
//! and a dependency's output read back as a job's input.

use std::sync::Arc;

use crate::graph::{Graph, NodeId};
use crate::job::Job;
use crate::key::{Digest, KeyRecordRef, SCHEMA_VERSION};
use crate::store::{HitRow, Hits, Store, StoreError};

use super::outcome::{NodeOutcome, State};

/// A node's key from its dependencies' outputs as `output_of` finds them, or
/// the first dependency that has none: the one key walk of build, plan and
/// recheck. `deps` is left holding the outputs; it and `buf` are reused from
/// node to node, so computing a key allocates nothing.
pub(crate) fn node_key(
    graph: &Graph,
    id: NodeId,
    output_of: impl Fn(NodeId) -> Option<Digest>,
    deps: &mut Vec<Digest>,
    buf: &mut Vec<u8>,
) -> Result<Digest, NodeId> {
    dep_outputs(graph, id, output_of, deps)?;
    Ok(record_ref(graph, id, deps).key_with(buf))
}

/// Fills `deps` with node `id`'s dependencies' outputs, or returns the
/// first dependency that has none.
pub(super) fn dep_outputs(
    graph: &Graph,
    id: NodeId,
    output_of: impl Fn(NodeId) -> Option<Digest>,
    deps: &mut Vec<Digest>,
) -> Result<(), NodeId> {
    deps.clear();
    for &d in graph.deps(id) {
        let d = d as usize;
        deps.push(output_of(d).ok_or(d)?);
    }
    Ok(())
}

pub(super) fn record_ref<'a>(graph: &'a Graph, id: NodeId, deps: &'a [Digest]) -> KeyRecordRef<'a> {
    let spec = graph.node(id);
    KeyRecordRef {
        schema: SCHEMA_VERSION,
        kind: &spec.kind,
        kind_version: spec.kind_version,
        params: &spec.params,
        deps,
    }
}

/// Checks a hit: output and attachments present and hashing to their digests.
pub(crate) fn verify_hit(store: &Store, row: HitRow<'_>, job: &dyn Job) -> Result<(), String> {
    // Inline outputs (most of a no-op build) were checked as the index was
    // loaded, and are not copied.
    let blob;
    let bytes: &[u8] = match row.check_inline().map_err(|e| e.to_string())? {
        Some(inline) => inline,
        None => {
            blob = store.blobs().get(&row.output).map_err(|e| e.to_string())?;
            &blob
        }
    };
    for a in row.attachments {
        store.blobs().get(a).map_err(|e| e.to_string())?;
    }
    if let Some(why) = job.refuse_hit(bytes) {
        return Err(why);
    }
    Ok(())
}

pub(super) fn load_input(
    store: &Store,
    index: &Hits,
    state: &[State],
    outcomes: &[NodeOutcome],
    dep: NodeId,
) -> Result<Arc<Vec<u8>>, StoreError> {
    if let State::Done(_, Some(bytes)) = &state[dep] {
        return Ok(bytes.clone());
    }
    let key = outcomes[dep].key.unwrap_or(Digest([0; 32]));
    match index.get(&key) {
        Some(row) => Ok(Arc::new(row.bytes(store)?)),
        None => Err(StoreError::MissingBlob {
            digest: outcomes[dep].output.unwrap_or(Digest([0; 32])),
        }),
    }
}
