//! Grading agent sessions through the real binary: each test builds a small
//! git repository (Python, stdlib `unittest`) with two merged pull requests,
//! writes statements and a `sessions/` directory, runs `assay build`, and
//! reads `release/results.csv` and `release/summary.json`. The fixture and
//! its tasks (`p-1`, `p-2`) are described in `util::fixture`.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use util::attacks::{
    a_run_filling_its_tree_is_stopped_at_its_write_limit,
    a_warm_cache_is_never_poisoned_for_the_next_run, hostile, hostile_code_is_confined,
};
use util::fixture::*;
use util::{Build, grep_tree, live_with, unique};

/// One session on task p-1 with this patch, default pipeline, built.
fn grade_p1(id: &str, patch: &str) -> Fixture {
    let f = Fixture::new();
    f.default_pipeline();
    f.session(id, "p-1", patch);
    f.build_ok();
    f
}

// ---- one test per verdict ---------------------------------------------------

#[test]
fn a_correct_fix_is_resolved_in_both_arms() {
    let f = Fixture::new();
    f.default_pipeline();
    let patch = f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]);
    f.session("a/fix.json", "p-1", &patch);
    f.build_ok();
    assert_verdict(&f, "a/fix.json", "resolved", "resolved");
    let row = f.row("a/fix.json", "exclude");
    assert_eq!(row["fault"], "none", "{row:#?}");
    assert_eq!(row["base_check"], "pass", "{row:#?}");
    assert_eq!(row["new_check"], "pass", "{row:#?}");
    assert_eq!(row["reruns"], "0", "{row:#?}");
    assert_eq!(row["empty_patch"], "false", "{row:#?}");
    assert_eq!(row["instance_id"], "p-1", "{row:#?}");
    let s = f.summary();
    assert_eq!(s["verifier_suspects"], json!([]), "{s:#}");
}

#[test]
fn code_failing_only_in_a_whole_suite_run_is_resolved_after_rerun() {
    let f = Fixture::new();
    f.default_pipeline();
    let patch = f.diff1(&[("pkg/ops.py", Some(OPS_FLAKY))]);
    f.session("b/flaky.json", "p-1", &patch);
    f.build_ok();
    // Both arms stage the same tree and share its one first run.
    assert_verdict(
        &f,
        "b/flaky.json",
        "resolved_after_rerun",
        "resolved_after_rerun",
    );
    let row = f.row("b/flaky.json", "exclude");
    assert_eq!(row["fault"], "flaky_test", "{row:#?}");
    assert_eq!(row["reruns"], "1", "{row:#?}");
    assert_eq!(row["new_check"], "fail (1)", "{row:#?}");
    let s = f.summary();
    let a = &s["agents"]["b/model-x"];
    assert_eq!(a["verdicts"]["resolved_after_rerun"], 1, "{a:#}");
}

#[test]
fn a_wrong_fix_is_unresolved_with_its_failing_test() {
    let f = Fixture::new();
    f.default_pipeline();
    let wrong = OPS_BASE.replacen("return a + b\n\n\ndef mul", "return a * b\n\n\ndef mul", 1);
    assert_ne!(wrong, OPS_BASE);
    let patch = f.diff1(&[("pkg/ops.py", Some(&wrong))]);
    f.session("b/wrong.json", "p-1", &patch);
    f.build_ok();
    assert_verdict(&f, "b/wrong.json", "unresolved", "unresolved");
    let row = f.row("b/wrong.json", "exclude");
    assert_eq!(row["fault"], "agent", "{row:#?}");
    assert_eq!(
        row["failing"], "tests.test_ops.TestOps.test_sub",
        "{row:#?}"
    );
    assert_eq!(row["reruns"], "2", "{row:#?}");
    assert_eq!(row["base_check"], "pass", "{row:#?}");
    assert_eq!(row["new_check"], "fail (1)", "{row:#?}");
    assert_eq!(row["empty_patch"], "false", "{row:#?}");
}

#[test]
fn the_empty_patch_is_unresolved_and_flagged() {
    let f = grade_p1("g/empty.json", "");
    assert_verdict(&f, "g/empty.json", "unresolved", "unresolved");
    let row = f.row("g/empty.json", "exclude");
    assert_eq!(row["empty_patch"], "true", "{row:#?}");
    assert_eq!(
        row["failing"], "tests.test_ops.TestOps.test_sub",
        "{row:#?}"
    );
    assert_eq!(row["lines_added"], "0", "{row:#?}");
}

#[test]
fn a_patch_with_stale_context_fails_to_apply() {
    let f = Fixture::new();
    f.default_pipeline();
    // The agent's own local commit reworded `sub`; its diff is against that.
    let wip = OPS_BASE.replacen(
        "def sub(a, b):\n",
        "def sub(a, b):\n    \"\"\"Subtract (wip).\"\"\"\n",
        1,
    );
    let fixed = wip.replacen(
        "(wip).\"\"\"\n    return a + b",
        "(wip).\"\"\"\n    return a - b",
        1,
    );
    assert_ne!(wip, fixed);
    let patch = f.checkout.diff(
        &f.base1,
        &[("pkg/ops.py", &wip)],
        &[("pkg/ops.py", Some(&fixed))],
    );
    assert!(patch.contains("(wip)"), "{patch}");
    f.session("g/stale.json", "p-1", &patch);
    f.build_ok();
    assert_verdict(
        &f,
        "g/stale.json",
        "patch_apply_failed",
        "patch_apply_failed",
    );
    let row = f.row("g/stale.json", "exclude");
    assert_eq!(row["fault"], "agent", "{row:#?}");
    assert_eq!(row["exit_code"], "", "no run happened: {row:#?}");
}

#[test]
fn an_edit_to_a_file_the_hidden_test_patch_changes_is_reset_in_both_arms() {
    let f = Fixture::new();
    f.default_pipeline();
    // Edits the very line after which the hidden patch inserts test_sub: once
    // a test_patch_conflict; now the file is reset to the test patch's version
    // (SWE-bench's reset) in every arm, and the dropped edit is recorded.
    let tests = TEST_OPS_BASE.replace("ops.add(2, 3), 5)", "ops.add(1, 1), 2)");
    assert_ne!(tests, TEST_OPS_BASE);
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("tests/test_ops.py", Some(&tests)),
    ]);
    f.session("b/conflict.json", "p-1", &patch);
    f.build_ok();
    assert_verdict(&f, "b/conflict.json", "resolved", "resolved");
    for arm in ["exclude", "keep"] {
        let row = f.row("b/conflict.json", arm);
        assert_eq!(row["reset_paths"], "tests/test_ops.py", "{row:#?}");
        assert_eq!(row["excluded_paths"], "tests/test_ops.py", "{row:#?}");
        assert_eq!(row["tamper"], "", "{row:#?}");
    }
    assert_eq!(f.summary()["verifier_suspects"], json!([]));
}

#[test]
fn a_process_that_exits_0_before_any_test_is_no_report() {
    let f = Fixture::new();
    f.default_pipeline();
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some("import os\n\nos._exit(0)\n")),
    ]);
    f.session("g/exit0.json", "p-1", &patch);
    f.build_ok();
    assert_verdict(&f, "g/exit0.json", "no_report", "no_report");
    let row = f.row("g/exit0.json", "exclude");
    // The task's controls reported normally: the patch's code broke the run.
    assert_eq!(row["fault"], "agent", "{row:#?}");
    assert_eq!(row["exit_code"], "0", "{row:#?}");
    assert!(
        row["tamper"].contains("reaches into the test framework: pkg/__init__.py: `os._exit(0)`"),
        "{row:#?}"
    );
}

#[test]
fn a_patch_that_is_not_a_diff_fails_to_apply_and_is_never_the_empty_patch() {
    let f = Fixture::new();
    f.default_pipeline();
    let envelope = "*** Begin Patch\n*** Update File: pkg/ops.py\n@@\n-    return a + b\n+    return a - b\n*** End Patch\n";
    f.session("g/envelope.json", "p-1", envelope);
    f.session(
        "g/junk.json",
        "p-1",
        "\u{1}\u{2}PK\u{3}\u{4} not a diff at all \u{7f}\n",
    );
    f.build_ok();
    for s in ["g/envelope.json", "g/junk.json"] {
        assert_verdict(&f, s, "patch_apply_failed", "patch_apply_failed");
        let row = f.row(s, "exclude");
        assert_eq!(row["fault"], "agent", "{row:#?}");
        assert_eq!(row["exit_code"], "", "no run happened: {row:#?}");
    }
    let detail = f.grade_record("g/envelope.json", "exclude")["detail"].clone();
    assert!(
        detail.as_str().unwrap().contains("not a unified diff"),
        "{detail}"
    );
}

#[test]
fn exit_127_from_the_patchs_own_code_is_the_agents_not_the_environments() {
    let f = Fixture::new();
    f.default_pipeline();
    // 127 is what a shell says for a missing command; the task's controls
    // ran the same command in the same environment, so the patch did it.
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some("import os\n\nos._exit(127)\n")),
    ]);
    f.session("g/exit127.json", "p-1", &patch);
    f.build_ok();
    assert_verdict(&f, "g/exit127.json", "no_report", "no_report");
    let row = f.row("g/exit127.json", "exclude");
    assert_eq!(row["fault"], "agent", "{row:#?}");
    assert_eq!(row["exit_code"], "127", "{row:#?}");
}

