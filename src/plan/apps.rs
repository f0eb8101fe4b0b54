//! The app tasks' part of the layout (`[[app]]`, on the pipeline's first
//! source): per task the controls — the reference and the base tree each
//! built once (`app_build`) and read `repeats` times through deployment,
//! probes and browser (`app_deploy`, `app_probe`, `app_browse`) — and
//! `app_certify` over them; per session naming the task, its own build,
//! deployment, probes and browser nodes and `app_grade`.
//!
//! Each layer's node keys only what it runs: a changed probe changes the
//! `app_probe` keys (and, through their outputs, the browser's), a changed
//! flow only the `app_browse` keys; the build and deployment are reused.
//!
//! The executor is the source's environment's, as for its mined tasks. On
//! docker the build is keyed by that environment's spec at the task's base
//! (its image is prepared by the build) and the later layers by the docker
//! confinement, so a docker reading and a local one have different keys;
//! on local, slurm included, nothing of the executor enters a key.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use assay_engine::NodeSpec;

use super::envs::{EnvSettings, KeyFiles};
use crate::model::config::Confinement;
use crate::model::names::{self, AppTree};
use crate::nodes::adapter::{self, NodeKind};
use crate::nodes::app_browse::{AppBrowse, AppBrowseNames, AppBrowseParams};
use crate::nodes::app_build::{AppBuild, AppBuildNames, AppBuildParams};
use crate::nodes::app_certify::{AppCertify, AppCertifyNames, AppCertifyParams};
use crate::nodes::app_deploy::{AppDeploy, AppDeployNames, AppDeployParams};
use crate::nodes::app_grade::{AppGrade, AppGradeNames, AppGradeParams};
use crate::nodes::app_probe::{AppProbe, AppProbeNames, AppProbeParams};
use crate::nodes::env::EnvParams;
use crate::nodes::release::{Input, ReleaseInputs};
use crate::pipeline::{AppSettings, Pipeline};
use crate::run::error::StageError;
use crate::run::executor::Executors;
use crate::run::redact::RedactConfig;

/// An app task as the sessions' layout needs it.
pub(crate) struct AppRef {
    pub(crate) settings: AppSettings,
    /// The base commit, resolved.
    pub(crate) base: String,
    pub(crate) max_patch_bytes: u64,
    /// What its builds and deployments launch through.
    pub(crate) executors: Arc<Executors>,
    /// On the docker executor: the environment its builds and deployments
    /// run in.
    pub(crate) docker: Option<AppEnv>,
}

/// An app task's environment on the docker executor: its `env` node's
/// params at the task's base, the key files' bytes, the setup's bound.
#[derive(Clone)]
pub(crate) struct AppEnv {
    pub(crate) params: EnvParams,
    pub(crate) files: KeyFiles,
    pub(crate) timeout: Duration,
}

impl AppRef {
    /// The deployments' confinement, on docker.
    fn confine(&self) -> Option<Confinement> {
        self.docker.as_ref().map(|d| d.params.confine.clone())
    }
}

