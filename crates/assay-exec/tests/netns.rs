//! Joining a sandbox's network namespace: a server inside `bwrap
//! --unshare-net` is reachable from a thread that joined its namespace and
//! from a child launched into it, and from nowhere else.

// The helpers below are test code too; `allow-unwrap-in-tests` only covers
// `#[test]` functions.
#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use assay_exec::netns::NetNs;

/// A one-shot TCP server on 127.0.0.1:`port` in a network namespace of
/// its own; killed when dropped.
struct Server(std::process::Child);

impl Server {
    fn start(port: u16) -> Server {
        let script = format!(
            "import socket\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
             s.bind(('127.0.0.1',{port}))\ns.listen()\n\
             while True:\n c,_=s.accept()\n c.sendall(b'inside')\n c.close()\n"
        );
        let child = Command::new("bwrap")
            .args([
                "--dev-bind",
                "/",
                "/",
                "--unshare-net",
                "--die-with-parent",
                "--",
            ])
            .args(["python3", "-c", &script])
            .stdin(Stdio::null())
            .spawn()
            .expect("bwrap");
        Server(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn read_from(port: u16) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

fn port() -> u16 {
    // A port nothing on the host listens on: bound and released here.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn a_thread_in_the_namespace_reaches_the_sandboxed_loopback_and_the_host_does_not() {
    let port = port();
    let server = Server::start(port);
    let ns = NetNs::of_child(server.0.id(), Duration::from_secs(10)).unwrap();
    let mut got = Err(std::io::Error::other("never tried"));
    for _ in 0..200 {
        got = ns.run(move || read_from(port)).unwrap();
        if got.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(got.unwrap(), "inside");
    // The caller's own thread is still in the host's namespace.
    assert!(read_from(port).is_err());
}

#[test]
fn a_child_launched_into_the_namespace_reaches_the_sandboxed_loopback() {
    let port = port();
    let server = Server::start(port);
    let ns = NetNs::of_child(server.0.id(), Duration::from_secs(10)).unwrap();
    let client = format!(
        "import socket,time\nfor _ in range(200):\n try:\n  s=socket.create_connection(('127.0.0.1',{port}))\n  print(s.recv(64).decode()); break\n except OSError: time.sleep(0.025)\n"
    );
    let mut cmd = Command::new("python3");
    cmd.args(["-c", &client]);
    ns.enter_on_exec(&mut cmd);
    let out = cmd.output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "inside");
    let mut host = Command::new("python3");
    host.args(["-c", &client.replace("range(200)", "range(1)")]);
    let out = host.output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "");
}

#[test]
fn a_process_without_a_sandboxed_child_is_an_error() {
    let mut sleeper = Command::new("sleep").arg("5").spawn().unwrap();
    let e = NetNs::of_child(sleeper.id(), Duration::from_millis(100)).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}
