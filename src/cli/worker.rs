//! `assay worker JOB` (hidden): one run of the slurm executor, on the node
//! a job step landed on. It reads the job file the coordinator wrote in the
//! run's scratch directory, runs it with the local executor (the same
//! sandbox, limits and timeout), and writes the outcome beside it
//! (`src/stages/executor/slurm.rs`, docs/executors.md).

use std::path::PathBuf;

use clap::Args;

use super::shared::Failure;
use crate::exit;

/// Run one job file of the slurm executor on this node.
#[derive(Args, Debug)]
pub(crate) struct WorkerArgs {
    /// The job file (`<scratch>/slurm/job.json`).
    job: PathBuf,
}

pub(crate) fn run(args: WorkerArgs) -> Result<i32, Failure> {
    crate::run::executor::slurm_worker::work(&args.job)
        .map(|()| exit::OK)
        .map_err(|e| Failure::new(exit::INTERNAL, miette::miette!("worker: {e}")))
}
