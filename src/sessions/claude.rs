//! Claude Code `--output-format stream-json` transcripts: one JSON event per
//! line (`system` init, `assistant`/`user` messages, …) closed by a `result`
//! event that carries the process's totals. A resumed run holds one result
//! event per process: their counts are summed, and the last one says how the
//! run ended. A transcript without one is a run that did not finish (or a cut
//! file), and its facts cannot be trusted, so that is an error rather than
//! empty facts.

use std::collections::BTreeMap;

use serde_json::Value;

use super::RunFacts;
use super::read::{Failure, SessionError};
use super::span;
use std::path::Path;

/// The run facts of the transcript `path` whose text is `text`; errors point
/// into the transcript and carry the session's `id`.
pub(super) fn parse_transcript(id: &str, path: &Path, text: &str) -> Result<RunFacts, Failure> {
    // (1-based line number, byte offset, line) of every non-blank line.
    let mut lines = Vec::new();
    let mut offset = 0;
    for (n, line) in text.split('\n').enumerate() {
        let trimmed = line.trim_end_matches('\r');
        if !trimmed.trim().is_empty() {
            lines.push((n + 1, offset, trimmed));
        }
        offset += line.len() + 1;
    }

    let mut results = Vec::new();
    let mut models: Vec<String> = Vec::new();
    let mut note_model = |m: Option<&str>| {
        if let Some(m) = m.filter(|m| !m.is_empty())
            && !models.iter().any(|known| known == m)
        {
            models.push(m.to_owned());
        }
    };
    let mut cut = false;
    for (i, &(_, start, line)) in lines.iter().enumerate() {
        match serde_json::from_str::<Value>(line) {
            Ok(event) => match event.get("type").and_then(Value::as_str) {
                Some("result") => {
                    if let Some(usage) = event.get("modelUsage").and_then(Value::as_object) {
                        usage.keys().for_each(|m| note_model(Some(m)));
                    }
                    results.push((start, line, event));
                }
                Some("system") => note_model(event.get("model").and_then(Value::as_str)),
                Some("assistant") => note_model(
                    event
                        .pointer("/message/model")
                        .and_then(Value::as_str)
                        .filter(|m| *m != "<synthetic>"),
                ),
                _ => {}
            },
            // A run killed mid-write leaves a partial last line: that is the
            // missing-result error below, not a syntax error.
            Err(_) if i + 1 == lines.len() && results.is_empty() => cut = true,
            Err(e) => return Err(SessionError::from_json(id, path, text, start, line, &e)),
        }
    }

    if results.is_empty() {
        let span = lines
            .last()
            .map_or(0..0, |&(_, start, line)| start..start + line.len());
        let message = if cut {
            "transcript has no result event: the run did not finish or the file is cut (its last line is not complete JSON)"
        } else {
            "transcript has no result event: the run did not finish or the file is cut"
        };
        return Err(SessionError::at(
            id,
            path,
            text,
            span,
            message,
            "rerun the agent to the end with `--output-format stream-json --verbose`, \
             or drop \"transcript\" and give the facts in the session's \"run\" object",
        ));
    }

    // A resumed run (`claude --resume`) appends a process, and a result
    // event, per resume: each counts its own process, so they add up; how
    // the run ended is what the last one says.
    let mut facts = RunFacts::default();
    for (start, line, event) in &results {
        let one = result_facts(id, path, text, *start, line, event)?;
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        facts.turns = add(facts.turns, one.turns);
        facts.duration_ms = add(facts.duration_ms, one.duration_ms);
        facts.permission_denials = add(facts.permission_denials, one.permission_denials);
        for (kind, n) in one.tokens {
            *facts.tokens.entry(kind).or_default() += n;
        }
        for (model, kinds) in one.by_model {
            let mine = facts.by_model.entry(model).or_default();
            for (kind, n) in kinds {
                *mine.entry(kind).or_default() += n;
            }
        }
        facts.reported_cost_usd = match (facts.reported_cost_usd, one.reported_cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        facts.ended = one.ended.or(facts.ended);
        facts.claimed_error = one.claimed_error.or(facts.claimed_error);
    }
    facts.models = models;
    Ok(facts)
}

/// The facts of one `result` event (the line at byte `start` of `text`).
fn result_facts(
    id: &str,
    path: &Path,
    text: &str,
    start: usize,
    line: &str,
    event: &Value,
) -> Result<RunFacts, Failure> {
    let spans = span::object_spans(line).unwrap_or_default();
    let bad = |key: &str, expected: &str| {
        let at = spans.value(key).unwrap_or(0..line.len());
        SessionError::at(
            id,
            path,
            text,
            start + at.start..start + at.end,
            format!("the result event's \"{key}\" is not {expected}"),
            "the transcript is not Claude Code stream-json as assay reads it (docs/sessions.md); \
             give the facts in the session's \"run\" object instead",
        )
    };

    let field = |key: &str| event.get(key).filter(|v| !v.is_null());
    let count = |key: &str| match field(key) {
        None => Ok(None),
        Some(v) => as_count(v)
            .map(Some)
            .ok_or_else(|| bad(key, "a non-negative number")),
    };

    let ended = match field("subtype") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("subtype", "a string")),
    };
    let is_error = match field("is_error") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(bad("is_error", "true or false")),
    };
    let permission_denials = match field("permission_denials") {
        None => None,
        Some(Value::Array(denials)) => Some(denials.len() as u64),
        Some(v) => Some(as_count(v).ok_or_else(|| bad("permission_denials", "a list"))?),
    };
    let tokens = match field("usage") {
        None => BTreeMap::new(),
        Some(Value::Object(usage)) => usage
            .iter()
            .filter_map(|(kind, n)| Some((token_kind(kind), n.as_u64()?)))
            .collect(),
        Some(_) => return Err(bad("usage", "an object")),
    };
    let by_model = match field("modelUsage") {
        None => BTreeMap::new(),
        Some(Value::Object(models)) => models
            .iter()
            .map(|(model, usage)| {
                let kinds: BTreeMap<String, u64> = usage
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, n)| Some((model_usage_kind(k)?.to_owned(), n.as_u64()?)))
                    .collect();
                (model.clone(), kinds)
            })
            .collect(),
        Some(_) => return Err(bad("modelUsage", "an object")),
    };
    let reported_cost_usd = match field("total_cost_usd") {
        None => None,
        Some(v) => Some(
            v.as_f64()
                .filter(|c| *c >= 0.0)
                .ok_or_else(|| bad("total_cost_usd", "a non-negative number"))?,
        ),
    };

    Ok(RunFacts {
        turns: count("num_turns")?,
        tokens,
        ended,
        claimed_error: is_error,
        permission_denials,
        duration_ms: count("duration_ms")?,
        by_model,
        reported_cost_usd,
        models: Vec::new(),
        ..RunFacts::default()
    })
}

/// `modelUsage`'s token counts, by assay's kind names; its other numbers
/// (`contextWindow`, `costUSD`) are not tokens.
fn model_usage_kind(field: &str) -> Option<&'static str> {
    Some(match field {
        "inputTokens" => "input",
        "outputTokens" => "output",
        "cacheReadInputTokens" => "cache_read",
        "cacheCreationInputTokens" => "cache_creation",
        "webSearchRequests" => "web_search_requests",
        _ => return None,
    })
}

/// A count; a whole float (`5000.0`) is accepted, other numbers are not.
fn as_count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
            .map(|f| f as u64)
    })
}

/// The Anthropic usage field names, shortened; unknown numeric fields keep
/// their name (nested objects such as `server_tool_use` are left out).
fn token_kind(field: &str) -> String {
    match field {
        "input_tokens" => "input",
        "output_tokens" => "output",
        "cache_read_input_tokens" => "cache_read",
        "cache_creation_input_tokens" => "cache_creation",
        other => other,
    }
    .to_owned()
}
