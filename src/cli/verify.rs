//! `assay verify`: re-hash the cache (every key from its stored record, every
//! blob from its bytes) and check a release against it (see `audit`): say
//! which node, file or number disagrees.

use std::path::PathBuf;

use clap::Args;

use super::{Failure, Global};
use crate::exit;
use crate::pipeline::Pipeline;

/// Check the cache and the release against their digests, recomputing every number.
///
/// The cache: every key against its record, every output and blob against its
/// digest. The release: its manifest's digests, and every file recomputed from
/// the cache and compared byte for byte.
#[derive(Args, Debug)]
pub(crate) struct VerifyArgs {
    /// The release directory to check (default: the pipeline's, when it exists).
    #[arg(long)]
    release: Option<PathBuf>,
    /// Check the cache only.
    #[arg(long, conflicts_with = "release")]
    cache_only: bool,
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
    if !args.json {
        if problems.is_empty() {
            println!("cache ok: {nodes} nodes, {builds} builds verified");
        } else {
            eprintln!("{} problems in {nodes} nodes", problems.len());
        }
    }
    let mut mismatch = !problems.is_empty();

    let release_dir = match (&args.release, args.cache_only) {
        (_, true) => None,
        (Some(dir), _) => Some(dir.clone()),
        (None, _) => pipeline
            .as_ref()
            .map(Pipeline::release_dir)
            .filter(|d| d.join("tasks.jsonl").is_file()),
    };
    if let Some(dir) = release_dir {
        let (findings, checked) = crate::audit::verify_release(&store, &dir).map_err(|e| {
            Failure::new(
                exit::VERIFY_MISMATCH,
                miette::miette!("release {}: {e}", dir.display()),
            )
        })?;
        for f in &findings {
            if args.json {
                println!("{}", serde_json::to_string(f).unwrap_or_default());
            } else {
                eprintln!("MISMATCH {}: {}", f.what, f.problem);
            }
        }
        if !args.json {
            if findings.is_empty() {
                println!(
                    "release ok: {} files in {}{}, recomputed from {} inputs",
                    checked.files,
                    dir.display(),
                    checked
                        .release_digest
                        .map(|d| format!(" (release digest {d})"))
                        .unwrap_or_default(),
                    checked.inputs
                );
            } else {
                eprintln!("release {}: {} problems", dir.display(), findings.len());
            }
        }
        mismatch |= !findings.is_empty();
    }
    Ok(if mismatch {
        exit::VERIFY_MISMATCH
    } else {
        exit::OK
    })
}
