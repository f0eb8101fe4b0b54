//! `load_dir` over session directories written into temp dirs.

use std::collections::BTreeMap;
use std::path::Path;

use super::RunFacts;
use super::read::{ParsedSession, SessionError};
use super::{Session, load_dir};

fn write(dir: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, content).expect("write");
}

fn ok(result: &Result<ParsedSession, SessionError>) -> &Session<Vec<u8>, Option<String>> {
    match result {
        Ok(s) => &s.session,
        Err(e) => panic!("expected a session, got {e:?}"),
    }
}

fn err(result: &Result<ParsedSession, SessionError>) -> &SessionError {
    match result {
        Ok(s) => panic!("expected an error, got {s:?}"),
        Err(e) => e,
    }
}

/// The text the error's span covers, and the name of the file it is in.
fn spanned(e: &SessionError) -> (&str, &str) {
    let src = e.src.as_ref().expect("a source");
    let span = e.span.expect("a span");
    let text = src.inner();
    (&text[span.offset()..span.offset() + span.len()], src.name())
}

/// The 1-based line the error's span starts on.
fn span_line(e: &SessionError) -> usize {
    let src = e.src.as_ref().expect("a source");
    let offset = e.span.expect("a span").offset();
    src.inner()[..offset].matches('\n').count() + 1
}

fn ids(results: &[Result<ParsedSession, SessionError>]) -> Vec<String> {
    results
        .iter()
        .map(|r| match r {
            Ok(s) => s.session.id.clone(),
            Err(e) => e.id.clone(),
        })
        .collect()
}

const PATCH: &str =
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";

/// A Claude Code `--output-format stream-json --verbose` run, shaped as the CLI writes it.
const TRANSCRIPT: &str = concat!(
    r#"{"type":"system","subtype":"init","cwd":"/work/calc","session_id":"7d2c9a4e-1f3b-4c55-9e0a-2b8f6d1c3a77","tools":["Bash","Edit","Read","Grep"],"mcp_servers":[],"model":"claude-sonnet-4-5-20250929","permissionMode":"acceptEdits","apiKeySource":"ANTHROPIC_API_KEY"}"#,
    "\n",
    r#"{"type":"assistant","message":{"id":"msg_01A","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Let me read calc.py."}],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":9}},"parent_tool_use_id":null,"session_id":"7d2c9a4e-1f3b-4c55-9e0a-2b8f6d1c3a77"}"#,
    "\n",
    r#"{"type":"assistant","message":{"id":"msg_01B","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_01","name":"Edit","input":{"file_path":"calc.py","old_string":"x = 1","new_string":"x = 2"}}],"stop_reason":"tool_use","usage":{"input_tokens":40,"output_tokens":31}},"parent_tool_use_id":null,"session_id":"7d2c9a4e-1f3b-4c55-9e0a-2b8f6d1c3a77"}"#,
    "\n",
    r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"The file calc.py has been updated."}]},"parent_tool_use_id":null,"session_id":"7d2c9a4e-1f3b-4c55-9e0a-2b8f6d1c3a77"}"#,
    "\n",
    r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":41234,"duration_api_ms":38010,"num_turns":7,"result":"Fixed: x is now 2.","session_id":"7d2c9a4e-1f3b-4c55-9e0a-2b8f6d1c3a77","total_cost_usd":0.0921,"usage":{"input_tokens":1234,"cache_creation_input_tokens":2048,"cache_read_input_tokens":40960,"output_tokens":567,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"},"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_02","tool_input":{"command":"git push"}}]}"#,
    "\n",
);

fn transcript_facts() -> RunFacts {
    RunFacts {
        turns: Some(7),
        tokens: BTreeMap::from([
            ("cache_creation".to_owned(), 2048),
            ("cache_read".to_owned(), 40960),
            ("input".to_owned(), 1234),
            ("output".to_owned(), 567),
        ]),
        ended: Some("success".to_owned()),
        claimed_error: Some(false),
        permission_denials: Some(1),
        duration_ms: Some(41234),
        by_model: BTreeMap::new(),
        reported_cost_usd: Some(0.0921),
        models: vec!["claude-sonnet-4-5-20250929".to_owned()],
        ..RunFacts::default()
    }
}

