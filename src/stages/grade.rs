//! Grading a session: `session` (normalise), `stage` (compose the graded
//! tree), a `run` over it (the same node kind as screening, so identical trees
//! share runs), and `grade` (decide the verdict, rerunning failures).
//!
//! The exclusion policy is applied per *arm*: `exclude` leaves out what the
//! policy names (by default the session's NEW files named like tests, which
//! collide with hidden tests); `keep` leaves out nothing. Where the two arms
//! disagree, the verifier — not the agent — is the suspect.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use assay_engine::{Digest, Job, JobCtx, JobError, JobFuture, Output};
use assay_git::{ComposeError, PatchStep, TreeStore, patch_paths};
use assay_report::Outcome;
use serde::Serialize;

use super::records::{
    EnvRecord, GradeRecord, Receipt, RunRecord, SessionRecord, TaskRecord, TreeRecord,
};
use super::run::{HowToRun, execute_tree};

pub(super) const SESSION_VERSION: u32 = 1;
pub(super) const STAGE_VERSION: u32 = 1;
pub(super) const GRADE_VERSION: u32 = 1;

/// Which of a session's paths the grader leaves out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Policy {
    NewTestFiles,
    AllTestFiles,
    ResetTestPatchFiles,
    None,
}

impl Policy {
    pub(crate) fn parse(s: &str) -> Option<Policy> {
        Some(match s {
            "new-test-files" => Policy::NewTestFiles,
            "all-test-files" => Policy::AllTestFiles,
            "reset-test-patch-files" => Policy::ResetTestPatchFiles,
            "none" => Policy::None,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Policy::NewTestFiles => "new-test-files",
            Policy::AllTestFiles => "all-test-files",
            Policy::ResetTestPatchFiles => "reset-test-patch-files",
            Policy::None => "none",
        }
    }
}

/// The session patch's paths that `policy` leaves out, sorted.
pub(crate) fn excluded_paths(
    session_patch: &[u8],
    test_patch: &[u8],
    policy: Policy,
    tests: &globset::GlobSet,
) -> Result<Vec<String>, String> {
    if policy == Policy::None || session_patch.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let paths = patch_paths(session_patch).map_err(|e| e.to_string())?;
    let hidden: BTreeSet<String> = match policy {
        Policy::ResetTestPatchFiles => patch_paths(test_patch)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|p| p.path)
            .collect(),
        _ => BTreeSet::new(),
    };
    let mut out: Vec<String> = paths
        .into_iter()
        .filter(|p| match policy {
            Policy::NewTestFiles => p.is_new && tests.is_match(&p.path),
            Policy::AllTestFiles => tests.is_match(&p.path),
            Policy::ResetTestPatchFiles => hidden.contains(&p.path),
            Policy::None => false,
        })
        .map(|p| p.path)
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

// ---- session ---------------------------------------------------------------

#[derive(Clone, Debug, Serialize)]
pub(crate) struct SessionParams {
    pub(crate) id: String,
    pub(crate) task: String,
    pub(crate) track: String,
    pub(crate) agent: String,
    pub(crate) model: String,
    pub(crate) patch: Vec<u8>,
    pub(crate) facts: super::records::RunFacts,
    /// Why the file could not be read; the node then fails with it.
    pub(crate) error: Option<String>,
}

struct SessionJob(SessionParams);

impl Job for SessionJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let p = self.0.clone();
        Box::pin(async move {
            if let Some(e) = p.error {
                return Err(JobError::new(format!("session {}: {e}", p.id)));
            }
            let digest = ctx
                .blobs
                .put(&p.patch)
                .map_err(|e| JobError::new(e.to_string()))?;
            let record = SessionRecord {
                id: p.id,
                task: p.task,
                track: p.track,
                agent: p.agent,
                model: p.model,
                patch: digest.to_hex(),
                facts: p.facts,
            };
            Ok(Output {
                bytes: serde_json::to_vec(&record).map_err(|e| JobError::new(e.to_string()))?,
                attachments: vec![digest],
            })
        })
    }
}

