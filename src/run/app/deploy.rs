//! One deployment of a built tree: the start command served in the sandbox
//! every run has (crates/assay-exec/src/sandbox.rs: its own user, pid and
//! network namespaces, read-only system, only its tree writable, nothing of
//! the cache or the pipeline visible), reached by assay only through the
//! app's network namespace ([`NetNs`]).
//!
//! On this machine the app is held by [`assay_exec::hold`] under the
//! limits of a build ([`limits`]: its cgroup's memory and processes, the
//! write watchdog over its tree, the file size), enforced for as long as
//! it is deployed: the first limit it hits stops it, everything of it is
//! killed, and the layer it was in records why (a deployment that never
//! listens, or a `(deployment)` check beside the probes or flows it
//! broke).
//!
//! Inside, a small script starts the task's services, then waits on its
//! stdin for assay's go-ahead before it `exec`s the start command. Before
//! the go-ahead assay waits for every service's port, then checks that
//! nothing listens on the app's port yet: if something does, the port was
//! taken by the harness's side (a service of the task), never by the app.
//!
//! Dropping the [`Deployment`] ends the hold, which returns once every
//! process of the app is gone — a daemon that called `setsid` included
//! (the pid namespace's init dies with the sandbox).
//!
//! On the docker executor a [`Deployment`] holds a container instead
//! ([`super::docker`]), reached and probed the same way; removing the
//! container ends every process of it.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use assay_browser::{Flow, StepResult};
use assay_exec::netns::NetNs;
use assay_exec::{Bwrap, Held, Limits, Sandbox, Stop};

use super::http::{self, HttpError, Request};
use crate::model::rules::app::{self, Check, Outcome, Probe, Start};

/// How often readiness is polled (a connect to the loopback: microseconds).
const POLL: Duration = Duration::from_millis(5);
/// How long a failure waits for the hold to record a stop it may have
/// caused: the kill and the teardown take a few milliseconds.
const SETTLE: Duration = Duration::from_millis(500);
/// Bytes of an app's output kept in its log.
pub(crate) const LOG_CAP: u64 = 1 << 20;

/// How long a deployment may be held at most: past it, it is stopped as
/// over its time bound. The layers end it long before.
const HELD_S: u64 = 3600;

/// The name of the check a probes or browser layer gains when the app
/// stopped during it (a limit hit, or it exited).
pub(crate) const STOPPED_CHECK: &str = "(deployment)";

/// A served app. Dropped: every process of it is killed.
pub(crate) struct Deployment {
    process: Process,
    ns: NetNs,
    port: u16,
    bwrap: Bwrap,
}

/// What holds a deployment's processes: the hold of the local sandbox, or
/// what another executor started (a container), which ends them when
/// dropped.
pub(super) enum Process {
    Local(Held),
    Container { pid: i32, _held: Box<dyn Send> },
}

impl Process {
    /// The first process, as this machine numbers it.
    fn pid(&self) -> Option<i32> {
        match self {
            Process::Local(held) => i32::try_from(held.pid()).ok(),
            Process::Container { pid, .. } => Some(*pid),
        }
    }

    /// Why the local hold stopped the app, waiting up to `within` for it;
    /// `None` while it serves, and for a container (its removal is what
    /// ends it).
    fn wait(&self, within: Duration) -> Option<Stop> {
        match self {
            Process::Local(held) => held.wait(within),
            Process::Container { .. } => None,
        }
    }

    /// [`Process::wait`] without waiting.
    fn stopped(&self) -> Option<Stop> {
        match self {
            Process::Local(held) => held.stopped(),
            Process::Container { .. } => None,
        }
    }
}

/// The sandbox of a deployment or a build over `tree`.
fn sandbox(tree: &Path) -> Sandbox {
    Sandbox {
        tree: Some(tree.to_owned()),
        env_dir: None,
        env_at: None,
        env_writable: false,
        network: false,
        read_only: Vec::new(),
        tmp_bytes: 64 << 20,
        home_bytes: 16 << 20,
        protect: Vec::new(),
        guard: None,
        binds: Vec::new(),
    }
}

/// The last lines of a log, for a failure's detail.
pub(crate) fn tail(log: &Path) -> String {
    const MAX: usize = 600;
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text[text.len().saturating_sub(MAX)..]);
    text.trim().to_owned()
}

/// The limits of an app's build and deployment: the processes, memory,
/// file size and bytes added to its tree of a test run of the local
/// executor.
pub(crate) fn limits() -> Limits {
    Limits {
        max_file_size: Some(512 << 20),
        max_processes: Some(512),
        max_open_files: Some(4096),
        max_memory: Some(2 << 30),
        no_core: true,
        max_written: Some(WRITTEN),
    }
}

