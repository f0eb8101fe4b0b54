//! The one lock of the engine: [`Job::exclusive`](crate::Job::exclusive).
//!
//! Every driver that executes jobs (a build, a recheck) starts them only
//! through [`Held::take_free`] and gives the resource back with
//! [`Held::release`] when the job ends, so two jobs naming one resource never
//! run at once whichever driver runs them. A queued job whose resource is busy
//! stays queued without taking a slot: the next free one starts instead.

use std::collections::{HashSet, VecDeque};

use crate::graph::{Graph, NodeId};

/// The resources held by running jobs.
#[derive(Default)]
pub(crate) struct Held(HashSet<String>);

impl Held {
    /// Takes from `queue` the first entry whose node's resource is free, and
    /// holds that resource until [`Held::release`].
    pub(crate) fn take_free<T>(
        &mut self,
        graph: &Graph,
        queue: &mut VecDeque<T>,
        node_of: impl Fn(&T) -> NodeId,
    ) -> Option<T> {
        let free = queue.iter().position(|entry| {
            graph
                .node(node_of(entry))
                .job
                .exclusive()
                .is_none_or(|r| !self.0.contains(r))
        })?;
        let entry = queue.remove(free)?;
        if let Some(r) = graph.node(node_of(&entry)).job.exclusive() {
            self.0.insert(r.to_owned());
        }
        Some(entry)
    }

    /// The job of `id` ended: its resource is free again.
    pub(crate) fn release(&mut self, graph: &Graph, id: NodeId) {
        if let Some(r) = graph.node(id).job.exclusive() {
            self.0.remove(r);
        }
    }
}
