//! Secret redaction of evidence before it is stored: built-in patterns for
//! common API-key shapes, patterns from the pipeline, and the values of named
//! environment variables. The *names* and patterns enter run keys; the values
//! never enter a key, a record or a log.
//!
//! Patches are redacted by value only ([`Redactor::values`]): a pattern
//! would rewrite code that merely looks like a key (a test fixture's
//! `sk-…`), while a value of `key_env` or `[redact] env` in a patch is a
//! secret that reached the agent, never an answer.

use regex::bytes::Regex;
use serde::Serialize;

const REDACTED: &[u8] = b"[REDACTED]";

/// Anthropic, OpenAI, AWS, GitHub, Slack, Google keys and PEM private keys.
const BUILT_IN: &[&str] = &[
    r"sk-ant-[A-Za-z0-9_\-]{20,}",
    r"sk-(?:proj-)?[A-Za-z0-9_\-]{20,}",
    r"AKIA[0-9A-Z]{16}",
    r"gh[pousr]_[A-Za-z0-9]{36,}",
    r"github_pat_[A-Za-z0-9_]{22,}",
    r"xox[baprs]-[A-Za-z0-9\-]{10,}",
    r"AIza[0-9A-Za-z_\-]{35}",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
];

/// What the pipeline asks to redact (part of run keys).
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct RedactConfig {
    pub(crate) patterns: Vec<String>,
    /// Names of environment variables whose values are secrets.
    pub(crate) env: Vec<String>,
}

pub(crate) struct Redactor {
    patterns: Vec<Regex>,
    literals: Vec<Vec<u8>>,
}

impl Redactor {
    /// Invalid configured patterns are rejected when the pipeline is loaded,
    /// so here they are skipped rather than failing a run.
    pub(crate) fn new(config: &RedactConfig) -> Redactor {
        let patterns = BUILT_IN
            .iter()
            .map(|s| s.to_string())
            .chain(config.patterns.iter().cloned())
            .filter_map(|p| Regex::new(&p).ok())
            .collect();
        let literals = config
            .env
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .filter(|v| v.len() >= 4)
            .map(String::into_bytes)
            .collect();
        Redactor { patterns, literals }
    }

    /// Only the values of the variables `config.env` names (patterns
    /// left out): what patches are redacted with.
    pub(crate) fn values(config: &RedactConfig) -> Redactor {
        Redactor {
            patterns: Vec::new(),
            ..Redactor::new(&RedactConfig {
                patterns: Vec::new(),
                env: config.env.clone(),
            })
        }
    }

    /// Returns the redacted bytes and how many secrets were replaced.
    pub(crate) fn redact(&self, input: &[u8]) -> (Vec<u8>, u64) {
        let mut out = input.to_vec();
        let mut count = 0u64;
        for lit in &self.literals {
            let n;
            (out, n) = replace_value(&out, lit);
            count += n;
        }
        for re in &self.patterns {
            let n = re.find_iter(&out).count() as u64;
            if n > 0 {
                count += n;
                out = re.replace_all(&out, REDACTED).into_owned();
            }
        }
        (out, count)
    }
}

/// `input` with every occurrence of `value` replaced by `[REDACTED]`, and
/// how many there were.
pub(crate) fn replace_value(input: &[u8], value: &[u8]) -> (Vec<u8>, u64) {
    let mut out = Vec::with_capacity(input.len());
    let (mut i, mut count) = (0, 0);
    while i < input.len() {
        if !value.is_empty() && input[i..].starts_with(value) {
            out.extend_from_slice(REDACTED);
            i += value.len();
            count += 1;
        } else {
            out.push(input[i]);
            i += 1;
        }
    }
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_shapes_and_configured_values_are_replaced_and_counted() {
        // SAFETY-free: tests in this module are the only users of this variable.
        let cfg = RedactConfig {
            patterns: vec![r"corp-[0-9]{6}".into()],
            env: vec!["PATH".into()],
        };
        let r = Redactor::new(&cfg);
        let path = std::env::var("PATH").unwrap();
        let text = format!(
            "key sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWX and AKIAABCDEFGHIJKLMNOP id corp-123456 path {path} ok"
        );
        let (out, n) = r.redact(text.as_bytes());
        let out = String::from_utf8(out).unwrap();
        assert_eq!(n, 4, "{out}");
        assert!(!out.contains("sk-ant-api03"));
        assert!(!out.contains("AKIAABCDEFGHIJKLMNOP"));
        assert!(!out.contains("corp-123456"));
        assert!(!out.contains(&path));
        assert!(out.ends_with(" ok"));
    }

    #[test]
    fn by_values_only_a_value_is_replaced_never_a_key_shaped_string() {
        let r = Redactor::values(&RedactConfig {
            patterns: vec![r"corp-[0-9]{6}".into()],
            env: vec!["PATH".into()],
        });
        let path = std::env::var("PATH").unwrap();
        let fixture = "+KEY = \"sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWX\" corp-123456\n";
        let (out, n) = r.redact(format!("{fixture}+{path}\n").as_bytes());
        assert_eq!(n, 1);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{fixture}+[REDACTED]\n")
        );
    }

    #[test]
    fn text_without_secrets_is_untouched() {
        let r = Redactor::new(&RedactConfig::default());
        let (out, n) = r.redact(b"test_divide ... ok\nRan 3 tests");
        assert_eq!(n, 0);
        assert_eq!(out, b"test_divide ... ok\nRan 3 tests");
    }
}
