//! Stages turn the pipeline into engine nodes. Each stage module owns one node
//! kind: its params (the key), its job, and its output record.

mod confine;
mod docker;
mod env;
mod envs;
mod grade;
mod grading;
mod layout;
mod metrics;
mod publish;
mod records;
mod redact;
mod release;
mod run;
mod screen;
mod sources;
mod step;
mod task;
mod tree;
mod triage;

pub(crate) use records::RunFacts;
pub(crate) use release::{ReleaseParams, ReleaseRecord, assemble};
pub(crate) use sources::parse_date;

use assay_engine::{GraphError, NodeSpec, Store};

use crate::cli::Failure;
use crate::pipeline::{ConfigError, Pipeline};

/// The nodes of one build.
pub(crate) struct StagePlan {
    pub(crate) nodes: Vec<NodeSpec>,
    /// The base images of the docker environments in use (none: local only).
    pub(crate) docker_bases: std::collections::BTreeSet<String>,
}

/// Reads the sources the pipeline names and lays out every node.
pub(crate) fn plan(
    pipeline: &Pipeline,
    store: &Store,
    _rt: &tokio::runtime::Runtime,
) -> Result<StagePlan, Failure> {
    let mut nodes = Vec::new();
    step::nodes(pipeline, &mut nodes)?;
    let docker_bases = layout::nodes(pipeline, store.dir(), &mut nodes)?;
    Ok(StagePlan {
        nodes,
        docker_bases,
    })
}

/// Before a build on the docker executor: connect, clean up after killed
/// builds, check the base images (see `docker`).
pub(crate) fn start_docker(plan: &StagePlan, rt: &tokio::runtime::Runtime) -> Result<(), Failure> {
    if plan.docker_bases.is_empty() {
        return Ok(());
    }
    docker::start(rt, &plan.docker_bases)
}

/// A graph error points at the step that caused it where the file names one.
pub(crate) fn graph_error(pipeline: &Pipeline, e: GraphError) -> Failure {
    let name_of = |n: &str| n.strip_prefix("step:").unwrap_or(n).to_owned();
    let span_of = |n: &str| {
        pipeline
            .file
            .step
            .iter()
            .find(|s| s.name.get_ref() == &name_of(n))
            .map(|s| s.name.span())
    };
    let err = match &e {
        GraphError::Cycle(names) => match span_of(&names[0]) {
            Some(span) => pipeline.error_at(
                span,
                format!("{e}"),
                "this step is on the cycle",
                "a step cannot depend, directly or not, on itself: remove one of the `deps` on the cycle",
            ),
            None => ConfigError::plain(format!("{e}"), "remove one of the dependencies on the cycle"),
        },
        GraphError::Dangling { node, missing } => match span_of(node) {
            Some(span) => pipeline.error_at(
                span,
                format!("{e}"),
                format!("needs `{}`", name_of(missing)),
                "name a step defined in this file",
            ),
            None => ConfigError::plain(format!("{e}"), "name a node defined in this file"),
        },
        GraphError::DuplicateName(n) => match span_of(n) {
            Some(span) => pipeline.error_at(span, format!("{e}"), "defined again here", "give each step its own name"),
            None => ConfigError::plain(format!("{e}"), "give each node its own name"),
        },
    };
    err.into()
}
