//! The slurm executor through the real binary, on a real two-node Slurm
//! cluster on loopback (`scripts/slurm-dev-cluster.sh`: munged, slurmctld,
//! two slurmd), started by the test in its own directory and taken down
//! after it: the grading fixture gives the local verdicts with its runs on
//! both nodes, hostile code is confined on the workers, and a cluster that
//! does not answer fails the build at once, saying what to check.
//!
//! Slurm (`slurm-wlm`, `munge`) must be installed (`.ci/run` does): these
//! tests fail, they never skip.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use util::agents::{KEY, agent_fixture, holding, probe_fixture, scripted};
use util::attacks::{hostile_code_is_confined, interrupted_build};
use util::fixture::*;
use util::llm::Llm;
use util::processes::processes_with_env;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/slurm-dev-cluster.sh");

/// A cluster of this test process, up until dropped.
struct Cluster {
    dir: PathBuf,
}

impl Cluster {
    fn up(dir: &Path) -> Cluster {
        let out = Command::new(SCRIPT).args(["up"]).arg(dir).output().unwrap();
        assert!(
            out.status.success(),
            "the dev cluster did not come up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Cluster {
            dir: dir.to_owned(),
        }
    }

    fn conf(&self) -> String {
        self.dir.join("slurm.conf").display().to_string()
    }

    /// `CMD ARGS` against this cluster; its stdout.
    fn slurm(&self, cmd: &str, args: &[&str]) -> String {
        let out = Command::new(cmd)
            .args(args)
            .env("SLURM_CONF", self.conf())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(SCRIPT).args(["down"]).arg(&self.dir).status();
    }
}

/// The cluster of this test process (`SLURM_CONF` goes to every assay the
/// process runs), in a directory of its own. It is taken down when the
/// test function that made it ends: the tests here run in a few functions,
/// each in order, one function's cluster at a time, under
/// [`with_cluster`].
fn with_cluster(test: impl FnOnce(&Cluster)) {
    // One cluster at a time: the test functions take turns.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE.lock().unwrap_or_else(|p| p.into_inner());
    // Under this checkout's target/ (the cluster's ports come from its
    // path), the same for every test function: `SLURM_CONF` is set once.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("slurm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cluster = Cluster::up(&dir.join("slurm"));
    util::project::set_env(vec![
        ("SLURM_CONF".into(), cluster.conf()),
        ("OPENAI_API_KEY".into(), KEY.into()),
    ]);
    test(&cluster);
    // No allocation of a build outlives it.
    no_allocation_held(&cluster, "after the tests");
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}

/// No allocation of a build is left in the queue but as COMPLETING: one the
/// build cancelled as it ended shows so while the nodes' daemons end its
/// processes, on a loaded machine past the moment the build exits; one
/// left running or pending is what this catches.
fn no_allocation_held(cluster: &Cluster, what: &str) {
    let left = cluster.slurm("squeue", &["-h", "-o", "%i %j %T"]);
    let held = |l: &str| l.contains("assay-") && !l.ends_with("COMPLETING");
    assert!(
        !left.lines().any(held),
        "{what}: jobs left in the queue: {left}"
    );
}

/// The nodes the runs of a build executed on (their records' `node`).
fn run_nodes(f: &Fixture, b: &util::Build) -> BTreeSet<String> {
    runs_on(f, b, "run:")
}

