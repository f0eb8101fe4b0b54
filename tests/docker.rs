//! The docker executor through the real binary, against the real daemon:
//! the grading fixture (`util::fixture`) with `executor = "docker"` gives the
//! local verdicts, hostile sessions reach nothing, no container outlives a
//! build (even one killed with `kill -9`), environments are shared images
//! that can be exported and loaded back, and two sources can each have
//! their own environment.
//!
//! The daemon must be reachable: these tests fail, they never skip. The base
//! image is built with `scripts/base-image.sh` when absent (about a minute).
//! Tests run in parallel in one process and other builds may share the
//! daemon, so "no container left" is checked per build (by the `assay.pid`
//! label of the process that made it), and images are only ever removed when
//! a test made them its own (a unique setup command).

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use util::attacks::{
    SLEEPER, a_run_filling_its_tree_is_stopped_at_its_write_limit,
    a_warm_cache_is_never_poisoned_for_the_next_run, hostile, hostile_code_is_confined,
    interrupted_build,
};
use util::fixture::*;
use util::{Build, Repo, unique};

/// The fixture on the docker executor, its base image present.
fn docker_fixture() -> Fixture {
    docker_base_image();
    Fixture::on(Executor::Docker)
}

/// `docker ARGS`, which must succeed; its stdout.
fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Ids of the containers (running or not) the assay process `pid` created.
fn containers_of(pid: u32) -> Vec<String> {
    containers_where(pid, &[])
}

/// Ids of the running containers of the assay process `pid` (not those
/// created ahead and not started).
fn running_containers_of(pid: u32) -> Vec<String> {
    containers_where(pid, &["--filter", "status=running"])
}

fn containers_where(pid: u32, filters: &[&str]) -> Vec<String> {
    let owner = format!("label=assay.pid={pid}");
    let mut args = vec![
        "ps",
        "-aq",
        "--filter",
        "label=assay.run=1",
        "--filter",
        &owner,
    ];
    args.extend(filters);
    docker(&args)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// The released tasks (certified or not) by `instance_id`.
fn tasks(f: &Fixture) -> BTreeMap<String, Value> {
    ["release/tasks.jsonl", "release/tasks.uncertified.jsonl"]
        .iter()
        .map(|p| std::fs::read_to_string(f.path().join(p)).unwrap())
        .collect::<String>()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|t| (t["instance_id"].as_str().unwrap().to_owned(), t))
        .collect()
}

/// How many nodes of `kind` the build executed.
fn executed(b: &Build, kind: &str) -> u64 {
    b.summary.by_kind.get(kind).map(|c| c.executed).unwrap_or(0)
}

/// `[env]` of the fixture's pipeline with `lines` added to it.
fn with_env_lines(f: &Fixture, lines: &str) {
    let toml = std::fs::read_to_string(f.path().join("pipeline.toml")).unwrap();
    let toml = toml.replacen("[env]\n", &format!("[env]\n{lines}\n"), 1);
    f.project.write("pipeline.toml", toml);
}

// ---- the same verdicts -----------------------------------------------------------

#[test]
fn the_grading_fixture_gets_the_same_verdicts_on_docker_as_on_local() {
    let local = Fixture::new();
    let docker = docker_fixture();
    for f in [&local, &docker] {
        f.default_pipeline();
        every_verdict(f);
        f.build_ok();
    }
    same_verdicts(&local, &docker);
    // The docker release names the image that certified each task and
    // graded each session; the local one names none (SWE-bench's `image`
    // key is there, empty: the harness requires it).
    let image = |t: &Value| t["image"].as_str().map(str::to_owned);
    let docker_tasks = tasks(&docker);
    let id = image(&docker_tasks["p-1"]).unwrap();
    assert!(id.starts_with("sha256:"), "{id}");
    assert_eq!(docker_tasks["p-1"]["executor"], "docker");
    assert!(
        tasks(&local)
            .values()
            .all(|t| t["image"] == "" && t.get("executor").is_none())
    );
    let grade = docker.grade_record("a/fix.json", "exclude");
    assert_eq!(grade["executor"], "docker", "{grade:#}");
    assert_eq!(grade["image"].as_str(), Some(id.as_str()), "{grade:#}");
    assert!(
        local
            .grade_record("a/fix.json", "exclude")
            .get("image")
            .is_none()
    );
    let summary = docker.summary();
    assert_eq!(summary["graded_unsandboxed"], Value::Bool(false));
    assert_eq!(
        summary["environments"],
        serde_json::json!([{ "executor": "docker", "image": id }]),
        "{summary:#}"
    );
    assert!(local.summary().get("environments").is_none());
}

