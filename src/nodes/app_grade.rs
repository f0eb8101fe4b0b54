//! `app_grade`: a session's layers on an app task, assembled from its
//! build, deployment, probe and browser nodes and graded by
//! [`rules::app::grade`](crate::model::rules::app::grade) against the task's
//! controls: a verdict and a fault per layer, the session's effort beside
//! them. Pure: it runs nothing.

use std::sync::Arc;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use crate::model::records::SessionRecord;
use crate::model::rules::app::{
    AppCertifyRecord, AppGradeRecord, BrowseRecord, BuildRecord, DeployRecord, Effort, ProbeRecord,
    grade, reading_of, reference_reading,
};
use crate::run::error::NodeError;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct AppGradeParams {
    pub(crate) task: String,
}

super::adapter::inputs! {
    pub(crate) struct AppGradeInputs / AppGradeNames {
        certify: AppCertifyRecord,
        session: SessionRecord,
        build: BuildRecord,
        deploy: DeployRecord,
        probe: ProbeRecord,
        browse: BrowseRecord,
    }
}

pub(crate) struct AppGrade(pub(crate) AppGradeParams);

impl Kind for AppGrade {
    const NAME: &'static str = NodeKind::AppGrade.as_str();
    const VERSION: u32 = 1;
    type Params = AppGradeParams;
    type Inputs = AppGradeInputs;
    type Record = AppGradeRecord;

    fn params(&self) -> &AppGradeParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        i: AppGradeInputs,
        _ctx: JobCtx,
    ) -> Result<Made<AppGradeRecord>, NodeError> {
        let reading = reading_of(&i.build, &i.deploy, &i.probe, &i.browse);
        let controls = &i.certify.controls;
        // Graded on an uncertified task too, so its layers say what
        // happened; the release scores only certified tasks' grades.
        let graded = Some(grade(
            controls,
            &reading,
            reference_reading(&i.probe).as_ref(),
        ));
        let s = &i.session;
        Ok(Made::record(AppGradeRecord {
            session: s.id.clone(),
            task: self.0.task.clone(),
            agent: s.agent.clone(),
            model: s.model.clone(),
            certified: controls.certified,
            not_graded: (!controls.certified).then(|| {
                format!(
                    "the task's controls fail: {}",
                    controls.reason.as_deref().unwrap_or("uncertified")
                )
            }),
            grade: graded,
            ms: reading.ms,
            effort: Effort::of(&s.facts),
            failing_shot: i.browse.failing_shot().cloned(),
            image: i.build.image.clone(),
        }))
    }
}
