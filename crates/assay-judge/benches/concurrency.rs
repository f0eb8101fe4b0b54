//! Review throughput against the concurrency limit: a loopback server
//! (wiremock) answers every request after a fixed 20 ms, and each iteration
//! runs 32 reviews at once through clones of one `Judge` with
//! `concurrency = 1, 4, 16`. Ideal times are 32 × 20 ms, 8 × 20 ms and
//! 2 × 20 ms, so the ratios against concurrency 1 should approach 4 and 16;
//! what falls short is the client's own overhead (prompt building, JSON,
//! validation, HTTP) on a 2-core machine.
//!
//! Run: `cargo bench -p assay-judge --bench concurrency`.

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use assay_judge::{Api, Candidate, Grading, Judge, Labels, ReviewInput, Settings, TaskText};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const DELAY: Duration = Duration::from_millis(20);
const REVIEWS: usize = 32;

/// Gives every label the request asks about a valid review.
fn answer(request: &Request) -> ResponseTemplate {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
    let labels =
        body["response_format"]["json_schema"]["schema"]["properties"]["reviews"]["required"]
            .as_array()
            .cloned()
            .unwrap_or_default();
    let score = json!({"rationale": "fine", "quote": "", "score": 5});
    let review = json!({
        "correctness": score, "scope": score, "consistency": score,
        "simplicity": score, "cleanliness": score, "overall": score,
    });
    let mut reviews = serde_json::Map::new();
    for l in labels.iter().filter_map(Value::as_str) {
        reviews.insert(l.to_owned(), review.clone());
    }
    let content = json!({ "reviews": reviews }).to_string();
    ResponseTemplate::new(200)
        .set_body_json(json!({
            "choices": [{"finish_reason": "stop", "message": {"content": content}}],
            "usage": {"prompt_tokens": 1500, "completion_tokens": 300},
        }))
        .set_delay(DELAY)
}

fn input() -> ReviewInput {
    let patch = "diff --git a/src/lib.rs b/src/lib.rs\n@@ -1,3 +1,5 @@\n fn f() {\n+    g();\n }\n"
        .repeat(20);
    ReviewInput::single(
        TaskText {
            problem_statement: "f must call g.".repeat(30),
            interface_spec: None,
            gold_patch: patch.clone(),
        },
        Candidate {
            slot: 0,
            patch,
            grading: Grading {
                verdict: "resolved".into(),
                failing_tests: vec![],
            },
        },
    )
}

async fn batch(judge: &Judge, input: &Arc<ReviewInput>, labels: &Arc<Labels>) {
    let handles: Vec<_> = (0..REVIEWS)
        .map(|i| {
            let (judge, input, labels) = (judge.clone(), input.clone(), labels.clone());
            tokio::spawn(async move { judge.review(&input, &labels, i as u32).await })
        })
        .collect();
    for h in handles {
        let reading = h.await.expect("joined").expect("a reading");
        black_box(reading);
    }
}

fn throughput(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let server = rt.block_on(async {
        let server = MockServer::builder()
            .disable_request_recording()
            .start()
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(answer)
            .mount(&server)
            .await;
        server
    });
    let input = Arc::new(input());
    let labels = Arc::new(Labels::for_task(1, "bench", 1));

    let mut group = c.benchmark_group("reviews_32_at_20ms");
    group.throughput(Throughput::Elements(REVIEWS as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    for concurrency in [1usize, 4, 16] {
        let mut s = Settings::new("bench", Api::Openai, &format!("{}/v1", server.uri()), "m");
        s.concurrency = NonZeroUsize::new(concurrency).expect("positive");
        let judge = Judge::new(s).expect("valid settings");
        group.bench_function(format!("concurrency_{concurrency}"), |b| {
            b.iter(|| rt.block_on(batch(&judge, &input, &labels)));
        });
    }
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
