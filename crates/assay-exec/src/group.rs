//! The child's process group: observe the leader's exit without reaping it,
//! find and kill what is left, and kill everything if the run is abandoned.

use std::io;
use std::path::Path;

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

/// Kills the group when dropped armed: a run whose future is dropped (caller
/// cancelled, panic) must not leave its processes running.
pub(crate) struct Guard {
    pgid: Option<Pid>,
}

impl Guard {
    pub(crate) fn new(pgid: Pid) -> Self {
        Self { pgid: Some(pgid) }
    }

    /// Call once the leader is reaped: from then on its pid may be reused, so
    /// the group id must not be signalled again.
    pub(crate) fn disarm(mut self) {
        self.pgid = None;
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            kill(pgid);
            // The leader too: until a launcher has made the group, it is
            // the only process of the run.
            let _ = rustix::process::kill_process(pgid, Signal::KILL);
        }
    }
}

/// SIGKILL every process of the group. Only call while the leader is not yet
/// reaped (alive or zombie), so the id cannot name another group. An empty
/// group (ESRCH) is fine.
pub(crate) fn kill(pgid: Pid) {
    let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
}

/// Block until the leader `pgid` has exited, leaving it unreaped (a zombie
/// keeps its pid, hence the group id, reserved), then report whether other
/// processes of its group are still alive (`members`: see
/// [`has_other_members`]). Meant for a blocking thread.
pub(crate) fn wait_exit(pgid: Pid, members: Option<&Path>) -> io::Result<bool> {
    loop {
        match rustix::process::waitid(
            WaitId::Pid(pgid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Ok(_) => return Ok(has_other_members(pgid, members)),
            Err(Errno::INTR) => continue,
            Err(errno) => return Err(errno.into()),
        }
    }
}

/// After the group was killed: whether members are still dying. A sandbox's
/// pid-namespace init stays a live member until the kernel has killed every
/// process of its namespace, so waiting for this covers processes that left
/// the group with `setsid` inside the sandbox too.
pub(crate) fn members_alive(pgid: Pid, members: Option<&Path>) -> bool {
    has_other_members(pgid, members)
}

/// Whether a live process other than the leader belongs to group `pgid`.
///
/// `kill(-pgid, 0)` cannot answer this: the unreaped leader itself makes it
/// succeed. So scan `/proc` (every process of the machine: 1.4–1.9 ms a
/// scan here); where there is none (not Linux) the answer is `false` and
/// the group is still killed, just not reported.
///
/// `members` is the `cgroup.procs` of a control group every process of the
/// run but a launcher that stayed its leader is in and none can leave (a
/// sandboxed run's limit group). It lists no zombie; when it lists no one,
/// no process of the run is alive and `/proc` is not scanned.
fn has_other_members(pgid: Pid, members: Option<&Path>) -> bool {
    if members.is_some_and(|f| std::fs::read_to_string(f).is_ok_and(|t| t.trim().is_empty())) {
        return false;
    }
    let leader = pgid.as_raw_nonzero().get();
    group_members(leader).into_iter().any(|pid| pid != leader)
}

/// The live (not zombie) processes of group `pgid`, from `/proc`; none
/// where there is no `/proc`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| proc_stat(pid).is_some_and(|(state, pgrp)| pgrp == pgid && is_live(state)))
        .collect()
}

fn is_live(state: char) -> bool {
    // Z: zombie, X: dead. Neither runs code any more.
    !matches!(state, 'Z' | 'X')
}

/// `(state, pgrp)` from `/proc/<pid>/stat`; `None` if it vanished.
fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses,
    // so split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Whether `pid` names a process that can still run: it exists and is not a
/// zombie. Handy to check that a run left nothing behind.
pub fn process_alive(pid: i32) -> bool {
    let Some(pid) = Pid::from_raw(pid) else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        // EPERM: it exists but belongs to someone else.
        Ok(()) | Err(Errno::PERM) => {}
        Err(_) => return false,
    }
    match proc_stat(pid.as_raw_nonzero().get()) {
        Some((state, _)) => is_live(state),
        // No /proc (not Linux) or it vanished since the signal test.
        None => std::fs::metadata("/proc/self").is_err(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    /// A group whose leader `sh` left a `sleep` behind in its group; the
    /// leader unreaped. Returns the leader and its child.
    fn left_behind() -> std::process::Child {
        let mut leader = std::process::Command::new("/bin/sh");
        leader
            .args(["-c", "sleep 30 & exit 0"])
            .stdout(std::process::Stdio::null())
            .process_group(0);
        let child = leader.spawn().unwrap_or_else(|e| panic!("{e}"));
        let pgid = Pid::from_raw(child.id() as i32).unwrap_or_else(|| panic!("no pid"));
        // The leader exits at once; its sleep stays in the group.
        let _ = wait_exit(pgid, None);
        child
    }

    /// The limit group's list answers only "no one": an empty list means
    /// nothing of the run is alive, without a scan of `/proc`; a list with
    /// anyone in it leaves the answer to the scan, as without a list.
    #[test]
    fn an_empty_limit_group_answers_without_a_scan_and_a_listed_one_is_scanned() {
        let mut child = left_behind();
        let pgid = Pid::from_raw(child.id() as i32).unwrap_or_else(|| panic!("no pid"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let empty = dir.path().join("empty");
        let listed = dir.path().join("listed");
        std::fs::write(&empty, "").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&listed, "12345\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(has_other_members(pgid, None), "the sleep is in the group");
        assert!(has_other_members(pgid, Some(&listed)));
        assert!(
            !has_other_members(pgid, Some(&empty)),
            "an empty limit group is taken at its word"
        );
        kill(pgid);
        let _ = child.wait();
    }
}
