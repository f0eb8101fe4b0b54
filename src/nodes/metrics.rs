//! `metrics`: the shape of what was graded — the session patch after the
//! exclusion policy of the scored arm. The measure is
//! [`shape`](crate::model::rules::shape); this node fetches the patch and stores
//! the record.

use std::sync::Arc;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::blob;
use crate::model::records::{MetricsRecord, SessionRecord, TaskRecord};
use crate::model::rules::policy::{PatchCaps, Policy, globset};
use crate::model::rules::shape::shape;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct MetricsParams {
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
    pub(crate) caps: PatchCaps,
}

super::adapter::inputs! {
    pub(crate) struct MetricsInputs / MetricsNames { task: TaskRecord, session: SessionRecord }
}

pub(crate) struct Metrics(pub(crate) MetricsParams);

impl Kind for Metrics {
    const NAME: &'static str = NodeKind::Metrics.as_str();
    /// 2: sections read as `git apply` reads them.
    const VERSION: u32 = 2;
    type Params = MetricsParams;
    type Inputs = MetricsInputs;
    type Record = MetricsRecord;

    fn params(&self) -> &MetricsParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        i: MetricsInputs,
        ctx: JobCtx,
    ) -> Result<Made<MetricsRecord>, crate::run::error::NodeError> {
        let p = &self.0;
        let (task, session) = (&i.task, &i.session);
        let patch = blob(&ctx, &session.patch)?;
        let tests = crate::run::error::Kinded::internal(globset(&p.test_globs))?;
        Ok(Made::record(shape(
            &session.id,
            &patch,
            task,
            p.policy,
            &tests,
            p.caps,
        )))
    }
}
