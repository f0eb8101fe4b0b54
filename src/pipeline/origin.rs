//! The pipeline file a setting came from: its path, the directory its
//! relative paths start from, and its text, which every diagnostic points
//! into.

use std::path::{Path, PathBuf};

use super::diag::ConfigError;

/// A view of the loaded file, all that the readers of its tables need.
#[derive(Clone, Copy)]
pub(crate) struct Origin<'a> {
    pub(crate) path: &'a Path,
    pub(crate) root: &'a Path,
    pub(crate) text: &'a str,
}

impl Origin<'_> {
    pub(crate) fn resolve(&self, p: &str) -> PathBuf {
        self.root.join(p)
    }

    pub(crate) fn nonzero(
        &self,
        v: &Option<toml::Spanned<u64>>,
        default: u64,
        what: &str,
        why: &str,
    ) -> Result<u64, ConfigError> {
        match v {
            None => Ok(default),
            Some(v) if *v.get_ref() == 0 => Err(self.error_at(
                v.span(),
                format!("`{what}` cannot be 0"),
                "here",
                format!("{why}; leave the key out for the default (`assay docs pipeline`)"),
            )),
            Some(v) => Ok(*v.get_ref()),
        }
    }

    /// An error pointing at a span of this file.
    pub(crate) fn error_at(
        &self,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) -> ConfigError {
        ConfigError::at(
            &self.path.display().to_string(),
            self.text,
            span,
            message,
            label,
            help,
        )
    }
}
