//! `assay completions SHELL`: the shell's completion script for assay's
//! commands and flags, on stdout (hidden commands left out).

use clap::Args;
use clap_complete::Shell;

use super::shared::Failure;
use crate::exit;

/// Print the completion script for a shell.
///
/// `assay completions bash > ~/.local/share/bash-completion/completions/assay`,
/// `assay completions zsh > ~/.zfunc/_assay`, `assay completions fish >
/// ~/.config/fish/completions/assay.fish`.
#[derive(Args, Debug)]
pub(crate) struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    shell: Shell,
}

/// `full` is assay's whole command line (`Cli::command()`).
pub(crate) fn run(args: CompletionsArgs, full: clap::Command) -> Result<i32, Failure> {
    // The command line without its hidden commands (clap_complete would
    // offer them): the same arguments and the visible subcommands.
    let mut cmd = clap::Command::new("assay")
        .version(env!("CARGO_PKG_VERSION"))
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|c| !c.is_hide_set()).cloned());
    clap_complete::generate(args.shell, &mut cmd, "assay", &mut std::io::stdout());
    Ok(exit::OK)
}
