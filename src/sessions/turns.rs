//! A transcript as the turns a person reads: each step of the model (its
//! text, the tool calls it made with their inputs, its token counts) and
//! what came back (each call's output, whether it was an error), then how
//! the run ended and the calls the harness refused (permission denials).
//!
//! Read from the transcript formats a session keeps: Claude Code
//! stream-json (one event a line), mini-swe-agent trajectories (one
//! object; its tool calls, or in the older text format the fenced block of
//! a message, with the output that follows) and Harbor's ATIF
//! trajectories (`agent/trajectory.json` of an imported trial). Everything here is the agent's text:
//! shown, escaped by the page, never believed. A line that is not JSON is
//! kept as a note rather than dropped, so a cut file still shows what it has.

use std::collections::BTreeMap;

use serde_json::Value;

/// One entry of a transcript, in the order the run made them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Entry {
    /// The start of a model step: its number and its token counts by kind.
    Step {
        n: usize,
        tokens: BTreeMap<String, u64>,
    },
    /// Text: the model's (`assistant`), the prompt (`user`, `system`).
    Text { role: String, text: String },
    /// A tool call: its id (to pair with its output), tool and input.
    Call {
        id: String,
        tool: String,
        input: String,
    },
    /// What a call gave back.
    Output {
        id: String,
        text: String,
        is_error: bool,
    },
    /// A call the harness refused.
    Denied { tool: String, input: String },
    /// How the run ended, as the transcript says.
    End { text: String, is_error: bool },
    /// A line the reader could not place.
    Note(String),
}

/// The entries of `text`, whichever format it is in.
pub(crate) fn read(text: &str) -> Vec<Entry> {
    if super::mini::is_trajectory(text) {
        return mini(text);
    }
    match serde_json::from_str::<Value>(text.trim_start()) {
        Ok(v)
            if v["schema_version"]
                .as_str()
                .is_some_and(|s| s.starts_with("ATIF")) =>
        {
            atif(&v)
        }
        _ => stream_json(text),
    }
}

/// Harbor's Agent Trajectory Interchange Format: `steps`, each from
/// `system`, `user` or `agent`, an agent step with its `tool_calls`
/// (`tool_call_id`, `function_name`, `arguments`), its `observation`
/// (`results`, each naming its `source_call_id`) and its `metrics`.
fn atif(v: &Value) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut steps = 0;
    for s in v["steps"].as_array().into_iter().flatten() {
        let source = s["source"].as_str().unwrap_or("?");
        if source == "agent" {
            steps += 1;
            out.push(Entry::Step {
                n: steps,
                tokens: tokens_of(&s["metrics"])
                    .into_iter()
                    .filter(|(k, _)| matches!(k.as_str(), "prompt" | "completion" | "cached"))
                    .collect(),
            });
        }
        if let Some(r) = s["reasoning_content"].as_str().filter(|r| !r.is_empty()) {
            out.push(Entry::Text {
                role: "thinking".into(),
                text: r.to_owned(),
            });
        }
        if let Some(m) = s["message"].as_str().filter(|m| !m.is_empty()) {
            out.push(Entry::Text {
                role: source.to_owned(),
                text: m.to_owned(),
            });
        }
        for c in s["tool_calls"].as_array().into_iter().flatten() {
            out.push(Entry::Call {
                id: c["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                tool: c["function_name"].as_str().unwrap_or("?").to_owned(),
                input: pretty(&c["arguments"]),
            });
        }
        for r in s["observation"]["results"].as_array().into_iter().flatten() {
            out.push(Entry::Output {
                id: r["source_call_id"].as_str().unwrap_or_default().to_owned(),
                text: content_text(&r["content"]),
                is_error: r["is_error"].as_bool().unwrap_or(false),
            });
        }
    }
    out
}

fn pretty(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

fn tokens_of(usage: &Value) -> BTreeMap<String, u64> {
    usage
        .as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.trim_end_matches("_tokens").to_owned(), v.as_u64()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// A tool result's content: a string, or blocks of text.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b.get("text").and_then(Value::as_str) {
                Some(t) => t.to_owned(),
                None => pretty(b),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => pretty(other),
    }
}

