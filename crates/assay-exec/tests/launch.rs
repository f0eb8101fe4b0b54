//! Runs started through the launcher (`assay_exec::launch`): the
//! coordinator's memory is not copied to start one, the command runs in
//! every group of the run (a v2 group by being started in it) and ends as
//! the run's outcome says, and a launcher that cannot join its group runs
//! nothing and says why.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use assay_exec::launch::ARG;
use assay_exec::{Limits, RunSpec, run};

const LAUNCHER: &str = env!("CARGO_BIN_EXE_assay-launch");

fn install() {
    assay_exec::launch::install(PathBuf::from(LAUNCHER));
}

fn spec(dir: &Path, command: &str) -> RunSpec {
    RunSpec {
        command: command.to_owned(),
        cwd: dir.to_owned(),
        env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        timeout: Duration::from_secs(60),
        stall_grace: None,
        log_path: dir.join("log"),
        log_cap: 1 << 20,
        limits: Limits::default(),
        sandbox: None,
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn minor_faults() -> i64 {
    // SAFETY: getrusage fills the struct it is given.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut usage), 0);
        usage.ru_minflt
    }
}

/// A `fork` write-protects every private page of the coordinator, so its
/// next write to each page faults; `posix_spawn` copies nothing, so the
/// pages written after the run do not fault again.
#[test]
fn starting_a_run_does_not_copy_the_coordinators_memory() {
    install();
    const LEN: usize = 64 << 20;
    const PAGE: usize = 4096;
    // SAFETY: a fresh private anonymous mapping, written only within LEN,
    // unmapped at the end.
    let region = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        // Small pages: a fork then costs one fault a page.
        libc::madvise(p, LEN, libc::MADV_NOHUGEPAGE);
        p.cast::<u8>()
    };
    let touch = |value: u8| {
        for page in (0..LEN).step_by(PAGE) {
            // SAFETY: within the mapping.
            unsafe { region.add(page).write_volatile(value) };
        }
    };
    touch(1);
    let dir = tempfile::tempdir().unwrap();
    let out = block_on(run(&spec(dir.path(), "true"))).unwrap();
    assert_eq!(out.exit_code, Some(0));
    let before = minor_faults();
    touch(2);
    let faults = minor_faults() - before;
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(region.cast(), LEN) };
    let pages = (LEN / PAGE) as i64;
    assert!(
        faults < pages / 4,
        "{faults} faults rewriting {pages} pages after a run: the run forked the coordinator"
    );
}

/// What the launcher writes on its status pipe (its stderr) and its exit
/// code, running `sh -c 'echo ran > FILE'` after joining `group`.
fn launch_joining(flag: &str, group: &Path, file: &Path) -> (Option<i32>, Vec<u8>) {
    let out = Command::new(LAUNCHER)
        .arg(ARG)
        .arg(flag)
        .arg(group)
        .args(["--limit", "core=0", "--", "/bin/sh", "-c"])
        .arg(format!("echo ran > {}", file.display()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.code(), out.stderr)
}

#[test]
fn a_group_that_cannot_be_joined_stops_the_launcher_before_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-group/cgroup.procs");
    let file = dir.path().join("ran");
    let missing_dir = dir.path().join("no-such-group");
    for (flag, group) in [("--join", &missing), ("--into", &missing_dir)] {
        let (code, status) = launch_joining(flag, group, &file);
        assert_eq!(code, Some(125), "{flag}");
        assert!(!file.exists(), "{flag}: the command ran outside its group");
        assert_eq!(status[0], b'F', "{flag}");
        let errno = i32::from_le_bytes(status[1..5].try_into().unwrap());
        assert_eq!(errno, libc::ENOENT, "{flag}");
        let text = String::from_utf8_lossy(&status[5..]);
        assert_eq!(text, "joining the run's control group", "{flag}");
    }
    // A group made only to be measured is joined where it can be.
    for (flag, group) in [("--join-try", &missing), ("--into-try", &missing_dir)] {
        let (code, status) = launch_joining(flag, group, &file);
        assert_eq!((code, status.as_slice()), (Some(0), &[][..]), "{flag}");
        assert!(file.exists(), "{flag}");
        std::fs::remove_file(&file).unwrap();
    }
}

/// The groups a run's command is in, by hierarchy, as its
/// `/proc/self/cgroup` says: `(controllers, path)`.
fn groups_of(log: &str) -> Vec<(String, String)> {
    log.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let _id = parts.next()?;
            Some((parts.next()?.to_owned(), parts.next()?.to_owned()))
        })
        .collect()
}

/// Whether this machine lets the run have its groups: a memory limit in
/// some hierarchy, a v2 group for the stall.
fn groups_here() -> bool {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    nix_root() && text.lines().any(|l| l.starts_with("0::"))
}

fn nix_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn grouped(dir: &Path, command: &str) -> RunSpec {
    RunSpec {
        stall_grace: Some(Duration::from_secs(5)),
        limits: Limits {
            max_memory: Some(256 << 20),
            max_processes: Some(64),
            ..Limits::default()
        },
        ..spec(dir, command)
    }
}

