//! The sandbox tried the way hostile graded code would. Every attack here is
//! harmless if the defence fails: it writes only into this test's own temp
//! directories, connects only to a listener this test opens on loopback, and
//! signals nothing but its own processes.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assay_exec::{Bwrap, LimitHit, Limits, RunOutcome, RunSpec, Sandbox, run};

const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        let dir = tempfile::Builder::new()
            .prefix("assay-sandbox-")
            .tempdir()
            .unwrap();
        std::fs::create_dir_all(dir.path().join("tree")).unwrap();
        std::fs::create_dir_all(dir.path().join("env")).unwrap();
        Case { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn tree(&self) -> PathBuf {
        self.path().join("tree")
    }

    fn sandbox(&self) -> Sandbox {
        Sandbox {
            tree: Some(self.tree()),
            env_dir: Some(self.path().join("env")),
            env_writable: false,
            network: false,
            read_only: Vec::new(),
            tmp_bytes: 16 << 20,
            home_bytes: 16 << 20,
            protect: Vec::new(),
            guard: None,
            binds: Vec::new(),
            env_at: None,
        }
    }

    fn spec(&self, sandbox: Sandbox, command: &str) -> RunSpec {
        RunSpec {
            command: command.to_owned(),
            cwd: self.tree(),
            env: BTreeMap::from([
                ("PATH".to_owned(), PATH.to_owned()),
                ("HOME".to_owned(), assay_exec::sandbox::HOME.to_owned()),
            ]),
            timeout: Duration::from_secs(60),
            stall_grace: None,
            log_path: self.path().join("log"),
            log_cap: 1 << 20,
            limits: Limits::default(),
            sandbox: Some((bwrap(), sandbox)),
        }
    }

    fn run(&self, command: &str) -> (RunOutcome, String) {
        self.run_spec(self.spec(self.sandbox(), command))
    }

    fn run_spec(&self, spec: RunSpec) -> (RunOutcome, String) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let out = rt.block_on(run(&spec)).unwrap();
        let log = std::fs::read_to_string(&spec.log_path).unwrap();
        (out, log)
    }
}

/// Runs start as assay starts them: through the launcher.
fn bwrap() -> Bwrap {
    assay_exec::launch::install(PathBuf::from(env!("CARGO_BIN_EXE_assay-launch")));
    Bwrap::detect().expect("bubblewrap must work on this machine (.ci/run installs it)")
}

#[test]
fn the_command_works_in_its_tree_and_sees_its_env_read_only() {
    let c = Case::new();
    std::fs::write(c.path().join("env/marker"), "env-here").unwrap();
    let (out, log) = c.run(
        "pwd; cat /assay/env/marker; echo; echo made > made.txt; \
         touch /assay/env/x 2>/dev/null && echo ENV-WRITABLE; id -u",
    );
    assert_eq!(out.exit_code, Some(0), "{log}");
    assert!(log.starts_with("/assay/tree\nenv-here\n"), "{log}");
    assert!(!log.contains("ENV-WRITABLE"), "{log}");
    assert!(log.trim_end().ends_with("1000"), "{log}");
    assert_eq!(
        std::fs::read_to_string(c.tree().join("made.txt")).unwrap(),
        "made\n"
    );
    assert!(!c.path().join("env/x").exists());
}

#[test]
fn nothing_outside_the_tree_can_be_written_or_read() {
    let c = Case::new();
    let outside = c.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let secret = outside.join("secret.txt");
    std::fs::write(&secret, "SECRET-7f3a").unwrap();
    let target = outside.join("written.txt");
    let command = format!(
        "cat {secret} ; echo pwned > {target} ; echo pwned > ../escape.txt ; \
         echo pwned > /assay/escape.txt ; ls / ; exit 0",
        secret = secret.display(),
        target = target.display()
    );
    let (out, log) = c.run(&command);
    assert_eq!(out.exit_code, Some(0), "{log}");
    assert!(
        !log.contains("SECRET-7f3a"),
        "a file outside the tree was read: {log}"
    );
    assert!(!target.exists(), "a file outside the tree was written");
    assert!(!c.path().join("escape.txt").exists());
    // The host's root is not what the run sees: only the sandbox's skeleton.
    assert!(
        !log.contains("\nhome\n") && !log.contains("\nroot\n"),
        "{log}"
    );
}

