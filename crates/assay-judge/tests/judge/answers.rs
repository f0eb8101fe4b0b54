//! What the judge answers: garbage is retried and never scored; valid
//! answers with weak quotes are scored and flagged.

use assay_judge::{AnswerProblem, Api, Criterion, ErrorKind, JudgeError, Labels};
use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use crate::support::*;

fn one() -> Labels {
    Labels::for_task(2, "t", 1)
}

/// An answer for the single label of [`one`], reviewed as `review`.
fn single_answer(review: Value) -> Value {
    json!({ "reviews": { one().get(0).expect("one label").to_string(): review } })
}

#[tokio::test]
async fn bad_json_then_good_json_is_one_reading_with_usage_summed() {
    let answer = single_answer(review(5, ""));
    for api in [Api::Openai, Api::Anthropic] {
        // Anthropic's garbage is a reply without the tool call.
        let garbage = match api {
            Api::Openai => ok_text(api, "Sure! My review: {\"reviews\": ", &answer, 900, 40),
            Api::Anthropic => ResponseTemplate::new(200).set_body_json(json!({
                "content": [{"type": "text", "text": "Here is my review."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 900, "output_tokens": 40},
            })),
        };
        let responses = vec![garbage, ok(api, &answer, 1000, 200)];
        let rig = Rig::new(api, Sequence::new(responses)).await;

        let reading = rig
            .review_single(&one())
            .await
            .expect("second answer counts");

        assert_eq!(rig.requests_seen().await, 2);
        assert_eq!(reading.attempts, 2);
        let usage = (reading.usage.input_tokens, reading.usage.output_tokens);
        assert_eq!(usage, (1900, 240));
        assert_eq!(reading.retried_because.len(), 1);
        assert!(
            rig.sleeper.waits().is_empty(),
            "a bad answer is retried at once"
        );
        assert_eq!(reading.reviews[0].score(Criterion::Overall), Some(5));
    }
}

#[tokio::test]
async fn always_bad_json_is_a_judge_error_and_no_score() {
    let garbage = ok_text(Api::Openai, "{ not json", &json!({}), 10, 5);
    let rig = Rig::new(Api::Openai, garbage).await;

    let err = rig.review_single(&one()).await.expect_err("never usable");

    assert_eq!(err.kind(), ErrorKind::Answer);
    assert_eq!(rig.requests_seen().await, 3);
    assert_eq!(err.attempts(), 3);
    assert_eq!(
        err.usage().input_tokens,
        30,
        "spent tokens are still counted"
    );
    assert!(
        matches!(
            &err,
            JudgeError::Answer {
                last: AnswerProblem::NotJson(_),
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn out_of_range_scores_are_rejected_not_clamped() {
    let mut r = review(4, "");
    r["overall"] = entry(9, "");
    let rig = Rig::new(Api::Anthropic, ok(Api::Anthropic, &single_answer(r), 10, 5)).await;

    let err = rig.review_single(&one()).await.expect_err("9 is no score");

    assert!(
        matches!(&err, JudgeError::Answer { last: AnswerProblem::Invalid(why), .. } if why.contains("overall")),
        "{err}"
    );
}

#[tokio::test]
async fn a_low_score_without_a_quote_is_flagged() {
    let mut r = review(5, "");
    r["scope"] = entry(2, "");
    let rig = Rig::new(Api::Openai, ok(Api::Openai, &single_answer(r), 10, 5)).await;

    let reading = rig.review_single(&one()).await.expect("still a reading");

    assert_eq!(reading.missing_quotes.len(), 1);
    assert_eq!(reading.missing_quotes[0].criterion, Criterion::Scope);
    assert_eq!(reading.missing_quotes[0].slot, 0);
    assert!(reading.unverified_quotes.is_empty());
    assert_eq!(reading.reviews[0].score(Criterion::Scope), Some(2));
}

#[tokio::test]
async fn a_quote_that_is_not_in_the_patch_is_flagged() {
    let labels = Labels::for_task(2, "t", 2);
    let (la, lb) = (labels.get(0).expect("two"), labels.get(1).expect("two"));
    // A's correctness quotes A (with diff markers), A's simplicity quotes B.
    let mut a = review(5, "");
    a["correctness"] = entry(3, "+    if b == 0 {\n+        return None;");
    a["simplicity"] = entry(2, "a.checked_div(b)");
    let mut b = review(5, "");
    b["cleanliness"] = entry(2, "a.checked_div(b) // println!(\"debug\")");
    b["overall"] = entry(3, "return b.checked_div(a);");
    let answer = json!({
        "reviews": { la.to_string(): a, lb.to_string(): b },
        "preferred": la.to_string(),
    });
    let rig = Rig::new(Api::Anthropic, ok(Api::Anthropic, &answer, 10, 5)).await;

    let reading = rig.review_pair(&labels).await.expect("a reading");

    let flagged: Vec<(usize, Criterion)> = reading
        .unverified_quotes
        .iter()
        .map(|f| (f.slot, f.criterion))
        .collect();
    assert_eq!(
        flagged,
        [(0, Criterion::Simplicity), (1, Criterion::Overall)]
    );
    assert!(reading.missing_quotes.is_empty());
    assert_eq!(reading.preferred, Some(0));
}