/// Through the launcher, the command is in every one of the run's groups
/// (the v2 one, which it is started in, and the v1 ones it joins by its
/// `tasks`), and the run ends as the command did: its exit code, its
/// signal, its timeout, with nothing of it left.
#[test]
fn the_command_runs_in_all_of_its_groups_and_ends_as_it_ended() {
    if !groups_here() {
        eprintln!("skipped: no v2 hierarchy or not root");
        return;
    }
    install();
    let dir = tempfile::tempdir().unwrap();
    let out = block_on(run(&grouped(
        dir.path(),
        "cat /proc/self/cgroup; p=$(grep :pids: /proc/self/cgroup | cut -d: -f3); \
         cat /sys/fs/cgroup/pids$p/cgroup.procs > members 2>/dev/null; exit 7",
    )))
    .unwrap();
    assert_eq!(out.exit_code, Some(7));
    assert!(out.cgroup_memory && out.cgroup_processes, "{out:?}");
    assert!(
        out.cpu_stalled.is_some(),
        "the v2 group measured nothing: {out:?}"
    );
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    let groups = groups_of(&log);
    // The hierarchies this machine has (on a v2-only one, the unified one
    // holds the limits too).
    let own = groups_of(&std::fs::read_to_string("/proc/self/cgroup").unwrap());
    let has = |wanted: &str| {
        own.iter()
            .any(|(c, _)| c.split(',').any(|c| c == wanted) || (wanted.is_empty() && c.is_empty()))
    };
    for wanted in ["", "memory", "pids"].into_iter().filter(|w| has(w)) {
        let (_, path) = groups
            .iter()
            .find(|(c, _)| c.split(',').any(|c| c == wanted) || (wanted.is_empty() && c.is_empty()))
            .unwrap_or_else(|| panic!("no {wanted:?} hierarchy in {log}"));
        let name = path.rsplit('/').next().unwrap();
        assert!(
            name.starts_with(&format!("assay-{}-", std::process::id())),
            "the command is not in the run's {wanted:?} group: {log}"
        );
    }

    // The run's process count is the command's alone: the launcher that
    // started it in the v2 group is in none of the run's groups.
    if let Ok(members) = std::fs::read_to_string(dir.path().join("members")) {
        assert_eq!(members.lines().count(), 2, "sh and cat alone: {members}");
    }

    let out = block_on(run(&grouped(dir.path(), "kill -TERM $$"))).unwrap();
    assert_eq!(
        (out.exit_code, out.signal),
        (None, Some(libc::SIGTERM)),
        "{out:?}"
    );

    let pids = dir.path().join("pids");
    let mut spec = grouped(
        dir.path(),
        &format!("sleep 60 & echo $! $$ > {}; sleep 60", pids.display()),
    );
    spec.timeout = Duration::from_millis(500);
    spec.stall_grace = Some(Duration::ZERO);
    let started = std::time::Instant::now();
    let out = block_on(run(&spec)).unwrap();
    assert!(out.timed_out, "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
    for pid in std::fs::read_to_string(&pids).unwrap().split_whitespace() {
        assert!(!alive(pid), "{pid} of the timed-out run is left");
    }
}

/// Whether `pid` is a live process (not gone, not a zombie).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

/// The launcher that started the command's process in its v2 group stays
/// as its parent; killed alone, it takes the command with it.
#[test]
fn the_command_dies_with_the_launcher_that_started_it_in_its_group() {
    if !groups_here() {
        eprintln!("skipped: no v2 hierarchy or not root");
        return;
    }
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let own = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap()
        .to_owned();
    let mount = "/sys/fs/cgroup/unified";
    let root = if Path::new(mount).join("cgroup.procs").exists() {
        mount
    } else {
        "/sys/fs/cgroup"
    };
    let group = Path::new(root)
        .join(own.trim_start_matches('/'))
        .join(format!("assay-test-{}", std::process::id()));
    if std::fs::create_dir(&group).is_err() {
        eprintln!("skipped: cannot make a v2 group");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pid");
    let mut launcher = Command::new(LAUNCHER)
        .arg(ARG)
        .arg("--into")
        .arg(&group)
        .args(["--", "/bin/sh", "-c"])
        .arg(format!("echo $$ > {}; exec sleep 60", marker.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = launcher.stderr.take().unwrap();
    let mut said = Vec::new();
    std::io::Read::read_to_end(&mut status, &mut said).unwrap();
    assert_eq!(
        said, b"J",
        "the launcher did not start the command in its group"
    );
    let mut pid = String::new();
    for _ in 0..200 {
        pid = std::fs::read_to_string(&marker).unwrap_or_default();
        if pid.ends_with('\n') {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid: i32 = pid.trim().parse().unwrap();
    let members = std::fs::read_to_string(group.join("cgroup.procs")).unwrap();
    assert!(
        members.lines().any(|l| l == pid.to_string()),
        "{pid} not in {members}"
    );
    assert_ne!(
        pid as u32,
        launcher.id(),
        "the command is the launcher's child"
    );
    launcher.kill().unwrap();
    launcher.wait().unwrap();
    let mut gone = false;
    for _ in 0..200 {
        if !alive(&pid.to_string()) {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: our own command's pid, which lives until it is reaped.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    for _ in 0..100 {
        if std::fs::remove_dir(&group).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(gone, "the command outlived its launcher");
}
