//! The API key is sent, and shown nowhere else: not in errors (even when the
//! server echoes it), not in `Debug` output, not in readings.

use assay_judge::{Api, ErrorKind, JudgeError, Labels};
use wiremock::{Request, ResponseTemplate};

use crate::support::*;

/// Answers `status` with a body that repeats the credentials it was sent.
struct Echo(u16);

impl wiremock::Respond for Echo {
    fn respond(&self, r: &Request) -> ResponseTemplate {
        let sent: Vec<String> = ["authorization", "x-api-key"]
            .iter()
            .filter_map(|h| {
                r.headers
                    .get(*h)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            })
            .collect();
        ResponseTemplate::new(self.0).set_body_string(format!(
            "{{\"error\":\"invalid key: {}\"}}",
            sent.join(", ")
        ))
    }
}

fn one() -> Labels {
    Labels::for_task(1, "t", 1)
}

fn assert_clean(what: &str, text: &str) {
    let key = key_value();
    assert!(!text.contains(&key), "the key leaked into {what}: {text}");
}

#[tokio::test]
async fn a_401_is_not_retried_and_names_the_variable_never_the_value() {
    for api in [Api::Openai, Api::Anthropic] {
        let rig = Rig::new(api, Echo(401)).await;

        let err = rig.review_single(&one()).await.expect_err("401");

        assert_eq!(rig.requests_seen().await, 1, "auth errors are not retried");
        assert!(rig.sleeper.waits().is_empty());
        assert_eq!(err.kind(), ErrorKind::Configuration);
        assert!(matches!(&err, JudgeError::Auth { status: 401, .. }));
        let shown = err.to_string();
        assert!(
            shown.contains("check the variable named CARGO_MANIFEST_DIR"),
            "{shown}"
        );
        assert!(
            shown.contains("invalid key: ") && shown.contains("[redacted]"),
            "{shown}"
        );
        assert_clean("the error's Display", &shown);
        assert_clean("the error's Debug", &format!("{err:?}"));
    }
}

#[tokio::test]
async fn an_echoed_key_in_a_retried_failure_is_redacted() {
    let rig = Rig::new(Api::Anthropic, Echo(503)).await;

    let err = rig.review_single(&one()).await.expect_err("503s");

    assert_eq!(err.kind(), ErrorKind::Infrastructure);
    assert_eq!(rig.requests_seen().await, 3);
    assert!(err.to_string().contains("[redacted]"));
    assert_clean("the error's Display", &err.to_string());
    assert_clean("the error's Debug", &format!("{err:?}"));
}

#[tokio::test]
async fn the_key_is_in_no_debug_output_or_reading() {
    let rig = Rig::new(Api::Openai, EchoJudge::new(Api::Openai, 5, "")).await;

    let reading = rig.review_single(&one()).await.expect("reading");

    // It was sent …
    let sent = &requests(&rig.server).await[0];
    let bearer = sent
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    assert_eq!(bearer, Some(format!("Bearer {}", key_value()).as_str()));
    // … and is nowhere else.
    let settings = rig.judge.settings();
    assert_clean("the judge's Debug", &format!("{:?}", rig.judge));
    assert_clean("the settings' Debug", &format!("{settings:?}"));
    assert_clean("the reading's Debug", &format!("{reading:?}"));
    let json = serde_json::to_string(&reading).expect("json");
    assert_clean("the reading's JSON", &json);
    assert_clean("the key part", &format!("{:?}", settings.key(0)));
}
