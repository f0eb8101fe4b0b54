//! Real processes through `assay_exec::run`: exit statuses, group kills checked
//! by pid, log order and cap, environment isolation, cwd and rlimits.

// The helpers below are test code too; `allow-unwrap-in-tests` only covers
// `#[test]` functions.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assay_exec::{ExecError, LimitHit, Limits, RunOutcome, RunSpec, process_alive, run};
use tempfile::TempDir;

const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

struct Sandbox {
    dir: TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn spec(&self, command: &str) -> RunSpec {
        RunSpec {
            command: command.to_owned(),
            cwd: self.path().to_owned(),
            env: BTreeMap::from([("PATH".to_owned(), PATH.to_owned())]),
            timeout: Duration::from_secs(10),
            stall_grace: None,
            log_path: self.log_path(),
            log_cap: 1 << 20,
            limits: Limits::default(),
            sandbox: None,
        }
    }

    fn log_path(&self) -> PathBuf {
        self.path().join("run.log")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap()
    }

    fn pid(&self, file: &str) -> i32 {
        std::fs::read_to_string(self.path().join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    async fn run(&self, command: &str) -> RunOutcome {
        run_bounded(&self.spec(command)).await
    }
}

/// `run`, failing the test (instead of hanging it) if it never returns. The
/// bound is far above anything these commands need: it is a hang detector,
/// not a performance assertion (timing figures belong in benches).
async fn run_bounded(spec: &RunSpec) -> RunOutcome {
    match tokio::time::timeout(Duration::from_secs(60), run(spec)).await {
        Ok(outcome) => outcome.unwrap(),
        Err(_) => panic!("`{}` did not return within 60 s", spec.command),
    }
}

/// SIGKILL is asynchronous: give the kernel a bounded moment to finish it.
fn gone_soon(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while process_alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[tokio::test]
async fn exit_codes_are_reported() {
    let sandbox = Sandbox::new();
    for (command, code) in [("exit 0", 0), ("true", 0), ("exit 1", 1), ("exit 42", 42)] {
        let outcome = sandbox.run(command).await;
        assert_eq!(outcome.exit_code, Some(code), "{command}");
        assert_eq!(outcome.signal, None, "{command}");
        assert!(!outcome.timed_out && !outcome.leftover_killed, "{command}");
    }
}

#[tokio::test]
async fn command_not_found_is_exit_127() {
    let sandbox = Sandbox::new();
    let outcome = sandbox.run("assay-no-such-command-xyz --flag").await;
    assert_eq!(outcome.exit_code, Some(127));
    assert!(sandbox.log().contains("not found"), "{}", sandbox.log());
}

#[tokio::test]
async fn death_by_signal_has_no_exit_code() {
    let sandbox = Sandbox::new();
    let outcome = sandbox.run("kill -TERM $$").await;
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.signal, Some(libc::SIGTERM));
    assert!(!outcome.timed_out);
}

#[tokio::test]
async fn timeout_kills_the_whole_tree() {
    let sandbox = Sandbox::new();
    let mut spec = sandbox.spec(
        "echo $$ > outer.pid; \
         sh -c 'sleep 300 & echo $! > bg.pid; echo $$ > inner.pid; sleep 300'",
    );
    spec.timeout = Duration::from_secs(1);
    // Without the timeout this would wait for `sleep 300`: the bound fails it first.
    let outcome = run_bounded(&spec).await;

    assert!(outcome.timed_out, "{outcome:?}");
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    assert_eq!(outcome.exit_code, None);
    assert!(!outcome.leftover_killed, "{outcome:?}");
    for file in ["outer.pid", "inner.pid", "bg.pid"] {
        let pid = sandbox.pid(file);
        assert!(gone_soon(pid), "{file}: pid {pid} survived the timeout");
    }
}

#[tokio::test]
async fn leftover_is_killed_after_a_normal_exit() {
    let sandbox = Sandbox::new();
    let outcome = sandbox
        .run("sleep 300 & echo $! > bg.pid; echo $$ > sh.pid; exit 0")
        .await;

    assert_eq!(outcome.exit_code, Some(0));
    assert!(outcome.leftover_killed, "{outcome:?}");
    assert!(!outcome.timed_out);
    // The leftover held the pipe: it must be dead, not merely abandoned after
    // the drain grace period (how fast `run` returns is a bench's business).
    for file in ["sh.pid", "bg.pid"] {
        let pid = sandbox.pid(file);
        assert!(gone_soon(pid), "{file}: pid {pid} survived");
    }
}

#[tokio::test]
async fn clean_exit_reports_no_leftover() {
    let sandbox = Sandbox::new();
    // A finished background job is not a leftover.
    let outcome = sandbox.run("sleep 0 & wait; echo done").await;
    assert_eq!(outcome.exit_code, Some(0));
    assert!(!outcome.leftover_killed);
}

/// Escaping the group with `setsid` is the documented limitation: the escapee
/// survives, but `run` must still return (after the drain grace period).
#[tokio::test]
async fn setsid_escapee_survives_but_run_returns() {
    let sandbox = Sandbox::new();
    // The escapee holds the pipe for 30 s; `run` must give up on it, and the
    // 60 s bound of `run_bounded` fails the test if it does not.
    let outcome = sandbox
        .run("setsid sleep 30 & echo $! > esc.pid; sleep 0.2; exit 3")
        .await;
    let escapee = sandbox.pid("esc.pid");
    let escaped = process_alive(escapee);
    if let Some(pid) = rustix::process::Pid::from_raw(escapee) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }

    assert_eq!(outcome.exit_code, Some(3));
    assert!(
        escaped,
        "the escapee was expected to outlive the group kill"
    );
    assert!(!outcome.timed_out, "{outcome:?}");
}

#[tokio::test]
async fn stdout_and_stderr_interleave_in_order() {
    let sandbox = Sandbox::new();
    let outcome = sandbox.run("echo a; echo b >&2; echo c").await;
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(sandbox.log(), "a\nb\nc\n");
    assert_eq!(outcome.log_bytes, 6);
    assert!(!outcome.log_truncated);
}

#[tokio::test]
async fn stdin_is_empty() {
    let sandbox = Sandbox::new();
    let outcome = sandbox.run("wc -c").await;
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(sandbox.log().trim(), "0");
}

#[tokio::test]
async fn large_output_is_capped_and_fully_drained() {
    let sandbox = Sandbox::new();
    let total: u64 = 50_000_000;
    let cap: u64 = 1 << 20;
    let mut spec = sandbox.spec(&format!("head -c {total} /dev/zero; echo end >&2"));
    spec.log_cap = cap;
    let outcome = run_bounded(&spec).await;

    assert_eq!(outcome.exit_code, Some(0));
    assert!(!outcome.timed_out);
    assert_eq!(outcome.log_bytes, total + 4);
    assert!(outcome.log_truncated);
    assert_eq!(std::fs::metadata(sandbox.log_path()).unwrap().len(), cap);
}

#[tokio::test]
async fn output_exactly_at_cap_is_not_truncated() {
    let sandbox = Sandbox::new();
    for (produced, cap, truncated) in [(100_u64, 100_u64, false), (101, 100, true), (0, 0, false)] {
        let mut spec = sandbox.spec(&format!("head -c {produced} /dev/zero"));
        spec.log_cap = cap;
        let outcome = run_bounded(&spec).await;
        assert_eq!(outcome.log_bytes, produced);
        assert_eq!(
            outcome.log_truncated, truncated,
            "{produced} bytes, cap {cap}"
        );
        let kept = std::fs::metadata(sandbox.log_path()).unwrap().len();
        assert_eq!(kept, produced.min(cap));
    }
}

#[tokio::test]
async fn only_the_given_environment_reaches_the_child() {
    let sandbox = Sandbox::new();
    // Set by cargo for the test process: it must not leak.
    assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
    let mut spec = sandbox.spec("env");
    spec.env.insert("ASSAY_MARK".to_owned(), "1".to_owned());
    let outcome = run_bounded(&spec).await;

    assert_eq!(outcome.exit_code, Some(0));
    let log = sandbox.log();
    let names: Vec<&str> = log.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(
        names.contains(&"ASSAY_MARK") && names.contains(&"PATH"),
        "{log}"
    );
    // The shell may add its own PWD; nothing else may appear.
    for name in names {
        assert!(
            ["ASSAY_MARK", "PATH", "PWD", "OLDPWD", "SHLVL", "_"].contains(&name),
            "leaked {name}: {log}"
        );
    }
}

#[tokio::test]
async fn cwd_is_respected() {
    let sandbox = Sandbox::new();
    let sub = sandbox.path().join("tree");
    std::fs::create_dir(&sub).unwrap();
    let mut spec = sandbox.spec("pwd -P; ls");
    spec.cwd = sub.clone();
    std::fs::write(sub.join("marker.txt"), "").unwrap();
    let outcome = run_bounded(&spec).await;

    assert_eq!(outcome.exit_code, Some(0));
    let expected = format!("{}\nmarker.txt\n", sub.canonicalize().unwrap().display());
    assert_eq!(sandbox.log(), expected);
}

#[tokio::test]
async fn missing_cwd_is_a_spawn_error() {
    let sandbox = Sandbox::new();
    let mut spec = sandbox.spec("true");
    spec.cwd = sandbox.path().join("absent");
    let error = run(&spec).await.unwrap_err();
    assert!(matches!(error, ExecError::Spawn { .. }), "{error:?}");
}

#[tokio::test]
async fn missing_log_directory_is_a_log_error() {
    let sandbox = Sandbox::new();
    let mut spec = sandbox.spec("true");
    spec.log_path = sandbox.path().join("absent/run.log");
    let error = run(&spec).await.unwrap_err();
    assert!(matches!(error, ExecError::CreateLog { .. }), "{error:?}");
}

#[tokio::test]
async fn file_size_limit_stops_a_large_write() {
    let sandbox = Sandbox::new();
    let mut spec = sandbox.spec("head -c 100000 /dev/zero > big.bin");
    spec.limits.max_file_size = Some(4096);
    let outcome = run_bounded(&spec).await;

    // SIGXFSZ kills `head`: the shell either is `head` (exec'd, signal) or
    // reports it as 128 + SIGXFSZ.
    let xfsz = libc::SIGXFSZ;
    assert!(
        outcome.signal == Some(xfsz) || outcome.exit_code == Some(128 + xfsz),
        "{outcome:?}"
    );
    let written = std::fs::metadata(sandbox.path().join("big.bin"))
        .unwrap()
        .len();
    assert_eq!(written, 4096);
}

#[tokio::test]
async fn an_unsandboxed_run_writing_past_its_write_limit_in_its_cwd_is_killed() {
    let sandbox = Sandbox::new();
    let mut spec = sandbox.spec(
        "for i in $(seq 40); do head -c 8388608 /dev/zero > part$i; sleep 0.1; done; echo finished",
    );
    spec.limits.max_written = Some(32 << 20);
    let outcome = run_bounded(&spec).await;
    assert_eq!(outcome.limit_hit, Some(LimitHit::Written), "{outcome:?}");
    assert!(!sandbox.log().contains("finished"), "{}", sandbox.log());
}

#[tokio::test]
async fn a_run_that_wrote_past_its_write_limit_and_ended_before_a_measurement_says_so() {
    let sandbox = Sandbox::new();
    let mut spec = sandbox.spec("head -c 67108864 /dev/zero > big; echo finished");
    spec.limits.max_written = Some(32 << 20);
    let outcome = run_bounded(&spec).await;
    assert!(sandbox.log().contains("finished"), "{}", sandbox.log());
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.limit_hit, Some(LimitHit::Written), "{outcome:?}");
}

