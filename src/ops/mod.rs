//! Stages turn the pipeline into engine nodes.
//!
//! - `nodes/`: one file per node kind — its params (the key), its job, its
//!   output record (`records`) — on the typed adapter of `node`;
//! - `plan/`: the layout, which lays the kinds' nodes out from the
//!   pipeline's valid settings (`layout`, then `grading` for the sessions),
//!   with the sources and environments it reads;
//! - `publish/`: the release's files, a pure function of the release node's
//!   inputs (shared with `assay verify --bundle`);
//! - `executor/`: where environments are prepared and runs happen, one
//!   module per executor behind one trait;
//! - beside them what several share: `guard` (Python's import guard),
//!   `redact`, `swebench`.
//!
//! The records, kinds, names and rules the operations decide with are the
//! model's (`crate::model`).

pub(crate) mod audit;
pub(crate) mod export;
pub(crate) mod harbor_verify;

use crate::model::kind::NodeKind;
use crate::model::{names, records};
use crate::nodes::step;
use crate::plan::layout;
use crate::run::executor;
use crate::run::harbor;

use std::sync::Arc;

use assay_engine::{Graph, GraphError, Store};

use crate::model::config::ExecutorKind;
use crate::pipeline::{ConfigError, Pipeline};
use crate::run::error::StageError;

/// For `verify --reexecute`: how a re-executed grade's verdict (a mined
/// task's, or a Harbor task verifier's) differs from
/// the stored one (`None` when it does not, or `kind` is not a grade).
pub(crate) fn verdict_change(
    kind: &str,
    stored: Option<&[u8]>,
    new: Option<&[u8]>,
) -> Option<String> {
    if kind != NodeKind::Grade && kind != NodeKind::HarborGrade {
        return None;
    }
    let read = |b: Option<&[u8]>| {
        b.and_then(|b| serde_json::from_slice::<records::GradeRecord>(b).ok())
            .map(|g| (g.verdict, g.fault))
    };
    let (before, after) = (read(stored)?, read(new)?);
    (before != after).then(|| {
        format!(
            "stored {} (fault {}), re-executed {} (fault {})",
            before.0, before.1, after.0, after.1
        )
    })
}

/// For `gc`: the staged tree a node of a kind that
/// [stages a tree](NodeKind::stages_a_tree) names in its output, if any.
pub(crate) fn staged_tree(output: &[u8]) -> Option<String> {
    /// Only the tree of a `TreeRecord`: a record whose other fields an
    /// older assay wrote otherwise still pins its tree.
    #[derive(serde::Deserialize)]
    struct Staged {
        tree: Option<String>,
    }
    serde_json::from_slice::<Staged>(output).ok()?.tree
}

/// For `gc --images`: the environment images a `harbor_task` node's output
/// names (the first build's and the rebuild's).
pub(crate) fn harbor_images(output: &[u8]) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Image {
        image: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Rebuilt {
        environment: Image,
    }
    #[derive(serde::Deserialize)]
    struct Screened {
        environment: Image,
        rebuild: Option<Rebuilt>,
    }
    let Ok(r) = serde_json::from_slice::<Screened>(output) else {
        return Vec::new();
    };
    [
        r.environment.image,
        r.rebuild.and_then(|b| b.environment.image),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The labels of the Harbor environment images built for the cache at
/// `cache_dir` (the first build's and the rebuild's).
pub(crate) fn harbor_image_labels(cache_dir: &std::path::Path) -> Vec<String> {
    harbor::screen::image_labels(cache_dir).to_vec()
}

/// For `verify`: every prepared environment directory whose contents no
/// longer match the digest recorded when it was set up, with why; an
/// index that cannot be read is [`StageError::Cache`].
pub(crate) fn damaged_environments(store: &Store) -> Result<Vec<(String, String)>, StageError> {
    let mut out = Vec::new();
    let index = store.load_index().map_err(StageError::cache)?;
    for key in store
        .keys_of_kind(NodeKind::Env.as_str())
        .map_err(StageError::cache)?
    {
        let Some(row) = index.get(&key) else { continue };
        let Ok(bytes) = store.output_bytes(row) else {
            continue;
        };
        let Ok(rec) = serde_json::from_slice::<records::EnvRecord>(&bytes) else {
            continue;
        };
        let executor::EnvHandle::HostDir(dir) = executor::EnvHandle::of(&rec, store.dir()) else {
            continue;
        };
        if !rec.ok || rec.digest.is_empty() || !dir.is_dir() {
            continue;
        }
        match executor::local::dir_digest(&dir) {
            Ok(d) if d == rec.digest => {}
            Ok(d) => out.push((
                rec.dir.clone(),
                format!("contents hash to {d}, recorded {} at setup", rec.digest),
            )),
            Err(e) => out.push((rec.dir.clone(), format!("cannot be read: {e}"))),
        }
    }
    Ok(out)
}

/// The graph of one build.
pub(crate) struct StagePlan {
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
pub(crate) fn plan(pipeline: &Pipeline, store: &Store) -> Result<StagePlan, StageError> {
    let mut nodes = Vec::new();
    let mut warnings = Vec::new();
    step::nodes(pipeline, &mut nodes)?;
    let service = Arc::new(executor::Executors::withholding(secret_variables(pipeline)));
    let in_use = layout::nodes(pipeline, store, &service, &mut nodes, &mut warnings)?;
    let graph = Graph::new(nodes).map_err(|e| graph_error(pipeline, e))?;
    Ok(StagePlan {
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

    /// After a build: what the executors held (an allocation) is released.
    pub(crate) fn finished(&self) {
        self.service.finished(&self.in_use);
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

/// `assay worker`: one run of the slurm executor on this node.
pub(crate) fn work(job: &std::path::Path) -> Result<(), crate::run::error::LaunchError> {
    executor::slurm_worker::work(job)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staged_tree_is_read_from_a_tree_record_whatever_else_it_holds() {
        assert_eq!(
            staged_tree(br#"{"tree":"abc","skipped":null,"hidden":["t.py"]}"#).as_deref(),
            Some("abc")
        );
        assert_eq!(staged_tree(br#"{"tree":null,"skipped":"x"}"#), None);
        assert_eq!(staged_tree(b"not json"), None);
    }
}
