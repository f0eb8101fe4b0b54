//! Lays out every node of a build: each task source's tasks (`source`:
//! mined `[[source]]`s with their app tasks, Harbor folders, Deep-SWE-shaped
//! folders, `[[instances]]` rows), then one pass of grading over the
//! session files and the agents' attempts (`grading`), then one release
//! node over all of it.

use std::collections::BTreeMap;
use std::sync::Arc;

use assay_engine::{NodeSpec, Store};

use super::deepswe::{DeepSwe, DeepSweFolder};
use super::envs::{EnvSettings, Envs};
use super::grading::{GradeLayout, Ungraded, grade_nodes};
use super::harbor::{HarborFolders, harbor_changed};
use super::instances::Instances;
use super::mined::Mined;
use super::source::{Cx, Laid, TaskSource};
use crate::model::config::{Confinement, ExecutorSetting};
use crate::model::names;
use crate::nodes::adapter;
use crate::nodes::release::{self, InstanceRows};
use crate::pipeline::Pipeline;
use crate::release::Price;
use crate::run::error::StageError;
use crate::run::executor::{Executors, InUse};

/// Every node of the benchmark part of the pipeline, appended to `out`.
/// Returns the confinements of the executors in use (one per setting), and
/// which executor each environment node's runs go to.
pub(crate) fn nodes(
    pipeline: &Pipeline,
    store: &Store,
    executors: &Arc<Executors>,
    out: &mut Vec<NodeSpec>,
    warnings: &mut Vec<String>,
) -> Result<InUse, StageError> {
    let settings = &pipeline.settings;
    let envs = match settings.sources.is_empty() {
        true => None,
        false => Some(Envs::resolve(pipeline, executors, warnings)?),
    };
    // Every source's environment is checked before any source is read.
    let mut confinements = match &envs {
        Some(envs) => envs.executors(pipeline, &settings.sources)?,
        None => Vec::new(),
    };
    let folders = super::deepswe::folders(pipeline)?;
    let folder_envs: Vec<EnvSettings<'_>> = folders.iter().map(DeepSweFolder::settings).collect();
    let rows = super::instances::instance_tasks(pipeline)?;
    let on_cluster = settings.image_placement();
    let row_envs: Vec<EnvSettings<'_>> = rows
        .iter()
        .map(|row| row.settings(on_cluster.clone()))
        .collect();
    // The cluster the instances' containers start on is started, and its
    // allocation given back, with the build's executors.
    if let Some(slurm) = on_cluster.filter(|_| !rows.is_empty()) {
        let cluster = Confinement {
            executor: ExecutorSetting::Slurm(slurm),
            ..Confinement::default()
        };
        if !confinements.contains(&cluster) {
            confinements.push(cluster);
        }
    }
    // In this order: the release's inputs keep it.
    let sources: [&dyn TaskSource<'_>; 4] = [
        &Mined(envs.as_ref()),
        &HarborFolders,
        &DeepSwe {
            folders: &folders,
            envs: &folder_envs,
        },
        &Instances {
            rows: &rows,
            envs: &row_envs,
        },
    ];
    let cx = Cx::new(pipeline, store.dir(), executors);
    let mut laid = Laid::default();
    for source in sources {
        source.lay_out(&cx, out, &mut laid, warnings)?;
    }
    if settings.sources.is_empty() && laid.harbor.is_empty() && rows.is_empty() {
        // No task: no grading and no release.
        return Ok(InUse::default());
    }
    let env_nodes = laid
        .env_of
        .iter()
        .map(|(name, env)| (name.clone(), env.confine.executor.placed()))
        .collect();
    graded_release(&cx, store, laid, out, warnings)?;
    Ok(InUse {
        confinements,
        env_nodes,
    })
}

/// The grading nodes of the session files and the attempts, then the
/// release node over them and every task.
fn graded_release(
    cx: &Cx<'_>,
    store: &Store,
    mut laid: Laid<'_>,
    out: &mut Vec<NodeSpec>,
    warnings: &mut Vec<String>,
) -> Result<(), StageError> {
    let mut release_inputs = std::mem::take(&mut laid.release);
    let g = GradeLayout::of(cx, &laid);
    let ungraded = grade_nodes(cx.pipeline, store, &g, out, &mut release_inputs, warnings)?;
    out.push(release_node(
        cx.pipeline,
        (ungraded, laid.instance_rows.take()),
        release_inputs,
        warnings,
    ));
    Ok(())
}

/// The release node over every task, session, grade, metrics and judge reading.
fn release_node(
    pipeline: &Pipeline,
    (ungraded, instance_rows): (Ungraded, Option<InstanceRows>),
    release_inputs: release::ReleaseInputs,
    warnings: &mut Vec<String>,
) -> NodeSpec {
    let prices: BTreeMap<String, Price> = pipeline
        .settings
        .prices
        .iter()
        .map(|(k, v)| (k.clone(), Price(v.clone())))
        .collect();
    let (release_deps, inputs) = release_inputs.split();
    let params = release::ReleaseParams {
        prices,
        not_graded: ungraded.not_graded,
        trials: ungraded.jobs,
        judges: crate::nodes::judge::release_info(pipeline, warnings),
        inputs,
        provenance: Some(crate::run::provenance::Provenance::of(&pipeline.text)),
        harbor_changed: harbor_changed(pipeline),
        instance_rows,
    };
    adapter::spec(
        names::RELEASE.into(),
        release::Release(params),
        release_deps,
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::model::names;
    use crate::run::attempt::session_id;

    /// A pipeline of Harbor folders alone goes through the one seam: its
    /// tasks, an agent's attempts graded by each reward-only task's own
    /// verifier, and one release whose inputs keep the order laid out.
    #[test]
    fn harbor_folders_alone_lay_out_tasks_attempts_and_one_release() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for folder in ["a", "b"] {
            let dir = root.join("tb").join(folder);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("task.toml"), "").unwrap();
            std::fs::write(dir.join("instruction.md"), "do it").unwrap();
        }
        std::fs::write(
            root.join("pipeline.toml"),
            "[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n\n\
             [[agent]]\nlabel = \"x\"\nmodel = \"m\"\ncommand = \"true\"\n",
        )
        .unwrap();
        let pipeline = crate::pipeline::Pipeline::load(&root.join("pipeline.toml")).unwrap();
        let store = assay_engine::Store::open(&root.join("cache")).unwrap();
        let executors = Arc::new(crate::run::executor::Executors::withholding(Vec::new()));
        let (mut out, mut warnings) = (Vec::new(), Vec::new());
        let in_use = super::nodes(&pipeline, &store, &executors, &mut out, &mut warnings).unwrap();
        let release = out.iter().find(|n| n.name == names::RELEASE).unwrap();
        let mut expected = vec![names::harbor_task("tb", "a"), names::harbor_task("tb", "b")];
        for task in ["tb/a", "tb/b"] {
            let id = session_id("x", task, "basic", 0);
            expected.extend([names::attempt(&id), names::harbor_grade(&id)]);
        }
        assert_eq!(release.deps, expected);
        // Each attempt runs in its task's own image, made once.
        let envs = out
            .iter()
            .filter(|n| n.name.starts_with("swe_env:"))
            .count();
        assert_eq!(envs, 2);
        assert!(in_use.confinements.is_empty());
    }
}