#[tokio::test]
async fn rlimits_are_set_soft_and_hard() {
    let sandbox = Sandbox::new();
    let mut spec = sandbox.spec("ulimit -H -c; ulimit -n; ulimit -H -n; ulimit -v");
    spec.limits.max_open_files = Some(64);
    spec.limits.max_memory = Some(4 << 30);
    let outcome = run_bounded(&spec).await;
    assert_eq!(outcome.exit_code, Some(0));
    // `ulimit -v` counts KiB; where a cgroup limits the run's memory, no
    // address-space limit is set on top.
    let memory = if outcome.cgroup_memory {
        "unlimited".to_owned()
    } else {
        ((4_u64 << 30) / 1024).to_string()
    };
    assert_eq!(sandbox.log(), format!("0\n64\n64\n{memory}\n"));
}

/// Soft and hard limit of the core file size in the child, in bytes, as the
/// kernel states them (`/proc/self/limits` of `cat`, which inherits them from
/// the shell). `ulimit -c` would print shell-dependent units: KiB in bash,
/// 512-byte blocks in dash and in bash's POSIX mode.
fn core_limits(limits: &str) -> (String, String) {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max core file size"))
        .unwrap_or_else(|| panic!("no core line in:\n{limits}"));
    let fields: Vec<&str> = line["Max core file size".len()..]
        .split_whitespace()
        .collect();
    assert_eq!(fields.get(2), Some(&"bytes"), "{line}");
    (fields[0].to_owned(), fields[1].to_owned())
}

