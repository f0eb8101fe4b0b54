//! The gate of a sandboxed run: bubblewrap builds the sandbox while the
//! run's control groups are joined from outside, and starts the command
//! only once they are.
//!
//! Moving a process into a control group waits for a grace period of the
//! kernel's RCU (the writer's side of `cgroup_threadgroup_rwsem`), 5–15 ms
//! on a virtual machine; joined between `fork` and `exec` it was the
//! largest part of a sandboxed run's start. So a sandboxed run's child
//! joins nothing itself: bubblewrap starts at once with three more
//! descriptors,
//!
//! - `--info-fd 3`: it writes the pid of its namespace's first process (the
//!   one that builds the mounts and forks the command);
//! - `--block-fd 4`: that process waits on it once the sandbox is built,
//!   before it forks anything;
//! - `--sync-fd 5`: the gate's own write end, kept open by that process and
//!   closed before the command: the gate never reads an end of file, so a
//!   run whose gate is not opened (assay died between the two) never starts;
//!
//! and while it mounts, the parent moves bubblewrap and that process into
//! the groups, then writes the byte that opens the gate. Everything the
//! command runs descends from that process and is forked after the gate:
//! nothing of it runs outside the groups. A group that must hold the run
//! (a limit rests on it) and cannot be joined ends the run before the gate
//! opens.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::cgroup::Cgroup;

/// The descriptors bubblewrap sees; see the module header.
const INFO_FD: RawFd = 3;
const BLOCK_FD: RawFd = 4;
const SYNC_FD: RawFd = 5;

/// Where the child's copies are made before they are moved into place, so
/// that no original sits on a number about to be replaced.
const ABOVE: RawFd = 10;

/// A gate made for one sandboxed run, before its spawn.
pub(crate) struct Gate {
    info: OwnedFd,
    /// The child's ends: the info writer, the block reader, the block writer.
    child: [OwnedFd; 3],
    open: OwnedFd,
}

impl Gate {
    pub(crate) fn new() -> io::Result<Gate> {
        let (info_r, info_w) = io::pipe()?;
        let (block_r, block_w) = io::pipe()?;
        let high = |fd: &OwnedFd| -> io::Result<OwnedFd> {
            Ok(rustix::io::fcntl_dupfd_cloexec(fd, ABOVE)?)
        };
        let block_w = OwnedFd::from(block_w);
        Ok(Gate {
            info: info_r.into(),
            child: [
                high(&info_w.into())?,
                high(&block_r.into())?,
                high(&block_w)?,
            ],
            open: block_w,
        })
    }

    /// bubblewrap's options for the gate, first on its command line.
    pub(crate) fn flags() -> [&'static str; 6] {
        ["--info-fd", "3", "--block-fd", "4", "--sync-fd", "5"]
    }

    /// The child's descriptors, for [`install`] between `fork` and `exec`.
    pub(crate) fn child_fds(&self) -> [RawFd; 3] {
        self.child.each_ref().map(AsRawFd::as_raw_fd)
    }

    /// After the spawn of bubblewrap as `pid`: moves it and its sandbox's
    /// first process into `cgroup`'s groups, then opens the gate. Nothing
    /// to join when bubblewrap ended before it made the sandbox (its exit
    /// says why). On an error the caller kills the run's process group
    /// (the gate stays shut meanwhile).
    pub(crate) fn open(self, pid: u32, cgroup: Option<&Cgroup>) -> io::Result<()> {
        let Gate { info, child, open } = self;
        drop(child);
        let mut text = String::new();
        std::fs::File::from(info).read_to_string(&mut text)?;
        let Some(first) = child_pid(&text) else {
            return Ok(());
        };
        if let Some(cgroup) = cgroup {
            cgroup.attach(&[pid, first])?;
        }
        std::fs::File::from(open).write_all(b"1")
    }
}

/// Puts the gate's descriptors at 3, 4 and 5 (without close-on-exec).
/// Runs between `fork` and `exec`: plain system calls only.
pub(crate) fn install(fds: [RawFd; 3]) -> io::Result<()> {
    for (fd, to) in fds.into_iter().zip([INFO_FD, BLOCK_FD, SYNC_FD]) {
        // SAFETY: dup2 of descriptors the child inherited; async-signal-safe.
        if unsafe { libc::dup2(fd, to) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `"child-pid": N` of bubblewrap's `--info-fd` JSON.
fn child_pid(info: &str) -> Option<u32> {
    let rest = &info[info.find("\"child-pid\"")? + "\"child-pid\"".len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// bubblewrap behind `gate`, its command printing `ran` (and `leaked`
    /// if the gate's write end reached it).
    fn behind(gate: &Gate) -> std::process::Child {
        let bwrap = crate::sandbox::find_program("bwrap").expect("bubblewrap is installed");
        let fds = gate.child_fds();
        let mut command = Command::new(bwrap);
        command
            .args(Gate::flags())
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid"])
            .args([
                "--",
                "/bin/sh",
                "-c",
                "echo ran; [ ! -e /dev/fd/5 ] || echo leaked",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // SAFETY: setsid and dup2 only, between fork and exec.
        unsafe {
            command.pre_exec(move || {
                rustix::process::setsid()?;
                install(fds)
            });
        }
        command.spawn().expect("bwrap starts")
    }

    fn output(mut child: std::process::Child) -> String {
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child.wait().unwrap();
        out
    }

    #[test]
    fn an_opened_gate_starts_the_command() {
        let gate = Gate::new().unwrap();
        let child = behind(&gate);
        gate.open(child.id(), None).unwrap();
        assert_eq!(output(child), "ran\n");
    }

    /// The gate's own write end in the sandbox: assay gone before the gate
    /// opens (its ends closed) leaves the command unstarted, not started
    /// outside its groups.
    #[test]
    fn a_gate_closed_unopened_never_starts_the_command() {
        let gate = Gate::new().unwrap();
        let child = behind(&gate);
        drop(gate);
        std::thread::sleep(std::time::Duration::from_millis(500));
        let pgid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        let waiting = crate::group::group_members(child.id() as i32).len();
        crate::group::kill(pgid);
        assert_eq!(output(child), "");
        assert!(waiting >= 1, "bubblewrap did not wait at the gate");
    }

    #[test]
    fn the_child_pid_is_read_from_bubblewraps_info() {
        let info = "{\n    \"child-pid\": 4242,\n    \"cgroup-namespace\": 4026531835\n}\n";
        assert_eq!(child_pid(info), Some(4242));
        assert_eq!(child_pid("{\"child-pid\":7}"), Some(7));
        assert_eq!(child_pid(""), None);
        assert_eq!(child_pid("{\"child-pid\": x}"), None);
    }
}