fn stream_json(text: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut steps = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            out.push(Entry::Note(format!("a line that is not JSON: {line}")));
            continue;
        };
        let message = &event["message"];
        match event["type"].as_str().unwrap_or_default() {
            "system" => {
                let model = event["model"].as_str().unwrap_or("?");
                let subtype = event["subtype"].as_str().unwrap_or("system");
                out.push(Entry::Text {
                    role: "system".into(),
                    text: format!("{subtype}: model {model}"),
                });
            }
            "assistant" => {
                steps += 1;
                out.push(Entry::Step {
                    n: steps,
                    tokens: tokens_of(&message["usage"]),
                });
                for block in message["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str().unwrap_or_default() {
                        "text" => out.push(Entry::Text {
                            role: "assistant".into(),
                            text: block["text"].as_str().unwrap_or_default().to_owned(),
                        }),
                        "thinking" => out.push(Entry::Text {
                            role: "thinking".into(),
                            text: block["thinking"].as_str().unwrap_or_default().to_owned(),
                        }),
                        "tool_use" => out.push(Entry::Call {
                            id: block["id"].as_str().unwrap_or_default().to_owned(),
                            tool: block["name"].as_str().unwrap_or("?").to_owned(),
                            input: pretty(&block["input"]),
                        }),
                        _ => out.push(Entry::Note(pretty(block))),
                    }
                }
            }
            "user" => match &message["content"] {
                Value::String(s) => out.push(Entry::Text {
                    role: "user".into(),
                    text: s.clone(),
                }),
                blocks => {
                    for block in blocks.as_array().into_iter().flatten() {
                        if block["type"] == "tool_result" {
                            out.push(Entry::Output {
                                id: block["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                                text: content_text(&block["content"]),
                                is_error: block["is_error"].as_bool().unwrap_or(false),
                            });
                        } else {
                            out.push(Entry::Text {
                                role: "user".into(),
                                text: content_text(&Value::Array(vec![block.clone()])),
                            });
                        }
                    }
                }
            },
            "result" => {
                for d in event["permission_denials"].as_array().into_iter().flatten() {
                    out.push(Entry::Denied {
                        tool: d["tool_name"].as_str().unwrap_or("?").to_owned(),
                        input: pretty(&d["tool_input"]),
                    });
                }
                let mut text = format!(
                    "{}, {} turns",
                    event["subtype"].as_str().unwrap_or("ended"),
                    event["num_turns"]
                        .as_u64()
                        .map_or("?".into(), |n| n.to_string())
                );
                if let Some(r) = event["result"].as_str() {
                    text.push_str(": ");
                    text.push_str(r);
                }
                out.push(Entry::End {
                    text,
                    is_error: event["is_error"].as_bool().unwrap_or(false),
                });
            }
            other => out.push(Entry::Note(format!("{other} event: {line}"))),
        }
    }
    out
}

/// The last fenced block of a mini-swe-agent message: the command it ran.
fn command_of(text: &str) -> Option<String> {
    let start = text.rfind("```")?;
    let before = &text[..start];
    let open = before.rfind("```")?;
    let block = &text[open + 3..start];
    let body = block.split_once('\n').map_or(block, |(_, b)| b);
    Some(body.trim_end().to_owned())
}

