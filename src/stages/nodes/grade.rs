//! `grade`: the last of a graded session's nodes — after `session`
//! (normalise), `stage` (compose the graded tree) and a `run` over it (the
//! same node kind as screening, so identical trees share runs) — runs the
//! checks and reruns the verdict asks for and records the verdict (the pure
//! [`decide`](super::rules::verdict::decide)).
//!
//! The exclusion policy is applied per *arm*: `exclude` leaves out what the
//! policy names (by default the session's NEW files named like tests, which
//! collide with hidden tests); `keep` leaves out nothing. Where the two arms
//! disagree, the verifier — not the agent — is the suspect.
//!
//! An adapter, like `stage`: it fetches the session patch once, reads it
//! and the test patch once, and computes the arm's
//! [`Exclusion`](super::rules::policy::Exclusion) once; the rules
//! (`rules::policy`, `rules::verdict`, `rules::grading`) decide everything
//! the record holds.

use std::path::PathBuf;
use std::sync::Arc;

use assay_engine::{Digest, JobCtx};
use serde::Serialize;

use super::blob;
use super::node::{Kind, Made, NodeKind};
use super::records::{
    Arm, EnvRecord, GradeRecord, RunRecord, SessionRecord, TaskRecord, TreeRecord,
};
use super::rules::grading::{self, Check, Evidence};
use super::rules::policy::{Exclusion, TestPatch, globset, session_paths_within};
use super::rules::verdict::{self, Readings};
use super::run::{RunParams, execute_tree};

/// 2: tamper suspects; `no_report` on a certified task is the agent's.
/// 3: a unit that does not build fails its expected tests (`unresolved`, the
/// compiler's message in `detail`), never `no_report`.
/// 4: a red grade of a run that ended with `is_error` is `infrastructure`'s.
/// 5: a grade that is not `resolved` carries the tail of its last log.
/// 6: canaries: a forged report is `unresolved`/agent; a graded run without
/// canaries says why (`unchecked`); exit 127 on a certified task is the
/// agent's.
/// 7: paths as `git apply` reads them: the tamper scan walks hunks by their
/// counts; a renamed-away hidden test file is reset; renames count as edits
/// of their source for the policy and the infrastructure check.
/// 8: reruns and checks take the task's timeout (from its screening
/// readings); no rerun of an empty patch; reruns select the failing tests
/// where the framework can (`{tests}`).
pub(crate) const GRADE_VERSION: u32 = 8;

pub(crate) use crate::pipeline::{PatchCaps, Policy};

#[derive(Clone, Debug, Serialize)]
pub(crate) struct GradeParams {
    pub(crate) arm: Arm,
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
    /// The stage's caps: a patch over them is not read again.
    pub(crate) caps: PatchCaps,
    pub(crate) reruns: u32,
    pub(crate) rerun_command: Option<String>,
    pub(crate) check_command: Option<String>,
    /// How the test command runs: the same settings as the graded run.
    pub(crate) run: RunParams,
}

super::node::inputs! {
    pub(crate) struct GradeInputs / GradeNames {
        task: TaskRecord,
        session: SessionRecord,
        stage: TreeRecord,
        run: RunRecord,
        env: EnvRecord,
    }
}

/// Grades a staged session's run: the checks and reruns the verdict asks
/// for, then the verdict.
pub(crate) struct Grade {
    pub(crate) params: GradeParams,
    pub(crate) store_dir: PathBuf,
    /// The env node its reruns and checks run in.
    pub(crate) env: String,
}

impl Kind for Grade {
    const NAME: &'static str = NodeKind::Grade.as_str();
    const VERSION: u32 = GRADE_VERSION;
    /// Reruns and separate checks are test runs: a grade is an observation.
    const OBSERVATION: bool = true;
    type Params = GradeParams;
    type Inputs = GradeInputs;
    type Record = GradeRecord;

    fn params(&self) -> &GradeParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: GradeInputs,
        ctx: JobCtx,
    ) -> Result<Made<GradeRecord>, String> {
        grade(&self, i, ctx).await
    }

    /// Reruns and checks run in the graded run's environment: a grade that
    /// may start them holds that environment as a run does.
    fn exclusive(&self) -> Option<&str> {
        let runs_processes = self.params.reruns > 0 || self.params.check_command.is_some();
        runs_processes
            .then(|| self.params.run.exclusive(&self.env))
            .flatten()
    }

    /// A grade the executor lost a check or rerun of is graded again.
    fn hit_valid(&self, output: &[u8]) -> bool {
        serde_json::from_slice::<GradeRecord>(output)
            .is_ok_and(|g| super::rules::verdict::stands(g.verdict, g.fault))
    }
}

