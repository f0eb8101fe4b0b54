//! `assay harbor-verify` (hidden): the verifier of an exported Harbor task,
//! run by its `tests/test.sh` inside the trial's container
//! (`ops::harbor_verify`, docs/harbor.md).

use std::path::PathBuf;

use clap::Args;

use super::shared::Failure;
use crate::exit;
use crate::ops::harbor_verify::{Paths, verify};

/// Grade the workspace of a Harbor trial and write its reward.
#[derive(Args, Debug)]
pub(crate) struct HarborVerifyArgs {
    /// The task's tests folder as Harbor copied it.
    #[arg(long, default_value = crate::run::harbor::TESTS)]
    tests: PathBuf,
    /// The agent's workspace.
    #[arg(long, default_value = crate::run::harbor::WORKSPACE)]
    workspace: PathBuf,
    /// Where reward.json and the verdict go.
    #[arg(long, default_value = crate::run::harbor::LOGS)]
    logs: PathBuf,
}

pub(crate) fn run(args: HarborVerifyArgs) -> Result<i32, Failure> {
    let paths = Paths {
        tests: args.tests,
        workspace: args.workspace,
        logs: args.logs,
    };
    let verdict = verify(&paths).map_err(|e| {
        Failure::new(
            exit::SANDBOX,
            miette::miette!(
                help = e.kind.hint(),
                "assay's verifier could not grade this trial ({}): {}",
                e.kind,
                crate::run::error::chain(&e)
            ),
        )
    })?;
    eprintln!(
        "assay: {} {} ({}){}",
        verdict.task_id,
        verdict.verdict,
        verdict.fault,
        if verdict.detail.is_empty() {
            String::new()
        } else {
            format!(": {}", verdict.detail)
        }
    );
    Ok(exit::OK)
}