#[test]
fn read_only_toolchains_cannot_be_poisoned() {
    // Stands in for a Python installation: the run may use it, never change
    // it (a sitecustomize.py planted there would change every later run).
    let c = Case::new();
    let toolchain = c.path().join("toolchain");
    std::fs::create_dir_all(toolchain.join("site-packages")).unwrap();
    std::fs::write(toolchain.join("site-packages/ok.py"), "x = 1\n").unwrap();
    let mut sandbox = c.sandbox();
    sandbox.read_only.push(toolchain.clone());
    let site = toolchain.join("site-packages");
    let command = format!(
        "cat {site}/ok.py; echo 'import os' > {site}/sitecustomize.py; echo p > {site}/x.pth; \
         grep -E ' /usr | {t} ' /proc/self/mountinfo",
        site = site.display(),
        t = toolchain.display()
    );
    let (_, log) = c.run_spec(c.spec(sandbox, &command));
    assert!(
        log.starts_with("x = 1\n"),
        "the toolchain is visible: {log}"
    );
    assert!(!site.join("sitecustomize.py").exists());
    assert!(!site.join("x.pth").exists());
    let mounts: Vec<&str> = log.lines().filter(|l| l.contains(" - ")).collect();
    assert_eq!(mounts.len(), 2, "{log}");
    for m in mounts {
        let opts = m.split(' ').nth(5).unwrap();
        assert!(opts.split(',').any(|o| o == "ro"), "not read-only: {m}");
    }
}

#[test]
fn no_network_not_even_loopback() {
    let c = Case::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "python3 -c 'import socket\ntry:\n socket.create_connection((\"127.0.0.1\", {port}), timeout=3); print(\"CONNECTED\")\nexcept OSError as e: print(\"refused\", e)'"
    );
    let (out, log) = c.run(&command);
    assert_eq!(out.exit_code, Some(0), "{log}");
    assert!(log.contains("refused"), "{log}");
    assert!(!log.contains("CONNECTED"), "{log}");
    assert!(listener.accept().is_err(), "the listener saw a connection");
}

fn live_processes_with(token: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&cmd).contains(token)
            && assay_exec::process_alive(pid)
        {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_daemon_that_leaves_the_session_dies_with_the_run() {
    let c = Case::new();
    // A unique sleep length names the daemon in the host's /proc.
    let token = format!("{}.{}", 900 + std::process::id() % 97, std::process::id());
    let command = format!(
        "(setsid sh -c '(sleep {token} &) ; sleep {token}' > /dev/null 2>&1 &) ; \
         sleep 0.3; echo started"
    );
    let (out, log) = c.run(&command);
    assert_eq!(out.exit_code, Some(0), "{log}");
    assert!(log.contains("started"));
    let alive = live_processes_with(&format!("sleep\0{token}"));
    assert!(alive.is_empty(), "survivors after the run: {alive:?}");
}

#[test]
fn the_host_processes_and_their_environments_are_invisible() {
    let c = Case::new();
    // cargo sets CARGO_PKG_NAME in this test process's environment; a run
    // that could read /proc/<our pid>/environ would print it.
    let me = std::process::id();
    let command = format!(
        "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c CARGO_PKG_NAME; \
         ls /proc | grep -cE '^[0-9]+$'; kill -9 {me} 2>&1; kill -9 -1 2>&1"
    );
    let (_, log) = c.run(&command);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines[0], "0", "{log}");
    let visible: usize = lines[1].trim().parse().unwrap_or(usize::MAX);
    assert!(visible < 10, "{visible} processes visible: {log}");
    // We are still here, and so is every process of ours.
    assert!(assay_exec::process_alive(me as i32));
}

