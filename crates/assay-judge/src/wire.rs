//! The two wire formats: request bodies and answer extraction, as pure
//! functions (the client only moves bytes).
//!
//! - `openai`: `POST {base_url}/chat/completions`, `Authorization: Bearer KEY`,
//!   body `{model, messages: [system, user], temperature, seed,
//!   response_format: {type: "json_schema", json_schema: {name, schema,
//!   strict: true}}}`. The review is `choices[0].message.content`, a JSON text.
//!   `seed` is the sample index: servers that honour it (vLLM, llama.cpp)
//!   then give each sample its own reproducible draw.
//! - `anthropic`: `POST {base_url}/messages`, `x-api-key: KEY`,
//!   `anthropic-version: 2023-06-01`, body `{model, max_tokens, system,
//!   messages: [user], temperature, tools: [{name: "submit_review",
//!   description, input_schema}], tool_choice: {type: "tool", name:
//!   "submit_review"}}`. The review is the `tool_use` block's `input`.

use serde::Serialize;
use serde_json::Value;

use crate::prompt::Prompt;
use crate::reading::{AnswerProblem, Usage};
use crate::schema::Schema;
use crate::settings::Settings;

pub const ANTHROPIC_VERSION: &str = "2023-06-01";
pub const TOOL_NAME: &str = "submit_review";
const SCHEMA_NAME: &str = "patch_review";

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct OpenaiBody<'a> {
    model: &'a str,
    messages: [Message<'a>; 2],
    temperature: f64,
    seed: u32,
    response_format: ResponseFormat<'a>,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    r#type: &'static str,
    json_schema: JsonSchema<'a>,
}

#[derive(Serialize)]
struct JsonSchema<'a> {
    name: &'static str,
    schema: &'a Schema,
    strict: bool,
}