/// Every app task's control nodes and `app_certify`, on `source` whose
/// environment is `env`; the tasks by name, for their sessions.
pub(crate) fn control_nodes(
    pipeline: &Pipeline,
    executors: &Arc<Executors>,
    (source, env, redact): (&assay_git::Source, &EnvSettings<'_>, &RedactConfig),
    store_dir: &std::path::Path,
    out: &mut Vec<NodeSpec>,
    release: &mut ReleaseInputs,
) -> Result<BTreeMap<String, AppRef>, StageError> {
    let settings = &pipeline.settings;
    let mut apps = BTreeMap::new();
    for app in &settings.apps {
        let resolve = |rev: &str| {
            source.resolve(rev).map_err(|e| {
                StageError::Config(pipeline.error_at(
                    app.span.clone(),
                    format!("app task `{}`: no commit `{rev}` in the source: {e}", app.name),
                    "this app task",
                    "`base` and `reference` name commits or refs of the pipeline's first [[source]]",
                ))
            })
        };
        let base = resolve(&app.base)?;
        let reference = resolve(&app.reference)?;
        let task = app.name.as_str();
        // An executor whose environment is an image (docker) builds and
        // deploys the app in the task's environment; the others on this
        // machine.
        let docker = if executors.of(&env.confine).env_is_artifact() {
            let (params, files) = super::envs::env_params(env, source, &base, redact)?;
            Some(AppEnv {
                params,
                files,
                timeout: Duration::from_secs(env.timeout.max(600)),
            })
        } else {
            None
        };
        let a = AppRef {
            settings: app.clone(),
            base,
            max_patch_bytes: settings.grade.caps.bytes,
            executors: executors.clone(),
            docker,
        };
        let repeats = settings.repeats.max(1);
        let mut readings = Vec::new();
        for (tree, commit) in [
            (AppTree::Reference(task), reference),
            (AppTree::Base(task), a.base.clone()),
        ] {
            out.push(build_node(&a, tree, commit, None, store_dir));
            for r in 0..repeats {
                readings.push(layer_nodes(&a, tree, Some(r), None, None, out));
            }
        }
        out.push(adapter::spec(
            names::app_certify(task),
            AppCertify(AppCertifyParams {
                task: task.to_owned(),
                repeats,
            }),
            AppCertifyNames {
                reference: names::app_build(AppTree::Reference(task)),
                base: names::app_build(AppTree::Base(task)),
                readings,
            },
        ));
        release.push(names::app_certify(task), Input::AppCertify);
        apps.insert(task.to_owned(), a);
    }
    Ok(apps)
}

/// A session's nodes on `app`, its session node `session_node`: the
/// build, the layers after it and `app_grade`, which feeds the release.
pub(crate) fn session_nodes(
    app: &AppRef,
    session_id: &str,
    session_node: &str,
    store_dir: &std::path::Path,
    out: &mut Vec<NodeSpec>,
    release: &mut ReleaseInputs,
) {
    let tree = AppTree::Session(session_id);
    let task = app.settings.name.as_str();
    out.push(build_node(
        app,
        tree,
        app.base.clone(),
        Some(session_node),
        store_dir,
    ));
    let reference = names::app_build(AppTree::Reference(task));
    let (deploy, probe, browse) = layer_nodes(
        app,
        tree,
        None,
        Some(reference),
        Some(names::app_certify(task)),
        out,
    );
    let name = names::app_grade(session_id);
    out.push(adapter::spec(
        name.clone(),
        AppGrade(AppGradeParams {
            task: task.to_owned(),
        }),
        AppGradeNames {
            certify: names::app_certify(task),
            session: session_node.to_owned(),
            build: names::app_build(tree),
            deploy,
            probe,
            browse,
        },
    ));
    release.push(name, Input::AppGrade);
}

fn build_node(
    app: &AppRef,
    tree: AppTree<'_>,
    commit: String,
    session: Option<&str>,
    store_dir: &std::path::Path,
) -> NodeSpec {
    let checks = &app.settings.checks;
    adapter::spec(
        names::app_build(tree),
        AppBuild {
            params: AppBuildParams {
                task: app.settings.name.clone(),
                commit,
                build: checks.build.clone(),
                admission: checks.admission.clone(),
                start_command: checks.start.command.clone(),
                max_patch_bytes: app.max_patch_bytes,
                env: app.docker.as_ref().map(|d| d.params.clone()),
            },
            store_dir: store_dir.to_owned(),
            executors: app.executors.clone(),
            env_files: app
                .docker
                .as_ref()
                .map(|d| d.files.clone())
                .unwrap_or_default(),
            env_timeout: app.docker.as_ref().map_or(Duration::ZERO, |d| d.timeout),
        },
        AppBuildNames {
            session: session.map(str::to_owned),
        },
    )
}

/// The deployment, probe and browser nodes of one reading of `tree`;
/// their names. A session's probes take the reference's build
/// (`reference`), its browser the task's controls (`certify`).
fn layer_nodes(
    app: &AppRef,
    tree: AppTree<'_>,
    repeat: Option<u32>,
    reference: Option<String>,
    certify: Option<String>,
    out: &mut Vec<NodeSpec>,
) -> (String, String, String) {
    let checks = &app.settings.checks;
    let build = names::app_build(tree);
    let deploy = names::app_layer(NodeKind::AppDeploy.as_str(), tree, repeat);
    let probe = names::app_layer(NodeKind::AppProbe.as_str(), tree, repeat);
    let browse = names::app_layer(NodeKind::AppBrowse.as_str(), tree, repeat);
    out.push(adapter::spec(
        deploy.clone(),
        AppDeploy(
            AppDeployParams {
                start: checks.start.clone(),
                repeat,
                confine: app.confine(),
            },
            app.executors.clone(),
        ),
        AppDeployNames {
            build: build.clone(),
        },
    ));
    out.push(adapter::spec(
        probe.clone(),
        AppProbe(
            AppProbeParams {
                start: checks.start.clone(),
                probes: checks.probes.clone(),
                repeat,
                confine: app.confine(),
            },
            app.executors.clone(),
        ),
        AppProbeNames {
            build: build.clone(),
            deploy: deploy.clone(),
            reference,
        },
    ));
    out.push(adapter::spec(
        browse.clone(),
        AppBrowse(
            AppBrowseParams {
                start: checks.start.clone(),
                flows: checks.flows.clone(),
                flow_s: checks.flow_s,
                repeat,
                confine: app.confine(),
            },
            app.executors.clone(),
        ),
        AppBrowseNames {
            build,
            deploy: deploy.clone(),
            probe: probe.clone(),
            certify,
        },
    ));
    (deploy, probe, browse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::ExecutorSetting;
    use crate::model::rules::app::{Admission, Start};
    use serde::Serialize;

    fn start() -> Start {
        Start {
            command: "python3 app.py".into(),
            port: 8000,
            ready_s: 10,
            probe_s: 5,
            services: Vec::new(),
        }
    }

    fn build(env: Option<EnvParams>) -> AppBuildParams {
        AppBuildParams {
            task: "t".into(),
            commit: "c".into(),
            build: Some("make".into()),
            admission: Admission::default(),
            start_command: "python3 app.py".into(),
            max_patch_bytes: 1,
            env,
        }
    }

    /// The app nodes' params as they were keyed before the docker executor
    /// ran app tasks.
    #[derive(Serialize)]
    struct BuildBefore {
        task: String,
        commit: String,
        build: Option<String>,
        admission: Admission,
        start_command: String,
        max_patch_bytes: u64,
    }

    #[derive(Serialize)]
    struct DeployBefore {
        start: Start,
        repeat: Option<u32>,
    }

    fn key<T: Serialize>(params: &T) -> Vec<u8> {
        assay_engine::encode_params(params)
    }

    #[test]
    fn a_local_app_node_keys_as_it_always_did_and_a_docker_one_apart() {
        let before = BuildBefore {
            task: "t".into(),
            commit: "c".into(),
            build: Some("make".into()),
            admission: Admission::default(),
            start_command: "python3 app.py".into(),
            max_patch_bytes: 1,
        };
        assert_eq!(key(&build(None)), key(&before));
        let deploy = |confine| AppDeployParams {
            start: start(),
            repeat: Some(0),
            confine,
        };
        let old = DeployBefore {
            start: start(),
            repeat: Some(0),
        };
        assert_eq!(key(&deploy(None)), key(&old));

        let conf = Confinement {
            executor: ExecutorSetting::Docker(crate::model::config::DockerSettings::default()),
            ..Confinement::default()
        };
        let env = EnvParams {
            setup: Vec::new(),
            key_files: Vec::new(),
            confine: conf.clone(),
            redact: RedactConfig::default(),
            export: false,
            at: None,
            warm: Vec::new(),
        };
        assert_ne!(key(&build(Some(env))), key(&before));
        assert_ne!(key(&deploy(Some(conf))), key(&old));
    }
}
