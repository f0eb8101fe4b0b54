//! `assay verify`: re-hash the cache (every key from its stored record, every
//! blob from its bytes) and say which node disagrees.

use clap::Args;

use super::{Failure, Global};
use crate::exit;
use crate::pipeline::Pipeline;

/// Check the cache: every key against its record, every output and blob against its digest.
#[derive(Args, Debug)]
pub(crate) struct VerifyArgs {
    /// One JSON object per problem on stdout.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(global: &Global, args: VerifyArgs) -> Result<i32, Failure> {
    let pipeline = Pipeline::load(&global.pipeline).ok();
    let store = global.open_store(pipeline.as_ref())?;
    let problems = store.verify().map_err(Failure::cache)?;
    let (nodes, builds) = store.stats().map_err(Failure::cache)?;
    for p in &problems {
        if args.json {
            println!("{}", serde_json::to_string(p).unwrap_or_default());
        } else {
            eprintln!("MISMATCH {} {}: {}", p.kind, p.key, p.problem);
        }
    }
    if problems.is_empty() {
        if !args.json {
            println!("cache ok: {nodes} nodes, {builds} builds verified");
        }
        Ok(exit::OK)
    } else {
        eprintln!("{} problems in {nodes} nodes", problems.len());
        Ok(exit::VERIFY_MISMATCH)
    }
}