fn limit_text(limit: Option<u64>) -> String {
    limit.map_or("unlimited".to_owned(), |v| v.to_string())
}

#[tokio::test]
async fn core_limit_is_inherited_without_no_core() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    // A finite hard limit that no unit conversion leaves unchanged (not a
    // multiple of 1024), so a child that got a wrong or unscaled value fails
    // here even on machines whose hard limit is unlimited. Lowering it only
    // caps core dumps of this test process.
    let odd = 3 * 1024 * 1024 + 512;
    let before = getrlimit(Resource::Core);
    let maximum = Some(before.maximum.map_or(odd, |m| m.min(odd)));
    let current = Some(before.current.map_or(odd / 2, |c| c.min(odd / 2)));
    setrlimit(Resource::Core, Rlimit { current, maximum }).unwrap();
    let inherited = getrlimit(Resource::Core);

    let sandbox = Sandbox::new();
    let mut spec = sandbox.spec("cat /proc/self/limits");
    spec.limits.no_core = false;
    let outcome = run_bounded(&spec).await;
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(
        core_limits(&sandbox.log()),
        (limit_text(inherited.current), limit_text(inherited.maximum))
    );

    // The positive control: with `no_core` the same reading says 0 and 0.
    let mut spec = sandbox.spec("cat /proc/self/limits");
    spec.limits.no_core = true;
    let outcome = run_bounded(&spec).await;
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(
        core_limits(&sandbox.log()),
        ("0".to_owned(), "0".to_owned())
    );
}

