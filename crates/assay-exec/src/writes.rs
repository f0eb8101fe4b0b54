//! The write limit: a bound on the disk space a run takes with its tree.
//!
//! A run's tree is a directory on the host's disk (a bind mount locally, a
//! volume on Docker). `RLIMIT_FSIZE` bounds each file, not their sum, so
//! without this a run can fill the disk within its timeout. Its `/tmp` and
//! `HOME` are tmpfs of a fixed size already; the tree (and, on Docker, the
//! run's copies of an image's writable directories, [`WriteWatch::with`])
//! is where a run writes without a bound of its own.
//!
//! **Why a watchdog.** A size-limited filesystem for the tree would be
//! exact, but every way to get one costs something the tree cannot pay: a
//! tmpfs (or an overlay whose upper layer is one) holds the tree in memory
//! and vanishes with the sandbox, while the report and the test files must
//! be read after the run; a loop-mounted image or a project quota needs root
//! and a filesystem prepared for it; Docker's `storage-opt size` needs xfs
//! with project quotas. A watchdog needs nothing but `stat`, works the same
//! for a local tree and a Docker volume (read from the host), and leaves the
//! tree where it is. So [`WriteWatch`] measures the tree every
//! [`INTERVAL`] and the runner kills the run once it has grown by more than
//! the limit since the run started.
//!
//! **What counts** (see [`WriteWatch::measure`]):
//! - every inode below the tree, once (hard links once), by its allocated
//!   blocks, a regular file by its length where that is more (a sparse
//!   file takes no space, but whoever reads, copies or packs the tree after
//!   the run reads every byte of its length: `truncate -s 1T` would pass a
//!   bound on blocks alone); and at least [`MIN_CHARGE`] each, so a million
//!   empty files count too;
//! - files the run's processes still hold (an open descriptor or a memory
//!   mapping) after unlinking them, on the tree's device: gone from the
//!   tree, they fill the disk until closed;
//! - nothing outside the tree's device, and no symbolic link is followed:
//!   directories are opened relative to their parent's descriptor with
//!   `O_NOFOLLOW`, so code that swaps a directory for a link to `/` cannot
//!   make the watchdog walk the host.
//!
//! **What a measurement cannot see**, it says ([`Usage::complete`]): a
//! directory it may not read, an entry that vanished between listing and
//! `stat` (code that renames a big directory back and forth to hide it), a
//! tree deeper than [`MAX_DEPTH`]. [`INCOMPLETE_LIMIT`] incomplete
//! measurements in a row end the run as over its limit: what cannot be
//! measured cannot be bounded. An honest run's churn does not vanish from
//! four measurements in a row. As root nothing is unreadable.
//!
//! **Limits of sampling.** Between two measurements a run can write at the
//! speed of the page cache, so it overshoots the limit by up to that rate
//! times the interval before it is killed. The runners measure once more
//! after the run ends ([`WriteWatch::over_after`]), so a run that wrote
//! past the limit and ended within one interval is still reported. The interval grows with the cost of a measurement (at least
//! [`COST_SHARE`] times its duration), so a tree of many files costs the
//! run at most about 1/[`COST_SHARE`] of a core.

use std::collections::HashSet;
use std::ffi::CString;
use std::fs::Metadata;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

/// The shortest time between two measurements.
pub const INTERVAL: Duration = Duration::from_millis(500);
/// The interval is at least this many times the last measurement's
/// duration: the watchdog takes at most about 1/`COST_SHARE` of a core.
pub const COST_SHARE: u32 = 20;
/// The least an inode counts for, whatever its blocks: an empty file still
/// takes an inode and a directory entry.
pub const MIN_CHARGE: u64 = 4096;
/// Incomplete measurements in a row that end the run as over its limit.
pub const INCOMPLETE_LIMIT: u32 = 4;
/// Directories deeper than this below the tree are not walked (the walk
/// holds one descriptor per level); such a tree is measured incomplete.
pub const MAX_DEPTH: usize = 128;

/// The processes of a run, whose unlinked but open files count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Processes {
    /// The process of this id, every descendant of it and every member of
    /// its process group: a local run's group leader, or a container's
    /// first process. In a pid namespace (a sandbox, a container) that is
    /// every process of it: an orphan, a daemon that called `setsid`
    /// included, is adopted by the namespace's init, a descendant.
    Tree(i32),
    /// None (the run has not started, or its processes are gone).
    None,
}

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Bytes the tree and the run's unlinked files take.
    pub bytes: u64,
    /// Everything could be seen (see the module header).
    pub complete: bool,
}