/// Gathers the readings (the graded run, then the checks and reruns
/// [`verdict`] asks for) and records the decision.
async fn grade(g: &Grade, i: GradeInputs, ctx: JobCtx) -> Result<Made<GradeRecord>, String> {
    let (p, store_dir) = (&g.params, &g.store_dir);
    let format = p.run.report;
    let task_digest = i.task.key.to_hex();
    let (task, session, tree, env) = (
        i.task.record,
        i.session.record,
        i.stage.record,
        i.env.record,
    );
    let run = i.run.record;
    let patch = blob(&ctx, &session.patch)?;
    let tests = globset(&p.test_globs).map_err(|e| e.to_string())?;
    // Over a cap, or not a patch: it was never staged, and nothing of it
    // is read again (reading is what a huge patch costs).
    let (paths, patch) = match session_paths_within(&patch, p.caps) {
        Ok(paths) => (paths, patch),
        Err(_) => (Vec::new(), Vec::new()),
    };
    let test_patch = TestPatch::read(task.test_patch.as_bytes());
    let exclusion = Exclusion::of(&paths, &test_patch, p.policy, &tests);
    let subject = grading::Subject {
        task: &task,
        task_digest,
        session: &session,
        run: &run,
        env: &env,
        arm: p.arm,
        policy: p.policy,
    };
    let mut rec = grading::begin(subject, exclusion);
    let mut attachments = Vec::new();
    let mut readings = Readings {
        first: run,
        ..Readings::default()
    };
    if verdict::reads_report(&task, &tree, &readings.first)
        && let Some(tree_id) = &tree.tree
    {
        let mut execute = async |command: String, attempt: u32| {
            let how = p.run.within(task.timeout_s).running(command);
            let (ran, att) =
                execute_tree(tree_id, &tree.hidden, &env, &how, attempt, store_dir, &ctx)
                    .await
                    .map_err(|e| e.0)?;
            attachments.extend(att);
            Ok::<RunRecord, String>(ran)
        };
        if let Some(template) = &p.check_command {
            for check in Check::ALL {
                let Some(command) = check.command(template, format, &task) else {
                    continue;
                };
                let checked = execute(command, 0).await?;
                Evidence::Check(check).record(&mut rec, &checked);
                readings.checks.push(checked);
            }
        }
        let empty_patch = paths.is_empty();
        while let Some(failing) =
            verdict::next_rerun(format, &task, &readings, p.reruns, empty_patch)
        {
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
            Evidence::Rerun(rerun).record(&mut rec, &again);
            readings.reruns.push(again);
        }
    }
    let graded = verdict::Graded {
        task: &task,
        tree: &tree,
        facts: &session.facts,
        format,
        limits: verdict::Limits {
            timeout_s: p.run.within(task.timeout_s).timeout_s,
            log_cap: p.run.log_cap,
            write: p.run.confine.limits.write,
        },
        patch: &patch,
        excluded: &rec.excluded_paths,
        tests: &tests,
    };
    let mut decision = verdict::decide(&graded, &readings);
    // A run cut before the environment's timeout says why it was cut there.
    if let (Some(t), Some(slowest)) = (task.timeout_s, task.slowest_screening_s)
        && t < p.run.timeout_s
        && decision.detail.starts_with("timed out after")
    {
        decision.detail.push_str(&format!(
            " (the task's timeout: its slowest screening run took at most {slowest} s; the environment allows {} s)",
            p.run.timeout_s
        ));
    }
    grading::settle(&mut rec, decision, readings.reruns.len() as u32);
    if let Some(last) = grading::tail_of(&rec) {
        rec.log_tail = Some(grading::log_tail(&last.what, &blob(&ctx, &last.digest)?));
    }
    for r in &rec.evidence {
        if let Ok(d) = r.digest.parse::<Digest>() {
            attachments.push(d);
        }
    }
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

    /// Reruns and checks run in the graded run's environment: a grade that
    /// may start them holds a local serial environment as a run does.
    #[test]
    fn a_grade_that_may_rerun_holds_its_local_serial_environment() {
        use assay_report::Format;
        let run = RunParams {
            command: "python3 -m unittest -v".into(),
            report: Format::Unittest,
            report_file: None,
            timeout_s: 60,
            log_cap: 1 << 20,
            redact: Default::default(),
            serial: true,
            repeat: 0,
            confine: Default::default(),
            watch: Vec::new(),
            canary: None,
            warm: Vec::new(),
            touched_command: None,
        };
        let params = |reruns, check: Option<&str>, run: &RunParams| GradeParams {
            arm: crate::pipeline::Arm::Exclude,
            policy: Policy::TestsAndInfra,
            test_globs: Vec::new(),
            caps: PatchCaps::default(),
            reruns,
            rerun_command: None,
            check_command: check.map(str::to_owned),
            run: run.clone(),
        };
        let holds = |params: GradeParams| {
            let grade = Grade {
                params,
                store_dir: PathBuf::new(),
                env: "env:abc".into(),
            };
            grade.exclusive().map(str::to_owned)
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
        let docker = RunParams {
            confine: super::super::executor::Confinement {
                executor: super::super::executor::ExecutorSetting::Docker(
                    super::super::executor::docker::Settings {
                        base_image: "assay-base:bookworm".into(),
                        cpu_millis: None,
                    },
                ),
                ..Default::default()
            },
            ..run
        };
        assert_eq!(holds(params(3, None, &docker)), None);
    }
}
