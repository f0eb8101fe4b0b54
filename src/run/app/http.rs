//! The probes' HTTP/1.1 client: one request per connection, made with std's
//! `TcpStream` on the calling thread (so in the app's network namespace when
//! called from [`NetNs::run`](assay_exec::netns::NetNs::run)). The answer is
//! read to the end of the connection (`Connection: close`), at most
//! [`BODY_CAP`] bytes, within one deadline for the whole exchange;
//! `Content-Length` and chunked bodies are decoded.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::model::rules::app::Response;

/// Bytes of an answer kept; an app that sends more fails the probe.
pub(crate) const BODY_CAP: usize = 4 << 20;

/// A request, its `{nonce}` already substituted.
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) body: &'a [u8],
}

/// Why no answer came.
#[derive(Debug)]
pub(crate) enum HttpError {
    /// Nothing answered within the deadline.
    TimedOut,
    /// The connection failed or the answer is not HTTP.
    Broken(String),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::TimedOut => f.write_str("no answer within the probe's time"),
            HttpError::Broken(why) => f.write_str(why),
        }
    }
}

/// Sends `request` to `127.0.0.1:port` and reads the answer within `within`.
pub(crate) fn send(
    port: u16,
    request: &Request<'_>,
    within: Duration,
) -> Result<Response, HttpError> {
    let until = Instant::now() + within;
    let left = || {
        until
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(HttpError::TimedOut)
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, left()?).map_err(|e| match e.kind() {
        std::io::ErrorKind::TimedOut => HttpError::TimedOut,
        _ => HttpError::Broken(format!("cannot connect to port {port}: {e}")),
    })?;
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => HttpError::TimedOut,
        _ => HttpError::Broken(e.to_string()),
    };
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        request.method,
        request.path,
        request.body.len()
    );
    for (name, value) in request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.set_write_timeout(Some(left()?)).map_err(io)?;
    stream.write_all(head.as_bytes()).map_err(io)?;
    stream.write_all(request.body).map_err(io)?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        stream.set_read_timeout(Some(left()?)).map_err(io)?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if raw.len() > BODY_CAP + 64 * 1024 {
                    return Err(HttpError::Broken(format!(
                        "the answer is longer than {BODY_CAP} bytes"
                    )));
                }
                if complete(&raw) {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
    parse(&raw).map_err(HttpError::Broken)
}

/// Whether `raw` holds a whole answer by its `Content-Length` (an app may
/// keep the connection open after it).
fn complete(raw: &[u8]) -> bool {
    let Some(end) = find(raw, b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .is_some_and(|n| raw.len() >= end + 4 + n)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// An answer's status, headers and body.
pub(crate) fn parse(raw: &[u8]) -> Result<Response, String> {
    let end = find(raw, b"\r\n\r\n").ok_or("the answer has no end of headers")?;
    let head =
        std::str::from_utf8(&raw[..end]).map_err(|_| "the answer's headers are not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut words = status_line.split_whitespace();
    let status = match (words.next(), words.next()) {
        (Some(v), Some(code)) if v.starts_with("HTTP/") => code
            .parse::<u16>()
            .map_err(|_| format!("a bad status line: {status_line:?}"))?,
        _ => return Err(format!("not an HTTP answer: {status_line:?}")),
    };
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        dechunk(rest)?
    } else if let Some(n) = header("content-length").and_then(|n| n.parse::<usize>().ok()) {
        rest.get(..n)
            .ok_or("the body is shorter than its Content-Length")?
            .to_vec()
    } else {
        rest.to_vec()
    };
    if body.len() > BODY_CAP {
        return Err(format!("the body is longer than {BODY_CAP} bytes"));
    }
    Ok(Response {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = find(rest, b"\r\n").ok_or("a chunk without its size line")?;
        let size = std::str::from_utf8(&rest[..line_end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok())
            .ok_or("a bad chunk size")?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(rest.get(..size).ok_or("a chunk shorter than its size")?);
        rest = rest.get(size + 2..).ok_or("a chunk without its end")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_by_length_by_chunks_and_to_the_end() {
        let r =
            parse(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhiXX")
                .unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, b"hi".as_slice()));
        assert_eq!(r.headers[0], ("content-type".into(), "text/plain".into()));
        let r = parse(b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (201, b"abcde".as_slice()));
        let r = parse(b"HTTP/1.0 404 Not Found\r\n\r\nall of it").unwrap();
        assert_eq!(r.body, b"all of it");
        assert!(
            parse(b"SSH-2.0-OpenSSH\r\n\r\n")
                .unwrap_err()
                .contains("not an HTTP answer")
        );
    }

    #[test]
    fn a_listener_that_never_answers_times_out() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let req = Request {
            method: "GET",
            path: "/",
            headers: &[],
            body: b"",
        };
        let e = send(port, &req, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, HttpError::TimedOut), "{e}");
        drop(l);
    }
}
