//! Errors of this crate.
//!
//! Every variant names what was being done (which commit, path, command) so a
//! caller can report it without extra context. `ComposeError` separates the
//! two outcomes a grader must tell apart from an infrastructure failure: a
//! patch that does not apply and a patch that tries to leave the tree.

use std::path::PathBuf;

/// A failure reading a repository, running git or writing files.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot open git repository at {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: Box<gix::Error>,
    },
    #[error("cannot resolve revision `{rev}`")]
    Resolve {
        rev: String,
        #[source]
        source: Box<gix::Error>,
    },
    #[error("cannot read object {id}: {what}")]
    Object {
        id: String,
        what: String,
        #[source]
        source: Option<Box<gix::Error>>,
    },
    #[error("cannot diff {base}..{head}")]
    Diff {
        base: String,
        head: String,
        #[source]
        source: Box<gix::Error>,
    },
    #[error("cannot run `git {args}`")]
    Spawn {
        args: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`git {args}` failed ({status}): {stderr}")]
    Command {
        args: String,
        status: String,
        stderr: String,
    },
    #[error("I/O error on {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("refusing path `{path}`: {reason}")]
    UnsafePath { path: String, reason: String },
    #[error("malformed patch at line {line}: {reason}")]
    Patch { line: usize, reason: String },
    /// `git apply` reads the patch differently from assay's reading of it.
    #[error("git reads this patch differently from assay: {reason}")]
    Misread { reason: String },
    #[error("invalid pattern: {0}")]
    Pattern(String),
    /// Stopped at its time bound (killed).
    #[error("`git {args}` took over {seconds} s and was stopped")]
    TimedOut { args: String, seconds: u64 },
}

impl GitError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> GitError {
        GitError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn object(
        id: impl ToString,
        what: impl Into<String>,
        source: gix::Error,
    ) -> GitError {
        GitError::Object {
            id: id.to_string(),
            what: what.into(),
            source: Some(Box::new(source)),
        }
    }
}

/// Why a staged tree could not be composed.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    /// `git apply` rejected the patch of this step (conflict, malformed patch).
    #[error("patch `{label}` does not apply: {stderr}")]
    Apply { label: String, stderr: String },
    /// assay's reading of this step's patch is not `git apply`'s: its paths
    /// could not be trusted for any decision, so it is not applied.
    #[error("patch `{label}` is not read the same by git and assay: {reason}")]
    Misread { label: String, reason: String },
    /// The patch of this step would write outside the tree or into git metadata.
    #[error("patch `{label}` escapes the tree at `{path}`: {reason}")]
    PathEscape {
        label: String,
        path: String,
        reason: String,
    },
    #[error(transparent)]
    Git(#[from] GitError),
}
