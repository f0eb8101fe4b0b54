//! `app_certify`: an app task's controls — its reference and base trees
//! read through every layer `repeats` times — decided by
//! [`rules::app::certify`](crate::model::rules::app::certify). Pure: the readings
//! are its inputs.

use std::sync::Arc;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use crate::model::rules::app::{
    AppCertifyRecord, BrowseRecord, BuildRecord, DeployRecord, ProbeRecord, certify, reading_of,
};
use crate::run::error::NodeError;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct AppCertifyParams {
    pub(crate) task: String,
    /// Readings of each tree: the first `repeats` of the tail are the
    /// reference's, the rest the base's.
    pub(crate) repeats: u32,
}

super::adapter::inputs! {
    pub(crate) struct AppCertifyInputs / AppCertifyNames {
        reference: BuildRecord, base: BuildRecord;
        ..readings: [DeployRecord, ProbeRecord, BrowseRecord]
    }
}

pub(crate) struct AppCertify(pub(crate) AppCertifyParams);

impl Kind for AppCertify {
    const NAME: &'static str = NodeKind::AppCertify.as_str();
    const VERSION: u32 = 1;
    type Params = AppCertifyParams;
    type Inputs = AppCertifyInputs;
    type Record = AppCertifyRecord;

    fn params(&self) -> &AppCertifyParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        i: AppCertifyInputs,
        _ctx: JobCtx,
    ) -> Result<Made<AppCertifyRecord>, NodeError> {
        let n = self.0.repeats as usize;
        if i.readings.len() != 2 * n {
            return Err(NodeError::internal(format!(
                "{} readings, {} declared",
                i.readings.len(),
                2 * n
            )));
        }
        let read = |build: &BuildRecord, from: usize| {
            i.readings[from..from + n]
                .iter()
                .map(|(d, p, b)| reading_of(build, d, p, b))
                .collect::<Vec<_>>()
        };
        let reference = read(&i.reference, 0);
        let base = read(&i.base, n);
        Ok(Made::record(AppCertifyRecord {
            task: self.0.task.clone(),
            controls: certify(&reference, &base),
            reference,
            base,
        }))
    }
}
