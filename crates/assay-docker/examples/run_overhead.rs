//! Per-run overhead of [`Docker::run`] against the plain Docker CLI on the
//! same image: `N` runs of `python3 -c 'pass'` each (one warm-up run first),
//! ours over a one-file tree with the full lock-down, the CLI's as
//! `docker run --rm --network none IMAGE python3 -c 'pass'`.
//!
//! Usage: `cargo run -p assay-docker --example run_overhead -- [N]` (default
//! 10); needs the base image (`scripts/base-image.sh`).

// A measurement tool: a failure should stop it with its message.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use assay_docker::{ContainerRun, Docker, HOME_DIR, ImageSpec, Limits, RunUser, TreeMount};

#[tokio::main]
async fn main() {
    let runs: u32 = std::env::args()
        .nth(1)
        .map_or(10, |n| n.parse().expect("N is a number"));
    let docker = Docker::connect().await.unwrap();
    let env = BTreeMap::from([
        ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
        ("HOME".to_owned(), HOME_DIR.to_owned()),
    ]);
    let image = docker
        .build_image(&ImageSpec {
            base: "assay-base:bookworm".to_owned(),
            key_files: BTreeMap::new(),
            guard: BTreeMap::new(),
            setup: Vec::new(),
            env: env.clone(),
            user: RunUser::default(),
            writable: Vec::new(),
            timeout: Duration::from_secs(120),
            log_cap: 1 << 20,
            limits: Limits::default(),
        })
        .await
        .unwrap()
        .id;
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("mod.py"), "x = 1\n").unwrap();
    let spec = ContainerRun {
        image: image.clone(),
        tree,
        tree_mount: TreeMount::Upload,
        binds: Vec::new(),
        command: "python3 -c 'pass'".to_owned(),
        env,
        timeout: Duration::from_secs(60),
        log_path: work.path().join("run.log"),
        log_cap: 1 << 20,
        report: None,
        limits: Limits::default(),
        tmp_size: 64 << 20,
        home_size: 16 << 20,
        watch: Vec::new(),
        protect: Vec::new(),
    };

    let ours = || async {
        let out = docker.run(&spec).await.unwrap();
        assert_eq!(out.exit_code, Some(0));
    };
    let cli = || {
        let status = Command::new("docker")
            .args(["run", "--rm", "--network", "none", image.as_str()])
            .args(["python3", "-c", "pass"])
            .status()
            .unwrap();
        assert!(status.success());
    };
    ours().await;
    cli();
    // Interleaved, so that load from elsewhere on the machine falls on both.
    let (mut ours_time, mut cli_time) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..runs {
        let start = Instant::now();
        ours().await;
        ours_time += start.elapsed();
        let start = Instant::now();
        cli();
        cli_time += start.elapsed();
    }
    let per = |total: Duration| total.as_secs_f64() * 1000.0 / f64::from(runs);
    println!(
        "{runs} runs: Docker::run {:.0} ms/run, docker run --rm {:.0} ms/run, ratio {:.2}",
        per(ours_time),
        per(cli_time),
        ours_time.as_secs_f64() / cli_time.as_secs_f64()
    );
}
