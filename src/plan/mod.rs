//! The layout: every node of a build, laid out from the pipeline's valid
//! settings. Each task source lays out its tasks (`source`: the seam;
//! `mined`, `harbor`, `deepswe`, `instances`, with the app tasks in
//! `apps`); `grading` lays out the sessions' and the attempts' nodes in
//! one pass; `layout` runs them in order and adds the release.
//! `sources` reads the repositories, `envs` the environments.

pub(crate) mod apps;
mod deepswe;
pub(crate) mod envs;
pub(crate) mod grading;
mod harbor;
pub(crate) mod instances;
pub(crate) mod layout;
pub(crate) mod lost;
mod mined;
mod screening;
pub(crate) mod source;
pub(crate) mod sources;
