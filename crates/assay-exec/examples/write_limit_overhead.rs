//! What the write limit's watchdog costs, and how far past the limit a fast
//! writer gets (docs/performance.md):
//!
//! 1. one measurement of a 10-file and a 10,000-file tree (directories of
//!    100 small files), the tree walk alone and with the scan of the run's
//!    processes for unlinked files;
//! 2. a ~1 s CPU-bound suite over each tree, sandboxed, without and with
//!    the write limit, interleaved, N times each;
//! 3. a writer that fills its tree as fast as it can (100 MiB files, no
//!    pause) under a 1 GiB limit: what the tree held when it was killed.
//!
//! `cargo run --release -p assay-exec --example write_limit_overhead [N]`

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use assay_exec::writes::{Processes, WriteWatch};
use assay_exec::{Bwrap, LimitHit, Limits, RunSpec, Sandbox, run, sandbox};

const SUITE: &str = "python3 -c 'import time\nt = time.time()\nn = 0\nwhile time.time() - t < 1.0:\n    n += 1\nprint(n)'";
const FILL: &str =
    "for i in $(seq 40); do head -c 104857600 /dev/zero > fill-$i; done; echo finished";

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn disk_usage(dir: &Path) -> u64 {
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

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let bwrap = Bwrap::detect().unwrap();
    let path = std::env::var("PATH").unwrap();
    for files in [10, 10_000] {
        let tree = dir.path().join(format!("tree{files}"));
        for i in 0..files {
            let d = tree.join(format!("d{}", i / 100));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(format!("f{i}.py")), format!("x = {i}\n")).unwrap();
        }

        // 1. One measurement.
        let watch = WriteWatch::new(&tree, 1 << 30).unwrap();
        let mut sleeper = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let group = Processes::Tree(i32::try_from(sleeper.id()).unwrap());
        let (mut walk, mut with_procs) = (Vec::new(), Vec::new());
        for _ in 0..21 {
            let t = Instant::now();
            watch.measure(Processes::None).unwrap();
            walk.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            watch.measure(group).unwrap();
            with_procs.push(t.elapsed().as_secs_f64());
        }
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        let (w, p) = (median(&mut walk), median(&mut with_procs));
        let interval = assay_exec::writes::INTERVAL
            .max(Duration::from_secs_f64(p) * assay_exec::writes::COST_SHARE);
        println!(
            "{files}-file tree: one measurement {:.2} ms (walk alone {:.2} ms); every {} ms: {:.2} % of a core",
            p * 1000.0,
            w * 1000.0,
            interval.as_millis(),
            p / interval.as_secs_f64() * 100.0
        );

        // 2. An honest suite, with and without the watchdog.
        let spec = |command: &str, written: Option<u64>| RunSpec {
            command: command.to_owned(),
            cwd: tree.clone(),
            env: BTreeMap::from([
                ("PATH".to_owned(), path.clone()),
                ("HOME".to_owned(), sandbox::HOME.to_owned()),
            ]),
            timeout: Duration::from_secs(120),
            stall_grace: None,
            log_path: dir.path().join("log"),
            log_cap: 1 << 20,
            limits: Limits {
                max_memory: Some(4 << 30),
                max_processes: Some(1024),
                max_written: written,
                ..Limits::default()
            },
            sandbox: Some((
                bwrap.clone(),
                Sandbox {
                    tree: Some(tree.clone()),
                    env_dir: None,
                    env_writable: false,
                    network: false,
                    read_only: sandbox::toolchain_roots(&path),
                    tmp_bytes: 1 << 30,
                    home_bytes: 512 << 20,
                    protect: Vec::new(),
                    guard: None,
                    binds: Vec::new(),
                    env_at: None,
                },
            )),
        };
        let (mut plain, mut watched) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            for (written, out) in [(None, &mut plain), (Some(1 << 30), &mut watched)] {
                let s = spec(SUITE, written);
                let t = Instant::now();
                let o = rt.block_on(run(&s)).unwrap();
                assert_eq!(o.exit_code, Some(0), "{o:?}");
                out.push(t.elapsed().as_secs_f64());
            }
        }
        let (p, w) = (median(&mut plain), median(&mut watched));
        println!(
            "1 s suite over the {files}-file tree, {reps} runs each: without the write limit {p:.3} s, with it {w:.3} s, ratio {:.3} ({:+.0} ms)",
            w / p,
            (w - p) * 1000.0
        );

        // 3. How far a fast writer gets.
        if files == 10 {
            let before = disk_usage(&tree);
            let t = Instant::now();
            let o = rt.block_on(run(&spec(FILL, Some(1 << 30)))).unwrap();
            let took = t.elapsed();
            assert_eq!(o.limit_hit, Some(LimitHit::Written), "{o:?}");
            let wrote = disk_usage(&tree) - before;
            let gib = |n: f64| n / (1u64 << 30) as f64;
            println!(
                "a writer of 100 MiB files under a 1 GiB limit: killed after {:.2} s with {:.2} GiB written ({:.2} GiB past the limit)",
                took.as_secs_f64(),
                gib(wrote as f64),
                gib(wrote as f64) - 1.0
            );
            std::fs::remove_dir_all(&tree).unwrap();
        }
    }
}
