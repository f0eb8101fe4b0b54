//! `app_build`: an app task's tree through its first three layers — the
//! artifacts (the session patch applies to the base; a control's tree is
//! the reference or base commit as it is), admission and the build, run
//! sandboxed in a fresh copy of the tree. The built tree is kept as a tar
//! blob: the later layers deploy it from there.
//!
//! On the docker executor the node first prepares the task's environment
//! image as an `env` node would (the same spec at the task's base: the
//! daemon reuses the image an `env` node built), builds in a container of
//! it, and records the image, which every later layer deploys in.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use assay_engine::JobCtx;
use assay_git::{PatchStep, TreeStore};
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::blob;
use super::env::EnvParams;
use crate::model::records::SessionRecord;
use crate::model::rules::app::{Admission, AppChecks, BuildRecord, Outcome, Start};
use crate::run::app::{self, Runner};
use crate::run::error::{Context, Kinded, NodeError};
use crate::run::executor::{Executors, Setup};

#[derive(Clone, Debug, Serialize)]
pub(crate) struct AppBuildParams {
    pub(crate) task: String,
    /// The commit the tree starts from (the base; the reference's own
    /// commit for the reference control), resolved.
    pub(crate) commit: String,
    pub(crate) build: Option<String>,
    pub(crate) admission: Admission,
    /// What admission reads of the start (the files it names).
    pub(crate) start_command: String,
    /// A larger session patch fails the artifacts layer before it is read.
    pub(crate) max_patch_bytes: u64,
    /// The docker executor: the task's environment, as its `env` node's
    /// params. Left out of the key when absent (local).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) env: Option<EnvParams>,
}

super::adapter::inputs! {
    /// A session's build takes its session; a control's nothing.
    pub(crate) struct AppBuildInputs / AppBuildNames { ; ?session: SessionRecord }
}

pub(crate) struct AppBuild {
    pub(crate) params: AppBuildParams,
    pub(crate) store_dir: PathBuf,
    pub(crate) executors: Arc<Executors>,
    /// With [`AppBuildParams::env`]: its key files' bytes and its setup's
    /// bound.
    pub(crate) env_files: Vec<(String, Vec<u8>)>,
    pub(crate) env_timeout: Duration,
}

impl Kind for AppBuild {
    const NAME: &'static str = NodeKind::AppBuild.as_str();
    const VERSION: u32 = 1;
    const OBSERVATION: bool = true;
    type Params = AppBuildParams;
    type Inputs = AppBuildInputs;
    type Record = BuildRecord;

    fn params(&self) -> &AppBuildParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: AppBuildInputs,
        ctx: JobCtx,
    ) -> Result<Made<BuildRecord>, NodeError> {
        let patch = match &i.session {
            Some(s) => Some(blob(&ctx, &s.patch)?),
            None => None,
        };
        let (runner, image, env_blobs) = match &self.params.env {
            None => (Runner::Local, None, Vec::new()),
            Some(env) => {
                let (image, blobs) = self.prepare(env, &ctx).await?;
                let runner = app::docker::DockerApp::new(
                    tokio::runtime::Handle::current(),
                    Arc::clone(&self.executors),
                    &env.confine,
                    image.clone(),
                )
                .map_or(Runner::Local, |d| Runner::Docker(Box::new(d)));
                (runner, image.ok(), blobs)
            }
        };
        let mut made = tokio::task::spawn_blocking(move || build(&self, &runner, patch, &ctx))
            .await
            .internal()??;
        made.record.image = image;
        made.attachments.extend(env_blobs);
        Ok(made)
    }

    /// Refused when the image it names is gone from the daemon: its
    /// deployments could not start.
    fn refuse_hit(&self, output: &[u8]) -> Option<String> {
        let image = serde_json::from_slice::<BuildRecord>(output).ok()?.image?;
        match self.executors.daemon().image_present(&image) {
            Some(false) => Some(format!(
                "the environment image it was built in ({image}) is gone from the Docker daemon"
            )),
            _ => None,
        }
    }
}

