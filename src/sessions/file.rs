//! assay's own session file (`*.json`, docs/sessions.md): labels, the patch
//! inline or in a file next to it, and the run facts, given explicitly and/or
//! read from a Claude Code transcript. Explicit facts win over the
//! transcript's, field by field (token kinds one by one).
//!
//! Unknown keys are errors: a misspelt `"patch_flie"` must not silently grade
//! the empty patch.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::RunFacts;
use super::read::{Failure, ParsedSession, SessionError, read_text};
use super::span::{self, ObjectSpans};
use super::{Session, claude, mini};

/// The tracks a task is released on (`stages/layout.rs`).
const TRACKS: [&str; 2] = ["basic", "spec"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionFile {
    task: Option<String>,
    track: Option<String>,
    agent: Option<String>,
    model: Option<String>,
    patch: Option<String>,
    patch_file: Option<String>,
    transcript: Option<String>,
    run: Option<RunSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunSection {
    turns: Option<u64>,
    #[serde(default)]
    tokens: BTreeMap<String, u64>,
    ended: Option<String>,
    is_error: Option<bool>,
    permission_denials: Option<u64>,
    duration_ms: Option<u64>,
}

impl RunSection {
    /// `self` over `base`: every value given here replaces the base's.
    fn over(self, mut base: RunFacts) -> RunFacts {
        base.tokens.extend(self.tokens);
        RunFacts {
            turns: self.turns.or(base.turns),
            tokens: base.tokens,
            ended: self.ended.or(base.ended),
            // Whoever wrote the file is no witness of its run's end.
            is_error: None,
            claimed_error: self.is_error.or(base.claimed_error),
            permission_denials: self.permission_denials.or(base.permission_denials),
            duration_ms: self.duration_ms.or(base.duration_ms),
            by_model: base.by_model,
            reported_cost_usd: base.reported_cost_usd,
            models: base.models,
            trial: base.trial,
            patch_refused: base.patch_refused,
            patch_redacted: base.patch_redacted,
        }
    }
}

/// The transcript a session file names, resolved; `None` when it names none
/// or cannot be read (its own load reports that).
pub(super) fn named_transcript(root: &Path, path: &Path) -> Option<PathBuf> {
    let text = String::from_utf8(super::read::read_beneath(root, path).ok()?).ok()?;
    let spans = span::object_spans(&text)?;
    let value = text.get(spans.value("transcript")?)?;
    let name: String = serde_json::from_str(value).ok()?;
    Some(beside(path, &name))
}

/// `name` relative to the directory of the session file `path`.
fn beside(path: &Path, name: &str) -> PathBuf {
    path.parent().unwrap_or(Path::new("")).join(name)
}

/// Why a file a session names may not be read, if it may not: it must stay
/// below the session file's directory (no absolute path, no `..`, not a
/// symlink), so a session cannot pull an arbitrary file of the machine into
/// the cache as its "patch".
fn outside(path: &Path, name: &str) -> Option<String> {
    let rel = Path::new(name);
    if rel.is_absolute()
        || rel
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Some(format!("{name:?} leaves the session's directory"));
    }
    let resolved = beside(path, name);
    match std::fs::symlink_metadata(&resolved) {
        Ok(m) if m.file_type().is_symlink() => Some(format!("{name:?} is a symbolic link")),
        _ => None,
    }
}

/// Reads one session file.
pub(super) fn load(root: &Path, id: &str, path: &Path) -> Result<ParsedSession, Failure> {
    let text = read_text(root, id, path, "session file")?;
    let at = |span: Range<usize>, message: String, help: &str| {
        SessionError::at(id, path, &text, span, message, help)
    };

    let first = text.trim_start().as_bytes().first().copied();
    if first == Some(b'[') {
        return Err(at(
            span::point(&text, text.len() - text.trim_start().len()),
            "a session file holds one JSON object, not an array".to_owned(),
            "SWE-bench predictions go in a .jsonl file, one object per line; \
             assay's own schema is one object per .json file (docs/sessions.md)",
        ));
    }
    let file: SessionFile = serde_json::from_str(&text)
        .map_err(|e| SessionError::from_json(id, path, &text, 0, &text, &e))?;
    let spans = match span::object_spans(&text) {
        Some(spans) if first == Some(b'{') => spans,
        _ => {
            return Err(at(
                0..0,
                "a session file holds one JSON object".to_owned(),
                "write the session as {\"task\": …, \"agent\": …, \"model\": …, \"patch\": …} (docs/sessions.md)",
            ));
        }
    };

    let task = required(
        &spans,
        file.task,
        "task",
        "the instance_id or task digest this session attempted",
    )
    .map_err(|(span, message, help)| at(span, message, &help))?;
    let agent = required(&spans, file.agent, "agent", "the label reports group by")
        .map_err(|(span, message, help)| at(span, message, &help))?;
    let model = required(
        &spans,
        file.model,
        "model",
        "the model label reports group by",
    )
    .map_err(|(span, message, help)| at(span, message, &help))?;
    if let Some(track) = &file.track
        && !TRACKS.contains(&track.as_str())
    {
        return Err(at(
            value_span(&spans, "track"),
            format!("unknown track {track:?}"),
            "use \"basic\" (statement only) or \"spec\" (statement + interface spec), or leave \"track\" out",
        ));
    }

    let patch = match (file.patch, file.patch_file) {
        (Some(_), Some(_)) => {
            return Err(at(
                value_span(&spans, "patch_file"),
                "both \"patch\" and \"patch_file\" are given".to_owned(),
                "keep one: \"patch\" holds the diff inline, \"patch_file\" names a file holding it",
            ));
        }
        (None, None) => {
            return Err(at(
                spans.object.clone(),
                "the session has no patch".to_owned(),
                "add \"patch\" (the diff inline; \"\" for the empty patch) or \"patch_file\" (a file relative to this one)",
            ));
        }
        (Some(inline), None) => inline.into_bytes(),
        (None, Some(name)) => {
            if let Some(why) = outside(path, &name) {
                return Err(at(
                    value_span(&spans, "patch_file"),
                    format!("patch file refused: {why}"),
                    "keep the diff next to the session file (or below it) and name it by a relative path",
                ));
            }
            let resolved = beside(path, &name);
            if name.is_empty() || !resolved.is_file() {
                return Err(at(
                    value_span(&spans, "patch_file"),
                    format!("patch file not found: {}", resolved.display()),
                    "write the diff to that path, or fix \"patch_file\" (it is relative to this session file)",
                ));
            }
            super::read::read_beneath(root, &resolved).map_err(|why| {
                at(
                    value_span(&spans, "patch_file"),
                    format!("patch file refused: {why}"),
                    "keep the diff as a regular file beneath the sessions directory, reached through no symbolic link",
                )
            })?
        }
    };

    let mut transcript_bytes = None;
    let transcript_facts = match &file.transcript {
        None => RunFacts::default(),
        Some(name) => {
            if let Some(why) = outside(path, name) {
                return Err(at(
                    value_span(&spans, "transcript"),
                    format!("transcript refused: {why}"),
                    "keep the transcript next to the session file (or below it) and name it by a relative path",
                ));
            }
            let resolved = beside(path, name);
            if name.is_empty() || !resolved.is_file() {
                return Err(at(
                    value_span(&spans, "transcript"),
                    format!("transcript not found: {}", resolved.display()),
                    "save the agent's `--output-format stream-json` output at that path, or fix \"transcript\" (it is relative to this session file)",
                ));
            }
            let transcript = read_text(root, id, &resolved, "transcript")?;
            let facts = if mini::is_trajectory(&transcript) {
                mini::parse_trajectory(id, &resolved, &transcript)?
            } else {
                claude::parse_transcript(id, &resolved, &transcript)?
            };
            transcript_bytes = Some(transcript.into_bytes());
            facts
        }
    };
    let facts = file.run.unwrap_or_default().over(transcript_facts);

    Ok(ParsedSession {
        session: Session {
            id: id.to_owned(),
            task,
            track: file.track,
            agent,
            model,
            patch,
            facts,
            transcript: transcript_bytes,
        },
        file: path.to_path_buf(),
    })
}

/// A required, non-empty label, or (span, message, help) for its error.
fn required(
    spans: &ObjectSpans,
    value: Option<String>,
    key: &str,
    what: &str,
) -> Result<String, (Range<usize>, String, String)> {
    match value {
        Some(v) if !v.trim().is_empty() => Ok(v),
        Some(_) => Err((
            value_span(spans, key),
            format!("\"{key}\" is empty"),
            format!("give \"{key}\" a value: {what}"),
        )),
        // Absent: the whole object; `null`: the null.
        None => Err((
            value_span(spans, key),
            format!("the session has no \"{key}\""),
            format!("add \"{key}\": {what}"),
        )),
    }
}

/// The span of `key`'s value, or of the whole object when it is absent.
fn value_span(spans: &ObjectSpans, key: &str) -> Range<usize> {
    spans.value(key).unwrap_or_else(|| spans.object.clone())
}
