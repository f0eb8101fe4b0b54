//! `quality`: one `[[metric]]` measured on one tree — a session's graded
//! tree (`quality:<metric>:<session>`, the scored arm's staged tree: the
//! session patch with the hidden test patch over it) or its task's gold
//! tree (`quality:<metric>:gold:<task>`). The command runs like a test run:
//! in the task's environment, in the executor's sandbox (no network, the
//! run's limits, a fresh copy of the tree), its output read bounded by the
//! log cap. An `added` metric runs nothing: it counts the session's patch
//! (or the gold patch). The counting is [`rules::quality`](crate::model::rules::quality);
//! what a session introduced against gold is computed by the release from
//! the two records.
//!
//! A metric that cannot be measured (no graded tree, a broken environment,
//! output that is not what the metric counts) is a record with `failed`:
//! that node's figure is missing, nothing else is.

use std::path::PathBuf;
use std::sync::Arc;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::blob;
use super::canaries::Plant;
use super::run::{RunParams, execute_tree};
use crate::model::records::{EnvRecord, QualityRecord, SessionRecord, TaskRecord, TreeRecord};
use crate::model::rules::policy::globset;
use crate::model::rules::quality::{self, Findings};
use crate::pipeline::{Measure, Metric};
use crate::run::error::{Kinded, NodeError};

#[derive(Clone, Debug, Serialize)]
pub(crate) struct QualityParams {
    pub(crate) metric: Metric,
    /// Findings in these files are not counted.
    pub(crate) test_globs: Vec<String>,
    /// How the command runs: the environment's graded run settings (sandbox,
    /// limits, log cap, redaction) with the metric's command, file and
    /// timeout.
    pub(crate) run: RunParams,
}

impl QualityParams {
    /// `metric` run as a graded run of an environment whose graded run
    /// settings are `graded`.
    pub(crate) fn new(metric: &Metric, test_globs: &[String], graded: RunParams) -> Self {
        let run = match &metric.measure {
            Measure::Command { command, file, .. } => RunParams {
                report_file: file.clone(),
                timeout_s: metric.timeout_s,
                stall_grace_s: 0,
                ..graded.running(command.clone())
            },
            Measure::Added { .. } => graded,
        };
        QualityParams {
            metric: metric.clone(),
            test_globs: test_globs.to_vec(),
            run,
        }
    }
}

super::adapter::inputs! {
    pub(crate) struct QualityInputs / QualityNames {
        task: TaskRecord,
        // The gold tree, or the session's staged tree.
        tree: TreeRecord,
        env: EnvRecord;
        // The session measured; none: the task's gold state.
        ?session: SessionRecord
    }
}

pub(crate) struct Quality {
    pub(crate) params: QualityParams,
    pub(crate) store_dir: PathBuf,
    /// The env node: runs of one local environment never overlap.
    pub(crate) env: String,
    pub(crate) executors: std::sync::Arc<crate::run::executor::Executors>,
}

impl Kind for Quality {
    const NAME: &'static str = NodeKind::Quality.as_str();
    const VERSION: u32 = 1;
    /// The tool runs over code under test, like a test run: reused until
    /// re-read (`--reread quality`).
    const OBSERVATION: bool = true;
    type Params = QualityParams;
    type Inputs = QualityInputs;
    type Record = QualityRecord;

    fn params(&self) -> &QualityParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: QualityInputs,
        ctx: JobCtx,
    ) -> Result<Made<QualityRecord>, NodeError> {
        let p = &self.params;
        let mut record = QualityRecord {
            metric: p.metric.name.clone(),
            task: i.task.instance_id.clone(),
            session: i.session.as_ref().map(|s| s.id.clone()),
            ..QualityRecord::default()
        };
        // The globs and pattern were checked as the pipeline loaded.
        let tests = globset(&p.test_globs).internal()?;
        let (count, file) = match &p.metric.measure {
            Measure::Added { pattern, files } => {
                let patch = match &i.session {
                    Some(s) => blob(&ctx, &s.patch)?,
                    None => i.task.patch.as_bytes().to_vec(),
                };
                let re = regex::Regex::new(pattern).internal()?;
                let files = globset(files).internal()?;
                record.found(quality::added(&patch, &re, &files, &tests));
                return Ok(Made::record(record));
            }
            Measure::Command { count, file, .. } => (count, file),
        };
        let Some(tree_id) = &i.tree.tree else {
            let why = i.tree.skipped.as_ref().map(|s| s.to_string());
            record.failed = Some(format!(
                "no tree to measure: {}",
                why.as_deref().unwrap_or("none was staged")
            ));
            return Ok(Made::record(record));
        };
        // No hidden files named: nothing is planted, and the tool may read
        // every file of its own copy of the tree. Nor rebuilt: a metric's
        // tool reads the tree as the patch left it.
        let (ran, attachments, _) = execute_tree(
            tree_id,
            &[],
            &[],
            &i.env,
            &p.run,
            0,
            &self.store_dir,
            &self.executors,
            &ctx,
            Plant::Graded(None),
        )
        .await?;
        record.exit_code = ran.exit_code;
        record.log = ran.log.clone();
        if ran.env_failed || ran.timed_out || ran.limit.is_some() || ran.lost.is_some() {
            record.failed = Some(
                ran.untrusted
                    .clone()
                    .unwrap_or_else(|| "the command did not finish".into()),
            );
            return Ok(Made {
                record,
                attachments,
            });
        }
        let output = match file {
            // The report file is the second attachment (after the log).
            Some(rel) => match attachments.get(1) {
                Some(d) => ctx.blobs.get(d).cache()?,
                None => {
                    record.failed = Some(format!(
                        "{rel}: {}",
                        ran.report_error.as_deref().unwrap_or("not written")
                    ));
                    return Ok(Made {
                        record,
                        attachments,
                    });
                }
            },
            None => blob(&ctx, &ran.log)?,
        };
        let reads_output = !matches!(count, crate::pipeline::Count::Exit);
        if ran.log_truncated && file.is_none() && reads_output {
            record.failed =
                Some("the output exceeded the log cap; its findings were not counted".into());
        } else {
            match quality::count(count, &output, ran.exit_code, &tests) {
                Ok(found) => record.found(found),
                Err(why) => record.failed = Some(why),
            }
        }
        Ok(Made {
            record,
            attachments,
        })
    }

    fn exclusive(&self) -> Option<&str> {
        self.params.run.exclusive(&self.executors, &self.env)
    }
}

impl QualityRecord {
    fn found(&mut self, found: Findings) {
        self.findings = found.total();
        self.in_tests = found.in_tests;
        self.by_path = found.by_path;
    }
}
