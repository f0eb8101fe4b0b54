//! `app_probe`: the probes layer — on the local executor the deployment
//! the deployment layer left serving in this build ([`Served::unpark`]),
//! else (and always on the docker executor) the built tree deployed
//! afresh; every probe sent from the app's network namespace with a fresh
//! nonce. A probe that gets no answer in time is sent again, in the same
//! job, to the task's reference deployed afresh: when the reference times
//! out too, the grade blames the harness (`rules::app::grade`). Skipped
//! when the deployment layer did not pass.

use std::sync::Arc;
use std::time::{Duration, Instant};

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::app_deploy::built;
use crate::model::config::Confinement;
use crate::model::rules::app::{
    BuildRecord, Check, DeployRecord, Outcome, Probe, ProbeRecord, Start,
};
use crate::run::app::{Runner, Served, deploy, park_key};
use crate::run::error::{Kinded, NodeError};
use crate::run::executor::Executors;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct AppProbeParams {
    pub(crate) start: Start,
    pub(crate) probes: Vec<Probe>,
    /// A control's reading index; `None` for a session's one reading.
    pub(crate) repeat: Option<u32>,
    /// The docker executor's confinement of the deployments. Left out of
    /// the key when absent (local).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) confine: Option<Confinement>,
}

super::adapter::inputs! {
    /// A session's probes take the task's reference build too.
    pub(crate) struct AppProbeInputs / AppProbeNames {
        build: BuildRecord, deploy: DeployRecord; ?reference: BuildRecord
    }
}

pub(crate) struct AppProbe(pub(crate) AppProbeParams, pub(crate) Arc<Executors>);

impl Kind for AppProbe {
    const NAME: &'static str = NodeKind::AppProbe.as_str();
    const VERSION: u32 = 2;
    const OBSERVATION: bool = true;
    type Params = AppProbeParams;
    type Inputs = AppProbeInputs;
    type Record = ProbeRecord;

    fn params(&self) -> &AppProbeParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        i: AppProbeInputs,
        ctx: JobCtx,
    ) -> Result<Made<ProbeRecord>, NodeError> {
        let tar = match built(&ctx, &i.build)? {
            Some(tar) if i.deploy.outcome.passed() => tar,
            _ => return Ok(Made::record(ProbeRecord::default())),
        };
        let reference = match &i.reference {
            Some(r) => built(&ctx, r)?,
            None => None,
        };
        let bwrap = self.1.bwrap().infra()?;
        let runner = Runner::after_build(&self.1, self.0.confine.as_ref(), &i.build);
        let reference_runner = match &i.reference {
            Some(r) => Runner::after_build(&self.1, self.0.confine.as_ref(), r),
            None => Runner::Local,
        };
        // Only this machine's deployments are parked (app_deploy).
        let key = match runner {
            Runner::Local => i.build.built().map(|tree| park_key(tree, &self.0.start)),
            Runner::Docker(_) => None,
        };
        let record = tokio::task::spawn_blocking(move || {
            let p = &self.0;
            let began = Instant::now();
            let served = key
                .and_then(|key| Served::unpark(self.1.parking(), &key))
                .unwrap_or_else(|| Served::start(&bwrap, &runner, &tar, &p.start));
            let probes = probe(served, &p.start, &p.probes);
            let ms = began.elapsed().as_millis() as u64;
            let timed_out: Vec<Probe> = p
                .probes
                .iter()
                .filter(|q| {
                    probes
                        .iter()
                        .any(|c| c.name == q.name && matches!(c.outcome, Outcome::TimedOut { .. }))
                })
                .cloned()
                .collect();
            let reference_now = match reference {
                Some(tar) if !timed_out.is_empty() => Some(probe(
                    Served::start(&bwrap, &reference_runner, &tar, &p.start),
                    &p.start,
                    &timed_out,
                )),
                _ => None,
            };
            ProbeRecord {
                probes,
                ms,
                reference_now,
            }
        })
        .await
        .internal()?;
        Ok(Made::record(record))
    }
}

/// `probes` sent to `served`, which is ended after; a deployment that did
/// not come up this time fails every probe with its reason.
fn probe(served: Served, start: &Start, probes: &[Probe]) -> Vec<Check> {
    match &served.deployment {
        Ok(d) => d.probe(probes, &deploy::nonce(), Duration::from_secs(start.probe_s)),
        Err(o) => probes
            .iter()
            .map(|q| Check {
                name: q.name.clone(),
                outcome: o.clone(),
                ms: 0,
            })
            .collect(),
    }
}