#[test]
fn a_log_over_the_cap_is_ineligible_even_though_the_tests_pass_and_the_agents_over_quiet_controls()
{
    let f = Fixture::new();
    f.pipeline("new-test-files", 65536, "");
    // ~200 KB on stderr at import, then a correct fix.
    let init = "import sys\n\nsys.stderr.write(\"debug \" * 40000 + \"\\n\")\n";
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some(init)),
    ]);
    f.session("b/noisy.json", "p-1", &patch);
    // A quiet correct fix under the same cap is resolved: the cap is what differs.
    let quiet = f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]);
    f.session("a/quiet.json", "p-1", &quiet);
    f.build_ok();
    assert_verdict(&f, "b/noisy.json", "ineligible", "ineligible");
    assert_verdict(&f, "a/quiet.json", "resolved", "resolved");
    // The task's controls stayed far under the cap in every screening
    // reading: the flood is the patch's, not the harness's.
    let row = f.row("b/noisy.json", "exclude");
    assert_eq!(row["fault"], "agent", "{row:#?}");
    // The grade keeps the true size of the evidence and says it was cut.
    let grade = f.grade_record("b/noisy.json", "exclude");
    let log = grade["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["what"] == "log")
        .unwrap_or_else(|| panic!("{grade:#}"))
        .clone();
    let bytes = log["bytes"].as_u64().unwrap();
    assert!(bytes > 240_000, "the true byte count: {log:#}");
    let detail = grade["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("({bytes} bytes)")), "{detail}");
    assert!(detail.contains("cut after 65536 bytes"), "{detail}");
    let stored = f.project.run(&["show", log["digest"].as_str().unwrap()]);
    assert_eq!(stored.stdout.len(), 65536, "the stored log is the cut one");
}

/// A correct `sub`, but importing `pkg` starts a process tree and hangs: a
/// child, an orphaned grandchild (its shell exits at once) and the test
/// process itself, all far outliving the run's timeout. The first import
/// re-executes the process with `ASSAY_TREE_MARK` in its environment, so
/// the whole tree carries the mark (found on the host whatever pid namespace
/// the run had); each process also names itself in the log, which is how the
/// run tells the test that the tree really started.
fn hanging_init(mark: &str) -> String {
    format!(
        r#"import os
import subprocess
import sys
import time

if os.environ.get("ASSAY_TREE_MARK") != "{mark}":
    os.environ["ASSAY_TREE_MARK"] = "{mark}"
    os.execv(sys.executable, [sys.executable, "-m", "unittest"] + sys.argv[1:])

child = subprocess.Popen(["sleep", "300"])
orphan = subprocess.run(
    ["sh", "-c", "sleep 301 >/dev/null 2>&1 & echo $!"],
    capture_output=True,
    text=True,
).stdout.split()[0]
for pid in (os.getpid(), child.pid, orphan):
    print("tree-pid", pid, flush=True)
time.sleep(302)
"#
    )
}

#[test]
fn a_run_that_times_out_is_unresolved_and_its_whole_tree_is_killed() {
    // A positive control for the search below: it finds a marked process.
    let control = format!("control-{}", unique("tree"));
    let mut probe = std::process::Command::new("sleep")
        .arg("30")
        .env("ASSAY_TREE_MARK", &control)
        .spawn()
        .unwrap();
    // Its environment shows once it has exec'd: a bounded moment to get there.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut found = util::processes_with_env("ASSAY_TREE_MARK", &control);
    while found.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        found = util::processes_with_env("ASSAY_TREE_MARK", &control);
    }
    let _ = probe.kill();
    let _ = probe.wait();
    assert_eq!(found, [probe.id()], "the marked-process search is blind");

    let f = Fixture::new();
    // Screening runs take well under a second; only the session hangs, and
    // is cut at the environment's timeout (not a task timeout from them).
    f.pipeline_with_timeout("new-test-files", 1 << 20, 10, "timeout_factor = 0");
    let mark = unique("tree");
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some(&hanging_init(&mark))),
    ]);
    f.session("b/hang.json", "p-1", &patch);
    let b = f.build(&[]);
    let survivors = util::survivors("ASSAY_TREE_MARK", &mark);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    assert!(
        survivors.is_empty(),
        "still running after grading (now killed): {survivors:?}"
    );

    // Scored as the agent's: never `no_report`, never the harness's fault.
    assert_verdict(&f, "b/hang.json", "unresolved", "unresolved");
    let row = f.row("b/hang.json", "exclude");
    assert_eq!(row["fault"], "agent", "{row:#?}");
    assert_eq!(row["exit_code"], "", "killed, so no exit code: {row:#?}");
    assert_eq!(row["reruns"], "0", "a timeout is not rerun: {row:#?}");
    let grade = f.project.shown(&row["grade_digest"]);
    // On a loaded machine the grade also says how long the run waited for
    // a CPU (not counted): the cut is the same.
    let detail = grade["detail"].as_str().unwrap();
    assert!(
        detail == "timed out after 10 s" || detail.starts_with("timed out after 10 s; it ran "),
        "{grade:#}"
    );
    // The tree had started before the kill: its three processes named
    // themselves in the run's log, which is the grade's evidence.
    let log = grade["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["what"] == "log")
        .unwrap_or_else(|| panic!("no log receipt: {grade:#}"))["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let log = String::from_utf8_lossy(&f.project.blob(&log)).into_owned();
    let named = log.lines().filter(|l| l.starts_with("tree-pid ")).count();
    assert_eq!(named, 3, "{log}");
}

// ---- exclusion policies -------------------------------------------------------

/// A correct fix that also adds a NEW test file and edits the EXISTING
/// `tests/test_ops.py` (which the hidden test patch changes too) far from
/// where the hidden patch inserts.
fn policy_case(policy: &str) -> BTreeMap<String, String> {
    let f = Fixture::new();
    f.pipeline(policy, 1 << 20, "");
    let tests = format!("# Checked by the agent.\n{TEST_OPS_BASE}");
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("tests/test_extra.py", Some(TEST_EXTRA)),
        ("tests/test_ops.py", Some(&tests)),
    ]);
    assert!(patch.contains("new file mode"), "{patch}");
    f.session("a/policy.json", "p-1", &patch);
    f.build_ok();
    let row = f.row("a/policy.json", "exclude");
    assert_eq!(row["policy"], policy, "{row:#?}");
    assert_eq!(row["verdict"], "resolved", "{row:#?}");
    // The keep arm excludes nothing but the reset test-patch file.
    let keep = f.row("a/policy.json", "keep");
    assert_eq!(keep["excluded_paths"], "tests/test_ops.py", "{keep:#?}");
    assert_eq!(keep["reset_paths"], "tests/test_ops.py", "{keep:#?}");
    assert_eq!(keep["verdict"], "resolved", "{keep:#?}");
    row
}

#[test]
fn policy_new_test_files_excludes_the_new_test_file_and_the_reset_one() {
    let row = policy_case("new-test-files");
    assert_eq!(
        row["excluded_paths"], "tests/test_extra.py;tests/test_ops.py",
        "{row:#?}"
    );
}

#[test]
fn policy_tests_and_infra_is_the_default() {
    let f = Fixture::new();
    f.default_pipeline();
    let patch = f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]);
    f.session("a/plain.json", "p-1", &patch);
    f.build_ok();
    assert_eq!(
        f.row("a/plain.json", "exclude")["policy"],
        "tests-and-infra"
    );
    let row = policy_case("tests-and-infra");
    assert_eq!(
        row["excluded_paths"], "tests/test_extra.py;tests/test_ops.py",
        "{row:#?}"
    );
}

#[test]
fn policy_all_test_files_excludes_new_and_edited_test_files() {
    let row = policy_case("all-test-files");
    assert_eq!(
        row["excluded_paths"], "tests/test_extra.py;tests/test_ops.py",
        "{row:#?}"
    );
}

#[test]
fn policy_reset_test_patch_files_excludes_exactly_the_test_patch_files() {
    let row = policy_case("reset-test-patch-files");
    assert_eq!(row["excluded_paths"], "tests/test_ops.py", "{row:#?}");
}

#[test]
fn policy_none_excludes_only_the_reset_test_patch_file() {
    let row = policy_case("none");
    assert_eq!(row["excluded_paths"], "tests/test_ops.py", "{row:#?}");
}

// ---- the collision ------------------------------------------------------------

#[test]
fn a_new_test_file_named_like_the_hidden_one_is_reset_and_the_arms_agree() {
    let f = Fixture::new();
    f.default_pipeline();
    // The collision of the seed report: the agent adds the very file the
    // hidden test patch adds. Once a test_patch_conflict in the keep arm;
    // now the hidden file wins in both arms and the collision is recorded.
    let own = TEST_MUL.replace("ops.mul(4, 3), 12)", "ops.mul(2, 5), 10)");
    let patch = f.diff2(&[
        ("pkg/ops.py", Some(OPS_SUB_MUL)),
        ("tests/test_mul.py", Some(&own)),
    ]);
    f.session("a/collide.json", "p-2", &patch);
    let plain = f.diff2(&[("pkg/ops.py", Some(OPS_SUB_MUL))]);
    f.session("a/plain.json", "p-2", &plain);
    f.build_ok();
    assert_verdict(&f, "a/collide.json", "resolved", "resolved");
    assert_verdict(&f, "a/plain.json", "resolved", "resolved");
    for arm in ["exclude", "keep"] {
        let row = f.row("a/collide.json", arm);
        assert_eq!(row["reset_paths"], "tests/test_mul.py", "{row:#?}");
    }
    let s = f.summary();
    assert_eq!(s["verifier_suspects"], json!([]), "{s:#}");
    let a = &s["agents"]["a/model-x"];
    assert_eq!(a["verdicts"]["resolved"], 2, "{a:#}");
}

// ---- path escapes -------------------------------------------------------------

/// Every file under `dir` (not following symlinks) whose name is `name`.
fn find_named(dir: &Path, name: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if e.file_name().to_string_lossy() == name {
            found.push(p.clone());
        }
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            find_named(&p, name, found);
        }
    }
}

#[test]
fn patches_escaping_the_tree_are_refused_whole_and_write_nothing_outside() {
    let f = Fixture::new();
    f.default_pipeline();
    let good = f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]);

    // 1. `../NAME` next to a good hunk (the whole patch must be refused).
    let up = format!("{}.txt", unique("escaped"));
    let dotdot = format!(
        "{good}diff --git a/../{up} b/../{up}\nnew file mode 100644\nindex 0000000..4c4b2a4\n--- /dev/null\n+++ b/../{up}\n@@ -0,0 +1 @@\n+escaped\n"
    );
    f.session("g/dotdot.json", "p-1", &dotdot);

    // 2. An absolute path.
    let abs_name = format!("{}.txt", unique("escaped-abs"));
    let abs = std::env::temp_dir().join(&abs_name);
    let abs_s = abs.display().to_string();
    let absolute = format!(
        "{good}diff --git a/{abs_s} b/{abs_s}\nnew file mode 100644\nindex 0000000..4c4b2a4\n--- /dev/null\n+++ b/{abs_s}\n@@ -0,0 +1 @@\n+escaped\n"
    );
    f.session("g/absolute.json", "p-1", &absolute);
    // 2b. The same without git's a/ b/ prefixes (`+++ /abs/path`): like
    // `git apply` (-p1 strips the first component), this names
    // `tmp/<name>` inside the tree, which is allowed; it must land there.
    let abs2_name = format!("{}.txt", unique("escaped-abs2"));
    let abs2 = std::env::temp_dir().join(&abs2_name);
    let abs2_s = abs2.display().to_string();
    let absolute2 = format!(
        "{good}diff --git {abs2_s} {abs2_s}\nnew file mode 100644\n--- /dev/null\n+++ {abs2_s}\n@@ -0,0 +1 @@\n+escaped\n"
    );
    f.session("g/absolute2.json", "p-1", &absolute2);

    // 3. A symlink to /etc/passwd.
    let link = format!(
        "{good}diff --git a/pkg/passwd b/pkg/passwd\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/pkg/passwd\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n"
    );
    f.session("g/symlink.json", "p-1", &link);

    // 4. A symlink to the parent directory, then a file written through it.
    let through = format!("{}.txt", unique("escaped-through"));
    let via = format!(
        "{good}diff --git a/up b/up\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/up\n@@ -0,0 +1 @@\n+..\n\\ No newline at end of file\ndiff --git a/up/{through} b/up/{through}\nnew file mode 100644\nindex 0000000..4c4b2a4\n--- /dev/null\n+++ b/up/{through}\n@@ -0,0 +1 @@\n+escaped\n"
    );
    f.session("g/through.json", "p-1", &via);

    // A good session beside them still resolves.
    f.session("a/good.json", "p-1", &good);

    let b = f.build(&[]);
    assert!(
        b.run.code == 0 || b.run.code == 1,
        "exit {}\n{}",
        b.run.code,
        b.run.stderr
    );
    for s in [
        "g/dotdot.json",
        "g/absolute.json",
        "g/symlink.json",
        "g/through.json",
    ] {
        assert_verdict(&f, s, "patch_apply_failed", "patch_apply_failed");
        let row = f.row(s, "exclude");
        assert_eq!(row["fault"], "agent", "{row:#?}");
    }
    assert_verdict(&f, "a/good.json", "resolved", "resolved");
    assert_verdict(&f, "g/absolute2.json", "resolved", "resolved");

    assert!(!abs.exists(), "{} was written", abs.display());
    assert!(!abs2.exists(), "{} was written", abs2.display());
    let tmp = std::env::temp_dir();
    for name in [&up, &through] {
        // Runs' scratch directories may be on /dev/shm (docs/cache.md).
        let shm = std::path::Path::new("/dev/shm");
        for dir in [tmp.as_path(), shm, f.path().parent().unwrap(), f.path()] {
            assert!(
                !dir.join(name).exists(),
                "{}/{name} was written",
                dir.display()
            );
        }
        let cache = f.path().join("cache");
        for sub in ["", "tmp", "git", "envs", "blobs"] {
            let d = cache.join(sub);
            assert!(!d.join(name).exists(), "{}/{name}", d.display());
            assert!(
                !d.parent().unwrap().join(name).exists(),
                "next to {}",
                d.display()
            );
        }
        let mut found = Vec::new();
        find_named(f.path(), name, &mut found);
        assert!(found.is_empty(), "written: {found:?}");
    }
    // Scratch trees are gone once their runs end, so "nothing left behind"
    // proves nothing about materialising: the records do. No escaping patch
    // yielded a tree, and its run never started, so nothing of it (the link
    // to /etc/passwd, the link `up`) was ever written to disk or executed.
    for (s, path) in [
        ("g/dotdot.json", format!("../{up}")),
        ("g/absolute.json", abs_s.clone()),
        ("g/symlink.json", "pkg/passwd".to_owned()),
        ("g/through.json", format!("up/{through}")),
    ] {
        for arm in ["exclude", "keep"] {
            let stage = f.project.output_record(&format!("stage:{s}:{arm}"));
            assert!(stage["tree"].is_null(), "{s} {arm}: {stage:#}");
            let why = stage["skipped"].as_str().unwrap_or_default();
            assert!(why.starts_with("patch_apply_failed: "), "{s} {arm}: {why}");
            assert!(why.contains(&path), "{s} {arm} names {path}: {why}");
            let run = f.project.output_record(&format!("run:{s}:{arm}"));
            assert!(run["skipped"].is_string(), "{s} {arm}: {run:#}");
            assert_eq!(run["log"], "", "{s} {arm}: {run:#}");
            assert!(run["exit_code"].is_null(), "{s} {arm}: {run:#}");
            assert_eq!(f.row(s, arm)["exit_code"], "", "{s} {arm}");
        }
    }
}

