//! The launcher: the step between the coordinator and a run's command that
//! does what must happen before the command's `exec`: stdout onto stderr,
//! `setsid`, joining the run's control groups, the rlimits.
//!
//! Done in the forked child (`pre_exec`), that work forces a real `fork` of
//! the coordinator, whose cost grows with its address space (≈0.9 GB at
//! 30,000 sessions). Done by an exec'd launcher instead, the coordinator
//! starts each run with `posix_spawn` (no copy of its address space), and
//! the launcher, in the new process, does the same steps in the same order
//! before it `exec`s the command: nothing of the command runs outside its
//! groups or above its limits.
//!
//! The launcher is a program run as `LAUNCHER __assay-launch [--join PATH |
//! --join-try PATH]… [--limit NAME=VALUE]… -- PROGRAM ARGS…`: the `assay`
//! binary itself ([`dispatch`] at the top of its `main`), or `assay-launch`
//! of this crate. [`install`] says which; with none installed, the forked
//! child does the same steps in `pre_exec`.
//!
//! Its stderr, until it `exec`s the command, is a status pipe of the
//! coordinator's: a failure is written there (the errno, then what failed)
//! and the launcher exits; success closes it (stderr becomes a copy of
//! stdout, and the launcher's copy kept for a failed `exec` is close-on-exec),
//! so the coordinator reads either a failure or an end of file.

use std::ffi::{CString, OsString};
use std::io::{self, Read as _, Write as _};
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::limits::Plan;

/// The first argument that makes a program act as the launcher.
pub const ARG: &str = "__assay-launch";

/// The exit code of a launcher that failed before its `exec`.
const FAILED: i32 = 125;

static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// Starts runs through `program` (which must act as the launcher when its
/// first argument is [`ARG`]) from now on in this process. The first call
/// wins; `false` if another launcher was installed before.
pub fn install(program: PathBuf) -> bool {
    LAUNCHER.set(program.clone()).is_ok() || LAUNCHER.get() == Some(&program)
}

/// The installed launcher, if any.
pub fn installed() -> Option<&'static Path> {
    LAUNCHER.get().map(PathBuf::as_path)
}

/// At the top of a program's `main`: when its first argument is [`ARG`],
/// act as the launcher, which never returns (it `exec`s the command or
/// exits).
pub fn dispatch() {
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == ARG) {
        launch(args.collect())
    }
}

/// The launcher's arguments: `ARG`, the groups to join, the limits, then
/// `--` and the command line.
pub(crate) fn args(procs: &[(CString, bool)], limits: &Plan) -> Vec<OsString> {
    let mut args = vec![OsString::from(ARG)];
    for (path, required) in procs {
        args.push(if *required { "--join" } else { "--join-try" }.into());
        args.push(std::ffi::OsStr::from_bytes(path.as_bytes()).to_owned());
    }
    for (name, value) in limits.named() {
        args.push("--limit".into());
        args.push(format!("{name}={value}").into());
    }
    args.push("--".into());
    args
}

/// What the launcher was asked to do.
#[derive(Debug, Default)]
struct Asked {
    procs: Vec<(CString, bool)>,
    limits: Vec<(String, u64)>,
    command: Vec<OsString>,
}

fn parse(args: Vec<OsString>) -> Result<Asked, String> {
    let mut asked = Asked::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg:?} needs a value"));
        match arg.to_str() {
            Some("--") => {
                asked.command = args.collect();
                break;
            }
            Some(flag @ ("--join" | "--join-try")) => {
                let path = CString::new(value()?.as_bytes())
                    .map_err(|_| "a group path holds a NUL byte".to_owned())?;
                asked.procs.push((path, flag == "--join"));
            }
            Some("--limit") => {
                let v = value()?;
                let (name, n) = v
                    .to_str()
                    .and_then(|v| v.split_once('='))
                    .and_then(|(name, n)| Some((name.to_owned(), n.parse().ok()?)))
                    .ok_or(format!("bad limit {v:?}"))?;
                asked.limits.push((name, n));
            }
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    if asked.command.is_empty() {
        return Err("no command after `--`".to_owned());
    }
    Ok(asked)
}

