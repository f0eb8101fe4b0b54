//! Processes on the host, found by a marker in their environment: for tests
//! that a build leaves nothing running.

use std::process::Command;

/// Pids of the live processes whose initial environment holds `var=value`.
/// Every descendant of a process inherits its environment, so this finds a
/// whole process tree on the host whatever pid namespace it ran in.
pub fn processes_with_env(var: &str, value: &str) -> Vec<u32> {
    let needle = format!("{var}={value}");
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(environ) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        let marked = environ.split(|b| *b == 0).any(|kv| kv == needle.as_bytes());
        if marked && process_alive(pid) {
            pids.push(pid);
        }
    }
    pids
}

/// A zombie is dead: only its parent has not reaped it yet.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => false,
    }
}

/// Waits (a bounded moment: SIGKILL is asynchronous) for every process
/// marked with `var=value` to be gone; kills and returns the survivors.
pub fn survivors(var: &str, value: &str) -> Vec<u32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let alive = processes_with_env(var, value);
        if alive.is_empty() || std::time::Instant::now() > deadline {
            for p in &alive {
                let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
            }
            return alive;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Live processes on the host whose command line holds `token`.
pub fn live_with(token: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&cmd).contains(token)
            && process_alive(pid)
        {
            out.push(pid);
        }
    }
    out
}
