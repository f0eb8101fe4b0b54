//! An agent's only way out: its sandbox has no network but its own
//! loopback, where [`forward`] (assay itself, the sandbox's first process)
//! listens and passes every connection to a unix socket bound in from the
//! host; there [`serve`] reads one HTTP request per connection, refuses any
//! that is not for the configured endpoint, puts the real key in (the
//! agent holds a placeholder: no key is ever in the workspace, transcript,
//! log or cache), sends it on, takes the key and the `[redact] env`
//! values out of the answer (an endpoint may echo them), and records its
//! status, bytes and time. Where a request may go is decided on the URL
//! the forwarder will send, as its own parser reads it ([`target`]).
//!
//! Those records are the only witness of an outage (docs/agents.md, whose
//! fault): they live in assay's memory, out of the agent's reach. Besides
//! each request the proxy records its own health ([`Health`]): whether the
//! forwarder inside the sandbox reached it before the agent's command
//! started (it sends [`HELLO`] first and runs nothing when that fails), and,
//! for a run that sent no request, whether the endpoint answered a probe
//! at the run's end.
//!
//! Whose a failed request is follows where it failed. A request the proxy
//! reads but could not send as written (a space in a header name, a
//! control byte in a value: anything the HTTP client cannot build) is
//! refused when read, with a 4xx to the agent, and is the agent's; only a
//! failure after a well-formed request left the proxy (connect, TLS, read,
//! timeout, or a 429/5xx answer) is the endpoint's ([`Request::failed`]).
//!
//! HTTP/1.1 as model clients send it: a request line, headers, a body of
//! `Content-Length` bytes (a chunked body is refused with 411). The answer
//! is sent whole with `Connection: close` (a streamed answer arrives at
//! once, at its end).

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::run::error::chain;

pub(crate) use crate::model::endpoint::{Endpoint, KeyHeader};

/// One request an attempt sent, as the proxy saw it. No header or body is
/// kept: only where it went and how it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    /// The endpoint's status; `None` when none came back (`error`).
    pub(crate) status: Option<u16>,
    /// Why it was refused or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// How the connection to the endpoint failed, when it did: set only by
    /// the proxy's own client, never from anything the agent sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) upstream: Option<Upstream>,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    /// When it arrived, in ms from the proxy's start.
    #[serde(default)]
    pub(crate) at_ms: u64,
    pub(crate) ms: u64,
}

/// How the proxy's connection to the endpoint failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Upstream {
    /// No connection could be made (refused, unreachable, no such host).
    Refused,
    /// The connection or the answer did not come in time.
    TimedOut,
    /// The answer was cut or unreadable.
    Cut,
}

impl Upstream {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Upstream::Refused => "refused",
            Upstream::TimedOut => "timed_out",
            Upstream::Cut => "cut",
        }
    }
}

impl Request {
    /// Whether it failed the infrastructure's way, by the proxy's own
    /// observation: a 429/5xx answer, or a connection to the endpoint that
    /// failed. A request the proxy refused is the agent's.
    pub(crate) fn failed(&self) -> bool {
        self.upstream.is_some() || self.status.is_some_and(|s| s == 429 || s >= 500)
    }
}

/// The proxy's record of its own health over one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Health {
    /// The forwarder inside the sandbox reached the proxy before the
    /// agent's command started; false: the agent never ran with a way out.
    pub(crate) forwarder_up: bool,
    /// Requests still unanswered when the run ended (not in `requests`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) unanswered: u32,
    /// The endpoint probed at the run's end, for a run that sent nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) probe: Option<Probe>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The endpoint probed by the proxy itself (`GET base_url`, no key).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Probe {
    /// Any answer but a 429/5xx.
    pub(crate) up: bool,
    pub(crate) status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) upstream: Option<Upstream>,
}

/// What the proxy saw over one run: every answered request, in the order
/// they were answered, and its own health.
#[derive(Debug, Default)]
pub(crate) struct Log {
    pub(crate) requests: Vec<Request>,
    pub(crate) health: Health,
}

