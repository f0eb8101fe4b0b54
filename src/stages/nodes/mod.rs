//! One file per node kind: its params (the key), its job and what it
//! records. A graded session is `session`, `stage`, a `run` and `grade`;
//! `judge` and `step` also lay out their own nodes. The
//! kinds are adapters: what they decide is a rule of `rules`.

pub(super) mod app_browse;
pub(super) mod app_build;
pub(super) mod app_certify;
pub(super) mod app_deploy;
pub(super) mod app_grade;
pub(super) mod app_probe;
pub(super) mod attempt;
pub(super) mod certify;
pub(super) mod env;
pub(super) mod grade;
pub(super) mod harbor_grade;
pub(super) mod harbor_task;
pub(super) mod instance;
pub(super) mod judge;
pub(super) mod metrics;
pub(super) mod quality;
pub(super) mod recheck;
pub(super) mod release;
pub(super) mod run;
pub(super) mod screen;
pub(super) mod session;
pub(super) mod stage;
pub(super) mod step;
pub(super) mod swe_task;
pub(super) mod task;
pub(super) mod tree;
pub(super) mod triage;

// What the kinds share with the rest of the stages, named from a kind's
// file as `super::records` and so on.
use super::{error, executor, names, node, provenance, publish, records, redact, rules, swebench};

use assay_engine::{Digest, JobCtx};

/// The blob `hex` names; nothing for an empty name (an empty patch).
fn blob(ctx: &JobCtx, hex: &str) -> Result<Vec<u8>, error::NodeError> {
    use error::Kinded;
    if hex.is_empty() {
        return Ok(Vec::new());
    }
    let d: Digest = hex.parse().internal()?;
    ctx.blobs.get(&d).cache()
}
