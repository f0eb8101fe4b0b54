//! The concurrency limit, measured at the server: a hand-written HTTP/1.1
//! server on loopback counts the requests it holds at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use assay_judge::{Api, Judge, Labels, ReviewInput, Settings};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::*;

#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    peak: AtomicUsize,
    total: AtomicUsize,
}

/// Reads one request (headers, then `content-length` bytes of body).
async fn read_request(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(buf.split_off(header_end))
}

/// Serves OpenAI-format answers after `delay`, one connection per task.
async fn slow_server(delay: Duration, gauge: Arc<Gauge>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let gauge = gauge.clone();
            tokio::spawn(async move {
                while let Some(body) = read_request(&mut stream).await {
                    let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
                    gauge.peak.fetch_max(now, Ordering::SeqCst);
                    gauge.total.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    let request: serde_json::Value =
                        serde_json::from_slice(&body).unwrap_or_default();
                    let label = asked_labels(Api::Openai, &request)
                        .pop()
                        .unwrap_or_default();
                    let answer = json!({ "reviews": { label: review(5, "") } }).to_string();
                    let reply = json!({
                        "choices": [{"finish_reason": "stop", "message": {"content": answer}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                    })
                    .to_string();
                    gauge.now.fetch_sub(1, Ordering::SeqCst);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        reply.len()
                    );
                    if stream.write_all(head.as_bytes()).await.is_err()
                        || stream.write_all(reply.as_bytes()).await.is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn clones_share_one_concurrency_limit() {
    let gauge = Arc::new(Gauge::default());
    let base = slow_server(Duration::from_millis(300), gauge.clone()).await;
    let mut s = Settings::new("limited", Api::Openai, &base, "m");
    s.concurrency = std::num::NonZeroUsize::new(2).expect("2 > 0");
    let judge = Judge::new(s).expect("valid");
    let labels = Labels::for_task(1, "t", 1);

    let mut handles = Vec::new();
    for _ in 0..3 {
        let clone = judge.clone();
        for _ in 0..2 {
            let (clone, labels) = (clone.clone(), labels.clone());
            handles.push(tokio::spawn(async move {
                let input = ReviewInput::single(task(), candidate(0, PATCH_A));
                clone.review(&input, &labels, 0).await
            }));
        }
    }
    for h in handles {
        h.await.expect("joined").expect("a reading");
    }

    assert_eq!(gauge.total.load(Ordering::SeqCst), 6);
    assert_eq!(
        gauge.peak.load(Ordering::SeqCst),
        2,
        "never more than 2 in flight, and 2 reached"
    );
}