/// The request the forwarder sends before it starts the agent's command.
/// An agent that sends it too only says the proxy was up.
pub(crate) const HELLO: &str = "/.assay/forwarder-up";

/// Why a request outside the endpoint was not sent: the agent's doing.
const REFUSED: &str = "refused: not the configured endpoint";

const MAX_HEAD: usize = 64 << 10;
const MAX_BODY: usize = 64 << 20;

/// How long the proxy waits for a connection to the endpoint.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

fn client() -> Option<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .ok()
}

/// Serves the agent's requests from `listener` until dropped (the attempt's
/// job aborts it), recording each into `log` when it is answered.
pub(crate) async fn serve(
    listener: tokio::net::UnixListener,
    endpoint: Arc<Endpoint>,
    log: Arc<Mutex<Log>>,
) {
    let Some(client) = client() else {
        return;
    };
    let epoch = Instant::now();
    loop {
        let Ok((conn, _)) = listener.accept().await else {
            return;
        };
        let (endpoint, log, client) = (endpoint.clone(), log.clone(), client.clone());
        tokio::spawn(async move {
            let pending = |d: i64| {
                let mut g = log.lock().unwrap_or_else(|p| p.into_inner());
                g.health.unanswered = g.health.unanswered.saturating_add_signed(d as i32);
            };
            pending(1);
            let request = one(conn, &endpoint, &client, epoch, &log).await;
            pending(-1);
            if let Some(request) = request {
                log.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .requests
                    .push(request);
            }
        });
    }
}

/// The endpoint probed as the proxy sends requests, without the key.
pub(crate) async fn probe(endpoint: &Endpoint) -> Probe {
    let Some(client) = client() else {
        return Probe {
            up: false,
            status: None,
            upstream: Some(Upstream::Refused),
        };
    };
    let url = format!("{}{}", endpoint.origin, endpoint.prefix);
    match client.get(url).timeout(CONNECT_TIMEOUT).send().await {
        Ok(resp) => {
            let s = resp.status().as_u16();
            Probe {
                up: !(s == 429 || s >= 500),
                status: Some(s),
                upstream: None,
            }
        }
        Err(e) => Probe {
            up: false,
            status: None,
            upstream: Some(upstream_of(&e)),
        },
    }
}

fn upstream_of(e: &reqwest::Error) -> Upstream {
    if e.is_timeout() {
        Upstream::TimedOut
    } else if e.is_connect() {
        Upstream::Refused
    } else {
        Upstream::Cut
    }
}

/// Reads one request from `conn`, sends it on, answers; `None` for the
/// forwarder's [`HELLO`], which is health, not a request.
async fn one(
    mut conn: tokio::net::UnixStream,
    endpoint: &Endpoint,
    client: &reqwest::Client,
    epoch: Instant,
    log: &Mutex<Log>,
) -> Option<Request> {
    let started = Instant::now();
    let mut req = Request {
        at_ms: started.duration_since(epoch).as_millis() as u64,
        ..Request::default()
    };
    let answer = match read_request(&mut conn).await {
        Err((code, why)) => {
            req.error = Some(format!("refused: {why}"));
            (code, "text/plain".to_owned(), why.into_bytes())
        }
        Ok(head) if head.method == "GET" && head.path == HELLO => {
            log.lock()
                .unwrap_or_else(|p| p.into_inner())
                .health
                .forwarder_up = true;
            let _ = respond(&mut conn, (200, "text/plain".into(), Vec::new())).await;
            return None;
        }
        Ok(head) => {
            req.method = head.method.clone();
            req.path = head.path.clone();
            req.sent = head.body.len() as u64;
            send(head, endpoint, client, &mut req).await
        }
    };
    req.received = answer.2.len() as u64;
    let _ = respond(&mut conn, answer).await;
    req.ms = started.elapsed().as_millis() as u64;
    Some(req)
}

struct Head {
    method: String,
    path: String,
    /// As the HTTP client will send them: a header it could not send
    /// refuses the request when read.
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Vec<u8>,
}

