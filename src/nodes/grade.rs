//! `grade`: the last of a graded session's nodes — after `session`
//! (normalise), `stage` (compose the graded tree), a `run` over it (the
//! same node kind as screening, so identical trees share runs) and its
//! `recheck` (the checks and reruns the verdict asks for, shared the same
//! way) — records the verdict (the pure
//! [`decide`](crate::model::rules::verdict::decide)) over those readings.
//!
//! The exclusion policy is applied per *arm*: `exclude` leaves out what the
//! policy names (by default the session's NEW files named like tests, which
//! collide with hidden tests); `keep` leaves out nothing. Where the two arms
//! disagree, the verifier — not the agent — is the suspect.
//!
//! An adapter, like `stage`: it fetches the session patch once, reads it
//! and the test patch once, and computes the arm's
//! [`Exclusion`](crate::model::rules::policy::Exclusion) once; the rules
//! (`rules::policy`, `rules::verdict`, `rules::grading`) decide everything
//! the record holds.

use std::sync::Arc;

use assay_engine::{Digest, JobCtx};
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::blob;
use super::run::RunParams;
use crate::model::records::{
    Arm, EnvRecord, GradeRecord, RecheckRecord, RunRecord, SessionRecord, TaskRecord, TreeRecord,
};
use crate::model::rules::grading::{self, Check, Evidence};
use crate::model::rules::policy::{Exclusion, TestPatch, globset, session_paths_within};
use crate::model::rules::verdict::{self, Readings};
use crate::run::error::{Kinded, NodeError};

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
/// 9: pure: the checks and reruns are a `recheck` node of their own, shared
/// by the arms of equal trees.
/// 10: static flags for Rust and Go (macro shadowing, constructors,
/// assembly, symbol overrides, fd rewrites, linkname, cgo): in effect
/// unless `[[grade.allow_tamper]]` allows the rule for the task.
/// 11: only a witness's `is_error` blames the infrastructure; a session
/// file's claimed error is said in the detail of a red grade, counted.
/// 12: the rule that left out each excluded path (`excluded_by`); JavaScript
/// set-up files, transpiler configuration and `node_modules` are test
/// infrastructure.
/// 13: a test that failed with a wrong value of its canary window in one
/// run and passed in another was guessed: `unresolved`/agent, never
/// `resolved_after_rerun`. A check that ran canaries keeps 0 or 1 by its
/// tests' outcomes as its exit code (its must-fail canaries fail by design).
/// 14: the failing tests' words (`said`, from the readings' reports; the
/// compiler's for a test whose unit did not build); a Go-shaped test id of
/// a JUnit or CTRF report belongs to its package.
/// 15: a run over the evidence cap is the agent's where the task's
/// controls stayed under it in every screening reading.
pub(crate) const GRADE_VERSION: u32 = 15;

pub(crate) use crate::pipeline::{PatchCaps, Policy};

#[derive(Clone, Debug, Serialize)]
pub(crate) struct GradeParams {
    pub(crate) arm: Arm,
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
    /// The stage's caps: a patch over them is not read again.
    pub(crate) caps: PatchCaps,
    /// How the test command ran: the limits a verdict names.
    pub(crate) run: RunParams,
    /// The static tamper flags the pipeline allows for the task.
    pub(crate) allowed: Vec<crate::pipeline::Allowance>,
}

super::adapter::inputs! {
    pub(crate) struct GradeInputs / GradeNames {
        task: TaskRecord,
        session: SessionRecord,
        stage: TreeRecord,
        run: RunRecord,
        env: EnvRecord,
        recheck: RecheckRecord,
    }
}

/// Grades a staged session's run over its readings (the graded run, then
/// its recheck's checks and reruns): the verdict, and the record around it.
/// Pure: every process it reads was run by the nodes before it.
pub(crate) struct Grade {
    pub(crate) params: GradeParams,
}

