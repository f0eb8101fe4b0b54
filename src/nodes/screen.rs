//! `screen`: the node that reduces a candidate's readings (base, test patch
//! only, test and gold, each read `repeats` times) to FAIL_TO_PASS,
//! PASS_TO_PASS, flaky tests and the controls. The rule is
//! [`screening`](crate::model::rules::screening); this node decodes the runs into
//! their states, fetches the test patch and the logs, and stores the record.

use std::sync::Arc;

use assay_engine::{Digest, JobCtx};
use assay_report::Format;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use crate::model::records::{RunRecord, ScreenRecord, TriageRecord};
pub(crate) use crate::model::rules::screening::readings;
use crate::model::rules::screening::{self, Runs, Scope};
use crate::run::error::NodeError;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct ScreenParams {
    pub(crate) repeats: u32,
    /// How test ids map to the units that did not build.
    pub(crate) report: Format,
    /// `[screen] scope`; left out of the key at its default (`suite`), so
    /// a screen at the default keys as one without the setting.
    #[serde(skip_serializing_if = "Scope::is_suite")]
    pub(crate) scope: Scope,
}

super::adapter::inputs! {
    pub(crate) struct ScreenInputs / ScreenNames { triage: TriageRecord; ..runs: [RunRecord] }
}

pub(crate) struct Screen(pub(crate) ScreenParams);

impl Kind for Screen {
    const NAME: &'static str = NodeKind::Screen.as_str();
    /// 2: a unit that did not build counts its tests as failed; PASS_TO_PASS
    /// may rest on base and gold where the test-only state did not build.
    /// 3: a command that could not run (exit 126/127, not found) is
    /// `environment_broken`, and nothing else.
    /// 4: the record names its slowest reading (`slowest_s`).
    /// 5: a Go-shaped test id of a JUnit or CTRF report belongs to its
    /// package (`assay_report::unit_of`): a package vet or the compiler
    /// rejected accounts for its tests.
    /// 6: and the most output any reading wrote (`loudest_log_bytes`).
    const VERSION: u32 = 6;
    type Params = ScreenParams;
    type Inputs = ScreenInputs;
    type Record = ScreenRecord;

    fn params(&self) -> &ScreenParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        inputs: ScreenInputs,
        ctx: JobCtx,
    ) -> Result<Made<ScreenRecord>, NodeError> {
        let triage = &inputs.triage;
        let expected = readings(self.0.repeats).count();
        if inputs.runs.len() != expected {
            return Err(NodeError::internal(format!(
                "{} runs, {expected} expected ({} repeats of each state)",
                inputs.runs.len(),
                self.0.repeats
            )));
        }
        let mut runs = Runs::default();
        for ((state, _), run) in readings(self.0.repeats).zip(inputs.runs) {
            runs.push(state, run.record);
        }
        let test_patch = super::blob(&ctx, &triage.test_patch)?;
        // A log that cannot be read says nothing of a broken environment.
        let log = |run: &RunRecord| match run.log.parse::<Digest>() {
            Ok(d) => ctx.blobs.get(&d).unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        Ok(Made::record(screening::screen(
            triage,
            self.0.report,
            self.0.scope,
            &test_patch,
            &runs,
            &log,
        )))
    }
}
