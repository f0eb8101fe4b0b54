//! A line per phase on the terminal, for the test binaries that run for
//! minutes (harbor, deepswe, slurm): without it they print nothing until
//! they end. libtest captures a passing test's `eprintln!`, so the line is
//! written to the process's stderr directly, which it does not capture.
//! Once a binary has said one phase, every assay command its tests run
//! (`Project::command`) is a phase too; the other binaries stay quiet.

use std::io::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static ON: AtomicBool = AtomicBool::new(false);

/// Whether this test binary reports its phases.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// `  [harbor 3m07s] what`: the test binary's name and the time since its
/// first phase.
pub fn phase(what: &str) {
    ON.store(true, Ordering::Relaxed);
    assay_testkit::echo_panics();
    static START: OnceLock<Instant> = OnceLock::new();
    let secs = START.get_or_init(Instant::now).elapsed().as_secs();
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe.file_stem().unwrap_or_default().to_string_lossy();
    // Cargo names a test binary `<name>-<hash>`.
    let name = stem.rsplit_once('-').map_or(&*stem, |(n, _)| n);
    let _ = writeln!(
        std::io::stderr(),
        "  [{name} {}m{:02}s] {what}",
        secs / 60,
        secs % 60
    );
}