#[test]
fn tmp_and_home_are_private_and_size_limited() {
    let c = Case::new();
    let command = "echo x > /tmp/f && echo x > $HOME/g && echo wrote; \
                   dd if=/dev/zero of=/tmp/big bs=1M count=64 2>&1 | grep -c 'No space left'";
    let (_, log) = c.run(command);
    assert!(log.starts_with("wrote\n"), "{log}");
    assert_eq!(log.lines().nth(1), Some("1"), "{log}");
    assert!(
        !Path::new("/tmp/big").exists()
            || std::fs::metadata("/tmp/big").is_ok_and(|m| m.len() < (16 << 20))
    );
}

#[test]
fn a_memory_hog_is_killed_at_the_limit_and_says_so() {
    let c = Case::new();
    let mut spec = c.spec(
        c.sandbox(),
        "python3 -c 'x = bytearray(400 << 20); x[::4096] = b\"a\" * len(x[::4096]); print(\"survived\")'",
    );
    spec.limits.max_memory = Some(128 << 20);
    let (out, log) = c.run_spec(spec);
    assert!(!log.contains("survived"), "{log}");
    if out.cgroup_memory {
        assert_eq!(out.limit_hit, Some(LimitHit::Memory), "{out:?} {log}");
    } else {
        // Without a cgroup the address-space limit fails the allocation.
        assert!(log.contains("MemoryError"), "{out:?} {log}");
    }
}

/// Bytes below `dir`, by what its files take on disk.
fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let meta = entry.path().symlink_metadata().unwrap();
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

/// Writes 8 MiB into the tree 40 times (320 MiB), a tenth of a second
/// apart, then says `finished`: `redirect` says where each write goes.
fn writer(redirect: &str) -> String {
    format!(
        "for i in $(seq 40); do head -c 8388608 /dev/zero {redirect}; sleep 0.1; done; echo finished"
    )
}

#[test]
fn a_run_writing_past_its_write_limit_is_killed_and_says_so() {
    let c = Case::new();
    let mut spec = c.spec(c.sandbox(), &writer("> part$i"));
    spec.limits.max_written = Some(32 << 20);
    let (out, log) = c.run_spec(spec);
    assert_eq!(out.limit_hit, Some(LimitHit::Written), "{out:?} {log}");
    assert!(!log.contains("finished"), "{log}");
    // Stopped within a few measurements, far short of the 320 MiB.
    let left = disk_usage(&c.tree());
    assert!(((32 << 20)..(160 << 20)).contains(&left), "{left}");
}

/// Sparse files take no blocks, but whoever reads the tree after the run
/// reads their length: 4 GiB of them against a limit of 32 MiB (nothing
/// is written to disk if the defence fails).
#[test]
fn sparse_files_count_their_length_towards_the_write_limit() {
    let c = Case::new();
    let mut spec = c.spec(
        c.sandbox(),
        "for i in 1 2 3 4; do truncate -s 1G sparse$i; done; sleep 10; echo finished",
    );
    spec.limits.max_written = Some(32 << 20);
    let (out, log) = c.run_spec(spec);
    assert_eq!(out.limit_hit, Some(LimitHit::Written), "{out:?} {log}");
    assert!(!log.contains("finished"), "{log}");
}

#[test]
fn unlinked_files_a_sandboxed_run_holds_open_count_towards_its_write_limit() {
    let c = Case::new();
    // Every write appends to one file unlinked at once (the tree looks
    // empty throughout), by a daemon that left the run's process group and
    // its parent.
    let command = format!(
        "(setsid sh -c 'exec 3>hidden; rm hidden; {}' &); sleep 10; echo finished",
        writer(">&3")
    );
    let mut spec = c.spec(c.sandbox(), &command);
    spec.limits.max_written = Some(32 << 20);
    let (out, log) = c.run_spec(spec);
    assert_eq!(out.limit_hit, Some(LimitHit::Written), "{out:?} {log}");
    assert!(!log.contains("finished"), "{log}");
}