async fn read_request(conn: &mut tokio::net::UnixStream) -> Result<Head, (u16, String)> {
    let mut buf = Vec::with_capacity(8192);
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err((431, "request head too large".into()));
        }
        let mut chunk = [0u8; 8192];
        let n = conn
            .read(&mut chunk)
            .await
            .map_err(|e| (400, format!("reading the request: {e}")))?;
        if n == 0 {
            return Err((400, "the connection closed before a request".into()));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (method, path) = match (parts.next(), parts.next()) {
        (Some(m), Some(p)) if !m.is_empty() && p.starts_with('/') => (m.to_owned(), p.to_owned()),
        _ => return Err((400, format!("not an HTTP request line: {line:?}"))),
    };
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| header(k, v))
        .collect::<Result<Vec<_>, String>>()
        .map_err(|why| (400, why))?;
    let get = |k: &str| {
        headers
            .iter()
            .find(|(h, _)| h == k)
            .and_then(|(_, v)| v.to_str().ok())
    };
    if get("transfer-encoding").is_some() {
        return Err((
            411,
            "a chunked request body is not supported: send Content-Length".into(),
        ));
    }
    let length: usize = get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if length > MAX_BODY {
        return Err((413, "request body too large".into()));
    }
    let mut body = buf[end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = vec![0u8; (length - body.len()).min(1 << 16)];
        let n = conn
            .read(&mut chunk)
            .await
            .map_err(|e| (400, format!("reading the body: {e}")))?;
        if n == 0 {
            return Err((400, "the connection closed mid-body".into()));
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok(Head {
        method,
        path,
        headers,
        body,
    })
}

/// One header line as the HTTP client will send it, or why it cannot be
/// sent: the agent wrote it, so refusing it is the agent's doing.
fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), String> {
    let name = name.trim();
    let typed = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("the header name {name:?} cannot be sent as written"))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|_| format!("the value of the header `{typed}` cannot be sent as written"))?;
    Ok((typed, value))
}

/// Headers never passed on: the connection's own, and any key the agent
/// sent (it holds only a placeholder; the real one is put in here).
const DROPPED: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
    "content-length",
    "authorization",
    "x-api-key",
    "api-key",
    "cookie",
];

/// Sends a request on to the endpoint; (status, content type, body).
async fn send(
    head: Head,
    endpoint: &Endpoint,
    client: &reqwest::Client,
    req: &mut Request,
) -> (u16, String, Vec<u8>) {
    let method = match head.method.as_str() {
        "GET" => reqwest::Method::GET,
        "POST" => reqwest::Method::POST,
        _ => {
            req.error = Some(REFUSED.into());
            return (405, "text/plain".into(), b"only GET and POST\n".to_vec());
        }
    };
    let url = match target(endpoint, &head.path) {
        Ok(url) => url,
        Err(why) => {
            req.error = Some(format!("{REFUSED} ({why})"));
            return (
                403,
                "text/plain".into(),
                format!("{REFUSED}: {why}\n").into_bytes(),
            );
        }
    };
    let mut out = client.request(method, url);
    for (k, v) in head.headers {
        if !DROPPED.contains(&k.as_str()) {
            out = out.header(k, v);
        }
    }
    if let Some(key) = &endpoint.key {
        out = match endpoint.header {
            KeyHeader::Authorization => out.header("authorization", format!("Bearer {key}")),
            KeyHeader::XApiKey => out.header("x-api-key", key.as_str()),
        };
    }
    // Nothing has left the proxy yet: a request the client cannot build is
    // the agent's, refused, never the endpoint's.
    let built = match out.body(head.body).build() {
        Ok(built) => built,
        Err(e) => {
            let why = format!("the request cannot be sent as written: {}", chain(&e));
            req.error = Some(format!("refused: {why}"));
            return (400, "text/plain".into(), format!("{why}\n").into_bytes());
        }
    };
    match client.execute(built).await {
        Err(e) => {
            let why = format!("the endpoint did not answer: {}", chain(&e));
            req.error = Some(why.clone());
            req.upstream = Some(upstream_of(&e));
            (502, "text/plain".into(), why.into_bytes())
        }
        Ok(resp) => {
            let status = resp.status().as_u16();
            req.status = Some(status);
            let kind = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/octet-stream")
                .to_owned();
            match resp.bytes().await {
                Ok(body) => (
                    status,
                    String::from_utf8_lossy(&scrub(kind.as_bytes(), endpoint)).into_owned(),
                    scrub(&body, endpoint),
                ),
                Err(e) => {
                    req.error = Some(format!("the answer was cut: {}", chain(&e)));
                    req.upstream = Some(Upstream::Cut);
                    (502, "text/plain".into(), Vec::new())
                }
            }
        }
    }
}

