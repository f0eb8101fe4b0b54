//! Per-run control groups for the memory and process-count limits, where the
//! machine lets us make them (cgroup v2 with the controller delegated to our
//! cgroup, or a writable cgroup v1 hierarchy, as root usually has).
//!
//! rlimits are per process (`RLIMIT_AS`) or per user (`RLIMIT_NPROC`, which
//! does not bind root at all), and neither says afterwards that it was hit. A
//! cgroup limits the run as a whole and counts what it refused: the OOM
//! killer's kills (`memory.events` / `memory.oom_control`) and the forks
//! refused at `pids.max` (`pids.events`), so a run killed by a limit can say
//! which. Where no cgroup can be made, the rlimits stay the only limits and
//! the outcome says so (`cgroup: false`).
//!
//! Where the unified (v2) hierarchy lets us make a group, the run also gets
//! one there, whatever its controllers, for its `cpu.pressure`: the time
//! all of the run's runnable processes waited for a CPU the machine gave to
//! other work. The timeout does not count that time against the run, up to
//! a grace ([`crate::RunSpec::stall_grace`]): a loaded machine is not the
//! run's fault.
//!
//! The child joins the groups before the command's `exec` (in the launcher,
//! or between `fork` and `exec`: [`crate::launch`]), so nothing it forks
//! escapes the limits: a v1 group by writing `0` to its `tasks`, a v2 group
//! by being started in it (`clone3` with `CLONE_INTO_CGROUP`, in the
//! launcher) or, where that cannot be, by writing `0` to its `cgroup.procs`
//! (plain `open`/`write`/`close`). A `cgroup.procs` write moves a whole
//! thread group, which the kernel guards with a machine-wide lock whose
//! writer waits for an RCU grace period (5–16 ms here, every run); moving
//! the writing thread alone (`tasks`: the child is one thread there) and
//! starting a process in its group take no such lock (docs/performance.md,
//! "A sandboxed run's start"). Groups are named `assay-<pid>-<n>`; an empty
//! group left by an assay process that died is removed the next time one is
//! made.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// What the limits refused during a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hits {
    /// The OOM killer killed a process of the run at the memory limit.
    pub memory: bool,
    /// A fork was refused at the process limit.
    pub processes: bool,
}

#[derive(Debug)]
struct Dir {
    path: PathBuf,
    /// What the child writes `0` to: `tasks` (v1), `cgroup.procs` (v2).
    procs: CString,
    v2: bool,
    /// A limit rests on it: the child must join it or not run. A group
    /// made only for its pressure is joined where it can be.
    required: bool,
}

#[derive(Debug)]
pub(crate) struct Cgroup {
    dirs: Vec<Dir>,
    memory: Option<usize>,
    pids: Option<usize>,
    /// The v2 group whose `cpu.pressure` is read.
    pressure: Option<usize>,
}

/// A group the run's first process joins.
#[derive(Debug, Clone)]
pub(crate) struct Join {
    /// The file its `0` is written to (see the module header).
    pub(crate) file: CString,
    /// A v2 group's directory, which the launcher starts the command's
    /// process in.
    pub(crate) dir: Option<CString>,
    /// A limit rests on it: the child must join it or not run.
    pub(crate) required: bool,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

struct Mount {
    point: PathBuf,
    v2: bool,
    options: String,
}

fn mounts() -> Vec<Mount> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|line| {
            // "id parent maj:min root point opts ... - fstype source superopts"
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let mut r = right.split(' ');
            let fstype = r.next()?;
            let _source = r.next()?;
            let options = r.next().unwrap_or("").to_owned();
            match fstype {
                "cgroup2" => Some(Mount {
                    point: point.into(),
                    v2: true,
                    options,
                }),
                "cgroup" => Some(Mount {
                    point: point.into(),
                    v2: false,
                    options,
                }),
                _ => None,
            }
        })
        .collect()
}

/// Our own cgroup path in the hierarchy that has `controller` (v1) or in
/// the unified one (`controller` = "").
fn own_path(controller: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let _id = parts.next()?;
        let ctls = parts.next()?;
        let path = parts.next()?;
        let hit = if controller.is_empty() {
            ctls.is_empty()
        } else {
            ctls.split(',').any(|c| c == controller)
        };
        hit.then(|| path.to_owned())
    })
}