/// Bytes a build or a deployment may add to its tree.
const WRITTEN: u64 = 512 << 20;

/// The environment of a build or a deployment: nothing of assay's.
fn env() -> std::collections::BTreeMap<String, String> {
    [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", assay_exec::sandbox::HOME),
        ("LANG", "C.UTF-8"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// How a build ended: run by `assay_exec::run` in the sandbox every run
/// has, with its limits (a cgroup where one can be made, the write
/// watchdog over the tree, the timeout over the whole process group).
pub(crate) fn build(
    bwrap: &Bwrap,
    tree: &Path,
    command: &str,
    within: Duration,
    log: &Path,
) -> Outcome {
    let spec = assay_exec::RunSpec {
        command: command.to_owned(),
        cwd: tree.to_owned(),
        env: env(),
        timeout: within,
        stall_grace: None,
        log_path: log.to_owned(),
        log_cap: 1 << 20,
        limits: limits(),
        sandbox: Some((bwrap.clone(), sandbox(tree))),
    };
    let ran = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| {
            rt.block_on(assay_exec::run(&spec))
                .map_err(|e| format!("{e:#}"))
        });
    let outcome = match ran {
        Ok(o) => o,
        Err(e) => {
            return Outcome::Harness {
                detail: format!("cannot run the build: {e}"),
            };
        }
    };
    match (outcome.limit_hit, outcome.exit_code) {
        (Some(assay_exec::LimitHit::Time), _) => Outcome::Fail {
            detail: format!("the build ran past {} s", within.as_secs()),
        },
        (Some(limit), _) => Outcome::Fail {
            detail: format!("the build hit its {} limit: {}", limit.as_str(), tail(log)),
        },
        (None, Some(0)) => Outcome::Pass,
        (None, Some(code)) => Outcome::Fail {
            detail: format!("the build exited with {code}: {}", tail(log)),
        },
        (None, None) => Outcome::Fail {
            detail: format!(
                "the build ended on signal {}: {}",
                outcome.signal.unwrap_or(0),
                tail(log)
            ),
        },
    }
}

/// Whether something accepts connections on `port` of this thread's
/// loopback.
fn knocks(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port)),
        Duration::from_millis(200),
    )
    .is_ok()
}

/// Whether something accepts connections on `port` in `ns`.
pub(super) fn listening(ns: &NetNs, port: u16) -> bool {
    ns.run(move || knocks(port)).unwrap_or(false)
}

/// Waits until `port` listens in `ns`, process `pid` ends, or `within`
/// passes: polled from one thread in the namespace.
pub(super) fn wait_listening(ns: &NetNs, pid: i32, port: u16, within: Duration) -> bool {
    let until = Instant::now() + within;
    ns.run(move || {
        loop {
            if knocks(port) {
                return true;
            }
            if !assay_exec::process_alive(pid) || Instant::now() >= until {
                return false;
            }
            std::thread::sleep(POLL);
        }
    })
    .unwrap_or(false)
}

/// The script run inside: the services, the wait for the go-ahead, the start.
pub(super) fn script(start: &Start) -> String {
    let mut s = String::new();
    for service in &start.services {
        s.push_str(&format!("( {} ) &\n", service.command));
    }
    s.push_str("read -r go || exit 0\nexec </dev/null\nexec /bin/sh -c \"$ASSAY_START\"\n");
    s
}

impl Deployment {
    /// A deployment whose processes `process` holds, reached through `ns`.
    pub(super) fn held(process: Process, ns: NetNs, port: u16, bwrap: &Bwrap) -> Deployment {
        Deployment {
            process,
            ns,
            port,
            bwrap: bwrap.clone(),
        }
    }

    /// Starts `start` over the built `tree` under the deployment's
    /// [`limits`]; the deployment layer's outcome when it does not come
    /// to listen.
    pub(crate) fn start(
        bwrap: &Bwrap,
        tree: &Path,
        start: &Start,
        log: &Path,
    ) -> Result<Deployment, Outcome> {
        Deployment::start_limited(bwrap, tree, start, log, limits())
    }