pub(crate) fn session_job(p: SessionParams) -> Arc<dyn Job> {
    Arc::new(SessionJob(p))
}

// ---- stage -----------------------------------------------------------------

#[derive(Clone, Debug, Serialize)]
pub(crate) struct StageParams {
    pub(crate) arm: String,
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
}

struct StageJob {
    params: StageParams,
    store_dir: PathBuf,
}

fn blob(ctx: &JobCtx, hex: &str) -> Result<Vec<u8>, JobError> {
    if hex.is_empty() {
        return Ok(Vec::new());
    }
    let d: Digest = hex.parse().map_err(JobError::new)?;
    ctx.blobs.get(&d).map_err(|e| JobError::new(e.to_string()))
}

impl Job for StageJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let p = self.params.clone();
        let store_dir = self.store_dir.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || stage(&p, &store_dir, &ctx))
                .await
                .map_err(|e| JobError::new(format!("stage task: {e}")))?
        })
    }
}

fn stage(p: &StageParams, store_dir: &std::path::Path, ctx: &JobCtx) -> Result<Output, JobError> {
    let err = |e: &dyn std::fmt::Display| JobError::new(format!("stage: {e}"));
    let task: TaskRecord = serde_json::from_slice(&ctx.inputs[0]).map_err(|e| err(&e))?;
    let session: SessionRecord = serde_json::from_slice(&ctx.inputs[1]).map_err(|e| err(&e))?;
    let skipped = |why: String| TreeRecord {
        tree: None,
        skipped: Some(why),
    };
    let record = if !task.certified || task.status != "released" {
        skipped(format!(
            "not_graded: task {} is {}",
            task.instance_id,
            if task.certified {
                task.status.clone()
            } else {
                "uncertified".into()
            }
        ))
    } else {
        let patch = blob(ctx, &session.patch)?;
        let tests = super::triage::globset(&p.test_globs).map_err(|e| err(&e))?;
        match excluded_paths(&patch, task.test_patch.as_bytes(), p.policy, &tests) {
            Err(e) => skipped(format!("patch_apply_failed: the patch cannot be read: {e}")),
            Ok(exclude) => {
                let store = TreeStore::open_or_init(store_dir).map_err(|e| err(&e))?;
                let mut steps = Vec::new();
                let all_excluded = patch_paths(&patch)
                    .map(|ps| ps.iter().all(|x| exclude.contains(&x.path)))
                    .unwrap_or(false);
                if !patch.iter().all(u8::is_ascii_whitespace) && !all_excluded {
                    steps.push(PatchStep {
                        label: "session".into(),
                        patch,
                        exclude,
                    });
                }
                steps.push(PatchStep {
                    label: "test_patch".into(),
                    patch: task.test_patch.clone().into_bytes(),
                    exclude: Vec::new(),
                });
                match store.compose(&task.base_commit, &steps) {
                    Ok(tree) => TreeRecord {
                        tree: Some(tree),
                        skipped: None,
                    },
                    Err(ComposeError::Apply { label, stderr }) if label == "session" => {
                        skipped(format!("patch_apply_failed: {}", stderr.trim()))
                    }
                    Err(ComposeError::PathEscape { path, reason, .. }) => {
                        skipped(format!("patch_apply_failed: {path}: {reason}"))
                    }
                    Err(ComposeError::Apply { stderr, .. }) => {
                        skipped(format!("test_patch_conflict: {}", stderr.trim()))
                    }
                    Err(e) => return Err(err(&e)),
                }
            }
        }
    };
    Ok(Output {
        bytes: serde_json::to_vec(&record).map_err(|e| err(&e))?,
        attachments: Vec::new(),
    })
}

pub(crate) fn stage_job(params: StageParams, store_dir: PathBuf) -> Arc<dyn Job> {
    Arc::new(StageJob { params, store_dir })
}

// ---- grade -----------------------------------------------------------------

#[derive(Clone, Debug, Serialize)]
pub(crate) struct GradeParams {
    pub(crate) arm: String,
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
    pub(crate) reruns: u32,
    pub(crate) rerun_command: Option<String>,
    pub(crate) check_command: Option<String>,
    /// How the test command runs: the same settings as the graded run.
    pub(crate) run: super::run::RunParams,
}