/// The nodes the run nodes whose names start with `prefix` executed on.
fn runs_on(f: &Fixture, b: &util::Build, prefix: &str) -> BTreeSet<String> {
    b.names("node_finished")
        .iter()
        .filter(|n| n.starts_with(prefix))
        .filter_map(|n| {
            f.project.output_record(n)["node"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn slurm_executor() {
    util::progress::phase("test slurm_executor");
    with_cluster(|cluster| {
        util::progress::phase(
            "step the_grading_fixture_gets_the_same_verdicts_on_slurm_as_on_local_with_runs_on_both_nodes",
        );
        the_grading_fixture_gets_the_same_verdicts_on_slurm_as_on_local_with_runs_on_both_nodes(
            cluster,
        );
        util::progress::phase("step hostile_code_is_confined_on_the_workers");
        hostile_code_is_confined_on_the_workers();
        // What a graded run must not forge or reach, on the workers.
        util::progress::phase("step forged_reports_are_caught");
        util::forgery::forged_reports_are_caught(Executor::Slurm);
        util::progress::phase("step the_runner_and_the_hidden_tests_are_out_of_reach");
        util::reach::the_runner_and_the_hidden_tests_are_out_of_reach(Executor::Slurm);
        util::progress::phase("step a_symlinked_report_directory_is_never_read");
        util::reach::a_symlinked_report_directory_is_never_read(Executor::Slurm);
        util::progress::phase(
            "step a_hidden_test_file_renamed_away_deleted_or_blocked_is_restored_and_graded",
        );
        util::patches::a_hidden_test_file_renamed_away_deleted_or_blocked_is_restored_and_graded(
            Executor::Slurm,
        );
        util::progress::phase("step a_run_filling_its_tree_is_stopped_at_its_write_limit");
        util::attacks::a_run_filling_its_tree_is_stopped_at_its_write_limit(
            Executor::Slurm,
            Some(64 << 20),
            15,
            10,
        );
        util::progress::phase("step a_run_whose_node_dies_is_retried_on_the_other_node");
        a_run_whose_node_dies_is_retried_on_the_other_node(cluster);
        util::progress::phase(
            "step a_run_slurm_cancels_on_every_try_is_the_infrastructures_and_runs_again",
        );
        a_run_slurm_cancels_on_every_try_is_the_infrastructures_and_runs_again(cluster);
        util::progress::phase("step a_ctrl_c_stops_the_build_and_leaves_no_job_queued");
        a_ctrl_c_stops_the_build_and_leaves_no_job_queued(cluster);
        util::progress::phase("step a_cluster_that_does_not_answer_fails_the_build_at_once");
        a_cluster_that_does_not_answer_fails_the_build_at_once(cluster);
    });
}

fn the_grading_fixture_gets_the_same_verdicts_on_slurm_as_on_local_with_runs_on_both_nodes(
    cluster: &Cluster,
) {
    let local = Fixture::new();
    let slurm = Fixture::on(Executor::Slurm);
    let builds: Vec<util::Build> = [&local, &slurm]
        .iter()
        .map(|f| {
            f.default_pipeline();
            every_verdict(f);
            f.build_ok()
        })
        .collect();
    same_verdicts(&local, &slurm);
    assert_eq!(
        run_nodes(&slurm, &builds[1]),
        BTreeSet::from(["n1".to_owned(), "n2".to_owned()]),
        "the runs landed on both nodes"
    );
    // A local run records no node.
    assert!(run_nodes(&local, &builds[0]).is_empty());
    every_run_went_through_the_store_and_was_shown_per_node(&slurm, &builds[1]);
    // The release names the nodes its graded runs executed on, and still
    // verifies from the cache; a local release names none.
    let provenance = |f: &Fixture| {
        let manifest = std::fs::read(f.path().join("release/manifest.json")).unwrap();
        let m: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
        m["provenance"].clone()
    };
    let graded_on = provenance(&slurm)["graded_on"].clone();
    let nodes: BTreeSet<&str> = graded_on
        .as_object()
        .unwrap_or_else(|| panic!("{graded_on}"))
        .keys()
        .map(String::as_str)
        .collect();
    assert!(
        !nodes.is_empty() && nodes.is_subset(&BTreeSet::from(["n1", "n2"])),
        "{graded_on}"
    );
    assert!(provenance(&local).get("graded_on").is_none());
    slurm.project.run(&["verify"]).code(0);
    // Re-executing the runs takes an allocation of its own, released when
    // it ends (not left to its time limit).
    slurm
        .project
        .run(&["verify", "--reexecute", "run"])
        .code(0)
        .stdout_has("re-executed");
    no_allocation_held(cluster, "after verify --reexecute");
    // Nothing is run twice: a second build on the cluster reuses every node.
    let again = slurm.build_ok();
    assert_eq!(again.summary.total.executed, 0, "{:?}", again.summary);
}

/// What reached the nodes came through packs of the shared cache: the one
/// environment, unpacked once on each node into its own cache (no
/// half-unpacked copy, no run's directory left), the same bytes as the
/// coordinator's; and the `--json` stream said where each run went.
fn every_run_went_through_the_store_and_was_shown_per_node(f: &Fixture, b: &util::Build) {
    let listed = |dir: PathBuf| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let envs: Vec<Vec<String>> = ["n1", "n2"]
        .iter()
        .map(|n| listed(f.node_cache().join(n).join("envs")))
        .collect();
    assert_eq!(envs[0].len(), 1, "one environment, unpacked once: {envs:?}");
    assert_eq!(envs[0], envs[1], "the same pack on both nodes");
    for n in ["n1", "n2"] {
        assert!(listed(f.node_cache().join(n).join("runs")).is_empty());
        let unpacked = f.node_cache().join(n).join("envs").join(&envs[0][0]);
        let shared: Vec<PathBuf> = std::fs::read_dir(f.project.path().join("cache/envs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(shared.len(), 1);
        assert_eq!(files_of(&unpacked), files_of(&shared[0]), "{n}");
    }
    // Each executed run was queued, ran on a node and was done there.
    let states = |state: &str| -> BTreeSet<(String, String)> {
        b.events
            .iter()
            .filter(|e| e["event"] == "job_state" && e["state"] == state)
            .map(|e| {
                (
                    e["name"].as_str().unwrap().to_owned(),
                    e["place"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    // The run nodes that ran a process (not those with no tree to run).
    let executed: BTreeSet<String> = b
        .names("node_finished")
        .into_iter()
        .filter(|n| n.starts_with("run:") && f.project.output_record(n)["node"].is_string())
        .collect();
    assert!(executed.len() > 10, "{executed:?}");
    let queued: BTreeSet<String> = states("queued").into_iter().map(|(n, _)| n).collect();
    assert!(executed.is_subset(&queued), "{executed:?} {queued:?}");
    // No step twice: each executed run went to a node once, and each
    // recheck once per check or rerun it recorded.
    let mut steps: std::collections::BTreeMap<String, usize> = Default::default();
    for e in b
        .events
        .iter()
        .filter(|e| e["event"] == "job_state" && e["state"] == "running")
    {
        *steps
            .entry(e["name"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    for (name, n) in &steps {
        let expected = if name.starts_with("recheck:") {
            let r = f.project.output_record(name);
            let checks = ["base", "new"]
                .iter()
                .filter(|c| r[**c].is_object())
                .count();
            checks + r["reruns"].as_array().unwrap().len()
        } else if name.starts_with("certify:") {
            // The mutants' reading, and the sealed one where a hidden file
            // has an assertion to seal (docs/security.md, "Sealed
            // expectations").
            let r = f.project.output_record(name);
            let sealed = r["certified"]["seals"]
                .as_array()
                .is_some_and(|s| !s.is_empty())
                || r["unsealed"].as_str().is_some_and(|w| {
                    w.starts_with("none of the") || w.starts_with("the sealed reading")
                });
            1 + usize::from(sealed)
        } else {
            1
        };
        assert_eq!(*n, expected, "steps of {name}");
    }
    assert_eq!(
        steps.keys().filter(|n| n.starts_with("run:")).count(),
        executed.len()
    );
    let done = states("done");
    for name in &executed {
        let node = f.project.output_record(name)["node"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            done.contains(&(name.clone(), node.clone())),
            "{name} on {node}: {done:?}"
        );
        assert!(states("running").contains(&(name.clone(), node)));
    }
}

/// Path -> bytes of every file under `dir` (links as their target).
fn files_of(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(
                    rel,
                    std::fs::read_link(&p)
                        .unwrap()
                        .display()
                        .to_string()
                        .into_bytes(),
                );
            } else if meta.is_dir() {
                stack.push(p);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn hostile_code_is_confined_on_the_workers() {
    hostile_code_is_confined(Executor::Slurm);
}

fn a_cluster_that_does_not_answer_fails_the_build_at_once(cluster: &Cluster) {
    let f = Fixture::on(Executor::Slurm);
    f.default_pipeline();
    f.session("a/fix.json", "p-1", &f.fix1());
    // The controller is gone: sinfo fails.
    let _ = Command::new(SCRIPT)
        .args(["down"])
        .arg(&cluster.dir)
        .status();
    let run = f.project.run(&["build"]);
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert!(run.stderr.contains("`sinfo` failed"), "{}", run.stderr);
    assert!(run.stderr.contains("SLURM_CONF"), "{}", run.stderr);
    assert!(run.stderr.contains("--executor local"), "{}", run.stderr);
}

/// A graded run that sleeps `secs` before the package works: `fix1` with
/// a slow import.
fn slow_fix(f: &Fixture, secs: u32) -> String {
    f.diff1(&[
        ("pkg/ops.py", Some(OPS_SUB)),
        (
            "pkg/__init__.py",
            Some(&format!("import time\n\ntime.sleep({secs})\n")),
        ),
    ])
}

/// A `build --json` started (its output piped) of a fixture whose one
/// session `a/slow.json` sleeps `secs` in its graded runs.
fn building_a_slow_session(secs: u32) -> (Fixture, std::process::Child) {
    let f = Fixture::on(Executor::Slurm);
    // Cut at the environment's timeout, not at a task's from the readings
    // (5 s at the floor): the session is slow, not hung.
    f.pipeline("", 1 << 20, "timeout_factor = 0");
    f.session("a/slow.json", "p-1", &slow_fix(&f, secs));
    let child = f.project.spawn_piped(&["build", "--json"]);
    (f, child)
}

/// Waits until a step of this cluster has run for over `secs` seconds (a
/// graded sleeper, not a screening run); the node it runs on.
fn wait_for_a_long_step(cluster: &Cluster, secs: u64) -> String {
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "no step ran for {secs} s"
        );
        // Steps: id, node, time (m:ss).
        let steps = cluster.slurm("squeue", &["-h", "-s", "-o", "%i %N %M"]);
        for line in steps.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let [id, node, time] = f[..]
                && !id.ends_with(".batch")
                && let Some((m, sec)) = time.split_once(':')
                && m.parse::<u64>().unwrap_or(0) * 60 + sec.parse::<u64>().unwrap_or(0) > secs
            {
                return node.to_owned();
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn a_run_whose_node_dies_is_retried_on_the_other_node(cluster: &Cluster) {
    let (f, child) = building_a_slow_session(6);
    let node = wait_for_a_long_step(cluster, 1);
    // The node dies: its slurmd, and the run's processes on it.
    let pid = std::fs::read_to_string(cluster.dir.join(format!("run/slurmd-{node}.pid"))).unwrap();
    Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .unwrap();
    let ours: BTreeSet<u32> = processes_with_env("SLURM_CONF", &cluster.conf())
        .into_iter()
        .collect();
    for pid in processes_with_env("SLURMD_NODENAME", &node) {
        if ours.contains(&pid) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
    let out = child.wait_with_output().unwrap();
    let b = util::Build::from(util::Run::from(out));
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    let row = f.row("a/slow.json", "exclude");
    assert_eq!(row["verdict"], "resolved", "{row:#?}");
    // The graded runs (the one killed among them) ran on the node left.
    let survivor = if node == "n1" { "n2" } else { "n1" };
    assert_eq!(
        runs_on(&f, &b, "run:a/slow.json:"),
        BTreeSet::from([survivor.to_owned()])
    );
    // The killed try is counted, with why, in the record of the run it
    // became, once. On a loaded machine both graded runs of the session
    // can be on the node when it dies: each is then retried once.
    let retried: Vec<usize> = b
        .names("node_finished")
        .iter()
        .filter(|n| n.starts_with("run:"))
        .map(|n| {
            f.project.output_record(n)["retried"]
                .as_array()
                .map_or(0, Vec::len)
        })
        .filter(|&n| n > 0)
        .collect();
    assert!(
        (1..=2).contains(&retried.len()) && retried.iter().all(|&n| n == 1),
        "the killed run(s) retried once each: {retried:?}"
    );
    // The dead node comes back for the tests after this one.
    let out = Command::new("slurmd")
        .args(["-f", &cluster.conf(), "-N", &node])
        .env("SLURM_CONF", cluster.conf())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Slurm cancels (as a preemption would) every step that has run for over
/// a second: the graded runs of the slow session end without an outcome on
/// every try. They are retried, then recorded as lost: the grade is
/// `ineligible`, the infrastructure's fault, never the agent's; and the
/// next build, with the cluster left alone, runs them again (a lost run is
/// no cache hit) and grades the session as it is.
fn a_run_slurm_cancels_on_every_try_is_the_infrastructures_and_runs_again(cluster: &Cluster) {
    let (f, mut child) = building_a_slow_session(6);
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    let mut cancelled = BTreeSet::new();
    while child.try_wait().unwrap().is_none() {
        let steps = cluster.slurm("squeue", &["-h", "-s", "-o", "%i %M"]);
        for line in steps.lines() {
            // A step past 2 s is a graded run of the slow session (it
            // sleeps 6 s); screening runs take well under a second.
            if let [id, time] = line.split_whitespace().collect::<Vec<_>>()[..]
                && !id.ends_with(".batch")
                && !id.ends_with(".extern")
                && let Some((m, s)) = time.split_once(':')
                && m.parse::<u64>().unwrap_or(0) * 60 + s.parse::<u64>().unwrap_or(0) > 2
            {
                cluster.slurm("scancel", &[id]);
                cancelled.insert(id.to_owned());
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let status = child.wait().unwrap();
    let stdout = reader.join().unwrap();
    assert!(status.success(), "{stdout}");
    assert!(cancelled.len() >= 3, "{cancelled:?}");
    let row = f.row("a/slow.json", "exclude");
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("ineligible", "infrastructure"),
        "{row:#?}"
    );
    assert!(
        f.grade_record("a/slow.json", "exclude")["detail"]
            .as_str()
            .unwrap()
            .contains("the next build runs it again"),
        "{row:#?}"
    );
    // The stream said so: tries retried, then the run lost.
    let events = util::run::parse_events(&stdout);
    let said = |state: &str| {
        events
            .iter()
            .any(|e| e["event"] == "job_state" && e["state"] == state)
    };
    assert!(said("retried") && said("lost"), "{stdout}");
    // Left alone, the cluster runs them: the lost runs are not reused.
    let again = f.build_ok();
    assert!(
        again
            .names("node_finished")
            .iter()
            .any(|n| n.starts_with("run:a/slow.json:")),
        "{:?}",
        again.summary
    );
    let row = f.row("a/slow.json", "exclude");
    assert_eq!(row["verdict"], "resolved", "{row:#?}");
    // And once graded, nothing is run again.
    assert_eq!(f.build_ok().summary.total.executed, 0);
}

fn a_ctrl_c_stops_the_build_and_leaves_no_job_queued(cluster: &Cluster) {
    let f = Fixture::on(Executor::Slurm);
    f.default_pipeline();
    let toml = std::fs::read_to_string(f.path().join("pipeline.toml")).unwrap();
    f.project
        .write("pipeline.toml", toml.replace("timeout = 60", "timeout = 5"));
    interrupted_build(&f, |_| {
        wait_for_a_long_step(cluster, 1);
    });
    let started = Instant::now();
    loop {
        let left = cluster.slurm("squeue", &["-h", "-o", "%i %j %T"]);
        if !left.contains("assay-") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "left queued by the interrupted build: {left}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The next build resumes: what finished before ctrl-c is reused, only
    // the rest runs (the sleeper, to its timeout: the agent's).
    let again = f.build_ok();
    let reused: Vec<String> = again
        .names("node_reused")
        .into_iter()
        .filter(|n| n.starts_with("run:p-"))
        .collect();
    assert!(!reused.is_empty(), "{:?}", again.summary);
    let executed = again.names("node_finished");
    assert!(
        executed
            .iter()
            .any(|n| n.starts_with("run:evil/sleep.json:")),
        "{executed:?}"
    );
    assert!(executed.iter().all(|n| !reused.contains(n)));
    assert_eq!(f.row("evil/sleep.json", "exclude")["fault"], "agent");
}

/// `assay plan` says how many test runs would go to the cluster (no
/// cluster needed: nothing runs), and says nothing of it on this machine.
#[test]
fn plan_counts_the_runs_bound_for_the_cluster() {
    util::progress::phase("test plan_counts_the_runs_bound_for_the_cluster");
    for executor in [Executor::Slurm, Executor::Local] {
        let f = Fixture::on(executor);
        f.default_pipeline();
        f.session("a/fix.json", "p-1", &f.fix1());
        let out = f.project.run(&["plan"]).code(0).stdout;
        let runs = out
            .lines()
            .filter(|l| l.starts_with("run      run:") || l.starts_with("maybe    run:"))
            .count();
        assert!(runs > 0, "{out}");
        let line = out
            .lines()
            .find(|l| l.starts_with("test runs that would or may execute:"));
        match executor {
            Executor::Slurm => {
                // Each recheck may rerun its failing tests ([grade] reruns = 2).
                let rechecks = out
                    .lines()
                    .filter(|l| {
                        l.starts_with("run      recheck:") || l.starts_with("maybe    recheck:")
                    })
                    .count();
                assert!(rechecks > 0, "{out}");
                assert_eq!(
                    line,
                    Some(
                        format!(
                            "test runs that would or may execute: {runs} on slurm, and up to {} reruns and checks inside {rechecks} rechecks",
                            2 * rechecks
                        )
                        .as_str()
                    ),
                    "{out}"
                )
            }
            _ => assert_eq!(line, None, "{out}"),
        }
    }
}

/// Agents' attempts as job steps on the nodes: the same answers as on
/// local, confined there, the key on the coordinator alone.
#[test]
fn agents_on_slurm() {
    util::progress::phase("test agents_on_slurm");
    with_cluster(|_| {
        a_scripted_agent_on_slurm_makes_the_same_answers_and_verdicts_as_on_local();
        an_agent_on_a_node_reaches_only_its_endpoint_and_finds_no_key_anywhere();
        sparse_files_in_a_workspace_on_a_node_are_refused_there_unread();
    });
}

/// The nodes each of a build's nodes whose names start with `prefix` was
/// shown running on (`job_state` events).
fn shown_running(b: &util::Build, prefix: &str) -> Vec<(String, String)> {
    b.events
        .iter()
        .filter(|e| e["event"] == "job_state" && e["state"] == "running")
        .filter(|e| e["name"].as_str().unwrap_or("").starts_with(prefix))
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["place"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Whether every place in `placed` is one of the cluster's nodes.
fn on_the_nodes(placed: &[(String, String)]) -> bool {
    !placed.is_empty() && placed.iter().all(|(_, node)| node == "n1" || node == "n2")
}

/// The same scripted agent on local and on the cluster: the same answers
/// (their digests) and verdicts; its attempts ran as steps on the nodes;
/// a second build runs nothing.
fn a_scripted_agent_on_slurm_makes_the_same_answers_and_verdicts_as_on_local() {
    let local = agent_fixture(Executor::Local, &scripted(""));
    let slurm = agent_fixture(Executor::Slurm, &scripted(""));
    local.build_ok();
    let b = slurm.build_ok();
    for id in ["agent/scripted/p-1/0", "agent/scripted/p-2/0"] {
        for arm in ["exclude", "keep"] {
            let (l, s) = (local.row(id, arm), slurm.row(id, arm));
            assert_eq!(l["verdict"], s["verdict"], "{id} {arm}: {l:#?} {s:#?}");
        }
        let patch =
            |f: &Fixture| f.project.output_record(&format!("attempt:{id}"))["patch"].clone();
        assert_eq!(patch(&local), patch(&slurm), "{id}");
    }
    assert_eq!(
        slurm.row("agent/scripted/p-1/0", "exclude")["verdict"],
        "resolved"
    );
    let attempt = slurm.project.output_record("attempt:agent/scripted/p-1/0");
    assert_ne!(attempt["patch"], "", "{attempt}");
    let log = String::from_utf8(slurm.project.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("agent-done"), "{log}");
    let placed = shown_running(&b, "attempt:");
    assert_eq!(placed.len(), 2, "each attempt one step: {placed:?}");
    assert!(on_the_nodes(&placed), "{placed:?}");
    // No attempt's private directory is left on a node.
    for n in ["n1", "n2"] {
        let runs = slurm.node_cache().join(n).join("runs");
        if runs.is_dir() {
            assert_eq!(std::fs::read_dir(&runs).unwrap().count(), 0, "{n}");
        }
    }
    assert_eq!(slurm.build_ok().summary.total.executed, 0);
}

/// The docker attempt's attack, on a node: the agent searches every
/// process's variables and every file it can read for the key, looks for
/// any socket or job file (another attempt's route to the proxy), tries
/// every loopback port of its sandbox, the endpoint's host port and the
/// internet, and writes outside its workspace. It reaches nothing but the
/// proxy and finds no key; meanwhile no process on the host but the
/// coordinator holds the key in its environment (not srun, not the
/// worker); and the key is nowhere in the project or the nodes' caches.
fn an_agent_on_a_node_reaches_only_its_endpoint_and_finds_no_key_anywhere() {
    let llm = Llm::start(|_, _| (200, r#"{"choices":[{"message":{"content":"hi"}}]}"#.into()));
    let probe = format!(
        r#"
import os, socket, stat, urllib.request
secret = "{key}"[::-1].encode()
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    for what in ("environ", "cmdline"):
        try:
            if secret in open("/proc/%s/%s" % (pid, what), "rb").read():
                print("KEY-IN-PROC", pid, what)
        except OSError:
            pass
read = 0
for root, dirs, files in os.walk("/"):
    if root in ("/proc", "/sys", "/dev"):
        dirs[:] = []
        continue
    for name in files:
        path = os.path.join(root, name)
        try:
            mode = os.lstat(path).st_mode
            if stat.S_ISSOCK(mode):
                print("SOCKET", path)
                continue
            if name == "job.json":
                print("JOB-FILE", path)
            if not stat.S_ISREG(mode) or os.path.getsize(path) > (64 << 20):
                continue
            if secret in open(path, "rb").read():
                print("KEY-IN-FILE", path)
            read += 1
        except OSError:
            pass
print("files searched:", read)
open_ports = []
for port in range(1, 65536):
    s = socket.socket(); s.settimeout(0.5)
    # A connection to itself (its own ephemeral port) is no listener.
    if port != 8417 and s.connect_ex(("127.0.0.1", port)) == 0 and s.getsockname() != s.getpeername():
        open_ports.append(port)
    s.close()
print("open loopback ports besides the forwarder's:", open_ports)
for host, port in [("1.1.1.1", 80), ("127.0.0.1", {port})]:
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); print("REACHED", host, port)
    except Exception as e:
        print("unreachable", host, port, type(e).__name__)
for path in ["/assay/in/prompt.md", "/assay/agent/planted", "/assay/env/planted",
             "/etc/planted", "/assay/bin/assay", "{project}/escaped.txt", "{nodes}/planted"]:
    try:
        open(path, "a").write("escaped")
        print("WROTE", path)
    except OSError as e:
        print("not written", path, type(e).__name__)
print("cache visible:", os.path.exists("{cache}"))
print("uid:", os.getuid())
"#,
        key = KEY.chars().rev().collect::<String>(),
        port = llm.port,
        cache = "CACHE",
        project = "PROJECT",
        nodes = "NODES",
    );
    let f = probe_fixture(Executor::Slurm, &llm, &probe);
    f.edit_pipeline(
        "\"NODES/planted\"",
        &format!("\"{}/planted\"", f.node_cache().display()),
    );
    // Every process on the host holding the key in its environment, while
    // the build runs.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut holders = BTreeSet::new();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                for pid in processes_with_env("OPENAI_API_KEY", KEY) {
                    if let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline")) {
                        holders.insert(String::from_utf8_lossy(&c).replace('\0', " "));
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            holders
        })
    };
    let b = f.build_ok();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let holders = watcher.join().unwrap();
    // The coordinator holds it; no step (an attempt's or a test run's:
    // srun, the worker, and so the sandbox they start) and not the
    // allocation's batch step on a node ever does. Only the coordinator's
    // own queries of the queue (squeue, scontrol) run with its environment.
    assert!(
        holders.iter().any(|c| c.contains(" build ")),
        "the watcher saw the coordinator: {holders:?}"
    );
    let elsewhere: Vec<&String> = holders
        .iter()
        .filter(|c| {
            !c.contains(" build ") && !c.starts_with("squeue ") && !c.starts_with("scontrol ")
        })
        .collect();
    assert!(
        elsewhere.is_empty(),
        "the key outside the coordinator: {elsewhere:?}"
    );
    let attempts: Vec<&String> = holders
        .iter()
        .filter(|c| c.contains("slurm-attempt-"))
        .collect();
    assert!(
        attempts.is_empty(),
        "an attempt's step holds the key: {attempts:?}"
    );
    let placed = shown_running(&b, "attempt:agent/probe/");
    assert!(on_the_nodes(&placed), "{placed:?}");
    let attempt = f.project.output_record("attempt:agent/probe/p-1/0");
    let log = String::from_utf8(f.project.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("key-held: assay-proxy-holds-the-key"), "{log}");
    assert!(log.contains("answer: {\"choices\""), "{log}");
    assert!(!log.contains("KEY-IN"), "{log}");
    assert!(!log.contains("JOB-FILE"), "{log}");
    let sockets: Vec<&str> = log.lines().filter(|l| l.starts_with("SOCKET ")).collect();
    assert_eq!(sockets, ["SOCKET /assay/net/proxy.sock"], "{log}");
    let searched: u64 = log
        .lines()
        .find_map(|l| l.strip_prefix("files searched: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(searched > 1000, "the node's files were searched: {log}");
    assert!(
        log.contains("open loopback ports besides the forwarder's: []"),
        "{log}"
    );
    assert!(!log.contains("REACHED"), "{log}");
    assert_eq!(log.matches("unreachable").count(), 2, "{log}");
    assert!(!log.contains("WROTE"), "{log}");
    assert_eq!(log.matches("not written").count(), 7, "{log}");
    assert!(!f.path().join("escaped.txt").exists());
    assert!(!f.node_cache().join("planted").exists());
    assert!(log.contains("cache visible: False"), "{log}");
    assert!(!log.contains("uid: 0"), "{log}");
    // The proxy on the coordinator sent each attempt's one request, with
    // the key.
    let seen = llm.seen();
    assert_eq!(seen.len(), 2, "one request from each attempt: {seen:?}");
    for s in &seen {
        assert_eq!(s.path, "/v1/chat/completions");
        assert_eq!(
            s.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    assert!(attempt.get("infrastructure").is_none(), "{attempt}");
    assert_eq!(
        holding(f.project.path(), KEY.as_bytes()),
        Vec::<String>::new()
    );
}

/// An agent on a node that leaves 3.9 GiB of sparse files in its
/// workspace: refused by their apparent size on the node, never packed or
/// read, graded as locally.
fn sparse_files_in_a_workspace_on_a_node_are_refused_there_unread() {
    let f = agent_fixture(
        Executor::Slurm,
        r#"
[[agent]]
label = "sparse"
model = "m-1"
command = '''
for i in 1 2 3 4; do truncate -s 1000M big$i.bin; done
echo sparse-done
'''
"#,
    );
    let started = Instant::now();
    f.build_ok();
    let attempt = f.project.output_record("attempt:agent/sparse/p-1/0");
    let why = attempt["collect_error"].as_str().unwrap_or_default();
    assert!(
        why.contains("the workspace holds 3.9 GiB of file content (apparent size)")
            && why.contains("over the 1.0 GiB cap"),
        "{attempt:#}"
    );
    assert_eq!(attempt["patch"], "", "{attempt:#}");
    let row = f.row("agent/sparse/p-1/0", "exclude");
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("patch_apply_failed", "agent"),
        "{row:#?}"
    );
    // Nothing of the sparse files was packed: no GiBs crossed back.
    assert!(started.elapsed() < Duration::from_secs(120));
}

#[test]
fn instances_on_slurm() {
    util::progress::phase("test instances_on_slurm");
    util::harbor::base_image();
    with_cluster(|_| an_instance_task_runs_in_containers_of_its_image_on_the_nodes());
}

/// A SWE-bench-family instance under `executor = "slurm"`
/// (docs/instances.md, "On Slurm"): its screening readings, the graded
/// runs of gold and empty predictions and two scripted agents' attempts
/// are steps on the cluster's nodes, each a container of the instance's
/// image on the node's daemon (`sandbox` docker, the node named in the
/// record); the verdicts are what the docker executor gives, and a
/// session that looks for the fix in the image's history finds none; no
/// container of the build is left; a second build executes nothing.
fn an_instance_task_runs_in_containers_of_its_image_on_the_nodes() {
    use util::instances::*;
    let fixed = format!("{CALC}\n\ndef mul(a, b):\n    return a * b\n");
    let p = util::Project::new();
    let node_cache = p.path().join("node-cache");
    let p = p.pipeline(&format!(
        r#"cache = "cache"
release = "release"
sessions = "sessions"

[env]
test_command = "true"
report = "unittest"
executor = "slurm"
slurm = {{ node_cache = "{}" }}

[screen]
repeats = 2

[[instances]]
name = "sb"
path = "sb.jsonl"

[[agent]]
label = "fixer"
model = "script-1"
command = '''
cat > calc.py <<'PY'
{fixed}PY
echo agent-done
'''

[[agent]]
label = "idle"
model = "script-1"
command = "echo idle"
"#,
        node_cache.display()
    ));
    let id = format!("django__slurm-{:x}-1", std::process::id());
    let build_dir = p.path().join("image");
    let r = repository(&build_dir.join("repo"));
    // The image's repository holds the fix on a later branch: a session
    // that looks for it there finds nothing on the nodes either.
    let history = history_patch(&build_dir.join("repo"));
    let _image = Image::build(&build_dir, &[&format!("sweb.eval.x86_64.{id}:latest")]);
    p.write("sb.jsonl", mul_row(&id, &r));
    p.session("history", &format!("sb/{id}"), &history);
    let prediction = |patch: &str| {
        serde_json::json!({"instance_id": id, "model_name_or_path": "model-a", "model_patch": patch})
            .to_string()
    };
    p.write(
        "sessions/preds.jsonl",
        [prediction(&r.gold_patch), prediction("")].join("\n"),
    );

    let b = p.build_json(&[]).code(0);
    assert_eq!(released(&p, &format!("sb/{id}"))["certified"], true);
    assert_eq!(verdict(&p, "preds.jsonl#1"), "resolved");
    assert_eq!(verdict(&p, "preds.jsonl#2"), "unresolved");
    assert_eq!(verdict(&p, "history.json"), "unresolved");
    assert_eq!(verdict(&p, &format!("agent/fixer/sb/{id}/0")), "resolved");
    assert_eq!(verdict(&p, &format!("agent/idle/sb/{id}/0")), "unresolved");

    // Every run of the instance: a container, on a node.
    let runs: Vec<String> = b
        .names("node_finished")
        .into_iter()
        .filter(|n| n.starts_with("run:"))
        .collect();
    assert!(runs.len() >= 6, "three states × two readings: {runs:?}");
    for run in &runs {
        let record = p.output_record(run);
        assert_eq!(record["sandbox"], "docker", "{run}: {record}");
        let node = record["node"].as_str().unwrap_or_default();
        assert!(node == "n1" || node == "n2", "{run} ran on {node:?}");
    }
    let placed = shown_running(&b, "attempt:");
    assert_eq!(placed.len(), 2, "each attempt one step: {placed:?}");
    assert!(on_the_nodes(&placed), "{placed:?}");
    let attempt = p.output_record(&format!("attempt:agent/fixer/sb/{id}/0"));
    let log = String::from_utf8(p.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("agent-done"), "{log}");

    // No container of the build is left on the daemon the nodes share.
    let left = Command::new("docker")
        .args(["ps", "-aq", "--filter", "label=assay.run=1"])
        .args([
            "--filter",
            &format!("ancestor=sweb.eval.x86_64.{id}:latest"),
        ])
        .output()
        .unwrap();
    assert!(left.status.success());
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "");
    assert_eq!(p.build_json(&[]).summary.total.executed, 0);
}
