//! `assay export --to DIR`: the closure of the last release as a bundle that
//! `assay verify --bundle DIR` checks anywhere (see `audit::bundle`,
//! docs/audit.md). `assay export --harbor DIR`: its certified tasks as
//! Harbor task folders (`run::harbor`, docs/harbor.md).

use std::path::PathBuf;

use clap::Args;

use super::shared::{Failure, Global};
use crate::exit;
use crate::pipeline::Pipeline;

/// Write the last release and everything its numbers depend on to a directory,
/// or its certified tasks as Harbor task folders.
///
/// `--to`: every key record, output and blob the release node depends on
/// (tasks, screening, runs, grades, sessions, judge readings), the release
/// files and their provenance (an in-toto Statement), in a content-addressed
/// layout. The same release always gives the same bytes.
///
/// `--harbor`: one Harbor task folder per certified task and track, run with
/// `harbor run -p DIR`; each carries its task's digest and assay's verifier.
#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// The directory to write (absent or empty).
    #[arg(long, required_unless_present = "harbor", conflicts_with = "harbor")]
    to: Option<PathBuf>,
    /// Leave out the bulky evidence: run logs and reports, environment setup
    /// logs and images (their digests stay in the bundle).
    #[arg(long, conflicts_with = "harbor")]
    no_logs: bool,
    /// Write the certified tasks as Harbor task folders into this directory
    /// (absent or empty). The tasks must have been built with the docker
    /// executor (`assay build --executor docker`).
    #[arg(long, value_name = "DIR")]
    harbor: Option<PathBuf>,
}

pub(crate) fn run(global: &Global, args: ExportArgs) -> Result<i32, Failure> {
    if let Some(dir) = &args.harbor {
        return harbor(global, dir);
    }
    let to = args.to.clone().unwrap_or_default();
    let pipeline = Pipeline::load(&global.pipeline).ok();
    let store = global.open_store(pipeline.as_ref())?;
    let omit: Vec<String> = if args.no_logs {
        crate::ops::audit::bundle::LOG_KINDS
            .iter()
            .map(|k| k.to_string())
            .collect()
    } else {
        Vec::new()
    };
    let done = crate::ops::audit::bundle::export(&store, &to, &omit).map_err(|e| {
        Failure::new(
            exit::NOT_FOUND,
            miette::miette!(help = "build first, on this cache", "cannot export: {e}"),
        )
    })?;
    println!(
        "exported release {} to {}: {} nodes, {} blobs, {} release files, {} bytes{}",
        done.release_digest,
        to.display(),
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

/// An export to Harbor that stopped, with its kind's exit code and hint.
fn harbor_failure(e: crate::ops::export::ExportError) -> Failure {
    use crate::ops::export::ExportError as E;
    let (code, help) = match &e {
        E::NotBuilt(_) => (
            exit::NOT_FOUND,
            "build first, with `assay build --executor docker`, on this cache",
        ),
        E::Input(_) => (exit::USAGE, "the message names what to change"),
        E::Config(_) => (exit::CONFIG, "fix pipeline.toml as the message says"),
        E::Cache(_) => (
            exit::CACHE,
            "the cache cannot be read: `assay verify` names what is damaged",
        ),
        E::Infrastructure(_) => (
            exit::INFRASTRUCTURE,
            "the machine failed the export (the disk it writes to): free space or fix permissions, then export again",
        ),
    };
    Failure::new(
        code,
        miette::miette!(help = help, "cannot export to Harbor: {e}"),
    )
}

/// `export --harbor DIR`: the pipeline's docker settings are the ones the
/// tasks were certified with (`build --executor docker`).
fn harbor(global: &Global, dir: &std::path::Path) -> Result<i32, Failure> {
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(Failure::new(
            exit::USAGE,
            miette::miette!(
                help = "name an absent or empty directory: the export writes every folder afresh",
                "{} is not empty",
                dir.display()
            ),
        ));
    }
    let mut pipeline = global.load_pipeline()?;
    pipeline.settings.executor_override = Some(crate::model::config::ExecutorKind::Docker);
    let store = global.open_store(Some(&pipeline))?;
    let binary = std::env::current_exe().map_err(|e| {
        Failure::new(
            exit::NOT_FOUND,
            miette::miette!("cannot find assay's own binary: {e}"),
        )
    })?;
    let done =
        crate::ops::export::export(&pipeline, &store, dir, &binary).map_err(harbor_failure)?;
    for (id, why) in &done.skipped {
        eprintln!("warning: {id} not exported: {why}");
    }
    println!(
        "exported {} certified tasks of release {} to {} as Harbor task folders{}",
        done.tasks.len(),
        done.release_digest,
        dir.display(),
        if done.skipped.is_empty() {
            String::new()
        } else {
            format!(" ({} left out, see the warnings)", done.skipped.len())
        }
    );
    Ok(if done.tasks.is_empty() {
        exit::NOT_FOUND
    } else {
        exit::OK
    })
}