struct GradeJob {
    params: GradeParams,
    format: assay_report::Format,
    store_dir: PathBuf,
}

impl Job for GradeJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let p = self.params.clone();
        let format = self.format;
        let store_dir = self.store_dir.clone();
        Box::pin(async move { grade(p, format, store_dir, ctx).await })
    }
}

pub(crate) fn grade_job(
    params: GradeParams,
    format: assay_report::Format,
    store_dir: PathBuf,
) -> Arc<dyn Job> {
    Arc::new(GradeJob {
        params,
        format,
        store_dir,
    })
}

fn check(tests: &[String], outcomes: &std::collections::BTreeMap<String, Outcome>) -> Vec<String> {
    tests
        .iter()
        .filter(|t| outcomes.get(*t) != Some(&Outcome::Passed))
        .cloned()
        .collect()
}

fn check_word(failing: usize) -> String {
    if failing == 0 {
        "pass".into()
    } else {
        format!("fail ({failing})")
    }
}

async fn grade(
    p: GradeParams,
    format: assay_report::Format,
    store_dir: PathBuf,
    ctx: JobCtx,
) -> Result<Output, JobError> {
    let err = |e: &dyn std::fmt::Display| JobError::new(format!("grade: {e}"));
    let task: TaskRecord = serde_json::from_slice(&ctx.inputs[0]).map_err(|e| err(&e))?;
    let session: SessionRecord = serde_json::from_slice(&ctx.inputs[1]).map_err(|e| err(&e))?;
    let tree: TreeRecord = serde_json::from_slice(&ctx.inputs[2]).map_err(|e| err(&e))?;
    let run: RunRecord = serde_json::from_slice(&ctx.inputs[3]).map_err(|e| err(&e))?;
    let env: EnvRecord = serde_json::from_slice(&ctx.inputs[4]).map_err(|e| err(&e))?;
    let task_digest = ctx.input_keys[0].to_hex();
    let patch = blob(&ctx, &session.patch)?;
    let tests = super::triage::globset(&p.test_globs).map_err(|e| err(&e))?;
    let excluded =
        excluded_paths(&patch, task.test_patch.as_bytes(), p.policy, &tests).unwrap_or_default();
    let mut rec = GradeRecord {
        session: session.id.clone(),
        instance_id: task.instance_id.clone(),
        track: task.track.clone(),
        task_digest,
        agent: session.agent.clone(),
        model: session.model.clone(),
        arm: p.arm.clone(),
        policy: p.policy.as_str().to_owned(),
        verdict: String::new(),
        fault: String::new(),
        detail: String::new(),
        failing: Vec::new(),
        excluded_paths: excluded,
        exit_code: run.exit_code,
        base_check: "not run".into(),
        new_check: "not run".into(),
        base_exit: None,
        new_exit: None,
        reruns: 0,
        evidence: Vec::new(),
        redactions: run.redactions,
    };
    if !run.log.is_empty() {
        rec.evidence.push(Receipt {
            what: "log".into(),
            digest: run.log.clone(),
            bytes: run.log_bytes,
        });
    }
    let mut attachments = Vec::new();
    let verdict = |rec: &mut GradeRecord, v: &str, fault: &str, detail: String| {
        rec.verdict = v.to_owned();
        rec.fault = fault.to_owned();
        rec.detail = detail;
    };
    if let Some(why) = &tree.skipped {
        let (v, detail) = why.split_once(": ").unwrap_or((why.as_str(), ""));
        let fault = match v {
            "patch_apply_failed" => "agent",
            "test_patch_conflict" => "ambiguous",
            _ => "none",
        };
        verdict(&mut rec, v, fault, detail.to_owned());
    } else if run.env_failed || run.exit_code == Some(127) {
        verdict(&mut rec, "env_setup_failed", "harness", "the environment could not run the command (setup failed or exit 127: command or interpreter not found)".into());
    } else if run.log_truncated {
        verdict(
            &mut rec,
            "ineligible",
            "harness",
            format!(
                "the evidence ({} bytes) exceeds the cap ({} bytes); never scored on a truncated log",
                run.log_bytes, p.run.log_cap
            ),
        );
    } else if run.timed_out {
        verdict(
            &mut rec,
            "unresolved",
            "agent",
            format!("timed out after {} s", p.run.timeout_s),
        );
    } else if run.report_error.is_some() || run.tests.is_empty() || run.untrusted.is_some() {
        let why = run
            .report_error
            .clone()
            .or(run.untrusted.clone())
            .unwrap_or_else(|| "the report holds no tests".into());
        verdict(&mut rec, "no_report", "harness", why);
    } else {
        let mut outcomes = run.tests.clone();
        let p2p = check(&task.pass_to_pass, &outcomes);
        let f2p = check(&task.fail_to_pass, &outcomes);
        rec.base_check = check_word(p2p.len());
        rec.new_check = check_word(f2p.len());
        // The two checks as commands of their own, each keeping its exit code:
        // `base=0 new=1` says the agent broke nothing and fixed nothing.
        if let (Some(template), Some(tree_id)) = (&p.check_command, &tree.tree) {
            for (which, tests) in [("base", &task.pass_to_pass), ("new", &task.fail_to_pass)] {
                if tests.is_empty() {
                    continue;
                }
                let how = HowToRun {
                    command: template.replace("{tests}", &tests.join(" ")),
                    ..HowToRun::new(&p.run, format)
                };
                let (checked, att) = execute_tree(tree_id, &env, &how, &store_dir, &ctx).await?;
                attachments.extend(att);
                rec.redactions += checked.redactions;
                rec.evidence.push(Receipt {
                    what: format!("{which} check log"),
                    digest: checked.log.clone(),
                    bytes: checked.log_bytes,
                });
                if which == "base" {
                    rec.base_exit = checked.exit_code;
                } else {
                    rec.new_exit = checked.exit_code;
                }
            }
        }
        let mut failing: Vec<String> = p2p.into_iter().chain(f2p).collect();
        if failing.is_empty() {
            verdict(&mut rec, "resolved", "none", String::new());
        } else {
            let tree_id = tree.tree.clone().unwrap_or_default();
            while !failing.is_empty() && rec.reruns < p.reruns {
                rec.reruns += 1;
                let files: BTreeSet<&String> =
                    failing.iter().filter_map(|t| run.files.get(t)).collect();
                let command = match &p.rerun_command {
                    Some(c) if !files.is_empty() => c.replace(
                        "{files}",
                        &files
                            .iter()
                            .map(|f| f.as_str())
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                    _ => p.run.command.clone(),
                };
                let how = HowToRun {
                    command,
                    ..HowToRun::new(&p.run, format)
                };
                let (again, att) = execute_tree(&tree_id, &env, &how, &store_dir, &ctx).await?;
                attachments.extend(att);
                rec.redactions += again.redactions;
                rec.evidence.push(Receipt {
                    what: format!("rerun {} log", rec.reruns),
                    digest: again.log.clone(),
                    bytes: again.log_bytes,
                });
                for t in &failing {
                    if let Some(o) = again.tests.get(t) {
                        outcomes.insert(t.clone(), *o);
                    }
                }
                failing.retain(|t| outcomes.get(t) != Some(&Outcome::Passed));
            }
            if failing.is_empty() {
                let detail = format!("passed on rerun {}", rec.reruns);
                verdict(&mut rec, "resolved_after_rerun", "flaky_test", detail);
            } else {
                let n = failing.len();
                rec.failing = failing;
                let detail = format!("{n} tests still fail after {} reruns", rec.reruns);
                verdict(&mut rec, "unresolved", "agent", detail);
            }
        }
    }
    for r in &rec.evidence {
        if let Ok(d) = r.digest.parse::<Digest>() {
            attachments.push(d);
        }
    }
    attachments.sort();
    attachments.dedup();
    Ok(Output {
        bytes: serde_json::to_vec(&rec).map_err(|e| err(&e))?,
        attachments,
    })
}
