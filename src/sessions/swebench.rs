//! SWE-bench predictions (`*.jsonl`): one object per line with `instance_id`,
//! `model_name_or_path` and `model_patch`; other keys are ignored, as the
//! SWE-bench harness ignores them, except `agent`, which names the agent when
//! it differs from the model. Each line is its own session (`<file>#<line>`)
//! and fails alone.

use std::ops::Range;
use std::path::Path;

use serde_json::Value;

use super::span;
use super::{Failure, ParsedSession, SessionError, read_text};
use crate::stages::RunFacts;

/// Every non-blank line of `path` as (1-based line number, session or error).
pub(super) fn load(id: &str, path: &Path) -> Vec<(usize, Result<ParsedSession, Failure>)> {
    let text = match read_text(id, path, "predictions file") {
        Ok(text) => text,
        Err(e) => return vec![(0, Err(e))],
    };
    let mut out = Vec::new();
    let mut offset = 0;
    for (n, raw) in text.split('\n').enumerate() {
        let line = raw.trim_end_matches('\r');
        if !line.trim().is_empty() {
            let line_id = format!("{id}#{}", n + 1);
            out.push((n + 1, load_line(&line_id, path, &text, offset, line)));
        }
        offset += raw.len() + 1;
    }
    out
}

fn load_line(
    id: &str,
    path: &Path,
    text: &str,
    start: usize,
    line: &str,
) -> Result<ParsedSession, Failure> {
    let at = |span: Range<usize>, message: String, help: &str| {
        SessionError::at(
            id,
            path,
            text,
            start + span.start..start + span.end,
            message,
            help,
        )
    };
    let value: Value = serde_json::from_str(line)
        .map_err(|e| SessionError::from_json(id, path, text, start, line, &e))?;
    let (Value::Object(object), Some(spans)) = (&value, span::object_spans(line)) else {
        return Err(at(
            0..line.len(),
            "a predictions line holds one JSON object".to_owned(),
            "write one {\"instance_id\": …, \"model_name_or_path\": …, \"model_patch\": …} object per line",
        ));
    };

    // The value of `key` as a string: Ok(None) when absent or null.
    let string = |key: &str| match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(at(
            spans.value(key).unwrap_or(0..line.len()),
            format!("\"{key}\" is not a string"),
            "SWE-bench predictions hold strings here",
        )),
    };
    let required = |key: &str, what: &str| match string(key)? {
        Some(s) if !s.trim().is_empty() => Ok(s),
        _ => Err(at(
            spans.value(key).unwrap_or(0..line.len()),
            format!("the prediction has no \"{key}\""),
            &format!("add \"{key}\": {what}"),
        )),
    };

    let task = required("instance_id", "the task this prediction attempted")?;
    let model = required("model_name_or_path", "the model label reports group by")?;
    // A null `model_patch` is how SWE-bench writes "no patch": the empty patch.
    if !object.contains_key("model_patch") {
        return Err(at(
            0..line.len(),
            "the prediction has no \"model_patch\"".to_owned(),
            "add \"model_patch\": the agent's diff (\"\" for the empty patch)",
        ));
    }
    let patch = string("model_patch")?.unwrap_or_default();
    let agent = match string("agent")? {
        Some(agent) if !agent.trim().is_empty() => agent,
        _ => model.clone(),
    };

    Ok(ParsedSession {
        id: id.to_owned(),
        task,
        track: None,
        agent,
        model,
        patch: patch.into_bytes(),
        facts: RunFacts::default(),
        file: path.to_path_buf(),
    })
}
