//! A loopback judge server (wiremock) that speaks both wire formats, and the
//! inputs the tests review.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assay_judge::{
    Api, Candidate, Grading, Judge, JudgeError, Labels, Reading, ReviewInput, Settings,
    SleepFuture, Sleeper, TaskText,
};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The key's variable. Cargo sets it for every test process, so no test has
/// to mutate the environment (`set_var` is unsafe in a threaded test binary);
/// its value is distinctive enough to grep for.
pub(crate) const KEY_VAR: &str = "CARGO_MANIFEST_DIR";

pub(crate) fn key_value() -> String {
    std::env::var(KEY_VAR).expect("cargo sets CARGO_MANIFEST_DIR for tests")
}

pub(crate) const PATCH_A: &str = "\
diff --git a/src/ratio.rs b/src/ratio.rs
--- a/src/ratio.rs
+++ b/src/ratio.rs
@@ -1,3 +1,6 @@
 pub fn ratio(a: u32, b: u32) -> Option<u32> {
+    if b == 0 {
+        return None;
+    }
     Some(a / b)
 }
";

pub(crate) const PATCH_B: &str = "\
diff --git a/src/ratio.rs b/src/ratio.rs
--- a/src/ratio.rs
+++ b/src/ratio.rs
@@ -1,3 +1,3 @@
 pub fn ratio(a: u32, b: u32) -> Option<u32> {
-    Some(a / b)
+    a.checked_div(b) // println!(\"debug\")
 }
";

pub(crate) fn task() -> TaskText {
    TaskText {
        problem_statement: "`ratio(1, 0)` panics instead of returning None.".into(),
        interface_spec: Some("pub fn ratio(a: u32, b: u32) -> Option<u32>".into()),
        gold_patch: "+    a.checked_div(b)\n".into(),
    }
}

pub(crate) fn candidate(slot: usize, patch: &str) -> Candidate {
    Candidate {
        slot,
        patch: patch.into(),
        grading: Grading {
            verdict: "resolved".into(),
            failing_tests: vec![],
        },
    }
}

/// Settings pointing at `server`, with fast backoff (the sleeper records it
/// anyway) and three attempts.
pub(crate) fn settings(api: Api, server: &MockServer) -> Settings {
    let mut s = Settings::new(
        "test-judge",
        api,
        &format!("{}/v1", server.uri()),
        "judge-model-1",
    );
    s.api_key_env = Some(KEY_VAR.into());
    s.max_attempts = std::num::NonZeroU32::new(3).expect("3 > 0");
    s.backoff_s = 0.5;
    s.backoff_max_s = 10.0;
    s
}

pub(crate) fn endpoint(api: Api) -> &'static str {
    match api {
        Api::Openai => "/v1/chat/completions",
        Api::Anthropic => "/v1/messages",
    }
}

/// One score entry.
pub(crate) fn entry(score: u8, quote: &str) -> Value {
    json!({"rationale": format!("rated {score}"), "quote": quote, "score": score})
}

/// A review giving every criterion `score` with `quote`.
pub(crate) fn review(score: u8, quote: &str) -> Value {
    let e = entry(score, quote);
    json!({
        "correctness": e, "scope": e, "consistency": e,
        "simplicity": e, "cleanliness": e, "overall": e,
    })
}

/// The labels a request asks about, read from its schema.
pub(crate) fn asked_labels(api: Api, body: &Value) -> Vec<String> {
    let schema = match api {
        Api::Openai => &body["response_format"]["json_schema"]["schema"],
        Api::Anthropic => &body["tools"][0]["input_schema"],
    };
    schema["properties"]["reviews"]["required"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A 200 response carrying `answer` in `api`'s format, with token usage.
pub(crate) fn ok(
    api: Api,
    answer: &Value,
    input_tokens: u64,
    output_tokens: u64,
) -> ResponseTemplate {
    ok_text(
        api,
        &answer.to_string(),
        answer,
        input_tokens,
        output_tokens,
    )
}

/// Like [`ok`], but the OpenAI content is `text` as given (to send garbage).
pub(crate) fn ok_text(
    api: Api,
    text: &str,
    answer: &Value,
    input: u64,
    output: u64,
) -> ResponseTemplate {
    let body = match api {
        Api::Openai => json!({
            "id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": input, "completion_tokens": output},
        }),
        Api::Anthropic => json!({
            "id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "submit_review", "input": answer}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": input, "output_tokens": output},
        }),
    };
    ResponseTemplate::new(200).set_body_json(body)
}

