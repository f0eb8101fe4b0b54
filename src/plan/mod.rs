//! The layout: every node of a build, laid out from the pipeline's valid
//! settings. `layout` lays out the tasks (triage, trees, screening runs,
//! screen, tasks, environments) and the release; `grading` the sessions'
//! nodes; `sources` reads the repositories, `envs` the environments.

pub(crate) mod apps;
pub(crate) mod envs;
pub(crate) mod grading;
pub(crate) mod instances;
pub(crate) mod layout;
pub(crate) mod lost;
mod screening;
pub(crate) mod sources;