/// Sandboxed runs overlap (docs/stages.md). A hostile run that looks for
/// the other runs' scratch directories where assay makes them (here
/// `ASSAY_SCRATCH`, a directory of this test, so that a failed defence
/// writes nothing else), for two seconds while the honest run beside it
/// runs, reaches none of them: the honest run resolves, the attack's log
/// says it wrote nothing, and no file of it is found.
#[test]
fn an_overlapping_hostile_run_reaches_no_other_runs_scratch() {
    let f = Fixture::new();
    // Both runs take seconds on purpose: no task timeout may cut them.
    f.pipeline("", 1 << 20, "timeout_factor = 0");
    let scratch = f.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let marker = unique("overlap");
    let s = scratch.display();
    let attack = format!(
        r#"import glob, os, time
reached = set()
end = time.time() + 2
while time.time() < end:
    for d in glob.glob("{s}/**/", recursive=True):
        try:
            open(os.path.join(d, "{marker}"), "w").write("x")
            reached.add(d)
        except OSError:
            pass
    for t in glob.glob("{s}/**/test_*.py", recursive=True):
        try:
            open(t, "a").write("\nraise SystemExit(1)\n")
            reached.add(t)
        except OSError:
            pass
    time.sleep(0.05)
print("overlap-attack reached", len(reached), sorted(reached)[:5], flush=True)
"#
    );
    let evil = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some(&attack)),
    ]);
    f.session("evil/overlap.json", "p-1", &evil);
    // Slow too, so that the two runs are under way at once.
    let good = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some("import time\ntime.sleep(2)\n")),
    ]);
    f.session("a/good.json", "p-1", &good);
    let b = f.build_env(&[("ASSAY_SCRATCH", scratch.to_str().unwrap())]);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    assert_verdict(&f, "a/good.json", "resolved", "resolved");
    let log = f.evidence(&f.grade_record("evil/overlap.json", "exclude"), "log");
    assert!(log.contains("overlap-attack reached 0 []"), "{log}");
    let mut found = Vec::new();
    find_named(f.path(), &marker, &mut found);
    assert!(found.is_empty(), "written: {found:?}");
}

// ---- redaction ------------------------------------------------------------------

/// A key of a built-in shape, and the value `ASSAY_TEST_SECRET` holds in the
/// environment of assay (named by `[redact] env`).
const SECRET_KEY: &str = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGhIjKlMn";
const SECRET_VALUE: &str = "supersecretvalue123";

const REDACT_ENV: &str = "[redact]\nenv = [\"ASSAY_TEST_SECRET\"]\n";

/// `pkg/__init__.py` printing both secrets on stdout and stderr at import.
/// They are assembled at run time, so the patch (stored as it is, since it
/// is what gets graded) holds neither string.
const LEAKY_INIT: &str = r#"import sys

KEY = "sk-ant-" + "api03-" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGhIjKlMn"
VALUE = "supersecret" + "value123"
print("using key", KEY, "and", VALUE)
sys.stderr.write("debug: key=%s value=%s\n" % (KEY, VALUE))
"#;

/// A correct and a wrong fix, both with [`LEAKY_INIT`]: the wrong one is
/// rerun, so its reruns' evidence is stored too.
fn leaky_sessions(f: &Fixture) {
    let ok = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some(LEAKY_INIT)),
    ]);
    let wrong = OPS_BASE.replacen("return a + b\n\n\ndef mul", "return a * b\n\n\ndef mul", 1);
    let bad = f.diff1(&[
        ("pkg/ops.py", Some(&wrong)),
        ("pkg/__init__.py", Some(LEAKY_INIT)),
    ]);
    for p in [&ok, &bad] {
        assert!(!p.contains(SECRET_KEY) && !p.contains(SECRET_VALUE), "{p}");
    }
    f.session("a/leaky.json", "p-1", &ok);
    f.session("b/leaky-wrong.json", "p-1", &bad);
}

/// `assay build --json` with the secret value in assay's environment.
fn build_with_secret(f: &Fixture) -> Build {
    let out = f
        .project
        .command(&["build", "--json"])
        .env("ASSAY_TEST_SECRET", SECRET_VALUE)
        .output()
        .unwrap();
    let b = Build::from(util::Run::from(out));
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    b
}

/// Neither secret in any file of the cache or the release, nor in what
/// assay printed; and `[REDACTED]` somewhere, so the search can fail.
fn assert_no_secret_stored(f: &Fixture, b: &Build) {
    let mut hits = Vec::new();
    let needles: [&[u8]; 2] = [SECRET_KEY.as_bytes(), SECRET_VALUE.as_bytes()];
    grep_tree(&f.path().join("cache"), &needles, &mut hits);
    grep_tree(&f.path().join("release"), &needles, &mut hits);
    assert!(hits.is_empty(), "secrets found in: {hits:#?}");
    for stream in [&b.run.stdout, &b.run.stderr] {
        assert!(!stream.contains(SECRET_KEY) && !stream.contains(SECRET_VALUE));
    }
    let mut markers = Vec::new();
    grep_tree(&f.path().join("cache"), &[b"[REDACTED]"], &mut markers);
    assert!(!markers.is_empty(), "no redacted evidence in the cache");
}

#[test]
fn planted_secrets_never_reach_the_cache_or_the_release() {
    let f = Fixture::new();
    f.pipeline("new-test-files", 1 << 20, REDACT_ENV);
    leaky_sessions(&f);
    let b = build_with_secret(&f);
    assert_verdict(&f, "a/leaky.json", "resolved", "resolved");
    assert_verdict(&f, "b/leaky-wrong.json", "unresolved", "unresolved");
    for (s, arm) in [
        ("a/leaky.json", "exclude"),
        ("a/leaky.json", "keep"),
        ("b/leaky-wrong.json", "exclude"),
    ] {
        let row = f.row(s, arm);
        let n: u64 = row["redactions"].parse().unwrap();
        // Two strings on stdout and two on stderr per run at least.
        assert!(n >= 4, "{s} {arm}: {row:#?}");
    }
    let row = f.row("b/leaky-wrong.json", "exclude");
    assert_eq!(row["reruns"], "2", "{row:#?}");
    let first_run_only: u64 = f.row("a/leaky.json", "exclude")["redactions"]
        .parse()
        .unwrap();
    let with_reruns: u64 = row["redactions"].parse().unwrap();
    assert!(
        with_reruns > first_run_only,
        "reruns' redactions are counted: {with_reruns} vs {first_run_only}"
    );
    assert_no_secret_stored(&f, &b);
}

/// Runs the unittest suite and writes `report.xml` (JUnit). What the code
/// under test prints goes into the report's `<system-out>`, and to stderr.
/// Arguments (the rerun's `{files}`) only go into a property, so a rerun's
/// report differs from its first run's: it always runs everything.
const JUNIT_RUNNER: &str = r#"import io
import sys
import unittest
from xml.sax.saxutils import escape, quoteattr

captured = io.StringIO()
real_stdout = sys.stdout
sys.stdout = captured


def cases(s):
    for t in s:
        if isinstance(t, unittest.TestSuite):
            yield from cases(t)
        else:
            yield t


suite = unittest.defaultTestLoader.discover(".")
ids = [t.id() for t in cases(suite)]
result = unittest.TestResult()
suite.run(result)
sys.stdout = real_stdout
failed = {t.id() for t, _ in result.failures}
errored = {t.id() for t, _ in result.errors}
out = [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<testsuite name="unittest">',
    '<properties><property name="argv" value=%s/></properties>' % quoteattr(" ".join(sys.argv[1:])),
]
for test_id in ids:
    cls, _, name = test_id.rpartition(".")
    path = cls.rpartition(".")[0].replace(".", "/") + ".py"
    attrs = "classname=%s name=%s file=%s" % (quoteattr(cls), quoteattr(name), quoteattr(path))
    if test_id in failed:
        out.append('<testcase %s><failure message="failed"/></testcase>' % attrs)
    elif test_id in errored:
        out.append('<testcase %s><error message="error"/></testcase>' % attrs)
    else:
        out.append("<testcase %s/>" % attrs)
out.append("<system-out>%s</system-out>" % escape(captured.getvalue()))
out.append("</testsuite>")
with open("report.xml", "w") as fh:
    fh.write("\n".join(out) + "\n")
sys.stderr.write(captured.getvalue())
sys.exit(0 if result.wasSuccessful() else 1)
"#;

