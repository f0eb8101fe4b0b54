//! Engine benchmarks on a synthetic 100,000-node DAG (`assay_engine::synthetic`).
//!
//! The DAG is built once into a temp cache (not timed). Then, side by side:
//! - `noop_rebuild`: `assay_engine::build` on a fresh `Store::open` per
//!   iteration, so index load, key computation, hit verification and the
//!   build manifest are all in;
//! - `select_all`: a plain rusqlite `SELECT * FROM nodes` stepping through
//!   every row of the same `index.sqlite`, the floor any index-based no-op
//!   rebuild stands on;
//! - `cold_build`: the same DAG built into an empty cache (a fresh temp dir
//!   per iteration, made and removed outside the timing): every node
//!   executes and its row is committed, so this measures the engine's
//!   per-node cost and the index writes.
//!
//! Targets (issue 23): `noop_rebuild` ≤ 100 ms and `cold_build` ≤ 2 s at
//! 100,000 nodes, read as ratios against `select_all` of the same run.
//! Hashing throughput against `b3sum` is `benches/hash-vs-b3sum.sh`; the
//! no-op's peak RSS is `benches/noop-rss.sh`.
//!
//! `ASSAY_BENCH_NODES` overrides the node count (e.g. 10000 for profiling).

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use assay_engine::{BuildOptions, Graph, Store};
use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};

fn nodes() -> usize {
    std::env::var("ASSAY_BENCH_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000)
}

fn noop_vs_select(c: &mut Criterion) {
    let n = nodes();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let graph = Graph::new(assay_engine::synthetic::nodes(n, 1)).unwrap();
    let opts = BuildOptions {
        jobs: 2,
        reread: Default::default(),
        label: "bench".into(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let build = |store: &Store| {
        rt.block_on(assay_engine::build(store, &graph, &opts, &mut |_| {}))
            .unwrap()
    };
    let first = build(&Store::open(&cache).unwrap());
    assert_eq!(
        first.summary.executed, n,
        "the untimed first build runs every node"
    );

    let mut group = c.benchmark_group(format!("engine_{n}_nodes"));
    // Flat sampling: every sample runs the same number of iterations, so the
    // cold build (seconds an iteration) runs 10 times, not 55.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("noop_rebuild", |b| {
        b.iter(|| {
            let outcome = build(&Store::open(&cache).unwrap());
            assert_eq!(outcome.summary.reused, n);
        })
    });
    group.bench_function("select_all", |b| {
        b.iter(|| {
            let conn = rusqlite::Connection::open(cache.join("index.sqlite")).unwrap();
            let mut stmt = conn.prepare("SELECT * FROM nodes").unwrap();
            let mut rows = stmt.query([]).unwrap();
            let mut count = 0usize;
            while rows.next().unwrap().is_some() {
                count += 1;
            }
            assert_eq!(count, n);
        })
    });
    group.bench_function("cold_build", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let fresh = tempfile::tempdir().unwrap();
                let store = Store::open(&fresh.path().join("cache")).unwrap();
                let started = Instant::now();
                let outcome = build(&store);
                total += started.elapsed();
                assert_eq!(outcome.summary.executed, n);
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, noop_vs_select);
criterion_main!(benches);
