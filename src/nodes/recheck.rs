//! `recheck`: the runs a grade adds to its graded run — the checks run as
//! commands of their own (`[grade] check_command`) and the reruns of the
//! failing tests — over the graded tree, in its environment. An
//! observation, like a run.
//!
//! Nothing of it depends on the arm: which checks and reruns are due is a
//! function of the task, the graded run and whether the session's patch is
//! empty ([`verdict::next_rerun`]). So the two arms of a session whose trees
//! are equal (nothing excluded, the usual case) have one key and share one
//! recheck, as they share the graded run: the reruns are run once, not once
//! an arm, and the arms are decided over the same readings (a flaky test
//! cannot make them disagree by chance). The grade is then pure: it reads
//! the run and this record and decides.

use std::path::PathBuf;
use std::sync::Arc;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::blob;
use super::canaries::Plant;
use super::run::{RunParams, execute_tree};
use crate::model::records::{
    EnvRecord, RecheckRecord, RunRecord, SessionRecord, TaskRecord, TreeRecord,
};
use crate::model::rules::grading::{self, Check};
use crate::model::rules::policy::session_paths_within;
use crate::model::rules::verdict::{self, Readings};
use crate::run::error::NodeError;

/// 1: the checks and reruns of grade version 8, as a node of their own.
/// 2: a check or rerun naming tests names each one's canaries too (its
/// window), and expects only those.
/// 3: its runs keep their failing tests' words (run version 8).
pub(crate) const RECHECK_VERSION: u32 = 3;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct RecheckParams {
    /// The stage's caps: a patch over them was never staged, and counts as
    /// empty here as it does for the grade.
    pub(crate) caps: crate::pipeline::PatchCaps,
    pub(crate) reruns: u32,
    pub(crate) rerun_command: Option<String>,
    pub(crate) check_command: Option<String>,
    /// How the test command runs: the same settings as the graded run.
    pub(crate) run: RunParams,
}

impl RecheckParams {
    /// Whether it may run anything at all.
    pub(crate) fn runs_processes(&self) -> bool {
        self.reruns > 0 || self.check_command.is_some()
    }
}

super::adapter::inputs! {
    pub(crate) struct RecheckInputs / RecheckNames {
        task: TaskRecord,
        session: SessionRecord,
        stage: TreeRecord,
        run: RunRecord,
        env: EnvRecord,
    }
}

pub(crate) struct Recheck {
    pub(crate) params: RecheckParams,
    pub(crate) store_dir: PathBuf,
    /// The env node its checks and reruns run in.
    pub(crate) env: String,
    pub(crate) executors: std::sync::Arc<crate::run::executor::Executors>,
}

impl Kind for Recheck {
    const NAME: &'static str = NodeKind::Recheck.as_str();
    const VERSION: u32 = RECHECK_VERSION;
    /// Checks and reruns are test runs.
    const OBSERVATION: bool = true;
    type Params = RecheckParams;
    type Inputs = RecheckInputs;
    type Record = RecheckRecord;

    fn params(&self) -> &RecheckParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: RecheckInputs,
        ctx: JobCtx,
    ) -> Result<Made<RecheckRecord>, NodeError> {
        recheck(&self, i, ctx).await
    }

    /// Its runs take the graded run's environment as a run does.
    fn exclusive(&self) -> Option<&str> {
        self.params
            .runs_processes()
            .then(|| self.params.run.exclusive(&self.executors, &self.env))
            .flatten()
    }

    /// A recheck the executor lost a run of is read again.
    fn refuse_hit(&self, output: &[u8]) -> Option<String> {
        match serde_json::from_slice::<RecheckRecord>(output) {
            Ok(r) => r
                .lost()
                .map(|why| format!("the executor lost a run of it ({why}); it is run again")),
            Err(e) => Some(format!("its stored record does not read ({e})")),
        }
    }
}

