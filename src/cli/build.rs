//! `assay build`: build the pipeline's DAG, reusing every cached node.

use std::collections::BTreeSet;

use assay_engine::{BuildOptions, CacheLock, Graph};
use clap::Args;

use super::{Failure, Global, runtime};
use crate::exit;
use crate::pipeline::Pipeline;
use crate::render::Renderer;

/// Build the pipeline: mine, screen, grade, judge and release, doing only what changed.
#[derive(Args, Debug)]
pub(crate) struct BuildArgs {
    /// Nodes run at once (default: the number of cores).
    #[arg(short, long)]
    jobs: Option<usize>,
    /// One JSON object per event on stdout; the last line is the summary.
    #[arg(long)]
    json: bool,
    /// Re-execute cached observations of these kinds (e.g. `run`): flaky tests get read again.
    #[arg(long, value_delimiter = ',')]
    reread: Vec<String>,
    /// Print every node as it runs.
    #[arg(short, long)]
    verbose: bool,
}

pub(crate) fn run(global: &Global, args: BuildArgs) -> Result<i32, Failure> {
    let pipeline = Pipeline::load(&global.pipeline)?;
    let cache_dir = global.cache_dir(Some(&pipeline));
    let _lock = CacheLock::acquire(&cache_dir, |pid| {
        eprintln!(
            "waiting for another build on {} to finish{}",
            cache_dir.display(),
            pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
        );
    })
    .map_err(Failure::cache)?;
    let store = global.open_store(Some(&pipeline))?;
    store.clean_tmp();
    let rt = runtime()?;
    let plan = crate::stages::plan(&pipeline, &store, &rt)?;
    let graph = Graph::new(plan.nodes).map_err(|e| crate::stages::graph_error(&pipeline, e))?;
    let opts = BuildOptions {
        jobs: args.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        }),
        reread: args.reread.into_iter().collect::<BTreeSet<_>>(),
        label: pipeline.path.display().to_string(),
    };
    let mut renderer = Renderer::new(args.json, args.verbose);
    let outcome = rt
        .block_on(assay_engine::build(&store, &graph, &opts, &mut |e| {
            renderer.event(e)
        }))
        .map_err(Failure::cache)?;
    let code = if outcome.summary.failed > 0 {
        exit::BUILD_FAILED
    } else {
        exit::OK
    };
    Ok(code)
}
