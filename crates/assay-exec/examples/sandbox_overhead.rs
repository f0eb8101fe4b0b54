//! Sandbox overhead, measured side by side (docs/performance.md):
//!
//! 1. a ~1 s test suite (Python, CPU-bound) run by the local runner without
//!    and with the bubblewrap sandbox, interleaved, N times each;
//! 2. handing a 10,000-file tree to the sandbox's run uid (`chown_tree`, the
//!    only per-file work the sandbox adds: the tree is bind-mounted, not
//!    copied) against `git archive | tar -x` of the same tree.
//!
//! `cargo run --release -p assay-exec --example sandbox_overhead [N]`

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use assay_exec::{Bwrap, Limits, RunSpec, Sandbox, run, sandbox};

const SUITE: &str = "python3 -c 'import time\nt = time.time()\nn = 0\nwhile time.time() - t < 1.0:\n    n += 1\nprint(n)'";

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let bwrap = Bwrap::detect().unwrap();
    let path = std::env::var("PATH").unwrap();
    let spec = |sandboxed: bool| RunSpec {
        command: SUITE.to_owned(),
        cwd: tree.clone(),
        env: BTreeMap::from([
            ("PATH".to_owned(), path.clone()),
            ("HOME".to_owned(), "/tmp".to_owned()),
        ]),
        timeout: Duration::from_secs(60),
        stall_grace: None,
        log_path: dir.path().join("log"),
        log_cap: 1 << 20,
        limits: Limits {
            max_memory: Some(4 << 30),
            max_processes: Some(1024),
            ..Limits::default()
        },
        sandbox: sandboxed.then(|| {
            (
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
            )
        }),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut plain, mut boxed) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        for (sandboxed, out) in [(false, &mut plain), (true, &mut boxed)] {
            let s = spec(sandboxed);
            let t = Instant::now();
            let o = rt.block_on(run(&s)).unwrap();
            assert_eq!(o.exit_code, Some(0), "{o:?}");
            out.push(t.elapsed().as_secs_f64());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (p, b) = (median(&mut plain), median(&mut boxed));
    println!(
        "1 s suite, {reps} runs each: unsandboxed {p:.3} s, sandboxed {b:.3} s, ratio {:.3} (+{:.0} ms)",
        b / p,
        (b - p) * 1000.0
    );

    // 10,000 files in a throwaway repository.
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for i in 0..10_000 {
        let d = repo.join(format!("d{}", i / 100));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("f{i}.py")), format!("x = {i}\n")).unwrap();
    }
    let git = |args: &[&str]| {
        assert!(
            Command::new("git")
                .args(args)
                .current_dir(&repo)
                .output()
                .unwrap()
                .status
                .success()
        );
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&[
        "-c",
        "user.name=b",
        "-c",
        "user.email=b@b",
        "commit",
        "-qm",
        "x",
    ]);
    let (mut archive, mut chown) = (Vec::new(), Vec::new());
    for r in 0..reps {
        let dest = dir.path().join(format!("x{r}"));
        std::fs::create_dir_all(&dest).unwrap();
        let t = Instant::now();
        let ok = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "git -C {} archive HEAD | tar -x -C {}",
                repo.display(),
                dest.display()
            ))
            .status()
            .unwrap();
        assert!(ok.success());
        archive.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        sandbox::chown_tree(&dest, sandbox::RUN_UID_BASE).unwrap();
        chown.push(t.elapsed().as_secs_f64());
    }
    let (a, c) = (median(&mut archive), median(&mut chown));
    println!(
        "10,000-file tree: git archive | tar -x {:.1} ms, chown to the run uid {:.1} ms, ratio {:.3}",
        a * 1000.0,
        c * 1000.0,
        c / a
    );
}
