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

use util::attacks::hostile_code_is_confined;
use util::fixture::*;

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

/// The one cluster of this test process (the tests share it; `SLURM_CONF`
/// goes to every assay the process runs), in a temp dir of its own. It is
/// taken down when the test that made it ends: the tests here run in one
/// function each, in order, under [`with_cluster`].
fn with_cluster(test: impl FnOnce(&Cluster)) {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::up(&dir.path().join("slurm"));
    util::project::set_env(vec![("SLURM_CONF".into(), cluster.conf())]);
    test(&cluster);
    // No allocation of a build outlives it.
    let left = cluster.slurm("squeue", &["-h", "-o", "%i %j %T"]);
    assert!(
        left.lines().all(|l| !l.contains("assay-")),
        "jobs left in the queue: {left}"
    );
}

/// The nodes the runs of a build executed on (their records' `node`).
fn run_nodes(f: &Fixture, b: &util::Build) -> BTreeSet<String> {
    b.names("node_finished")
        .iter()
        .filter(|n| n.starts_with("run:"))
        .filter_map(|n| {
            f.project.output_record(n)["node"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn slurm_executor() {
    with_cluster(|cluster| {
        the_grading_fixture_gets_the_same_verdicts_on_slurm_as_on_local_with_runs_on_both_nodes();
        hostile_code_is_confined_on_the_workers();
        a_cluster_that_does_not_answer_fails_the_build_at_once(cluster);
    });
}

fn the_grading_fixture_gets_the_same_verdicts_on_slurm_as_on_local_with_runs_on_both_nodes() {
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
    // Nothing is run twice: a second build on the cluster reuses every node.
    let again = slurm.build_ok();
    assert_eq!(again.summary.total.executed, 0, "{:?}", again.summary);
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
