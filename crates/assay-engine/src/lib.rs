//! A generic, content-addressed DAG engine.
//!
//! Every node is a pure function of its *key*: the blake3 hash of a canonical
//! encoding of `{kind, kind_version, params, dependency output digests}`.
//! Results live in a [`Store`] (sqlite index + content-addressed blobs) that a
//! crash at any instant leaves consistent, so a rerun executes only the nodes
//! whose key is new. Dependencies enter a key by their *output* digest, which
//! gives early cutoff: an upstream rerun that yields the same bytes leaves every
//! dependent cached.
//!
//! This crate knows nothing about benchmarks: stages are opaque [`Job`]s.

mod events;
mod exclusive;
mod graph;
mod job;
mod key;
mod lock;
mod plan;
mod recheck;
mod scheduler;
mod store;
#[doc(hidden)]
pub mod synthetic;
mod writer;

pub use events::{Event, KindCounts, Summary, UNCLASSIFIED};
pub use graph::{Graph, GraphError, NodeId, NodeSpec};
pub use job::{Job, JobCtx, JobError, JobFuture, Notes, Output};
pub use key::{Digest, DigestHasher, DigestMap, KeyRecord, SCHEMA_VERSION, encode_params};
pub use lock::{CacheLock, LockError};
pub use plan::{PlanEntry, PlanState, plan};
pub use recheck::{Recheck, RecheckReport, recheck};
pub use scheduler::{BuildOptions, BuildOutcome, NodeOutcome, NodeStatus, build};
pub use store::{
    Blobs, BuildManifest, BuildRecord, FailureRow, IndexRow, ManifestEntry, Store, StoreError,
    VerifyProblem,
};

/// This thread's CPU time (user and system), in seconds: what the phase
/// timers (`ASSAY_PHASES=1`) print beside the wall time.
pub fn thread_cpu_secs() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}