#[test]
fn a_run_within_its_write_limit_and_setup_without_a_tree_are_left_alone() {
    let c = Case::new();
    let mut spec = c.spec(
        c.sandbox(),
        "head -c 8388608 /dev/zero > part; echo finished",
    );
    spec.limits.max_written = Some(32 << 20);
    let (out, log) = c.run_spec(spec);
    assert_eq!((out.exit_code, out.limit_hit), (Some(0), None), "{log}");
    // Setup writes its environment, which the write limit does not measure.
    let setup = Sandbox {
        tree: None,
        env_writable: true,
        ..c.sandbox()
    };
    let mut spec = c.spec(
        setup,
        "head -c 67108864 /dev/zero > big; sleep 1; echo finished",
    );
    spec.limits.max_written = Some(32 << 20);
    let (out, log) = c.run_spec(spec);
    assert_eq!((out.exit_code, out.limit_hit), (Some(0), None), "{log}");
}

#[test]
fn a_fork_bomb_stops_at_the_process_limit() {
    let c = Case::new();
    let mut spec = c.spec(
        c.sandbox(),
        "python3 -c 'import os, time\nn = 0\nfor i in range(200):\n try:\n  if os.fork() == 0:\n   time.sleep(5); os._exit(0)\n  n += 1\n except OSError:\n  break\nprint(\"forked\", n, flush=True)'",
    );
    spec.limits.max_processes = Some(64);
    spec.timeout = Duration::from_secs(20);
    let (out, log) = c.run_spec(spec);
    assert!(log.contains("forked"), "{out:?} {log}");
    let n: usize = log.trim().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n < 64, "{n} processes started: {log}");
    if out.cgroup_processes {
        assert_eq!(out.limit_hit, Some(LimitHit::Processes), "{out:?}");
    }
}

#[test]
fn every_process_of_a_run_is_in_its_control_group() {
    let c = Case::new();
    let token = format!("{}.{}", 800 + std::process::id() % 97, std::process::id());
    // The run waits for the test to have looked at it.
    let mut spec = c.spec(
        c.sandbox(),
        &format!("sleep {token} & while [ ! -e seen ]; do sleep 0.05; done; kill $!"),
    );
    spec.limits.max_processes = Some(256);
    spec.limits.max_memory = Some(1 << 30);
    let seen = c.tree().join("seen");
    let look = std::thread::spawn(move || {
        let sleep = format!("sleep\0{token}");
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while live_processes_with(&sleep).is_empty() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        // The outer bwrap, setpriv's inner bwrap, the shell and the sleep all
        // carry the token in their command lines.
        let groups: Vec<(i32, String)> = live_processes_with(&token)
            .into_iter()
            .filter_map(|pid| {
                Some((
                    pid,
                    std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?,
                ))
            })
            .collect();
        std::fs::write(&seen, "").unwrap();
        groups
    });
    let (out, log) = c.run_spec(spec);
    let groups = look.join().unwrap();
    assert_eq!(out.exit_code, Some(0), "{log}");
    assert!(
        out.cgroup_processes || out.cgroup_memory,
        "no group could be made here: {out:?}"
    );
    assert!(
        groups.len() >= 3,
        "the run's processes were not found: {groups:?}"
    );
    for (pid, text) in &groups {
        assert!(
            text.contains("/assay-"),
            "process {pid} is outside the run's group:\n{text}"
        );
    }
}