#[test]
fn build_executor_overrides_the_pipeline_for_one_build() {
    docker_base_image();
    let f = Fixture::new();
    f.default_pipeline();
    f.session("a/fix.json", "p-1", &f.fix1());
    let on_docker = f.build(&["--executor", "docker"]);
    assert_eq!(on_docker.run.code, 0, "{}", on_docker.run.stderr);
    assert_eq!(f.row("a/fix.json", "exclude")["sandbox"], "docker");
    assert_eq!(tasks(&f)["p-1"]["executor"], "docker");
    // Back to the file's executor: other keys, so everything runs again, locally.
    let local = f.build_ok();
    assert!(executed(&local, "run") > 0, "{:?}", local.summary);
    assert_eq!(f.row("a/fix.json", "exclude")["sandbox"], "bwrap");
    assert!(tasks(&f)["p-1"].get("executor").is_none());
}

// ---- attacks -----------------------------------------------------------------------

#[test]
fn hostile_code_reaches_nothing_outside_its_tree_and_is_never_resolved_on_docker() {
    docker_base_image();
    hostile_code_is_confined(Executor::Docker);
}

#[test]
fn forged_reports_are_caught_by_the_canaries_on_docker() {
    docker_base_image();
    util::forgery::forged_reports_are_caught(Executor::Docker);
}

/// Issue 47: the seals hold on docker as locally (`util::sealed`).
#[test]
fn readers_of_the_hidden_test_find_no_expected_value_in_a_sealed_tree_on_docker() {
    docker_base_image();
    util::sealed::readers_of_the_hidden_test_are_refused_by_seals(Executor::Docker);
}

#[test]
fn forgeries_written_against_the_shaped_canaries_are_caught_on_docker() {
    docker_base_image();
    util::forgery::canary_aware_forgeries_are_caught(Executor::Docker);
}

#[test]
fn a_run_filling_its_tree_is_stopped_at_a_lowered_write_limit_on_docker() {
    docker_base_image();
    a_run_filling_its_tree_is_stopped_at_its_write_limit(Executor::Docker, Some(64 << 20), 15, 10);
}

#[test]
fn a_run_writing_1_5_gb_into_its_tree_is_stopped_at_the_default_write_limit_on_docker() {
    docker_base_image();
    a_run_filling_its_tree_is_stopped_at_its_write_limit(Executor::Docker, None, 15, 100);
}

#[test]
fn a_shadowed_runner_and_a_hidden_test_rewritten_then_restored_are_not_resolved_on_docker() {
    docker_base_image();
    util::reach::the_runner_and_the_hidden_tests_are_out_of_reach(Executor::Docker);
}

#[test]
fn a_report_directory_swapped_for_a_symlink_is_never_read_on_docker() {
    docker_base_image();
    util::reach::a_symlinked_report_directory_is_never_read(Executor::Docker);
}

#[test]
fn a_framework_reach_below_an_added_line_shaped_like_a_header_is_flagged_on_docker() {
    docker_base_image();
    util::patches::a_framework_reach_below_an_added_line_shaped_like_a_header_is_flagged(
        Executor::Docker,
    );
}

#[test]
fn a_traditional_diff_to_a_hidden_test_file_under_a_longer_name_is_reset_on_docker() {
    docker_base_image();
    util::patches::a_traditional_diff_to_a_hidden_test_file_under_a_longer_name_is_reset(
        Executor::Docker,
    );
}

#[test]
fn a_hidden_test_file_renamed_away_deleted_or_blocked_is_restored_and_graded_on_docker() {
    docker_base_image();
    util::patches::a_hidden_test_file_renamed_away_deleted_or_blocked_is_restored_and_graded(
        Executor::Docker,
    );
}

