//! `assay plan`: what a build would run and why, without running anything.

use assay_engine::PlanState;
use clap::Args;

use super::{Failure, Global};
use crate::exit;
use crate::stages::NodeKind;

/// Show what `assay build` would execute, and why, without running it.
#[derive(Args, Debug)]
pub(crate) struct PlanArgs {
    /// One JSON object per node on stdout.
    #[arg(long)]
    json: bool,
    /// List cached nodes too (by default only what would run).
    #[arg(long)]
    all: bool,
    /// Plan as if `build --reread KINDS` were given.
    #[arg(long, value_delimiter = ',', value_parser = crate::stages::parse_kind)]
    reread: Vec<NodeKind>,
}

pub(crate) fn run(global: &Global, args: PlanArgs) -> Result<i32, Failure> {
    let pipeline = global.load_pipeline()?;
    let store = global.open_store_checked(Some(&pipeline))?;
    let graph = super::laid_out(&pipeline, &store)?.graph;
    let previous = match store.builds(1).map_err(Failure::cache)?.first() {
        Some(b) => store.manifest(b).map_err(Failure::cache)?,
        None => None,
    };
    let reread = super::kinds(&args.reread);
    let entries =
        assay_engine::plan(&store, &graph, &reread, previous.as_ref()).map_err(Failure::cache)?;
    let (mut cached, mut run, mut blocked) = (0, 0, 0);
    for e in &entries {
        match &e.state {
            PlanState::Cached => cached += 1,
            PlanState::Run { .. } => run += 1,
            PlanState::Blocked { .. } => blocked += 1,
        }
        if args.json {
            println!("{}", serde_json::to_string(e).unwrap_or_default());
        } else {
            match &e.state {
                PlanState::Cached if args.all => println!("cached   {}", e.name),
                PlanState::Cached => {}
                PlanState::Run { reason } => println!("run      {}  ({reason})", e.name),
                PlanState::Blocked { on } => {
                    println!("maybe    {}  (depends on the output of {on})", e.name)
                }
            }
        }
    }
    if !args.json {
        println!(
            "{run} would run, {blocked} would run if their inputs' outputs change, {cached} cached"
        );
    }
    Ok(exit::OK)
}
