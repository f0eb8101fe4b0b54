//! The operations a command runs on a build: lay it out and start its
//! executors (`build`), read its records back (`inspect`), export the
//! last release's tasks as Harbor folders (`export`), verify a graded
//! session inside a Harbor trial (`harbor_verify`), and audit a release
//! (`audit`). The layers below hold what the operations use: the node
//! kinds (`crate::nodes`), the planner (`crate::plan`), the run
//! (`crate::run`), the release's files (`crate::release`) and the model
//! (`crate::model`); docs/architecture.md.

pub(crate) mod audit;
pub(crate) mod build;
pub(crate) mod export;
pub(crate) mod harbor_verify;
pub(crate) mod inspect;
