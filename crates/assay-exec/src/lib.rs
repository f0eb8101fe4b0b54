//! The local executor's process runner: run one shell command over a staged
//! tree, capture its output, and leave nothing behind. [`hold`] starts one
//! under the same guarantees and keeps enforcing them while the caller
//! works with it (a served app).
//!
//! Agent patches are untrusted code, so a test command is treated as hostile:
//! it may hang, fork daemons, flood its output or try to read our secrets.
//! [`run`] holds these invariants:
//!
//! - **Own session and process group.** The child calls `setsid` before
//!   the command's `exec` (in the [`launch`]er, or between `fork` and
//!   `exec` where none is installed), so its pid is both its session id and its process group id, and
//!   it has no controlling terminal. Everything it forks stays in that group
//!   unless it leaves on purpose, so one `killpg(SIGKILL)` ends the whole tree.
//! - **Nothing outlives a run.** On timeout the group is killed, then the
//!   child is reaped (`timed_out`). After a normal exit the group is killed
//!   too; if anything besides the child was still alive in it (a daemonised
//!   grandchild) the outcome says `leftover_killed`. The child is observed
//!   with `waitid(WNOWAIT)` and reaped only after the group kill: while it is
//!   an unreaped zombie its pid cannot be reused, so the kill can never hit an
//!   unrelated process group. If the caller drops the future, a guard kills
//!   the group as well.
//! - **Empty environment.** The child sees exactly [`RunSpec::env`]; nothing
//!   of ours leaks (API keys above all). stdin is `/dev/null`.
//! - **One log, in arrival order.** stdout and stderr are one pipe (the child
//!   duplicates fd 1 onto fd 2 before the command's `exec`), so the log keeps the order the
//!   command wrote in. The log keeps at most [`RunSpec::log_cap`] bytes, but
//!   the pipe is drained to the end regardless: a child blocked on a full
//!   pipe would look like a hang and be killed as a timeout, which would
//!   blame the agent for our cap. The total is counted so callers can refuse
//!   to grade a truncated log.
//! - **Limits before exec.** rlimits are set, and the run's control groups
//!   joined, in the child before the command's `exec` (never above the
//!   inherited hard limit), soft = hard so the command cannot raise them
//!   back. With a [`launch`]er installed the coordinator starts the child
//!   with `posix_spawn` and the launcher does this work; without one it is
//!   done between `fork` and `exec`, which copies the coordinator's page
//!   tables on every run.
//! - **A bound on what the tree takes.** With [`Limits::max_written`], a
//!   watchdog ([`writes`]) measures the run's tree while it runs and kills
//!   the group once it has grown by more than that (`LimitHit::Written`).
//!
//! # Limitation: escaping the group
//!
//! A process that calls `setsid`/`setpgid` itself (e.g. `setsid daemon &`)
//! leaves the group and cannot be reached by the group kill; it survives the
//! run. If it still holds the output pipe, capture gives up after a short
//! grace period instead of waiting for an end of file that never comes. The
//! answer to hostile escapees is a container (the docker executor), whose
//! teardown kills every process in it; this runner is for trusted-enough
//! setups and development.
//!
//! `max_processes` is `RLIMIT_NPROC`, which the kernel counts per user, not
//! per run: it caps all processes of the uid, not just this tree.

pub mod beneath;
mod capture;
mod cgroup;
mod group;
pub mod hold;
pub mod launch;
mod limits;
pub mod netns;
pub mod sandbox;
pub mod setup;
pub mod writes;

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;
use tokio::sync::oneshot;

pub use cgroup::Hits;
pub use group::{group_members, process_alive};
pub use hold::{Held, HeldOutcome, Stop, hold};
pub use sandbox::{Bind, Bwrap, Sandbox, SandboxError};