/// Watches one run's tree against its write limit.
#[derive(Debug, Clone)]
pub struct WriteWatch {
    root: PathBuf,
    limit: u64,
    baseline: u64,
    dev: u64,
    /// More directories the run writes, counted with the tree
    /// ([`WriteWatch::with`]), each with its device.
    more: Vec<(PathBuf, u64)>,
}

impl WriteWatch {
    /// Measures `root` as the run is given it: the run may then add `limit`
    /// bytes. `root` itself is trusted (the runner made it); nothing below
    /// it is.
    pub fn new(root: &Path, limit: u64) -> io::Result<WriteWatch> {
        let dev = std::fs::symlink_metadata(root)?.dev();
        let mut watch = WriteWatch {
            root: root.to_owned(),
            limit,
            baseline: 0,
            dev,
            more: Vec::new(),
        };
        watch.baseline = watch.measure(Processes::None)?.bytes;
        Ok(watch)
    }

    /// This watch with `root` counted too: what the run adds there and to
    /// the tree together may not pass the limit (a Docker run's writable
    /// copies of image directories). `root` itself is trusted, as the
    /// tree's is.
    pub fn with(mut self, root: &Path) -> io::Result<WriteWatch> {
        let dev = std::fs::symlink_metadata(root)?.dev();
        self.more.push((root.to_owned(), dev));
        self.baseline = self.measure(Processes::None)?.bytes;
        Ok(self)
    }

    /// The bytes the run may add to its tree.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// What the tree took when the run was given it.
    pub fn baseline(&self) -> u64 {
        self.baseline
    }

    /// The tree's usage now, with the unlinked files `processes` hold.
    /// An error means the tree's root itself could not be read.
    pub fn measure(&self, processes: Processes) -> io::Result<Usage> {
        let mut seen = HashSet::new();
        let mut tree = tree_usage(&self.root, self.dev, &mut seen)?;
        for (root, dev) in &self.more {
            // Inode numbers name an inode only on their own device.
            let mut other = HashSet::new();
            let seen = if *dev == self.dev {
                &mut seen
            } else {
                &mut other
            };
            let usage = tree_usage(root, *dev, seen)?;
            tree.bytes = tree.bytes.saturating_add(usage.bytes);
            tree.complete &= usage.complete;
        }
        let held = held_unlinked(processes, self.dev, &mut seen);
        Ok(Usage {
            bytes: tree.bytes.saturating_add(held.bytes),
            complete: tree.complete && held.complete,
        })
    }

    /// Whether `usage` is over the limit.
    pub fn over(&self, usage: Usage) -> bool {
        usage.bytes.saturating_sub(self.baseline) > self.limit
    }

    /// Whether the tree, once the run has ended, is over the limit: what a
    /// run wrote between its last measurement and its end. Its processes
    /// are gone, so their unlinked files are too.
    pub async fn over_after(&self) -> bool {
        let watch = self.clone();
        tokio::task::spawn_blocking(move || watch.measure(Processes::None))
            .await
            .is_ok_and(|measured| measured.is_ok_and(|usage| self.over(usage)))
    }

    /// Resolves once the run is over its limit (or [`INCOMPLETE_LIMIT`]
    /// measurements in a row could not see everything), with the
    /// measurement that decided; never otherwise. Drop it to stop watching.
    pub async fn overrun(&self, processes: Processes) -> Usage {
        let mut pause = INTERVAL;
        let mut incomplete = 0;
        loop {
            tokio::time::sleep(pause).await;
            let watch = self.clone();
            let started = Instant::now();
            let measured = tokio::task::spawn_blocking(move || watch.measure(processes).ok()).await;
            let cost = started.elapsed();
            pause = INTERVAL.max(cost.saturating_mul(COST_SHARE));
            // The root is gone only once the run is over; a failed
            // blocking task is ours, not the run's: measure again.
            let Ok(Some(usage)) = measured else { continue };
            if self.over(usage) {
                return usage;
            }
            incomplete = if usage.complete { 0 } else { incomplete + 1 };
            if incomplete >= INCOMPLETE_LIMIT {
                return usage;
            }
        }
    }
}

