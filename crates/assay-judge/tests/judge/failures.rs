//! Transport and HTTP failures: what is retried, how long the client waits
//! (observed through the injected sleeper), and what is returned at the end.

use std::num::NonZeroU32;
use std::time::{Duration, SystemTime};

use assay_judge::{Api, ErrorKind, InfraFailure, JudgeError, Labels};
use wiremock::ResponseTemplate;

use crate::support::*;

fn good(api: Api, labels: &Labels) -> ResponseTemplate {
    let label = labels.get(0).expect("one label").to_string();
    let answer = serde_json::json!({ "reviews": { label: review(4, "") } });
    ok(api, &answer, 100, 10)
}

fn one() -> Labels {
    Labels::for_task(1, "t", 1)
}

#[tokio::test]
async fn server_errors_are_retried_with_growing_backoff() {
    for api in [Api::Openai, Api::Anthropic] {
        let responses = vec![
            ResponseTemplate::new(503),
            ResponseTemplate::new(502),
            good(api, &one()),
        ];
        let rig = Rig::new(api, Sequence::new(responses)).await;

        let reading = rig.review_single(&one()).await.expect("third time lucky");

        assert_eq!(rig.requests_seen().await, 3);
        assert_eq!(reading.attempts, 3);
        assert_eq!(reading.retried_because.len(), 2);
        assert!(reading.retried_because[0].contains("HTTP 503"));
        // backoff_s = 0.5: retry 1 waits in [0.25, 0.5], retry 2 in [0.5, 1.0].
        let secs: Vec<f64> = rig
            .sleeper
            .waits()
            .iter()
            .map(Duration::as_secs_f64)
            .collect();
        assert_eq!(secs.len(), 2);
        assert!((0.25..=0.5).contains(&secs[0]), "{secs:?}");
        assert!((0.5..=1.0).contains(&secs[1]), "{secs:?}");
    }
}

#[tokio::test]
async fn retry_after_in_seconds_replaces_the_backoff() {
    let responses = vec![
        ResponseTemplate::new(429).insert_header("retry-after", "7"),
        good(Api::Openai, &one()),
    ];
    let rig = Rig::new(Api::Openai, Sequence::new(responses)).await;

    let reading = rig.review_single(&one()).await.expect("a reading");

    assert_eq!(reading.attempts, 2);
    assert_eq!(rig.requests_seen().await, 2);
    assert_eq!(rig.sleeper.waits(), [Duration::from_secs(7)]);
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_honoured_and_capped() {
    let soon = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(8));
    let responses = vec![
        ResponseTemplate::new(429).insert_header("retry-after", soon.as_str()),
        ResponseTemplate::new(503).insert_header("retry-after", "3600"),
        good(Api::Anthropic, &one()),
    ];
    let rig = Rig::new(Api::Anthropic, Sequence::new(responses)).await;

    rig.review_single(&one()).await.expect("a reading");

    let waits = rig.sleeper.waits();
    assert_eq!(waits.len(), 2);
    // The date has one-second resolution: 8 s ahead reads as 7 to 8 s
    // (less only if this test stalls for seconds).
    assert!((5.0..=8.0).contains(&waits[0].as_secs_f64()), "{waits:?}");
    assert_eq!(waits[1], Duration::from_secs(10), "capped at backoff_max_s");
}

#[tokio::test]
async fn persistent_server_errors_become_an_infrastructure_error() {
    let failing = ResponseTemplate::new(500).set_body_string("overloaded");
    let rig = Rig::new(Api::Openai, failing).await;

    let err = rig.review_single(&one()).await.expect_err("no reading");

    assert_eq!(err.kind(), ErrorKind::Infrastructure);
    assert_eq!(err.attempts(), 3);
    assert_eq!(rig.requests_seen().await, 3);
    assert_eq!(
        rig.sleeper.waits().len(),
        2,
        "no wait after the last attempt"
    );
    match err {
        JudgeError::Infrastructure {
            last: InfraFailure::Server { status, body },
            ..
        } => assert_eq!((status, body.as_str()), (500, "overloaded")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn connection_refused_is_retried_then_an_infrastructure_error() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let rig = Rig::with(Api::Openai, ResponseTemplate::new(500), |s| {
        s.base_url = format!("http://127.0.0.1:{port}/v1");
    })
    .await;

    let err = rig.review_single(&one()).await.expect_err("no server");

    assert_eq!(err.kind(), ErrorKind::Infrastructure);
    assert_eq!(err.attempts(), 3);
    assert_eq!(rig.sleeper.waits().len(), 2);
    assert!(
        matches!(
            &err,
            JudgeError::Infrastructure {
                last: InfraFailure::Connect(_),
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_server_slower_than_the_timeout_is_retried_then_an_infrastructure_error() {
    let slow = good(Api::Openai, &one()).set_delay(Duration::from_secs(5));
    let rig = Rig::with(Api::Openai, slow, |s| {
        s.timeout_s = 0.2;
        s.max_attempts = NonZeroU32::new(2).expect("2 > 0");
    })
    .await;

    let err = rig.review_single(&one()).await.expect_err("too slow");

    assert!(
        matches!(
            &err,
            JudgeError::Infrastructure {
                attempts: 2,
                last: InfraFailure::Timeout,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(rig.requests_seen().await, 2);
}

#[tokio::test]
async fn a_bad_request_is_not_retried() {
    let rejected = ResponseTemplate::new(400).set_body_string("{\"error\":\"unknown model\"}");
    let rig = Rig::new(Api::Openai, rejected).await;

    let err = rig.review_single(&one()).await.expect_err("rejected");

    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(
        matches!(&err, JudgeError::Rejected { status: 400, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("unknown model"));
    assert_eq!(rig.requests_seen().await, 1);
    assert!(rig.sleeper.waits().is_empty());
}

#[tokio::test]
async fn an_unset_key_variable_fails_before_any_request() {
    const UNSET: &str = "ASSAY_JUDGE_TEST_SURELY_UNSET_9F3K";
    let rig = Rig::with(Api::Anthropic, ResponseTemplate::new(500), |s| {
        s.api_key_env = Some(UNSET.into());
    })
    .await;

    let err = rig.review_single(&one()).await.expect_err("no key");

    assert_eq!(err.kind(), ErrorKind::Configuration);
    let shown = err.to_string();
    assert!(
        shown.contains(&format!("{UNSET} that should hold the API key is not set")),
        "{shown}"
    );
    assert_eq!(rig.requests_seen().await, 0);
}
