//! `task`: assembles the released unit from the triage record, the screening
//! record and the statement ([`assemble`], a rule of the core). Its node key
//! is the released task's digest, so a changed statement re-releases that
//! task alone.
//!
//! On the Docker executor the environment is a third input: the task records
//! the image it was screened (certified) in, and a rebuilt image re-releases
//! it. Local tasks have no such input, so their keys are what they were.

use std::sync::Arc;

use assay_engine::JobCtx;

use super::adapter::{Kind, Made, NodeKind};
use super::blob;
use crate::model::records::{CertifyRecord, EnvRecord, ScreenRecord, TaskRecord, TriageRecord};
pub(crate) use crate::model::rules::task::TaskParams;
use crate::model::rules::task::assemble;
use crate::run::error::{Context, NodeError};

super::adapter::inputs! {
    pub(crate) struct TaskInputs / TaskNames {
        triage: TriageRecord,
        screen: ScreenRecord,
        certify: CertifyRecord;
        // Docker only: the environment that screened (certified) the task.
        ?env: EnvRecord
    }
}

pub(crate) struct Task(pub(crate) TaskParams);

impl Kind for Task {
    const NAME: &'static str = NodeKind::Task.as_str();
    /// 3: the graded runs' timeout from the screening readings.
    /// 4: the eval script resets every path the test patch writes as
    /// grading does (a file it creates or a rename makes removed).
    /// 5: the canaries certified for its tests (`canaries`), or why its
    /// grades are weakly checked.
    /// 6: the most output a screening reading wrote
    /// (`loudest_screening_log`).
    const VERSION: u32 = 6;
    type Params = TaskParams;
    type Inputs = TaskInputs;
    type Record = TaskRecord;

    fn params(&self) -> &TaskParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        i: TaskInputs,
        ctx: JobCtx,
    ) -> Result<Made<TaskRecord>, NodeError> {
        let p = &self.0;
        let patch = |d: &str| -> Result<String, NodeError> {
            let bytes = blob(&ctx, d).context(&p.instance_id)?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        };
        let (triage, screen) = (&i.triage, &i.screen);
        let mut record = assemble(
            p,
            triage,
            screen,
            patch(&triage.gold_patch)?,
            patch(&triage.test_patch)?,
        )
        // The topic patterns were compiled as the pipeline loaded.
        .map_err(|e| NodeError::internal(format!("{}: {e}", p.instance_id)))?;
        crate::model::rules::task::canaries_of(&mut record, &i.certify.record, p.timeout);
        if let Some(env) = i.env {
            record.executor = env.record.executor;
            record.image = env.record.image;
        }
        Ok(Made::record(record))
    }
}

/// Unix seconds as ISO 8601 UTC (`2024-05-01T12:00:00Z`), by the civil
/// calendar (Howard Hinnant's days-from-civil, inverted).
pub(crate) fn iso8601(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn iso8601_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601(1_714_564_800), "2024-05-01T12:00:00Z");
        assert_eq!(iso8601(-1), "1969-12-31T23:59:59Z");
    }
}