/// A judge that reads the labels from each request and gives every patch
/// `score` with `quote`, preferring whichever patch was shown FIRST (a
/// position-biased reviewer, which both orders expose).
pub(crate) struct EchoJudge {
    pub(crate) api: Api,
    pub(crate) score: u8,
    pub(crate) quote: String,
}

impl EchoJudge {
    pub(crate) fn new(api: Api, score: u8, quote: &str) -> EchoJudge {
        EchoJudge {
            api,
            score,
            quote: quote.to_owned(),
        }
    }
}

impl Respond for EchoJudge {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let labels = asked_labels(self.api, &body);
        let mut reviews = serde_json::Map::new();
        for l in &labels {
            reviews.insert(l.clone(), review(self.score, &self.quote));
        }
        let mut answer = json!({ "reviews": reviews });
        if labels.len() > 1 {
            answer["preferred"] = json!(labels[0]);
        }
        ok(self.api, &answer, 1000, 200)
    }
}

/// Answers with the given responses in turn, repeating the last.
pub(crate) struct Sequence(Mutex<VecDeque<ResponseTemplate>>);

impl Sequence {
    pub(crate) fn new(responses: Vec<ResponseTemplate>) -> Sequence {
        Sequence(Mutex::new(responses.into()))
    }
}

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let mut q = self.0.lock().expect("not poisoned");
        if q.len() > 1 {
            q.pop_front().expect("non-empty")
        } else {
            q.front()
                .cloned()
                .unwrap_or_else(|| ResponseTemplate::new(500))
        }
    }
}

pub(crate) async fn mount(server: &MockServer, api: Api, responder: impl Respond + 'static) {
    Mock::given(method("POST"))
        .and(path(endpoint(api)))
        .respond_with(responder)
        .mount(server)
        .await;
}

pub(crate) async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.expect("recording is on")
}

pub(crate) async fn bodies(server: &MockServer) -> Vec<Value> {
    requests(server)
        .await
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("request bodies are JSON"))
        .collect()
}

/// Records each requested wait and returns at once.
#[derive(Default)]
pub(crate) struct RecordingSleeper {
    pub(crate) waits: Mutex<Vec<Duration>>,
}

impl RecordingSleeper {
    pub(crate) fn waits(&self) -> Vec<Duration> {
        self.waits.lock().expect("not poisoned").clone()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, duration: Duration) -> SleepFuture {
        self.waits.lock().expect("not poisoned").push(duration);
        Box::pin(async {})
    }
}

pub(crate) fn recording() -> Arc<RecordingSleeper> {
    Arc::new(RecordingSleeper::default())
}

/// A server answering with `responder`, and a judge on it whose waits are
/// recorded.
pub(crate) struct Rig {
    pub(crate) server: MockServer,
    pub(crate) judge: Judge,
    pub(crate) sleeper: Arc<RecordingSleeper>,
}

impl Rig {
    pub(crate) async fn new(api: Api, responder: impl Respond + 'static) -> Rig {
        Rig::with(api, responder, |_| {}).await
    }

    /// Like [`Rig::new`], with the settings adjusted by `tweak`.
    pub(crate) async fn with(
        api: Api,
        responder: impl Respond + 'static,
        tweak: impl FnOnce(&mut Settings),
    ) -> Rig {
        let server = MockServer::start().await;
        mount(&server, api, responder).await;
        let mut s = settings(api, &server);
        tweak(&mut s);
        let sleeper = recording();
        let judge = Judge::with_sleeper(s, sleeper.clone()).expect("valid settings");
        Rig {
            server,
            judge,
            sleeper,
        }
    }

    /// Reviews [`PATCH_A`] alone in slot 0.
    pub(crate) async fn review_single(&self, labels: &Labels) -> Result<Reading, JudgeError> {
        let input = ReviewInput::single(task(), candidate(0, PATCH_A));
        self.judge.review(&input, labels, 0).await
    }

    /// Reviews [`PATCH_A`] (slot 0, shown first) against [`PATCH_B`] (slot 1).
    pub(crate) async fn review_pair(&self, labels: &Labels) -> Result<Reading, JudgeError> {
        let input = ReviewInput::pair(task(), candidate(0, PATCH_A), candidate(1, PATCH_B));
        self.judge.review(&input, labels, 0).await
    }

    pub(crate) async fn requests_seen(&self) -> usize {
        requests(&self.server).await.len()
    }
}
