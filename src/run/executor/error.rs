//! Why an executor could not launch a run or read it back: the machine's
//! failure (bubblewrap, the daemon, the cluster, a file), never the code
//! under test's, whose failures are its run's record. A node turns one into
//! its [`NodeError`](crate::run::error::NodeError) by the one `From` in
//! `run::error`.

use std::fmt::Display;
use std::sync::Arc;

/// Why a launch failed. Cloneable, so a probe or a connection made once
/// hands every run the same answer.
#[derive(Clone, Debug, thiserror::Error)]
pub(crate) enum LaunchError {
    /// What the executor needs on this machine is missing or unusable:
    /// bubblewrap, the Docker daemon.
    #[error("{0}")]
    Unavailable(String),
    /// A file or directory of the run could not be read or written.
    #[error("{what}: {cause}")]
    Io {
        what: String,
        cause: Arc<std::io::Error>,
    },
    /// The cache's blobs could not be read or written.
    #[error("{0}")]
    Cache(String),
    /// A Slurm client command failed, or a step or an allocation did not
    /// do what it was asked.
    #[error("{0}")]
    Slurm(String),
    /// What crossed between the coordinator and a node is not what was
    /// written there (a pack's digest, the worker's outcome).
    #[error("{0}")]
    Corrupt(String),
    /// A launch the executor refuses to make: an agent unsandboxed, a bind
    /// that cannot cross to a node.
    #[error("{0}")]
    Refused(String),
    /// An agent's relay to the egress proxy, or its workspace read back,
    /// failed.
    #[error("{0}")]
    Attempt(String),
    /// The run on a node failed as a local run would (`assay worker`).
    #[error("{0}")]
    Local(String),
    /// A blocking task of the launch panicked or was cancelled.
    #[error("{0}")]
    Task(Arc<tokio::task::JoinError>),
    /// assay's own mistake: a launch handed to an executor without what it
    /// needs.
    #[error("{0}")]
    Internal(&'static str),
}

impl LaunchError {
    /// An I/O error on `what` (a path, or what was being done).
    pub(crate) fn io(what: impl Display) -> impl FnOnce(std::io::Error) -> LaunchError {
        move |cause| LaunchError::Io {
            what: what.to_string(),
            cause: Arc::new(cause),
        }
    }

    pub(crate) fn task(e: tokio::task::JoinError) -> LaunchError {
        LaunchError::Task(Arc::new(e))
    }
}
