//! A build's setup: the graph laid out from the pipeline, and the
//! executors its nodes launch through, started before the build and cleaned
//! up after it (shared by `build`, `plan` and `verify --reexecute`).

use std::sync::Arc;

use assay_engine::{Graph, GraphError, Store};

use crate::model::config::ExecutorKind;
use crate::model::names;
use crate::nodes::step;
use crate::pipeline::{ConfigError, Pipeline};
use crate::plan::layout;
use crate::run::error::StageError;
use crate::run::executor;

/// The graph of one build.
pub(crate) struct BuildPlan {
    pub(crate) graph: Graph,
    /// The executors the build's nodes launch through, and the settings its
    /// environments use: started before the build, cleaned up after it.
    pub(crate) executors: BuildExecutors,
    /// Environment node name -> the executor its runs go to (`plan`).
    pub(crate) env_executors: std::collections::BTreeMap<String, ExecutorKind>,
    /// What the user should know before the build runs (a session file that
    /// cannot be read, a session naming no task, an unsandboxed environment,
    /// a skipped judge), rendered; the CLI prints them.
    pub(crate) warnings: Vec<String>,
}

/// Reads the sources the pipeline names and lays out every node: the one
/// setup `build`, `plan` and `verify --reexecute` share.
pub(crate) fn lay_out(pipeline: &Pipeline, store: &Store) -> Result<BuildPlan, StageError> {
    let mut nodes = Vec::new();
    let mut warnings = Vec::new();
    step::nodes(pipeline, &mut nodes)?;
    let service = Arc::new(executor::Executors::withholding(secret_variables(pipeline)));
    let in_use = layout::nodes(pipeline, store, &service, &mut nodes, &mut warnings)?;
    let graph = Graph::new(nodes).map_err(|e| graph_error(pipeline, e))?;
    Ok(BuildPlan {
        graph,
        executors: BuildExecutors {
            service,
            in_use: in_use.confinements,
            harbor: !pipeline.settings.harbor_datasets.is_empty()
                || !pipeline.settings.instances.is_empty(),
        },
        env_executors: in_use.env_nodes,
        warnings,
    })
}

/// The variables of assay's environment that hold the pipeline's secrets:
/// every agent's `key_env`, every judge's `api_key_env`, `[redact] env`.
fn secret_variables(pipeline: &Pipeline) -> Vec<String> {
    let settings = &pipeline.settings;
    let mut names: Vec<String> = settings
        .agents
        .iter()
        .filter_map(|a| a.endpoint.as_ref().and_then(|e| e.key_env.clone()))
        .chain(
            pipeline
                .judges
                .iter()
                .filter_map(|j| j.settings.api_key_env.clone()),
        )
        .chain(settings.redact_env.iter().cloned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// A build's executors: the one [`executor::Executors`] its nodes hold,
/// and one confinement per executor setting its environments use.
pub(crate) struct BuildExecutors {
    service: Arc<executor::Executors>,
    in_use: Vec<crate::model::config::Confinement>,
    /// Harbor tasks and `[[instances]]` run containers through the daemon
    /// whatever the executors in use.
    harbor: bool,
}

impl BuildExecutors {
    /// Before a build: every executor in use starts (connects, cleans up
    /// after killed builds, checks what it needs); the first failure fails
    /// the build. What they have to say, for the CLI to print.
    pub(crate) fn start(&self, rt: &tokio::runtime::Runtime) -> Result<Vec<String>, StageError> {
        let mut said = Vec::new();
        // A daemon that does not answer fails the Harbor tasks alone, each
        // with the reason, not the build.
        if self.harbor {
            match self.service.daemon().sweep(rt) {
                Ok(swept) => said.extend(swept),
                Err(e) => said.push(format!("warning: Harbor tasks: {e}")),
            }
        }
        said.extend(self.service.start(&self.in_use, rt)?);
        Ok(said)
    }

    /// After a build, on its runtime: what the executors held (an
    /// allocation, containers created ahead) is released and what they
    /// left under way (removals) finished. What they have to say, for the
    /// CLI to print.
    pub(crate) fn finished(&self, rt: &tokio::runtime::Runtime) -> Vec<String> {
        let mut said = self.service.finished(&self.in_use, rt);
        // Harbor tasks' and instances' runs went through the daemon's fleet
        // whatever the executors in use (drained once, whoever asks first).
        if self.harbor {
            said.extend(self.service.daemon().finished(rt));
        }
        said
    }

    /// After ctrl-c: what this build started outside its own process tree
    /// (containers, allocations) goes too.
    pub(crate) fn interrupted(&self) -> Vec<String> {
        let mut said = self.service.interrupted(&self.in_use);
        if self.harbor {
            said.extend(self.service.daemon().remove_own_containers());
        }
        said
    }
}

/// A graph error points at the step that caused it where the file names one.
fn graph_error(pipeline: &Pipeline, e: GraphError) -> ConfigError {
    let name_of = |n: &str| names::step_of(n).unwrap_or(n).to_owned();
    let span_of = |n: &str| {
        pipeline
            .settings
            .steps
            .iter()
            .find(|s| s.name.get_ref() == &name_of(n))
            .map(|s| s.name.span())
    };
    match &e {
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
    }
}