#[test]
fn secrets_are_redacted_in_junit_report_files_check_logs_and_rerun_logs() {
    let f = Fixture::with_base_files(&[("tools/junit_run.py", JUNIT_RUNNER)]);
    f.pipeline(
        "new-test-files",
        1 << 20,
        // The checks write the pipeline's report too: a check naming tests
        // runs their canary windows, whose must-fail members fail by
        // design, so its exit code is read from its report's outcomes.
        &format!("check_command = \"python3 tools/junit_run.py {{tests}}\"\n\n{REDACT_ENV}"),
    );
    f.edit_pipeline(
        "test_command = \"python3 -m unittest -v\"\nreport = \"unittest\"\n",
        "test_command = \"python3 tools/junit_run.py\"\nreport = \"junit\"\nreport_file = \"report.xml\"\n",
    );
    f.edit_pipeline(
        "rerun_command = \"python3 -m unittest -v {files}\"",
        "rerun_command = \"python3 tools/junit_run.py {files}\"",
    );
    leaky_sessions(&f);
    let b = build_with_secret(&f);
    // The JUnit reports were read: the verdicts rest on their outcomes.
    assert_verdict(&f, "a/leaky.json", "resolved", "resolved");
    assert_verdict(&f, "b/leaky-wrong.json", "unresolved", "unresolved");
    let row = f.row("b/leaky-wrong.json", "exclude");
    assert_eq!(
        row["failing"], "tests.test_ops.TestOps.test_sub",
        "{row:#?}"
    );
    assert_eq!(row["reruns"], "2", "{row:#?}");
    assert_eq!(
        (row["base_exit"].as_str(), row["new_exit"].as_str()),
        ("0", "1"),
        "both checks ran: {row:#?}"
    );

    // Every kind of stored log held the secrets and was redacted.
    let grade = f.project.shown(&row["grade_digest"]);
    for what in [
        "log",
        "base check log",
        "new check log",
        "rerun 1 log",
        "rerun 2 log",
    ] {
        let text = f.evidence(&grade, what);
        assert!(
            text.contains("using key [REDACTED] and [REDACTED]"),
            "{what}:\n{text}"
        );
    }
    // So did the report files of the graded runs and of the reruns: a's
    // report, b's, and each of b's reruns (each run plants canaries of its
    // own, so no two reports are the same bytes), the checks' too.
    let mut found = Vec::new();
    grep_tree(
        &f.path().join("cache/blobs"),
        &[b"<system-out>using key"],
        &mut found,
    );
    let reports: Vec<String> = found
        .iter()
        .map(|(p, _)| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned())
        .collect();
    assert!(reports.len() >= 4, "{found:#?}");
    for r in &reports {
        assert!(
            r.contains("<system-out>using key [REDACTED] and [REDACTED]"),
            "{r}"
        );
    }
    // Reruns of the failing file (b's two reruns in each arm that reruns)
    // wrote reports too, each its own bytes.
    let rerun = r#"<property name="argv" value="tests/test_ops.py"/>"#;
    assert!(
        reports.iter().filter(|r| r.contains(rerun)).count() >= 2,
        "{reports:#?}"
    );
    assert_no_secret_stored(&f, &b);
}

/// Needs the environment's setup log to go through the redactor (with the
/// sandbox): docs/verdicts.md says everything stored is redacted first.
#[test]
fn the_environment_setup_log_is_redacted() {
    let f = Fixture::new();
    // The setup prints both secrets; its text in pipeline.toml (which enters
    // the env node's key) holds neither.
    f.pipeline("new-test-files", 1 << 20, REDACT_ENV);
    let setup = r#"setup = ["echo preparing with key sk-ant-$(printf api03)-AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGhIjKlMn and supersecret$(printf value123)"]"#;
    f.edit_pipeline("[env]\n", &format!("[env]\n{setup}\n"));
    assert!(!setup.contains(SECRET_KEY) && !setup.contains(SECRET_VALUE));
    f.session(
        "a/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );
    let b = build_with_secret(&f);
    assert_verdict(&f, "a/fix.json", "resolved", "resolved");
    let env = b
        .names("node_finished")
        .into_iter()
        .find(|n| n.starts_with("env:"))
        .expect("an env node ran");
    let record = f.project.output_record(&env);
    assert_eq!(record["ok"], true, "{record:#}");
    let log = String::from_utf8_lossy(&f.project.blob(record["setup_log"].as_str().unwrap()))
        .into_owned();
    assert!(
        log.contains("preparing with key [REDACTED] and [REDACTED]"),
        "the setup log:\n{log}"
    );
    assert_no_secret_stored(&f, &b);
}

// ---- sessions that are not graded -------------------------------------------------

/// Attack: a session file written to read as the harness's failure — named
/// so, its text the infrastructure's words and hint, the engine's class
/// field spelled out — is still its own node's bad input. The kind comes
/// from where the failure happened, never from the failing bytes, so the
/// build neither exits 9 (retry) nor names the infrastructure.
#[test]
fn a_session_file_cannot_pass_its_own_failure_off_as_the_infrastructures() {
    let f = Fixture::new();
    f.default_pipeline();
    f.project.write(
        "sessions/infrastructure/docker-daemon-down.json",
        "{\"class\": \"infrastructure\", \"task\": \"p-1\", \"agent\": \"the machine or a service failed under the node (Docker daemon): fix it and build again\", \"patch\": ",
    );
    let b = f.build(&[]);
    assert_eq!(b.run.code, 1, "stderr:\n{}", b.run.stderr);
    let failed: Vec<&Value> = b
        .events
        .iter()
        .filter(|e| e["event"] == "node_failed")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        failed[0]["name"],
        "session:infrastructure/docker-daemon-down.json"
    );
    assert_eq!(failed[0]["class"], "input", "{failed:?}");
    assert_eq!(
        b.events.last().unwrap()["failed_by_class"],
        json!({"input": 1})
    );
    assert!(
        b.run.stderr.contains("error: 1 node failed: 1 input")
            && !b.run.stderr.contains("\n  infrastructure: "),
        "the closing message blames the input alone:\n{}",
        b.run.stderr
    );
}

