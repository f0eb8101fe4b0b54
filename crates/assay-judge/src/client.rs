//! The HTTP client: one [`Judge`] per `[[judge]]`, cheap to clone, safe to
//! call from many tasks at once.
//!
//! - **Concurrency.** Every clone shares one semaphore of
//!   `settings.concurrency` permits; a permit is held for one HTTP exchange
//!   only, never while backing off.
//! - **Retries.** Connect errors, timeouts, 408, 429 and 5xx back off and
//!   retry; an unusable answer (not JSON, off-schema, truncated, refused) is
//!   retried at once. Every attempt counts toward `max_attempts`. Other 4xx
//!   are returned at once (401/403 as [`JudgeError::Auth`], naming the key's
//!   variable).
//! - **Backoff.** Before retry `k` the client waits a random time in
//!   `[d/2, d]`, `d = min(backoff_s · 2^(k-1), backoff_max_s)`. A
//!   `retry-after-ms`, or `retry-after` header (seconds or HTTP date) replaces
//!   it, capped at `backoff_max_s`. Waiting goes through a [`Sleeper`], so
//!   tests can observe the delays without spending them.
//! - **The key** is read from its variable when a review starts, lives in
//!   that call's stack only, is sent in a header marked sensitive, and is
//!   redacted from any server text kept in an error.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use tokio::sync::Semaphore;

use crate::error::{InfraFailure, JudgeError, redact};
use crate::input::ReviewInput;
use crate::labels::Labels;
use crate::prompt::build_prompt;
use crate::reading::{AnswerProblem, Reading, Usage, check_answer};
use crate::settings::{Api, Settings};
use crate::wire::{self, ANTHROPIC_VERSION};

/// A future that completes after a delay.
pub type SleepFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// How the client waits between attempts.
pub trait Sleeper: Send + Sync {
    fn sleep(&self, duration: Duration) -> SleepFuture;
}

/// Waits on the tokio timer.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> SleepFuture {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// The API key, for the duration of one review. No `Display`; `Debug` hides it.
struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// A client for one judge. Clones share the connection pool and the
/// concurrency limit.
#[derive(Clone)]
pub struct Judge {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Settings,
    http: reqwest::Client,
    permits: Semaphore,
    sleeper: Arc<dyn Sleeper>,
}

impl fmt::Debug for Judge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Judge")
            .field("settings", &self.inner.settings)
            .field("free_permits", &self.inner.permits.available_permits())
            .finish_non_exhaustive()
    }
}

/// What one HTTP exchange came to.
enum Exchange {
    Answered(wire::Answer),
    Transient {
        failure: InfraFailure,
        retry_after: Option<Duration>,
    },
    Fatal(JudgeError),
}

/// Why an attempt did not give a reading.
enum Failure {
    Infra(InfraFailure, Option<Duration>),
    Answer(AnswerProblem),
}

impl Judge {
    pub fn new(settings: Settings) -> Result<Judge, JudgeError> {
        Judge::with_sleeper(settings, Arc::new(TokioSleeper))
    }