fn session_json(extra: &str) -> String {
    format!(
        "{{\n  \"task\": \"calc-1\",\n  \"agent\": \"alpha\",\n  \"model\": \"model-a\"{extra}\n}}\n"
    )
}

#[test]
fn inline_patch_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = serde_json::json!({
        "task": "calc-1", "track": "spec", "agent": "alpha", "model": "model-a", "patch": PATCH,
        "run": {"turns": 12, "tokens": {"input": 1200, "output": 300}, "ended": "success",
                "is_error": false, "permission_denials": 0, "duration_ms": 5000}
    });
    write(dir.path(), "alpha/calc-1.json", body.to_string());

    let results = load_dir(dir.path());
    assert_eq!(results.len(), 1);
    let s = ok(&results[0]);
    assert_eq!(s.id, "alpha/calc-1.json");
    assert_eq!(s.task, "calc-1");
    assert_eq!(s.track.as_deref(), Some("spec"));
    assert_eq!((s.agent.as_str(), s.model.as_str()), ("alpha", "model-a"));
    assert_eq!(s.patch, PATCH.as_bytes());
    assert_eq!(
        results[0].as_ref().map(|p| &p.file).ok(),
        Some(&dir.path().join("alpha/calc-1.json"))
    );
    assert_eq!(
        s.facts,
        RunFacts {
            turns: Some(12),
            tokens: BTreeMap::from([("input".to_owned(), 1200), ("output".to_owned(), 300)]),
            ended: Some("success".to_owned()),
            claimed_error: Some(false),
            permission_denials: Some(0),
            duration_ms: Some(5000),
            ..RunFacts::default()
        }
    );
}

#[test]
fn empty_inline_patch_is_the_empty_patch_and_no_track_is_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "s.json", session_json(",\n  \"patch\": \"\""));
    let results = load_dir(dir.path());
    let s = ok(&results[0]);
    assert!(s.patch.is_empty());
    assert_eq!(s.track, None);
    assert_eq!(s.facts, RunFacts::default());
}

#[test]
fn patch_file_is_read_relative_to_the_session_and_keeps_its_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bytes = PATCH.as_bytes().to_vec();
    bytes.extend_from_slice(b"+\xff\xfe binary-ish\n");
    write(dir.path(), "alpha/alpha-calc-1.diff", &bytes);
    write(
        dir.path(),
        "alpha/calc-1.json",
        session_json(",\n  \"patch_file\": \"alpha-calc-1.diff\""),
    );
    let results = load_dir(dir.path());
    assert_eq!(results.len(), 1, "the .diff is not a session");
    let s = ok(&results[0]);
    assert_eq!(s.patch, bytes);
}

#[test]
fn transcript_gives_the_run_facts() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "alpha/calc-1.stream.jsonl", TRANSCRIPT);
    write(
        dir.path(),
        "alpha/calc-1.json",
        session_json(",\n  \"patch\": \"\",\n  \"transcript\": \"calc-1.stream.jsonl\""),
    );
    let results = load_dir(dir.path());
    assert_eq!(ids(&results), ["alpha/calc-1.json"]);
    assert_eq!(ok(&results[0]).facts, transcript_facts());
}

/// A session naming a mini-swe-agent trajectory gets its facts, and a
/// trajectory no session names is not taken for a session file.
#[test]
fn a_mini_swe_agent_trajectory_gives_the_run_facts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = include_str!("fixtures/mini-swe-agent-2.4.6.traj.json");
    write(dir.path(), "mini/run.traj.json", real);
    write(dir.path(), "mini/stray.traj.json", real);
    write(
        dir.path(),
        "mini/s.json",
        session_json(",\n  \"patch\": \"\",\n  \"transcript\": \"run.traj.json\""),
    );
    let results = load_dir(dir.path());
    assert_eq!(ids(&results), ["mini/s.json"]);
    let facts = &ok(&results[0]).facts;
    assert_eq!(facts.ended.as_deref(), Some("Submitted"));
    assert_eq!((facts.turns, facts.claimed_error), (Some(2), Some(false)));
    assert_eq!(facts.tokens.get("output"), Some(&21));
}

