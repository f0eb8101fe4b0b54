//! Hostile sessions: patches that fix nothing, with code that runs when the
//! tests import the package, tried the way a hostile agent would; run on
//! either executor by `grading.rs` and `docker.rs`. Each is harmless if the
//! defence fails: it writes only below this test's project directory,
//! connects only to a listener this test opens on loopback, and signals only
//! processes of its own run (or, at worst, the assay build under test).

use serde_json::json;

use super::fixture::{Executor, Fixture, OPS_BASE, OPS_SUB, TEST_OPS_BASE, assert_verdict};
use super::{grep_tree, live_with};

/// `pkg/__init__.py` running `body` at import, plus an unchanged `ops.py`.
/// A graded package whose import sleeps ten minutes: a run that only a
/// timeout or an interrupt ends.
pub const SLEEPER: &str = "import time\n\ntime.sleep(600)\n";

/// Starts `assay build --json` on `f` (graded with a [`SLEEPER`]), waits
/// with `running(pid)` until the sleeper runs, interrupts it (SIGINT) and
/// checks that it stops with exit 130 saying so; the build's pid and its
/// stderr.
pub fn interrupted_build(f: &Fixture, running: impl FnOnce(u32)) -> (u32, String) {
    f.session("evil/sleep.json", "p-1", &hostile(f, SLEEPER));
    let child = f
        .project
        .command(&["build", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    running(pid);
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    (pid, stderr)
}

pub fn hostile(f: &Fixture, body: &str) -> String {
    f.diff1(&[("pkg/__init__.py", Some(body))])
}

/// The attacks, graded on `executor`: every one fails, the honest fix is
/// resolved, nothing outside the run's tree is reached, nothing survives.
pub fn hostile_code_is_confined(executor: Executor) {
    let f = Fixture::on(executor);
    f.default_pipeline();
    let project = f.path().display().to_string();
    let marker = format!("PLANTED-{}", std::process::id());
    std::fs::write(f.path().join("planted.txt"), &marker).unwrap();
    let key = format!("sk-ant-api03-{}-attack", std::process::id());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let token = format!("{}.{}", 700 + std::process::id() % 97, std::process::id());

    // Writes outside the tree, reads a planted file, prints every process
    // environment it can read (reversed too), phones home.
    let reach = format!(
        r#"import glob, os, socket
for path in ["{project}/escaped.txt", "/tmp/../{project}/escaped2.txt"]:
    try:
        open(path, "w").write("escaped")
    except OSError:
        pass
try:
    print(open("{project}/planted.txt").read())
except OSError:
    pass
for env in glob.glob("/proc/*/environ"):
    try:
        data = open(env, "rb").read().decode(errors="replace")
        print(data, data[::-1])
    except OSError:
        pass
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"hi")
except OSError:
    pass
"#
    );
    f.session("evil/reach.json", "p-1", &hostile(&f, &reach));

    // Leaves a daemon, then kills every ancestor that is an assay process
    // (unsandboxed, that is this build and nothing else on the machine).
    let daemon = format!(
        r#"import os, subprocess
subprocess.Popen(["setsid", "sh", "-c", "(sleep {token} &) ; sleep {token}"], start_new_session=True)
pid = os.getppid()
while pid > 1:
    try:
        comm = open(f"/proc/{{pid}}/comm").read().strip()
        ppid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        break
    if comm == "assay":
        os.kill(pid, 9)
    pid = ppid
"#
    );
    f.session("evil/daemon.json", "p-1", &hostile(&f, &daemon));

    // Looks for the history (the gold patch lives there) through any git
    // directory or object store it can find, and copies the fix out of it.
    // Searches only below this test's directory (where the source repository
    // and the cache are), so that a failed defence reads nothing else.
    let history = r#"import os, subprocess
found = []
for root in ["PROJECT", os.path.expanduser("~"), ".."]:
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.startswith(("/proc", "/sys", "/dev", "/usr")):
            dirnames[:] = []
            continue
        if "HEAD" in filenames and "objects" in dirnames:
            found.append(dirpath)
for git_dir in found:
    log = subprocess.run(["git", "--git-dir", git_dir, "log", "--all", "-p"], capture_output=True, text=True).stdout
    if "return a - b" in log:
        here = os.path.dirname(os.path.abspath(__file__))
        src = open(os.path.join(here, "ops.py")).read()
        open(os.path.join(here, "ops.py"), "w").write(src.replace("def sub(a, b):\n    return a + b", "def sub(a, b):\n    return a - b"))
        print("GOLD" + " FOUND in", git_dir)
"#
    .replace("PROJECT", &project);
    f.session("evil/history.json", "p-1", &hostile(&f, &history));

    // Monkeypatches unittest from the package so that every test passes.
    let monkey = r#"import unittest
def _pass(self, result=None):
    result.startTest(self)
    result.addSuccess(self)
    result.stopTest(self)
unittest.TestCase.run = _pass
"#;
    f.session("evil/monkey.json", "p-1", &hostile(&f, monkey));

    // A tests/__init__.py that swallows every failure (test infrastructure).
    let swallow = f.diff1(&[(
        "tests/__init__.py",
        Some("import unittest\n\n\ndef _ok(self, *a, **k):\n    pass\n\n\nunittest.TestCase.fail = _ok\nunittest.TestCase.assertEqual = _ok\n"),
    )]);
    f.session("evil/swallow.json", "p-1", &swallow);

    // Blanks the test methods at the end of the test patch's own file.
    let blank = f.diff1(&[(
        "tests/test_ops.py",
        Some(&format!(
            "{TEST_OPS_BASE}\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n        return\n\n    def test_sub(self):\n        return\n"
        )),
    )]);
    f.session("evil/blank.json", "p-1", &blank);

    // Rewrites the hidden test file on disk while the tests run (the write
    // fails: the run cannot change the hidden test patch's files).
    let rewrite = r#"import os
path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "test_ops.py")
src = open(path).read()
open(path, "w").write(src.replace("self.assertEqual(ops.sub(5, 3), 2)", "return"))
"#;
    f.session("evil/rewrite.json", "p-1", &hostile(&f, rewrite));

    // Plants objects in any git object store it can find (assay's own, with
    // the staged tests under their ids, would poison later sessions).
    // Only below this test's directory: a failed defence writes nowhere else.
    let plant = r#"import os
for root in ["PROJECT", ".."]:
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.startswith(("/proc", "/sys", "/dev", "/usr")):
            dirnames[:] = []
            continue
        if os.path.basename(dirpath) == "objects" and "info" in dirnames:
            try:
                os.makedirs(os.path.join(dirpath, "ab"), exist_ok=True)
                open(os.path.join(dirpath, "ab", "c" * 38), "wb").write(b"planted")
                print("PLANTED" + " IN", dirpath)
            except OSError:
                pass
"#
    .replace("PROJECT", &project);
    f.session("evil/plant.json", "p-1", &hostile(&f, &plant));
    // A wrong fix graded after it must stay unresolved.
    let wrong = OPS_BASE.replacen("return a + b\n\n\ndef mul", "return a * b\n\n\ndef mul", 1);
    f.session(
        "z/wrong.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(&wrong))]),
    );

    // An honest correct fix, graded in the same build, keeps its verdict.
    f.session(
        "good/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );

    let b = f.build_env(&[("ANTHROPIC_API_KEY", key.as_str())]);
    assert_eq!(
        b.run.code, 0,
        "the build must survive its graded code\n{}",
        b.run.stderr
    );

    for s in [
        "reach", "daemon", "history", "monkey", "swallow", "blank", "rewrite", "plant",
    ] {
        for arm in ["exclude", "keep"] {
            let row = f.row(&format!("evil/{s}.json"), arm);
            assert_ne!(row["verdict"], "resolved", "{s} {arm}: {row:#?}");
            assert_ne!(
                row["verdict"], "resolved_after_rerun",
                "{s} {arm}: {row:#?}"
            );
            assert_eq!(row["sandbox"], executor.sandbox(), "{row:#?}");
        }
    }
    assert_verdict(&f, "good/fix.json", "resolved", "resolved");
    assert_eq!(f.row("good/fix.json", "exclude")["tamper"], "");
    assert_verdict(&f, "z/wrong.json", "unresolved", "unresolved");
    assert!(
        !f.project
            .cache()
            .join("git/objects/ab")
            .join("c".repeat(38))
            .exists(),
        "an object was planted in assay's store"
    );
    f.project.run(&["verify", "--cache-only"]).code(0);

    // Flagged: the framework reach, the infrastructure edit (neutralised in
    // the scored arm, in effect in the keep arm). The hidden test file could
    // not be rewritten, so it did not change.
    let tamper = |s: &str, arm: &str| f.row(&format!("evil/{s}.json"), arm)["tamper"].clone();
    assert!(
        tamper("monkey", "exclude").contains("reaches into the test framework"),
        "{}",
        tamper("monkey", "exclude")
    );
    assert!(
        tamper("swallow", "exclude")
            .contains("touches test infrastructure: tests/__init__.py (neutralised)")
    );
    assert!(tamper("swallow", "keep").contains("touches test infrastructure: tests/__init__.py"));
    assert!(
        !tamper("rewrite", "keep").contains("test files changed during the run"),
        "{}",
        tamper("rewrite", "keep")
    );
    assert_eq!(
        f.row("evil/blank.json", "keep")["reset_paths"],
        "tests/test_ops.py"
    );
    let summary = f.summary();
    let listed = summary["tamper_suspects"].as_array().unwrap();
    assert!(
        listed.iter().any(|t| t["session"] == "evil/monkey.json"),
        "{summary:#}"
    );
    assert_eq!(summary["graded_unsandboxed"], json!(false));

    assert!(!f.path().join("escaped.txt").exists());
    assert!(!f.path().join("escaped2.txt").exists());
    assert!(
        listener.accept().is_err(),
        "graded code reached a loopback listener"
    );
    let alive = live_with(&format!("sleep\0{token}"));
    assert!(alive.is_empty(), "a daemon survived the build: {alive:?}");
    let history_log = f.row("evil/history.json", "keep");
    assert_eq!(history_log["verdict"], "unresolved", "{history_log:#?}");
    let mut hits = Vec::new();
    let reversed: String = key.chars().rev().collect();
    for dir in ["cache", "release"] {
        grep_tree(
            &f.path().join(dir),
            &[
                marker.as_bytes(),
                key.as_bytes(),
                reversed.as_bytes(),
                b"GOLD FOUND",
                b"PLANTED IN",
            ],
            &mut hits,
        );
    }
    assert!(
        hits.is_empty(),
        "found in the cache or the release: {hits:?}"
    );
}

/// Graded code that fills its tree at import: `files` files of `mib` MiB,
/// a tenth of a second apart, saying after each how many it wrote. Under
/// `write_limit` bytes (`None`: the default, 1 GiB) the run is stopped short
/// of them; it is never resolved, the fault is the agent's and the grade
/// says it wrote over the limit. An honest fix in the same build is
/// resolved. Harmless if the defence fails: it writes only into its own
/// tree, in this test's cache.
pub fn a_run_filling_its_tree_is_stopped_at_its_write_limit(
    executor: Executor,
    write_limit: Option<u64>,
    files: u32,
    mib: u32,
) {
    let f = Fixture::on(executor);
    // The write limit must be what stops the run, not a task timeout from
    // the screening readings (5 s at the least): the environment's 60 s.
    f.pipeline("", 1 << 20, "timeout_factor = 0");
    if let Some(limit) = write_limit {
        f.edit_pipeline(
            "timeout = 60",
            &format!("timeout = 60\nwrite_limit = {limit}"),
        );
    }
    let fill = format!(
        r#"import time
for i in range({files}):
    with open("fill-%d.bin" % i, "wb") as out:
        for _ in range({mib}):
            out.write(b"\0" * (1 << 20))
    print("assay-filled", i + 1, flush=True)
    time.sleep(0.1)
"#
    );
    f.session("evil/fill.json", "p-1", &hostile(&f, &fill));
    f.session("good/fix.json", "p-1", &f.fix1());
    f.build_ok();
    assert_verdict(&f, "good/fix.json", "resolved", "resolved");
    let limit = match write_limit.unwrap_or(1 << 30) {
        n if n.is_multiple_of(1 << 30) => format!("{} GiB", n >> 30),
        n => format!("{} MiB", n >> 20),
    };
    for arm in ["exclude", "keep"] {
        let row = f.row("evil/fill.json", arm);
        assert_eq!(
            (row["verdict"].as_str(), row["fault"].as_str()),
            ("unresolved", "agent"),
            "{row:#?}"
        );
        let grade = f.grade_record("evil/fill.json", arm);
        assert_eq!(
            grade["detail"],
            format!("the run hit its write limit: it wrote over {limit} into its tree"),
            "{grade:#}"
        );
        let log = f.evidence(&grade, "log");
        assert!(log.contains("assay-filled 1\n"), "{log}");
        assert!(
            !log.contains(&format!("assay-filled {files}\n")),
            "the run was not stopped: {log}"
        );
    }
}

/// `[env] warm`: the setup warms a cache, and a graded run that writes a
/// poisoned entry into its copy reaches neither the environment nor a later
/// session's run: that session's code fails its import when the cache is not
/// warm or holds the poison, so only a clean warm copy grades it resolved.
/// Harmless if the defence fails: the writes go to this test's cache.
pub fn a_warm_cache_is_never_poisoned_for_the_next_run(executor: Executor) {
    let f = Fixture::on(executor);
    f.default_pipeline();
    f.edit_pipeline(
        "timeout = 60",
        "timeout = 60\nsetup = [\"echo warmed > $WARM_CACHE/seed\"]\nwarm = { WARM_CACHE = \"warm\" }",
    );
    let poison = "import os\nwith open(os.path.join(os.environ['WARM_CACHE'], 'poison'), 'w') as f:\n    f.write('x')\nwith open(os.path.join(os.environ['WARM_CACHE'], 'seed'), 'w') as f:\n    f.write('poisoned')\n";
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some(poison)),
    ]);
    f.session("a/poison.json", "p-1", &patch);
    f.build_ok();
    assert_verdict(&f, "a/poison.json", "resolved", "resolved");
    let check = "import os\nc = os.environ['WARM_CACHE']\nassert open(os.path.join(c, 'seed')).read().strip() == 'warmed', 'not warm'\nassert not os.path.exists(os.path.join(c, 'poison')), 'poisoned'\n";
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some(check)),
    ]);
    f.session("b/check.json", "p-1", &patch);
    f.build_ok();
    assert_verdict(&f, "b/check.json", "resolved", "resolved");
}
