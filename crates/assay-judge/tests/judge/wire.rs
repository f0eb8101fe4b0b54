//! What goes over the wire: paths, headers, bodies, blinding, both orders.

use assay_judge::{Api, Labels, Mode, ReviewInput, Settings, answer_schema};
use serde_json::Value;

use crate::support::*;

/// A rig whose server reviews whatever it is asked with all fives.
async fn echo(api: Api, tweak: impl FnOnce(&mut Settings)) -> Rig {
    Rig::with(api, EchoJudge::new(api, 5, ""), tweak).await
}

fn header<'r>(r: &'r wiremock::Request, name: &str) -> Option<&'r str> {
    r.headers.get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn openai_request_has_the_path_bearer_key_model_and_strict_schema() {
    let rig = echo(Api::Openai, |s| s.temperature = 0.25).await;
    let labels = Labels::for_task(11, "task-1", 1);
    let input = ReviewInput::single(task(), candidate(0, PATCH_A));

    let reading = rig
        .judge
        .review(&input, &labels, 3)
        .await
        .expect("a reading");

    let reqs = requests(&rig.server).await;
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method.as_str(), "POST");
    assert_eq!(r.url.path(), "/v1/chat/completions");
    assert_eq!(
        header(r, "authorization"),
        Some(format!("Bearer {}", key_value()).as_str())
    );
    assert_eq!(header(r, "content-type"), Some("application/json"));
    assert!(r.headers.get("x-api-key").is_none());
    let body: Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(body["model"], "judge-model-1");
    assert_eq!(body["temperature"], 0.25);
    assert_eq!(body["seed"], 3, "the sample index seeds the draw");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["role"], "user");
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["strict"], true);
    assert!(format["json_schema"]["name"].is_string());
    let shown: Vec<_> = labels.iter().collect();
    let expected = serde_json::to_value(answer_schema(&shown)).expect("schema");
    assert_eq!(format["json_schema"]["schema"], expected);
    let sent = blake3::hash(&r.body).to_hex().to_string();
    assert_eq!(
        reading.request_digest, sent,
        "the reading names the request it answers"
    );

    assert_eq!(reading.mode, Mode::Single);
    assert_eq!(reading.sample, 3);
    assert_eq!(reading.attempts, 1);
    assert_eq!(reading.reviews.len(), 1);
    assert_eq!(reading.reviews[0].scores.len(), 6);
    assert_eq!(
        (reading.usage.input_tokens, reading.usage.output_tokens),
        (1000, 200)
    );
}

#[tokio::test]
async fn anthropic_request_has_the_path_headers_and_forced_tool() {
    let rig = echo(Api::Anthropic, |_| {}).await;
    let labels = Labels::for_task(11, "task-1", 2);

    let reading = rig.review_pair(&labels).await.expect("a reading");

    let reqs = requests(&rig.server).await;
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.url.path(), "/v1/messages");
    assert_eq!(header(r, "x-api-key"), Some(key_value().as_str()));
    assert_eq!(header(r, "anthropic-version"), Some("2023-06-01"));
    assert!(r.headers.get("authorization").is_none());
    let body: Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(body["model"], "judge-model-1");
    assert_eq!(body["max_tokens"], 4096);
    assert!(
        body["system"]
            .as_str()
            .is_some_and(|s| s.contains("preferred"))
    );
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["tools"][0]["name"], "submit_review");
    assert_eq!(
        body["tool_choice"],
        serde_json::json!({"type": "tool", "name": "submit_review"})
    );
    let shown: Vec<_> = labels.iter().collect();
    let expected = serde_json::to_value(answer_schema(&shown)).expect("schema");
    assert_eq!(body["tools"][0]["input_schema"], expected);

    assert_eq!(reading.mode, Mode::Pairwise);
    assert_eq!(reading.reviews.len(), 2);
    assert_eq!(
        reading.preferred,
        Some(0),
        "the echo judge prefers the first shown"
    );
}

#[tokio::test]
async fn a_trailing_slash_on_the_base_url_is_tolerated() {
    for api in [Api::Openai, Api::Anthropic] {
        let rig = echo(api, |s| s.base_url.push('/')).await;
        rig.review_single(&Labels::for_task(1, "t", 1))
            .await
            .expect("a reading");
        assert_eq!(requests(&rig.server).await[0].url.path(), endpoint(api));
    }
}

#[tokio::test]
async fn no_key_variable_sends_no_credentials() {
    let rig = echo(Api::Openai, |s| s.api_key_env = None).await;
    rig.review_single(&Labels::for_task(1, "t", 1))
        .await
        .expect("a reading");
    let sent = &requests(&rig.server).await[0];
    assert!(sent.headers.get("authorization").is_none());
}