    /// A judge whose backoff waits go through `sleeper`.
    pub fn with_sleeper(
        settings: Settings,
        sleeper: Arc<dyn Sleeper>,
    ) -> Result<Judge, JudgeError> {
        settings.validate()?;
        let http = reqwest::Client::builder()
            .timeout(settings.timeout())
            .build()
            .map_err(|e| JudgeError::Setup {
                judge: settings.name.clone(),
                detail: error_chain(&e),
            })?;
        Ok(Judge {
            inner: Arc::new(Inner {
                permits: Semaphore::new(settings.concurrency.get()),
                settings,
                http,
                sleeper,
            }),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// One reading of `input` (sample index `sample`), retried as the module
    /// docs say.
    pub async fn review(
        &self,
        input: &ReviewInput,
        labels: &Labels,
        sample: u32,
    ) -> Result<Reading, JudgeError> {
        let settings = &self.inner.settings;
        let prompt = build_prompt(input, labels, settings.rubric.as_deref())?;
        let key = self.read_key()?;
        let body = wire::request_body(settings, &prompt, sample);
        let request_digest = blake3::hash(&body).to_hex().to_string();
        let url = settings.endpoint_url();
        let max_attempts = settings.max_attempts.get();
        let mut usage = Usage::default();
        let mut retried_because = Vec::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let failure = match self.exchange(&url, &body, key.as_ref()).await {
                Exchange::Answered(answer) => {
                    usage += answer.usage;
                    let checked = answer.review.and_then(|v| check_answer(&v, &prompt));
                    match checked {
                        Ok(c) => {
                            return Ok(Reading {
                                mode: prompt.mode,
                                sample,
                                reviews: c.reviews,
                                preferred: c.preferred,
                                missing_quotes: c.missing_quotes,
                                unverified_quotes: c.unverified_quotes,
                                usage,
                                attempts: attempt,
                                retried_because,
                                request_digest,
                                answer: answer.text,
                            });
                        }
                        Err(problem) => Failure::Answer(problem),
                    }
                }
                Exchange::Transient {
                    failure,
                    retry_after,
                } => Failure::Infra(failure, retry_after),
                Exchange::Fatal(e) => return Err(e),
            };
            if attempt >= max_attempts {
                let judge = settings.name.clone();
                return Err(match failure {
                    Failure::Infra(last, _) => JudgeError::Infrastructure {
                        judge,
                        attempts: attempt,
                        last,
                        usage,
                    },
                    Failure::Answer(last) => JudgeError::Answer {
                        judge,
                        attempts: attempt,
                        last,
                        usage,
                    },
                });
            }
            let delay = match &failure {
                Failure::Infra(f, retry_after) => {
                    retried_because.push(f.to_string());
                    self.delay_before(attempt, *retry_after)
                }
                Failure::Answer(p) => {
                    retried_because.push(p.to_string());
                    Duration::ZERO
                }
            };
            if !delay.is_zero() {
                self.inner.sleeper.sleep(delay).await;
            }
        }
    }

    fn read_key(&self) -> Result<Option<Secret>, JudgeError> {
        let Some(var) = &self.inner.settings.api_key_env else {
            return Ok(None);
        };
        let missing = |problem| JudgeError::MissingKey {
            judge: self.inner.settings.name.clone(),
            var: var.clone(),
            problem,
        };
        match std::env::var(var) {
            Ok(v) if v.is_empty() => Err(missing("is empty")),
            Ok(v) => Ok(Some(Secret(v))),
            Err(std::env::VarError::NotPresent) => Err(missing("is not set")),
            Err(std::env::VarError::NotUnicode(_)) => Err(missing("is not valid UTF-8")),
        }
    }

    /// The wait before retry number `retry` (1-based).
    fn delay_before(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let s = &self.inner.settings;
        let cap = Duration::from_secs_f64(s.backoff_max_s);
        if let Some(asked) = retry_after {
            return asked.min(cap);
        }
        let exp = 2f64.powi(
            i32::try_from(retry.saturating_sub(1))
                .unwrap_or(i32::MAX)
                .min(60),
        );
        let full = (s.backoff_s * exp).min(s.backoff_max_s);
        Duration::from_secs_f64(full * (0.5 + 0.5 * fastrand::f64())).min(cap)
    }

    async fn exchange(&self, url: &str, body: &[u8], key: Option<&Secret>) -> Exchange {
        let settings = &self.inner.settings;
        let secret = key.map(|k| k.0.as_str());
        let headers = match request_headers(settings, key) {
            Ok(h) => h,
            Err(e) => return Exchange::Fatal(e),
        };
        // The semaphore is never closed, so acquiring cannot fail.
        let permit = self.inner.permits.acquire().await.ok();
        let response = match self
            .inner
            .http
            .post(url)
            .headers(headers)
            .body(body.to_vec())
            .send()
            .await
        {
            Ok(r) => r,
            Err(e) => return transient(transport_failure(&e, secret), None),
        };
        let status = response.status();
        let retry_after = retry_after(response.headers(), SystemTime::now());
        let bytes = match response.bytes().await {
            Ok(b) => b,
            Err(e) => return transient(transport_failure(&e, secret), retry_after),
        };
        drop(permit);
        if status.is_success() {
            return Exchange::Answered(wire::read_answer(settings.api, &bytes));
        }
        let text = redact(&String::from_utf8_lossy(&bytes), secret);
        let judge = settings.name.clone();
        let code = status.as_u16();
        match status {
            StatusCode::TOO_MANY_REQUESTS => transient(
                InfraFailure::RateLimited {
                    status: code,
                    body: text,
                },
                retry_after,
            ),
            StatusCode::REQUEST_TIMEOUT => transient(InfraFailure::Timeout, retry_after),
            s if s.is_server_error() => transient(
                InfraFailure::Server {
                    status: code,
                    body: text,
                },
                retry_after,
            ),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Exchange::Fatal(JudgeError::Auth {
                judge,
                status: code,
                var: settings.api_key_env.clone(),
                body: text,
            }),
            _ => Exchange::Fatal(JudgeError::Rejected {
                judge,
                status: code,
                body: text,
            }),
        }
    }
}

fn transient(failure: InfraFailure, retry_after: Option<Duration>) -> Exchange {
    Exchange::Transient {
        failure,
        retry_after,
    }
}

fn request_headers(settings: &Settings, key: Option<&Secret>) -> Result<HeaderMap, JudgeError> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let secret_header = |prefix: &str, key: &Secret| {
        let mut v = HeaderValue::from_str(&format!("{prefix}{}", key.0)).map_err(|_| {
            JudgeError::MissingKey {
                judge: settings.name.clone(),
                var: settings.api_key_env.clone().unwrap_or_default(),
                problem: "holds characters that cannot go in an HTTP header",
            }
        })?;
        v.set_sensitive(true);
        Ok::<_, JudgeError>(v)
    };
    match settings.api {
        Api::Openai => {
            if let Some(key) = key {
                headers.insert(AUTHORIZATION, secret_header("Bearer ", key)?);
            }
        }
        Api::Anthropic => {
            headers.insert(
                "anthropic-version",
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
            if let Some(key) = key {
                headers.insert("x-api-key", secret_header("", key)?);
            }
        }
    }
    Ok(headers)
}

/// The server's requested wait: `retry-after-ms` (OpenAI), else
/// `retry-after` as delay-seconds or an HTTP date (RFC 9110 §10.2.3).
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let seconds = |v: &str| {
        v.parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
    };
    if let Some(ms) = value("retry-after-ms").and_then(seconds) {
        return Some(ms / 1000);
    }
    let v = value(RETRY_AFTER.as_str())?;
    seconds(v).or_else(|| {
        let when = httpdate::parse_http_date(v).ok()?;
        Some(when.duration_since(now).unwrap_or(Duration::ZERO))
    })
}

fn transport_failure(e: &reqwest::Error, secret: Option<&str>) -> InfraFailure {
    let text = redact(&error_chain(e), secret);
    if e.is_timeout() {
        InfraFailure::Timeout
    } else if e.is_connect() {
        InfraFailure::Connect(text)
    } else {
        InfraFailure::Transport(text)
    }
}

/// An error and its sources on one line (reqwest's own Display names only the
/// outermost layer, "error sending request").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: &'static str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            name,
            HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("")),
        );
        h
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            retry_after(&headers("retry-after", "7"), now),
            Some(Duration::from_secs(7))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            retry_after(&headers("retry-after", &date), now),
            Some(Duration::from_secs(30))
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(
            retry_after(&headers("retry-after", &past), now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(&headers("retry-after-ms", "250"), now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(retry_after(&headers("retry-after", "soon"), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn backoff_doubles_within_jitter_and_is_capped() {
        let mut s = Settings::new("j", Api::Openai, "http://127.0.0.1:1/v1", "m");
        s.backoff_s = 1.0;
        s.backoff_max_s = 5.0;
        let judge = Judge::new(s).unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..50 {
            let d1 = judge.delay_before(1, None).as_secs_f64();
            let d3 = judge.delay_before(3, None).as_secs_f64();
            let d9 = judge.delay_before(9, None).as_secs_f64();
            assert!((0.5..=1.0).contains(&d1), "{d1}");
            assert!((2.0..=4.0).contains(&d3), "{d3}");
            assert!((2.5..=5.0).contains(&d9), "{d9}");
        }
        let asked = judge.delay_before(1, Some(Duration::from_secs(3600)));
        assert_eq!(asked, Duration::from_secs(5));
    }

    #[test]
    fn secrets_do_not_print() {
        assert_eq!(
            format!("{:?}", Secret("sk-live".into())),
            "Secret([redacted])"
        );
    }
}