#[test]
fn explicit_run_values_win_over_the_transcript() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "run.stream.jsonl", TRANSCRIPT);
    write(
        dir.path(),
        "s.json",
        session_json(
            ",\n  \"patch\": \"\",\n  \"transcript\": \"run.stream.jsonl\",\n  \
             \"run\": {\"turns\": 3, \"ended\": \"error_max_turns\", \"tokens\": {\"output\": 1, \"reasoning\": 9}}",
        ),
    );
    let results = load_dir(dir.path());
    let mut want = transcript_facts();
    want.turns = Some(3);
    want.ended = Some("error_max_turns".to_owned());
    want.tokens.insert("output".to_owned(), 1);
    want.tokens.insert("reasoning".to_owned(), 9);
    assert_eq!(ok(&results[0]).facts, want);
}

/// Loads `transcript` through a session file and returns its facts.
fn facts_of(transcript: &str) -> RunFacts {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "t.stream.jsonl", transcript);
    write(
        dir.path(),
        "s.json",
        session_json(",\n  \"patch\": \"\",\n  \"transcript\": \"t.stream.jsonl\""),
    );
    let results = load_dir(dir.path());
    ok(&results[0]).facts.clone()
}

/// A resumed run (`claude --resume`) appends a process and a result event
/// per resume: reading only the last one dropped the first process's turns,
/// tokens and cost.
#[test]
fn a_resumed_run_sums_every_result_event() {
    let resumed = format!(
        "{TRANSCRIPT}{}\n{}\n",
        r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929","session_id":"7d2c9a4e-1f3b-4c55-9e0a-2b8f6d1c3a77"}"#,
        r#"{"type":"result","subtype":"error_max_turns","is_error":true,"duration_ms":90000.0,"num_turns":30,"total_cost_usd":0.01,"usage":{"input_tokens":5,"output_tokens":6},"permission_denials":[]}"#
    );
    let facts = facts_of(&resumed);
    // How it ended: the last process says.
    assert_eq!(facts.ended.as_deref(), Some("error_max_turns"));
    assert_eq!(facts.claimed_error, Some(true));
    // What it used: both processes.
    assert_eq!(facts.turns, Some(37));
    assert_eq!(facts.duration_ms, Some(131_234));
    assert_eq!(facts.permission_denials, Some(1));
    assert_eq!(
        facts.tokens,
        BTreeMap::from([
            ("cache_creation".to_owned(), 2048),
            ("cache_read".to_owned(), 40960),
            ("input".to_owned(), 1239),
            ("output".to_owned(), 573),
        ])
    );
    let cost = facts.reported_cost_usd.expect("reported cost");
    assert!((cost - 0.1021).abs() < 1e-12, "{cost}");
    assert_eq!(facts.models, ["claude-sonnet-4-5-20250929"]);
}

/// A run whose main model hands work to a smaller one: `modelUsage` keeps
/// each model's tokens apart, so each is priced by its own id.
#[test]
fn a_multi_model_run_keeps_usage_per_model() {
    let transcript = concat!(
        r#"{"type":"system","subtype":"init","model":"claude-opus-4-1-20250805","session_id":"s"}"#,
        "\n",
        r#"{"type":"assistant","message":{"model":"claude-opus-4-1-20250805","content":[],"usage":{"input_tokens":3,"output_tokens":4}}}"#,
        "\n",
        r#"{"type":"assistant","message":{"model":"claude-3-5-haiku-20241022","content":[],"usage":{"input_tokens":3,"output_tokens":4}}}"#,
        "\n",
        r#"{"type":"result","subtype":"success","is_error":false,"num_turns":4,"total_cost_usd":0.5,"usage":{"input_tokens":110,"output_tokens":220},"modelUsage":{"claude-opus-4-1-20250805":{"inputTokens":100,"outputTokens":200,"cacheReadInputTokens":1000,"cacheCreationInputTokens":50,"webSearchRequests":0,"costUSD":0.45,"contextWindow":200000},"claude-3-5-haiku-20241022":{"inputTokens":10,"outputTokens":20,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":0.05,"contextWindow":200000}}}"#,
        "\n",
    );
    let facts = facts_of(transcript);
    let kinds = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
    };
    assert_eq!(
        facts.by_model,
        BTreeMap::from([
            (
                "claude-3-5-haiku-20241022".to_owned(),
                kinds(&[
                    ("cache_creation", 0),
                    ("cache_read", 0),
                    ("input", 10),
                    ("output", 20),
                    ("web_search_requests", 0)
                ])
            ),
            (
                "claude-opus-4-1-20250805".to_owned(),
                kinds(&[
                    ("cache_creation", 50),
                    ("cache_read", 1000),
                    ("input", 100),
                    ("output", 200),
                    ("web_search_requests", 0)
                ])
            ),
        ])
    );
    assert_eq!(
        facts.models,
        ["claude-opus-4-1-20250805", "claude-3-5-haiku-20241022"]
    );
    assert_eq!(facts.reported_cost_usd, Some(0.5));
}

