//! A small fluent builder for running the real `assay` binary on a project in
//! a temp dir (after just's `tests/test.rs`): write files, write a pipeline,
//! run a command, and read back the exit code, stderr and `--json` events.
//!
//! One module a purpose: [`project`] (a project and the binary run in it),
//! [`run`] (what a run left, and assertions on it), [`git`] (repositories of
//! merged pull requests and diffs against them), [`csv`], [`processes`],
//! [`files`], [`random`], [`example`] (the bundled example as a project),
//! [`harbor`] (what a Harbor dataset's build leaves), [`instances`]
//! (SWE-bench-family instance rows and images), [`progress`] (a line
//! per phase of the long test binaries),
//! [`fixture`] (the grading fixture), [`attacks`] and [`reach`] (hostile
//! sessions graded with it). Everything before `example` is re-exported
//! here, so tests say `util::Project`.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

pub mod agents;
pub mod attacks;
pub mod audit;
pub mod csv;
pub mod example;
pub mod figures;
pub mod files;
pub mod fixture;
pub mod forgery;
pub mod git;
pub mod harbor;
pub mod instances;
/// The release's links, checked (the file the unit tests use too).
#[path = "../../src/release/links.rs"]
pub mod links;
pub mod llm;
pub mod patches;
pub mod processes;
pub mod progress;
pub mod project;
pub mod random;
pub mod reach;
pub mod run;
pub mod sealed;
pub mod windows;

// Each test binary uses a part of them.
#[allow(unused_imports)]
pub use self::{csv::*, files::*, git::*, processes::*, project::*, random::*, run::*};