/// What to run and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpec {
    /// Run as `/bin/sh -c <command>`.
    pub command: String,
    /// Working directory of the command.
    pub cwd: PathBuf,
    /// The child's whole environment: nothing of ours is inherited, so pass
    /// `PATH`, `HOME`, … explicitly.
    pub env: BTreeMap<String, String>,
    /// The run's time budget; past it the whole process group is killed.
    /// Wall-clock time, less what the run spent waiting for a CPU the
    /// machine gave to other work, up to `stall_grace`.
    pub timeout: Duration,
    /// `Some`: measure the time every runnable process of the run waited
    /// for a CPU (its group's `cpu.pressure` "full" stall: a loaded
    /// machine, not the run; [`RunOutcome::cpu_stalled`]), and move the
    /// timeout by up to this much of it. However the run spends its time,
    /// it ends by `timeout + stall_grace`. `None`, or where no group in the
    /// unified hierarchy can be made: plain wall-clock, unmeasured.
    pub stall_grace: Option<Duration>,
    /// stdout and stderr interleaved in arrival order (created or truncated).
    pub log_path: PathBuf,
    /// Bytes kept in the log; output past it is drained and counted, not kept.
    pub log_cap: u64,
    /// Resource limits applied in the child before `exec`.
    pub limits: Limits,
    /// Confine the command (see [`sandbox`]); `cwd` is then ignored: the
    /// command works in its tree (or its environment, for setup).
    pub sandbox: Option<(Bwrap, Sandbox)>,
}

/// rlimits for the child; `None` keeps the inherited limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_FSIZE`: largest file the command may write, in bytes. Writing
    /// past it raises `SIGXFSZ` (or fails with `EFBIG` if that is ignored).
    pub max_file_size: Option<u64>,
    /// Processes of the whole run: a cgroup `pids.max` where one can be
    /// made, else `RLIMIT_NPROC` (counted per user by the kernel, and not
    /// binding root: the sandbox drops root to a run uid for that reason).
    pub max_processes: Option<u64>,
    /// `RLIMIT_NOFILE`.
    pub max_open_files: Option<u64>,
    /// Memory of the whole run in bytes: a cgroup limit where one can be
    /// made (the OOM killer ends the run and the outcome says so), else
    /// `RLIMIT_AS` per process.
    pub max_memory: Option<u64>,
    /// `RLIMIT_CORE = 0`: a crashing test must not fill the disk with cores.
    pub no_core: bool,
    /// Bytes the run may add to its tree (the sandbox's `tree`, else
    /// `cwd`; nothing for a sandboxed run without a tree, i.e. environment
    /// setup): past it the group is killed ([`writes`]).
    pub max_written: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_size: None,
            max_processes: None,
            max_open_files: None,
            max_memory: None,
            no_core: true,
            max_written: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// The exit code; `None` when killed by a signal. 127 means the command
    /// was not found (callers map it to `env_setup_failed`).
    pub exit_code: Option<i32>,
    /// The signal that killed the child (`SIGKILL` after a timeout).
    pub signal: Option<i32>,
    /// The timeout elapsed and the group was killed.
    pub timed_out: bool,
    /// From spawn until the child was reaped.
    pub duration: Duration,
    /// How long every runnable process of the run waited for a CPU (see
    /// [`RunSpec::stall_grace`]); `None` where it was not measured (not
    /// asked, or no group in the unified hierarchy).
    pub cpu_stalled: Option<Duration>,
    /// Total bytes the command wrote to stdout and stderr, kept or not.
    pub log_bytes: u64,
    /// `log_bytes > log_cap`: the log file holds only the first `log_cap`.
    pub log_truncated: bool,
    /// After a normal exit, other processes of the group were still alive and
    /// were killed.
    pub leftover_killed: bool,
    /// The limit that ended or broke the run, if one did.
    pub limit_hit: Option<LimitHit>,
    /// The memory limit was a cgroup's (else `RLIMIT_AS`, which fails
    /// allocations instead of killing, and is not reported as hit).
    pub cgroup_memory: bool,
    /// The process limit was a cgroup's (else `RLIMIT_NPROC`).
    pub cgroup_processes: bool,
}

