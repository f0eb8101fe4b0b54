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
//! The launcher is a program run as `LAUNCHER __assay-launch [--join FILE |
//! --join-try FILE | --into DIR | --into-try DIR]… [--limit NAME=VALUE]… --
//! PROGRAM ARGS…`: the `assay`
//! binary itself ([`dispatch`] at the top of its `main`), or `assay-launch`
//! of this crate. [`install`] says which; with none installed, the forked
//! child does the same steps in `pre_exec`.
//!
//! A v2 group (`--into`) is joined by starting the command's process in it
//! (`clone3` with `CLONE_INTO_CGROUP`), which, unlike a write to its
//! `cgroup.procs`, does not wait for the kernel's machine-wide lock
//! ([`crate::cgroup`]). The launcher then stays, outside every group of the
//! run, as the command's parent and the run's process-group leader, only to
//! pass the command's exit status on as its own (a signal by dying of it);
//! it dies with the coordinator and the command with it
//! (`PR_SET_PDEATHSIG`). Where the process cannot be started in the group
//! (a kernel before 5.7, a group the launcher may not move to), the
//! launcher writes `0` to the group's `cgroup.procs` and `exec`s the
//! command itself.
//!
//! Its stderr, until it `exec`s the command, is a status pipe of the
//! coordinator's: `J` once the command's process was started in its v2
//! group, then, on a failure, `F`, the errno and what failed, and the
//! launcher exits; success closes it (stderr becomes a copy of stdout, and
//! the launcher's copy kept for a failed `exec` is close-on-exec), so the
//! coordinator reads either a failure or an end of file.

use std::ffi::{CString, OsString};
use std::io::{self, Read as _, Write as _};
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::cgroup::Join;
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
pub(crate) fn args(joins: &[Join], limits: &Plan) -> Vec<OsString> {
    let mut args = vec![OsString::from(ARG)];
    for join in joins {
        let (flag, path) = match &join.dir {
            Some(dir) => ("--into", dir),
            None => ("--join", &join.file),
        };
        args.push(
            if join.required {
                flag.to_owned()
            } else {
                format!("{flag}-try")
            }
            .into(),
        );
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
    /// The groups, a v2 one (`--into`) with its directory.
    joins: Vec<Join>,
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
            Some(flag @ ("--join" | "--join-try" | "--into" | "--into-try")) => {
                let path = value()?;
                let c = |bytes: &[u8]| {
                    CString::new(bytes).map_err(|_| "a group path holds a NUL byte".to_owned())
                };
                let (file, dir) = if flag.starts_with("--into") {
                    let file = [path.as_bytes(), b"/cgroup.procs"].concat();
                    (c(&file)?, Some(c(path.as_bytes())?))
                } else {
                    (c(path.as_bytes())?, None)
                };
                asked.joins.push(Join {
                    file,
                    dir,
                    required: !flag.ends_with("-try"),
                });
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
    // The first v2 group is joined by starting the command's process in
    // it; every other group (and that one, where it cannot be) by a write.
    let mut joins = asked.joins;
    if let Some(at) = joins.iter().position(|j| j.dir.is_some())
        && let Some(dir) = &joins[at].dir
    {
        match start_in(dir) {
            Start::Child => {
                let _ = (&status).write_all(b"J");
                joins.remove(at);
            }
            Start::Parent(child) => pass_on(child, status),
            Start::Not => {}
        }
    }
    if let Err(e) = crate::cgroup::join(&joins) {
        report(&status, "joining the run's control group", &e);
    }
    if let Err(e) = plan.apply() {
        report(&status, "setting the run's rlimits", &e);
    }
    let e = command.exec();
    report(&status, "starting the command", &e)
}

/// Where [`start_in`] left this process.
enum Start {
    /// In the new process, started in the group.
    Child,
    /// In the launcher, which started `child` in the group.
    Parent(libc::pid_t),
    /// Nothing was started: the group is to be joined by a write.
    Not,
}

/// `clone3` with `CLONE_INTO_CGROUP`, in `libc` as a C `int` that cannot
/// hold it.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// Forks this process into the v2 group at `dir` (see the module header).
fn start_in(dir: &CString) -> Start {
    // SAFETY: a plain open of a NUL-terminated path.
    let fd = unsafe {
        libc::open(
            dir.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Start::Not;
    }
    // The launcher dies with the coordinator, as bubblewrap does
    // (`--die-with-parent`) when it is the coordinator's child, and the
    // command with the launcher: a killed coordinator leaves no run.
    // SAFETY: getppid has no preconditions.
    die_with(unsafe { libc::getppid() });
    // SAFETY: getpid has no preconditions.
    let launcher = unsafe { libc::getpid() };
    // SAFETY: all-zero is a valid `clone_args` (no flags, no pointers).
    let mut args: libc::clone_args = unsafe { std::mem::zeroed() };
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = libc::SIGCHLD as u64;
    args.cgroup = fd as u64;
    // SAFETY: `clone3` without `CLONE_VM` is a fork: the new process gets
    // a copy of this one and returns here on its own copy of the stack.
    // The launcher has one thread (it starts none), so no lock can be held
    // by a thread the copy lacks; the child goes on to plain system calls
    // and `exec`.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &raw mut args,
            std::mem::size_of::<libc::clone_args>(),
        )
    };
    // SAFETY: our own descriptor, closed once in each process.
    unsafe { libc::close(fd) };
    match pid {
        0 => {
            die_with(launcher);
            Start::Child
        }
        p if p > 0 => Start::Parent(p as libc::pid_t),
        _ => Start::Not,
    }
}

/// SIGKILL for this process when `parent` ends; at once if it already did
/// (this process was handed to another parent before the call).
fn die_with(parent: libc::pid_t) {
    // SAFETY: plain system calls.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(FAILED);
        }
    }
}

/// The launcher's part once it started the command's process: wait for it
/// and end as it ended, an exit with its code, a death by its signal.
fn pass_on(child: libc::pid_t, status: std::fs::File) -> ! {
    drop(status);
    // SAFETY: plain system calls on this process's own descriptors, child
    // and signal dispositions.
    unsafe {
        // Nothing of the run's output or input stays open here.
        for fd in 0..3 {
            libc::close(fd);
        }
        let mut st = 0;
        loop {
            if libc::waitpid(child, &raw mut st, 0) == child {
                break;
            }
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(FAILED);
            }
        }
        if libc::WIFEXITED(st) {
            libc::_exit(libc::WEXITSTATUS(st));
        }
        if libc::WIFSIGNALED(st) {
            let signal = libc::WTERMSIG(st);
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &raw const none);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut set);
            libc::sigaddset(&raw mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
        }
        libc::_exit(FAILED)
    }
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
    let _ = status.write_all(b"F");
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

/// Reads the launcher's status pipe to its end: once the command was
/// `exec`d, whether its process was started in its v2 group; or what
/// failed. Meant for a blocking thread.
pub(crate) fn read_status(reader: OwnedFd) -> io::Result<bool> {
    let mut bytes = Vec::new();
    let mut pipe = std::fs::File::from(reader);
    pipe.read_to_end(&mut bytes)?;
    let (started, rest) = match bytes.split_first() {
        Some((b'J', rest)) => (true, rest),
        _ => (false, &bytes[..]),
    };
    if rest.is_empty() {
        return Ok(started);
    }
    let rest = rest.strip_prefix(b"F").unwrap_or(rest);
    let (errno, text) = rest.split_at(4.min(rest.len()));
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
