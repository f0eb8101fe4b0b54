//! The launch of an agent's try, one recipe for the coordinator's
//! executors and the Slurm worker: the workspace is the process's tree
//! and scratch, its inputs, output directory and tools are bound at
//! assay's fixed places (`crate::run::attempt`), and with a proxied
//! endpoint assay's own binary and the proxy's socket are bound too, for
//! the forwarder the command starts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assay_exec::Bind;

use super::{Agent, EnvHandle, Launch};
use crate::run::attempt as a;

/// Where a try's binds come from on the host.
pub(crate) struct Mounts {
    /// The prompt and the command (`/assay/in`, read-only).
    pub(crate) input: PathBuf,
    /// The transcript's directory (`/assay/out`, writable).
    pub(crate) out: PathBuf,
    /// The agent's tools (`/assay/agent`, read-only).
    pub(crate) tools: PathBuf,
    /// The proxy's socket, when the agent's endpoint is proxied.
    pub(crate) socket: Option<PathBuf>,
}

impl Mounts {
    /// The binds: inputs, output and tools; with a proxy, assay's own
    /// binary (the forwarder) and the socket.
    pub(crate) fn binds(self) -> Result<Vec<Bind>, String> {
        let bind = |host: PathBuf, at: &str, writable| Bind {
            host,
            at: at.into(),
            writable,
        };
        let mut binds = vec![
            bind(self.input, a::IN, false),
            bind(self.out, a::OUT, true),
            bind(self.tools, a::AGENT_AT, false),
        ];
        if let Some(socket) = self.socket {
            let exe = std::env::current_exe().map_err(|e| format!("assay's own path: {e}"))?;
            binds.push(bind(exe, a::BIN, false));
            binds.push(bind(socket, a::SOCKET, true));
        }
        Ok(binds)
    }
}

/// The command of a try: the task's `command.sh`, behind the forwarder
/// to the proxy's socket when the endpoint is proxied.
pub(crate) fn command(proxied: bool) -> String {
    match proxied {
        true => format!(
            "exec {} forward {} {} -- /bin/sh {}/command.sh",
            a::BIN,
            a::PORT,
            a::SOCKET,
            a::IN
        ),
        false => format!("exec /bin/sh {}/command.sh", a::IN),
    }
}

/// The process of a try, as its executor is handed it: `tree` (the
/// workspace) as its tree and scratch, the task's environment, a
/// plain wall-clock `timeout`, and what the agent sees.
pub(crate) fn launch<'a>(
    command: String,
    tree: &'a Path,
    env: &'a EnvHandle,
    (log_path, log_cap): (PathBuf, u64),
    timeout: Duration,
    agent: Agent,
) -> Launch<'a> {
    Launch {
        command,
        tree: Some(tree),
        env,
        setup: false,
        env_at: None,
        scratch: tree,
        log_path,
        log_cap,
        timeout,
        stall_grace: None,
        attempt: None,
        protect: Vec::new(),
        report_file: None,
        watch: Vec::new(),
        warm: &[],
        agent: Some(agent),
    }
}
