//! What starting a sandboxed run costs, with and without the launcher, from
//! a process of a given size (docs/performance.md, "Where a run's time
//! goes"): runs `true` in the sandbox RUNS times, one after the other, after
//! allocating and touching HEAP_MB of memory, and prints the median and mean
//! run (and the 10th and 90th percentiles), and this process's own CPU time
//! a run (where a `fork` of it shows).
//!
//! `cargo run -p assay-exec --example launch_cost -- pre_exec|LAUNCHER HEAP_MB RUNS [PAUSE_MS]`
//!
//! PAUSE_MS (default 0) is slept between runs, as a build's runs are apart:
//! back to back, a run's join of its control groups can find the kernel's
//! lock still open from the run before (docs/performance.md, "A sandboxed
//! run's start").
//!
//! LAUNCHER is a program that acts as the launcher (`assay`, or this
//! crate's `assay-launch`); `pre_exec` starts runs without one.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use assay_exec::{Bwrap, Limits, RunSpec, Sandbox, run};

fn cpu_self() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "pre_exec".to_owned());
    let heap_mb: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0);
    let runs: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(50);
    let pause = Duration::from_millis(args.get(4).and_then(|a| a.parse().ok()).unwrap_or(0));
    if mode != "pre_exec" {
        assay_exec::launch::install(PathBuf::from(&mode));
    }
    let mut heap = vec![0u8; heap_mb << 20];
    for page in heap.iter_mut().step_by(4096) {
        *page = 1;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let bwrap = Bwrap::detect().unwrap();
    let spec = RunSpec {
        command: "true".to_owned(),
        cwd: tree.clone(),
        env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        timeout: Duration::from_secs(60),
        stall_grace: Some(Duration::from_secs(10)),
        log_path: dir.path().join("log"),
        log_cap: 1 << 20,
        limits: Limits {
            max_memory: Some(4 << 30),
            max_processes: Some(1024),
            max_file_size: Some(1 << 30),
            ..Limits::default()
        },
        sandbox: Some((
            bwrap,
            Sandbox {
                tree: Some(tree),
                env_dir: None,
                env_at: None,
                env_writable: false,
                network: false,
                read_only: Vec::new(),
                tmp_bytes: 64 << 20,
                home_bytes: 64 << 20,
                protect: Vec::new(),
                guard: None,
                binds: Vec::new(),
            },
        )),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut cpu = Duration::ZERO;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        std::thread::sleep(pause);
        let cpu_before = cpu_self();
        let t = Instant::now();
        let out = rt.block_on(run(&spec)).unwrap();
        assert_eq!(out.exit_code, Some(0), "{out:?}");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        cpu += cpu_self() - cpu_before;
    }
    let cpu = cpu.as_secs_f64() * 1000.0 / runs as f64;
    std::hint::black_box(&heap);
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let p10 = times[times.len() / 10];
    let p90 = times[times.len() * 9 / 10];
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let name = std::path::Path::new(&mode)
        .file_name()
        .map_or(mode.clone(), |n| n.to_string_lossy().into_owned());
    println!(
        "{name:>12} heap {heap_mb:>5} MB  runs {runs:>4}  p10 {p10:6.1}  median {median:6.1}  p90 {p90:6.1}  mean {mean:6.1} ms  own CPU {cpu:5.2} ms/run"
    );
    heap.clear();
}