/// The URL a request for `raw` (its request-target) is sent to, or why it
/// is refused. The prefix is checked on the path the forwarder will send,
/// as reqwest's own URL parser leaves it, and that path must be the one the
/// agent wrote: a form the parser or the endpoint would resolve differently
/// (dot segments, plain or percent-encoded; encoded slashes and
/// backslashes; double encoding; an empty segment; characters the parser
/// drops or rewrites) is refused rather than interpreted.
fn target(endpoint: &Endpoint, raw: &str) -> Result<reqwest::Url, String> {
    if !raw.starts_with('/') {
        return Err("not an origin-form path".into());
    }
    if let Some(c) = raw
        .chars()
        .find(|c| c.is_ascii_control() || *c == ' ' || *c == '\\' || *c == '#')
    {
        return Err(format!("{c:?} in the path"));
    }
    let path = raw.split_once('?').map_or(raw, |(p, _)| p);
    let lower = path.to_ascii_lowercase();
    if let Some(code) = ["%2e", "%2f", "%5c", "%25"]
        .into_iter()
        .find(|code| lower.contains(code))
    {
        return Err(format!(
            "`{code}` (an encoded dot, slash, backslash or `%`) in the path"
        ));
    }
    let segments: Vec<&str> = path[1..].split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        // `..;x` is `..` to servers that strip path parameters.
        let bare = segment.split_once(';').map_or(*segment, |(s, _)| s);
        let last = i + 1 == segments.len();
        if matches!(bare, "." | "..") || (bare.is_empty() && !last) {
            return Err(format!("the segment `{segment}`"));
        }
    }
    let url = reqwest::Url::parse(&format!("{}{raw}", endpoint.origin))
        .map_err(|e| format!("not a URL: {e}"))?;
    let origin = reqwest::Url::parse(&endpoint.origin).map_err(|e| e.to_string())?;
    if url.origin() != origin.origin() || url.path() != path {
        return Err(format!("resolves to `{}`", url.path()));
    }
    let sent = url.path();
    let under = endpoint.prefix.is_empty()
        || sent == endpoint.prefix
        || sent
            .strip_prefix(&endpoint.prefix)
            .is_some_and(|rest| rest.starts_with('/'));
    if !under {
        return Err(format!("`{sent}` is not under `{}`", endpoint.prefix));
    }
    Ok(url)
}

/// `body` with the key and the other secrets taken out: an endpoint that
/// echoes the header it was sent (some gateways do, in error bodies), or
/// hands out a secret of its own, would give the agent what the proxy
/// exists to keep from it, and then in any encoding the agent likes, past
/// any redaction of what assay stores.
fn scrub(body: &[u8], endpoint: &Endpoint) -> Vec<u8> {
    let mut out = body.to_vec();
    for secret in endpoint.key.iter().chain(&endpoint.secrets) {
        out = crate::run::redact::replace_value(&out, secret.as_bytes()).0;
    }
    out
}

