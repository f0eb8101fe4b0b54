//! The pipeline file (`pipeline.toml`): what to mine, how to screen and grade,
//! where the cache lives. Parsed once into [`Pipeline`]; every later error that
//! comes from the file points back into it with a span.

mod diag;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

pub(crate) use diag::ConfigError;

/// The file as written. Every table rejects unknown keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PipelineFile {
    /// Cache directory, relative to the pipeline file. Default `cache`.
    pub(crate) cache: Option<String>,
    /// Release directory, relative to the pipeline file. Default `release`.
    pub(crate) release: Option<String>,
    /// Generic command steps: a small make-like DAG run through the same engine.
    #[serde(default)]
    pub(crate) step: Vec<StepConfig>,
}

/// `[[step]]`: runs `run` with `sh -c` in a scratch directory holding copies of
/// its `inputs` (under `inputs/`) and its deps' outputs (under `deps/<name>`);
/// its stdout is its output.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepConfig {
    pub(crate) name: Spanned<String>,
    pub(crate) run: String,
    #[serde(default)]
    pub(crate) inputs: Vec<Spanned<String>>,
    #[serde(default)]
    pub(crate) deps: Vec<Spanned<String>>,
    /// Seconds before the step's process group is killed. Default 600.
    pub(crate) timeout: Option<u64>,
}

/// A parsed pipeline with the text it came from, for diagnostics.
#[derive(Debug)]
pub(crate) struct Pipeline {
    pub(crate) path: PathBuf,
    pub(crate) root: PathBuf,
    pub(crate) text: String,
    pub(crate) file: PipelineFile,
}

impl Pipeline {
    pub(crate) fn load(path: &Path) -> Result<Pipeline, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::plain(
                format!("cannot read the pipeline file {}: {e}", path.display()),
                "run assay in a directory with a pipeline.toml, or pass one with `-p FILE`",
            )
        })?;
        let name = path.display().to_string();
        let file: PipelineFile =
            toml::from_str(&text).map_err(|e| ConfigError::from_toml(&name, &text, &e))?;
        let root = path
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .unwrap_or(Path::new("."))
            .to_owned();
        Ok(Pipeline {
            path: path.to_owned(),
            root,
            text,
            file,
        })
    }

    pub(crate) fn cache_dir(&self) -> PathBuf {
        self.root
            .join(self.file.cache.as_deref().unwrap_or("cache"))
    }

    pub(crate) fn release_dir(&self) -> PathBuf {
        self.root
            .join(self.file.release.as_deref().unwrap_or("release"))
    }

    /// A path written in the file, resolved against the file's directory.
    pub(crate) fn resolve(&self, p: &str) -> PathBuf {
        self.root.join(p)
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
            &self.text,
            span,
            message,
            label,
            help,
        )
    }
}
