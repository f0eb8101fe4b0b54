//! The pipeline file (`pipeline.toml`): what to mine, how to screen and grade,
//! where the cache lives. Loaded once into [`Pipeline`], as ripgrep turns low
//! args into high args: `file` mirrors the TOML as written, `checks` refuses
//! values that parse but make no sense, `settings` (with `sources`, `env`
//! and `judge`) converts it into checked, typed settings, and the file as
//! written is dropped. Stages and the command line see only the settings;
//! command-line overrides are applied to them, never to the file. Every
//! later error that comes from the file points back into its text with a
//! span the settings kept.

mod agent;
mod app;
mod capability;
mod checks;
mod confine;
mod diag;
mod env;
mod file;
mod instances;
mod judge;
mod metric;
mod origin;
pub(crate) mod preset;
mod settings;
mod sources;
mod tamper;

use std::path::{Path, PathBuf};

pub(crate) use crate::model::config::{Arm, PatchCaps, Policy};
pub(crate) use agent::{AgentSettings, TranscriptFormat};
#[allow(unused_imports)]
pub(crate) use app::AppSettings;
pub(crate) use diag::ConfigError;
pub(crate) use env::{EnvSpec, formats as report_formats};
use file::PipelineFile;
pub(crate) use file::{CanaryTemplate, EnvConfig};
pub(crate) use instances::InstancesSettings;
pub(crate) use judge::JudgeConfig;
pub(crate) use metric::{Count, Measure, Metric};
pub(crate) use origin::Origin;
pub(crate) use settings::{GradeSettings, Settings};
pub(crate) use sources::{Bounds, SourceSettings, parse_date};
pub(crate) use tamper::{AllowTamper, Allowance, allowances};

/// A loaded pipeline: its settings, with the text they came from, for
/// diagnostics.
#[derive(Debug)]
pub(crate) struct Pipeline {
    pub(crate) path: PathBuf,
    pub(crate) root: PathBuf,
    pub(crate) text: String,
    /// The `[[judge]]` tables, validated, rubric files read.
    pub(crate) judges: Vec<JudgeConfig>,
    /// The rest of the file, validated once (sources, globs, patterns,
    /// directories, environments, policy, arms): what the layout builds
    /// nodes from.
    pub(crate) settings: Settings,
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
        let mut file: PipelineFile =
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
        let mut pipeline = Pipeline {
            path: path.to_owned(),
            root,
            text,
            judges: Vec::new(),
            // Filled in below, once the file's checks have passed.
            settings: Settings::default(),
        };
        preset::expand(&pipeline.origin(), &mut file)?;
        checks::check(&pipeline.origin(), &file)?;
        pipeline.settings = Settings::of(&pipeline.origin(), &file)?;
        pipeline.judges = judge::load(&pipeline.origin(), &file)?;
        Ok(pipeline)
    }

    pub(crate) fn cache_dir(&self) -> PathBuf {
        self.settings.cache_dir.clone()
    }

    pub(crate) fn release_dir(&self) -> PathBuf {
        self.settings.release_dir.clone()
    }

    /// A path written in the file, resolved against the file's directory.
    pub(crate) fn resolve(&self, p: &str) -> PathBuf {
        self.origin().resolve(p)
    }

    /// A count or size setting that may not be 0: its value, `default` when
    /// absent, or an error at its span saying why 0 would not do (`why`).
    /// The file the settings came from, for diagnostics that point into it.
    pub(crate) fn origin(&self) -> Origin<'_> {
        Origin {
            path: &self.path,
            root: &self.root,
            text: &self.text,
        }
    }

    pub(crate) fn error_at(
        &self,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) -> ConfigError {
        self.origin().error_at(span, message, label, help)
    }
}
