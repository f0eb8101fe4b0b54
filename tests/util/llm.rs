//! A scripted OpenAI-compatible model endpoint on loopback, standing in for
//! the model API an agent reaches through assay's proxy: real HTTP/1.1 on a
//! real socket (keep-alive, `Content-Length` bodies), answering each
//! request as the test's script says and recording what it was sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One request the endpoint got.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub authorization: Option<String>,
    pub body: String,
}

type Script = dyn Fn(usize, &Seen) -> (u16, String) + Send + Sync;

pub struct Llm {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Llm {
    /// Answers the n-th request (from 0) with `script(n, request)`: a status
    /// and a JSON body.
    pub fn start(script: impl Fn(usize, &Seen) -> (u16, String) + Send + Sync + 'static) -> Llm {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let script: Arc<Script> = Arc::new(script);
        let (seen2, script2) = (seen.clone(), script.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (seen, script) = (seen2.clone(), script2.clone());
                std::thread::spawn(move || serve(conn, &seen, &*script));
            }
        });
        Llm { port, seen }
    }

    /// The base URL an agent is configured with.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(conn: TcpStream, seen: &Mutex<Vec<Seen>>, script: &Script) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut conn = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split(' ').nth(1).unwrap_or("").to_owned();
        let (mut length, mut authorization) = (0usize, None);
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                match k.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    "authorization" => authorization = Some(v.trim().to_owned()),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request = Seen {
            path,
            authorization,
            body: String::from_utf8_lossy(&body).into_owned(),
        };
        let n = {
            let mut all = seen.lock().unwrap();
            all.push(request.clone());
            all.len() - 1
        };
        let (status, answer) = script(n, &request);
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            answer.len()
        );
        if conn.write_all(head.as_bytes()).is_err() || conn.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// A chat completion whose one tool call runs `command` in `bash` (the
/// shape mini-swe-agent's default config reads).
pub fn bash_call(n: usize, command: &str) -> String {
    serde_json::json!({
        "id": format!("c{n}"),
        "object": "chat.completion",
        "created": 0,
        "model": "scripted-model",
        "choices": [{
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": format!("step {n}"),
                "tool_calls": [{
                    "id": format!("call_{n}"),
                    "type": "function",
                    "function": {"name": "bash", "arguments": serde_json::json!({"command": command}).to_string()},
                }],
            },
        }],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    })
    .to_string()
}
