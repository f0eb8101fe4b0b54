//! A sandboxed run's start cost (docs/performance.md, "A sandboxed run's
//! start"): `COMMAND` (default `true`) through [`run`] as the local
//! executor launches a graded run — bubblewrap, the limits of a graded
//! run (cgroup memory and processes, file size, open files, the write
//! watchdog), the CPU-stall group, a read-only environment, a guard
//! directory — against the same command through [`run`] unsandboxed and
//! a plain `sh -c` spawn, interleaved, N rounds (default 20). Prints the
//! medians in milliseconds, one line: `sandboxed S unsandboxed U spawn P`.
//!
//! `cargo run --release -p assay-exec --example sandbox_start [N] [COMMAND]`
//!
//! Only the crate's public API is used, so `benches/sandbox-start.sh` can
//! build this same file against another checkout (the baseline).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use assay_exec::{Bwrap, Limits, RunSpec, Sandbox, run, sandbox};

fn limits() -> Limits {
    Limits {
        max_file_size: Some(256 << 20),
        max_processes: Some(512),
        max_open_files: Some(4096),
        max_memory: Some(4 << 30),
        no_core: true,
        max_written: Some(1 << 30),
    }
}

fn spec(dir: &Path, command: &str, bwrap: Option<&Bwrap>) -> RunSpec {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let tree = dir.join("tree");
    RunSpec {
        command: command.to_owned(),
        cwd: tree.clone(),
        env: BTreeMap::from([
            ("PATH".to_owned(), path.clone()),
            ("HOME".to_owned(), "/tmp".to_owned()),
        ]),
        timeout: Duration::from_secs(60),
        stall_grace: Some(Duration::from_secs(60)),
        log_path: dir.join("log"),
        log_cap: 1 << 20,
        limits: limits(),
        sandbox: bwrap.map(|b| {
            (
                b.clone(),
                Sandbox {
                    tree: Some(tree),
                    env_dir: Some(dir.join("env")),
                    env_writable: false,
                    network: false,
                    read_only: sandbox::toolchain_roots(&path),
                    tmp_bytes: 1 << 30,
                    home_bytes: 512 << 20,
                    protect: Vec::new(),
                    guard: Some(dir.join("guard")),
                    binds: Vec::new(),
                    env_at: None,
                },
            )
        }),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let command = std::env::args().nth(2).unwrap_or_else(|| "true".to_owned());
    let dir = tempfile::tempdir().unwrap();
    for sub in ["tree", "env", "guard"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    let bwrap = Bwrap::detect().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let boxed = spec(dir.path(), &command, Some(&bwrap));
    let bare = spec(dir.path(), &command, None);
    let (mut sandboxed, mut unsandboxed, mut spawn) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        for (s, out) in [(&boxed, &mut sandboxed), (&bare, &mut unsandboxed)] {
            let t = Instant::now();
            let o = rt.block_on(run(s)).unwrap();
            assert_eq!(o.exit_code, Some(0), "{o:?}");
            out.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let t = Instant::now();
        let ok = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&command)
            .current_dir(dir.path().join("tree"))
            .status()
            .unwrap();
        assert!(ok.success());
        spawn.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "sandboxed {:.1} unsandboxed {:.1} spawn {:.1}",
        median(sandboxed),
        median(unsandboxed),
        median(spawn)
    );
}