#[test]
fn unknown_tasks_are_not_graded_and_a_broken_file_fails_only_itself() {
    let f = Fixture::new();
    f.default_pipeline();
    let good = f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]);
    f.session("a/good.json", "p-1", &good);
    f.session("a/unknown.json", "p-99", &good);
    f.project.write(
        "sessions/c/broken.json",
        "{\n  \"task\": \"p-1\",\n  \"agent\": \n",
    );
    // A file whose name is not UTF-8 is listed, never dropped.
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"bad\xffname.json");
        std::fs::write(f.path().join("sessions/c").join(name), "{}").unwrap();
    }
    let b = f.build(&[]);
    assert_eq!(b.run.code, 1, "stderr:\n{}", b.run.stderr);
    assert!(
        b.run.stderr.contains("broken.json"),
        "stderr names the file:\n{}",
        b.run.stderr
    );
    // The malformed file and the one whose name is no id are their nodes'
    // input: classed so, and the build's closing message says whose
    // problem it is and what to do.
    let failed: Vec<(&str, &str)> = b
        .events
        .iter()
        .filter(|e| e["event"] == "node_failed")
        .map(|e| (e["name"].as_str().unwrap(), e["class"].as_str().unwrap()))
        .collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(
        failed.contains(&("session:c/broken.json", "input"))
            && failed
                .iter()
                .all(|(name, class)| name.starts_with("session:c/") && *class == "input"),
        "{failed:?}"
    );
    assert_eq!(
        b.events.last().unwrap()["failed_by_class"],
        json!({"input": 2})
    );
    assert!(
        b.run.stderr.contains("error: 2 nodes failed: 2 input")
            && b.run
                .stderr
                .contains("input: the node's input is malformed"),
        "stderr names the kind and its hint:\n{}",
        b.run.stderr
    );
    for file in [
        "results.csv",
        "summary.json",
        "report.html",
        "manifest.json",
    ] {
        assert!(f.path().join("release").join(file).exists(), "no {file}");
    }
    assert_verdict(&f, "a/good.json", "resolved", "resolved");
    let rows = f.results();
    assert!(
        rows.keys().all(|(s, _)| s == "a/good.json"),
        "only the good session is graded: {:?}",
        rows.keys()
    );
    let s = f.summary();
    let ng = &s["not_graded"];
    let list = ng["sessions"].as_array().unwrap();
    let reason = |id: &str| {
        list.iter()
            .find(|e| e["session"] == id)
            .unwrap_or_else(|| panic!("{id} not in not_graded: {ng:#}"))["reason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(reason("a/unknown.json").contains("p-99"), "{ng:#}");
    assert!(reason("a/unknown.json").contains("unknown task"), "{ng:#}");
    assert!(reason("c/broken.json").contains("unreadable"), "{ng:#}");
    assert!(
        reason("c/bad\u{fffd}name.json").contains("is not UTF-8"),
        "{ng:#}"
    );
    assert_eq!(ng["total"], 3, "{ng:#}");
}

// ---- incremental ---------------------------------------------------------------------

#[test]
fn a_new_session_costs_only_its_own_nodes_and_the_release() {
    let f = Fixture::new();
    f.default_pipeline();
    for i in 0..5 {
        let ops = format!("# session {i}\n{OPS_SUB}");
        let patch = f.diff1(&[("pkg/ops.py", Some(&ops))]);
        f.session(&format!("a/s{i}.json"), "p-1", &patch);
    }
    let first = f.build_ok();
    assert_eq!(
        first.summary.by_kind["grade"].executed, 10,
        "{:?}",
        first.summary
    );
    assert_eq!(f.results().len(), 10);

    let ops = format!("# session new\n{OPS_SUB}");
    let patch = f.diff1(&[("pkg/ops.py", Some(&ops))]);
    f.session("a/new.json", "p-1", &patch);
    let second = f.build_ok();
    let arms = 2;
    let executed: BTreeMap<&str, u64> = second
        .summary
        .by_kind
        .iter()
        .map(|(k, c)| (k.as_str(), c.executed))
        .filter(|(_, n)| *n > 0)
        .collect();
    let run = executed.get("run").copied().unwrap_or(0);
    assert!((1..=arms).contains(&run), "{executed:?}");
    let mut expected: BTreeMap<&str, u64> = BTreeMap::from([
        ("session", 1),
        ("stage", arms),
        ("grade", arms),
        ("metrics", 1),
        ("release", 1),
    ]);
    // One recheck a distinct graded run, as one run a distinct tree.
    expected.insert("run", run);
    expected.insert("recheck", run);
    assert_eq!(executed, expected, "{:?}", second.summary);
    for k in ["triage", "tree", "screen", "task", "env"] {
        let c = second.summary.by_kind.get(k).cloned().unwrap_or_default();
        assert_eq!(c.executed, 0, "{k}: {:?}", second.summary);
    }
    assert_eq!(second.summary.total.failed, 0);
    assert_eq!(f.results().len(), 12);
    assert_verdict(&f, "a/new.json", "resolved", "resolved");

    // And a third build executes nothing.
    let third = f.build_ok();
    assert_eq!(third.summary.total.executed, 0, "{:?}", third.summary);
}

/// The two arms of a session that excludes nothing stage one tree: one
/// graded run and one recheck serve both, so a deterministic failure is
/// rerun `reruns` times in all, not an arm, and both arms are decided over
/// the same rerun logs. A session whose arms stage different trees (a new
/// test file, excluded in one arm) gets a recheck an arm.
#[test]
fn the_arms_of_one_tree_share_their_reruns() {
    let f = Fixture::new();
    f.default_pipeline();
    let wrong = OPS_BASE.replacen("return a + b\n\n\ndef mul", "return a * b\n\n\ndef mul", 1);
    f.session(
        "b/wrong.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(&wrong))]),
    );
    let b = f.build_ok();
    let recheck = &b.summary.by_kind["recheck"];
    assert_eq!(
        (recheck.executed, recheck.reused),
        (1, 1),
        "{:?}",
        b.summary
    );
    assert_eq!(b.summary.by_kind["grade"].executed, 2, "{:?}", b.summary);
    assert_verdict(&f, "b/wrong.json", "unresolved", "unresolved");
    let (exclude, keep) = (
        f.grade_record("b/wrong.json", "exclude"),
        f.grade_record("b/wrong.json", "keep"),
    );
    assert_eq!(exclude["reruns"], 2, "{exclude:#}");
    assert_eq!(exclude["evidence"], keep["evidence"]);

    // A new test file of the session's: excluded in one arm, kept in the
    // other, so two trees and a recheck an arm. The excluding arm's tree is
    // the first session's (the same wrong fix): its run is reused; the
    // keeping arm's is new.
    let with_test = f.diff1(&[
        ("pkg/ops.py", Some(&wrong)),
        ("tests/test_mine.py", Some("import unittest\n")),
    ]);
    f.session("b/wrong-and-test.json", "p-1", &with_test);
    let b = f.build_ok();
    assert_eq!(b.summary.by_kind["recheck"].executed, 2, "{:?}", b.summary);
    assert_eq!(b.summary.by_kind["run"].executed, 1, "{:?}", b.summary);
    assert_verdict(&f, "b/wrong-and-test.json", "unresolved", "unresolved");
}

#[test]
fn check_command_keeps_the_exit_codes_of_the_two_checks_apart() {
    let f = Fixture::new();
    f.pipeline(
        "new-test-files",
        1 << 20,
        r#"check_command = "python3 -m unittest -v {tests}""#,
    );
    // Breaks nothing that worked, fixes nothing that was asked: base=0 new=1.
    let wrong = OPS_BASE.replacen("return a + b\n\n\ndef mul", "return a * b\n\n\ndef mul", 1);
    f.session(
        "b/wrong.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(&wrong))]),
    );
    // Fixes the task and breaks `add`: base=1 new=0.
    let breaks_add = OPS_SUB.replacen("return a + b", "return a - b - 0 if False else b", 1);
    f.session(
        "c/breaks.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(&breaks_add))]),
    );
    f.session(
        "a/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );
    f.build_ok();
    let row = f.row("b/wrong.json", "exclude");
    assert_eq!(
        (row["base_exit"].as_str(), row["new_exit"].as_str()),
        ("0", "1"),
        "{row:#?}"
    );
    let row = f.row("c/breaks.json", "exclude");
    assert_eq!(row["verdict"], "unresolved", "{row:#?}");
    assert_eq!(
        (row["base_exit"].as_str(), row["new_exit"].as_str()),
        ("1", "0"),
        "{row:#?}"
    );
    let row = f.row("a/fix.json", "exclude");
    assert_eq!(
        (row["base_exit"].as_str(), row["new_exit"].as_str()),
        ("0", "0"),
        "{row:#?}"
    );
    assert_eq!(row["verdict"], "resolved", "{row:#?}");
}

#[test]
fn without_check_command_the_check_exit_codes_are_empty() {
    let f = grade_p1("a/fix.json", "");
    let row = f.row("a/fix.json", "exclude");
    assert_eq!(
        (row["base_exit"].as_str(), row["new_exit"].as_str()),
        ("", ""),
        "{row:#?}"
    );
}

// ---- audit -----------------------------------------------------------------

#[test]
fn verify_recomputes_the_release_and_names_a_tampered_number() {
    let f = Fixture::new();
    f.default_pipeline();
    f.session(
        "a/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );
    f.session("b/none.json", "p-1", "");
    f.build_ok();
    // The release's 7 files and the report's pages beside them.
    let pages = std::fs::read_dir(f.path().join("release/pages"))
        .unwrap()
        .count();
    assert!(pages >= 3, "a task page and two agent pages: {pages}");
    let files = 7 + pages;
    f.project
        .run(&["verify"])
        .code(0)
        .stdout_has(&format!("release ok: {files} files"));
    // With --json the last line says how it went, all well or not.
    let result = |out: &str| -> serde_json::Value {
        serde_json::from_str(out.lines().last().unwrap_or_default()).unwrap()
    };
    let ok = result(&f.project.run(&["verify", "--json"]).code(0).stdout);
    assert_eq!(ok["verified"], true, "{ok}");
    assert_eq!(ok["release"]["files"], files, "{ok}");
    assert_eq!(ok["release"]["problems"], 0, "{ok}");

    // A file put into the release is named, and verify is clean again
    // once it is gone.
    let planted = |name: &str, bytes: &str, problem: &str| {
        let path = f.path().join("release").join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = f.project.run(&["verify"]).code(4);
        let want = format!("MISMATCH {name}: present in the release, but {problem}");
        assert!(out.stderr.contains(&want), "{want}\n{}", out.stderr);
        std::fs::remove_file(&path).unwrap();
        f.project.run(&["verify"]).code(0);
    };
    // A page beside the release, which a reader opens as one of its pages.
    planted(
        "pages/extra.html",
        "<p>resolved: 100%</p>",
        "manifest.json does not list it",
    );
    // One of the release node's own names, which the manifest does not
    // list, where the node made none (no Harbor dataset here).
    planted(
        "harbor-tasks.jsonl",
        "{\"instance_id\": \"x\"}\n",
        "its release node did not make it",
    );

    // A forged summary whose manifest digests are forged to match: the
    // digests alone agree, the recomputation from the cache does not.
    let rel = f.path().join("release");
    let summary = std::fs::read_to_string(rel.join("summary.json")).unwrap();
    let forged = summary.replacen("\"resolved\": 1,", "\"resolved\": 2,", 1);
    assert_ne!(forged, summary, "the summary has a resolved count to forge");
    std::fs::write(rel.join("summary.json"), &forged).unwrap();
    let original = std::fs::read_to_string(rel.join("manifest.json")).unwrap();
    let old = blake3::hash(summary.as_bytes()).to_hex().to_string();
    let new = blake3::hash(forged.as_bytes()).to_hex().to_string();
    assert_eq!(
        original.matches(&old).count(),
        1,
        "the manifest lists summary.json's digest"
    );
    let manifest = original.replace(&old, &new);
    let v: Value = serde_json::from_str(&manifest).unwrap();
    let claimed = v["release_digest"].as_str().unwrap().to_owned();
    assert_eq!(manifest.matches(&claimed).count(), 1, "{manifest}");
    let blank = manifest.replacen(&claimed, "", 1);
    let forged_digest = blake3::hash(blank.as_bytes()).to_hex().to_string();
    assert_ne!(
        forged_digest, claimed,
        "the forgery changes the release digest"
    );
    let forged_manifest = manifest.replacen(&claimed, &forged_digest, 1);
    assert_ne!(forged_manifest, original);
    std::fs::write(rel.join("manifest.json"), &forged_manifest).unwrap();
    // The forged manifest is self-consistent, as an auditor would check it.
    let v: Value = serde_json::from_str(&forged_manifest).unwrap();
    let blank = forged_manifest.replacen(&forged_digest, "", 1);
    assert_eq!(
        v["release_digest"],
        blake3::hash(blank.as_bytes()).to_hex().to_string()
    );

    // The forged line, as verify must name it.
    let (line, (published, recomputed)) = forged
        .lines()
        .zip(summary.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .map(|(i, pair)| (i + 1, pair))
        .unwrap();
    let out = f.project.run(&["verify"]).code(4);
    let expected = format!(
        "MISMATCH summary.json: differs from its recomputation at line {line}: published `{}`, recomputed `{}`",
        published.trim(),
        recomputed.trim()
    );
    assert_eq!(
        (published.trim(), recomputed.trim()),
        ("\"resolved\": 2,", "\"resolved\": 1,")
    );
    assert!(out.stderr.contains(&expected), "{expected}\n{}", out.stderr);
    assert!(
        !out.stderr.contains("release_digest"),
        "the forged digests are consistent: {}",
        out.stderr
    );
    let bad = f.project.run(&["verify", "--json"]).code(4).stdout;
    let last: serde_json::Value = serde_json::from_str(bad.lines().last().unwrap()).unwrap();
    assert_eq!(last["verified"], false, "{bad}");
    assert!(last["release"]["problems"].as_u64().unwrap() >= 1, "{bad}");
}

/// `sub` right only on a rerun: the rerun command names the test files on
/// the command line, the first run does not. Deterministic, and it needs no
/// state shared between runs.
const OPS_RIGHT_ON_RERUN: &str = "\
import sys

_RERUN = any(arg.endswith(\".py\") for arg in sys.argv[1:])


def add(a, b):
    return a + b


def sub(a, b):
    return a - b if _RERUN else a + b


def mul(a, b):
    return a + b
";

/// The Wilson score interval computed here, from its textbook form
/// (k + z²/2 ± z·√(k(n−k)/n + z²/4)) / (n + z²), apart from assay's code.
fn wilson_bounds(k: f64, n: f64, z: f64) -> (f64, f64) {
    let centre = k + z * z / 2.0;
    let half = z * (k * (n - k) / n + z * z / 4.0).sqrt();
    let d = n + z * z;
    (
        ((centre - half) / d).max(0.0),
        ((centre + half) / d).min(1.0),
    )
}

#[test]
fn published_rates_carry_the_wilson_bounds_of_their_own_counts() {
    let f = Fixture::new();
    f.default_pipeline();
    let fix = f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]);
    f.session("a/fix.json", "p-1", &fix);
    f.session(
        "a/rerun.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_RIGHT_ON_RERUN))]),
    );
    f.session("a/empty.json", "p-1", "");
    let wrong = OPS_BASE.replacen("return a + b\n\n\ndef mul", "return a * b\n\n\ndef mul", 1);
    f.session(
        "b/wrong.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(&wrong))]),
    );
    f.session("c/fix.json", "p-1", &fix);
    f.build_ok();
    // A resolved_after_rerun is not resolved: k and n differ by agent.
    assert_verdict(
        &f,
        "a/rerun.json",
        "resolved_after_rerun",
        "resolved_after_rerun",
    );

    let s = f.summary();
    let interval = s["scoring"]["interval"].as_str().unwrap();
    let z: f64 = interval
        .split_once("z = ")
        .and_then(|(_, r)| r.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no z in {interval:?}"));
    assert!((z - 1.959964).abs() < 1e-6, "a 95% interval: {interval}");

    // k and n counted here from results.csv: scored arm, `resolved` only.
    let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for ((_, arm), row) in f.results() {
        if arm == "exclude" {
            let c = counts
                .entry(format!("{}/{}", row["agent"], row["model"]))
                .or_default();
            c.1 += 1;
            c.0 += u64::from(row["verdict"] == "resolved");
        }
    }
    let expected = BTreeMap::from([
        ("a/model-x".to_owned(), (1, 3)),
        ("b/model-x".to_owned(), (0, 1)),
        ("c/model-x".to_owned(), (1, 1)),
    ]);
    assert_eq!(counts, expected);
    for (agent, (k, n)) in &counts {
        let a = &s["agents"][agent];
        // Every session is on the basic track: its split says the same.
        for (what, v) in [("all", a), ("basic", &a["by_track"]["basic"])] {
            let at = format!("{agent} {what}: {v:#}");
            assert_eq!(v["n"], *n, "{at}");
            assert_eq!(v["resolved"], *k, "{at}");
            let (lo, hi) = wilson_bounds(*k as f64, *n as f64, z);
            let rate = *k as f64 / *n as f64;
            let published = |key: &str| v[key].as_f64().unwrap_or_else(|| panic!("{key}: {at}"));
            for (key, want) in [
                ("resolved_rate", rate),
                ("resolved_rate_lo", lo),
                ("resolved_rate_hi", hi),
            ] {
                // Published to 6 decimals.
                let got = published(key);
                assert!(
                    (got - want).abs() <= 1e-6,
                    "{key} = {got}, expected {want}: {at}"
                );
            }
            let (lo, rate, hi) = (
                published("resolved_rate_lo"),
                published("resolved_rate"),
                published("resolved_rate_hi"),
            );
            assert!(lo <= rate && rate <= hi && lo < hi, "{at}");
        }
        // No spec-track session: no rate and no interval, not zeros.
        let spec = &s["agents"][agent]["by_track"]["spec"];
        assert_eq!(spec["n"], 0, "{spec:#}");
        for key in ["resolved_rate", "resolved_rate_lo", "resolved_rate_hi"] {
            assert!(spec[key].is_null(), "{key}: {spec:#}");
        }
    }
}

#[test]
fn explain_lists_the_grades_behind_a_published_number() {
    let f = Fixture::new();
    f.default_pipeline();
    f.session(
        "a/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );
    f.session("a/none.json", "p-1", "");
    f.build_ok();
    let out = f
        .project
        .run(&[
            "explain",
            "summary.agents[a/model-x].resolved_rate",
            "--json",
        ])
        .code(0);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["value"], 0.5, "{v}");
    let mut sessions: Vec<(String, String)> = v["grades"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            assert_eq!(g["key_ok"], true, "{g}");
            (
                g["session"].as_str().unwrap().to_owned(),
                g["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    sessions.sort();
    assert_eq!(
        sessions,
        vec![
            ("a/fix.json".to_owned(), "resolved".to_owned()),
            ("a/none.json".to_owned(), "unresolved".to_owned())
        ]
    );
    f.project
        .run(&["explain", "summary.agents[nobody].resolved_rate"])
        .code(6);
}

// ---- attacks --------------------------------------------------------------------
//
// The attacks themselves are in `util::fixture`: `tests/docker.rs` runs the
// same ones on the docker executor.

#[test]
fn hostile_code_reaches_nothing_outside_its_tree_and_is_never_resolved() {
    hostile_code_is_confined(Executor::Local);
}

#[test]
fn forged_reports_fake_output_import_hooks_neutered_asserts_and_exit_127_are_the_agents() {
    util::forgery::forged_reports_are_caught(Executor::Local);
}

#[test]
fn a_run_filling_its_tree_is_stopped_at_a_lowered_write_limit() {
    a_run_filling_its_tree_is_stopped_at_its_write_limit(Executor::Local, Some(64 << 20), 15, 10);
}

#[test]
fn a_run_writing_1_5_gb_into_its_tree_is_stopped_at_the_default_write_limit() {
    a_run_filling_its_tree_is_stopped_at_its_write_limit(Executor::Local, None, 15, 100);
}

#[test]
fn a_shadowed_runner_and_a_hidden_test_rewritten_then_restored_are_not_resolved() {
    util::reach::the_runner_and_the_hidden_tests_are_out_of_reach(Executor::Local);
}

#[test]
fn a_report_directory_swapped_for_a_symlink_to_a_host_file_is_never_read() {
    util::reach::a_symlinked_report_directory_is_never_read(Executor::Local);
}

#[test]
fn a_memory_hog_is_killed_at_its_limit_and_the_grade_says_so() {
    let f = Fixture::new();
    f.pipeline("", 1 << 20, "");
    f.edit_pipeline("timeout = 60", "timeout = 60\nmemory = 268435456");
    let hog = "x = bytearray(1 << 30)\nx[::4096] = b'a' * len(x[::4096])\n";
    f.session("evil/hog.json", "p-1", &hostile(&f, hog));
    f.session(
        "good/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );
    f.build_ok();
    let row = f.row("evil/hog.json", "exclude");
    assert_eq!(row["verdict"], "unresolved", "{row:#?}");
    assert_eq!(row["fault"], "agent", "{row:#?}");
    assert_verdict(&f, "good/fix.json", "resolved", "resolved");
    let grade = f.grade_record("evil/hog.json", "exclude");
    let detail = grade["detail"].as_str().unwrap();
    // With a cgroup the OOM killer ends the run and says so; without one the
    // address-space limit fails the allocation (a MemoryError at import).
    assert!(
        detail == "the run hit its memory limit" || detail.contains("still fail"),
        "{grade:#}"
    );
}

// ---- patches as git applies them (issue 18) ------------------------------------
//
// Each patch leaves the bug in place; each once came out `resolved` (or an
// ambiguous `test_patch_conflict`) because assay read its paths or lines
// otherwise than `git apply` writes them.

#[test]
fn a_framework_reach_below_an_added_line_shaped_like_a_header_is_flagged() {
    util::patches::a_framework_reach_below_an_added_line_shaped_like_a_header_is_flagged(
        Executor::Local,
    );
}

#[test]
fn a_traditional_diff_to_a_hidden_test_file_under_a_longer_name_is_reset() {
    util::patches::a_traditional_diff_to_a_hidden_test_file_under_a_longer_name_is_reset(
        Executor::Local,
    );
}

#[test]
fn a_hidden_test_file_renamed_away_deleted_or_blocked_is_restored_and_graded() {
    util::patches::a_hidden_test_file_renamed_away_deleted_or_blocked_is_restored_and_graded(
        Executor::Local,
    );
}

#[test]
fn a_patch_over_the_caps_is_refused_before_anything_is_staged() {
    util::patches::a_patch_over_the_caps_is_refused_before_anything_is_staged(Executor::Local);
}

// ---- cache integrity -----------------------------------------------------------

#[test]
fn verify_checks_the_object_store_and_the_environments_against_their_records() {
    let f = Fixture::new();
    f.default_pipeline();
    f.session(
        "a/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );
    f.build_ok();
    let ok = f.project.run(&["verify", "--cache-only"]).code(0);
    assert!(ok.stdout.contains("object store ok"), "{}", ok.stdout);

    // A loose object of assay's store whose content no longer matches its
    // id: the shape of a planted object.
    let objects = f.project.cache().join("git/objects");
    let mut loose = Vec::new();
    for d in std::fs::read_dir(&objects).unwrap().flatten() {
        let name = d.file_name().to_string_lossy().into_owned();
        if name.len() == 2 {
            for o in std::fs::read_dir(d.path()).unwrap().flatten() {
                loose.push(o.path());
            }
        }
    }
    loose.sort();
    let victim = loose
        .first()
        .expect("the store holds loose objects")
        .clone();
    let other = loose.last().unwrap().clone();
    assert_ne!(victim, other);
    let mut perms = std::fs::metadata(&victim).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&victim, perms).unwrap();
    std::fs::copy(&other, &victim).unwrap();

    // An environment file changed after setup.
    let envs = f.project.cache().join("envs");
    let env = std::fs::read_dir(&envs)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    std::fs::write(env.join("planted.txt"), "x").unwrap();

    let out = f.project.run(&["verify", "--cache-only"]).code(4);
    assert!(
        out.stderr.contains("MISMATCH object store: error"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("MISMATCH environment envs/"),
        "{}",
        out.stderr
    );
}

#[test]
fn reexecuting_grades_compares_verdicts_and_a_changed_verdict_is_a_mismatch() {
    let f = Fixture::new();
    f.pipeline("", 1 << 20, "");
    f.session("b/none.json", "p-1", "");
    f.build_ok();
    let out = f
        .project
        .run(&["verify", "--cache-only", "--reexecute", "grade"])
        .code(0);
    assert!(out.stdout.contains("0 verdicts changed"), "{}", out.stdout);

    // Forge the stored grade: `resolved`, with a digest to match, so only a
    // re-execution can tell.
    let conn = rusqlite::Connection::open(f.project.cache().join("index.sqlite")).unwrap();
    let name = "grade:b/none.json:exclude";
    let (inline, output): (Option<Vec<u8>>, Vec<u8>) = conn
        .query_row(
            "SELECT inline, output FROM nodes WHERE name = ?1",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let bytes = match inline {
        Some(b) => b,
        None => {
            let hex: String = output.iter().map(|b| format!("{b:02x}")).collect();
            std::fs::read(
                f.project
                    .cache()
                    .join("blobs")
                    .join(&hex[..2])
                    .join(&hex[2..]),
            )
            .unwrap()
        }
    };
    let mut record: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(record["verdict"], "unresolved");
    record["verdict"] = json!("resolved");
    record["fault"] = json!("none");
    let forged = serde_json::to_vec(&record).unwrap();
    let digest = blake3::hash(&forged).as_bytes().to_vec();
    let changed = conn
        .execute(
            "UPDATE nodes SET inline = ?1, output = ?2 WHERE name = ?3",
            rusqlite::params![forged, digest, name],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let out = f
        .project
        .run(&["verify", "--cache-only", "--reexecute", "grade"])
        .code(4);
    assert!(
        out.stderr.contains(&format!(
            "VERDICT  {name}: stored resolved (fault none), re-executed unresolved (fault agent)"
        )),
        "{}",
        out.stderr
    );
}

// ---- the sandbox as a user meets it ----------------------------------------------

#[test]
fn without_bubblewrap_the_build_stops_and_says_how_to_install_it() {
    let f = Fixture::new();
    f.default_pipeline();
    f.session(
        "a/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );
    let out = f
        .project
        .command(&["build"])
        .env("ASSAY_BWRAP", f.path().join("no-such-bwrap"))
        .output()
        .unwrap();
    let run = util::Run::from(out).code(7);
    assert!(
        run.stderr.contains("apt-get install bubblewrap"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("\"none\""),
        "names the opt-out: {}",
        run.stderr
    );
    assert!(!f.path().join("release").exists(), "nothing ran");
}

#[test]
fn an_unsandboxed_build_warns_and_its_release_says_so() {
    let f = Fixture::new();
    f.pipeline("", 1 << 20, "");
    f.edit_pipeline("timeout = 60", "timeout = 60\nsandbox = \"none\"");
    f.session(
        "a/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );
    for _ in 0..2 {
        // Every build warns, the no-op one too.
        let b = f.build_ok();
        assert!(
            b.run.stderr.contains("sandbox = \"none\""),
            "{}",
            b.run.stderr
        );
        assert!(b.run.stderr.contains("unconfined"), "{}", b.run.stderr);
    }
    assert_eq!(f.row("a/fix.json", "exclude")["sandbox"], "none");
    assert_eq!(f.summary()["graded_unsandboxed"], json!(true));
    let report = std::fs::read_to_string(f.path().join("release/report.html")).unwrap();
    assert!(report.contains("Graded unsandboxed"), "the report says so");
}

/// Starts a build whose every run leaves a daemon and sleeps, stops assay
/// with `signal` once two of those processes run, and checks what the exit
/// status is, that nothing of the runs survives, and that the next build
/// completes on a cache that verifies. `tag` keeps the processes of tests
/// running side by side apart.
fn stop_a_build_mid_run(signal: &str, tag: u32, exit_code: Option<i32>) {
    let f = Fixture::new();
    f.pipeline("", 1 << 20, "");
    let toml = std::fs::read_to_string(f.path().join("pipeline.toml")).unwrap();
    let token = format!("{}.{}", tag + std::process::id() % 97, std::process::id());
    f.edit_pipeline(
        "test_command = \"python3 -m unittest -v\"",
        &format!("test_command = \"(setsid sleep {token} &) ; sleep {token}\""),
    );
    f.session(
        "a/fix.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(OPS_SUB))]),
    );
    let mut child = f
        .project
        .command(&["build", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let needle = format!("sleep\0{token}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while live_with(&needle).len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never started its processes"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let sent = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    assert_eq!(
        child.wait().unwrap().code(),
        exit_code,
        "the exit code after {signal}"
    );
    // The kernel tears the sandbox down with its parent: a bounded moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut alive = live_with(&needle);
    while !alive.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        alive = live_with(&needle);
    }
    for p in &alive {
        let _ = std::process::Command::new("kill")
            .args(["-9", &p.to_string()])
            .status();
    }
    assert!(alive.is_empty(), "survived {signal} of assay: {alive:?}");
    f.project.write("pipeline.toml", &toml);
    f.build_ok();
    assert_verdict(&f, "a/fix.json", "resolved", "resolved");
    f.project.run(&["verify", "--cache-only"]).code(0);
}

#[test]
fn a_kill_9_of_assay_mid_run_leaves_no_process_of_the_run_and_the_next_build_completes() {
    // Killed by a signal: no exit code.
    stop_a_build_mid_run("-KILL", 400, None);
}

#[test]
fn a_ctrl_c_stops_the_build_with_130_and_kills_every_process_of_its_runs() {
    stop_a_build_mid_run("-INT", 500, Some(130));
}

/// A session naming a task by a typo, and `explain` of a mistyped number,
/// say what was meant. The task is suggested among those released: on a
/// first build, none is yet.
#[test]
fn a_mistyped_task_or_published_number_gets_a_did_you_mean() {
    let f = Fixture::new();
    f.default_pipeline();
    f.session("a/fix.json", "p-1", &f.fix1());
    f.session("a/typo.json", "p-01", &f.fix1());
    let first = f.build_ok();
    assert!(
        first.run.stderr.contains("names task `p-01`")
            && !first.run.stderr.contains("did you mean"),
        "{}",
        first.run.stderr
    );
    let b = f.build_ok();
    assert!(
        b.run.stderr.contains("names task `p-01`")
            && b.run.stderr.contains("(did you mean `p-1`?)"),
        "{}",
        b.run.stderr
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.path().join("release/manifest.json")).unwrap())
            .unwrap();
    let real = manifest["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["path"].as_str().unwrap())
        .find(|p| p.ends_with("resolved_rate"))
        .unwrap()
        .to_owned();
    let typo = real.replace("resolved_rate", "resolvd_rate");
    let out = f.project.run(&["explain", &typo]);
    assert_ne!(out.code, 0);
    // miette wraps the help: compare without the wrapping.
    let flat = |t: &str| -> String {
        t.chars()
            .filter(|c| !c.is_whitespace() && *c != '│')
            .collect()
    };
    assert!(
        flat(&out.stderr).contains(&flat(&format!("did you mean one of: {real},"))),
        "{}",
        out.stderr
    );
}

/// A loaded machine is not the agent's fault (docs/verdicts.md,
/// "Timeouts"). A right fix whose tests need 2 s of CPU, pinned to CPU 0
/// behind five busy loops of other sessions (a sixth of it: some 12 s of
/// wall time), is graded against its task's timeout from the screening
/// readings (5 s, the floor) and not cut: the time it waited for the CPU is
/// not counted, and its run record says how long that was. Where that time
/// cannot be measured (no cgroup v2), the clock is wall time and the run is
/// cut, as documented.
#[test]
fn a_run_slowed_by_other_work_on_the_machine_is_not_timed_out_for_it() {
    let f = Fixture::new();
    f.pipeline_with_timeout("new-test-files", 1 << 20, 120, "timeout_floor = 5");
    let slow = "import os, time\nos.sched_setaffinity(0, {0})\nt = time.process_time()\nwhile time.process_time() - t < 2.0:\n    pass\n";
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some(slow)),
    ]);
    f.session("a/slow.json", "p-1", &patch);
    let b = {
        let _hogs = assay_testkit::Hogs::on_cpu0(5);
        f.build(&[])
    };
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    let run = f.project.output_record("run:a/slow.json:exclude");
    let row = f.row("a/slow.json", "exclude");
    let task = f.released_task("p-1");
    let task_timeout_ms = 1000 * task["timeout_s"].as_u64().unwrap();
    match run["cpu_stalled_ms"].as_u64() {
        Some(stalled) => {
            assert_eq!(row["verdict"], "resolved", "{row:#?}\n{run:#}");
            let took = run["duration_ms"].as_u64().unwrap();
            assert!(
                took > task_timeout_ms && took - stalled < task_timeout_ms,
                "past its timeout only by what it waited: {run:#}"
            );
        }
        None => assert_eq!(
            (row["verdict"].as_str(), row["fault"].as_str()),
            ("unresolved", "agent"),
            "{row:#?}"
        ),
    }
}

/// A hostile run cannot buy itself time by making itself wait. A session
/// that hangs at the lowest priority (`SCHED_IDLE`, pinned to CPU 0 behind
/// busy loops of other sessions: nearly all of its time is "waiting for a
/// CPU") is still cut, at the environment's timeout at the latest, as the
/// agent's timeout; and it cannot see its control group (no `/sys` in the
/// sandbox) to change what is measured. Harmless if the defence fails: it
/// only spins, and the build's own timeout bounds it.
#[test]
fn a_run_that_makes_itself_wait_is_still_cut_at_the_environments_timeout() {
    let f = Fixture::new();
    f.pipeline_with_timeout("new-test-files", 1 << 20, 12, "");
    let idle = "import os\nos.sched_setaffinity(0, {0})\n\
                os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n\
                print('sees-cgroups', os.path.exists('/sys/fs/cgroup'), flush=True)\n\
                while True:\n    pass\n";
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some(idle)),
    ]);
    f.session("evil/idle.json", "p-1", &patch);
    let b = {
        let _hogs = assay_testkit::Hogs::on_cpu0(3);
        f.build(&[])
    };
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    assert_verdict(&f, "evil/idle.json", "unresolved", "unresolved");
    let grade = f.grade_record("evil/idle.json", "exclude");
    assert_eq!(grade["fault"], "agent", "{grade:#}");
    let detail = grade["detail"].as_str().unwrap();
    assert!(detail.starts_with("timed out after"), "{detail}");
    let run = f.project.output_record("run:evil/idle.json:exclude");
    let took = run["duration_ms"].as_u64().unwrap();
    assert!(
        took < 20_000,
        "past the environment's 12 s only by the kill: {run:#}"
    );
    assert!(
        f.evidence(&grade, "log").contains("sees-cgroups False"),
        "{grade:#}"
    );
}

/// A session that hangs is cut at its task's timeout, derived from the
/// screening readings (`[grade] timeout_factor` × the slowest, at least
/// `timeout_floor`), not at the environment's fixed timeout: the task
/// records it, the grade says why it was cut there, and the verdict is the
/// one a fixed timeout gives (unresolved, the agent's).
#[test]
fn a_hanging_run_is_cut_at_its_tasks_timeout_from_the_screening_readings() {
    let f = Fixture::new();
    f.pipeline_with_timeout("new-test-files", 1 << 20, 120, "timeout_floor = 3");
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some("import time\ntime.sleep(600)\n")),
    ]);
    f.session("b/hang.json", "p-1", &patch);
    let b = f.build(&[]);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    let task = f.released_task("p-1");
    // A step of its decade: 1, 1.5, 2, 3, 5 or 7 times a power of ten.
    let slowest = task["slowest_screening_s"].as_f64().unwrap();
    let ms = (slowest * 1000.0).round() as u64;
    let decade = 10u64.pow(ms.ilog10() - 1);
    assert!(
        ms >= 500 && ms.is_multiple_of(decade) && [10, 15, 20, 30, 50, 70].contains(&(ms / decade)),
        "{task:#}"
    );
    let timeout = task["timeout_s"].as_u64().unwrap();
    assert_eq!(timeout, (ms * 10).div_ceil(1000).clamp(3, 120), "{task:#}");
    assert!(timeout < 120, "{task:#}");
    let row = f.row("b/hang.json", "exclude");
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("unresolved", "agent"),
        "{row:#?}"
    );
    let grade = f.project.shown(&row["grade_digest"]);
    let detail = grade["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!(
            "timed out after {timeout} s (the task's timeout: its slowest screening run took"
        )),
        "{detail}"
    );
    // A run that waited for a CPU beyond 0.1 s says so after it.
    let (cut, waited) = detail
        .split_once("; it ran ")
        .map_or((detail, None), |(c, w)| (c, Some(w)));
    assert!(cut.ends_with("the environment allows 120 s)"), "{detail}");
    if let Some(w) = waited {
        assert!(
            w.ends_with("waiting for a CPU the machine gave to other work, not counted"),
            "{detail}"
        );
    }
}

#[test]
fn a_warm_cache_is_each_runs_own_and_never_poisoned() {
    a_warm_cache_is_never_poisoned_for_the_next_run(Executor::Local);
}

/// What a run gets of the host's toolchains is read-only and no more: a
/// session whose code, at import, tries to write into the rustup home its
/// `RUSTUP_HOME` names and to read the cargo home's `credentials.toml`
/// (both this test's own, under its temp dir, stood up as a rustup install:
/// a `rustup` in `<cargo home>/bin` on assay's `PATH`) writes nothing and
/// reads nothing. Harmless if the defence fails: both homes are this
/// test's.
#[test]
fn a_run_can_neither_write_the_rustup_home_nor_read_the_cargo_credentials() {
    let f = Fixture::new();
    f.default_pipeline();
    let (cargo, rustup) = (f.path().join("cargo-home"), f.path().join("rustup-home"));
    std::fs::create_dir_all(cargo.join("bin")).unwrap();
    std::fs::write(cargo.join("bin/rustup"), "").unwrap();
    let secret = format!("cio{}{}", "TOKEN", std::process::id());
    std::fs::write(
        cargo.join("credentials.toml"),
        format!("[registry]\ntoken = \"{secret}\"\n"),
    )
    .unwrap();
    std::fs::create_dir_all(&rustup).unwrap();
    std::fs::write(rustup.join("settings.toml"), "ORIGINAL\n").unwrap();
    let probe = format!(
        r#"import os
_home = os.environ.get("RUSTUP_HOME", "")
print("PROBE-HOME=" + _home)
for _name in ("settings.toml", "planted"):
    try:
        with open(os.path.join(_home, _name), "w") as fh:
            fh.write("POISONED")
        print("PROBE-" + "WROTE", _name)
    except OSError as error:
        print("PROBE-REFUSED", _name, error)
try:
    with open("{}") as fh:
        print("PROBE-READ", fh.read())
except OSError as error:
    print("PROBE-UNREADABLE", error)
"#,
        cargo.join("credentials.toml").display()
    );
    f.session(
        "evil/toolchain.json",
        "p-1",
        &f.diff1(&[("pkg/__init__.py", Some(&probe))]),
    );
    let path = format!(
        "{}:{}",
        cargo.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let b = f.build_env(&[
        ("PATH", path.as_str()),
        ("RUSTUP_HOME", rustup.to_str().unwrap()),
    ]);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    let blobs = f.path().join("cache/blobs");
    let found = |needle: &str| {
        let mut hits = Vec::new();
        util::grep_tree(&blobs, &[needle.as_bytes()], &mut hits);
        !hits.is_empty()
    };
    // The run saw the home (the probe ran, and the variable was set) …
    assert!(found(&format!("PROBE-HOME={}", rustup.display())));
    assert!(found("PROBE-REFUSED settings.toml") && found("PROBE-UNREADABLE"));
    // … and could change nothing of it, nor read the token.
    assert!(!found("PROBE-WROTE ") && !found(&secret));
    assert_eq!(
        std::fs::read_to_string(rustup.join("settings.toml")).unwrap(),
        "ORIGINAL\n"
    );
    assert!(!rustup.join("planted").exists());
}

/// Issue 47: forgers that read the hidden test and pick the original out
/// of its window — by the smallest value, by the failure message, and by a
/// fresh guess on each rerun — are each `unresolved`, the agent's.
#[test]
fn window_pickers_are_caught_locally() {
    util::windows::window_pickers_are_caught(Executor::Local);
}

/// Issue 47: checks and reruns that name tests run their windows too.
#[test]
fn windows_ride_along_with_checks_naming_tests_locally() {
    util::windows::windows_ride_along_with_checks_naming_tests(Executor::Local);
}

/// Issue 34: forgeries written against the shaped canaries (canary-aware
/// neutering, a test blanked by its name) pass them and are caught by the
/// canaries made of the task's own tests (`util::forgery`).
#[test]
fn forgeries_written_against_the_shaped_canaries_are_caught_by_the_tasks_own_tests() {
    util::forgery::canary_aware_forgeries_are_caught(Executor::Local);
}

/// Session inputs are opened beneath the sessions directory with no
/// symbolic link anywhere on their path: a directory link in the middle
/// of `patch_file`'s or `transcript`'s path, a session file that is a
/// link, and a Harbor trial whose `verifier/` or `agent/` is a link all
/// point at a host file; its bytes reach neither the cache nor the
/// release, and each refused input is listed with its path.
#[test]
fn session_inputs_behind_symbolic_links_are_refused_with_their_path() {
    const MARKER: &str = "HOST-FILE-MARKER-5c1e0b";
    let f = Fixture::new();
    f.default_pipeline();
    let marked = format!("# {MARKER}\n{OPS_SUB}");
    let patch = f.diff1(&[("pkg/ops.py", Some(&marked))]);
    // The host's files, outside the sessions directory.
    let host = f.path().join("host");
    std::fs::create_dir_all(&host).unwrap();
    std::fs::write(host.join("fix.diff"), &patch).unwrap();
    std::fs::write(host.join("agent.patch"), &patch).unwrap();
    let transcript = json!({"type": "result", "subtype": "success", "result": MARKER,
        "is_error": false, "num_turns": 1, "usage": {"input_tokens": 1, "output_tokens": 1}});
    std::fs::write(host.join("t.stream.jsonl"), format!("{transcript}\n")).unwrap();
    let linked_session =
        json!({"task": "p-1", "agent": "linked", "model": "m", "patch": patch}).to_string();
    std::fs::write(host.join("session.json"), linked_session).unwrap();
    let sessions = f.path().join("sessions");
    let session = |id: &str, v: Value| f.project.write(&format!("sessions/{id}"), v.to_string());
    session(
        "a/through-dir.json",
        json!({"task": "p-1", "agent": "a", "model": "m", "patch_file": "d/fix.diff"}),
    );
    std::os::unix::fs::symlink(&host, sessions.join("a/d")).unwrap();
    session(
        "b/transcript.json",
        json!({"task": "p-1", "agent": "b", "model": "m", "patch": "", "transcript": "logs/t.stream.jsonl"}),
    );
    std::os::unix::fs::symlink(&host, sessions.join("b/logs")).unwrap();
    std::fs::create_dir_all(sessions.join("c")).unwrap();
    std::os::unix::fs::symlink(host.join("session.json"), sessions.join("c/linked.json")).unwrap();
    // A Harbor job: trial t1's verifier/ and t2's agent/ are links.
    let job = sessions.join("h/job");
    let write = |rel: &str, v: Value| {
        let p = job.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, v.to_string()).unwrap();
    };
    write("config.json", json!({}));
    write("result.json", json!({"n_total_trials": 2, "stats": {}}));
    for t in ["t1", "t2"] {
        write(
            &format!("{t}/result.json"),
            json!({"trial_name": t, "task_name": "assay/p-1",
                   "agent_info": {"name": "harbor-agent", "model_info": "m"}}),
        );
    }
    std::os::unix::fs::symlink(&host, job.join("t1/verifier")).unwrap();
    std::os::unix::fs::symlink(&host, job.join("t2/agent")).unwrap();
    std::fs::create_dir_all(job.join("t2/verifier")).unwrap();
    std::fs::write(job.join("t2/verifier/agent.patch"), "").unwrap();

    let b = f.build(&[]);
    assert!(!b.run.stderr.contains("panicked"), "{}", b.run.stderr);
    let mut hits = Vec::new();
    grep_tree(&f.path().join("cache"), &[MARKER.as_bytes()], &mut hits);
    grep_tree(&f.path().join("release"), &[MARKER.as_bytes()], &mut hits);
    assert_eq!(hits, Vec::new(), "the host file was read");
    let s = f.summary();
    let ng = &s["not_graded"];
    let reason = |id: &str| {
        ng["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["session"] == id)
            .unwrap_or_else(|| panic!("{id} not in not_graded: {ng:#}"))["reason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for (id, path) in [
        ("a/through-dir.json", "sessions/a/d/fix.diff"),
        ("b/transcript.json", "sessions/b/logs/t.stream.jsonl"),
        ("c/linked.json", "sessions/c/linked.json"),
        ("h/job/t1", "sessions/h/job/t1/verifier"),
    ] {
        let why = reason(id);
        assert!(
            why.contains("symbolic link") && why.contains(path),
            "{id}: {why}"
        );
    }
    // The trial whose agent/ is a link is graded on its own (empty) patch:
    // nothing assay reads lies under agent/.
    assert_eq!(f.row("h/job/t2", "exclude")["verdict"], "unresolved");
}

#[test]
fn tampering_with_the_runner_from_its_own_process_is_seen_by_the_audit_hook() {
    util::audit::tampering_with_the_runner_is_evidence(Executor::Local);
}

#[test]
fn an_audit_rule_the_gold_suite_trips_is_off_for_its_task_and_costs_no_fix() {
    util::audit::a_rule_an_honest_suite_trips_is_off_for_its_task();
}

#[test]
fn an_honest_suite_that_starts_python_children_keeps_its_fix_under_the_guard() {
    util::audit::an_honest_suite_that_starts_python_keeps_its_fix();
}

#[test]
fn the_audit_hooks_findings_reach_assay_when_stderr_is_the_report_file() {
    util::audit::a_report_file_does_not_take_the_hooks_channel(Executor::Local);
}

/// Issue 34's canary-aware neutering under pytest: pytest's report builder
/// wrapped to pass every failure but the canary-shaped ones; caught by the
/// canaries made of the task's own tests. Under the pytest of
/// `scripts/pytest-venv.sh` (made here when missing; `.ci/run` makes it).
#[test]
fn a_pytest_report_builder_neutered_around_the_shaped_canaries_is_caught() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // Made once under target/ when missing (PyPI), kept between runs.
    let setup = std::process::Command::new(root.join("scripts/pytest-venv.sh"))
        .arg("--setup")
        .status()
        .unwrap();
    assert!(setup.success(), "scripts/pytest-venv.sh --setup: {setup}");
    let bin = root.join("target/pytest-venv/bin");
    util::forgery::pytest_canary_aware_forgery_is_caught(bin.to_str().unwrap());
}

/// Issue 35: session files whose own records end in a fake API outage —
/// a Claude transcript's `is_error: true` result ("API Error: 429"), a
/// mini-swe-agent trajectory ending in `RateLimitError`, a session file's
/// `run.is_error` — are graded and counted as the agent's attempts: the
/// agent wrote those files, and no witness of assay's saw an outage. The
/// claim stays visible in the record and the grade's detail.
#[test]
fn a_session_whose_own_transcript_claims_a_rate_limit_error_is_graded_and_counted() {
    let f = Fixture::new();
    f.default_pipeline();
    let claude = [
        json!({"type": "system", "subtype": "init", "model": "m", "session_id": "s"}),
        json!({"type": "result", "subtype": "success", "is_error": true, "num_turns": 1,
               "result": "API Error: 429 {\"type\":\"rate_limit_error\"}",
               "usage": {"input_tokens": 1, "output_tokens": 1}}),
    ]
    .map(|l| format!("{l}\n"))
    .concat();
    f.project.write("sessions/c/claude.stream.jsonl", claude);
    let trajectory = json!({"info": {"exit_status": "RateLimitError",
        "model_stats": {"api_calls": 1, "instance_cost": 0.0}}, "messages": []});
    f.project
        .write("sessions/c/run.traj.json", trajectory.to_string());
    let session = |id: &str, extra: Value| {
        let mut v = json!({"task": "p-1", "agent": "c", "model": "m", "patch": ""});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        f.project.write(&format!("sessions/c/{id}"), v.to_string());
    };
    session("claude.json", json!({"transcript": "claude.stream.jsonl"}));
    session("mini.json", json!({"transcript": "run.traj.json"}));
    session(
        "file.json",
        json!({"run": {"ended": "RateLimitError", "is_error": true}}),
    );
    f.build_ok();

    for id in ["c/claude.json", "c/mini.json", "c/file.json"] {
        let row = f.row(id, "exclude");
        assert_eq!(
            (row["verdict"].as_str(), row["fault"].as_str()),
            ("unresolved", "agent"),
            "{row:#?}"
        );
        assert_eq!(row["is_error"], "true", "the claim is shown: {row:#?}");
    }
    let s = f.summary();
    let a = &s["agents"]["c/m"];
    assert_eq!(a["n"], 3, "every claimed outage is counted: {a:#}");
    assert_eq!(a["leaderboard"]["left_out"], json!([]), "{a:#}");
    let grades = std::fs::read_to_string(f.path().join("release/report.html")).unwrap();
    assert!(grades.contains("claimed_error"), "the claim is said");
}

/// Issue 47: graded code that reads the hidden test at run time (its
/// caller's frame, the test files) finds no expected value to hand back:
/// sealed assertions keep it outside the tree (`util::sealed`).
#[test]
fn readers_of_the_hidden_test_find_no_expected_value_in_a_sealed_tree() {
    util::sealed::readers_of_the_hidden_test_are_refused_by_seals(Executor::Local);
}