async fn respond(
    conn: &mut tokio::net::UnixStream,
    (status, kind, body): (u16, String, Vec<u8>),
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    conn.write_all(head.as_bytes()).await?;
    conn.write_all(&body).await?;
    conn.shutdown().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// `assay forward PORT SOCKET -- COMMAND…`, inside an agent's sandbox:
/// listens on `127.0.0.1:PORT`, passes each connection to the unix socket
/// `SOCKET`, runs `COMMAND` and exits as it did.
pub(crate) fn forward(port: u16, socket: &std::path::Path, command: &[String]) -> i32 {
    let listener = match std::net::TcpListener::bind(("127.0.0.1", port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("assay forward: 127.0.0.1:{port}: {e}");
            return 125;
        }
    };
    // The proxy learns it was reachable before anything of the agent ran:
    // without this word a run with no request is the infrastructure's.
    if let Err(e) = hello(socket) {
        eprintln!("assay forward: the proxy at {}: {e}", socket.display());
        return 125;
    }
    let socket = socket.to_owned();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let socket = socket.clone();
            std::thread::spawn(move || pipe(conn, &socket));
        }
    });
    let Some((program, args)) = command.split_first() else {
        return 125;
    };
    match std::process::Command::new(program).args(args).status() {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(1)
        }
        Err(e) => {
            eprintln!("assay forward: {program}: {e}");
            127
        }
    }
}

/// Sends [`HELLO`] through the socket and reads the proxy's answer.
fn hello(socket: &std::path::Path) -> std::io::Result<()> {
    let mut conn = std::os::unix::net::UnixStream::connect(socket)?;
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(conn, "GET {HELLO} HTTP/1.1\r\nHost: proxy\r\n\r\n")?;
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer)?;
    if answer.starts_with(b"HTTP/1.1 200") {
        Ok(())
    } else {
        Err(std::io::Error::other("no answer to the forwarder's hello"))
    }
}