/// What the caller knows about a session and must never show the judge.
struct SessionMeta {
    agent: &'static str,
    model: &'static str,
    session: &'static str,
    file: &'static str,
    patch: &'static str,
}

const SESSIONS: [SessionMeta; 2] = [
    SessionMeta {
        agent: "zephyr-agent-QX17",
        model: "glm-hidden-MX42",
        session: "sess-ALPHA-9931",
        file: "sessions/zephyr-run-7781.json",
        patch: PATCH_A,
    },
    SessionMeta {
        agent: "corvid-coder-ZZ08",
        model: "sonnet-secret-KQ55",
        session: "sess-BRAVO-4417",
        file: "sessions/corvid-run-1203.jsonl",
        patch: PATCH_B,
    },
];

#[tokio::test]
async fn no_authorship_reaches_any_request_body() {
    for api in [Api::Openai, Api::Anthropic] {
        let rig = echo(api, |_| {}).await;
        let judge = &rig.judge;
        let labels = Labels::for_task(99, "task-blind", SESSIONS.len());
        // The caller's metadata goes as far as the slot order, no further.
        let cands: Vec<_> = SESSIONS
            .iter()
            .enumerate()
            .map(|(slot, m)| candidate(slot, m.patch))
            .collect();
        for c in &cands {
            let input = ReviewInput::single(task(), c.clone());
            judge
                .review(&input, &labels, 0)
                .await
                .expect("a single reading");
        }
        for input in ReviewInput::both_orders(task(), cands[0].clone(), cands[1].clone()) {
            judge
                .review(&input, &labels, 0)
                .await
                .expect("a pair reading");
        }

        let reqs = requests(&rig.server).await;
        assert_eq!(reqs.len(), 4);
        for r in &reqs {
            let raw = String::from_utf8_lossy(&r.body).to_lowercase();
            for m in &SESSIONS {
                for name in [m.agent, m.model, m.session, m.file] {
                    assert!(!raw.contains(&name.to_lowercase()), "{api:?} leaked {name}");
                }
            }
            for (k, v) in &r.headers {
                let v = v.to_str().unwrap_or_default().to_lowercase();
                assert!(
                    !SESSIONS.iter().any(|m| v.contains(&m.agent.to_lowercase())),
                    "{k}"
                );
            }
        }
        // The patch text itself goes as is.
        let first: Value = serde_json::from_slice(&reqs[0].body).expect("json");
        assert!(user_text(api, &first).contains(PATCH_A.trim_end()));
    }
}

/// The user message of a recorded request.
fn user_text(api: Api, body: &Value) -> String {
    let i = match api {
        Api::Openai => 1,
        Api::Anthropic => 0,
    };
    body["messages"][i]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn pairwise_reads_both_orders_with_labels_fixed_to_patches() {
    for api in [Api::Openai, Api::Anthropic] {
        let rig = echo(api, |_| {}).await;
        let judge = &rig.judge;
        let labels = Labels::for_task(5, "task-pair", 2);
        let (la, lb) = (
            labels.get(0).expect("slot 0"),
            labels.get(1).expect("slot 1"),
        );
        let [ab, ba] =
            ReviewInput::both_orders(task(), candidate(0, PATCH_A), candidate(1, PATCH_B));

        let first = judge.review(&ab, &labels, 0).await.expect("order AB");
        let second = judge.review(&ba, &labels, 0).await.expect("order BA");

        let bodies = bodies(&rig.server).await;
        let (u1, u2) = (user_text(api, &bodies[0]), user_text(api, &bodies[1]));
        let at = |u: &str, l: &assay_judge::Label| u.find(&format!("## Patch {l}\n"));
        assert!(
            at(&u1, la) < at(&u1, lb),
            "A shown first in the first reading"
        );
        assert!(at(&u2, lb) < at(&u2, la), "B shown first in the second");
        // A's text sits under A's label in both.
        for u in [&u1, &u2] {
            let a_section = &u[at(u, la).expect("A shown")..];
            let next = a_section[3..]
                .find("## ")
                .map_or(a_section.len(), |i| i + 3);
            assert!(a_section[..next].contains("return None;"));
        }
        assert_eq!(
            asked_labels(api, &bodies[0]),
            [la.to_string(), lb.to_string()]
        );
        assert_eq!(
            asked_labels(api, &bodies[1]),
            [lb.to_string(), la.to_string()]
        );
        // Readings report slots in the order shown; the biased echo judge
        // prefers position 1 both times, i.e. a different patch each time.
        assert_eq!(
            first.reviews.iter().map(|r| r.slot).collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(
            second.reviews.iter().map(|r| r.slot).collect::<Vec<_>>(),
            [1, 0]
        );
        assert_eq!((first.preferred, second.preferred), (Some(0), Some(1)));
    }
}
