//! A report that is one JSON document (jest, vitest, mocha): the whole
//! input, or the one line of it that holds the document when the runner
//! shared its stream with the tests' own output.

use serde::de::DeserializeOwned;

use crate::ParseError;

/// Reads the document whose top level has the field `key`. Errors: no such
/// document, two of them, or one whose fields have the wrong shape.
pub(crate) fn read<T: DeserializeOwned>(input: &[u8], key: &str) -> Result<T, ParseError> {
    let text = std::str::from_utf8(input).map_err(|e| ParseError::NotUtf8 {
        offset: e.valid_up_to() as u64,
    })?;
    let owned = |v: &serde_json::Value| v.get(key).is_some();
    let schema = |line: usize, e: serde_json::Error| ParseError::Schema {
        line,
        message: e.to_string(),
    };
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        if !owned(&v) {
            return Err(ParseError::Json {
                message: format!("the document has no `{key}`"),
            });
        }
        return serde_json::from_value(v).map_err(|e| schema(1, e));
    }
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if !owned(&v) {
            continue;
        }
        if found.is_some() {
            return Err(ParseError::Json {
                message: format!("two documents with `{key}` (the second on line {})", i + 1),
            });
        }
        found = Some((i + 1, v));
    }
    let (line, v) = found.ok_or_else(|| ParseError::Json {
        message: format!("no JSON document with `{key}`"),
    })?;
    serde_json::from_value(v).map_err(|e| schema(line, e))
}