    /// [`Deployment::start`] under `limits`.
    pub(crate) fn start_limited(
        bwrap: &Bwrap,
        tree: &Path,
        start: &Start,
        log: &Path,
        limits: Limits,
    ) -> Result<Deployment, Outcome> {
        let harness = |detail: String| Outcome::Harness { detail };
        let mut env = env();
        env.insert("ASSAY_START".into(), start.command.clone());
        env.insert("PORT".into(), start.port.to_string());
        let spec = assay_exec::RunSpec {
            command: script(start),
            cwd: tree.to_owned(),
            env,
            timeout: Duration::from_secs(HELD_S),
            stall_grace: None,
            log_path: log.to_owned(),
            log_cap: LOG_CAP,
            limits,
            sandbox: Some((bwrap.clone(), sandbox(tree))),
        };
        let mut held = assay_exec::hold(&spec)
            .map_err(|e| harness(format!("cannot start the sandbox: {e:#}")))?;
        let ns = NetNs::of_child(held.pid(), Duration::from_secs(10))
            .map_err(|e| harness(format!("the sandbox's network namespace: {e}")))?;
        let stdin = held.take_stdin();
        let deployment = Deployment {
            process: Process::Local(held),
            ns,
            port: start.port,
            bwrap: bwrap.clone(),
        };
        let ready = Duration::from_secs(start.ready_s);
        for service in &start.services {
            if !deployment.wait_listening(service.port, ready) {
                if let Some(stop @ Stop::Limit(_)) = deployment.process.wait(SETTLE) {
                    return Err(Outcome::Fail {
                        detail: format!(
                            "the app's sandbox {stop} before the app started: {}",
                            tail(log)
                        ),
                    });
                }
                return Err(harness(format!(
                    "the task's service `{}` never listened on port {}",
                    service.command, service.port
                )));
            }
        }
        if listening(&deployment.ns, start.port) {
            return Err(Outcome::Taken {
                detail: format!(
                    "port {} was taken before the app started (by the task's services)",
                    start.port
                ),
            });
        }
        let go = stdin.map(|mut stdin| stdin.write_all(b"go\n"));
        if !matches!(go, Some(Ok(()))) {
            return Err(harness("the sandbox ended before the app started".into()));
        }
        if deployment.wait_listening(start.port, ready) {
            // Listening, but stopped by a limit since: not deployed.
            return match deployment.process.stopped() {
                Some(stop @ Stop::Limit(_)) => Err(Outcome::Fail {
                    detail: format!("the app {stop}: {}", tail(log)),
                }),
                _ => Ok(deployment),
            };
        }
        Err(match deployment.process.wait(SETTLE) {
            Some(stop @ Stop::Limit(_)) => Outcome::Fail {
                detail: format!(
                    "the app {stop} before listening on port {}: {}",
                    start.port,
                    tail(log)
                ),
            },
            Some(stop) => Outcome::Fail {
                detail: format!(
                    "the app {stop} without listening on port {}: {}",
                    start.port,
                    tail(log)
                ),
            },
            None => Outcome::Fail {
                detail: format!(
                    "nothing listened on port {} within {} s: {}",
                    start.port,
                    start.ready_s,
                    tail(log)
                ),
            },
        })
    }

    /// The process that leads the deployment's sandbox.
    #[cfg(test)]
    pub(crate) fn pid(&self) -> u32 {
        self.process.pid().map_or(0, |pid| pid as u32)
    }

    /// Waits up to `within` for the app to stop: why, or `None`.
    #[cfg(test)]
    pub(crate) fn wait_stopped(&self, within: Duration) -> Option<Stop> {
        self.process.wait(within)
    }

    /// Why the app stopped while it was deployed, as the check a probes or
    /// browser layer gains; `None` while it still serves.
    fn stopped_check(&self, failed: bool) -> Option<Check> {
        // A failed check may be the first sign of a stop being recorded.
        let stop = if failed {
            self.process.wait(SETTLE)
        } else {
            self.process.stopped()
        }?;
        Some(Check {
            name: STOPPED_CHECK.into(),
            outcome: Outcome::Fail {
                detail: format!("the app {stop} while it was deployed"),
            },
            ms: 0,
        })
    }

    /// Waits until `port` listens, the sandbox ends, or `within` passes.
    fn wait_listening(&self, port: u16, within: Duration) -> bool {
        match self.process.pid() {
            Some(pid) => wait_listening(&self.ns, pid, port, within),
            None => false,
        }
    }

