//! Start a confined command and hold it while the caller works with it: a
//! served app that assay probes and browses, which [`run`](crate::run)
//! cannot host because it waits for the end.
//!
//! [`hold`] starts `spec` exactly as `run` does — its own session and
//! process group, the sandbox, the rlimits before `exec`, the cgroup for
//! memory and processes, the write watchdog over its tree, its output
//! drained into a capped log — and returns a [`Held`] while the command
//! keeps running. A thread of its own keeps enforcing the limits for as
//! long as it is held, and ends the command the moment one of them is hit:
//!
//! - the memory limit (the OOM killer killed one of its processes, even
//!   one the command survives) or the process limit (a fork was refused):
//!   the groups' counters are read every [`HITS_EVERY`];
//! - its tree grew past [`Limits::max_written`](crate::Limits::max_written);
//! - `spec.timeout`: the longest it may be held;
//! - or it exited by itself.
//!
//! Either way, everything it started is killed: the process group, the
//! sandbox's pid namespace (a daemon that called `setsid` inside it
//! included), and whatever is left in its cgroup (a `setsid` daemon of an
//! unsandboxed command, where a cgroup could be made). [`Held::stopped`]
//! says why it stopped ([`Stop`]); [`Held::stop`] ends it and returns the
//! whole account; dropping a [`Held`] ends it too, and returns only once
//! everything is dead.
//!
//! Its stdin is a pipe the caller writes ([`Held::take_stdin`]); dropping
//! the writer closes it.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::{
    ExecError, LimitHit, Prepared, RunSpec, Spawned, capture, deadline, end_group, group,
    limit_hit, overrun, prepare, spawn,
};

/// How often a held command's groups are read for a refused fork or an
/// OOM kill.
pub const HITS_EVERY: Duration = Duration::from_millis(50);

/// Why a held command stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It exited by itself, with this exit code or signal.
    Exited {
        exit_code: Option<i32>,
        signal: Option<i32>,
    },
    /// A limit stopped it.
    Limit(LimitHit),
    /// The holder ended it ([`Held::stop`], or dropped).
    Ended,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Exited {
                exit_code: Some(code),
                ..
            } => write!(f, "exited with {code}"),
            Stop::Exited {
                signal: Some(sig), ..
            } => write!(f, "was killed by signal {sig}"),
            Stop::Exited { .. } => write!(f, "exited"),
            Stop::Limit(LimitHit::Time) => write!(f, "was held past its time bound"),
            Stop::Limit(limit) => write!(f, "hit its {} limit", limit.as_str()),
            Stop::Ended => write!(f, "was ended by assay"),
        }
    }
}

/// A held command's whole account, once it has stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldOutcome {
    pub stop: Stop,
    /// From spawn until every process of it was gone.
    pub duration: Duration,
    /// Total bytes it wrote to stdout and stderr, kept or not.
    pub log_bytes: u64,
    /// `log_bytes > log_cap`: the log holds only the first `log_cap`.
    pub log_truncated: bool,
    /// It exited by itself while other processes of its group still ran
    /// (they were killed).
    pub leftover_killed: bool,
    /// The memory limit was a cgroup's.
    pub cgroup_memory: bool,
    /// The process limit was a cgroup's.
    pub cgroup_processes: bool,
}

/// The stop, once known, for the holder's thread to read.
type Shared = Arc<(Mutex<Option<Stop>>, Condvar)>;

/// A command started by [`hold`]. Dropped: ended, everything of it killed.
pub struct Held {
    pid: u32,
    stdin: Option<io::PipeWriter>,
    end: Option<oneshot::Sender<()>>,
    stop: Shared,
    thread: Option<std::thread::JoinHandle<Result<HeldOutcome, ExecError>>>,
}

/// Starts `spec` and holds it; see the module header. `spec.timeout` is
/// the longest it is held.
///
/// The command is spawned by the holder's own thread, which lives until
/// everything of it is dead: a sandbox's `--die-with-parent` watches the
/// thread that forked it, so the caller's thread may come and go.
pub fn hold(spec: &RunSpec) -> Result<Held, ExecError> {
    let spawn_error = |source| ExecError::Spawn {
        command: spec.command.clone(),
        cwd: spec.cwd.clone(),
        source,
    };
    let (reader, writer) = io::pipe().map_err(spawn_error)?;
    let (end, ended) = oneshot::channel();
    let stop: Shared = Arc::new((Mutex::new(None), Condvar::new()));
    let shared = Arc::clone(&stop);
    let (started_tx, started_rx) = std::sync::mpsc::sync_channel(1);
    let owned = spec.clone();
    let thread = std::thread::Builder::new()
        .name("assay-hold".into())
        .spawn(move || {
            let spec = &owned;
            let not_started = || ExecError::Spawn {
                command: spec.command.clone(),
                cwd: spec.cwd.clone(),
                source: io::Error::other("the command did not start"),
            };
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(source) => {
                    let _ = started_tx.send(Err(ExecError::Spawn {
                        command: spec.command.clone(),
                        cwd: spec.cwd.clone(),
                        source,
                    }));
                    return Err(not_started());
                }
            };
            rt.block_on(async {
                let started = async {
                    let (mut prepared, command) = prepare(spec, Stdio::from(reader)).await?;
                    let spawned = spawn(spec, &mut prepared, command).await?;
                    Ok::<_, ExecError>((prepared, spawned))
                };
                match started.await {
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                        Err(not_started())
                    }
                    Ok((prepared, spawned)) => {
                        let _ = started_tx.send(Ok(spawned.child.id().unwrap_or(0)));
                        supervise(spec, prepared, spawned, ended, shared).await
                    }
                }
            })
        })
        .map_err(spawn_error)?;
    let pid = match started_rx.recv() {
        Ok(Ok(pid)) => pid,
        Ok(Err(e)) => {
            let _ = thread.join();
            return Err(e);
        }
        Err(_) => {
            let _ = thread.join();
            return Err(spawn_error(io::Error::other("the holder's thread failed")));
        }
    };
    Ok(Held {
        pid,
        stdin: Some(writer),
        end: Some(end),
        stop,
        thread: Some(thread),
    })
}