impl AppBuild {
    /// The task's environment image (or why there is none: its setup
    /// failed), and the blobs preparing it kept (its setup log).
    async fn prepare(
        &self,
        env: &EnvParams,
        ctx: &JobCtx,
    ) -> Result<(Result<String, String>, Vec<assay_engine::Digest>), NodeError> {
        let setup = Setup {
            commands: &env.setup,
            files: &self.env_files,
            timeout: self.env_timeout,
            redact: &env.redact,
            export: false,
            lost: None,
            at: env.at.as_deref(),
            warm: &env.warm,
            writable: &[],
        };
        let made = self.executors.of(&env.confine).prepare(setup, ctx).await?;
        let image = match (made.record.ok, made.record.image) {
            (true, Some(image)) => Ok(image),
            (true, None) => Err("the executor made no image".to_owned()),
            (false, _) => Err(format!(
                "its setup failed (setup log: `assay show {}`)",
                made.record.setup_log
            )),
        };
        Ok((image, made.attachments))
    }
}

fn build(
    node: &AppBuild,
    runner: &Runner,
    patch: Option<Vec<u8>>,
    ctx: &JobCtx,
) -> Result<Made<BuildRecord>, NodeError> {
    let p = &node.params;
    let bwrap = node.executors.bwrap().infra()?;
    let store = TreeStore::open_or_init(&node.store_dir).cache()?;
    let (tree, artifacts) = match patch {
        Some(patch) if patch.len() as u64 > p.max_patch_bytes => (
            None,
            Outcome::Fail {
                detail: format!(
                    "the patch is over the patch cap ({} bytes > {})",
                    patch.len(),
                    p.max_patch_bytes
                ),
            },
        ),
        patch => {
            let steps: Vec<PatchStep> = patch
                .into_iter()
                .map(|patch| PatchStep {
                    label: "session".into(),
                    patch,
                    exclude: Vec::new(),
                })
                .collect();
            match store.compose(&p.commit, &steps) {
                Ok(tree) => (Some(tree), Outcome::Pass),
                Err(assay_git::ComposeError::Git(e)) => return Err(NodeError::cache(e)),
                Err(e) => (
                    None,
                    Outcome::Fail {
                        detail: e.to_string(),
                    },
                ),
            }
        }
    };
    let scratch = tempfile::Builder::new()
        .prefix("assay-app-build-")
        .tempdir()
        .infra()?;
    let dir = scratch.path().join("tree");
    let work = scratch.path().join("work");
    std::fs::create_dir_all(&work).infra()?;
    std::fs::create_dir_all(&dir).infra()?;
    if let Some(tree) = &tree {
        store.materialize(tree, &dir).cache()?;
    }
    let checks = AppChecks {
        build: p.build.clone(),
        admission: p.admission.clone(),
        start: Start {
            command: p.start_command.clone(),
            port: 1,
            ready_s: 1,
            probe_s: 1,
            services: Vec::new(),
        },
        probes: Vec::new(),
        flows: Vec::new(),
        flow_s: 1,
    };
    let reading = app::build_layers(&bwrap, runner, &checks, artifacts, &dir, &work);
    let mut record = BuildRecord {
        stages: reading.stages,
        ms: reading.ms,
        tree: None,
        log: None,
        image: None,
    };
    let mut attachments = Vec::new();
    if let Ok(log) = std::fs::read(work.join("build.log")) {
        let d = ctx.blobs.put(&log).cache()?;
        attachments.push(d);
        record.log = Some(d.to_hex());
    }
    if record.stages.iter().all(|(_, o)| o.passed()) {
        match app::pack(&dir)
            .infra()
            .context("cannot read the built tree")?
        {
            Ok(tar) => {
                let d = ctx.blobs.put(&tar).cache()?;
                attachments.push(d);
                record.tree = Some(d.to_hex());
            }
            Err(detail) => {
                if let Some((_, o)) = record.stages.last_mut() {
                    *o = Outcome::Fail { detail };
                }
            }
        }
    }
    Ok(Made {
        record,
        attachments,
    })
}
