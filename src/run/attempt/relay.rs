//! The egress proxy reached from another machine: an attempt on a Slurm
//! node cannot use the coordinator's unix socket, so its bytes cross over
//! TCP between two relays, and the proxy itself ([`super::egress`], which
//! holds the key) stays where it is.
//!
//! - On the coordinator, [`listen`]: a listener of the attempt's own, on
//!   an address the nodes reach (`[env] slurm.proxy_address`, port chosen
//!   by the kernel), with a random token of the attempt's own. A connection
//!   must send the token first (its [`TOKEN_HEX`] hex digits and a
//!   newline, within [`TOKEN_WAIT`]); one that does is passed to the
//!   proxy's unix socket, byte for byte; any other is closed unanswered,
//!   and nothing of it reaches the proxy. So no other job, process or
//!   host that can reach the port can use it, and a token is good for one
//!   attempt's listener only.
//! - On the node, [`Relay`]: a unix socket in a private directory of the
//!   worker's, bound into the sandbox where the local proxy's socket is
//!   (the forwarder inside, `assay forward`, is the same as locally); each
//!   connection to it opens one TCP connection to the coordinator's
//!   listener and sends the token first.
//!
//! The token is held by the coordinator and by the worker outside the
//! sandbox (the job file, private to its user): the agent never holds it,
//! and its sandbox has no network namespace but its own loopback.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Hex digits of a token (32 random bytes).
pub(crate) const TOKEN_HEX: usize = 64;

/// How long the coordinator's listener waits for a connection's token.
pub(crate) const TOKEN_WAIT: Duration = Duration::from_secs(10);

/// A fresh token: 32 bytes of the system's randomness, in hex.
pub(crate) fn fresh_token() -> String {
    crate::run::fresh_seed()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where a node's relay sends an attempt's connections, and the token it
/// presents: in the worker's job file, never in the sandbox.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Route {
    pub(crate) addr: SocketAddr,
    pub(crate) token: String,
}

/// The coordinator's listener of one attempt, serving until dropped.
pub(crate) struct Listening {
    pub(crate) route: Route,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A listener on `host` (port chosen by the kernel) whose connections that
/// present a fresh token reach the proxy's unix socket `socket`.
pub(crate) async fn listen(host: std::net::IpAddr, socket: &Path) -> Result<Listening, String> {
    let listener = tokio::net::TcpListener::bind((host, 0))
        .await
        .map_err(|e| format!("the proxy's listener for the nodes on {host}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let token = fresh_token();
    let (want, socket) = (token.clone(), socket.to_owned());
    let task = tokio::spawn(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else {
                return;
            };
            let (want, socket) = (want.clone(), socket.clone());
            tokio::spawn(async move {
                let _ = admit(conn, &want, &socket).await;
            });
        }
    });
    Ok(Listening {
        route: Route { addr, token },
        task,
    })
}

/// One connection to the coordinator's listener: its token read and
/// checked, then its bytes passed to the proxy's socket both ways.
async fn admit(mut conn: tokio::net::TcpStream, want: &str, socket: &Path) -> Result<(), String> {
    let mut got = [0u8; TOKEN_HEX + 1];
    tokio::time::timeout(TOKEN_WAIT, conn.read_exact(&mut got))
        .await
        .map_err(|_| "no token in time".to_owned())?
        .map_err(|e| e.to_string())?;
    if !same(&got[..TOKEN_HEX], want.as_bytes()) || got[TOKEN_HEX] != b'\n' {
        return Err("a wrong token".into());
    }
    let mut proxy = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(|e| e.to_string())?;
    splice(&mut conn, &mut proxy).await
}

/// Whether two tokens are equal, in time that does not depend on where
/// they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Copies both ways until either side is done.
async fn splice<A, B>(a: &mut A, b: &mut B) -> Result<(), String>
where
    A: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    B: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    tokio::io::copy_bidirectional(a, b)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A node's relay of one attempt: the unix socket the sandbox is given,
/// serving (on the runtime it was made on) until dropped.
pub(crate) struct Relay {
    dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// The socket bound into the sandbox at [`super::SOCKET`].
    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.path().join("proxy.sock")
    }

