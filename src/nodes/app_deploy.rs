//! `app_deploy`: the deployment layer — a built app tree unpacked afresh
//! and started in its sandbox until it listens on its port (or exits, or
//! its readiness bound passes). On the local executor one that listens is
//! left serving, under its limits, for the probes of the same built tree
//! ([`Served::park`](crate::run::app::Served::park)); anything else
//! (a container on the docker executor included) is stopped. Skipped when
//! the build did not pass.

use std::sync::Arc;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::blob;
use crate::model::config::Confinement;
use crate::model::rules::app::{BuildRecord, DeployRecord, Outcome, Start};
use crate::run::app::{Runner, Served, park_key};
use crate::run::error::{Kinded, NodeError};
use crate::run::executor::Executors;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct AppDeployParams {
    pub(crate) start: Start,
    /// A control's reading index; `None` for a session's one reading.
    pub(crate) repeat: Option<u32>,
    /// The docker executor's confinement of the deployments. Left out of
    /// the key when absent (local).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) confine: Option<Confinement>,
}

super::adapter::inputs! {
    pub(crate) struct AppDeployInputs / AppDeployNames { build: BuildRecord }
}

pub(crate) struct AppDeploy(pub(crate) AppDeployParams, pub(crate) Arc<Executors>);

impl Kind for AppDeploy {
    const NAME: &'static str = NodeKind::AppDeploy.as_str();
    const VERSION: u32 = 2;
    const OBSERVATION: bool = true;
    type Params = AppDeployParams;
    type Inputs = AppDeployInputs;
    type Record = DeployRecord;

    fn params(&self) -> &AppDeployParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        i: AppDeployInputs,
        ctx: JobCtx,
    ) -> Result<Made<DeployRecord>, NodeError> {
        let Some(tar) = built(&ctx, &i.build)? else {
            return Ok(Made::record(DeployRecord {
                outcome: Outcome::Skipped,
                ms: 0,
                log: None,
            }));
        };
        let bwrap = self.1.bwrap().infra()?;
        let runner = Runner::after_build(&self.1, self.0.confine.as_ref(), &i.build);
        // Parked on this machine only: a container is started afresh by
        // every layer (docs/stages.md).
        let key = match runner {
            Runner::Local => i.build.built().map(|tree| park_key(tree, &self.0.start)),
            Runner::Docker(_) => None,
        };
        let executors = self.1.clone();
        let (outcome, ms, log) = tokio::task::spawn_blocking(move || {
            let served = Served::start(&bwrap, &runner, &tar, &self.0.start);
            let outcome = match &served.deployment {
                Ok(_) => Outcome::Pass,
                Err(o) => o.clone(),
            };
            let (ms, log) = (served.ms, served.log());
            if let Some(key) = key {
                served.park(executors.parking(), key);
            }
            (outcome, ms, log)
        })
        .await
        .internal()?;
        let d = ctx.blobs.put(&log).cache()?;
        Ok(Made {
            record: DeployRecord {
                outcome,
                ms,
                log: Some(d.to_hex()),
            },
            attachments: vec![d],
        })
    }
}

/// The built tree's tar, when the build passed.
pub(crate) fn built(ctx: &JobCtx, build: &BuildRecord) -> Result<Option<Vec<u8>>, NodeError> {
    match build.built() {
        Some(hex) => blob(ctx, hex).map(Some),
        None => Ok(None),
    }
}
