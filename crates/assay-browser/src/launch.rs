//! Chromium as a process of its own group, with its profile in a temp dir,
//! talking on fds 3 and 4, and killed whole when [`Chromium`] is dropped.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::pipe::Pipe;

/// The flags assay adds to the caller's command. The outer sandbox is
/// assay's (`--no-sandbox`); nothing is fetched in the background, and no
/// crash reporter is started (it would leave the group).
const FLAGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--deny-permission-prompts",
    "--password-store=basic",
    "--use-mock-keychain",
    "--mute-audio",
    "--hide-scrollbars",
    "--window-size=1280,800",
    "--remote-debugging-pipe",
];

/// How much of Chromium's stderr a launch failure quotes.
const STDERR_TAIL: u64 = 2048;

/// How long a killed group may take to be gone before the leader is reaped
/// anyway. Killed processes are doomed, but on a loaded machine Chromium's
/// take seconds to exit; the flow returns once they have.
const REAP_WAIT: Duration = Duration::from_secs(20);

pub(crate) struct Chromium {
    child: Child,
    /// The group's id (the child called `setsid`).
    pgid: libc::pid_t,
    stderr: File,
    /// Holds the profile and stderr; removed after the group is dead.
    _dir: TempDir,
}

impl Chromium {
    /// Start `command` (the caller's binary and sandbox prefix) with the
    /// headless flags, a fresh profile and the DevTools pipe.
    pub(crate) fn launch(mut command: Command) -> io::Result<(Self, Pipe)> {
        let dir = tempfile::Builder::new()
            .prefix("assay-chromium-")
            .tempdir()?;
        let profile = dir.path().join("profile");
        let stderr_path = dir.path().join("stderr");
        let stderr = File::options()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&stderr_path)?;
        // Ours are close-on-exec; the child moves its ends to 3 and 4.
        let (to_chrome_r, to_chrome_w) = io::pipe()?;
        let (from_chrome_r, from_chrome_w) = io::pipe()?;
        let (child_in, child_out) = (to_chrome_r.as_raw_fd(), from_chrome_w.as_raw_fd());
        command
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr.try_clone()?);
        // SAFETY: only async-signal-safe calls (setsid, getpgrp, getpid,
        // fcntl, dup2) between fork and exec.
        unsafe {
            command.pre_exec(move || {
                if libc::setsid() < 0 && libc::getpgrp() != libc::getpid() {
                    return Err(io::Error::last_os_error());
                }
                // Through fresh numbers, so that neither end overwrites the
                // other when one of them already is 3 or 4.
                let fresh_in = libc::fcntl(child_in, libc::F_DUPFD_CLOEXEC, 10);
                let fresh_out = libc::fcntl(child_out, libc::F_DUPFD_CLOEXEC, 10);
                if fresh_in < 0
                    || fresh_out < 0
                    || libc::dup2(fresh_in, 3) < 0
                    || libc::dup2(fresh_out, 4) < 0
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn()?;
        // Only the child holds its ends now: its exit closes the pipe.
        drop((to_chrome_r, from_chrome_w));
        let pgid = child.id() as libc::pid_t;
        let chromium = Self {
            child,
            pgid,
            stderr,
            _dir: dir,
        };
        let pipe = Pipe::new(to_chrome_w, from_chrome_r)?;
        Ok((chromium, pipe))
    }

    /// How it ended, when it has (without reaping it), and the end of what
    /// it wrote on stderr: for a launch failure's message.
    pub(crate) fn failure_report(&mut self) -> String {
        // A pipe closed at once is usually an exit in progress.
        let deadline = Instant::now() + Duration::from_millis(500);
        let mut status = None;
        while Instant::now() < deadline {
            if let Some(code) = exit_status_nowait(self.pgid) {
                status = Some(code);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut tail = String::new();
        if let Ok(len) = self.stderr.seek(SeekFrom::End(0)) {
            let from = len.saturating_sub(STDERR_TAIL);
            if self.stderr.seek(SeekFrom::Start(from)).is_ok() {
                let mut bytes = Vec::new();
                let _ = (&self.stderr).take(STDERR_TAIL).read_to_end(&mut bytes);
                tail = String::from_utf8_lossy(&bytes).trim().to_owned();
            }
        }
        let status = status.unwrap_or_else(|| "still running".to_owned());
        if tail.is_empty() {
            status
        } else {
            format!("{status}; stderr ends: {tail}")
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // The leader is not reaped yet, so the group id still names this
        // group only.
        // SAFETY: a signal to our own child's group.
        unsafe { libc::killpg(self.pgid, libc::SIGKILL) };
        let deadline = Instant::now() + REAP_WAIT;
        while group_has_others(self.pgid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.wait();
    }
}

/// The leader's end as words, if it has ended; leaves it unreaped.
fn exit_status_nowait(pid: libc::pid_t) -> Option<String> {
    // SAFETY: siginfo_t is plain data that waitid fills.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child with a valid siginfo_t.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: filled by waitid for an exited child; zero pid when none.
    if r != 0 || unsafe { info.si_pid() } == 0 {
        return None;
    }
    // SAFETY: as above.
    let (code, status) = (info.si_code, unsafe { info.si_status() });
    Some(match code {
        libc::CLD_EXITED => format!("exited with status {status}"),
        _ => format!("killed by signal {status}"),
    })
}

/// Whether a live process other than the leader is in group `pgid`.
pub(crate) fn group_has_others(pgid: i32) -> bool {
    assay_exec::group_members(pgid)
        .into_iter()
        .any(|pid| pid != pgid)
}