    /// A relay to `route`, its socket in a fresh directory under the
    /// system's temp directory (a unix socket's path must be short).
    pub(crate) fn start(route: Route) -> Result<Relay, String> {
        let dir = tempfile::Builder::new()
            .prefix("assay-relay-")
            .tempdir()
            .map_err(|e| format!("the relay's socket directory: {e}"))?;
        let path = dir.path().join("proxy.sock");
        let listener = tokio::net::UnixListener::bind(&path)
            .map_err(|e| format!("the relay's socket: {e}"))?;
        // The sandbox's uid is not the worker's.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))
            .map_err(|e| e.to_string())?;
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let route = route.clone();
                tokio::spawn(async move {
                    let Ok(mut up) = tokio::net::TcpStream::connect(route.addr).await else {
                        return;
                    };
                    let token = format!("{}\n", route.token);
                    if up.write_all(token.as_bytes()).await.is_ok() {
                        let _ = splice(&mut conn, &mut up).await;
                    }
                });
            }
        });
        Ok(Relay { dir, task })
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A stand-in for the proxy's socket: answers every connection with
    /// what it read, and counts the connections it got.
    fn echo_socket(dir: &Path) -> (PathBuf, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let path = dir.join("proxy.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = count.clone();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut buf = [0u8; 5];
                if conn.read_exact(&mut buf).is_ok() {
                    let _ = conn.write_all(&buf);
                }
            }
        });
        (path, count)
    }

    /// What the listener at `addr` answers `sent`, read until it closes.
    fn ask(addr: SocketAddr, sent: &[u8]) -> Vec<u8> {
        let mut conn = std::net::TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let _ = conn.write_all(sent);
        let _ = conn.shutdown(std::net::Shutdown::Write);
        let mut got = Vec::new();
        let _ = conn.read_to_end(&mut got);
        got
    }

    /// Another process on the network, with no token, a wrong one, another
    /// attempt's, half of one, or none in time, gets nothing through and
    /// the proxy never sees it; the right token goes through, and so does a
    /// node's relay.
    #[test]
    fn only_the_attempts_own_token_reaches_its_proxy() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        for d in ["a", "b"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        let (mine_sock, mine_seen) = echo_socket(&dir.path().join("a"));
        let (other_sock, _) = echo_socket(&dir.path().join("b"));
        let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
        let mine = rt.block_on(listen(loopback, &mine_sock)).unwrap();
        let other = rt.block_on(listen(loopback, &other_sock)).unwrap();
        assert_ne!(mine.route.token, other.route.token);
        assert_eq!(mine.route.token.len(), TOKEN_HEX);
        let addr = mine.route.addr;
        let with = |token: &str| format!("{token}\nhello").into_bytes();
        for (what, sent) in [
            ("no token", b"GET / HTTP/1.1\r\n\r\n".repeat(8)),
            ("a wrong token", with(&"0".repeat(TOKEN_HEX))),
            ("another attempt's token", with(&other.route.token)),
            ("half a token", mine.route.token.as_bytes()[..32].to_vec()),
            (
                "a token without its newline",
                format!("{} hello", mine.route.token).into_bytes(),
            ),
        ] {
            assert_eq!(ask(addr, &sent), b"", "{what} got an answer");
        }
        // A connection that sends nothing is closed at the wait's end.
        let started = std::time::Instant::now();
        let mut idle = std::net::TcpStream::connect(addr).unwrap();
        idle.set_read_timeout(Some(TOKEN_WAIT * 3)).unwrap();
        let mut got = Vec::new();
        let _ = idle.read_to_end(&mut got);
        assert!(got.is_empty());
        assert!(
            started.elapsed() < TOKEN_WAIT * 2,
            "{:?}",
            started.elapsed()
        );
        assert_eq!(mine_seen.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(ask(addr, &with(&mine.route.token)), b"hello");
        assert_eq!(mine_seen.load(std::sync::atomic::Ordering::SeqCst), 1);
        // A node's relay: a unix socket in, the token sent for it.
        let _guard = rt.enter();
        let relay = Relay::start(mine.route.clone()).unwrap();
        let socket = relay.socket();
        let got = std::thread::spawn(move || {
            let mut conn = std::os::unix::net::UnixStream::connect(socket).unwrap();
            conn.write_all(b"relay").unwrap();
            let mut got = Vec::new();
            let _ = conn.read_to_end(&mut got);
            got
        });
        let got = rt.block_on(async {
            tokio::task::spawn_blocking(move || got.join().unwrap())
                .await
                .unwrap()
        });
        assert_eq!(got, b"relay");
        drop(mine);
        // Dropped: nothing listens there any more (the listener closes when
        // its task ends on a worker thread: soon, not at once).
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(addr).is_ok() {
            assert!(std::time::Instant::now() < until, "{addr} still listens");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