/// What one inode counts for: its blocks, or a regular file's length
/// where that is more.
fn charge(blocks: u64, regular_len: Option<u64>) -> u64 {
    blocks
        .saturating_mul(512)
        .max(regular_len.unwrap_or(0))
        .max(MIN_CHARGE)
}

/// Every inode below `root` (itself included) on device `dev`, walked
/// without following a link. `seen` collects the inodes counted.
fn tree_usage(root: &Path, dev: u64, seen: &mut HashSet<u64>) -> io::Result<Usage> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let top = rustix::fs::open(root, flags, Mode::empty())?;
    let stat = rustix::fs::fstat(&top)?;
    let mut usage = Usage {
        bytes: charge(stat.st_blocks as u64, None),
        complete: true,
    };
    seen.insert(stat.st_ino);
    // Pending directories: (parent, name, depth). A parent stays open while
    // any child of it is pending, which in depth-first order is the current
    // path only.
    let top = Rc::new(Dir::new(top)?);
    let mut names = list(&top, &mut usage);
    let mut pending: Vec<(Rc<Dir>, CString, usize)> = Vec::new();
    visit(&top, &mut names, 1, dev, seen, &mut usage, &mut pending);
    while let Some((parent, name, depth)) = pending.pop() {
        let Ok(parent_fd) = parent.fd() else {
            usage.complete = false;
            continue;
        };
        let fd = match rustix::fs::openat(parent_fd, &name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(_) => {
                // Unreadable, or no longer a directory here (vanished,
                // renamed, swapped for a link): it cannot be seen.
                usage.complete = false;
                continue;
            }
        };
        drop(parent);
        let Ok(dir) = Dir::new(fd) else {
            usage.complete = false;
            continue;
        };
        let dir = Rc::new(dir);
        let mut names = list(&dir, &mut usage);
        visit(
            &dir,
            &mut names,
            depth + 1,
            dev,
            seen,
            &mut usage,
            &mut pending,
        );
    }
    Ok(usage)
}

/// The entry names of `dir` (without `.` and `..`).
fn list(dir: &Rc<Dir>, usage: &mut Usage) -> Vec<CString> {
    // Reading needs the directory stream itself; a fresh stream over the
    // same descriptor leaves `dir` shareable.
    let Ok(fd) = dir.fd() else {
        usage.complete = false;
        return Vec::new();
    };
    let Ok(mut stream) = Dir::read_from(fd) else {
        usage.complete = false;
        return Vec::new();
    };
    let mut names = Vec::new();
    for entry in stream.by_ref() {
        match entry {
            Ok(entry) => {
                let name = entry.file_name();
                if name.to_bytes() != b"." && name.to_bytes() != b".." {
                    names.push(name.to_owned());
                }
            }
            Err(_) => {
                usage.complete = false;
                break;
            }
        }
    }
    names
}

/// Counts the entries `names` of `dir` and queues its subdirectories.
#[allow(clippy::too_many_arguments)]
fn visit(
    dir: &Rc<Dir>,
    names: &mut Vec<CString>,
    depth: usize,
    dev: u64,
    seen: &mut HashSet<u64>,
    usage: &mut Usage,
    pending: &mut Vec<(Rc<Dir>, CString, usize)>,
) {
    let Ok(fd) = dir.fd() else {
        usage.complete = false;
        return;
    };
    for name in names.drain(..) {
        let stat = match rustix::fs::statat(fd, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(_) => {
                usage.complete = false;
                continue;
            }
        };
        if stat.st_dev != dev {
            // A mount inside the tree is not the tree's space (and cannot
            // be made from inside a sandbox).
            continue;
        }
        let kind = FileType::from_raw_mode(stat.st_mode);
        let linked = kind != FileType::Directory && stat.st_nlink > 1;
        if !linked || seen.insert(stat.st_ino) {
            let len = (kind == FileType::RegularFile).then_some(stat.st_size as u64);
            usage.bytes = usage
                .bytes
                .saturating_add(charge(stat.st_blocks as u64, len));
        }
        if kind == FileType::Directory {
            if depth >= MAX_DEPTH {
                usage.complete = false;
            } else {
                pending.push((Rc::clone(dir), name, depth));
            }
        }
    }
}

