//! `[[agent]]`, checked: labels unique and non-empty, the transcript format
//! and key header known words, the endpoint an `http(s)://` URL, the counts
//! at least 1. The key itself is never read here: only the name of the
//! variable that holds it (read when an attempt runs, never keyed or
//! stored).

use serde::Serialize;

use super::file::AgentConfig;
use super::{ConfigError, Origin};
use crate::model::endpoint::KeyHeader;
use crate::words::words;

words! {
    /// How an agent's transcript is read into the session's run facts.
    pub(crate) enum TranscriptFormat {
        ClaudeStreamJson = "claude-stream-json",
        MiniSweAgent = "mini-swe-agent",
        None = "none",
    }
}

/// One agent, checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct AgentSettings {
    pub(crate) label: String,
    pub(crate) model: String,
    pub(crate) model_id: String,
    pub(crate) command: String,
    pub(crate) setup: Vec<String>,
    pub(crate) transcript: TranscriptFormat,
    /// The endpoint and how its key goes; `None`: no network at all.
    pub(crate) endpoint: Option<EndpointSettings>,
    pub(crate) attempts: u32,
    pub(crate) lanes: u32,
    pub(crate) time_limit: u64,
    pub(crate) turns: u32,
    pub(crate) cost_limit: f64,
    pub(crate) retries: u32,
    pub(crate) tracks: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct EndpointSettings {
    pub(crate) base_url: String,
    /// The variable's name; its value never enters a key or a record.
    pub(crate) key_env: Option<String>,
    pub(crate) header: KeyHeader,
}

/// Every `[[agent]]`, checked.
pub(crate) fn agents(
    pipeline: &Origin<'_>,
    written: &[toml::Spanned<AgentConfig>],
) -> Result<Vec<AgentSettings>, ConfigError> {
    let mut out: Vec<AgentSettings> = Vec::new();
    for table in written {
        let a = table.get_ref();
        let label = a.label.get_ref().trim();
        if label.is_empty() || label.contains('/') || label.contains(':') {
            return Err(pipeline.error_at(
                a.label.span(),
                "an agent's label is empty or holds `/` or `:`",
                "this label",
                "give a short name such as \"mini\" or \"claude\": it names the agent in every report",
            ));
        }
        if out.iter().any(|o| o.label == label) {
            return Err(pipeline.error_at(
                a.label.span(),
                format!("two [[agent]] tables are labelled `{label}`"),
                "the second",
                "give each agent its own label",
            ));
        }
        if a.model.get_ref().trim().is_empty() {
            return Err(pipeline.error_at(
                a.model.span(),
                "an agent's model label is empty",
                "this label",
                "give the label reports group the model under (the real id goes in `model_id`)",
            ));
        }
        let transcript = match &a.transcript {
            None => TranscriptFormat::None,
            Some(t) => TranscriptFormat::parse(t.get_ref()).ok_or_else(|| {
                pipeline.error_at(
                    t.span(),
                    format!("unknown transcript format `{}`", t.get_ref()),
                    "here",
                    "use \"claude-stream-json\" (Claude Code's --output-format stream-json), \"mini-swe-agent\" (its -o trajectory) or \"none\"",
                )
            })?,
        };
        let header = match &a.key_header {
            None => KeyHeader::Authorization,
            Some(h) => match h.get_ref().as_str() {
                "authorization" => KeyHeader::Authorization,
                "x-api-key" => KeyHeader::XApiKey,
                other => {
                    return Err(pipeline.error_at(
                        h.span(),
                        format!("unknown key header `{other}`"),
                        "here",
                        "use \"authorization\" (Bearer, OpenAI-compatible endpoints) or \"x-api-key\" (Anthropic's API)",
                    ));
                }
            },
        };
        let endpoint = match &a.base_url {
            None => None,
            Some(url) => {
                crate::model::endpoint::Endpoint::parse(url.get_ref(), None, header).map_err(
                    |why| {
                        pipeline.error_at(
                            url.span(),
                            format!("base_url: {why}"),
                            "here",
                            "give the model API's base URL, e.g. \"https://api.openai.com/v1\"",
                        )
                    },
                )?;
                Some(EndpointSettings {
                    base_url: url.get_ref().clone(),
                    key_env: a.key_env.clone(),
                    header,
                })
            }
        };
        let tracks = a.tracks.clone().unwrap_or_else(|| vec!["basic".into()]);
        out.push(AgentSettings {
            label: label.to_owned(),
            model: a.model.get_ref().trim().to_owned(),
            model_id: a
                .model_id
                .clone()
                .unwrap_or_else(|| a.model.get_ref().trim().to_owned()),
            command: a.command.get_ref().clone(),
            setup: a.setup.clone(),
            transcript,
            endpoint,
            attempts: a.attempts.unwrap_or(1).max(1),
            lanes: a.lanes.unwrap_or(1).max(1),
            time_limit: a.time_limit.unwrap_or(1800).max(1),
            turns: a.turns.unwrap_or(50),
            cost_limit: a.cost_limit.unwrap_or(3.0),
            retries: a.retries.unwrap_or(1),
            tracks,
        });
    }
    Ok(out)
}