/// When a sandboxed run with a limit group returns, nothing of it is alive,
/// not even what left its session: the runner asks the group (which nothing
/// in the sandbox can leave) before it scans `/proc`, and waits while it
/// lists anyone.
#[test]
fn nothing_of_a_sandboxed_run_in_a_limit_group_is_alive_when_it_returns() {
    let c = Case::new();
    let token = format!("{}.{}", 700 + std::process::id() % 97, std::process::id());
    for command in [
        format!("(setsid sleep {token} &); sleep {token} & echo started"),
        format!("(setsid sleep {token} &); sleep {token}"),
    ] {
        let mut spec = c.spec(c.sandbox(), &command);
        spec.limits.max_processes = Some(256);
        spec.limits.max_memory = Some(1 << 30);
        spec.timeout = Duration::from_secs(2);
        let (out, log) = c.run_spec(spec);
        assert!(
            out.cgroup_processes || out.cgroup_memory,
            "no group could be made here: {out:?}"
        );
        let left = live_processes_with(&format!("sleep\0{token}"));
        assert!(left.is_empty(), "{command}: left {left:?} ({out:?}, {log})");
    }
}

#[test]
fn setup_may_write_its_environment_and_use_the_hosts_network() {
    let c = Case::new();
    let sandbox = Sandbox {
        tree: None,
        env_dir: Some(c.path().join("env")),
        env_writable: true,
        network: true,
        ..c.sandbox()
    };
    let (out, log) = c.run_spec(c.spec(
        sandbox,
        "pwd; echo built > built.txt; wc -l < /proc/net/dev",
    ));
    assert_eq!(out.exit_code, Some(0), "{log}");
    assert!(log.starts_with("/assay/env\n"), "{log}");
    let host = std::fs::read_to_string("/proc/net/dev")
        .unwrap()
        .lines()
        .count();
    assert_eq!(
        log.lines().nth(1).unwrap().trim(),
        host.to_string(),
        "{log}"
    );
    // A test run's network namespace has loopback only (2 header lines + lo).
    let (_, log) = c.run("wc -l < /proc/net/dev");
    assert_eq!(log.trim(), "3", "{log}");
    assert_eq!(
        std::fs::read_to_string(c.path().join("env/built.txt")).unwrap(),
        "built\n"
    );
}

/// Every way to change a protected file from inside, each on its own line
/// so the log says which got through: `CHANGED <how>` when it did.
const CHANGE_PROTECTED: &str = "\
cd tests/unit
echo evil > test_a.py && echo 'CHANGED write'
echo evil >> test_a.py && echo 'CHANGED append'
true > test_a.py && echo 'CHANGED truncate'
chmod 666 test_a.py && echo 'CHANGED chmod'
mv test_a.py moved.py && echo 'CHANGED rename'
rm -f test_a.py && echo 'CHANGED unlink'
echo new > new.py && mv -f new.py test_a.py && echo 'CHANGED replace'
ln test_a.py ../hard.py && echo evil > ../hard.py && echo 'CHANGED hard link'
cd /assay/tree
mv tests/unit tests/moved && echo 'CHANGED dir rename'
mv tests gone && echo 'CHANGED top dir rename'
rm -rf tests && echo 'CHANGED removed'
mkdir -p tests/unit/__pycache__ && echo beside > tests/unit/beside.py && echo 'WROTE beside'
echo helper > tests/unit/helper.py && mv tests/unit/helper.py tests/unit/helper2.py && echo 'MOVED own'
echo top > test_top.py && echo 'CHANGED top file'
cat tests/unit/test_a.py
";

fn protected_case() -> (Case, Sandbox) {
    let c = Case::new();
    std::fs::create_dir_all(c.tree().join("tests/unit")).unwrap();
    std::fs::write(c.tree().join("tests/unit/test_a.py"), "hidden\n").unwrap();
    std::fs::write(c.tree().join("tests/unit/helper.py"), "helper\n").unwrap();
    std::fs::write(c.tree().join("test_top.py"), "top\n").unwrap();
    let mut sandbox = c.sandbox();
    sandbox.protect = vec![
        PathBuf::from("tests/unit/test_a.py"),
        PathBuf::from("test_top.py"),
        PathBuf::from("tests/missing.py"),
    ];
    (c, sandbox)
}