/// Copies bytes both ways between a loopback connection and the socket.
fn pipe(tcp: std::net::TcpStream, socket: &std::path::Path) {
    let Ok(unix) = std::os::unix::net::UnixStream::connect(socket) else {
        return;
    };
    let (Ok(mut tcp_r), Ok(mut unix_w)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut tcp_r, &mut unix_w);
        let _ = unix_w.shutdown(std::net::Shutdown::Write);
    });
    let (mut unix_r, mut tcp_w) = (unix, tcp);
    let mut buf = [0u8; 16384];
    loop {
        match unix_r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tcp_w.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = tcp_w.shutdown(std::net::Shutdown::Both);
    let _ = up.join();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_splits_into_origin_and_prefix() {
        let e = Endpoint::parse(
            "https://api.example.com/v1/",
            None,
            KeyHeader::Authorization,
        )
        .unwrap();
        assert_eq!(
            (e.origin.as_str(), e.prefix.as_str()),
            ("https://api.example.com", "/v1")
        );
        let e = Endpoint::parse("http://127.0.0.1:9000", None, KeyHeader::XApiKey).unwrap();
        assert_eq!(
            (e.origin.as_str(), e.prefix.as_str()),
            ("http://127.0.0.1:9000", "")
        );
        assert!(Endpoint::parse("ftp://x", None, KeyHeader::XApiKey).is_err());
        assert!(Endpoint::parse("https:///v1", None, KeyHeader::XApiKey).is_err());
    }

    #[test]
    fn paths_that_resolve_outside_the_prefix_are_refused_before_they_are_sent() {
        let e =
            Endpoint::parse("http://127.0.0.1:9000/v1", None, KeyHeader::Authorization).unwrap();
        for raw in [
            // The forms that reached the endpoint host outside `/v1`.
            "/v1/%2e%2e/admin",
            "/v1/.%2e/admin",
            "/v1/%2E%2E/admin",
            "/v1/..\\admin",
            "/v1/..",
            "/v1/%2e%2e/%2e%2e/etc/passwd",
            // Plain and parameter-hidden dot segments.
            "/v1/../admin",
            "/v1/./../admin",
            "/v1/..;/admin",
            "/v1/.;x/chat",
            // Encoded slash and backslash, double encoding.
            "/v1%2f..%2fadmin",
            "/v1/..%5cadmin",
            "/v1/%252e%252e/admin",
            // Empty segments: `//host` reads as an authority to some servers.
            "//v1/chat",
            "/v1//../admin",
            "/v1//chat",
            // Prefix confusion, fragments, characters the parser strips.
            "/v1x/chat/completions",
            "/v1.evil/chat",
            "/admin?/v1/chat",
            "/v1/chat#/../../admin",
            "/v1/.\t./admin",
            "/v1/.\n./admin",
            // Not origin-form.
            "http://1.1.1.1/v1/chat",
            "*",
        ] {
            assert!(target(&e, raw).is_err(), "{raw:?} was let through");
        }
        for (raw, sent) in [
            ("/v1", "http://127.0.0.1:9000/v1"),
            ("/v1/", "http://127.0.0.1:9000/v1/"),
            (
                "/v1/chat/completions",
                "http://127.0.0.1:9000/v1/chat/completions",
            ),
            (
                "/v1/models?after=a%2Fb&x=..",
                "http://127.0.0.1:9000/v1/models?after=a%2Fb&x=..",
            ),
            ("/v1/files/a..b", "http://127.0.0.1:9000/v1/files/a..b"),
        ] {
            assert_eq!(target(&e, raw).map(String::from), Ok(sent.to_owned()));
        }
        let root = Endpoint::parse("http://127.0.0.1:9000", None, KeyHeader::XApiKey).unwrap();
        assert!(target(&root, "/v1/messages").is_ok());
        assert!(target(&root, "/a/../../etc/passwd").is_err());
    }

    #[test]
    fn the_key_and_the_secrets_are_taken_out_of_every_answer() {
        let echoed = br#"{"error":"bad auth: Bearer sk-real-123456","again":"sk-real-123456","org":"org-77"}"#;
        let mut e = Endpoint::parse(
            "http://x/v1",
            Some("sk-real-123456".into()),
            KeyHeader::Authorization,
        )
        .unwrap();
        e.secrets = vec!["org-77".into()];
        assert_eq!(
            scrub(echoed, &e),
            br#"{"error":"bad auth: Bearer [REDACTED]","again":"[REDACTED]","org":"[REDACTED]"}"#
        );
        let plain = Endpoint::parse("http://x/v1", None, KeyHeader::Authorization).unwrap();
        assert_eq!(scrub(echoed, &plain), echoed);
    }

    #[test]
    fn only_the_proxys_own_observations_are_failures() {
        let with = |status: Option<u16>, upstream: Option<Upstream>, error: Option<&str>| Request {
            status,
            upstream,
            error: error.map(str::to_owned),
            ..Request::default()
        };
        assert!(with(Some(429), None, None).failed());
        assert!(with(Some(503), None, None).failed());
        assert!(with(None, Some(Upstream::Refused), Some("x")).failed());
        assert!(with(None, Some(Upstream::TimedOut), Some("x")).failed());
        assert!(!with(Some(200), None, None).failed());
        assert!(!with(Some(400), None, None).failed());
        assert!(!with(None, None, Some(REFUSED)).failed());
        // A request the agent cut short before the proxy sent it.
        assert!(!with(None, None, Some("refused: the connection closed mid-body")).failed());
    }

    /// A header the HTTP client cannot send is refused when read: it was
    /// recorded as an upstream failure, the infrastructure's.
    #[test]
    fn a_header_that_cannot_be_sent_as_written_is_refused_when_read() {
        let (name, value) = header(" Content-Type ", " application/json ").unwrap();
        assert_eq!(
            (name.as_str(), value.to_str().unwrap()),
            ("content-type", "application/json")
        );
        for (name, value, why) in [
            (
                "X Bad",
                "1",
                "the header name \"X Bad\" cannot be sent as written",
            ),
            (
                "X-Bad\u{1}",
                "1",
                "the header name \"X-Bad\\u{1}\" cannot be sent as written",
            ),
            ("", "1", "the header name \"\" cannot be sent as written"),
            (
                "X-Bad",
                "a\u{1}b",
                "the value of the header `x-bad` cannot be sent as written",
            ),
            (
                "X-Bad",
                "a\u{7f}b",
                "the value of the header `x-bad` cannot be sent as written",
            ),
        ] {
            assert_eq!(header(name, value).unwrap_err(), why, "{name:?}: {value:?}");
        }
    }
}