/// Runs the checks, then the reruns [`verdict::next_rerun`] asks for, one
/// after the other (each rerun over the tests still failing before it).
async fn recheck(
    r: &Recheck,
    i: RecheckInputs,
    ctx: JobCtx,
) -> Result<Made<RecheckRecord>, NodeError> {
    let p = &r.params;
    let format = p.run.report;
    let (task, session, tree, env) = (
        i.task.record,
        i.session.record,
        i.stage.record,
        i.env.record,
    );
    let mut readings = Readings {
        first: i.run.record,
        ..Readings::default()
    };
    let mut rec = RecheckRecord::default();
    let mut attachments = Vec::new();
    let Some(tree_id) = tree.tree.as_deref() else {
        return Ok(Made::record(rec));
    };
    if !verdict::reads_report(&task, &tree, &readings.first) {
        return Ok(Made::record(rec));
    }
    // Over a cap, or not a patch: never staged, so never rerun as a patch.
    let patch = blob(&ctx, &session.patch)?;
    let empty_patch = session_paths_within(&patch, p.caps).map_or(true, |paths| paths.is_empty());
    let mut execute = async |command: String, attempt: u32| {
        let how = p.run.within(task.timeout_s).running(command);
        let (ran, att, _) = execute_tree(
            tree_id,
            &tree.hidden,
            &tree.rebuild,
            &env,
            &how,
            attempt,
            &r.store_dir,
            &r.executors,
            &ctx,
            Plant::Graded(tree.canaries.as_ref()),
        )
        .await?;
        attachments.extend(att);
        Ok::<RunRecord, NodeError>(ran)
    };
    if let Some(template) = &p.check_command {
        for check in Check::ALL {
            let Some(command) = check.command(template, format, &task) else {
                continue;
            };
            // What reruns are due reads the graded run and the reruns
            // alone: the checks are only recorded, for the grade.
            let checked = Some(execute(command, 0).await?);
            match check {
                Check::Base => rec.base = checked,
                Check::New => rec.new = checked,
            }
        }
    }
    while let Some(failing) = verdict::next_rerun(format, &task, &readings, p.reruns, empty_patch) {
        let rerun = readings.reruns.len() as u32 + 1;
        let command = grading::rerun_command(
            p.rerun_command.as_deref(),
            p.check_command.as_deref(),
            &p.run.command,
            format,
            &readings.first,
            &failing,
        );
        let again = execute(command, rerun).await?;
        readings.reruns.push(again);
    }
    rec.reruns = readings.reruns;
    attachments.sort();
    attachments.dedup();
    Ok(Made {
        record: rec,
        attachments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks and reruns run in the graded run's environment: a recheck that
    /// may start them holds a local serial environment as a run does.
    #[test]
    fn a_recheck_that_may_rerun_holds_its_local_serial_environment() {
        use assay_report::Format;
        let run = RunParams {
            command: "python3 -m unittest -v".into(),
            report: Format::Unittest,
            report_file: None,
            timeout_s: 60,
            stall_grace_s: 0,
            log_cap: 1 << 20,
            redact: Default::default(),
            serial: true,
            repeat: 0,
            // Unsandboxed: runs may write the environment, so they take turns.
            confine: crate::model::config::Confinement {
                sandbox: crate::model::config::SandboxMode::None,
                ..Default::default()
            },
            watch: Vec::new(),
            canary: None,
            warm: Vec::new(),
            touched_command: None,
        };
        let params = |reruns, check: Option<&str>, run: &RunParams| RecheckParams {
            caps: Default::default(),
            reruns,
            rerun_command: None,
            check_command: check.map(str::to_owned),
            run: run.clone(),
        };
        let holds = |params: RecheckParams| {
            let recheck = Recheck {
                params,
                store_dir: PathBuf::new(),
                env: "env:abc".into(),
                executors: Default::default(),
            };
            recheck.exclusive().map(str::to_owned)
        };
        assert_eq!(holds(params(3, None, &run)).as_deref(), Some("env:abc"));
        assert_eq!(
            holds(params(0, Some("t {tests}"), &run)).as_deref(),
            Some("env:abc")
        );
        // Nothing to run: nothing to hold.
        assert_eq!(holds(params(0, None, &run)), None);
        let parallel = RunParams {
            serial: false,
            ..run.clone()
        };
        assert_eq!(holds(params(3, None, &parallel)), None);
        // Under bubblewrap a run sees the environment read-only: nothing to hold.
        let sandboxed = RunParams {
            confine: Default::default(),
            ..run.clone()
        };
        assert_eq!(holds(params(3, None, &sandboxed)), None);
        let docker = RunParams {
            confine: crate::model::config::Confinement {
                executor: crate::model::config::ExecutorSetting::Docker(
                    crate::model::config::DockerSettings {
                        base_image: "assay-base:bookworm".into(),
                        cpu_millis: None,
                        on_cluster: None,
                    },
                ),
                ..Default::default()
            },
            ..run
        };
        assert_eq!(holds(params(3, None, &docker)), None);
    }
}
