//! The seam between the task sources and the rest of the layout. Each
//! source of tasks (mined `[[source]]`s and their app tasks, Harbor
//! folders, Deep-SWE-shaped folders, `[[instances]]` rows) is a
//! [`TaskSource`]: it lays out its tasks' nodes and hands each task to
//! [`Laid`]. The grading layout and the release read only `Laid`, so a
//! session file and an agent's attempt are graded the same way whichever
//! source made their task.
//!
//! The sources lay out in a fixed order, and the release's inputs keep
//! that order (the release node's key is over them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use assay_engine::NodeSpec;

use super::apps::AppRef;
use super::envs::EnvSettings;
use crate::model::config::{Confinement, DockerSettings, ExecutorSetting, SlurmSettings};
use crate::nodes::release::{InstanceRows, ReleaseInputs};
use crate::pipeline::Pipeline;
use crate::run::error::StageError;
use crate::run::executor::Executors;
use crate::run::redact::RedactConfig;

/// What every task source lays out with.
pub(super) struct Cx<'p> {
    pub(super) pipeline: &'p Pipeline,
    pub(super) executors: &'p Arc<Executors>,
    /// The build cache's directory.
    pub(super) cache_dir: &'p Path,
    /// The tree store's directory (`<cache>/git`).
    pub(super) store_dir: PathBuf,
    pub(super) redact: RedactConfig,
}

impl<'p> Cx<'p> {
    pub(super) fn new(
        pipeline: &'p Pipeline,
        cache_dir: &'p Path,
        executors: &'p Arc<Executors>,
    ) -> Self {
        let settings = &pipeline.settings;
        Cx {
            pipeline,
            executors,
            cache_dir,
            store_dir: cache_dir.join("git"),
            redact: RedactConfig {
                patterns: settings.redact_patterns.clone(),
                env: settings.redact_env.clone(),
            },
        }
    }
}

/// A provider of tasks.
pub(super) trait TaskSource<'e> {
    /// Appends its tasks' nodes to `out` and hands each task to `laid`.
    fn lay_out(
        &self,
        cx: &Cx<'_>,
        out: &mut Vec<NodeSpec>,
        laid: &mut Laid<'e>,
        warnings: &mut Vec<String>,
    ) -> Result<(), StageError>;
}

/// What the task sources hand the grading layout and the release.
#[derive(Default)]
pub(super) struct Laid<'e> {
    /// env node -> the settings of that environment.
    pub(super) env_of: BTreeMap<String, &'e EnvSettings<'e>>,
    /// (instance id, track) -> (task node, env node).
    pub(super) task_nodes: BTreeMap<(String, String), (String, String)>,
    /// instance id -> its gold tree node.
    pub(super) gold_trees: BTreeMap<String, String>,
    /// The Harbor tasks, by every name a session may give them.
    pub(super) harbor: BTreeMap<String, HarborRef>,
    /// The app tasks, by name.
    pub(super) apps: BTreeMap<String, AppRef>,
    /// The `[[instances]]` tasks by the instance's own `instance_id`.
    pub(super) instance_ids: BTreeMap<String, Vec<String>>,
    /// The `[[instances]]` rows, for the funnel (none without rows).
    pub(super) instance_rows: Option<InstanceRows>,
    /// The release's inputs, in the order laid out.
    pub(super) release: ReleaseInputs,
}

/// A Harbor task of a `[[harbor_dataset]]` that a session may name (by
/// `<dataset>/<folder>` or by its `[task] name`).
#[derive(Clone, Debug)]
pub(crate) struct HarborRef {
    /// Its `harbor_task` node.
    pub(crate) node: String,
    /// `<dataset>/<folder>`.
    pub(crate) id: String,
    pub(crate) path: PathBuf,
    pub(crate) files: Vec<(String, u32, String)>,
    /// The network its `task.toml` declares (its graded runs have it).
    pub(crate) network: crate::run::harbor::screen::NetworkMode,
}

/// The docker executor's confinement of a task's own image (a Harbor
/// task's or an instance's): the image is the output of the node named
/// `image_node`, put in place when the environment is made. Its containers
/// start on this machine's daemon, or on the nodes of the cluster
/// `on_cluster` names.
pub(crate) fn image_confinement(
    image_node: &str,
    on_cluster: Option<SlurmSettings>,
) -> Confinement {
    Confinement {
        executor: ExecutorSetting::Docker(DockerSettings {
            base_image: image_node.to_owned(),
            cpu_millis: None,
            on_cluster,
        }),
        ..Default::default()
    }
}
