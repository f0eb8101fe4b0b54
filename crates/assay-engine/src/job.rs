//! What the engine runs: a [`Job`] per node, the [`JobCtx`] it is handed
//! (its key, its dependencies' outputs in declared order, the blob store),
//! and the [`Output`] it returns. Build and recheck assemble a context the
//! same way ([`JobCtx::assemble`]), so a re-executed job sees exactly what
//! the built one saw.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use crate::graph::{Graph, NodeId};
use crate::key::Digest;
use crate::store::{Blobs, Store};

pub type JobFuture = Pin<Box<dyn Future<Output = Result<Output, JobError>> + Send>>;

/// One stage's work. Implementations must be pure functions of the key's
/// inputs, except nodes marked `observation` (test runs), which are reused
/// until explicitly re-read.
pub trait Job: Send + Sync {
    fn run(&self, ctx: JobCtx) -> JobFuture;

    /// Extra check of a cache hit, e.g. that a directory named by the output
    /// still exists: why the hit cannot be reused, in words for `assay plan`
    /// and the build's log, or None to reuse it. A refusal turns the hit
    /// into a miss.
    fn refuse_hit(&self, _output: &[u8]) -> Option<String> {
        None
    }

    /// A resource this job must hold alone (e.g. a shared mutable directory).
    /// The scheduler never runs two jobs holding the same resource at once,
    /// and a job waiting for one does not occupy a `--jobs` slot: other ready
    /// work runs instead.
    fn exclusive(&self) -> Option<&str> {
        None
    }

    /// The job's future does all its work at its first poll, in
    /// microseconds, and never blocks (no I/O, no waiting): the scheduler
    /// then polls it once on the build's own thread instead of spawning a
    /// task for it, which saves two thread wake-ups a job. A future that is
    /// still pending after that poll is spawned as usual. `false` (the
    /// default) for anything that runs a process, reads files or computes
    /// for long: on the build's thread it would stall the scheduler.
    fn trivial(&self) -> bool {
        false
    }
}

/// What a job gets: its key, its dependencies' outputs (declared order), and
/// the blob store for attachments (logs, reports).
pub struct JobCtx {
    pub name: String,
    pub key: Digest,
    pub inputs: Vec<Arc<Vec<u8>>>,
    /// The dependencies' node keys, same order (a released task's digest is its key).
    pub input_keys: Vec<Digest>,
    pub blobs: Blobs,
    pub cache_dir: PathBuf,
    /// Where the job says how its work is going ([`Event::JobState`]).
    ///
    /// [`Event::JobState`]: crate::Event::JobState
    pub notes: Notes,
}

/// A job's line to the build's event stream: states of its work the engine
/// does not know (a remote executor's `queued`, `running` on a host), each
/// an [`Event::JobState`](crate::Event::JobState) of its node. Silent
/// outside a build (recheck, tests).
#[derive(Clone, Debug, Default)]
pub struct Notes(
    Option<(
        crate::graph::NodeId,
        tokio::sync::mpsc::UnboundedSender<Note>,
    )>,
);

/// One note of a job: its node, and a state word and where, or a warning.
#[derive(Debug)]
pub(crate) struct Note {
    pub(crate) node: crate::graph::NodeId,
    pub(crate) what: Noted,
}

#[derive(Debug)]
pub(crate) enum Noted {
    State {
        state: String,
        place: Option<String>,
    },
    Warning(String),
}

impl Notes {
    pub(crate) fn of(
        node: crate::graph::NodeId,
        tx: tokio::sync::mpsc::UnboundedSender<Note>,
    ) -> Notes {
        Notes(Some((node, tx)))
    }

    /// Says the job's work is in `state` (a word: `queued`, `running`,
    /// `done`, …), at `place` when it is somewhere (a host, a cluster node).
    pub fn note(&self, state: &str, place: Option<&str>) {
        if let Some((node, tx)) = &self.0 {
            let _ = tx.send(Note {
                node: *node,
                what: Noted::State {
                    state: state.to_owned(),
                    place: place.map(str::to_owned),
                },
            });
        }
    }

    /// Warns about the job's work ([`Event::JobWarning`]): what the user
    /// should know that does not fail it.
    ///
    /// [`Event::JobWarning`]: crate::Event::JobWarning
    pub fn warn(&self, message: impl Into<String>) {
        if let Some((node, tx)) = &self.0 {
            let _ = tx.send(Note {
                node: *node,
                what: Noted::Warning(message.into()),
            });
        }
    }
}

impl JobCtx {
    /// The context of node `id` under `key`: each dependency's key and output
    /// as `input_of` finds them (the one assembly of build and recheck),
    /// with why the first unreadable input could not be read.
    pub(crate) fn assemble(
        store: &Store,
        graph: &Graph,
        id: NodeId,
        key: Digest,
        mut input_of: impl FnMut(NodeId) -> (Digest, Result<Arc<Vec<u8>>, String>),
    ) -> (JobCtx, Option<String>) {
        let deps = graph.deps(id);
        let mut inputs = Vec::with_capacity(deps.len());
        let mut input_keys = Vec::with_capacity(deps.len());
        let mut unreadable = None;
        for &d in deps {
            let (dkey, bytes) = input_of(d as usize);
            input_keys.push(dkey);
            match bytes {
                Ok(b) => inputs.push(b),
                Err(e) => {
                    unreadable.get_or_insert(e);
                }
            }
        }
        let ctx = JobCtx {
            name: graph.node(id).name.clone(),
            key,
            inputs,
            input_keys,
            blobs: store.blobs().clone(),
            cache_dir: store.dir().to_owned(),
            notes: Notes::default(),
        };
        (ctx, unreadable)
    }
}

/// A job's result: the output record and the blobs it references.
#[derive(Debug, Default)]
pub struct Output {
    pub bytes: Vec<u8>,
    pub attachments: Vec<Digest>,
}

/// Why a job failed: its message (recorded as the failure's reason, word
/// for word) and, when the job says so, its *class*: whose problem the
/// failure is, in the job's own word (`input`, `infrastructure`, …). The
/// engine never interprets a job's class; it passes it on to the failed
/// node's event and outcome. Its own failures are [`JobError::CACHE`] (an
/// input it could not read, an output it could not store or commit) and
/// [`JobError::INTERNAL`] (a job that panicked or was cancelled).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct JobError {
    pub message: String,
    pub class: Option<&'static str>,
}

impl JobError {
    /// The engine's class of a failure of the cache under a job.
    pub const CACHE: &'static str = "cache";
    /// The engine's class of a job that panicked or was cancelled.
    pub const INTERNAL: &'static str = "internal";

    /// A failure the job did not class.
    pub fn new(msg: impl Into<String>) -> JobError {
        JobError {
            message: msg.into(),
            class: None,
        }
    }

    /// A failure of class `class`.
    pub fn classed(class: &'static str, msg: impl Into<String>) -> JobError {
        JobError {
            message: msg.into(),
            class: Some(class),
        }
    }
}
