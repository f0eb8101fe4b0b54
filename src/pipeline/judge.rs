//! `[[judge]]` tables: each is an [`assay_judge::Settings`] as written (the
//! library's serde types are the schema, so toml reports unknown keys and
//! wrong types with their spans), except that `rubric` names a FILE, relative
//! to the pipeline file, whose text becomes the settings' rubric. Checked once
//! here ([`Settings::validate`], unique names, readable rubric); stages trust
//! the result.
//!
//! The API key itself is never read here: only its variable's name is kept.
//! Whether the variable is set is decided when the nodes are laid out.

use std::ops::Range;

use assay_judge::Settings;

use super::{ConfigError, Origin, PipelineFile};

/// The seed of the blind labels when `judge_seed` is not given.
pub(crate) const DEFAULT_SEED: u64 = 0;

/// One judge, ready to lay out.
#[derive(Clone, Debug)]
pub(crate) struct JudgeConfig {
    /// `rubric` holds the rubric file's TEXT.
    pub(crate) settings: Settings,
    /// The pipeline's `judge_seed`.
    pub(crate) seed: u64,
}

pub(super) fn load(
    pipeline: &Origin<'_>,
    file: &PipelineFile,
) -> Result<Vec<JudgeConfig>, ConfigError> {
    let seed = file.judge_seed.unwrap_or(DEFAULT_SEED);
    let mut out: Vec<JudgeConfig> = Vec::new();
    for table in &file.judge {
        let span = table.span();
        let mut settings = table.get_ref().clone();
        if let Some(earlier) = out.iter().find(|j| j.settings.name == settings.name) {
            return Err(pipeline.error_at(
                key_span(pipeline, span.clone(), "name"),
                format!("two judges are named `{}`", earlier.settings.name),
                "used again here",
                "give each [[judge]] its own name: it names the judge's nodes and columns",
            ));
        }
        if let Some(file) = &settings.rubric {
            let path = pipeline.resolve(file);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                pipeline.error_at(
                    key_span(pipeline, span.clone(), "rubric"),
                    format!("cannot read the rubric file {}: {e}", path.display()),
                    "this file",
                    "`rubric` names a text file relative to the pipeline file; leave it out for the built-in scale",
                )
            })?;
            settings.rubric = Some(text);
        }
        if let Err(e) = settings.validate() {
            return Err(pipeline.error_at(
                key_span(pipeline, span.clone(), e.field),
                format!("invalid judge: {e}"),
                "here",
                "docs/judge.md lists each key with its range and an example",
            ));
        }
        out.push(JudgeConfig { settings, seed });
    }
    Ok(out)
}

/// The span of the `key = …` line of the table whose header is at `table`
/// (searched up to the next table header), else the header's.
fn key_span(pipeline: &Origin<'_>, table: Range<usize>, key: &str) -> Range<usize> {
    let rest = pipeline.text.get(table.start..).unwrap_or_default();
    let mut offset = 0;
    for (i, line) in rest.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_start();
        if i > 0 && trimmed.starts_with('[') {
            break;
        }
        if let Some(after) = trimmed.strip_prefix(key)
            && after.trim_start().starts_with('=')
        {
            let start = table.start + offset + (line.len() - trimmed.len());
            return start..start + line.trim().len();
        }
        offset += line.len();
    }
    table
}