/// An API failure ends the run with `is_error: true` (its subtype may still
/// say `success`): kept as the transcript's claim, never as a witness's.
#[test]
fn an_api_error_run_claims_is_error() {
    let transcript = concat!(
        r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929","session_id":"s"}"#,
        "\n",
        r#"{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"}],"usage":{"input_tokens":0,"output_tokens":0}}}"#,
        "\n",
        r#"{"type":"result","subtype":"success","is_error":true,"duration_ms":1200,"num_turns":1,"result":"API Error: 529 overloaded","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"permission_denials":[]}"#,
        "\n",
    );
    let facts = facts_of(transcript);
    assert_eq!((facts.claimed_error, facts.is_error), (Some(true), None));
    assert_eq!(facts.ended.as_deref(), Some("success"));
    assert_eq!(facts.turns, Some(1));
    assert_eq!(
        facts.models,
        ["claude-sonnet-4-5-20250929"],
        "<synthetic> is no model"
    );
}

#[test]
fn a_transcript_named_jsonl_is_not_read_as_predictions() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "logs/run.jsonl", TRANSCRIPT);
    write(
        dir.path(),
        "s.json",
        session_json(",\n  \"patch\": \"\",\n  \"transcript\": \"logs/run.jsonl\""),
    );
    let results = load_dir(dir.path());
    assert_eq!(ids(&results), ["s.json"]);
    assert_eq!(ok(&results[0]).facts, transcript_facts());
}

#[test]
fn swebench_predictions_one_session_per_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lines = [
        serde_json::json!({"instance_id": "calc-1", "model_name_or_path": "model-b", "model_patch": PATCH, "cost": 0.5}).to_string(),
        String::new(),
        serde_json::json!({"instance_id": "calc-2", "model_name_or_path": "model-b", "model_patch": "", "agent": "beta"}).to_string(),
        serde_json::json!({"instance_id": "calc-3", "model_name_or_path": "model-b", "model_patch": null}).to_string(),
    ];
    write(dir.path(), "preds/beta.jsonl", lines.join("\n") + "\n");

    let results = load_dir(dir.path());
    assert_eq!(
        ids(&results),
        [
            "preds/beta.jsonl#1",
            "preds/beta.jsonl#3",
            "preds/beta.jsonl#4"
        ]
    );
    let (a, b, c) = (ok(&results[0]), ok(&results[1]), ok(&results[2]));
    assert_eq!(
        (a.task.as_str(), a.agent.as_str(), a.model.as_str()),
        ("calc-1", "model-b", "model-b")
    );
    assert_eq!(a.patch, PATCH.as_bytes());
    assert_eq!(
        (b.task.as_str(), b.agent.as_str(), b.model.as_str()),
        ("calc-2", "beta", "model-b")
    );
    assert!(b.patch.is_empty());
    assert_eq!(c.task, "calc-3");
    assert!(c.patch.is_empty(), "a null model_patch is the empty patch");
    assert_eq!(
        (a.track.clone(), a.facts.clone()),
        (None, RunFacts::default())
    );
    assert_eq!(
        results[0].as_ref().map(|p| &p.file).ok(),
        Some(&dir.path().join("preds/beta.jsonl"))
    );
}