/// Files on `dev` that `processes` hold open or mapped after they were
/// unlinked (link count 0), each once.
fn held_unlinked(processes: Processes, dev: u64, seen: &mut HashSet<u64>) -> Usage {
    let mut usage = Usage {
        bytes: 0,
        complete: true,
    };
    let mut count = |meta: &Metadata, usage: &mut Usage| {
        if meta.nlink() == 0 && meta.dev() == dev && meta.is_file() && seen.insert(meta.ino()) {
            usage.bytes = usage
                .bytes
                .saturating_add(charge(meta.blocks(), Some(meta.len())));
        }
    };
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let device = format!("{major:02x}:{minor:02x}");
    for pid in run_pids(processes) {
        let fds = match std::fs::read_dir(format!("/proc/{pid}/fd")) {
            Ok(fds) => fds,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(_) => {
                usage.complete = false;
                continue;
            }
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if !target.as_os_str().as_bytes().ends_with(b" (deleted)") {
                continue;
            }
            // Follows the descriptor to the open file, which has no name.
            if let Ok(meta) = std::fs::metadata(fd.path()) {
                count(&meta, &mut usage);
            }
        }
        // A mapping outlives its descriptor: `mmap`, `close`, `unlink`,
        // then write through the mapping.
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            continue;
        };
        for line in maps.lines().filter(|l| l.ends_with(" (deleted)")) {
            let mut fields = line.split_whitespace();
            let (Some(range), Some(_perms), Some(_offset), Some(on)) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if on != device {
                continue;
            }
            match std::fs::metadata(format!("/proc/{pid}/map_files/{range}")) {
                Ok(meta) => count(&meta, &mut usage),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                // `map_files` needs CAP_SYS_ADMIN: without it, a mapping of
                // an unlinked file on the tree's device cannot be measured.
                Err(_) => usage.complete = false,
            }
        }
    }
    usage
}

/// `(pid, ppid, pgrp)` of every process; `None` for one that vanished.
fn process_table() -> Vec<(i32, i32, i32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // "pid (comm) state ppid pgrp …": comm may hold spaces and
            // parentheses, so split after the last ')'.
            let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
            let _state = fields.next()?;
            let ppid = fields.next()?.parse().ok()?;
            let pgrp = fields.next()?.parse().ok()?;
            Some((pid, ppid, pgrp))
        })
        .collect()
}

