//! A cold build of many tiny nodes commits its rows thousands to a
//! transaction: a `kill -9` lands in the middle of such batches. The build
//! runs in a child process (this test binary again, told so by an
//! environment variable) that prints each node it reports finished; the test
//! kills it at points spread over a build by its own progress, then checks
//! that the cache verifies, that a rebuild executes exactly the nodes without
//! a row and reuses every other, and that every node reported finished is
//! reused.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assay_engine::{BuildOptions, Event, Graph, Store, Summary};

const NODES: usize = 5_000;
const KILLS: u32 = 10;
/// Set in the child: the cache to build into.
const CHILD_CACHE: &str = "ASSAY_ENGINE_CRASH_CHILD";

fn build(cache: &Path, sink: &mut dyn FnMut(&Event)) -> Summary {
    let graph = Graph::new(assay_engine::synthetic::nodes(NODES, 7)).unwrap();
    let opts = BuildOptions {
        jobs: 2,
        reread: BTreeSet::new(),
        label: "crash".into(),
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = Store::open(cache).unwrap();
    rt.block_on(assay_engine::build(&store, &graph, &opts, sink))
        .unwrap()
        .summary
}

/// The child: builds, printing (and flushing) the name of each node as it
/// is reported finished.
fn child(cache: &Path) {
    let mut out = std::io::stdout().lock();
    build(cache, &mut |e| {
        if let Event::NodeFinished { name, .. } = e {
            let _ = writeln!(out, "{name}");
            let _ = out.flush();
        }
    });
}

/// Runs the child on `cache`, kills it once it has reported `after` nodes
/// finished (or at once when `after` is 0, or when it ends first), and
/// returns the nodes it reported finished. Counting the child's own reports
/// rather than sleeping puts the kill mid-build however loaded the machine.
fn killed_build(cache: &Path, after: usize) -> BTreeSet<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_build_killed_mid_batch_verifies_and_reruns_only_the_missing_nodes",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_CACHE, cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let printed = Arc::new(Mutex::new(BTreeSet::new()));
    let (reached, wait) = std::sync::mpsc::channel();
    let reader = {
        let printed = printed.clone();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with('n') && !line.contains(' ') {
                    let mut printed = printed.lock().unwrap();
                    printed.insert(line);
                    if printed.len() == after {
                        let _ = reached.send(());
                    }
                }
            }
            // The child ended (or was killed) first.
            let _ = reached.send(());
        })
    };
    if after > 0 {
        let _ = wait.recv_timeout(Duration::from_secs(120));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    printed.lock().unwrap().clone()
}

#[test]
fn a_build_killed_mid_batch_verifies_and_reruns_only_the_missing_nodes() {
    if let Some(cache) = std::env::var_os(CHILD_CACHE) {
        child(Path::new(&cache));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut partial = 0;
    for round in 0..KILLS {
        let cache = dir.path().join(format!("cache-{round}"));
        // From the child's start-up to near its end, evenly by progress.
        let after = NODES * round as usize / KILLS as usize;
        let reported = killed_build(&cache, after);
        let store = Store::open(&cache).unwrap();
        let problems = store.verify().unwrap();
        assert!(
            problems.is_empty(),
            "round {round}: verify after a kill after {after} reported: {problems:?}"
        );
        let (rows, _) = store.stats().unwrap();
        let rows = rows as usize;
        if (1..NODES).contains(&rows) {
            partial += 1;
        }
        assert!(
            reported.len() <= rows,
            "round {round}: {} reported finished, {rows} rows",
            reported.len()
        );
        drop(store);

        let mut reused: BTreeSet<String> = BTreeSet::new();
        let summary = build(&cache, &mut |e| {
            if let Event::NodeReused { name, .. } = e {
                reused.insert((*name).to_owned());
            }
        });
        // Every row is a hit (the synthetic nodes' keys are all distinct),
        // and only the nodes without one run.
        assert_eq!(
            (summary.reused, summary.executed),
            (rows, NODES - rows),
            "round {round}: kill after {after} reported"
        );
        let lost: Vec<_> = reported.difference(&reused).collect();
        assert!(
            lost.is_empty(),
            "round {round}: reported finished before the kill but rerun: {lost:?}"
        );
        assert!(Store::open(&cache).unwrap().verify().unwrap().is_empty());
    }
    eprintln!("{partial} of {KILLS} kills left a partly written index");
    assert!(
        partial >= KILLS / 3,
        "only {partial} of {KILLS} kills landed mid-build"
    );
}