#[test]
fn a_bad_prediction_line_fails_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = concat!(
        r#"{"instance_id": "calc-1", "model_name_or_path": "m", "model_patch": ""}"#,
        "\n",
        r#"{"instance_id": "calc-2", "model_patch": ""}"#,
        "\n",
        r#"{"instance_id": "calc-3", "model_name_or_path": "m", "model_patch": "" oops}"#,
        "\n",
        r#"{"instance_id": "calc-4", "model_name_or_path": "m", "model_patch": 7}"#,
        "\n",
        r#"{"instance_id": "calc-5", "model_name_or_path": "m", "model_patch": ""}"#,
        "\n",
    );
    write(dir.path(), "p.jsonl", text);
    let results = load_dir(dir.path());
    assert_eq!(
        ids(&results),
        [
            "p.jsonl#1",
            "p.jsonl#2",
            "p.jsonl#3",
            "p.jsonl#4",
            "p.jsonl#5"
        ]
    );
    assert_eq!(ok(&results[0]).task, "calc-1");
    assert_eq!(ok(&results[4]).task, "calc-5");

    // No model_name_or_path: the harness files it under "None", so do we.
    let unnamed = ok(&results[1]);
    assert_eq!(
        (
            unnamed.task.as_str(),
            unnamed.model.as_str(),
            unnamed.agent.as_str()
        ),
        ("calc-2", "None", "None")
    );

    let syntax = err(&results[2]);
    assert_eq!(span_line(syntax), 3);
    assert_eq!(spanned(syntax).0, "o");
    assert!(
        syntax.message.starts_with("invalid JSONL line: expected"),
        "{}",
        syntax.message
    );

    let typed = err(&results[3]);
    assert_eq!(typed.message, "\"model_patch\" is not a string");
    assert_eq!(spanned(typed).0, "7");
    assert_eq!(span_line(typed), 4);
}

#[test]
fn swebench_predictions_json_as_a_list_or_a_dict_by_instance_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let list = serde_json::json!([
        {"instance_id": "calc-1", "model_name_or_path": "model-b", "model_patch": PATCH},
        {"instance_id": "calc-1", "model_patch": "", "track": "spec", "agent": "beta"},
        {"instance_id": "calc-4", "model_patch": "", "track": "hard"},
    ]);
    write(dir.path(), "preds/list.json", format!("{list:#}"));
    // SWE-agent's form: keyed by instance id, the id inside optional.
    let dict = concat!(
        "{\n",
        r#"  "calc-7": {"model_name_or_path": "model-c", "model_patch": ""},"#,
        "\n",
        r#"  "calc-5": {"instance_id": "calc-5", "model_patch": null},"#,
        "\n",
        r#"  "calc-9": {"instance_id": "calc-1", "model_patch": ""}"#,
        "\n}\n"
    );
    write(dir.path(), "preds/dict.json", dict);
    // An assay session file is still one.
    write(dir.path(), "s.json", session_json(",\n  \"patch\": \"\""));

    let results = load_dir(dir.path());
    assert_eq!(
        ids(&results),
        [
            "preds/dict.json#calc-7",
            "preds/dict.json#calc-5",
            "preds/dict.json#calc-9",
            "preds/list.json#1",
            "preds/list.json#2",
            "preds/list.json#3",
            "s.json"
        ]
    );
    let c7 = ok(&results[0]);
    assert_eq!(
        (c7.task.as_str(), c7.model.as_str(), c7.track.as_deref()),
        ("calc-7", "model-c", None)
    );
    let c5 = ok(&results[1]);
    assert_eq!((c5.task.as_str(), c5.model.as_str()), ("calc-5", "None"));
    assert!(c5.patch.is_empty());
    let clash = err(&results[2]);
    assert_eq!(
        clash.message,
        "\"instance_id\" is `calc-1`, but the prediction is filed under `calc-9`"
    );
    assert_eq!(spanned(clash).0, "\"calc-1\"");
    assert_eq!(span_line(clash), 4);

    let first = ok(&results[3]);
    assert_eq!(
        (
            first.task.as_str(),
            first.model.as_str(),
            first.agent.as_str()
        ),
        ("calc-1", "model-b", "model-b")
    );
    assert_eq!(first.patch, PATCH.as_bytes());
    let spec = ok(&results[4]);
    assert_eq!(
        (
            spec.track.as_deref(),
            spec.agent.as_str(),
            spec.model.as_str()
        ),
        (Some("spec"), "beta", "None")
    );
    let bad = err(&results[5]);
    assert_eq!(bad.message, "unknown track `hard`");
    assert_eq!(spanned(bad).0, "\"hard\"");
    assert_eq!(ok(&results[6]).task, "calc-1");
}