/// The launcher's work, in the order `pre_exec` does it (see
/// [`crate::with_pre_exec`]); see the module header.
fn launch(args: Vec<OsString>) -> ! {
    let asked = match parse(args) {
        Ok(a) => a,
        Err(e) => fail("reading the launcher's arguments", &io::Error::other(e)),
    };
    // Kept for a failed `exec`, which happens after stderr became stdout.
    // SAFETY: fd 2 is open (the status pipe); the duplicate is ours alone.
    let status = unsafe {
        let fd = libc::fcntl(libc::STDERR_FILENO, libc::F_DUPFD_CLOEXEC, 3);
        if fd < 0 {
            fail("keeping the status pipe", &io::Error::last_os_error());
        }
        std::fs::File::from(OwnedFd::from_raw_fd(fd))
    };
    // Built before the limits: an address-space limit may leave no room
    // to allocate after it is set.
    let Some((program, rest)) = asked.command.split_first() else {
        report(
            &status,
            "reading the command",
            &io::Error::other("no command"),
        )
    };
    let mut command = std::process::Command::new(program);
    command.args(rest);
    let plan = match Plan::from_named(&asked.limits) {
        Ok(p) => p,
        Err(e) => report(&status, "reading the limits", &e),
    };
    // stdout and stderr share one pipe so the log keeps write order; this
    // also closes the status pipe's fd 2 (`status` stays, until `exec`).
    // SAFETY: plain dup2 of two open descriptors.
    if unsafe { libc::dup2(libc::STDOUT_FILENO, libc::STDERR_FILENO) } == -1 {
        report(
            &status,
            "joining stderr to stdout",
            &io::Error::last_os_error(),
        );
    }
    if let Err(e) = rustix::process::setsid() {
        report(&status, "moving to a session of its own", &e.into());
    }
    if let Err(e) = crate::cgroup::join(&asked.procs) {
        report(&status, "joining the run's control group", &e);
    }
    if let Err(e) = plan.apply() {
        report(&status, "setting the run's rlimits", &e);
    }
    let e = command.exec();
    report(&status, "starting the command", &e)
}

/// Reports `error` at `step` on the status pipe (stderr) and exits.
fn fail(step: &str, error: &io::Error) -> ! {
    // SAFETY: fd 2 is the status pipe here; the File is forgotten, not closed.
    let stderr = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(2) });
    report(&stderr, step, error)
}

/// Writes the errno and the step (and, for an error that is not the
/// system's, its text) and exits. Allocates nothing for a system error: it
/// may come after an address-space limit was set.
fn report(status: &std::fs::File, step: &str, error: &io::Error) -> ! {
    let errno = error.raw_os_error().unwrap_or(0);
    let mut status = status;
    let _ = status.write_all(&errno.to_le_bytes());
    let _ = status.write_all(step.as_bytes());
    if errno == 0 {
        let _ = status.write_all(format!(": {error}").as_bytes());
    }
    // SAFETY: ends the process at once; nothing of it needs to run first.
    unsafe { libc::_exit(FAILED) }
}

/// Why a launcher did not start its command.
#[derive(Debug, thiserror::Error)]
#[error("the launcher failed {step}")]
pub struct LaunchFailed {
    pub step: String,
    #[source]
    pub source: io::Error,
}

/// Reads the launcher's status pipe to its end: `Ok` once the command was
/// `exec`d, or what failed. Meant for a blocking thread.
pub(crate) fn read_status(reader: OwnedFd) -> io::Result<()> {
    let mut bytes = Vec::new();
    let mut pipe = std::fs::File::from(reader);
    pipe.read_to_end(&mut bytes)?;
    if bytes.is_empty() {
        return Ok(());
    }
    let (errno, text) = bytes.split_at(4.min(bytes.len()));
    let errno = i32::from_le_bytes(errno.try_into().unwrap_or_default());
    let text = String::from_utf8_lossy(text).into_owned();
    let (step, detail) = text.split_once(": ").unwrap_or((&text, ""));
    let source = if errno == 0 {
        io::Error::other(detail.to_owned())
    } else {
        io::Error::from_raw_os_error(errno)
    };
    Err(io::Error::new(
        source.kind(),
        LaunchFailed {
            step: step.to_owned(),
            source,
        },
    ))
}