/// Where a group limiting `controller` can be made: (parent dir, v2).
fn parent_for(controller: &str, mounts: &[Mount]) -> Option<(PathBuf, bool)> {
    for m in mounts.iter().filter(|m| m.v2) {
        let own = own_path("")?;
        let parent = m.point.join(own.trim_start_matches('/'));
        let delegated = std::fs::read_to_string(parent.join("cgroup.subtree_control"))
            .is_ok_and(|s| s.split_whitespace().any(|c| c == controller));
        if delegated {
            return Some((parent, true));
        }
    }
    let m = mounts
        .iter()
        .find(|m| !m.v2 && m.options.split(',').any(|o| o == controller))?;
    let own = own_path(controller)?;
    Some((m.point.join(own.trim_start_matches('/')), false))
}

fn write(path: &Path, value: &str) -> io::Result<()> {
    std::fs::write(path, value)
}

/// Removes empty `assay-<pid>-*` groups whose assay process is gone.
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("assay-"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

impl Cgroup {
    /// A new group with these limits, and one in the unified hierarchy for
    /// its CPU stalls when `pressure`; `None` when the machine gives us
    /// none of them (or nothing was asked).
    pub(crate) fn create(memory: Option<u64>, pids: Option<u64>, pressure: bool) -> Option<Cgroup> {
        if memory.is_none() && pids.is_none() && !pressure {
            return None;
        }
        let mounts = mounts();
        let name = format!(
            "assay-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut group = Cgroup {
            dirs: Vec::new(),
            memory: None,
            pids: None,
            pressure: None,
        };
        for (controller, limit) in [("memory", memory), ("pids", pids)] {
            let Some(limit) = limit else { continue };
            let Some((parent, v2)) = parent_for(controller, &mounts) else {
                continue;
            };
            let dir = parent.join(&name);
            let index = match group.dirs.iter().position(|d| d.path == dir) {
                Some(i) => i,
                None => {
                    sweep(&parent);
                    if std::fs::create_dir(&dir).is_err() {
                        continue;
                    }
                    let Ok(procs) = CString::new(
                        dir.join(if v2 { "cgroup.procs" } else { "tasks" })
                            .as_os_str()
                            .as_encoded_bytes()
                            .to_vec(),
                    ) else {
                        let _ = std::fs::remove_dir(&dir);
                        continue;
                    };
                    group.dirs.push(Dir {
                        path: dir.clone(),
                        procs,
                        v2,
                        required: true,
                    });
                    group.dirs.len() - 1
                }
            };
            let ok = match (controller, v2) {
                ("memory", true) => write(&dir.join("memory.max"), &limit.to_string())
                    .and_then(|()| write(&dir.join("memory.swap.max"), "0").or(Ok(()))),
                ("memory", false) => write(&dir.join("memory.limit_in_bytes"), &limit.to_string()),
                _ => write(&dir.join("pids.max"), &limit.to_string()),
            };
            if ok.is_ok() {
                if controller == "memory" {
                    group.memory = Some(index);
                } else {
                    group.pids = Some(index);
                }
            }
        }
        if pressure {
            group.pressure = group.unified(&mounts, &name);
        }
        if group.memory.is_none() && group.pids.is_none() && group.pressure.is_none() {
            group.remove();
            return None;
        }
        Some(group)
    }

    /// The group's directory in the unified hierarchy (the memory or pids
    /// one when that is there already), made if need be.
    fn unified(&mut self, mounts: &[Mount], name: &str) -> Option<usize> {
        if let Some(i) = self.dirs.iter().position(|d| d.v2) {
            return Some(i);
        }
        let m = mounts.iter().find(|m| m.v2)?;
        let parent = m.point.join(own_path("")?.trim_start_matches('/'));
        sweep(&parent);
        let dir = parent.join(name);
        std::fs::create_dir(&dir).ok()?;
        let made = CString::new(
            dir.join("cgroup.procs")
                .as_os_str()
                .as_encoded_bytes()
                .to_vec(),
        )
        .ok()
        .filter(|_| dir.join("cpu.pressure").exists());
        let Some(procs) = made else {
            let _ = std::fs::remove_dir(&dir);
            return None;
        };
        self.dirs.push(Dir {
            path: dir,
            procs,
            v2: true,
            required: false,
        });
        Some(self.dirs.len() - 1)
    }

    /// How long all of the run's runnable processes have waited for a CPU
    /// (`cpu.pressure`, "full"), when the group measures it.
    pub(crate) fn cpu_stalled(&self) -> Option<std::time::Duration> {
        let text =
            std::fs::read_to_string(self.dirs[self.pressure?].path.join("cpu.pressure")).ok()?;
        full_total(&text)
    }

    /// The `cgroup.procs` of a group the run's command had to join (one
    /// whose limit is set), which lists every live process of the run.
    pub(crate) fn members(&self) -> Option<PathBuf> {
        let i = self.memory.or(self.pids)?;
        Some(self.dirs[i].path.join("cgroup.procs"))
    }

    /// Whether the memory and process limits are enforced by this group.
    pub(crate) fn limits(&self) -> (bool, bool) {
        (self.memory.is_some(), self.pids.is_some())
    }

    /// The groups for the child to join before `exec`.
    pub(crate) fn joins(&self) -> Vec<Join> {
        self.dirs
            .iter()
            .map(|d| Join {
                file: d.procs.clone(),
                dir: d
                    .v2
                    .then(|| CString::new(d.path.as_os_str().as_encoded_bytes()).ok())
                    .flatten(),
                required: d.required,
            })
            .collect()
    }

    /// After the spawn: a group made only for its pressure that the child
    /// `pid` could not join (moving a process there takes write access to
    /// our own group as well) measures nothing, and is not read. `started`:
    /// the launcher said it started the command in the v2 group.
    pub(crate) fn confirm(&mut self, pid: u32, started: bool) {
        let Some(i) = self.pressure else { return };
        if started {
            return;
        }
        let Some(name) = self.dirs[i].path.file_name().and_then(|n| n.to_str()) else {
            return;
        };
        let joined = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|t| {
            t.lines().any(|l| {
                l.strip_prefix("0::")
                    .is_some_and(|p| p.ends_with(&format!("/{name}")))
            })
        });
        if !joined {
            self.pressure = None;
        }
    }

    /// What the limits refused so far.
    pub(crate) fn hits(&self) -> Hits {
        let count = |dir: &Path, file: &str, key: &str| -> u64 {
            std::fs::read_to_string(dir.join(file))
                .ok()
                .and_then(|s| {
                    s.lines().find_map(|l| {
                        let (k, v) = l.split_once(' ')?;
                        (k == key).then(|| v.trim().parse().ok())?
                    })
                })
                .unwrap_or(0)
        };
        let memory = self.memory.is_some_and(|i| {
            let d = &self.dirs[i];
            if d.v2 {
                count(&d.path, "memory.events", "oom_kill") > 0
            } else {
                count(&d.path, "memory.oom_control", "oom_kill") > 0
            }
        });
        let processes = self
            .pids
            .is_some_and(|i| count(&self.dirs[i].path, "pids.events", "max") > 0);
        Hits { memory, processes }
    }

    /// Kills whatever is still in the group and removes it.
    pub(crate) fn remove(&self) {
        for d in &self.dirs {
            for _ in 0..50 {
                if let Ok(pids) = std::fs::read_to_string(d.path.join("cgroup.procs")) {
                    for pid in pids.lines().filter_map(|p| p.trim().parse::<i32>().ok()) {
                        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                            let _ =
                                rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                        }
                    }
                }
                if std::fs::remove_dir(&d.path).is_ok() || !d.path.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// The `full` line's `total` (microseconds) of a pressure file.
fn full_total(text: &str) -> Option<std::time::Duration> {
    let line = text.lines().find(|l| l.starts_with("full "))?;
    let total = line.split(' ').find_map(|f| f.strip_prefix("total="))?;
    total
        .trim()
        .parse()
        .ok()
        .map(std::time::Duration::from_micros)
}

/// Joins every group in `joins` (those not required where it can: see
/// [`Cgroup::confirm`]) by writing `0` to its file: runs in the launcher or
/// between `fork` and `exec` in a process of one thread, so plain system
/// calls only.
pub(crate) fn join(joins: &[Join]) -> io::Result<()> {
    for Join { file, required, .. } in joins {
        // SAFETY: `file` is a valid NUL-terminated path; open/write/close
        // are async-signal-safe.
        unsafe {
            let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                if !required {
                    continue;
                }
                return Err(io::Error::last_os_error());
            }
            let n = libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
            if n != 1 && *required {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_stall_is_read_from_a_pressure_file() {
        let text = "some avg10=13.40 avg60=2.42 avg300=0.50 total=2282119\n\
                    full avg10=13.40 avg60=2.42 avg300=0.50 total=2281986\n";
        assert_eq!(
            full_total(text),
            Some(std::time::Duration::from_micros(2_281_986))
        );
        assert_eq!(
            full_total("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n"),
            None
        );
        assert_eq!(full_total("full avg10=0.00 total=x\n"), None);
    }
}