/// Which limit a run ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    /// The wall-clock timeout.
    Time,
    /// The memory limit (the OOM killer killed a process of the run).
    Memory,
    /// The process limit refused a fork.
    Processes,
    /// A file grew past the file-size limit (`SIGXFSZ`).
    FileSize,
    /// The tree grew past the write limit ([`Limits::max_written`]), or
    /// could not be measured (see [`writes`]).
    Written,
}

impl LimitHit {
    /// The name used in records and docs.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitHit::Time => "time",
            LimitHit::Memory => "memory",
            LimitHit::Processes => "processes",
            LimitHit::FileSize => "file_size",
            LimitHit::Written => "write",
        }
    }
}

/// Why a command could not be run or observed. A command that runs and fails
/// is not an error: that is a [`RunOutcome`].
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The log file could not be created.
    #[error("cannot create log file {path}")]
    CreateLog {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// fork/exec failed, including a bad `cwd` or an rlimit that could not be
    /// applied.
    #[error("cannot spawn `{command}` in {cwd}")]
    Spawn {
        command: String,
        cwd: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Waiting for the child failed.
    #[error("cannot wait for `{command}`")]
    Wait {
        command: String,
        #[source]
        source: io::Error,
    },
    /// Reading the command's output pipe failed.
    #[error("cannot read the output of `{command}`")]
    ReadOutput {
        command: String,
        #[source]
        source: io::Error,
    },
    /// The tree could not be handed to the run's uid, or measured for the
    /// write limit.
    #[error("cannot prepare the sandbox's tree {path}")]
    Prepare {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Writing the log file failed (the pipe was still drained to the end).
    #[error("cannot write log file {path}")]
    WriteLog {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// A command set up as [`run`] and [`hold`] start it: its log, its control
/// groups, its write watch.
struct Prepared {
    log: tokio::fs::File,
    cgroup: Option<cgroup::Cgroup>,
    /// The memory and process limits are the cgroup's.
    cg_memory: bool,
    cg_pids: bool,
    watch: Option<writes::WriteWatch>,
    /// The read end of the launcher's status pipe, when a launcher starts
    /// the command ([`launch`]).
    launch_status: Option<std::os::fd::OwnedFd>,
}

/// The log, the groups, the write watch and the command line of `spec`,
/// with `stdin`; the limits apply in the child before `exec`.
async fn prepare(spec: &RunSpec, stdin: Stdio) -> Result<(Prepared, Command), ExecError> {
    let log = tokio::fs::File::create(&spec.log_path)
        .await
        .map_err(|source| ExecError::CreateLog {
            path: spec.log_path.clone(),
            source,
        })?;
    let cgroup = cgroup::Cgroup::create(
        spec.limits.max_memory,
        spec.limits.max_processes,
        spec.stall_grace.is_some(),
    );
    let (cg_memory, cg_pids) = cgroup.as_ref().map_or((false, false), |c| c.limits());
    let prepared = Prepared {
        log,
        cgroup,
        cg_memory,
        cg_pids,
        watch: None,
        launch_status: None,
    };
    // From here an error must remove the groups just made.
    let failed = |prepared: Prepared, e: ExecError| {
        if let Some(c) = &prepared.cgroup {
            c.remove();
        }
        Err(e)
    };
    let mut prepared = prepared;
    if let (Some(limit), Some(root)) = (spec.limits.max_written, written_root(spec)) {
        let root = root.to_owned();
        let measured = {
            let root = root.clone();
            tokio::task::spawn_blocking(move || writes::WriteWatch::new(&root, limit))
                .await
                .unwrap_or_else(|join| Err(io::Error::other(join)))
        };
        match measured {
            Ok(w) => prepared.watch = Some(w),
            Err(source) => {
                return failed(prepared, ExecError::Prepare { path: root, source });
            }
        }
    }
    let mut rlimits = spec.limits;
    if cg_memory {
        // The cgroup limits the run as a whole; an address-space limit on
        // top would break runtimes that reserve large virtual ranges.
        rlimits.max_memory = None;
    }
    if cg_pids {
        rlimits.max_processes = None;
    }
    let (program, args, cwd) = match &spec.sandbox {
        None => (
            PathBuf::from("/bin/sh"),
            vec!["-c".into(), spec.command.clone().into()],
            spec.cwd.as_path(),
        ),
        Some((bwrap, sandbox)) => {
            let uid = bwrap.next_uid();
            if let Some(uid) = uid {
                let writable = sandbox.binds.iter().filter(|b| b.writable);
                for dir in sandbox
                    .tree
                    .iter()
                    .chain(sandbox.env_dir.iter().filter(|_| sandbox.env_writable))
                    .chain(writable.map(|b| &b.host))
                {
                    if let Err(source) = sandbox::chown_tree(dir, uid) {
                        let path = dir.clone();
                        return failed(prepared, ExecError::Prepare { path, source });
                    }
                }
            }
            let (program, args) = bwrap.command_line(sandbox, uid.unwrap_or(0), &spec.command);
            (program, args, std::path::Path::new("/"))
        }
    };
    let limits = limits::Plan::new(&rlimits);
    let procs = prepared
        .cgroup
        .as_ref()
        .map(|c| c.joins())
        .unwrap_or_default();
    let mut command = match launch::installed() {
        Some(launcher) => match launched(launcher, &procs, &limits, program, args) {
            Ok((c, status)) => {
                prepared.launch_status = Some(status);
                c
            }
            Err(source) => return failed(prepared, spawn_error(spec, source)),
        },
        None => {
            let mut c = Command::new(program);
            c.args(args).stderr(Stdio::null());
            with_pre_exec(&mut c, limits, procs);
            c
        }
    };
    command
        .current_dir(cwd)
        .env_clear()
        .envs(&spec.env)
        .stdin(stdin)
        .stdout(Stdio::piped());
    Ok((prepared, command))
}

/// `program args` started by `launcher`, which joins `procs` and sets
/// `limits` first, and the read end of its status pipe.
fn launched(
    launcher: &std::path::Path,
    procs: &[cgroup::Join],
    limits: &limits::Plan,
    program: PathBuf,
    args: Vec<std::ffi::OsString>,
) -> io::Result<(Command, std::os::fd::OwnedFd)> {
    let (reader, writer) = io::pipe()?;
    let mut c = Command::new(launcher);
    c.args(launch::args(procs, limits))
        .arg(program)
        .args(args)
        // The status pipe until the launcher makes it a copy of stdout.
        .stderr(writer);
    Ok((c, reader.into()))
}

fn spawn_error(spec: &RunSpec, source: io::Error) -> ExecError {
    ExecError::Spawn {
        command: spec.command.clone(),
        cwd: spec.cwd.clone(),
        source,
    }
}

/// Without a launcher: the launcher's work done in the forked child,
/// which forks the whole coordinator (see [`launch`]). stderr is replaced by
/// a copy of stdout.
fn with_pre_exec(command: &mut Command, limits: limits::Plan, procs: Vec<cgroup::Join>) {
    // SAFETY: the closure runs in the forked child before `exec`, where only
    // async-signal-safe work is allowed. It allocates nothing and takes no
    // lock: `dup2`, `setsid`, `open`/`write`, `getrlimit` and `setrlimit` are
    // plain system calls, and `limits` and `procs` were built in the parent
    // and are only read here.
    unsafe {
        command.pre_exec(move || {
            // stdout and stderr share one pipe so the log keeps write order.
            if libc::dup2(libc::STDOUT_FILENO, libc::STDERR_FILENO) == -1 {
                return Err(io::Error::last_os_error());
            }
            rustix::process::setsid()?;
            cgroup::join(&procs)?;
            limits.apply()?;
            Ok(())
        });
    }
}

/// A started command: the child, its group (killed if the guard is
/// dropped armed), its output pipe.
struct Spawned {
    child: tokio::process::Child,
    pgid: rustix::process::Pid,
    guard: group::Guard,
    pipe: tokio::process::ChildStdout,
    started: Instant,
}

/// Starts `command` (consumed, so no descriptor it was given stays open
/// here) and, through a launcher, waits until it has `exec`d the command
/// line; the groups are removed if it cannot start.
async fn spawn(
    spec: &RunSpec,
    prepared: &mut Prepared,
    mut command: Command,
) -> Result<Spawned, ExecError> {
    let started = Instant::now();
    let spawned = command.spawn();
    drop(command);
    let remove = |prepared: &Prepared| {
        if let Some(c) = &prepared.cgroup {
            c.remove();
        }
    };
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            remove(prepared);
            return Err(spawn_error(spec, e));
        }
    };
    let Some(pgid) = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(rustix::process::Pid::from_raw)
    else {
        remove(prepared);
        return Err(spawn_error(spec, io::Error::other("the child has no pid")));
    };
    let guard = group::Guard::new(pgid);
    let mut started_in_group = false;
    if let Some(status) = prepared.launch_status.take() {
        let launched = tokio::task::spawn_blocking(move || launch::read_status(status))
            .await
            .unwrap_or_else(|join| Err(io::Error::other(join)));
        match launched {
            Ok(started) => started_in_group = started,
            Err(e) => {
                // The launcher exits after its report: reap it.
                let _ = child.wait().await;
                guard.disarm();
                remove(prepared);
                return Err(spawn_error(spec, e));
            }
        }
    }
    if let (Some(c), Some(pid)) = (prepared.cgroup.as_mut(), child.id()) {
        c.confirm(pid, started_in_group);
    }
    let pipe = child
        .stdout
        .take()
        .ok_or_else(|| spawn_error(spec, io::Error::other("the child has no stdout pipe")))?;
    Ok(Spawned {
        child,
        pgid,
        guard,
        pipe,
        started,
    })
}

/// Kills the group `pgid` once its leader has exited (unreaped, so the id
/// still names the group), waits until its members are gone, then reaps
/// the leader: its status.
async fn end_group(
    pgid: rustix::process::Pid,
    child: &mut tokio::process::Child,
    guard: group::Guard,
    members: Option<&std::path::Path>,
) -> io::Result<std::process::ExitStatus> {
    group::kill(pgid);
    // Killed processes take a moment to die; a sandbox's init dies last,
    // after its whole namespace. Return only once they are gone.
    for _ in 0..400 {
        if !group::members_alive(pgid, members) {
            break;
        }
        group::kill(pgid);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let status = child.wait().await?;
    guard.disarm();
    Ok(status)
}

/// The limit that ended or broke a run, from what supervision saw, what
/// the groups refused and how the leader ended.
fn limit_hit(
    timed_out: bool,
    wrote_over: bool,
    hits: Hits,
    status: std::process::ExitStatus,
    sandboxed: bool,
) -> Option<LimitHit> {
    if timed_out {
        Some(LimitHit::Time)
    } else if wrote_over {
        Some(LimitHit::Written)
    } else if hits.memory {
        Some(LimitHit::Memory)
    } else if status.signal() == Some(libc::SIGXFSZ)
        || (sandboxed && status.code() == Some(128 + libc::SIGXFSZ))
    {
        // In a sandbox the shell or bwrap reports a child's signal as 128+N.
        Some(LimitHit::FileSize)
    } else if hits.processes {
        Some(LimitHit::Processes)
    } else {
        None
    }
}

/// Run `spec.command` to completion or timeout; see the module header for the
/// guarantees.
pub async fn run(spec: &RunSpec) -> Result<RunOutcome, ExecError> {
    let (mut prepared, command) = prepare(spec, Stdio::null()).await?;
    let Spawned {
        mut child,
        pgid,
        guard,
        pipe,
        started,
    } = spawn(spec, &mut prepared, command).await?;
    let Prepared {
        log,
        cgroup,
        cg_memory,
        cg_pids,
        watch,
        launch_status: _,
    } = prepared;

    // Inside a sandbox nothing can leave the run's control groups, so an
    // empty limit group says that nothing of the run is left.
    let members = cgroup
        .as_ref()
        .filter(|_| spec.sandbox.is_some())
        .and_then(|c| c.members());
    // Dropping `done` (when supervision ends, however it ends) starts the
    // capture's grace period for processes that escaped the group.
    let (done, supervision_ended) = oneshot::channel::<()>();
    let supervise = async {
        let _done = done;
        let file = members.clone();
        let mut waiter =
            tokio::task::spawn_blocking(move || group::wait_exit(pgid, file.as_deref()));
        let overrun = overrun(watch.as_ref(), pgid);
        let stopped = tokio::select! {
            joined = &mut waiter => Stopped::Exited { leftover_killed: joined?? },
            () = deadline(started, spec, cgroup.as_ref()) => Stopped::TimedOut,
            _ = overrun => Stopped::WroteOver,
        };
        let (timed_out, wrote_over, leftover_killed) = match stopped {
            Stopped::Exited { leftover_killed } => (false, false, leftover_killed),
            killed => {
                group::kill(pgid);
                waiter.await??;
                (
                    killed == Stopped::TimedOut,
                    killed == Stopped::WroteOver,
                    false,
                )
            }
        };
        let status = end_group(pgid, &mut child, guard, members.as_deref()).await?;
        Ok::<_, io::Error>((
            status,
            timed_out,
            wrote_over,
            leftover_killed,
            started.elapsed(),
        ))
    };
    let (supervised, captured) = tokio::join!(
        supervise,
        capture::capture(pipe, log, spec.log_cap, supervision_ended)
    );

    let hits = cgroup.as_ref().map(|c| c.hits()).unwrap_or_default();
    let cpu_stalled = cgroup
        .as_ref()
        .filter(|_| spec.stall_grace.is_some())
        .and_then(|c| c.cpu_stalled());
    if let Some(c) = &cgroup {
        c.remove();
    }
    let (status, timed_out, wrote_over, leftover_killed, duration) =
        supervised.map_err(|source| ExecError::Wait {
            command: spec.command.clone(),
            source,
        })?;
    if let Some(source) = captured.read_error {
        return Err(ExecError::ReadOutput {
            command: spec.command.clone(),
            source,
        });
    }
    if let Some(source) = captured.write_error {
        return Err(ExecError::WriteLog {
            path: spec.log_path.clone(),
            source,
        });
    }
    // A run that wrote past the limit within one interval and ended is seen
    // now: its tree is still there.
    let wrote_over = wrote_over
        || match &watch {
            Some(w) => w.over_after().await,
            None => false,
        };
    let limit_hit = limit_hit(timed_out, wrote_over, hits, status, spec.sandbox.is_some());
    Ok(RunOutcome {
        limit_hit,
        cgroup_memory: cg_memory,
        cgroup_processes: cg_pids,
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        duration,
        cpu_stalled,
        log_bytes: captured.total,
        log_truncated: captured.total > spec.log_cap,
        leftover_killed,
    })
}

/// Resolves when the run has had its timeout of the machine: wall-clock
/// time since `started`, less the time its group's processes all waited for
/// a CPU, up to the spec's grace. The stall is read when the budget so far
/// runs out, and the deadline moves by what it grew.
/// What the write watchdog reads once the process group `pgid` writes past
/// its bound; never, without a watchdog.
pub(crate) async fn overrun(
    watch: Option<&writes::WriteWatch>,
    pgid: rustix::process::Pid,
) -> writes::Usage {
    match watch {
        Some(w) => {
            w.overrun(writes::Processes::Tree(pgid.as_raw_nonzero().get()))
                .await
        }
        None => std::future::pending().await,
    }
}

async fn deadline(started: Instant, spec: &RunSpec, group: Option<&cgroup::Cgroup>) {
    let grace = spec.stall_grace.unwrap_or_default();
    let mut budget = spec.timeout;
    loop {
        tokio::time::sleep_until((started + budget).into()).await;
        let Some(stalled) = group
            .filter(|_| !grace.is_zero())
            .and_then(|g| g.cpu_stalled())
        else {
            return;
        };
        let next = spec.timeout + stalled.min(grace);
        // Less than a few milliseconds more is not worth another wake-up.
        if next <= budget + Duration::from_millis(5) {
            return;
        }
        budget = next;
    }
}

/// How supervision saw the run end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    Exited { leftover_killed: bool },
    TimedOut,
    WroteOver,
}

/// The tree the write limit measures: the sandbox's, else the working
/// directory; none for a sandboxed run without a tree (environment setup).
fn written_root(spec: &RunSpec) -> Option<&std::path::Path> {
    match &spec.sandbox {
        Some((_, sandbox)) => sandbox.tree.as_deref(),
        None => Some(&spec.cwd),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crate's `assay-launch`, built beside this test binary
    /// (`target/<profile>/deps/…`) by `cargo test -p assay-exec`.
    fn launcher() -> PathBuf {
        let exe = std::env::current_exe().unwrap_or_default();
        let path = exe
            .parent()
            .and_then(|deps| deps.parent())
            .map(|dir| dir.join("assay-launch"))
            .unwrap_or_default();
        assert!(
            path.is_file(),
            "{} is not built: run `cargo test -p assay-exec` (it builds the launcher)",
            path.display()
        );
        path
    }

    /// A required group the launcher cannot join: the run is a spawn error
    /// that names the step and the system's reason, and nothing ran.
    #[tokio::test]
    async fn a_group_the_launcher_cannot_join_is_a_spawn_error_that_says_why() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ran = dir.path().join("ran");
        let spec = RunSpec {
            command: format!("echo ran > {}", ran.display()),
            cwd: dir.path().to_owned(),
            env: BTreeMap::new(),
            timeout: Duration::from_secs(60),
            stall_grace: None,
            log_path: dir.path().join("log"),
            log_cap: 1 << 20,
            limits: Limits::default(),
            sandbox: None,
        };
        let missing = dir.path().join("no-such-group/cgroup.procs");
        let procs = [cgroup::Join {
            file: std::ffi::CString::new(missing.as_os_str().as_encoded_bytes())
                .unwrap_or_default(),
            dir: None,
            required: true,
        }];
        let plan = limits::Plan::new(&spec.limits);
        let (mut command, status) = launched(
            &launcher(),
            &procs,
            &plan,
            "/bin/sh".into(),
            vec!["-c".into(), spec.command.clone().into()],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        command.stdin(Stdio::null()).stdout(Stdio::piped());
        let log = tokio::fs::File::create(&spec.log_path)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut prepared = Prepared {
            log,
            cgroup: None,
            cg_memory: false,
            cg_pids: false,
            watch: None,
            launch_status: Some(status),
        };
        let Err(ExecError::Spawn { source, .. }) = spawn(&spec, &mut prepared, command).await
        else {
            panic!("the launcher's failure was not a spawn error");
        };
        let failed = source
            .get_ref()
            .and_then(|e| e.downcast_ref::<launch::LaunchFailed>())
            .unwrap_or_else(|| panic!("not the launcher's failure: {source:?}"));
        assert_eq!(failed.step, "joining the run's control group");
        assert_eq!(
            failed.source.raw_os_error(),
            Some(libc::ENOENT),
            "{failed:?}"
        );
        assert!(!ran.exists(), "the command ran outside its group");
    }
}
