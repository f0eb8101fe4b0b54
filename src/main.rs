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

fn main() -> ExitCode {
    // `assay __assay-launch …` starts one run's command (assay_exec::launch)
    // and never returns: nothing else of assay may run first.
    assay_exec::launch::dispatch();
    install_launcher();
    // A closed pipe (`assay show … | head`) is not an error.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
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
