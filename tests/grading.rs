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
use util::fixture::*;
use util::{Build, unique};

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
fn code_failing_only_on_a_trees_first_run_is_resolved_after_rerun() {
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
fn exit_127_is_env_setup_failed() {
    let f = Fixture::new();
    f.default_pipeline();
    // A documented stand-in: a patch cannot remove the interpreter.
    let patch = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some("import os\n\nos._exit(127)\n")),
    ]);
    f.session("g/exit127.json", "p-1", &patch);
    f.build_ok();
    assert_verdict(&f, "g/exit127.json", "env_setup_failed", "env_setup_failed");
    let row = f.row("g/exit127.json", "exclude");
    assert_eq!(row["fault"], "harness", "{row:#?}");
    assert_eq!(row["exit_code"], "127", "{row:#?}");
}

#[test]
fn a_log_over_the_cap_is_ineligible_even_though_the_tests_pass() {
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
    let row = f.row("b/noisy.json", "exclude");
    assert_eq!(row["fault"], "harness", "{row:#?}");
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
        for dir in [tmp.as_path(), f.path().parent().unwrap(), f.path()] {
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
    // No symlink to /etc/passwd (or through `up`) was ever materialised in
    // the project, in any staged tree left behind.
    let mut links = Vec::new();
    find_named(f.path(), "passwd", &mut links);
    assert!(links.is_empty(), "{links:?}");
}

// ---- redaction ------------------------------------------------------------------

#[test]
fn planted_secrets_never_reach_the_cache_or_the_release() {
    let f = Fixture::new();
    f.pipeline(
        "new-test-files",
        1 << 20,
        "[redact]\nenv = [\"ASSAY_TEST_SECRET\"]\n",
    );
    let key = format!(
        "sk-ant-api03-{}",
        "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGhIjKlMn"
    );
    assert_eq!(key.len(), "sk-ant-api03-".len() + 40);
    let value = "supersecretvalue123";
    // The secrets are assembled at run time, so the patch (stored as it is,
    // since it is what gets graded) holds neither string.
    let init = r#"import sys

KEY = "sk-ant-" + "api03-" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGhIjKlMn"
VALUE = "supersecret" + "value123"
print("using key", KEY, "and", VALUE)
sys.stderr.write("debug: key=%s value=%s\n" % (KEY, VALUE))
"#;
    let ok = f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        ("pkg/__init__.py", Some(init)),
    ]);
    // The same noise with a wrong fix: its reruns' logs must be redacted too.
    let wrong = OPS_BASE.replacen("return a + b\n\n\ndef mul", "return a * b\n\n\ndef mul", 1);
    let bad = f.diff1(&[
        ("pkg/ops.py", Some(&wrong)),
        ("pkg/__init__.py", Some(init)),
    ]);
    for p in [&ok, &bad] {
        assert!(!p.contains(&key) && !p.contains(value), "{p}");
    }
    f.session("a/leaky.json", "p-1", &ok);
    f.session("b/leaky-wrong.json", "p-1", &bad);
    let out = f
        .project
        .command(&["build", "--json"])
        .env("ASSAY_TEST_SECRET", value)
        .output()
        .unwrap();
    let b = Build::from(util::Run::from(out));
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
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

    let mut hits = Vec::new();
    let needles: [&[u8]; 2] = [key.as_bytes(), value.as_bytes()];
    grep_tree(&f.path().join("cache"), &needles, &mut hits);
    grep_tree(&f.path().join("release"), &needles, &mut hits);
    assert!(hits.is_empty(), "secrets found in: {hits:#?}");
    // The stdout/stderr of assay itself do not carry them either.
    assert!(!b.run.stdout.contains(value) && !b.run.stderr.contains(value));
    assert!(!b.run.stdout.contains(&key) && !b.run.stderr.contains(&key));
    // And the check can fail: the redacted logs are there, with the marker.
    let mut markers = Vec::new();
    grep_tree(&f.path().join("cache"), &[b"[REDACTED]"], &mut markers);
    assert!(!markers.is_empty(), "no redacted log in the cache");
}

// ---- sessions that are not graded -------------------------------------------------

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
    let b = f.build(&[]);
    assert_eq!(b.run.code, 1, "stderr:\n{}", b.run.stderr);
    assert!(
        b.run.stderr.contains("broken.json"),
        "stderr names the file:\n{}",
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
    assert_eq!(ng["total"], 2, "{ng:#}");
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
    expected.insert("run", run);
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
    f.project
        .run(&["verify"])
        .code(0)
        .stdout_has("release ok: 6 files");

    // A forged summary whose manifest digests are forged to match: the
    // digests alone agree, the recomputation from the cache does not.
    let rel = f.path().join("release");
    let summary = std::fs::read_to_string(rel.join("summary.json")).unwrap();
    let forged = summary.replacen("\"resolved\": 1,", "\"resolved\": 2,", 1);
    assert_ne!(forged, summary, "the summary has a resolved count to forge");
    std::fs::write(rel.join("summary.json"), &forged).unwrap();
    let manifest = std::fs::read_to_string(rel.join("manifest.json")).unwrap();
    let old = blake3::hash(summary.as_bytes()).to_hex().to_string();
    let new = blake3::hash(forged.as_bytes()).to_hex().to_string();
    let manifest = manifest.replace(&old, &new);
    let v: Value = serde_json::from_str(&manifest).unwrap();
    let claimed = v["release_digest"].as_str().unwrap().to_owned();
    let blank = manifest.replacen(&claimed, "", 1);
    let forged_digest = blake3::hash(blank.as_bytes()).to_hex().to_string();
    std::fs::write(
        rel.join("manifest.json"),
        manifest.replacen(&claimed, &forged_digest, 1),
    )
    .unwrap();

    let out = f.project.run(&["verify"]).code(4);
    assert!(
        out.stderr
            .contains("summary.json: differs from its recomputation"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("release_digest"),
        "the forged digests are consistent: {}",
        out.stderr
    );
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
fn a_memory_hog_is_killed_at_its_limit_and_the_grade_says_so() {
    let f = Fixture::new();
    f.pipeline("", 1 << 20, "");
    let toml = std::fs::read_to_string(f.path().join("pipeline.toml")).unwrap();
    f.project.write(
        "pipeline.toml",
        toml.replace("timeout = 60", "timeout = 60\nmemory = 268435456"),
    );
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