/// The pids of the run's processes now.
fn run_pids(processes: Processes) -> Vec<i32> {
    let Processes::Tree(root) = processes else {
        return Vec::new();
    };
    let all = process_table();
    let mut members: HashSet<i32> = all
        .iter()
        .filter(|&&(pid, _, pgrp)| pid == root || pgrp == root)
        .map(|&(pid, _, _)| pid)
        .collect();
    loop {
        let before = members.len();
        for &(pid, ppid, _) in &all {
            if members.contains(&ppid) {
                members.insert(pid);
            }
        }
        if members.len() == before {
            break;
        }
    }
    members.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, bytes: usize) {
        std::fs::write(path, vec![7u8; bytes]).unwrap();
    }

    #[test]
    fn a_tree_counts_what_its_files_take_and_each_hard_link_once() {
        let dir = tempfile::tempdir().unwrap();
        let watch = WriteWatch::new(dir.path(), 1 << 20).unwrap();
        write(&dir.path().join("a"), 512 << 10);
        std::fs::create_dir_all(dir.path().join("d/e")).unwrap();
        write(&dir.path().join("d/e/b"), 256 << 10);
        std::fs::hard_link(dir.path().join("a"), dir.path().join("d/a2")).unwrap();
        let usage = watch.measure(Processes::None).unwrap();
        assert!(usage.complete);
        let grown = usage.bytes - watch.baseline();
        // 768 KiB of data, two directories, one link counted once.
        assert!((768 << 10..800 << 10).contains(&grown), "{grown}");
        assert!(!watch.over(usage));
        write(&dir.path().join("d/e/c"), 300 << 10);
        assert!(watch.over(watch.measure(Processes::None).unwrap()));
    }

    /// A sparse file of no blocks still counts its length: whoever reads
    /// the tree afterwards reads all of it.
    #[test]
    fn a_sparse_file_counts_its_length_and_an_empty_one_a_block() {
        let dir = tempfile::tempdir().unwrap();
        let watch = WriteWatch::new(dir.path(), 1 << 20).unwrap();
        for i in 0..100 {
            std::fs::File::create(dir.path().join(format!("empty{i}"))).unwrap();
        }
        let grown = watch.measure(Processes::None).unwrap().bytes - watch.baseline();
        assert_eq!(grown, 100 * MIN_CHARGE);
        let sparse = std::fs::File::create(dir.path().join("sparse")).unwrap();
        sparse.set_len(10 << 30).unwrap();
        let usage = watch.measure(Processes::None).unwrap();
        assert_eq!(
            usage.bytes - watch.baseline(),
            100 * MIN_CHARGE + (10 << 30)
        );
        assert!(watch.over(usage));
    }

    /// What a run adds to another directory it writes (a Docker run's copy
    /// of an image's home) counts with its tree, against one limit; what
    /// that directory held when the run was given it does not.
    #[test]
    fn writes_to_another_watched_directory_count_with_the_trees() {
        let tree = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        write(&home.path().join("cache"), 4 << 20);
        let watch = WriteWatch::new(tree.path(), 1 << 20)
            .unwrap()
            .with(home.path())
            .unwrap();
        assert!(!watch.over(watch.measure(Processes::None).unwrap()));
        write(&tree.path().join("a"), 600 << 10);
        assert!(!watch.over(watch.measure(Processes::None).unwrap()));
        write(&home.path().join("planted"), 600 << 10);
        assert!(watch.over(watch.measure(Processes::None).unwrap()));
    }

    #[test]
    fn a_link_to_a_big_directory_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        write(&outside.path().join("big"), 2 << 20);
        let tree = dir.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        let watch = WriteWatch::new(&tree, 1 << 20).unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.join("out")).unwrap();
        let usage = watch.measure(Processes::None).unwrap();
        assert!(usage.complete && !watch.over(usage), "{usage:?}");
    }

    /// Starts `script` in a process group of its own, in `dir`.
    fn holder(dir: &Path, script: &str) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .process_group(0)
            .spawn()
            .unwrap()
    }

    /// Measures `processes` until `watch` is over its limit, for at most 20 s.
    fn over_within(watch: &WriteWatch, processes: Processes) -> Usage {
        let started = Instant::now();
        loop {
            let usage = watch.measure(processes).unwrap();
            if watch.over(usage) || started.elapsed() > Duration::from_secs(20) {
                return usage;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn an_unlinked_file_held_open_or_mapped_still_counts() {
        for script in [
            // Open, unlink, then write through the descriptor.
            "exec 3>hidden; rm hidden; head -c 2097152 /dev/zero >&3; sleep 60",
            // Map, close, unlink, then write through the mapping.
            "python3 -c 'import mmap, os, time\nf = open(\"hidden\", \"w+b\")\nf.truncate(2 << 20)\nm = mmap.mmap(f.fileno(), 2 << 20)\nf.close()\nos.unlink(\"hidden\")\nm[:] = b\"x\" * (2 << 20)\nm.flush()\ntime.sleep(60)'",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let watch = WriteWatch::new(dir.path(), 1 << 20).unwrap();
            let mut child = holder(dir.path(), script);
            let group = Processes::Tree(i32::try_from(child.id()).unwrap());
            let usage = over_within(&watch, group);
            let unseen = watch.measure(Processes::None).unwrap();
            let _ = child.kill();
            let _ = child.wait();
            // Without CAP_SYS_ADMIN a mapping cannot be measured, and says so.
            let root = rustix::process::geteuid().is_root();
            assert!(
                watch.over(usage) || (!root && !usage.complete),
                "{script}: {usage:?}"
            );
            // Nothing of it is in the tree: only the process holds it.
            assert!(!watch.over(unseen), "{script}: {unseen:?}");
        }
    }

    #[test]
    fn a_tree_deeper_than_the_walk_is_incomplete() {
        let dir = tempfile::tempdir().unwrap();
        let mut deep = dir.path().to_owned();
        for _ in 0..=MAX_DEPTH {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        let watch = WriteWatch::new(dir.path(), 1 << 20).unwrap();
        assert!(!watch.measure(Processes::None).unwrap().complete);
    }
}
