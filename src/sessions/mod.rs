//! Agent sessions in: `sessions/**/*.json` (assay's schema, docs/sessions.md),
//! SWE-bench prediction files `sessions/**/*.jsonl`, and Claude Code
//! `--output-format stream-json` transcripts named by a session file.
//!
//! Reading is total: every file under the directory ends up either as sessions
//! or as a [`SessionError`] pointing into the file that is wrong, so one bad
//! file never hides the others. The order is fixed (sorted by id; the lines
//! of a JSONL file in line order) so the DAG built from it is too.
//!
//! A `.jsonl` file is read as SWE-bench predictions unless it is a transcript:
//! named by some session file's `"transcript"`, or ending in `.stream.jsonl`.
//! A transcript may also be a mini-swe-agent trajectory (one JSON object,
//! told apart by its content; `*.traj.json` is never read as a session).

mod claude;
mod file;
pub(crate) mod harbor;
pub(crate) mod mini;
mod read;
pub(crate) mod span;
mod swebench;
pub(crate) mod turns;

use std::collections::BTreeSet;

use std::path::{Path, PathBuf};

pub(crate) use crate::model::session::RunFacts;
pub(crate) use crate::model::session::Session;
use read::Failure;
pub(crate) use read::{ParsedSession, SessionError};

/// One file to read, with the id its sessions take.
struct Found {
    id: String,
    path: PathBuf,
}

/// Every session under `dir`, sorted by id; bad files come back as errors, never dropped.
/// The run facts of an agent's transcript `text` (at `path`) in `format`:
/// an attempt reads its agent's transcript as a session file's is read.
pub(crate) fn transcript_facts(
    format: crate::pipeline::TranscriptFormat,
    path: &Path,
    text: &str,
) -> Result<RunFacts, String> {
    use crate::pipeline::TranscriptFormat as F;
    let facts = match format {
        F::None => return Ok(RunFacts::default()),
        F::MiniSweAgent => mini::parse_trajectory("attempt", path, text),
        F::ClaudeStreamJson => claude::parse_transcript("attempt", path, text),
    };
    facts.map_err(|e| e.message)
}

#[cfg(test)]
pub(crate) fn load_dir(dir: &Path) -> Vec<Result<ParsedSession, SessionError>> {
    load_all(dir).0
}

/// [`load_dir`], and the Harbor jobs found under `dir` with their plans
/// (`harbor`), for the release's trial accounting.
pub(crate) fn load_all(
    dir: &Path,
) -> (
    Vec<Result<ParsedSession, SessionError>>,
    Vec<harbor::JobTrials>,
) {
    let mut found = Vec::new();
    let mut out: Vec<(String, usize, Result<ParsedSession, Failure>)> = Vec::new();
    let mut jobs = Vec::new();
    if let Err(e) = std::fs::read_dir(dir) {
        let e = *SessionError::plain(
            "",
            format!("cannot read the sessions directory {}: {e}", dir.display()),
            "create the directory, or point assay at the one that holds the session files",
        );
        return (vec![Err(e)], jobs);
    }
    walk(dir, "", &mut found, &mut out, &mut jobs);
    found.sort_by(|a, b| a.id.cmp(&b.id));

    // A transcript named by a session is not a predictions file.
    let transcripts: BTreeSet<PathBuf> = found
        .iter()
        .filter(|f| has_ext(&f.path, "json"))
        .filter_map(|f| file::named_transcript(dir, &f.path))
        .map(|p| normalize(&p))
        .collect();

    for f in &found {
        // mini-swe-agent's trajectories (`-o NAME.traj.json`) are not
        // sessions, named by one or not.
        if transcripts.contains(&normalize(&f.path)) || f.id.ends_with(".traj.json") {
            continue;
        }
        if has_ext(&f.path, "json") {
            match swebench::load_json(dir, &f.id, &f.path) {
                Some(predictions) => {
                    for (n, session) in predictions {
                        out.push((f.id.clone(), n, session));
                    }
                }
                None => out.push((f.id.clone(), 0, file::load(dir, &f.id, &f.path))),
            }
        } else if has_ext(&f.path, "jsonl") && !f.id.ends_with(".stream.jsonl") {
            for (line, session) in swebench::load(dir, &f.id, &f.path) {
                out.push((f.id.clone(), line, session));
            }
        }
    }
    out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let mut sessions = Vec::with_capacity(out.len());
    for (_, _, session) in out {
        sessions.push(session.map_err(|e| *e));
    }
    (sessions, jobs)
}

/// Collects the files under `dir` (skipping hidden entries; symlinked
/// directories are not followed, so a link cycle cannot loop, and are
/// listed as not read).
fn walk(
    dir: &Path,
    prefix: &str,
    found: &mut Vec<Found>,
    out: &mut Vec<(String, usize, Result<ParsedSession, Failure>)>,
    jobs: &mut Vec<harbor::JobTrials>,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            let id = prefix.trim_end_matches('/').to_owned();
            out.push((
                id.clone(),
                0,
                Err(SessionError::plain(
                    &id,
                    format!("cannot read directory {}: {e}", dir.display()),
                    "check its permissions",
                )),
            ));
            return;
        }
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let raw = entry.file_name();
        let Some(name) = raw.to_str() else {
            // Never dropped silently: listed as not graded, with why.
            let id = format!("{prefix}{}", raw.to_string_lossy());
            out.push((
                id.clone(),
                0,
                Err(SessionError::plain(
                    &id,
                    format!(
                        "the file name {:?} is not UTF-8, so it cannot be a session id",
                        raw
                    ),
                    "rename the file with a UTF-8 name",
                )),
            ));
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let id = format!("{prefix}{name}");
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() && harbor::is_job(&path) {
            jobs.push(harbor::load(&id, &path, out));
        } else if kind.is_dir() {
            walk(&path, &format!("{id}/"), found, out, jobs);
        } else if kind.is_symlink() && path.is_dir() {
            // Never followed: listed as not read, so sessions do not vanish
            // without a word.
            out.push((
                id.clone(),
                0,
                Err(SessionError::plain(
                    &id,
                    format!(
                        "{} is a symbolic link to a directory; not read",
                        path.display()
                    ),
                    "session inputs are read only beneath the sessions directory, never \
                     through a symbolic link: move or copy the directory in",
                )),
            ));
        } else if kind.is_file() || kind.is_symlink() {
            // A symlinked session file is refused by its reader, with its path.
            found.push(Found { id, path });
        }
    }
}

fn has_ext(path: &Path, ext: &str) -> bool {
    path.extension().is_some_and(|e| e == ext)
}

fn normalize(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests;
