//! Sources and their candidates: opening a repository (creating it with its
//! `create` script when missing), and listing candidates from its history or
//! from an explicit candidates file, within `since` / `limit`.

use std::path::PathBuf;

use assay_git::{CandidateQuery, Source};

use crate::pipeline::{Pipeline, SourceSettings};
use crate::run::error::StageError;

/// A candidate as the pipeline sees it, from git or from a candidates file.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct CandidateLine {
    pub(crate) id: String,
    pub(crate) base: String,
    pub(crate) head: String,
    #[serde(default)]
    pub(crate) title: String,
    #[serde(default)]
    pub(crate) body: String,
    /// The head (merge) commit's committer time, unix seconds (read from the
    /// repository for a candidates file's lines).
    #[serde(skip)]
    pub(crate) merged_at: i64,
}

/// Opens a source (creating it with its `create` script when missing) and lists its candidates.
pub(crate) fn open_source(
    pipeline: &Pipeline,
    src: &SourceSettings,
) -> Result<(Source, Vec<CandidateLine>), StageError> {
    let path: PathBuf = pipeline.resolve(src.path.get_ref());
    if let (false, Some(create)) = (path.exists(), &src.create) {
        {
            let script = pipeline.resolve(create.get_ref());
            let status = std::process::Command::new("bash")
                .arg(&script)
                .arg(&path)
                .stdout(std::process::Stdio::null())
                .status();
            if !matches!(status, Ok(s) if s.success()) {
                return Err(pipeline
                    .error_at(
                        create.span(),
                        format!(
                            "the create script for source `{}` failed ({status:?})",
                            src.name.get_ref()
                        ),
                        "this script",
                        "run it by hand to see its output",
                    )
                    .into());
            }
        }
    }
    let source = Source::open(&path).map_err(|e| {
        pipeline.error_at(
            src.path.span(),
            format!("cannot open source `{}`: {e}", src.name.get_ref()),
            "this repository",
            "point `path` at a git repository (or add `create` to make it)",
        )
    })?;
    if let Some(file) = &src.candidates {
        let p = pipeline.resolve(file.get_ref());
        let text = std::fs::read_to_string(&p).map_err(|e| {
            pipeline.error_at(
                file.span(),
                format!("cannot read candidates file: {e}"),
                "this file",
                "give a JSONL file of {id, base, head, title, body}",
            )
        })?;
        let mut list = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let c: CandidateLine = serde_json::from_str(line).map_err(|e| {
                let offset: usize = text.lines().take(i).map(|l| l.len() + 1).sum();
                crate::pipeline::ConfigError::at(
                    &p.display().to_string(),
                    &text,
                    offset..offset + line.len(),
                    format!("invalid candidate on line {}: {e}", i + 1),
                    "this line",
                    "each line is a JSON object with id, base, head (and optional title, body)",
                )
            })?;
            let base = source.resolve(&c.base).map_err(StageError::cache)?;
            let head = source.resolve(&c.head).map_err(StageError::cache)?;
            let merged_at = source.commit_time(&head).map_err(StageError::cache)?;
            list.push(CandidateLine {
                base,
                head,
                merged_at,
                ..c
            });
        }
        return Ok((source, list));
    }
    let query = CandidateQuery {
        branch: src.branch.clone(),
        id_prefix: src.name.get_ref().clone(),
        squash_pattern: Some(src.squash.clone()),
        since: src.bounds.since,
        limit: src.bounds.limit,
    };
    let list = source
        .candidates(&query)
        .map_err(|e| {
            pipeline.error_at(
                src.branch_span(),
                format!("cannot list candidates of `{}`: {e}", src.name.get_ref()),
                "this source",
                "check `branch`",
            )
        })?
        .into_iter()
        .map(|c| CandidateLine {
            id: c.id,
            base: c.base,
            head: c.head,
            title: c.title,
            body: c.body,
            merged_at: c.merged_at,
        })
        .collect();
    Ok((source, list))
}
