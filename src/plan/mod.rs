//! The layout: every node of a build, laid out from the pipeline's valid
//! settings. Each task source lays out its tasks (`source`: the seam;
//! `mined`, `harbor`, `deepswe`, `instances`, with the app tasks in
//! `apps`); `grading` lays out the sessions' and the attempts' nodes in
//! one pass (the task a session names in `grading_names`, the nodes that
//! grade it in `grading_target`, the agents' attempts in
//! `grading_attempts`); `layout` runs them in order and adds the release.
//! `sources` reads the repositories, `envs` the environments.

pub(crate) mod apps;
mod deepswe;
pub(crate) mod envs;
pub(crate) mod grading;
mod grading_attempts;
mod grading_names;
mod grading_target;
mod harbor;
pub(crate) mod instances;
pub(crate) mod layout;
pub(crate) mod lost;
mod mined;
mod screening;
pub(crate) mod source;
pub(crate) mod sources;
