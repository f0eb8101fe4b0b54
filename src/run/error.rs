//! Why the stages failed. [`StageError`]: a build could not be laid out or
//! started. [`NodeError`]: one node failed, with its [`ErrorKind`], whose
//! problem that is. The stages never pick an exit code: the CLI maps each
//! variant and kind to one (`cli::Failure`, `cli::build`), so a config error,
//! an unusable cache, a missing sandbox, bad data and a broken machine stay
//! apart. [`LaunchError`]: why an executor could not launch a run or read
//! it back, a node's error by one `From`.

use crate::pipeline::ConfigError;

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub(crate) enum StageError {
    /// `pipeline.toml` (or a file it names) says something that cannot be
    /// built: the diagnostic points into the file.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Config(#[from] ConfigError),
    /// The cache (its object store, a repository read into it) cannot be used.
    #[error("{0}")]
    #[diagnostic(help(
        "if the index is damaged, move `index.sqlite` out of the cache directory; the next build starts it afresh (blobs are reused)"
    ))]
    Cache(String),
    /// Graded code cannot be confined here: bubblewrap or the Docker daemon
    /// is missing or unusable.
    #[error("{message}")]
    #[diagnostic(help("{help}"))]
    Sandbox { message: String, help: String },
}

impl StageError {
    pub(crate) fn cache(e: impl std::fmt::Display) -> StageError {
        StageError::Cache(e.to_string())
    }

    pub(crate) fn sandbox(e: impl std::fmt::Display, help: impl Into<String>) -> StageError {
        StageError::Sandbox {
            message: e.to_string(),
            help: help.into(),
        }
    }
}

/// `e` and every error under it, `: `-joined: a message for a record,
/// where the cause is the useful part.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// Whose problem a failed node is, and so what to do about it. The word
/// ([`ErrorKind::as_str`]) is the failure's class in the engine's events
/// (`node_failed`'s `class`) and in the build's summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ErrorKind {
    /// The node's input is bad: a patch, session, report, task folder or
    /// repository that cannot be read as what it claims to be. The data's
    /// (or the agent's) problem: rerunning changes nothing.
    Input,
    /// The machine or a service under the node failed: the Docker daemon,
    /// Slurm, bubblewrap, a process that could not start, a file system, a
    /// network. Nothing is wrong with the data: the next build reruns it.
    Infrastructure,
    /// The settings, as they turn out when the node uses them: a judge's
    /// key refused by its endpoint, an agent's key variable unset or its
    /// command not found. Fix the pipeline file or the variables it names.
    Config,
    /// The cache under the node: a blob or object it could not read or
    /// write, a record it holds that does not decode.
    Cache,
    /// A bug in assay: an invariant of its own broken.
    Internal,
}

impl ErrorKind {
    pub(crate) const ALL: [ErrorKind; 5] = [
        ErrorKind::Input,
        ErrorKind::Infrastructure,
        ErrorKind::Config,
        ErrorKind::Cache,
        ErrorKind::Internal,
    ];

    /// The kind's word: `input`, `infrastructure`, `config`, `cache`,
    /// `internal` (the last two are also the engine's own classes).
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Input => "input",
            ErrorKind::Infrastructure => "infrastructure",
            ErrorKind::Config => "config",
            ErrorKind::Cache => assay_engine::JobError::CACHE,
            ErrorKind::Internal => assay_engine::JobError::INTERNAL,
        }
    }

    /// The kind a word names (a failed node's class).
    pub(crate) fn parse(word: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == word)
    }

    /// What to do about a failure of this kind.
    pub(crate) const fn hint(self) -> &'static str {
        match self {
            ErrorKind::Input => {
                "the node's input is malformed (a patch, session, report or task folder): fix or remove it; rebuilding as it is fails the same way"
            }
            ErrorKind::Infrastructure => {
                "the machine or a service failed under the node (Docker daemon, Slurm, bubblewrap, a process, the disk): fix it and build again; the failed nodes rerun, the rest is cached"
            }
            ErrorKind::Config => {
                "the settings do not work as the node uses them (a key refused or unset, a command not found): fix the pipeline file or the variables it names, and build again"
            }
            ErrorKind::Cache => {
                "the cache could not be read or written: check the disk, then `assay verify`; a damaged entry is recomputed by the next build"
            }
            ErrorKind::Internal => {
                "a bug in assay: please report it with the node's name and message"
            }
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why one node failed: its kind, what failed, and the error under it
/// (its `source`, when another crate's error caused it). Recorded as the
/// failure's reason by [`chain`] (the message and every cause, `: `-joined),
/// and classed by its kind.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct NodeError {
    pub(crate) kind: ErrorKind,
    message: String,
    #[source]
    source: Option<Cause>,
}

impl miette::Diagnostic for NodeError {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(self.kind.as_str()))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(self.kind.hint()))
    }
}

impl NodeError {
    pub(crate) fn new(kind: ErrorKind, message: impl std::fmt::Display) -> NodeError {
        NodeError {
            kind,
            message: message.to_string(),
            source: None,
        }
    }

    /// The node's input is bad ([`ErrorKind::Input`]).
    pub(crate) fn input(message: impl std::fmt::Display) -> NodeError {
        NodeError::new(ErrorKind::Input, message)
    }

    /// The machine or a service failed ([`ErrorKind::Infrastructure`]).
    pub(crate) fn infra(message: impl std::fmt::Display) -> NodeError {
        NodeError::new(ErrorKind::Infrastructure, message)
    }

    /// The cache failed ([`ErrorKind::Cache`]).
    pub(crate) fn cache(message: impl std::fmt::Display) -> NodeError {
        NodeError::new(ErrorKind::Cache, message)
    }