impl Kind for Grade {
    const NAME: &'static str = NodeKind::Grade.as_str();
    const VERSION: u32 = GRADE_VERSION;
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
    ) -> Result<Made<GradeRecord>, NodeError> {
        grade(&self, i, ctx).await
    }

    /// A grade the executor lost a check or rerun of is graded again.
    fn refuse_hit(&self, output: &[u8]) -> Option<String> {
        match serde_json::from_slice::<GradeRecord>(output) {
            Ok(g) if crate::model::rules::verdict::stands(g.verdict, g.fault) => None,
            Ok(g) => Some(format!("its grade was not reached: {}", g.detail)),
            Err(e) => Some(format!("its stored record does not read ({e})")),
        }
    }
}

/// Reads the graded run and its recheck and records the decision.
async fn grade(g: &Grade, i: GradeInputs, ctx: JobCtx) -> Result<Made<GradeRecord>, NodeError> {
    let p = &g.params;
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
    let tests = globset(&p.test_globs).internal()?;
    // Over a cap, or not a patch: it was never staged, and nothing of it
    // is read again (reading is what a huge patch costs).
    let (paths, patch) = match session_paths_within(&patch, p.caps) {
        Ok(paths) => (paths, patch),
        Err(_) => (Vec::new(), Vec::new()),
    };
    let test_patch = TestPatch::read(task.test_patch.as_bytes());
    let exclusion = Exclusion::of(&paths, &test_patch, p.policy, &tests, &p.test_globs);
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
    let recheck = i.recheck.record;
    let checks = [(Check::Base, recheck.base), (Check::New, recheck.new)];
    let mut readings = Readings {
        first: run,
        ..Readings::default()
    };
    for (check, checked) in checks {
        if let Some(checked) = checked {
            Evidence::Check(check).record(&mut rec, &task, &checked);
            readings.checks.push(checked);
        }
    }
    for again in recheck.reruns {
        Evidence::Rerun(readings.reruns.len() as u32 + 1).record(&mut rec, &task, &again);
        readings.reruns.push(again);
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
        allowed: &p.allowed,
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
    // A run given time for its waits on a loaded machine says how much.
    if let Some(ms) = readings.first.cpu_stalled_ms.filter(|ms| *ms >= 100)
        && decision.detail.starts_with("timed out after")
    {
        decision.detail.push_str(&format!(
            "; it ran {:.1} s, of which {:.1} s waiting for a CPU the machine gave to other work, not counted",
            readings.first.duration_ms as f64 / 1000.0,
            ms as f64 / 1000.0
        ));
    }
    grading::settle(&mut rec, decision, readings.reruns.len() as u32);
    // The failing tests' words, the latest reading's first.
    let said: Vec<&crate::model::why::Said> = readings
        .reruns
        .iter()
        .rev()
        .chain([&readings.first])
        .chain(&readings.checks)
        .map(|r| &r.said)
        .collect();
    let first = &readings.first;
    let unbuilt = |t: &str| {
        let b = first.build_failure_for(format, t, first.files.get(t).map(String::as_str))?;
        Some(format!("{} does not build: {}", b.unit, b.message))
    };
    rec.said = crate::model::why::Said::of_tests(&rec.failing, &said, unbuilt);
    if let Some(last) = grading::tail_of(&rec) {
        let log = blob(&ctx, &last.digest)?;
        // The run that wrote this log (fresh names are drawn per run: one
        // run's canary may be another's renamed test).
        let runs = std::iter::once(&readings.first)
            .chain(&readings.reruns)
            .chain(&readings.checks)
            .filter(|r| r.log == last.digest)
            // A cut log is shown as it was cut: its end is the evidence.
            .filter(|r| !r.log_truncated)
            .take(1);
        let log = grading::without_canaries(&log, runs);
        rec.log_tail = Some(grading::log_tail(&last.what, &log));
    }
    // The logs it rests on, attached as they were when the grade ran them.
    let mut attachments: Vec<Digest> = rec
        .evidence
        .iter()
        .filter_map(|r| r.digest.parse().ok())
        .collect();
    attachments.sort();
    attachments.dedup();
    Ok(Made {
        record: rec,
        attachments,
    })
}