#[test]
fn malformed_json_points_at_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "bad.json",
        "{\n  \"task\": \"calc-1\",\n  \"agent\": \"alpha\"\n  \"model\": \"model-a\",\n  \"patch\": \"\"\n}\n",
    );
    let results = load_dir(dir.path());
    let e = err(&results[0]);
    assert_eq!(e.id, "bad.json");
    assert_eq!(e.message, "invalid session file: expected `,` or `}`");
    assert_eq!(span_line(e), 4);
    assert_eq!(spanned(e).0, "\"");
    assert!(
        e.help
            .as_deref()
            .is_some_and(|h| h.contains("not valid JSON"))
    );
}

#[test]
fn unknown_key_is_an_error_at_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "s.json",
        session_json(",\n  \"patch\": \"\",\n  \"patch_flie\": \"x.diff\""),
    );
    let results = load_dir(dir.path());
    let e = err(&results[0]);
    assert!(
        e.message
            .starts_with("invalid session file: unknown field `patch_flie`, expected one of"),
        "{}",
        e.message
    );
    assert_eq!(spanned(e).0, "\"patch_flie\"");
    assert_eq!(span_line(e), 6);
    assert!(
        e.help
            .as_deref()
            .is_some_and(|h| h.contains("fix its spelling"))
    );

    // Inside `run` too.
    write(
        dir.path(),
        "s.json",
        session_json(",\n  \"patch\": \"\",\n  \"run\": {\"turns\": 1, \"truns\": 2}"),
    );
    let e = err(&load_dir(dir.path())[0]).message.clone();
    assert!(e.contains("unknown field `truns`"), "{e}");
}

#[test]
fn missing_agent_spans_the_object_and_says_what_to_add() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = "{\"task\": \"calc-1\", \"model\": \"model-a\", \"patch\": \"\"}\n";
    write(dir.path(), "s.json", text);
    let results = load_dir(dir.path());
    let e = err(&results[0]);
    assert_eq!(e.message, "the session has no \"agent\"");
    assert_eq!(spanned(e).0, text.trim_end());
    assert_eq!(
        e.help.as_deref(),
        Some("add \"agent\": the label reports group by")
    );
}

#[test]
fn missing_patch_file_points_at_its_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "a/s.json",
        session_json(",\n  \"patch_file\": \"nope.diff\""),
    );
    let results = load_dir(dir.path());
    let e = err(&results[0]);
    assert_eq!(e.id, "a/s.json");
    assert_eq!(
        e.message,
        format!(
            "patch file not found: {}",
            dir.path().join("a/nope.diff").display()
        )
    );
    assert_eq!(spanned(e).0, "\"nope.diff\"");
    assert!(
        e.help
            .as_deref()
            .is_some_and(|h| h.contains("relative to this session file"))
    );
}

