//! The DevTools protocol on `--remote-debugging-pipe`: JSON messages ended by
//! a NUL byte, ours on Chromium's fd 3, its on fd 4.
//!
//! Chromium runs pages of the agent's app, so what comes out of the pipe is
//! bounded before it is trusted: no message is kept past [`MAX_MESSAGE`]
//! bytes (an oversized event is dropped; an oversized reply is an error), and
//! every read and write waits at most until a deadline, so a browser that
//! stops reading or talking cannot hold the caller past its budget.

use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Instant;

use serde_json::Value;

/// The largest message kept. A screenshot of the window is a few MiB of
/// base64; nothing the driver asks for comes near this.
pub(crate) const MAX_MESSAGE: usize = 32 << 20;

/// How a wait on the pipe ended without a message.
#[derive(Debug)]
pub(crate) enum PipeError {
    /// The deadline passed.
    Timeout,
    /// Chromium closed its end: it exited or died.
    Closed,
    /// A reply larger than [`MAX_MESSAGE`], or bytes that are not JSON.
    Garbled(String),
    Io(io::Error),
}

impl std::fmt::Display for PipeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout => f.write_str("no answer before the deadline"),
            Self::Closed => f.write_str("chromium closed the pipe"),
            Self::Garbled(what) => f.write_str(what),
            Self::Io(e) => write!(f, "the pipe to chromium: {e}"),
        }
    }
}

pub(crate) struct Pipe {
    to: io::PipeWriter,
    from: io::PipeReader,
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for the NUL.
    scanned: usize,
    /// Dropping an oversized message up to its NUL: its first bytes, to tell
    /// a reply from an event.
    skipping: Option<Vec<u8>>,
}

impl Pipe {
    pub(crate) fn new(to: io::PipeWriter, from: io::PipeReader) -> io::Result<Self> {
        set_nonblocking(&to)?;
        set_nonblocking(&from)?;
        Ok(Self {
            to,
            from,
            buf: Vec::new(),
            scanned: 0,
            skipping: None,
        })
    }

    /// Write one message whole, waiting for room in the pipe until `deadline`.
    pub(crate) fn send(&mut self, message: &Value, deadline: Instant) -> Result<(), PipeError> {
        let mut bytes =
            serde_json::to_vec(message).map_err(|e| PipeError::Garbled(e.to_string()))?;
        bytes.push(0);
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            match self.to.write(rest) {
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    wait_ready(&self.to, libc::POLLOUT, deadline)?
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::BrokenPipe => return Err(PipeError::Closed),
                Err(e) => return Err(PipeError::Io(e)),
            }
        }
        Ok(())
    }

    /// The next message, waiting until `deadline`.
    pub(crate) fn recv(&mut self, deadline: Instant) -> Result<Value, PipeError> {
        loop {
            if let Some(message) = self.take_message()? {
                return Ok(message);
            }
            let mut chunk = [0u8; 1 << 16];
            match self.from.read(&mut chunk) {
                Ok(0) => return Err(PipeError::Closed),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    wait_ready(&self.from, libc::POLLIN, deadline)?
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(PipeError::Io(e)),
            }
        }
    }

    /// A whole message out of the buffer, if one is there.
    fn take_message(&mut self) -> Result<Option<Value>, PipeError> {
        loop {
            let Some(nul) = self.buf[self.scanned..].iter().position(|&b| b == 0) else {
                self.scanned = self.buf.len();
                if self.buf.len() > MAX_MESSAGE || self.skipping.is_some() {
                    let head = self
                        .skipping
                        .take()
                        .unwrap_or_else(|| self.buf[..64].to_vec());
                    self.skipping = Some(head);
                    self.buf.clear();
                    self.scanned = 0;
                }
                return Ok(None);
            };
            let end = self.scanned + nul;
            let message: Vec<u8> = self.buf.drain(..=end).collect();
            self.scanned = 0;
            let head = match self.skipping.take() {
                Some(head) => Some(head),
                None if end > MAX_MESSAGE => Some(message[..64].to_vec()),
                None => None,
            };
            if let Some(head) = head {
                if is_reply(&head) {
                    return Err(PipeError::Garbled(format!(
                        "a reply from chromium exceeded {MAX_MESSAGE} bytes"
                    )));
                }
                // An oversized event: dropped, the stream goes on.
                continue;
            }
            return serde_json::from_slice(&message[..end])
                .map(Some)
                .map_err(|e| {
                    PipeError::Garbled(format!("a message from chromium is not JSON: {e}"))
                });
        }
    }
}

/// Replies start with their id; events with their method.
fn is_reply(head: &[u8]) -> bool {
    head.starts_with(br#"{"id":"#)
}

fn set_nonblocking(fd: &impl AsRawFd) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process owns; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Block until `fd` is ready for `events` or `deadline` passes.
fn wait_ready(fd: &impl AsFd, events: libc::c_short, deadline: Instant) -> Result<(), PipeError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(PipeError::Timeout);
        }
        let mut pfd = libc::pollfd {
            fd: fd.as_fd().as_raw_fd(),
            events,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd for the length given.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(PipeError::Io(e));
        }
        // POLLHUP / POLLERR: the next read or write says what happened.
        if n > 0 {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn pair() -> (Pipe, io::PipeWriter) {
        let (our_read, their_write) = io::pipe().expect("pipe");
        let (_their_read, our_write) = io::pipe().expect("pipe");
        (Pipe::new(our_write, our_read).expect("pipe"), their_write)
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[test]
    fn messages_split_on_nul() {
        let (mut pipe, mut chrome) = pair();
        chrome
            .write_all(b"{\"id\":1}\0{\"method\":\"x\"}\0")
            .expect("write");
        assert_eq!(pipe.recv(soon()).expect("first")["id"], 1);
        assert_eq!(pipe.recv(soon()).expect("second")["method"], "x");
        assert!(matches!(
            pipe.recv(Instant::now() + Duration::from_millis(50)),
            Err(PipeError::Timeout)
        ));
        drop(chrome);
        assert!(matches!(pipe.recv(soon()), Err(PipeError::Closed)));
    }

    #[test]
    fn an_oversized_event_is_dropped_and_an_oversized_reply_is_an_error() {
        let (mut pipe, mut chrome) = pair();
        let writer = std::thread::spawn(move || {
            let filler = vec![b'a'; MAX_MESSAGE + 10];
            chrome
                .write_all(br#"{"method":"Runtime.consoleAPICalled","x":""#)
                .expect("write");
            chrome.write_all(&filler).expect("write");
            chrome
                .write_all(b"\"}\0{\"id\":7}\0{\"id\":8,\"r\":\"")
                .expect("write");
            chrome.write_all(&filler).expect("write");
            chrome.write_all(b"\"}\0").expect("write");
        });
        assert_eq!(pipe.recv(soon()).expect("after the event")["id"], 7);
        let next = pipe.recv(soon());
        assert!(matches!(next, Err(PipeError::Garbled(_))), "{next:?}");
        writer.join().expect("writer");
    }
}
