//! One file per node kind: its params (the key), its job and what it
//! records. A graded session is `session`, `stage`, a `run` and `grade`;
//! `judge` and `step` also lay out their own nodes. The
//! kinds are adapters: what they decide is a rule of `rules`.

pub(crate) mod adapter;
pub(crate) mod app_browse;
pub(crate) mod app_build;
pub(crate) mod app_certify;
pub(crate) mod app_deploy;
pub(crate) mod app_grade;
pub(crate) mod app_probe;
pub(crate) mod attempt;
pub(crate) mod canaries;
pub(crate) mod certify;
pub(crate) mod env;
pub(crate) mod grade;
pub(crate) mod harbor_grade;
pub(crate) mod harbor_task;
pub(crate) mod instance;
pub(crate) mod judge;
pub(crate) mod metrics;
pub(crate) mod quality;
pub(crate) mod recheck;
pub(crate) mod release;
mod release_gather;
mod release_inputs;
pub(crate) mod run;
pub(crate) mod screen;
pub(crate) mod session;
pub(crate) mod stage;
pub(crate) mod step;
pub(crate) mod swe_task;
pub(crate) mod task;
pub(crate) mod tree;
pub(crate) mod triage;

use assay_engine::{Digest, JobCtx};

use crate::run::error;

/// The blob `hex` names; nothing for an empty name (an empty patch).
fn blob(ctx: &JobCtx, hex: &str) -> Result<Vec<u8>, error::NodeError> {
    use error::Kinded;
    if hex.is_empty() {
        return Ok(Vec::new());
    }
    let d: Digest = hex.parse().internal()?;
    ctx.blobs.get(&d).cache()
}