    /// Every probe, in order, each with `nonce` and `within` for its
    /// answer; and [`STOPPED_CHECK`] when the app stopped meanwhile.
    pub(crate) fn probe(&self, probes: &[Probe], nonce: &str, within: Duration) -> Vec<Check> {
        let probes = probes.to_vec();
        let nonce = nonce.to_owned();
        let port = self.port;
        let mut checks = self
            .ns
            .run(move || {
                probes
                    .iter()
                    .map(|p| one(p, port, &nonce, within))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_else(|e| {
                vec![Check {
                    name: "(probes)".into(),
                    outcome: Outcome::Harness {
                        detail: format!("cannot join the app's network namespace: {e}"),
                    },
                    ms: 0,
                }]
            });
        let failed = checks.iter().any(|c| !c.outcome.passed());
        // First: the layer's detail names the first failing check.
        if let Some(stopped) = self.stopped_check(failed) {
            checks.insert(0, stopped);
        }
        checks
    }
}

fn one(probe: &Probe, port: u16, nonce: &str, within: Duration) -> Check {
    let started = Instant::now();
    let path = app::with_nonce(&probe.path, nonce);
    let body = probe
        .body
        .as_deref()
        .map(|b| app::with_nonce(b, nonce))
        .unwrap_or_default();
    let headers: Vec<(String, String)> = probe
        .headers
        .iter()
        .map(|(n, v)| (n.clone(), app::with_nonce(v, nonce)))
        .collect();
    let request = Request {
        method: &probe.method,
        path: &path,
        headers: &headers,
        body: body.as_bytes(),
    };
    let outcome = match http::send(port, &request, within) {
        Ok(response) => match app::unmet(&probe.expect, nonce, &response) {
            None => Outcome::Pass,
            Some(detail) => Outcome::Fail { detail },
        },
        Err(HttpError::TimedOut) => Outcome::TimedOut {
            detail: format!("no answer within {} s", within.as_secs_f32()),
        },
        Err(e) => Outcome::Fail {
            detail: e.to_string(),
        },
    };
    Check {
        name: probe.name.clone(),
        outcome,
        ms: started.elapsed().as_millis() as u64,
    }
}

impl Deployment {
    /// Every flow, in order, each in a fresh Chromium (`chromium`, a path)
    /// launched into the app's network namespace, within `within`, with
    /// the steps it ran (their screenshots). A browser that cannot start or
    /// breaks is the harness's; a step that fails is the app's.
    pub(crate) fn browse(
        &self,
        flows: &[Flow],
        chromium: &Path,
        within: Duration,
    ) -> Vec<(Check, Vec<StepResult>)> {
        let base_url = format!("http://127.0.0.1:{}", self.port);
        let mut checks: Vec<(Check, Vec<StepResult>)> = flows
            .iter()
            .map(|flow| {
                let started = Instant::now();
                let cmd = self.chromium(chromium);
                let (outcome, steps) = match assay_browser::run_flow(cmd, &base_url, flow, within) {
                    Ok(done) => {
                        let outcome = match done.failed_at.and_then(|i| done.steps.get(i)) {
                            None => Outcome::Pass,
                            Some(step) => Outcome::Fail {
                                detail: format!("step {}: {}", step.index + 1, step.detail),
                            },
                        };
                        (outcome, done.steps)
                    }
                    Err(e) => (
                        Outcome::Harness {
                            detail: e.to_string(),
                        },
                        Vec::new(),
                    ),
                };
                let check = Check {
                    name: flow.name.clone(),
                    outcome,
                    ms: started.elapsed().as_millis() as u64,
                };
                (check, steps)
            })
            .collect();
        let failed = checks.iter().any(|(c, _)| !c.outcome.passed());
        if let Some(stopped) = self.stopped_check(failed) {
            checks.insert(0, (stopped, Vec::new()));
        }
        checks
    }
}

impl Deployment {
    /// `chromium` confined as an app is: under bubblewrap (read-only
    /// system, its own pid, ipc and uts namespaces and, as root, its own
    /// uid; a fresh `/tmp` holding its profile), started inside the app's
    /// network namespace, so it reaches the app's loopback and nothing
    /// else. The DevTools pipe (fds 3 and 4) passes through bwrap.
    fn chromium(&self, chromium: &Path) -> Command {
        let mut sandbox = sandbox(Path::new("/"));
        sandbox.tree = None;
        // The namespace joined before bwrap starts: bwrap must not make a
        // new one, which would leave the browser without the app.
        sandbox.network = true;
        sandbox.tmp_bytes = 512 << 20;
        sandbox.home_bytes = 64 << 20;
        if let Some(dir) = chromium.parent().filter(|d| !d.starts_with("/usr")) {
            sandbox.read_only.push(dir.to_owned());
        }
        let uid = self.bwrap.next_uid().unwrap_or(0);
        let (program, args) = self.bwrap.command_line(&sandbox, uid, "exec \"$0\" \"$@\"");
        let mut cmd = Command::new(program);
        cmd.args(args)
            .arg(chromium)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", assay_exec::sandbox::HOME)
            .env("LANG", "C.UTF-8");
        self.ns.enter_on_exec(&mut cmd);
        cmd
    }
}

/// A fresh random token for `{nonce}`: 12 bytes of a run's fresh seed, in hex.
pub(crate) fn nonce() -> String {
    let seed = crate::run::fresh_seed();
    seed[..12].iter().map(|b| format!("{b:02x}")).collect()
}
