//! Judge errors, by whose problem they are.
//!
//! The line that matters: an [`JudgeError::Infrastructure`] error means the
//! judge could not be reached or kept failing (connect errors, timeouts, 429,
//! 5xx, after every attempt); a [`JudgeError::Answer`] error means it answered,
//! but never usably. Neither is ever a score. Configuration errors (no key,
//! refused key, a request the server rejects) are not retried.
//!
//! No error holds the API key. Server bodies are quoted only after
//! [`redact`] has replaced every occurrence of the key.

use serde::{Deserialize, Serialize};

use crate::prompt::InputError;
use crate::reading::{AnswerProblem, Usage};
use crate::settings::SettingsError;

/// At most this many characters of a server's error body are kept.
const BODY_KEPT: usize = 600;

/// Why a request failed in a way worth retrying.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "failure", content = "detail")]
pub enum InfraFailure {
    #[error("could not connect: {0}")]
    Connect(String),
    #[error("timed out")]
    Timeout,
    #[error("transport error: {0}")]
    Transport(String),
    #[error("HTTP {status} (rate limited): {body}")]
    RateLimited { status: u16, body: String },
    #[error("HTTP {status} (server error): {body}")]
    Server { status: u16, body: String },
}

/// The audience of an error: who has to act.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The settings, the key or the request are wrong: fix the config.
    Configuration,
    /// The caller passed a review that does not fit its labels.
    Input,
    /// The server could not be reached or kept failing: retry later.
    Infrastructure,
    /// The judge answered, but never usably.
    Answer,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("judge `{judge}`: could not set up the HTTP client: {detail}")]
    Setup { judge: String, detail: String },
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("judge `{judge}`: the variable {var} that should hold the API key {problem}")]
    MissingKey {
        judge: String,
        var: String,
        problem: &'static str,
    },
    #[error("judge `{judge}`: HTTP {status}, the server refused the credentials: {}; it said: {body}", auth_hint(.var))]
    Auth {
        judge: String,
        status: u16,
        var: Option<String>,
        body: String,
    },
    #[error(
        "judge `{judge}`: HTTP {status}, the server rejected the request (not retried): {body}"
    )]
    Rejected {
        judge: String,
        status: u16,
        body: String,
    },
    #[error("judge `{judge}`: infrastructure failure after {attempts} attempt(s): {last}")]
    Infrastructure {
        judge: String,
        attempts: u32,
        last: InfraFailure,
        usage: Usage,
    },
    #[error("judge `{judge}`: no usable answer after {attempts} attempt(s): {last}")]
    Answer {
        judge: String,
        attempts: u32,
        last: AnswerProblem,
        usage: Usage,
    },
}

fn auth_hint(var: &Option<String>) -> String {
    match var {
        Some(var) => format!("check the variable named {var}"),
        None => "it wants an API key: name its variable in `api_key_env`".to_owned(),
    }
}

impl JudgeError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            JudgeError::Settings(_)
            | JudgeError::Setup { .. }
            | JudgeError::MissingKey { .. }
            | JudgeError::Auth { .. }
            | JudgeError::Rejected { .. } => ErrorKind::Configuration,
            JudgeError::Input(_) => ErrorKind::Input,
            JudgeError::Infrastructure { .. } => ErrorKind::Infrastructure,
            JudgeError::Answer { .. } => ErrorKind::Answer,
        }
    }

    /// Tokens spent before the review failed (answers that were rejected).
    pub fn usage(&self) -> Usage {
        match self {
            JudgeError::Infrastructure { usage, .. } | JudgeError::Answer { usage, .. } => *usage,
            _ => Usage::default(),
        }
    }

    /// Requests sent before the review failed.
    pub fn attempts(&self) -> u32 {
        match self {
            JudgeError::Infrastructure { attempts, .. } | JudgeError::Answer { attempts, .. } => {
                *attempts
            }
            JudgeError::Auth { .. } | JudgeError::Rejected { .. } => 1,
            _ => 0,
        }
    }
}

/// `text` with every occurrence of `secret` replaced and cut to a few hundred
/// characters (an error body can be a whole HTML page).
pub(crate) fn redact(text: &str, secret: Option<&str>) -> String {
    let mut clean = match secret {
        Some(s) if !s.is_empty() => text.replace(s, "[redacted]"),
        _ => text.to_owned(),
    };
    if let Some((cut, _)) = clean.char_indices().nth(BODY_KEPT) {
        clean.truncate(cut);
        clean.push('…');
    }
    clean.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_removes_the_secret_even_when_it_is_cut() {
        assert_eq!(
            redact("bad key sk-123 given", Some("sk-123")),
            "bad key [redacted] given"
        );
        let long = format!("{}sk-123", "x".repeat(BODY_KEPT - 2));
        assert!(!redact(&long, Some("sk-123")).contains("sk-"));
        assert_eq!(redact(" plain ", None), "plain");
    }
}
