//! What every session reader shares: the parsed session, the error that
//! points into a file, and reads bounded to the sessions directory.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::span;
use crate::model::session::Session;

/// One session as read from disk, before it enters the DAG.
#[derive(Clone, Debug)]
pub(crate) struct ParsedSession {
    /// The track is the file's, when it names one.
    pub(crate) session: Session<Vec<u8>, Option<String>>,
    /// The file it came from.
    pub(crate) file: PathBuf,
}

/// A session file that could not be read: a diagnostic pointing into the file.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{message}")]
#[diagnostic(code(assay::session))]
pub(crate) struct SessionError {
    /// The session id this file (or line) would have had.
    pub(crate) id: String,
    pub(crate) message: String,
    #[source_code]
    pub(crate) src: Option<miette::NamedSource<String>>,
    #[label("here")]
    pub(crate) span: Option<miette::SourceSpan>,
    #[help]
    pub(crate) help: Option<String>,
}

/// Boxed inside the module: a `SessionError` is too large to pass around in
/// every `Result`.
pub(super) type Failure = Box<SessionError>;

impl SessionError {
    /// An error with no position (the file could not be read at all).
    pub(super) fn plain(id: &str, message: impl Into<String>, help: impl Into<String>) -> Failure {
        Box::new(SessionError {
            id: id.to_owned(),
            message: message.into(),
            src: None,
            span: None,
            help: Some(help.into()),
        })
    }

    /// An error pointing at `span` of `file`, whose text is `text`.
    pub(super) fn at(
        id: &str,
        file: &Path,
        text: &str,
        span: Range<usize>,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> Failure {
        let (shown, span) = span::excerpt(text, span);
        Box::new(SessionError {
            id: id.to_owned(),
            message: message.into(),
            src: Some(miette::NamedSource::new(file.display().to_string(), shown)),
            span: Some(span.into()),
            help: Some(help.into()),
        })
    }

    /// A serde_json error in the JSON that starts at byte `base` of `text`
    /// (`json` is that JSON: the whole file, or one line of a JSONL file).
    pub(super) fn from_json(
        id: &str,
        file: &Path,
        text: &str,
        base: usize,
        json: &str,
        e: &serde_json::Error,
    ) -> Failure {
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
        let mut offset = span::offset_of(json, e.line(), e.column());
        let mut key_len = None;
        let help = match e.classify() {
            serde_json::error::Category::Eof => {
                "the JSON ends in the middle of a value: the file may be cut; complete or remove it"
            }
            serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
                "this is not valid JSON: fix the syntax here (a missing comma, quote or brace is the usual cause)"
            }
            serde_json::error::Category::Data if message.starts_with("unknown field") => {
                // Point at the key, which serde_json has just read.
                if let Some(name) = message.split('`').nth(1) {
                    let quoted = format!("\"{name}\"");
                    let end = (offset + 1).min(json.len());
                    if let Some(i) = json.get(..end).and_then(|head| head.rfind(&quoted)) {
                        offset = i;
                        key_len = Some(quoted.len());
                    }
                }
                "remove the key or fix its spelling; docs/sessions.md lists the keys each format takes"
            }
            serde_json::error::Category::Data if message.starts_with("duplicate field") => {
                "keep only one of the two"
            }
            serde_json::error::Category::Data => {
                "this key takes another type of value; docs/sessions.md gives each key's type and an example"
            }
        };
        let message = format!("invalid {}: {message}", kind_of(file));
        let span = match key_len {
            Some(len) => offset..offset + len,
            None => span::point(json, offset),
        };
        SessionError::at(
            id,
            file,
            text,
            base + span.start..base + span.end,
            message,
            help,
        )
    }
}

/// How error messages name a file.
pub(super) fn kind_of(file: &Path) -> &'static str {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.ends_with(".jsonl") {
        "JSONL line"
    } else {
        "session file"
    }
}

/// The largest input file read: a session file, patch, transcript or
/// Harbor file (the patch caps apply later, in the session's stage).
pub(super) const MAX_INPUT: u64 = 1 << 30;

/// The bytes of `path`, a file below `root` (the sessions directory, or a
/// Harbor job's), opened beneath it with no symbolic link anywhere on the
/// way: the run reports' opener (`assay_exec::beneath`), so a directory
/// link in the middle of a path cannot pull a file of this machine into
/// the cache and the release. `Err` names the path and why.
pub(super) fn read_beneath(root: &Path, path: &Path) -> Result<Vec<u8>, String> {
    let rel = path.strip_prefix(root).map_err(|_| {
        format!(
            "{} is not below {}; not read",
            path.display(),
            root.display()
        )
    })?;
    assay_exec::beneath::read(root, rel, MAX_INPUT).map_err(|e| format!("{} {e}", path.display()))
}

/// Reads `path` below `root` as UTF-8 text ([`read_beneath`]); either
/// failure is the session's error.
pub(super) fn read_text(root: &Path, id: &str, path: &Path, what: &str) -> Result<String, Failure> {
    let bytes = read_beneath(root, path).map_err(|why| {
        SessionError::plain(
            id,
            format!("cannot read {what}: {why}"),
            "session inputs are read only as regular files beneath the sessions directory, \
             never through a symbolic link: copy the file in",
        )
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
        let span = span::point(&text, at);
        SessionError::at(
            id,
            path,
            &text,
            span,
            format!("{what} is not UTF-8 text"),
            "JSON must be UTF-8: re-save the file as UTF-8 (patches with other bytes go in \"patch_file\")",
        )
    })
}