/// A run that needs 1 s of CPU, pinned to CPU 0 behind three busy loops
/// (a quarter of the CPU: about 4 s of wall-clock time), against a 2 s
/// timeout: plain wall-clock cuts it; with a grace, the time it waited for
/// the CPU is not counted, and it ends on its own, its wait measured.
#[tokio::test]
async fn time_spent_waiting_for_a_cpu_taken_by_other_work_is_not_the_runs() {
    let sandbox = Sandbox::new();
    let command = "taskset -c 0 python3 -c 'import time\n\
                   t = time.process_time()\n\
                   while time.process_time() - t < 1.0: pass\n\
                   print(\"done\")'";
    let _hogs = assay_testkit::Hogs::on_cpu0(3);
    let mut spec = sandbox.spec(command);
    spec.timeout = Duration::from_secs(2);

    let plain = run_bounded(&spec).await;
    assert!(plain.timed_out, "a quarter of a CPU: {plain:?}");
    assert_eq!(plain.cpu_stalled, None, "not measured when not asked");

    spec.stall_grace = Some(Duration::from_secs(30));
    let graced = run_bounded(&spec).await;
    match graced.cpu_stalled {
        Some(stalled) => {
            assert!(!graced.timed_out, "{graced:?}\n{}", sandbox.log());
            assert_eq!(graced.exit_code, Some(0));
            assert!(sandbox.log().contains("done"));
            assert!(
                graced.duration > Duration::from_secs(2) && stalled > Duration::from_secs(1),
                "it ran past the timeout for the time it waited: {graced:?}"
            );
        }
        // No group in the unified hierarchy could be made: the timeout
        // stays plain wall-clock, as documented.
        None => assert!(graced.timed_out, "{graced:?}"),
    }
}

/// However the run spends its time, it ends by its timeout and its grace:
/// a run whose processes all wait on the CPU from start to end (all of its
/// time "not its own") is still cut there.
#[tokio::test]
async fn the_grace_bounds_a_run_that_only_ever_waits_for_a_cpu() {
    let sandbox = Sandbox::new();
    let _hogs = assay_testkit::Hogs::on_cpu0(3);
    let mut spec = sandbox.spec("taskset -c 0 sh -c 'while :; do :; done'");
    spec.timeout = Duration::from_secs(1);
    spec.stall_grace = Some(Duration::from_secs(2));
    let started = Instant::now();
    let out = run_bounded(&spec).await;
    assert!(out.timed_out, "{out:?}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "cut near 3 s, not left running: {:?}",
        started.elapsed()
    );
}
