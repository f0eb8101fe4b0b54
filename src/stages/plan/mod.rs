//! The layout: every node of a build, laid out from the pipeline's valid
//! settings. `layout` lays out the tasks (triage, trees, screening runs,
//! screen, tasks, environments) and the release; `grading` the sessions'
//! nodes; `sources` reads the repositories, `envs` the environments.

pub(super) mod apps;
pub(super) mod envs;
pub(super) mod grading;
pub(super) mod instances;
pub(super) mod layout;
mod screening;
pub(super) mod sources;

// The node kinds and shared modules the layout names as `super::…`.
use super::nodes::{
    app_browse, app_build, app_certify, app_deploy, app_grade, app_probe, attempt, certify, env,
    grade, harbor_grade, harbor_task, instance, judge, metrics, quality, recheck, release, run,
    screen, session, stage, swe_task, task, tree, triage,
};
use super::{error, executor, names, node, provenance, publish, redact, rules, swebench};