    /// A bug in assay ([`ErrorKind::Internal`]).
    pub(crate) fn internal(message: impl std::fmt::Display) -> NodeError {
        NodeError::new(ErrorKind::Internal, message)
    }

    /// `message`, caused by `source`.
    pub(crate) fn caused(
        kind: ErrorKind,
        message: impl std::fmt::Display,
        source: impl Into<Cause>,
    ) -> NodeError {
        NodeError {
            kind,
            message: message.to_string(),
            source: Some(source.into()),
        }
    }

    /// This error under `message` (what was being done): `message: this
    /// error's message`, of the same kind and with the same cause, so its
    /// text reads whole wherever it is shown.
    pub(crate) fn context(self, message: impl std::fmt::Display) -> NodeError {
        NodeError {
            message: format!("{message}: {}", self.message),
            ..self
        }
    }

    /// This error as the engine records it: the whole chain as its
    /// message, the kind as its class.
    pub(crate) fn into_job(self) -> assay_engine::JobError {
        assay_engine::JobError::classed(self.kind.as_str(), chain(&self))
    }
}

/// Turns any error into a [`NodeError`] of a kind the caller names.
pub(crate) trait Kinded<T> {
    /// The error, as a node error of `kind` (its text as the message).
    fn kind(self, kind: ErrorKind) -> Result<T, NodeError>;
    /// [`ErrorKind::Input`].
    fn input(self) -> Result<T, NodeError>
    where
        Self: Sized,
    {
        self.kind(ErrorKind::Input)
    }
    /// [`ErrorKind::Infrastructure`].
    fn infra(self) -> Result<T, NodeError>
    where
        Self: Sized,
    {
        self.kind(ErrorKind::Infrastructure)
    }
    /// [`ErrorKind::Cache`].
    fn cache(self) -> Result<T, NodeError>
    where
        Self: Sized,
    {
        self.kind(ErrorKind::Cache)
    }
    /// [`ErrorKind::Internal`].
    fn internal(self) -> Result<T, NodeError>
    where
        Self: Sized,
    {
        self.kind(ErrorKind::Internal)
    }
}

impl<T, E: std::fmt::Display> Kinded<T> for Result<T, E> {
    fn kind(self, kind: ErrorKind) -> Result<T, NodeError> {
        self.map_err(|e| NodeError::new(kind, e))
    }
}

/// Adds what was being done to a node error, keeping its kind.
pub(crate) trait Context<T> {
    fn context(self, message: impl std::fmt::Display) -> Result<T, NodeError>;
    fn with_context<M: std::fmt::Display>(
        self,
        message: impl FnOnce() -> M,
    ) -> Result<T, NodeError>;
}

impl<T> Context<T> for Result<T, NodeError> {
    fn context(self, message: impl std::fmt::Display) -> Result<T, NodeError> {
        self.map_err(|e| e.context(message))
    }

    fn with_context<M: std::fmt::Display>(
        self,
        message: impl FnOnce() -> M,
    ) -> Result<T, NodeError> {
        self.map_err(|e| e.context(message()))
    }
}

#[cfg(test)]
mod tests {
    use super::{ErrorKind, Kinded, NodeError, chain};

    #[test]
    fn a_node_error_keeps_its_kind_and_its_causes_under_context() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = NodeError::caused(ErrorKind::Cache, "reading blob ab12", io)
            .context("loading the session patch");
        assert_eq!(e.kind, ErrorKind::Cache);
        assert_eq!(
            chain(&e),
            "loading the session patch: reading blob ab12: no such file"
        );
        let job = e.into_job();
        assert_eq!(job.class, Some("cache"));
        assert_eq!(
            job.message,
            "loading the session patch: reading blob ab12: no such file"
        );
    }

    #[test]
    fn every_kind_has_a_word_that_parses_back_and_a_hint() {
        for k in ErrorKind::ALL {
            assert_eq!(ErrorKind::parse(k.as_str()), Some(k));
            assert!(!k.hint().is_empty());
        }
        assert_eq!(ErrorKind::parse("nonsense"), None);
    }

    #[test]
    fn a_string_error_becomes_a_node_error_of_the_kind_named() {
        let r: Result<(), String> = Err("bad hunk".into());
        let e = r.input().unwrap_err();
        assert_eq!(
            (e.kind, e.to_string()),
            (ErrorKind::Input, "bad hunk".into())
        );
    }
}

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
        cause: std::sync::Arc<std::io::Error>,
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
    Task(std::sync::Arc<tokio::task::JoinError>),
    /// assay's own mistake: a launch handed to an executor without what it
    /// needs.
    #[error("{0}")]
    Internal(&'static str),
}

impl LaunchError {
    /// An I/O error on `what` (a path, or what was being done).
    pub(crate) fn io(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> LaunchError {
        move |cause| LaunchError::Io {
            what: what.to_string(),
            cause: std::sync::Arc::new(cause),
        }
    }

    pub(crate) fn task(e: tokio::task::JoinError) -> LaunchError {
        LaunchError::Task(std::sync::Arc::new(e))
    }
}

/// What cannot fail: a release published to memory.
impl From<std::convert::Infallible> for NodeError {
    fn from(never: std::convert::Infallible) -> NodeError {
        match never {}
    }
}

/// A launch that failed: the machine's problem (bubblewrap, the daemon, the
/// cluster, a file), so the next build reruns it; the cache's when its
/// blobs failed; assay's when a launch reached an executor without what it
/// needs.
impl From<LaunchError> for NodeError {
    fn from(e: LaunchError) -> NodeError {
        match e {
            LaunchError::Internal(what) => NodeError::internal(format!("run: {what}")),
            LaunchError::Cache(why) => NodeError::cache(format!("run: {why}")),
            e => NodeError::infra(format!("run: {e}")),
        }
    }
}
