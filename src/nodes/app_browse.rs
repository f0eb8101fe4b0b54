//! `app_browse`: the browser layer — the built tree deployed afresh, every
//! flow run in a fresh headless Chromium that reaches only the app's
//! loopback. Every step's screenshot is kept as a blob the record names.
//! Skipped when the deployment did not pass, or, for a session, when a
//! probe its task's controls keep failed
//! ([`browser_due`](crate::model::rules::app::browser_due)).

use std::sync::Arc;
use std::time::{Duration, Instant};

use assay_browser::Flow;
use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::app_deploy::built;
use crate::model::config::Confinement;
use crate::model::rules::app::{
    AppCertifyRecord, BrowseRecord, BuildRecord, Check, DeployRecord, ProbeRecord, Shot, Start,
    browser_due,
};
use crate::run::app::{self, Runner, Served};
use crate::run::error::{Kinded, NodeError};
use crate::run::executor::Executors;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct AppBrowseParams {
    pub(crate) start: Start,
    pub(crate) flows: Vec<Flow>,
    pub(crate) flow_s: u64,
    /// A control's reading index; `None` for a session's one reading.
    pub(crate) repeat: Option<u32>,
    /// The docker executor's confinement of the deployments. Left out of
    /// the key when absent (local).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) confine: Option<Confinement>,
}

super::adapter::inputs! {
    /// A session's browser takes its task's controls too: the flaky
    /// probes they keep out.
    pub(crate) struct AppBrowseInputs / AppBrowseNames {
        build: BuildRecord, deploy: DeployRecord, probe: ProbeRecord;
        ?certify: AppCertifyRecord
    }
}

pub(crate) struct AppBrowse(pub(crate) AppBrowseParams, pub(crate) Arc<Executors>);

impl Kind for AppBrowse {
    const NAME: &'static str = NodeKind::AppBrowse.as_str();
    const VERSION: u32 = 2;
    const OBSERVATION: bool = true;
    type Params = AppBrowseParams;
    type Inputs = AppBrowseInputs;
    type Record = BrowseRecord;

    fn params(&self) -> &AppBrowseParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        i: AppBrowseInputs,
        ctx: JobCtx,
    ) -> Result<Made<BrowseRecord>, NodeError> {
        let flaky = i
            .certify
            .as_ref()
            .map(|c| c.controls.flaky_probes.as_slice());
        if self.0.flows.is_empty() || !browser_due(&i.deploy, &i.probe, flaky) {
            return Ok(Made::record(BrowseRecord::default()));
        }
        let Some(tar) = built(&ctx, &i.build)? else {
            return Ok(Made::record(BrowseRecord::default()));
        };
        let bwrap = self.1.bwrap().infra()?;
        let chromium = app::chromium();
        let runner = Runner::after_build(&self.1, self.0.confine.as_ref(), &i.build);
        let node = Arc::clone(&self);
        let (flows, ms) = tokio::task::spawn_blocking(move || {
            let p = &node.0;
            let began = Instant::now();
            let served = Served::start(&bwrap, &runner, &tar, &p.start);
            let flows = match &served.deployment {
                Ok(d) => d.browse(&p.flows, &chromium, Duration::from_secs(p.flow_s)),
                Err(o) => p
                    .flows
                    .iter()
                    .map(|f| {
                        let check = Check {
                            name: f.name.clone(),
                            outcome: o.clone(),
                            ms: 0,
                        };
                        (check, Vec::new())
                    })
                    .collect(),
            };
            (flows, began.elapsed().as_millis() as u64)
        })
        .await
        .internal()?;
        let mut record = BrowseRecord {
            flows: Vec::new(),
            ms,
            shots: Vec::new(),
        };
        let mut attachments = Vec::new();
        for (check, steps) in flows {
            for step in steps {
                let png = if step.screenshot_png.is_empty() {
                    String::new()
                } else {
                    let d = ctx.blobs.put(&step.screenshot_png).cache()?;
                    attachments.push(d);
                    d.to_hex()
                };
                record.shots.push(Shot {
                    flow: check.name.clone(),
                    step: step.index,
                    ok: step.ok,
                    detail: step.detail,
                    png,
                });
            }
            record.flows.push(check);
        }
        Ok(Made {
            record,
            attachments,
        })
    }
}
