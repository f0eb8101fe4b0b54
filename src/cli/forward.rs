//! `assay forward PORT SOCKET -- COMMAND…` (hidden): the first process of an
//! agent's sandbox. It listens on the sandbox's own loopback at PORT and
//! passes each connection to the egress proxy's unix socket bound in from
//! the host, runs COMMAND (the agent) and exits as it did
//! (`src/stages/attempt/egress.rs`, docs/agents.md).

use std::path::PathBuf;

use clap::Args;

use super::shared::Failure;

/// Pass loopback connections to the proxy's socket while a command runs.
#[derive(Args, Debug)]
pub(crate) struct ForwardArgs {
    port: u16,
    socket: PathBuf,
    /// The agent's command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

pub(crate) fn run(args: ForwardArgs) -> Result<i32, Failure> {
    Ok(crate::run::attempt::egress::forward(
        args.port,
        &args.socket,
        &args.command,
    ))
}
