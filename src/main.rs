//! `assay`: turns merged pull requests into coding-agent benchmark tasks, grades
//! agent sessions against them, and publishes releases whose every number can
//! be checked from a hash. Clap at the edge; each command lives in `cli/`.

mod cli;
mod exit;
mod model;
mod nodes;
mod ops;
mod pipeline;
mod plan;
mod release;
mod render;
mod run;
mod sessions;
mod words;

use std::process::ExitCode;

use clap::Parser;

/// How a shell reports a process that a closed pipe ended: 128 + SIGPIPE.
const CLOSED_OUTPUT: i32 = 128 + libc::SIGPIPE;

/// A print to a closed stdout or stderr (Rust's `println!` panics on it)
/// ends the process quietly with [`CLOSED_OUTPUT`], as a reader that
/// stopped reading expects; any other panic is reported as before.
fn quiet_on_closed_output() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to std") && message.contains("Broken pipe") {
            std::process::exit(CLOSED_OUTPUT);
        }
        report(info)
    }));
}

fn main() -> ExitCode {
    // `assay __assay-launch …` starts one run's command (assay_exec::launch)
    // and never returns: nothing else of assay may run first.
    assay_exec::launch::dispatch();
    install_launcher();
    // SIGPIPE stays ignored (Rust's default): a write to a pipe whose
    // reader is gone (a browser or a run that exited, hostile or not) fails
    // that write, and never ends the build. A closed stdout or stderr
    // (`assay show … | head`) ends assay quietly.
    quiet_on_closed_output();
    let args = match cli::Cli::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE as u8
            } else {
                exit::OK as u8
            });
        }
    };
    let code = match cli::run(args) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("{:?}", failure.report);
            failure.code
        }
    };
    ExitCode::from(code as u8)
}

/// Runs are started through this binary acting as their launcher:
/// `/proc/self/exe` names this very binary in the new process, even once the
/// file on disk was replaced or removed (a rebuild during a long build).
fn install_launcher() {
    let exe = std::path::Path::new("/proc/self/exe");
    if exe.exists() {
        assay_exec::launch::install(exe.to_path_buf());
    }
}