fn mini(text: &str) -> Vec<Entry> {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return vec![Entry::Note("the trajectory is not JSON".into())];
    };
    let mut out = Vec::new();
    let mut steps = 0;
    // A text-format step's command, waiting for the output that follows it.
    let mut pending: Option<String> = None;
    for m in v["messages"].as_array().into_iter().flatten() {
        let content = content_text(&m["content"]);
        match m["role"].as_str().unwrap_or_default() {
            "assistant" => {
                steps += 1;
                out.push(Entry::Step {
                    n: steps,
                    tokens: tokens_of(&m["extra"]["response"]["usage"]),
                });
                if !content.is_empty() {
                    out.push(Entry::Text {
                        role: "assistant".into(),
                        text: content.clone(),
                    });
                }
                let calls = m["tool_calls"].as_array().filter(|c| !c.is_empty());
                pending = None;
                for call in calls.into_iter().flatten() {
                    let args = call["function"]["arguments"].as_str().unwrap_or_default();
                    let parsed = serde_json::from_str::<Value>(args).unwrap_or_default();
                    out.push(Entry::Call {
                        id: call["id"].as_str().unwrap_or_default().to_owned(),
                        tool: call["function"]["name"].as_str().unwrap_or("?").to_owned(),
                        input: match parsed["command"].as_str() {
                            Some(c) => c.to_owned(),
                            None => args.to_owned(),
                        },
                    });
                }
                if calls.is_none()
                    && let Some(input) = command_of(&content)
                {
                    let id = format!("step-{steps}");
                    out.push(Entry::Call {
                        id: id.clone(),
                        tool: "bash".into(),
                        input,
                    });
                    pending = Some(id);
                }
            }
            "tool" => {
                let parsed = serde_json::from_str::<Value>(&content).unwrap_or_default();
                out.push(Entry::Output {
                    id: m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                    is_error: parsed["returncode"].as_i64().is_some_and(|c| c != 0)
                        || parsed.get("exception_info").is_some(),
                    text: content,
                });
            }
            "user" if pending.is_some() => out.push(Entry::Output {
                id: pending.take().unwrap_or_default(),
                is_error: !content.contains("<returncode>0</returncode>"),
                text: content,
            }),
            role => out.push(Entry::Text {
                role: role.to_owned(),
                text: content,
            }),
        }
    }
    let info = &v["info"];
    out.push(Entry::End {
        text: info["exit_status"].as_str().unwrap_or("ended").to_owned(),
        is_error: !matches!(info["exit_status"].as_str(), Some("Submitted")),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_json_gives_steps_calls_outputs_denials_and_the_end() {
        let text = concat!(
            r#"{"type":"system","subtype":"init","model":"m-1"}"#,
            "\n",
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"look"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":3,"output_tokens":9}}}"#,
            "\n",
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"boom"}],"is_error":true}]}}"#,
            "\n",
            "not json\n",
            r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","permission_denials":[{"tool_name":"Write","tool_input":{"file_path":"/etc/x"}}]}"#,
        );
        let e = read(text);
        assert_eq!(
            e[1],
            Entry::Step {
                n: 1,
                tokens: [("input".to_owned(), 3), ("output".to_owned(), 9)].into()
            }
        );
        assert_eq!(
            e[3],
            Entry::Call {
                id: "t1".into(),
                tool: "Bash".into(),
                input: "{\n  \"command\": \"ls\"\n}".into()
            }
        );
        assert_eq!(
            e[4],
            Entry::Output {
                id: "t1".into(),
                text: "boom".into(),
                is_error: true
            }
        );
        assert!(matches!(&e[5], Entry::Note(n) if n.contains("not json")));
        assert_eq!(
            e[6],
            Entry::Denied {
                tool: "Write".into(),
                input: "{\n  \"file_path\": \"/etc/x\"\n}".into()
            }
        );
        assert_eq!(
            e[7],
            Entry::End {
                text: "success, 1 turns: done".into(),
                is_error: false
            }
        );
    }

    #[test]
    fn an_atif_trajectory_gives_steps_calls_and_observations() {
        let text = serde_json::json!({
            "schema_version": "ATIF-v1.4",
            "agent": {"name": "terminus", "version": "1"},
            "steps": [
                {"step_id": 1, "source": "user", "message": "fix it"},
                {"step_id": 2, "source": "agent", "message": "looking",
                 "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "ls"}}],
                 "observation": {"results": [{"source_call_id": "c1", "content": "a.py"}]},
                 "metrics": {"prompt_tokens": 50, "completion_tokens": 5}}
            ]
        })
        .to_string();
        let e = read(&text);
        assert_eq!(
            e,
            vec![
                Entry::Text {
                    role: "user".into(),
                    text: "fix it".into()
                },
                Entry::Step {
                    n: 1,
                    tokens: [("completion".to_owned(), 5), ("prompt".to_owned(), 50)].into()
                },
                Entry::Text {
                    role: "agent".into(),
                    text: "looking".into()
                },
                Entry::Call {
                    id: "c1".into(),
                    tool: "bash".into(),
                    input: "{\n  \"cmd\": \"ls\"\n}".into()
                },
                Entry::Output {
                    id: "c1".into(),
                    text: "a.py".into(),
                    is_error: false
                },
            ]
        );
    }

    #[test]
    fn a_mini_trajectory_gives_each_command_and_its_output() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/sessions/fixtures/mini-swe-agent-2.4.6.traj.json"
        ))
        .expect("the fixture");
        let e = read(&text);
        let calls = e.iter().filter(|e| matches!(e, Entry::Call { .. })).count();
        let outputs = e
            .iter()
            .filter(|e| matches!(e, Entry::Output { .. }))
            .count();
        assert!(calls > 0, "{e:#?}");
        assert_eq!(calls, outputs, "{e:#?}");
        assert!(matches!(e.last(), Some(Entry::End { .. })), "{e:#?}");
    }
}
