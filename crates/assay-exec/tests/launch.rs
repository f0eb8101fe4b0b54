//! Runs started through the launcher (`assay_exec::launch`): the
//! coordinator's memory is not copied to start one, and a launcher that
//! cannot join its group runs nothing and says why.

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
    let (code, status) = launch_joining("--join", &missing, &file);
    assert_eq!(code, Some(125));
    assert!(!file.exists(), "the command ran outside its group");
    let errno = i32::from_le_bytes(status[..4].try_into().unwrap());
    assert_eq!(errno, libc::ENOENT);
    let text = String::from_utf8_lossy(&status[4..]);
    assert_eq!(text, "joining the run's control group");
    // A group made only to be measured is joined where it can be.
    let (code, status) = launch_joining("--join-try", &missing, &file);
    assert_eq!((code, status.as_slice()), (Some(0), &[][..]));
    assert!(file.exists());
}
