//! `assay bench-dag` (hidden): builds the engine's synthetic DAG into a cache,
//! so the engine can be measured apart from any stage. The first call builds
//! every node; a second call on the same cache is the no-op rebuild that
//! `benches/engine.rs` times and `benches/noop-rss.sh` weighs (peak RSS).

use std::time::Instant;

use assay_engine::{BuildOptions, CacheLock, Graph, Store};
use clap::Args;

use super::shared::{Failure, Global, runtime};
use crate::exit;

/// Build a synthetic DAG of tiny nodes through the engine (for benchmarks).
#[derive(Args, Debug)]
pub(crate) struct BenchDagArgs {
    /// Nodes in the DAG; each depends on 0–3 earlier ones.
    #[arg(long, default_value_t = 100_000)]
    nodes: usize,
    /// Seed of the DAG's shape.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Nodes run at once.
    #[arg(short, long, default_value_t = 2)]
    jobs: usize,
}

pub(crate) fn run(global: &Global, args: BenchDagArgs) -> Result<i32, Failure> {
    let dir = global.cache_dir(None);
    let _lock = CacheLock::acquire(&dir, |_| eprintln!("waiting for the cache lock"))
        .map_err(Failure::cache)?;
    let started = Instant::now();
    let graph = Graph::new(assay_engine::synthetic::nodes(args.nodes, args.seed))
        .map_err(|e| Failure::new(exit::INTERNAL, miette::miette!("synthetic DAG: {e}")))?;
    let graph_ms = started.elapsed().as_secs_f64() * 1e3;
    let store = Store::open(&dir).map_err(Failure::cache)?;
    let opts = BuildOptions {
        jobs: args.jobs,
        reread: Default::default(),
        label: "bench-dag".into(),
    };
    let rt = runtime()?;
    let building = Instant::now();
    let outcome = rt
        .block_on(assay_engine::build(&store, &graph, &opts, &mut |_| {}))
        .map_err(Failure::cache)?;
    let s = &outcome.summary;
    eprintln!(
        "bench-dag: {} nodes ({graph_ms:.0} ms to lay out), build {:.0} ms: {} executed, {} reused, {} failed",
        graph.len(),
        building.elapsed().as_secs_f64() * 1e3,
        s.executed,
        s.reused,
        s.failed
    );
    Ok(if s.failed > 0 {
        exit::BUILD_FAILED
    } else {
        exit::OK
    })
}
