//! Secret redaction of evidence before it is stored: built-in patterns for
//! common API-key shapes, patterns from the pipeline, and the values of named
//! environment variables. The *names* and patterns enter run keys; the values
//! never enter a key, a record or a log.

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

    /// Returns the redacted bytes and how many secrets were replaced.
    pub(crate) fn redact(&self, input: &[u8]) -> (Vec<u8>, u64) {
        let mut out = input.to_vec();
        let mut count = 0u64;
        for lit in &self.literals {
            let mut next = Vec::with_capacity(out.len());
            let mut i = 0;
            while i < out.len() {
                if out[i..].starts_with(lit) {
                    next.extend_from_slice(REDACTED);
                    i += lit.len();
                    count += 1;
                } else {
                    next.push(out[i]);
                    i += 1;
                }
            }
            out = next;
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
    fn text_without_secrets_is_untouched() {
        let r = Redactor::new(&RedactConfig::default());
        let (out, n) = r.redact(b"test_divide ... ok\nRan 3 tests");
        assert_eq!(n, 0);
        assert_eq!(out, b"test_divide ... ok\nRan 3 tests");
    }
}
