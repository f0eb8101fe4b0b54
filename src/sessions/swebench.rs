//! SWE-bench predictions, in the three forms the harness reads: `*.jsonl`
//! (one object a line), and `*.json` holding a list of them or a dict keyed
//! by instance id (SWE-agent's). Each prediction has `instance_id` and
//! `model_patch`; `model_name_or_path` is optional, as in the harness
//! (absent: `"None"`, the label the harness files it under); other keys are
//! ignored, as the harness ignores them, except `agent` (the agent label,
//! when it differs from the model) and `track` (`basic` or `spec`). Each
//! prediction is its own session (`<file>#<line>`, `<file>#<n>` for the n-th
//! of a list, `<file>#<instance id>` for a dict) and fails alone.

use std::ops::Range;
use std::path::Path;

use serde_json::Value;

use super::RunFacts;
use super::Session;
use super::read::{Failure, ParsedSession, SessionError, read_text};
use super::span;

/// Every non-blank line of `path` as (1-based line number, session or error).
pub(super) fn load(
    root: &Path,
    id: &str,
    path: &Path,
) -> Vec<(usize, Result<ParsedSession, Failure>)> {
    let text = match read_text(root, id, path, "predictions file") {
        Ok(text) => text,
        Err(e) => return vec![(0, Err(e))],
    };
    let mut out = Vec::new();
    let mut offset = 0;
    for (n, raw) in text.split('\n').enumerate() {
        let line = raw.trim_end_matches('\r');
        if !line.trim().is_empty() {
            let line_id = format!("{id}#{}", n + 1);
            out.push((n + 1, load_line(&line_id, path, &text, offset, line, None)));
        }
        offset += raw.len() + 1;
    }
    out
}

/// The predictions of a `*.json` file, when it holds them: a list, or an
/// object whose every value is a prediction object (has `model_patch` or
/// `instance_id`). None: it is an assay session file (or not JSON; the
/// session reader says why).
pub(super) fn load_json(
    root: &Path,
    id: &str,
    path: &Path,
) -> Option<Vec<(usize, Result<ParsedSession, Failure>)>> {
    let text = String::from_utf8(super::read::read_beneath(root, path).ok()?).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    let elements: Vec<(String, Option<String>, Range<usize>)> = match &value {
        Value::Array(_) => span::array_spans(&text)?
            .into_iter()
            .enumerate()
            .map(|(n, span)| (format!("{id}#{}", n + 1), None, span))
            .collect(),
        Value::Object(map)
            if !map.is_empty()
                && map.values().all(|v| {
                    v.as_object().is_some_and(|o| {
                        o.contains_key("model_patch") || o.contains_key("instance_id")
                    })
                }) =>
        {
            span::object_spans(&text)?
                .members
                .into_iter()
                .map(|(key, span)| (format!("{id}#{key}"), Some(key), span))
                .collect()
        }
        _ => return None,
    };
    Some(
        elements
            .into_iter()
            .enumerate()
            .map(|(n, (element_id, key, span))| {
                let element = &text[span.clone()];
                let session = load_line(
                    &element_id,
                    path,
                    &text,
                    span.start,
                    element,
                    key.as_deref(),
                );
                (n + 1, session)
            })
            .collect(),
    )
}

/// One prediction object (`line`, at byte `start` of `text`); `key` is its
/// key in a dict of predictions.
fn load_line(
    id: &str,
    path: &Path,
    text: &str,
    start: usize,
    line: &str,
    key: Option<&str>,
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

    let task = match (string("instance_id")?, key) {
        (Some(task), Some(key)) if task != key => {
            return Err(at(
                spans.value("instance_id").unwrap_or(0..line.len()),
                format!("\"instance_id\" is `{task}`, but the prediction is filed under `{key}`"),
                "the harness grades the \"instance_id\": make the key and the id agree",
            ));
        }
        (Some(task), _) if !task.trim().is_empty() => task,
        (None, Some(key)) => key.to_owned(),
        _ => required("instance_id", "the task this prediction attempted")?,
    };
    // Optional, as in the harness, which files such a prediction under "None".
    let model = match string("model_name_or_path")? {
        Some(m) if !m.trim().is_empty() => m,
        _ => "None".to_owned(),
    };
    let track = match string("track")? {
        None => None,
        Some(t) if t == "basic" || t == "spec" => Some(t),
        Some(t) => {
            return Err(at(
                spans.value("track").unwrap_or(0..line.len()),
                format!("unknown track `{t}`"),
                "\"track\" is \"basic\" (the statement only) or \"spec\" (with the interface)",
            ));
        }
    };
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
        session: Session {
            id: id.to_owned(),
            task,
            track,
            agent,
            model,
            patch: patch.into_bytes(),
            facts: RunFacts::default(),
            transcript: None,
        },
        file: path.to_path_buf(),
    })
}