#[test]
fn a_protected_file_cannot_be_written_renamed_unlinked_or_replaced_and_its_dirs_stay() {
    let (c, sandbox) = protected_case();
    let (out, log) = c.run_spec(c.spec(sandbox, CHANGE_PROTECTED));
    assert_eq!(out.exit_code, Some(0), "{log}");
    assert!(!log.contains("CHANGED"), "{log}");
    assert!(log.contains("WROTE beside\nMOVED own\n"), "{log}");
    assert!(log.ends_with("\nhidden\n"), "{log}");
    assert_eq!(
        std::fs::read_to_string(c.tree().join("tests/unit/test_a.py")).unwrap(),
        "hidden\n"
    );
    assert_eq!(
        std::fs::read_to_string(c.tree().join("test_top.py")).unwrap(),
        "top\n"
    );
    assert!(c.tree().join("tests/unit/beside.py").is_file());
    assert!(c.tree().join("tests/unit/__pycache__").is_dir());
    assert!(!c.tree().join("tests/missing.py").exists());
}

#[test]
fn without_protection_the_same_changes_go_through() {
    // The attack above is real: unprotected, the file is rewritten.
    let (c, mut sandbox) = protected_case();
    sandbox.protect.clear();
    let (_, log) = c.run_spec(c.spec(sandbox, CHANGE_PROTECTED));
    assert!(log.contains("CHANGED write"), "{log}");
}

#[test]
fn a_symlinked_protected_path_is_not_followed() {
    // A protected path through a link (or ending in one) binds nothing: the
    // link's target outside the tree is never mounted into the run.
    let c = Case::new();
    let outside = c.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("test_a.py"), "outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, c.tree().join("tests")).unwrap();
    std::os::unix::fs::symlink(outside.join("test_a.py"), c.tree().join("test_b.py")).unwrap();
    let mut sandbox = c.sandbox();
    sandbox.protect = vec![PathBuf::from("tests/test_a.py"), PathBuf::from("test_b.py")];
    let (out, log) = c.run_spec(c.spec(
        sandbox,
        "cat tests/test_a.py test_b.py 2>&1; grep -c ' /assay/tree/' /proc/self/mountinfo",
    ));
    assert_eq!(out.exit_code, Some(1), "{log}");
    assert!(!log.contains("outside"), "{log}");
    assert!(log.trim_end().ends_with('0'), "{log}");
}

/// Extra binds: a read-only one is read but not written, a writable one
/// takes the run's writes, and neither shows the host path it came from.
#[test]
fn extra_binds_are_read_only_unless_writable() {
    let c = Case::new();
    let input = c.path().join("input");
    let out = c.path().join("out");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(input.join("prompt.md"), "fix the bug\n").unwrap();
    let sandbox = Sandbox {
        binds: vec![
            assay_exec::Bind {
                host: input.clone(),
                at: "/assay/in".into(),
                writable: false,
            },
            assay_exec::Bind {
                host: out.clone(),
                at: "/assay/out".into(),
                writable: true,
            },
        ],
        ..c.sandbox()
    };
    let (run, log) = c.run_spec(c.spec(
        sandbox,
        "cat /assay/in/prompt.md; echo x > /assay/in/prompt.md && echo WROTE-IN; \
         echo transcript > /assay/out/t.txt && echo WROTE-OUT",
    ));
    assert_eq!(run.exit_code, Some(0), "{log}");
    assert!(log.contains("fix the bug"), "{log}");
    assert!(!log.contains("WROTE-IN"), "{log}");
    assert!(log.contains("WROTE-OUT"), "{log}");
    assert_eq!(
        std::fs::read_to_string(input.join("prompt.md")).unwrap(),
        "fix the bug\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("t.txt")).unwrap(),
        "transcript\n"
    );
}
