//! Reaching a sandboxed process's network namespace from outside it.
//!
//! A deployed app listens on the loopback of its own network namespace
//! (bwrap's `--unshare-net`): nothing routes to it, and it routes nowhere.
//! assay's probes and the browser must reach that loopback without running
//! inside the sandbox, so that what they expect is never readable by the app.
//! Linux keeps the network namespace per thread: a thread that calls
//! `setns(fd, CLONE_NEWNET)` on the app's `/proc/<pid>/ns/net` sees the
//! app's loopback, while the rest of assay keeps the host's.
//!
//! - [`NetNs::open`] holds the namespace by a file descriptor, so it stays
//!   the same namespace even if the pid is reused after the app ends.
//! - [`NetNs::run`] runs a closure on a fresh thread that joined the
//!   namespace and is never used for anything else (it ends with the
//!   closure), so no pooled thread is left in the app's namespace. Sockets
//!   the closure opens (std's `TcpStream`) are created in the namespace.
//! - [`NetNs::enter_on_exec`] makes a [`std::process::Command`]'s child join
//!   the namespace between `fork` and `exec` (Chromium for the browser layer).
//!
//! Joining needs `CAP_SYS_ADMIN` over the namespace's owner: assay as root,
//! or a namespace of assay's own user namespace.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::Arc;

/// A network namespace, held open by a descriptor.
#[derive(Debug, Clone)]
pub struct NetNs {
    fd: Arc<OwnedFd>,
}

impl NetNs {
    /// The network namespace process `pid` is in.
    pub fn open(pid: u32) -> io::Result<NetNs> {
        NetNs::open_path(&Path::new("/proc").join(pid.to_string()).join("ns/net"))
    }

    /// The network namespace of `pid`'s first child, waiting up to
    /// `within` for the child to exist and to have left `pid`'s namespace:
    /// the sandbox's side of a `bwrap --unshare-net` whose pid assay holds.
    pub fn of_child(pid: u32, within: std::time::Duration) -> io::Result<NetNs> {
        let parent = NetNs::open(pid)?;
        let children = format!("/proc/{pid}/task/{pid}/children");
        let until = std::time::Instant::now() + within;
        loop {
            let listed = std::fs::read_to_string(&children)?;
            if let Some(child) = listed.split_whitespace().next()
                && let Ok(child) = child.parse::<u32>()
                && let Ok(ns) = NetNs::open(child)
                && !ns.same_as(&parent)?
            {
                return Ok(ns);
            }
            if std::time::Instant::now() >= until {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("process {pid} has no child in a network namespace of its own"),
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// The network namespace a `/proc/…/ns/net` file (or a bind of one) names.
    pub fn open_path(path: &Path) -> io::Result<NetNs> {
        let file = File::open(path)?;
        Ok(NetNs {
            fd: Arc::new(OwnedFd::from(file)),
        })
    }

    /// Whether two handles name the same namespace.
    pub fn same_as(&self, other: &NetNs) -> io::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        let a = File::from(self.fd.try_clone()?).metadata()?;
        let b = File::from(other.fd.try_clone()?).metadata()?;
        Ok(a.dev() == b.dev() && a.ino() == b.ino())
    }

    /// Runs `f` on a new thread inside this namespace and returns what it
    /// returns. An error joining is returned before `f` runs; a panic in `f`
    /// is resumed on the caller's thread.
    pub fn run<T, F>(&self, f: F) -> io::Result<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let fd = Arc::clone(&self.fd);
        let thread = std::thread::Builder::new()
            .name("assay-netns".into())
            .spawn(move || -> io::Result<T> {
                enter(fd.as_raw_fd())?;
                Ok(f())
            })?;
        match thread.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// Makes `command`'s child join this namespace before it execs. The
    /// descriptor is opened close-on-exec, so the program never holds it.
    pub fn enter_on_exec(&self, command: &mut std::process::Command) {
        let fd = Arc::clone(&self.fd);
        // SAFETY: the closure only calls `setns`, which is async-signal-safe,
        // and builds an io::Error from errno without allocating on success.
        unsafe {
            command.pre_exec(move || enter(fd.as_raw_fd()));
        }
    }
}

fn enter(fd: i32) -> io::Result<()> {
    // SAFETY: `fd` is an open descriptor owned by the caller's `NetNs`.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_joins_and_the_caller_stays() {
        let own = NetNs::open(std::process::id()).unwrap();
        // Joining one's own namespace is allowed without privilege and
        // leaves everything as it was.
        let inside = own
            .run(|| NetNs::open_path(Path::new("/proc/thread-self/ns/net")))
            .unwrap()
            .unwrap();
        assert!(inside.same_as(&own).unwrap());
    }

    #[test]
    fn a_panic_inside_reaches_the_caller() {
        let own = NetNs::open(std::process::id()).unwrap();
        let caught = std::panic::catch_unwind(|| own.run(|| panic!("inside")));
        assert!(caught.is_err());
    }

    #[test]
    fn a_missing_process_is_an_error() {
        assert!(NetNs::open(u32::MAX).is_err());
    }
}
