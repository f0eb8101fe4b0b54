//! A build's first pass: every node keyed in topological order before
//! anything runs, and for large graphs the manifest written alongside.

use std::sync::mpsc;

use crate::key::Digest;
use crate::store::{ManifestEntryRef, ManifestWriter};

use super::Build;
use super::outcome::State;

/// From this many nodes on, a build's sweep writes the manifest of what it
/// settles on a second thread as it goes.
const MANIFEST_AHEAD_MIN: usize = 4096;
/// Manifest entries a batch, and batches queued at most.
const MANIFEST_BATCH: usize = 4096;
const MANIFEST_BATCHES_QUEUED: usize = 16;

/// A settled node's manifest entry, but for its name and kind.
struct Settled {
    key: Option<Digest>,
    output: Option<Digest>,
    status: &'static str,
}

impl Build<'_, '_> {
    /// Keys every node in topological order before anything runs: each
    /// whose dependencies are all reused is keyed (and reused, or queued);
    /// the others wait for the dependencies not done yet, which release them
    /// as they end. A no-op build is this one pass, with no ready queue.
    ///
    /// Nodes go in chunks (the next nodes in order, up to one that depends
    /// on a node of the chunk): the chunk's dependency outputs are read,
    /// then its keys computed, then its index rows looked up, each in a
    /// loop of its own, so that the cache misses of a chunk overlap instead
    /// of each node waiting on its own (random dependencies and a hash
    /// table of 100,000 rows are mostly misses).
    pub(super) fn sweep(&mut self) {
        let graph = self.graph;
        let n = graph.len();
        if n < MANIFEST_AHEAD_MIN {
            self.sweep_nodes(None);
            return;
        }
        // The manifest of the nodes settled in order (all of them in a
        // no-op build) is encoded, hashed and compared with the previous
        // build's on a second thread, in batches, as the sweep goes.
        let previous = self.store.last_manifest();
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::sync_channel::<Vec<Settled>>(MANIFEST_BATCHES_QUEUED);
            let writer = s.spawn(move || {
                let mut manifest = ManifestWriter::new(n, previous);
                for batch in rx {
                    let at = manifest.entries();
                    manifest.push(batch.iter().enumerate().map(|(i, e)| {
                        let spec = graph.node(at + i);
                        ManifestEntryRef {
                            name: &spec.name,
                            kind: &spec.kind,
                            key: e.key,
                            output: e.output,
                            status: e.status,
                        }
                    }));
                }
                manifest
            });
            self.sweep_nodes(Some(tx));
            self.manifest = writer.join().ok();
        });
    }

    /// [`Build::sweep`]'s walk; with `settled`, the entries of the nodes it
    /// settles are sent on in batches, in node order, while every node
    /// before them has settled.
    fn sweep_nodes(&mut self, settled: Option<mpsc::SyncSender<Vec<Settled>>>) {
        let (mut sent, mut frontier) = (0, 0);
        const CHUNK: usize = 32;
        let graph = self.graph;
        let order = &graph.order;
        let mut keys: Vec<Option<Digest>> = Vec::with_capacity(CHUNK);
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            while end < order.len()
                && end - start < CHUNK
                && !graph
                    .deps(order[end])
                    .iter()
                    .any(|&d| order[start..end].contains(&(d as usize)))
            {
                end += 1;
            }
            let chunk = &order[start..end];
            let done = |state: &[State], d: usize| matches!(state[d], State::Done(..));
            for &id in chunk {
                for &d in graph.deps(id) {
                    std::hint::black_box(done(&self.state, d as usize));
                }
            }
            keys.clear();
            for &id in chunk {
                let fresh =
                    matches!(self.state[id], State::Waiting) && self.outcomes[id].key.is_none();
                keys.push(fresh.then(|| self.key_of_ready(id)).flatten());
            }
            for key in keys.iter().flatten() {
                std::hint::black_box(self.index.get(key).is_some());
            }
            for (&id, key) in chunk.iter().zip(&keys) {
                // Its dependents come later in this order: nothing to release.
                if let Some(key) = *key {
                    self.decide(id, key, false);
                }
            }
            start = end;
            if let Some(tx) = &settled {
                while frontier < order.len()
                    && order[frontier] == frontier
                    && matches!(self.state[frontier], State::Done(..))
                {
                    frontier += 1;
                }
                if frontier - sent >= MANIFEST_BATCH || (start == order.len() && frontier > sent) {
                    let batch = (sent..frontier)
                        .map(|id| Settled {
                            key: self.outcomes[id].key,
                            output: self.outcomes[id].output,
                            status: self.outcomes[id].status.word(),
                        })
                        .collect();
                    if tx.send(batch).is_ok() {
                        sent = frontier;
                    }
                }
            }
        }
        drop(settled);
        for id in 0..graph.len() {
            if self.outcomes[id].key.is_none() {
                let state = &self.state;
                self.waiting[id] = graph
                    .deps(id)
                    .iter()
                    .filter(|&&d| !matches!(state[d as usize], State::Done(..)))
                    .count();
            }
        }
    }
}
