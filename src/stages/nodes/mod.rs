//! One file per node kind: its params (the key), its job and what it
//! records. `grade` holds the three kinds of a graded session (session,
//! stage, grade); `judge` and `step` also lay out their own nodes.

pub(super) mod env;
pub(super) mod grade;
pub(super) mod judge;
pub(super) mod metrics;
pub(super) mod release;
pub(super) mod run;
pub(super) mod screen;
pub(super) mod step;
pub(super) mod task;
pub(super) mod tree;
pub(super) mod triage;
pub(super) mod verdict;

// What the kinds share with the rest of the stages, named from a kind's
// file as `super::records` and so on.
use super::plan::layout;
use super::{error, executor, limits, names, node, provenance, publish, records, redact, swebench};
