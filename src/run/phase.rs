//! Phase timers, a profiling aid: with `ASSAY_PHASES` set in the
//! environment, each mark prints to stderr the wall time and this thread's
//! CPU time since the previous mark (CPU time is what a ratio between two
//! sizes can trust on a machine shared with other work).

use std::time::Instant;

pub(crate) struct Phases {
    what: &'static str,
    last: Option<(Instant, f64)>,
    cpu: bool,
}

impl Phases {
    pub(crate) fn new(what: &'static str) -> Self {
        let on = std::env::var_os("ASSAY_PHASES").is_some();
        Phases {
            what,
            last: on.then(|| (Instant::now(), assay_engine::thread_cpu_secs())),
            cpu: true,
        }
    }

    /// Wall time alone, for work that awaits.
    pub(crate) fn wall(what: &'static str) -> Self {
        Phases {
            cpu: false,
            ..Phases::new(what)
        }
    }

    pub(crate) fn mark(&mut self, phase: &str) {
        if let Some((wall, cpu)) = self.last {
            let now = assay_engine::thread_cpu_secs();
            let wall_s = wall.elapsed().as_secs_f64();
            if self.cpu {
                eprintln!(
                    "phase {} {phase}: {wall_s:.3} s wall, {:.3} s cpu, {} MB resident",
                    self.what,
                    now - cpu,
                    resident_mb()
                );
            } else {
                eprintln!("phase {} {phase}: {wall_s:.3} s wall", self.what);
            }
            self.last = Some((Instant::now(), now));
        }
    }
}

/// The process's resident memory in MB, from `/proc/self/statm` (0 where
/// there is none).
fn resident_mb() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    pages * 4096 / 1_000_000
}
