//! `assay export --to DIR`: the closure of the last release as a bundle that
//! `assay verify --bundle DIR` checks anywhere (see `audit::bundle`,
//! docs/audit.md).

use std::path::PathBuf;

use clap::Args;

use super::{Failure, Global};
use crate::exit;
use crate::pipeline::Pipeline;

/// Write the last release and everything its numbers depend on to a directory.
///
/// Every key record, output and blob the release node depends on (tasks,
/// screening, runs, grades, sessions, judge readings), the release files and
/// their provenance (an in-toto Statement), in a content-addressed layout.
/// The same release always gives the same bytes.
#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// The directory to write (absent or empty).
    #[arg(long)]
    to: PathBuf,
    /// Leave out the bulky evidence: run logs and reports, environment setup
    /// logs and images (their digests stay in the bundle).
    #[arg(long)]
    no_logs: bool,
}

pub(crate) fn run(global: &Global, args: ExportArgs) -> Result<i32, Failure> {
    let pipeline = Pipeline::load(&global.pipeline).ok();
    let store = global.open_store(pipeline.as_ref())?;
    let omit: Vec<String> = if args.no_logs {
        crate::audit::LOG_KINDS
            .iter()
            .map(|k| k.to_string())
            .collect()
    } else {
        Vec::new()
    };
    let done = crate::audit::export(&store, &args.to, &omit).map_err(|e| {
        Failure::new(
            exit::NOT_FOUND,
            miette::miette!(help = "build first, on this cache", "cannot export: {e}"),
        )
    })?;
    println!(
        "exported release {} to {}: {} nodes, {} blobs, {} release files, {} bytes{}",
        done.release_digest,
        args.to.display(),
        done.counts.nodes,
        done.counts.blobs,
        done.counts.files,
        done.bytes,
        if done.counts.omitted_blobs > 0 {
            format!(
                " ({} blobs left out, digests kept)",
                done.counts.omitted_blobs
            )
        } else {
            String::new()
        }
    );
    Ok(exit::OK)
}