#[test]
fn patch_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "x.diff", PATCH);
    write(
        dir.path(),
        "both.json",
        session_json(",\n  \"patch\": \"\",\n  \"patch_file\": \"x.diff\""),
    );
    write(dir.path(), "none.json", session_json(""));
    write(
        dir.path(),
        "track.json",
        session_json(",\n  \"patch\": \"\",\n  \"track\": \"hard\""),
    );
    write(dir.path(), "array.json", "[{\"instance_id\": \"calc-1\"}]");
    let results = load_dir(dir.path());
    assert_eq!(
        ids(&results),
        ["array.json#1", "both.json", "none.json", "track.json"]
    );
    // A list is SWE-bench predictions; this one lacks its patch.
    let array = err(&results[0]);
    assert_eq!(array.message, "the prediction has no \"model_patch\"");
    let both = err(&results[1]);
    assert_eq!(both.message, "both \"patch\" and \"patch_file\" are given");
    assert_eq!(spanned(both).0, "\"x.diff\"");
    let none = err(&results[2]);
    assert_eq!(none.message, "the session has no patch");
    let track = err(&results[3]);
    assert_eq!(track.message, "unknown track \"hard\"");
    assert_eq!(spanned(track).0, "\"hard\"");
}

#[test]
fn transcript_without_result_points_at_its_last_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let unfinished: String = TRANSCRIPT
        .lines()
        .take(3)
        .map(|l| format!("{l}\n"))
        .collect();
    write(dir.path(), "t.stream.jsonl", &unfinished);
    write(
        dir.path(),
        "s.json",
        session_json(",\n  \"patch\": \"\",\n  \"transcript\": \"t.stream.jsonl\""),
    );
    let results = load_dir(dir.path());
    assert_eq!(results.len(), 1);
    let e = err(&results[0]);
    assert_eq!(e.id, "s.json");
    assert_eq!(
        e.message,
        "transcript has no result event: the run did not finish or the file is cut"
    );
    let third = TRANSCRIPT.lines().nth(2).expect("3 lines");
    let transcript_path = dir.path().join("t.stream.jsonl");
    assert_eq!(
        spanned(e),
        (third, transcript_path.to_str().expect("utf-8"))
    );
    assert_eq!(span_line(e), 3);

    // Cut in the middle of a line: still "no result", at the partial line.
    let cut = format!("{unfinished}{{\"type\":\"assistant\",\"mess");
    write(dir.path(), "t.stream.jsonl", &cut);
    let results = load_dir(dir.path());
    let e = err(&results[0]);
    assert!(
        e.message.starts_with("transcript has no result event"),
        "{}",
        e.message
    );
    assert_eq!(spanned(e).0, "{\"type\":\"assistant\",\"mess");
    assert_eq!(span_line(e), 4);
}

#[test]
fn missing_transcript_points_at_its_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "s.json",
        session_json(",\n  \"patch\": \"\",\n  \"transcript\": \"gone.stream.jsonl\""),
    );
    let e = err(&load_dir(dir.path())[0]).message.clone();
    assert!(e.starts_with("transcript not found: "), "{e}");
}

#[test]
fn order_is_sorted_and_deterministic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = session_json(",\n  \"patch\": \"\"");
    for rel in [
        "zeta.json",
        "alpha/b.json",
        "alpha/a.json",
        "beta/c/d.json",
        "alpha-x.json",
    ] {
        write(dir.path(), rel, &session);
    }
    let preds: String = (1..=11)
        .map(|i| format!("{{\"instance_id\": \"t{i}\", \"model_name_or_path\": \"m\", \"model_patch\": \"\"}}\n"))
        .collect();
    write(dir.path(), "alpha/p.jsonl", preds);
    write(dir.path(), ".hidden/x.json", "not json");
    write(dir.path(), "notes.md", "not a session");

    let first = ids(&load_dir(dir.path()));
    let mut want = vec![
        "alpha-x.json".to_owned(),
        "alpha/a.json".to_owned(),
        "alpha/b.json".to_owned(),
    ];
    want.extend((1..=11).map(|i| format!("alpha/p.jsonl#{i}")));
    want.extend(["beta/c/d.json".to_owned(), "zeta.json".to_owned()]);
    assert_eq!(first, want);
    assert_eq!(ids(&load_dir(dir.path())), first);
}