impl Held {
    /// The process that leads it (for a sandbox, the outer `bwrap`).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The writing end of its stdin, once.
    pub fn take_stdin(&mut self) -> Option<io::PipeWriter> {
        self.stdin.take()
    }

    /// Why it stopped, once it has (every process of it is gone by then);
    /// `None` while it runs.
    pub fn stopped(&self) -> Option<Stop> {
        *self.stop.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits up to `within` for it to stop: why, or `None` if it still runs.
    pub fn wait(&self, within: Duration) -> Option<Stop> {
        let (lock, changed) = &*self.stop;
        let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (guard, _) = changed
            .wait_timeout_while(guard, within, |stop| stop.is_none())
            .unwrap_or_else(|p| p.into_inner());
        *guard
    }

    /// Ends it (if it still runs) and returns its account, once every
    /// process of it is gone and its output is drained.
    pub fn stop(mut self) -> Result<HeldOutcome, ExecError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<HeldOutcome, ExecError> {
        self.stdin = None;
        if let Some(end) = self.end.take() {
            let _ = end.send(());
        }
        let gone = |why: &str| ExecError::Wait {
            command: String::new(),
            source: io::Error::other(why.to_owned()),
        };
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(outcome)) => outcome,
            Some(Err(_)) => Err(gone("the holder's thread panicked")),
            None => Err(gone("already stopped")),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.finish();
        }
    }
}

/// What ended supervision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Exited { leftover_killed: bool },
    TimedOut,
    WroteOver,
    Refused,
    Ended,
}

/// Resolves once a group of `cgroup` counts an OOM kill or a refused fork.
async fn refused(cgroup: &crate::cgroup::Cgroup) {
    loop {
        let hits = cgroup.hits();
        if hits.memory || hits.processes {
            return;
        }
        tokio::time::sleep(HITS_EVERY).await;
    }
}

/// Holds the started command until it stops or `ended` resolves, then
/// kills everything of it, publishes why in `shared`, and drains its log.
async fn supervise(
    spec: &RunSpec,
    prepared: Prepared,
    spawned: Spawned,
    ended: oneshot::Receiver<()>,
    shared: Shared,
) -> Result<HeldOutcome, ExecError> {
    let Prepared {
        log,
        cgroup,
        cg_memory,
        cg_pids,
        watch,
        launch_status: _,
    } = prepared;
    let Spawned {
        mut child,
        pgid,
        guard,
        pipe,
        started,
    } = spawned;
    let publish = |stop: Stop| {
        let (lock, changed) = &*shared;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = Some(stop);
        changed.notify_all();
    };
    let (done, supervision_ended) = oneshot::channel::<()>();
    let supervised = async {
        let _done = done;
        let mut waiter = tokio::task::spawn_blocking(move || group::wait_exit(pgid, None));
        let overrun = overrun(watch.as_ref(), pgid);
        let refusal = async {
            match &cgroup {
                Some(c) => refused(c).await,
                None => std::future::pending().await,
            }
        };
        let event = tokio::select! {
            joined = &mut waiter => Event::Exited { leftover_killed: joined?? },
            () = deadline(started, spec, cgroup.as_ref()) => Event::TimedOut,
            _ = overrun => Event::WroteOver,
            () = refusal => Event::Refused,
            _ = ended => Event::Ended,
        };
        if !matches!(event, Event::Exited { .. }) {
            group::kill(pgid);
            waiter.await??;
        }
        let status = end_group(pgid, &mut child, guard, None).await?;
        let hits = cgroup.as_ref().map(|c| c.hits()).unwrap_or_default();
        if let Some(c) = &cgroup {
            // Kills what left the group but not the cgroup (an unsandboxed
            // `setsid` daemon), so the log's pipe closes too.
            c.remove();
        }
        let wrote_over = event == Event::WroteOver
            || match &watch {
                Some(w) => w.over_after().await,
                None => false,
            };
        let limit = limit_hit(
            event == Event::TimedOut,
            wrote_over,
            hits,
            status,
            spec.sandbox.is_some(),
        );
        let stop = match (limit, event) {
            (Some(limit), _) => Stop::Limit(limit),
            (None, Event::Ended) => Stop::Ended,
            (None, _) => Stop::Exited {
                exit_code: status.code(),
                signal: status.signal(),
            },
        };
        publish(stop);
        let leftover_killed = matches!(
            event,
            Event::Exited {
                leftover_killed: true
            }
        );
        Ok::<_, io::Error>((stop, leftover_killed, started.elapsed()))
    };
    let (supervised, captured) = tokio::join!(
        supervised,
        capture::capture(pipe, log, spec.log_cap, supervision_ended)
    );
    let (stop, leftover_killed, duration) = match supervised {
        Ok(done) => done,
        Err(source) => {
            if let Some(c) = &cgroup {
                c.remove();
            }
            publish(Stop::Ended);
            return Err(ExecError::Wait {
                command: spec.command.clone(),
                source,
            });
        }
    };
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
    Ok(HeldOutcome {
        stop,
        duration,
        log_bytes: captured.total,
        log_truncated: captured.total > spec.log_cap,
        leftover_killed,
        cgroup_memory: cg_memory,
        cgroup_processes: cg_pids,
    })
}
