//! mini-swe-agent trajectories (`mini … -o traj.json`, format
//! `mini-swe-agent-1.1`, written by mini-swe-agent 2.x and rewritten after
//! every step): one JSON object, `info` (`exit_status`, `model_stats`
//! {`instance_cost`, `api_calls`}, the `config` with the model's name) and
//! the `messages`, each assistant message carrying the API's response (its
//! `usage` and `model`) under `extra.response`. Tokens are not totalled by
//! mini: they are summed here, per model.
//!
//! How the run ended is `info.exit_status`: the agent's own endings
//! (`Submitted`, `LimitsExceeded`, `TimeExceeded`, `RepeatedFormatError`,
//! `FormatError`) or an exception mini stopped on, named by its class:
//! litellm's API errors (`InternalServerError`, `RateLimitError`,
//! `APIConnectionError`, `ServiceUnavailableError`, `Timeout`, …) are a
//! claimed API or infrastructure failure (`claimed_error`): the agent's
//! process wrote the trajectory, so the claim is shown, never believed.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::RunFacts;
use super::read::{Failure, SessionError};

/// The endings that are the agent's doing, whatever the model said.
const AGENT_ENDINGS: &[&str] = &[
    "Submitted",
    "LimitsExceeded",
    "TimeExceeded",
    "RepeatedFormatError",
    "FormatError",
    "ExecutionTimeoutError",
];

/// Whether `text` looks like a mini-swe-agent trajectory (one JSON object
/// with `info` and `messages`) rather than a JSONL transcript.
pub(super) fn is_trajectory(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('{')
        && serde_json::from_str::<Value>(t).is_ok_and(|v| {
            v.get("messages").is_some_and(Value::is_array) && v.get("info").is_some()
        })
}

/// Whether an `exit_status` is an API or infrastructure failure rather than
/// an ending of the agent's: an exception class that is not one of the
/// agent's own endings.
pub(crate) fn infrastructure_ending(status: &str) -> bool {
    !AGENT_ENDINGS.contains(&status)
        && (status.ends_with("Error") || status.ends_with("Exception") || status == "Timeout")
}

/// The run facts of the trajectory `path` whose text is `text`.
pub(super) fn parse_trajectory(id: &str, path: &Path, text: &str) -> Result<RunFacts, Failure> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| SessionError::from_json(id, path, text, 0, text, &e))?;
    let Some(status) = v.pointer("/info/exit_status").and_then(Value::as_str) else {
        return Err(SessionError::at(
            id,
            path,
            text,
            0..text.len().min(1),
            "the trajectory has no info.exit_status: the run did not finish (mini rewrites the file after every step)",
            "rerun the agent to the end, or drop \"transcript\" and give the facts in the session's \"run\" object",
        ));
    };
    let mut facts = RunFacts {
        ended: Some(status.to_owned()),
        claimed_error: Some(infrastructure_ending(status)),
        turns: v
            .pointer("/info/model_stats/api_calls")
            .and_then(Value::as_u64),
        reported_cost_usd: v
            .pointer("/info/model_stats/instance_cost")
            .and_then(Value::as_f64),
        ..RunFacts::default()
    };
    let mut models: Vec<String> = Vec::new();
    let mut note = |m: &str| {
        if !m.is_empty() && !models.iter().any(|k| k == m) {
            models.push(m.to_owned());
        }
    };
    if let Some(m) = v
        .pointer("/info/config/model/model_name")
        .and_then(Value::as_str)
    {
        note(m);
    }
    let messages = v["messages"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for m in messages.iter().filter(|m| m["role"] == "assistant") {
        let Some(response) = m.pointer("/extra/response") else {
            continue;
        };
        let model = response["model"].as_str().unwrap_or("");
        note(model);
        let usage = &response["usage"];
        let n = |key: &str| usage[key].as_u64().unwrap_or(0);
        let cached = usage
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let kinds = [
            ("input", n("prompt_tokens").saturating_sub(cached)),
            ("cache_read", cached),
            ("output", n("completion_tokens")),
        ];
        let mine: &mut BTreeMap<String, u64> = facts.by_model.entry(model.to_owned()).or_default();
        for (kind, count) in kinds.into_iter().filter(|(_, c)| *c > 0) {
            *mine.entry(kind.to_owned()).or_default() += count;
            *facts.tokens.entry(kind.to_owned()).or_default() += count;
        }
    }
    facts
        .by_model
        .retain(|model, kinds| !model.is_empty() && !kinds.is_empty());
    facts.models = models;
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trajectory mini-swe-agent 2.4.6 wrote (`-o`), run against a
    /// scripted server on loopback: two steps, a commit, then the submit.
    const REAL: &str = include_str!("fixtures/mini-swe-agent-2.4.6.traj.json");

    #[test]
    fn a_real_trajectory_gives_its_turns_tokens_per_model_and_ending() {
        assert!(is_trajectory(REAL));
        let f = parse_trajectory("s", Path::new("traj.json"), REAL).unwrap();
        assert_eq!(f.ended.as_deref(), Some("Submitted"));
        assert_eq!(f.claimed_error, Some(false));
        assert_eq!(f.turns, Some(2));
        // The two responses' usage, summed: 100 + 101 in, 10 + 11 out.
        assert_eq!(f.tokens.get("input"), Some(&201));
        assert_eq!(f.tokens.get("output"), Some(&21));
        assert_eq!(f.by_model["test-model"]["input"], 201);
        assert_eq!(f.models, ["openai/test-model", "test-model"]);
        assert_eq!(f.reported_cost_usd, Some(0.0));
    }

    #[test]
    fn an_api_error_is_the_infrastructures_and_a_limit_the_agents() {
        for (status, infra) in [
            ("InternalServerError", true),
            ("RateLimitError", true),
            ("APIConnectionError", true),
            ("Timeout", true),
            ("Submitted", false),
            ("LimitsExceeded", false),
            ("TimeExceeded", false),
            ("RepeatedFormatError", false),
        ] {
            assert_eq!(infrastructure_ending(status), infra, "{status}");
            let text = REAL.replace("\"Submitted\"", &format!("\"{status}\""));
            let f = parse_trajectory("s", Path::new("t.json"), &text).unwrap();
            assert_eq!(f.claimed_error, Some(infra), "{status}");
            assert_eq!(f.ended.as_deref(), Some(status));
        }
    }

    #[test]
    fn a_trajectory_without_an_ending_is_an_unfinished_run() {
        let text = REAL.replace("\"exit_status\"", "\"exit_status_gone\"");
        let err = parse_trajectory("s", Path::new("t.json"), &text).unwrap_err();
        assert!(format!("{err:?}").contains("did not finish"), "{err:?}");
        // A JSONL transcript is not taken for one.
        assert!(!is_trajectory(
            "{\"type\":\"system\"}\n{\"type\":\"result\"}\n"
        ));
    }
}