#[test]
fn one_bad_file_does_not_stop_the_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "a.json", session_json(",\n  \"patch\": \"\""));
    write(dir.path(), "b.json", "{ \"task\": ");
    write(dir.path(), "c.json", b"\xff\xfe{}");
    write(
        dir.path(),
        "d.jsonl",
        "{\"instance_id\": \"calc-1\", \"model_name_or_path\": \"m\", \"model_patch\": \"\"}\n",
    );
    let results = load_dir(dir.path());
    assert_eq!(ids(&results), ["a.json", "b.json", "c.json", "d.jsonl#1"]);
    assert_eq!(ok(&results[0]).agent, "alpha");
    let cut = err(&results[1]);
    assert!(
        cut.message
            .starts_with("invalid session file: EOF while parsing"),
        "{}",
        cut.message
    );
    assert!(err(&results[2]).message.contains("not UTF-8"));
    assert_eq!(ok(&results[3]).task, "calc-1");
}

#[test]
fn a_missing_directory_is_one_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let results = load_dir(&dir.path().join("nope"));
    assert_eq!(results.len(), 1);
    assert!(
        err(&results[0])
            .message
            .starts_with("cannot read the sessions directory")
    );
}

#[test]
fn patch_and_transcript_files_must_stay_below_the_session() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("sessions");
    write(dir.path(), "secret.txt", "not a patch\n");
    write(
        &root,
        "a/up.json",
        r#"{"task": "t", "agent": "a", "model": "m", "patch_file": "../../secret.txt"}"#,
    );
    write(
        &root,
        "a/abs.json",
        r#"{"task": "t", "agent": "a", "model": "m", "patch_file": "/etc/hostname"}"#,
    );
    write(
        &root,
        "a/tr.json",
        r#"{"task": "t", "agent": "a", "model": "m", "patch": "", "transcript": "../../secret.txt"}"#,
    );
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("a/link.diff"))
        .expect("symlink");
    write(
        &root,
        "a/link.json",
        r#"{"task": "t", "agent": "a", "model": "m", "patch_file": "link.diff"}"#,
    );
    write(
        &root,
        "a/fine.json",
        r#"{"task": "t", "agent": "a", "model": "m", "patch_file": "d/fine.diff"}"#,
    );
    write(&root, "a/d/fine.diff", "diff --git a/x b/x\n");
    // A directory link in the middle of the path: only the last component
    // was once checked.
    std::os::unix::fs::symlink(dir.path(), root.join("a/host")).expect("symlink");
    write(
        &root,
        "a/through.json",
        r#"{"task": "t", "agent": "a", "model": "m", "patch_file": "host/secret.txt"}"#,
    );
    let results = load_dir(&root);
    let by_id: BTreeMap<String, &Result<ParsedSession, SessionError>> = results
        .iter()
        .map(|r| match r {
            Ok(s) => (s.session.id.clone(), r),
            Err(e) => (e.id.clone(), r),
        })
        .collect();
    for id in [
        "a/up.json",
        "a/abs.json",
        "a/tr.json",
        "a/link.json",
        "a/through.json",
    ] {
        let e = err(by_id[id]);
        assert!(e.message.contains("refused"), "{id}: {}", e.message);
        let (text, _) = spanned(e);
        assert!(
            text.contains(".diff") || text.contains("secret") || text.contains("/etc"),
            "{id}: {text}"
        );
    }
    assert_eq!(ok(by_id["a/fine.json"]).patch, b"diff --git a/x b/x\n");
}

/// An error in a long JSONL line (a whole patch on it) shows a window
/// around the mistake, not the line.
#[test]
fn an_error_in_a_long_line_shows_a_window_around_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let patch = "+x\n".repeat(300).replace('\n', "\\n");
    let line = format!(
        "{{\"instance_id\": \"calc-1\", \"model_name_or_path\": \"m\", \"model_patch\": \"{patch}\", \"extra\": 1,}}\n"
    );
    write(dir.path(), "preds.jsonl", &line);
    let results = load_dir(dir.path());
    let err = results[0].as_ref().expect_err("a trailing comma");
    let shown = err.src.as_ref().expect("a source").inner();
    assert!(shown.len() < 400, "{} bytes shown: {shown}", shown.len());
    let span = err.span.expect("a span");
    let at = &shown[span.offset()..span.offset() + span.len().max(1)];
    assert!(line.contains(at.trim_matches('…')), "{at:?} in {shown}");
}