#[derive(Serialize)]
struct AnthropicBody<'a> {
    model: &'a str,
    max_tokens: u32,
    system: &'a str,
    messages: [Message<'a>; 1],
    temperature: f64,
    tools: [Tool<'a>; 1],
    tool_choice: ToolChoice,
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'static str,
    description: &'static str,
    input_schema: &'a Schema,
}

#[derive(Serialize)]
struct ToolChoice {
    r#type: &'static str,
    name: &'static str,
}

/// The request body for `settings.api`, as JSON bytes.
pub(crate) fn request_body(settings: &Settings, prompt: &Prompt, sample: u32) -> Vec<u8> {
    let encoded = match settings.api {
        crate::Api::Openai => serde_json::to_vec(&OpenaiBody {
            model: &settings.model,
            messages: [
                Message {
                    role: "system",
                    content: &prompt.system,
                },
                Message {
                    role: "user",
                    content: &prompt.user,
                },
            ],
            temperature: settings.temperature,
            seed: sample,
            response_format: ResponseFormat {
                r#type: "json_schema",
                json_schema: JsonSchema {
                    name: SCHEMA_NAME,
                    schema: &prompt.schema,
                    strict: true,
                },
            },
        }),
        crate::Api::Anthropic => serde_json::to_vec(&AnthropicBody {
            model: &settings.model,
            max_tokens: settings.max_tokens.get(),
            system: &prompt.system,
            messages: [Message {
                role: "user",
                content: &prompt.user,
            }],
            temperature: settings.temperature,
            tools: [Tool {
                name: TOOL_NAME,
                description: "Submit the review of the patch(es), as the schema describes.",
                input_schema: &prompt.schema,
            }],
            tool_choice: ToolChoice {
                r#type: "tool",
                name: TOOL_NAME,
            },
        }),
    };
    // Plain structs of strings and numbers always serialise.
    encoded.unwrap_or_default()
}

/// What one successful (2xx) response holds.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) usage: Usage,
    /// The review object, or why there is none.
    pub(crate) review: Result<Value, AnswerProblem>,
    /// The answer's text, for the record.
    pub(crate) text: String,
}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Reads a 2xx body of `api`'s format.
pub(crate) fn read_answer(api: crate::Api, body: &[u8]) -> Answer {
    let parsed: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Answer {
                usage: Usage::default(),
                review: Err(AnswerProblem::NotJson(format!("response body: {e}"))),
                text: String::from_utf8_lossy(body).into_owned(),
            };
        }
    };
    let usage_obj = parsed.get("usage").cloned().unwrap_or(Value::Null);
    match api {
        crate::Api::Openai => {
            let usage = Usage {
                input_tokens: count(&usage_obj, "prompt_tokens"),
                output_tokens: count(&usage_obj, "completion_tokens"),
            };
            let choice = parsed.pointer("/choices/0").cloned().unwrap_or(Value::Null);
            let message = choice.get("message").cloned().unwrap_or(Value::Null);
            let text = message
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let review = if let Some(refusal) = message.get("refusal").and_then(Value::as_str) {
                Err(AnswerProblem::Refused(refusal.to_owned()))
            } else if choice.get("finish_reason").and_then(Value::as_str) == Some("length") {
                Err(AnswerProblem::Truncated)
            } else {
                serde_json::from_str(strip_fence(&text))
                    .map_err(|e| AnswerProblem::NotJson(e.to_string()))
            };
            Answer {
                usage,
                review,
                text,
            }
        }
        crate::Api::Anthropic => {
            let usage = Usage {
                input_tokens: count(&usage_obj, "input_tokens"),
                output_tokens: count(&usage_obj, "output_tokens"),
            };
            let tool_input = parsed
                .get("content")
                .and_then(Value::as_array)
                .and_then(|blocks| {
                    blocks.iter().find(|b| {
                        b.get("type").and_then(Value::as_str) == Some("tool_use")
                            && b.get("name").and_then(Value::as_str) == Some(TOOL_NAME)
                    })
                })
                .and_then(|b| b.get("input"))
                .cloned();
            let stop = parsed.get("stop_reason").and_then(Value::as_str);
            let review = match (tool_input, stop) {
                (_, Some("max_tokens")) => Err(AnswerProblem::Truncated),
                (_, Some("refusal")) => Err(AnswerProblem::Refused("stop_reason refusal".into())),
                (Some(input), _) => Ok(input),
                (None, _) => Err(AnswerProblem::NoToolCall),
            };
            let text = match &review {
                Ok(input) => input.to_string(),
                Err(_) => String::from_utf8_lossy(body).into_owned(),
            };
            Answer {
                usage,
                review,
                text,
            }
        }
    }
}

/// Some local servers wrap JSON in a ```json fence even when asked for a
/// schema; the fence is not part of the answer.
fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let body = rest.split_once('\n').map_or("", |(_, b)| b);
    body.strip_suffix("```").unwrap_or(body).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_stripped() {
        assert_eq!(strip_fence("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(strip_fence(" {\"a\":1} "), "{\"a\":1}");
    }

    #[test]
    fn openai_usage_and_truncation_are_read() {
        let body = br#"{"choices":[{"finish_reason":"length","message":{"content":"{\"re"}}],
                        "usage":{"prompt_tokens":10,"completion_tokens":3}}"#;
        let a = read_answer(crate::Api::Openai, body);
        assert_eq!(a.usage.input_tokens, 10);
        assert_eq!(a.usage.output_tokens, 3);
        assert!(matches!(a.review, Err(AnswerProblem::Truncated)));
    }

    #[test]
    fn anthropic_without_the_tool_call_is_an_answer_problem() {
        let body = br#"{"content":[{"type":"text","text":"I think..."}],"stop_reason":"end_turn",
                        "usage":{"input_tokens":7,"output_tokens":2}}"#;
        let a = read_answer(crate::Api::Anthropic, body);
        assert!(matches!(a.review, Err(AnswerProblem::NoToolCall)));
        assert_eq!(a.usage.input_tokens, 7);
    }
}
