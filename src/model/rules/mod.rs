//! The benchmark's rules, apart from its I/O: what grading leaves out of a
//! session patch and resets to the test patch's version ([`policy`]), what
//! makes a patch a tamper suspect ([`tamper`]), the verdict ([`verdict`]),
//! what a grade keeps of its logs and how it reruns ([`grading`]), the
//! screening reduction ([`screening`]), what a tree is composed of
//! ([`staging`]), the shape of a graded patch ([`shape`]), a quality metric's findings
//! ([`quality`]), why a run hit a
//! limit ([`limits`]), the released task ([`task`]), the reasons a task
//! is lost along the funnel ([`funnel`]), the test files a test patch
//! touches ([`touched`]), the workspace packages a tree rebuilds before
//! its tests ([`rebuild`]), words quoted for `sh` ([`shell`]) and why a red
//! grade is red: failing tests' words, grouped ([`why`]).
//!
//! **Invariant: nothing here does I/O.** No tokio, no filesystem, no process,
//! no engine (`assay_engine`), no blob store: every function takes the
//! bytes and records it decides on and returns what it decided, so each rule
//! is unit-tested in memory (the whole model is: `model`). The node kinds
//! in `stages/nodes/` are the adapters:
//! they decode their inputs, fetch blobs or run processes, call a rule and
//! store what it returns. The rules may read the records (`records`) and the
//! canaries (`canary`, pure too), and parse patches (`assay_git`'s pure
//! patch reader) and reports (`assay_report`).
//!
//! Whatever a rule returns that a record stores keeps the record's bytes:
//! enums here serialize as the words the records always held.

// No node lays out app tasks: their rules are exercised by their tests.
#[allow(dead_code)]
pub(crate) mod app;
pub(crate) mod funnel;
pub(crate) mod grading;
pub(crate) mod limits;
pub(crate) mod policy;
pub(crate) mod quality;
pub(crate) mod rebuild;
pub(crate) mod screening;
pub(crate) mod shape;
pub(crate) mod staging;
pub(crate) mod tamper;
pub(crate) mod task;
pub(crate) mod timeout;
pub(crate) mod touched;
pub(crate) mod verdict;

use super::{canary, records};