#[test]
fn a_patch_over_the_caps_is_refused_before_anything_is_staged_on_docker() {
    docker_base_image();
    util::patches::a_patch_over_the_caps_is_refused_before_anything_is_staged(Executor::Docker);
}

// ---- no container outlives a build -------------------------------------------------

/// The fixture on docker with a 5 s timeout and a session that sleeps
/// past it.
fn sleeper_fixture() -> Fixture {
    let f = docker_fixture();
    f.default_pipeline();
    let toml = std::fs::read_to_string(f.path().join("pipeline.toml")).unwrap();
    f.project
        .write("pipeline.toml", toml.replace("timeout = 60", "timeout = 5"));
    f.session("evil/sleep.json", "p-1", &hostile(&f, SLEEPER));
    f
}

/// A build of `f` to its end: its process id and what it said.
fn build_with_pid(f: &Fixture) -> (u32, Build) {
    let child = f.project.spawn_piped(&["build", "--json"]);
    let pid = child.id();
    let b = Build::from(util::Run::from(child.wait_with_output().unwrap()));
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    (pid, b)
}

#[test]
fn a_timeout_and_a_killed_build_leave_no_container_after_the_next_build() {
    let f = sleeper_fixture();

    // The first build is killed while the sleeper's container runs.
    let mut child = f
        .project
        .command(&["build", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let killed = child.id();
    wait_for_a_long_running_container(killed);
    kill_9(killed);
    child.wait().unwrap();

    // The next build cleans up after it, and its own timed-out run leaves
    // nothing either.
    let (pid, _) = build_with_pid(&f);
    let row = f.row("evil/sleep.json", "exclude");
    assert_eq!(row["verdict"], "unresolved", "{row:#?}");
    // On a loaded machine the detail goes on with the time the run waited
    // for a CPU ("; it ran …"): the cut itself is what is asserted.
    let grade = f.grade_record("evil/sleep.json", "exclude");
    let detail = grade["detail"].as_str().unwrap();
    assert!(
        detail == "timed out after 5 s" || detail.starts_with("timed out after 5 s; it ran "),
        "{grade:#}"
    );
    assert_eq!(
        containers_of(killed),
        Vec::<String>::new(),
        "left by the killed build"
    );
    assert_eq!(
        containers_of(pid),
        Vec::<String>::new(),
        "left by the next build"
    );
}

#[test]
fn a_build_removes_every_container_of_its_own_the_timed_out_and_the_never_run_ones_too() {
    let f = sleeper_fixture();
    // What the daemon does with assay's containers, watched live: its
    // event history keeps only the last few hundred.
    let mut events = Command::new("docker")
        .args([
            "events",
            "--filter",
            "type=container",
            "--filter",
            "label=assay.run=1",
            "--format",
            "{{.Action}} {{index .Actor.Attributes \"assay.pid\"}}",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let child = f
        .project
        .command(&["build", "--json"])
        .env("ASSAY_PHASES", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let b = Build::from(util::Run::from(child.wait_with_output().unwrap()));
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    let grade = f.grade_record("evil/sleep.json", "exclude");
    let detail = grade["detail"].as_str().unwrap();
    assert!(detail.starts_with("timed out after 5 s"), "{grade:#}");
    // Once the build has ended, nothing of it is on the daemon.
    assert_eq!(
        containers_of(pid),
        Vec::<String>::new(),
        "left by the build"
    );
    std::thread::sleep(Duration::from_secs(1));
    events.kill().unwrap();
    let seen = String::from_utf8(events.wait_with_output().unwrap().stdout).unwrap();
    let count = |action: &str| {
        let line = format!("{action} {pid}");
        seen.lines().filter(|l| *l == line).count()
    };
    // Every one created was removed, those started ahead and parked that
    // no run took among them.
    let (created, destroyed) = (count("create"), count("destroy"));
    assert_eq!(destroyed, created, "created {created}, removed {destroyed}");
    let fleet = b
        .run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("phase docker fleet: "))
        .unwrap_or_else(|| panic!("no fleet figures: {}", b.run.stderr));
    let figure = |name: &str| -> u64 {
        let at = fleet.find(&format!("{name}: ")).unwrap() + name.len() + 2;
        fleet[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(
        figure("claimed") > 0,
        "no run took a parked container: {fleet}"
    );
    assert!(
        figure("unused") > 0,
        "no parked container was left unused: {fleet}"
    );
}

/// Whether container `id` is parked: started ahead, its first process
/// still the outer shell waiting for its go-ahead.
fn parked(id: &str) -> bool {
    // One that ended since it was listed is not parked either.
    Command::new("docker")
        .args(["top", id, "-o", "args"])
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("IFS= read -r c"))
}

/// Waits until build `pid` has one container running for over a second: the
/// sleeper, not a screening run (those take a fraction of one), nor one
/// started ahead and parked for a next run.
fn wait_for_a_long_running_container(pid: u32) {
    let started = Instant::now();
    let mut seen: Option<(String, Instant)> = None;
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no long-running container of build {pid}"
        );
        let mut now = running_containers_of(pid);
        now.retain(|id| !parked(id));
        match (&seen, now.first()) {
            (Some((id, since)), Some(current))
                if id == current && since.elapsed() > Duration::from_millis(1500) =>
            {
                break;
            }
            (Some((id, _)), Some(current)) if id == current => {}
            (_, Some(current)) => seen = Some((current.clone(), Instant::now())),
            (_, None) => seen = None,
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_ctrl_c_stops_the_build_and_removes_its_containers_at_once() {
    let f = docker_fixture();
    f.default_pipeline();
    let (pid, stderr) = interrupted_build(&f, wait_for_a_long_running_container);
    // Nothing waits for the next build: the interrupted one removed its own.
    assert_eq!(
        containers_of(pid),
        Vec::<String>::new(),
        "left by the interrupted build: {stderr}"
    );
    // The cache is sound and the next build completes.
    f.project.run(&["verify", "--cache-only"]).code(0);
    let toml = std::fs::read_to_string(f.path().join("pipeline.toml")).unwrap();
    f.project
        .write("pipeline.toml", toml.replace("timeout = 60", "timeout = 5"));
    f.build_ok();
}

/// `kill -9 PID`.
fn kill_9(pid: u32) {
    let status = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

// ---- environments are images -------------------------------------------------------

/// The fixture with a setup of its own (so the image is this test's alone)
/// and `lines` in `[env]`.
fn own_image_fixture(lines: &str) -> Fixture {
    let f = docker_fixture();
    f.default_pipeline();
    let tag = unique("own");
    with_env_lines(&f, &format!("setup = [\"echo {tag} > marker\"]\n{lines}"));
    f.session("a/fix.json", "p-1", &f.fix1());
    f.session("a/mul.json", "p-2", &f.fix2());
    f
}

/// The image every task of `f` was certified in (they share one).
fn the_image(f: &Fixture) -> String {
    let tasks = tasks(f);
    let images: std::collections::BTreeSet<&str> =
        tasks.values().filter_map(|t| t["image"].as_str()).collect();
    assert_eq!(images.len(), 1, "{tasks:#?}");
    images.into_iter().next().unwrap().to_owned()
}

#[test]
fn an_exported_image_removed_from_the_daemon_is_loaded_back_with_its_id() {
    let f = own_image_fixture("export = true");
    let first = f.build_ok();
    // Two tasks, one env key: one environment, one image.
    assert_eq!(tasks(&f).len(), 2);
    assert_eq!(executed(&first, "env"), 1, "{:?}", first.summary);
    let id = the_image(&f);
    assert_eq!(
        f.grade_record("a/mul.json", "exclude")["image"],
        id.as_str()
    );

    docker(&["image", "rm", "-f", &id]);
    let second = f.build_ok();
    warned(
        &second,
        "env",
        &format!("image {id} was gone from the Docker daemon; loaded back from its saved blob"),
    );
    assert_eq!(executed(&second, "env"), 1);
    // The same id, so the same env output: nothing downstream ran again.
    for kind in ["run", "grade", "task"] {
        assert_eq!(executed(&second, kind), 0, "{kind}: {:?}", second.summary);
    }
    assert_eq!(the_image(&f), id);
    docker(&["image", "inspect", &id]);
    docker(&["image", "rm", "-f", &id]);
}

/// The build warned, through its event stream, on a node of `kind`:
/// `message` is in a `job_warning` event of it.
fn warned(build: &Build, kind: &str, message: &str) {
    assert!(
        build.events.iter().any(|e| e["event"] == "job_warning"
            && e["kind"] == kind
            && e["message"].as_str().is_some_and(|m| m.contains(message))),
        "no warning `{message}` on a {kind} node: {:?}",
        build.events
    );
}

#[test]
fn an_image_lost_without_export_is_rebuilt_and_its_runs_run_again() {
    let f = own_image_fixture("");
    f.build_ok();
    let id = the_image(&f);
    docker(&["image", "rm", "-f", &id]);
    let second = f.build_ok();
    let rebuilt = the_image(&f);
    assert_ne!(rebuilt, id);
    warned(
        &second,
        "env",
        &format!("image {id} was gone from the Docker daemon (not exported); rebuilt as {rebuilt}"),
    );
    assert!(executed(&second, "run") > 0, "{:?}", second.summary);
    assert_eq!(
        f.grade_record("a/fix.json", "exclude")["image"],
        rebuilt.as_str()
    );
    docker(&["image", "rm", "-f", &rebuilt]);
}

// ---- failures are fast and clear ------------------------------------------------------

#[test]
fn an_unreachable_daemon_fails_the_build_at_once() {
    let f = Fixture::on(Executor::Docker);
    f.default_pipeline();
    let started = Instant::now();
    let run = util::Run::from(
        f.project
            .command(&["build"])
            .env(
                "DOCKER_HOST",
                format!("unix://{}/no.sock", f.path().display()),
            )
            .output()
            .unwrap(),
    )
    .code(7);
    says(
        &run,
        &[
            "cannot reach the Docker daemon",
            "or build with `--executor local`",
        ],
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{}",
        run.stderr
    );
    assert!(!f.path().join("release").exists());
}

#[test]
fn an_absent_base_image_names_the_script_that_builds_it() {
    let f = Fixture::on(Executor::Docker);
    f.default_pipeline();
    let missing = unique("assay-absent").to_lowercase();
    with_env_lines(&f, &format!("base_image = \"{missing}:v1\""));
    let run = f.project.run(&["build"]).code(7);
    says(
        &run,
        &[
            &format!("base image `{missing}:v1` is not in the Docker daemon"),
            &format!("build it with `scripts/base-image.sh {missing}:v1`"),
            "point `[env] base_image` at it",
        ],
    );
}

/// Asserts that stderr says each of `needles`, however the diagnostic
/// wrapped it to the terminal's width.
fn says(run: &util::Run, needles: &[&str]) {
    let squeezed = |text: &str| -> String {
        text.chars()
            .filter(|c| !c.is_whitespace() && *c != '│')
            .collect()
    };
    for needle in needles {
        assert!(
            squeezed(&run.stderr).contains(&squeezed(needle)),
            "stderr lacks {needle:?}:\n{}",
            run.stderr
        );
    }
}

#[test]
fn a_failing_setup_command_and_its_log_are_the_environments_and_certify_nothing() {
    let f = docker_fixture();
    f.default_pipeline();
    let tag = unique("fails");
    with_env_lines(
        &f,
        &format!("setup = [\"echo {tag}\", \"echo about to fail; exit 3\", \"echo never\"]"),
    );
    // Every task's environment is broken: the build says so and exits 8.
    let b = f.build(&[]);
    b.run
        .environment_broken("`echo about to fail; exit 3` exited");
    warned(
        &b,
        "env",
        "setup command 1 `echo about to fail; exit 3` exited",
    );
    for (id, task) in tasks(&f) {
        assert_eq!(task["certified"], false, "{id}: {task:#}");
        assert!(
            task["uncertified_because"]
                .to_string()
                .contains("environment's setup failed"),
            "{id}: {task:#}"
        );
    }
    let env = b
        .names("node_finished")
        .into_iter()
        .find(|n| n.starts_with("env:"))
        .expect("an env node ran");
    let explained: Value =
        serde_json::from_str(&f.project.run(&["explain", &env, "--json"]).code(0).stdout).unwrap();
    let shown = f
        .project
        .run(&["show", explained["output"].as_str().unwrap()])
        .code(0);
    let record: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(record["ok"], false, "{record:#}");
    assert_eq!(record["exit_code"], 3, "{record:#}");
    assert_eq!(record["executor"], "docker", "{record:#}");
    assert_eq!(
        record["failed_command"], "echo about to fail; exit 3",
        "{record:#}"
    );
    // The setup log: the failing command's output, and which command it was.
    let log = f
        .project
        .run(&["show", record["setup_log"].as_str().unwrap()])
        .code(0)
        .stdout;
    assert!(log.contains(&tag) && log.contains("about to fail"), "{log}");
    assert!(
        log.contains("assay: setup command 1 `echo about to fail; exit 3` exited with 3"),
        "{log}"
    );
    assert!(!log.contains("never"), "{log}");
}

// ---- an environment per source ----------------------------------------------------------

#[test]
fn two_sources_run_in_their_own_environments_local_and_docker() {
    let f = docker_fixture();
    // A second repository whose test passes only in environment `b`.
    let mut q = Repo::new(&f.project, "repo2");
    let env_test = "\
import os
import unittest

from lib import num


class TestNum(unittest.TestCase):
    def test_env(self):
        with open(os.path.join(os.environ[\"ASSAY_ENV\"], \"which\")) as f:
            self.assertEqual(f.read().strip(), \"b\")
";
    q.put("lib/__init__.py", "")
        .put("lib/num.py", "def double(x):\n    return x + 1\n")
        .put("tests/__init__.py", "")
        .put("tests/test_num.py", env_test);
    q.commit("Initial commit");
    let fixed_test = format!(
        "{env_test}\n    def test_double(self):\n        self.assertEqual(num.double(3), 6)\n"
    );
    q.pr(
        1,
        "Fix double",
        &[
            ("lib/num.py", "def double(x):\n    return x * 2\n"),
            ("tests/test_num.py", &fixed_test),
        ],
    );
    f.project.write("statements/q-1.md", "double(3) is 4.\n");
    let env = |name: &str, executor: &str| {
        format!(
            "[env.{name}]\n{executor}setup = [\"echo {name} > which\"]\ntest_command = \"python3 -m unittest -v\"\nreport = \"unittest\"\ntimeout = 60\n"
        )
    };
    f.project.write(
        "pipeline.toml",
        format!(
            "statements = \"statements\"\n\n[[source]]\nname = \"p\"\npath = \"repo\"\nenv = \"a\"\n\n[[source]]\nname = \"q\"\npath = \"repo2\"\nenv = \"b\"\n\n{}\n{}",
            env("a", ""),
            env("b", "executor = \"docker\"\n"),
        ),
    );
    let b = f.build_ok();
    assert_eq!(executed(&b, "env"), 2, "{:?}", b.summary);
    let tasks = tasks(&f);
    let q1 = &tasks["q-1"];
    assert_eq!(q1["certified"], true, "{q1:#}");
    assert_eq!(q1["executor"], "docker", "{q1:#}");
    assert!(
        q1["PASS_TO_PASS"].to_string().contains("test_env"),
        "{q1:#}"
    );
    for id in ["p-1", "p-2"] {
        assert_eq!(tasks[id]["certified"], true, "{:#}", tasks[id]);
        assert!(tasks[id].get("executor").is_none(), "{:#}", tasks[id]);
        assert_ne!(tasks[id]["env"], q1["env"]);
    }
}

#[test]
fn a_warm_cache_is_each_runs_own_and_never_poisoned_on_docker() {
    docker_base_image();
    a_warm_cache_is_never_poisoned_for_the_next_run(Executor::Docker);
}

#[test]
fn tampering_with_the_runner_from_its_own_process_is_seen_by_the_audit_hook_on_docker() {
    docker_base_image();
    util::audit::tampering_with_the_runner_is_evidence(Executor::Docker);
}

#[test]
fn the_audit_hooks_findings_reach_assay_when_stderr_is_the_report_file_on_docker() {
    docker_base_image();
    util::audit::a_report_file_does_not_take_the_hooks_channel(Executor::Docker);
}
