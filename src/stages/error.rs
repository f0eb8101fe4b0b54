//! Why the stages could not lay out or start a build. The stages never pick
//! an exit code: the CLI maps each variant to one (`cli::Failure`), so a
//! config error, an unusable cache and a missing sandbox stay apart.

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
