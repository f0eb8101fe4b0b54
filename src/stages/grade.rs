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
use super::run::{RunParams, execute_tree};

pub(super) const SESSION_VERSION: u32 = 1;
/// 2: the test patch's files are reset in every arm; a patch that is not a
/// diff fails to apply; the tests-and-infra policy.
pub(super) const STAGE_VERSION: u32 = 2;
/// 2: tamper suspects; `no_report` on a certified task is the agent's.
/// 3: a unit that does not build fails its expected tests (`unresolved`, the
/// compiler's message in `detail`), never `no_report`.
/// 4: a red grade of a run that ended with `is_error` is `infrastructure`'s.
pub(super) const GRADE_VERSION: u32 = 4;

/// Which of a session's paths the grader leaves out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Policy {
    /// Every test file the session touches, new or existing, and test
    /// infrastructure ([`INFRA_GLOBS`]): the default.
    TestsAndInfra,
    NewTestFiles,
    AllTestFiles,
    ResetTestPatchFiles,
    None,
}

impl Policy {
    pub(crate) fn parse(s: &str) -> Option<Policy> {
        Some(match s {
            "tests-and-infra" => Policy::TestsAndInfra,
            "new-test-files" => Policy::NewTestFiles,
            "all-test-files" => Policy::AllTestFiles,
            "reset-test-patch-files" => Policy::ResetTestPatchFiles,
            "none" => Policy::None,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Policy::TestsAndInfra => "tests-and-infra",
            Policy::NewTestFiles => "new-test-files",
            Policy::AllTestFiles => "all-test-files",
            Policy::ResetTestPatchFiles => "reset-test-patch-files",
            Policy::None => "none",
        }
    }
}

/// Files that configure or hook into a test run rather than hold tests:
/// interpreter start-up hooks, path files and runner configuration. Agent
/// edits to them are neutralised by the default policy and always flagged.
pub(crate) const INFRA_GLOBS: &[&str] = &[
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    "**/conftest.py",
    "pytest.ini",
    "**/pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    ".coveragerc",
    "**/jest.config.*",
    "**/vitest.config.*",
    "**/.mocharc*",
    "**/karma.conf.*",
    "**/phpunit.xml*",
    ".cargo/config",
    ".cargo/config.toml",
];

/// [`INFRA_GLOBS`], compiled once per process (every stage and grade asks).
pub(crate) fn infra_globset() -> &'static globset::GlobSet {
    static SET: std::sync::LazyLock<globset::GlobSet> = std::sync::LazyLock::new(|| {
        let globs: Vec<String> = INFRA_GLOBS.iter().map(|g| (*g).to_owned()).collect();
        super::triage::globset(&globs).unwrap_or_else(|_| globset::GlobSet::empty())
    });
    &SET
}

/// Whether `path` is test infrastructure: an infra file, or a test
/// package's `__init__.py`.
pub(crate) fn is_infra(path: &str, tests: &globset::GlobSet, infra: &globset::GlobSet) -> bool {
    infra.is_match(path) || (path.ends_with("__init__.py") && tests.is_match(path))
}

/// What the patch says it changes, or why it is not a patch at all (binary
/// junk, an `*** Begin Patch` envelope): never graded as the empty patch.
pub(crate) fn session_paths(patch: &[u8]) -> Result<Vec<assay_git::PatchPath>, String> {
    if patch.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let paths = patch_paths(patch).map_err(|e| e.to_string())?;
    if paths.is_empty() {
        return Err("it is not a unified diff (no file headers found)".into());
    }
    Ok(paths)
}

/// The session's paths the hidden test patch also touches: always reset to
/// the test patch's version (SWE-bench's reset), in every arm.
pub(crate) fn reset_paths(session_patch: &[u8], test_patch: &[u8]) -> Vec<String> {
    let Ok(hidden) = patch_paths(test_patch) else {
        return Vec::new();
    };
    let hidden: BTreeSet<String> = hidden.into_iter().map(|p| p.path).collect();
    let mut out: Vec<String> = session_paths(session_patch)
        .unwrap_or_default()
        .into_iter()
        .map(|p| p.path)
        .filter(|p| hidden.contains(p))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The session patch's paths that `policy` leaves out, sorted (the reset
/// paths come on top, see [`reset_paths`]).
pub(crate) fn excluded_paths(
    session_patch: &[u8],
    test_patch: &[u8],
    policy: Policy,
    tests: &globset::GlobSet,
) -> Result<Vec<String>, String> {
    if policy == Policy::None || session_patch.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let paths = session_paths(session_patch)?;
    let infra = infra_globset();
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
            Policy::TestsAndInfra => tests.is_match(&p.path) || is_infra(&p.path, tests, infra),
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
        let policy_excluded = excluded_paths(&patch, task.test_patch.as_bytes(), p.policy, &tests);
        match policy_excluded.and_then(|ex| session_paths(&patch).map(|paths| (ex, paths))) {
            Err(e) => skipped(format!("patch_apply_failed: the patch cannot be read: {e}")),
            Ok((mut exclude, paths)) => {
                exclude.extend(reset_paths(&patch, task.test_patch.as_bytes()));
                exclude.sort();
                exclude.dedup();
                let store = TreeStore::open_or_init(store_dir).map_err(|e| err(&e))?;
                let mut steps = Vec::new();
                let all_excluded = paths.iter().all(|x| exclude.contains(&x.path));
                if !paths.is_empty() && !all_excluded {
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
    pub(crate) run: RunParams,
}

struct GradeJob {
    params: GradeParams,
    format: assay_report::Format,
    store_dir: PathBuf,
    /// The env node its reruns and checks run in.
    env: String,
}

impl Job for GradeJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let p = self.params.clone();
        let format = self.format;
        let store_dir = self.store_dir.clone();
        Box::pin(async move { grade(p, format, store_dir, ctx).await })
    }

    /// Reruns and checks run in the graded run's environment: a grade that
    /// may start them holds that environment as a run does.
    fn exclusive(&self) -> Option<&str> {
        let runs_processes = self.params.reruns > 0 || self.params.check_command.is_some();
        runs_processes
            .then(|| self.params.run.exclusive(&self.env))
            .flatten()
    }
}

pub(crate) fn grade_job(
    params: GradeParams,
    format: assay_report::Format,
    store_dir: PathBuf,
    env: String,
) -> Arc<dyn Job> {
    Arc::new(GradeJob {
        params,
        format,
        store_dir,
        env,
    })
}

fn check(tests: &[String], outcomes: &std::collections::BTreeMap<String, Outcome>) -> Vec<String> {
    tests
        .iter()
        .filter(|t| outcomes.get(*t) != Some(&Outcome::Passed))
        .cloned()
        .collect()
}

/// A red grade the agent would carry is not its fault when its own run
/// died of an API or infrastructure failure (`is_error: true`, e.g. Claude
/// Code's "API Error: 529"): the patch is what a broken run left behind.
/// Tamper suspects, decided after this, stay the agent's.
fn blame_infrastructure(fault: &mut String, detail: &mut String, facts: &super::records::RunFacts) {
    if facts.is_error == Some(true) && fault == "agent" {
        "infrastructure".clone_into(fault);
        let why = "the agent's run ended with is_error (an API or infrastructure failure)";
        *detail = if detail.is_empty() {
            why.to_owned()
        } else {
            format!("{detail}; {why}")
        };
    }
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
    let reset = reset_paths(&patch, task.test_patch.as_bytes());
    let mut excluded =
        excluded_paths(&patch, task.test_patch.as_bytes(), p.policy, &tests).unwrap_or_default();
    excluded.extend(reset.iter().cloned());
    excluded.sort();
    excluded.dedup();
    let mut changed_test_files: BTreeSet<String> = run.changed_test_files.iter().cloned().collect();
    let mut rec = GradeRecord {
        reset_paths: reset,
        tamper: Vec::new(),
        sandbox: run.sandbox.clone(),
        executor: env.executor.clone(),
        image: env.image.clone(),
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
                "the evidence ({} bytes) exceeds the cap ({} bytes); the stored log was cut after {} bytes, and a grade is never scored on a cut log",
                run.log_bytes, p.run.log_cap, p.run.log_cap
            ),
        );
    } else if run.timed_out {
        verdict(
            &mut rec,
            "unresolved",
            "agent",
            format!("timed out after {} s", p.run.timeout_s),
        );
    } else if let Some(limit) = &run.limit {
        // The sandbox's memory, process or file-size limit ended or broke
        // the run: the patch's code did that, as with a timeout.
        verdict(
            &mut rec,
            "unresolved",
            "agent",
            format!("the run hit its {limit} limit"),
        );
    } else if run.report_error.is_some()
        || run.untrusted.is_some()
        || (run.tests.is_empty() && run.build_failures.is_empty())
    {
        let why = run
            .report_error
            .clone()
            .or(run.untrusted.clone())
            .unwrap_or_else(|| "the report holds no tests".into());
        // Graded tasks are certified: their controls reported normally, so a
        // run of this tree that gives no usable report is the patch's doing
        // (its code broke or faked the runner).
        let fault = if task.certified { "agent" } else { "harness" };
        verdict(&mut rec, "no_report", fault, why);
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
                let how = RunParams {
                    command: template.replace("{tests}", &tests.join(" ")),
                    ..p.run.clone()
                };
                let (checked, att) = execute_tree(tree_id, &env, &how, 0, &store_dir, &ctx).await?;
                attachments.extend(att);
                rec.redactions += checked.redactions;
                changed_test_files.extend(checked.changed_test_files.iter().cloned());
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
        // Expected tests whose unit did not build are failed, and a rerun of
        // the same tree would only compile it again: they are not rerun.
        let unbuilt = Unbuilt::of(format, &task, &run);
        let mut failing: Vec<String> = p2p
            .into_iter()
            .chain(f2p)
            .filter(|t| !unbuilt.tests.contains(t))
            .collect();
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
            let how = RunParams {
                command,
                ..p.run.clone()
            };
            let (again, att) =
                execute_tree(&tree_id, &env, &how, rec.reruns, &store_dir, &ctx).await?;
            attachments.extend(att);
            rec.redactions += again.redactions;
            changed_test_files.extend(again.changed_test_files.iter().cloned());
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
        let settled = settle(&unbuilt, failing, rec.reruns);
        rec.failing = settled.failing;
        verdict(&mut rec, settled.verdict, settled.fault, settled.detail);
    }
    blame_infrastructure(&mut rec.fault, &mut rec.detail, &session.facts);
    let changed: Vec<String> = changed_test_files.into_iter().collect();
    let (suspects, in_effect) = tamper_suspects(&patch, &rec.excluded_paths, &tests, &changed);
    rec.tamper = suspects;
    if in_effect && matches!(rec.verdict.as_str(), "resolved" | "resolved_after_rerun") {
        let why = rec.tamper.join("; ");
        verdict(
            &mut rec,
            "unresolved",
            "agent",
            format!("tamper suspect, never scored resolved: {why}"),
        );
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

/// The verdict of a run that produced a usable report.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Settled {
    pub(crate) verdict: &'static str,
    pub(crate) fault: &'static str,
    pub(crate) detail: String,
    pub(crate) failing: Vec<String>,
}

/// Decides the verdict once the reruns are done: `failing`, the expected
/// tests that still fail after `reruns` reruns, besides the `unbuilt` ones
/// (never rerun). A unit the patch keeps from building is the agent's
/// failure, with the compiler's message as the reason.
pub(crate) fn settle(unbuilt: &Unbuilt<'_>, mut failing: Vec<String>, reruns: u32) -> Settled {
    let settled = |verdict, fault, detail: String, failing| Settled {
        verdict,
        fault,
        detail,
        failing,
    };
    if failing.is_empty() && unbuilt.tests.is_empty() {
        return if reruns == 0 {
            settled("resolved", "none", String::new(), failing)
        } else {
            let detail = format!("passed on rerun {reruns}");
            settled("resolved_after_rerun", "flaky_test", detail, failing)
        };
    }
    let mut detail = Vec::new();
    if !unbuilt.tests.is_empty() {
        detail.push(unbuilt.detail());
    }
    if !failing.is_empty() {
        detail.push(format!(
            "{} tests still fail after {reruns} reruns",
            failing.len()
        ));
    }
    failing.extend(unbuilt.tests.iter().cloned());
    failing.sort();
    failing.dedup();
    settled("unresolved", "agent", detail.join("; "), failing)
}

/// The expected tests (FAIL_TO_PASS, PASS_TO_PASS) a graded run did not
/// name because their unit did not build, and those units' failures.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Unbuilt<'a> {
    /// Sorted, unique.
    pub(crate) tests: BTreeSet<String>,
    /// The failures that account for them, sorted by unit.
    pub(crate) failures: Vec<&'a assay_report::BuildFailure>,
}

impl<'a> Unbuilt<'a> {
    pub(crate) fn of(
        format: assay_report::Format,
        task: &TaskRecord,
        run: &'a RunRecord,
    ) -> Unbuilt<'a> {
        let mut out = Unbuilt::default();
        for t in task.fail_to_pass.iter().chain(&task.pass_to_pass) {
            if let Some(b) = run.build_failure_for(format, t, None) {
                out.tests.insert(t.clone());
                if !out.failures.contains(&b) {
                    out.failures.push(b);
                }
            }
        }
        out.failures.sort_by(|a, b| a.unit.cmp(&b.unit));
        out
    }

    /// The failing reason: each unit with the compiler's message.
    pub(crate) fn detail(&self) -> String {
        self.failures
            .iter()
            .map(|b| {
                let message = if b.message.is_empty() {
                    "(the runner printed no reason)"
                } else {
                    b.message.as_str()
                };
                format!("{} does not build: {message}", b.unit)
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Lines a patch adds outside test files that reach into the test
/// framework: importing it, subclassing or patching its classes, defining
/// its hooks, or ending the process at import time.
const FRAMEWORK_REACH: &[&str] = &[
    r"^\s*(import|from)\s+(unittest|pytest|_pytest|nose2?|doctest)\b",
    r"\b(TestCase|TestResult|TextTestRunner|TestLoader|_callTestMethod|addSuccess|addFailure|addError)\b",
    r"^\s*def\s+pytest_\w+",
    r"^(os\._exit|sys\.exit|exit|quit)\s*\(",
];

/// The tamper suspects of a graded patch, and whether any of them was in
/// effect in this arm (then the grade is never `resolved`):
/// - it touches test infrastructure (in effect unless this arm excluded it);
/// - its non-test code reaches into the test framework (always in effect);
/// - test files changed during the run (always in effect).
pub(crate) fn tamper_suspects(
    patch: &[u8],
    excluded: &[String],
    tests: &globset::GlobSet,
    changed_test_files: &[String],
) -> (Vec<String>, bool) {
    let infra = infra_globset();
    static REACH: std::sync::LazyLock<Vec<regex::Regex>> = std::sync::LazyLock::new(|| {
        FRAMEWORK_REACH
            .iter()
            .filter_map(|r| regex::Regex::new(r).ok())
            .collect()
    });
    let reach = &*REACH;
    let mut out = Vec::new();
    let mut in_effect = false;
    for p in session_paths(patch).unwrap_or_default() {
        if is_infra(&p.path, tests, infra) {
            let neutralised = excluded.contains(&p.path);
            in_effect |= !neutralised;
            out.push(format!(
                "touches test infrastructure: {}{}",
                p.path,
                if neutralised { " (neutralised)" } else { "" }
            ));
        }
    }
    let text = String::from_utf8_lossy(patch);
    let mut file: Option<String> = None;
    for line in text.lines() {
        if let Some(path) = line.strip_prefix("+++ ") {
            file = path.strip_prefix("b/").map(str::to_owned);
            continue;
        }
        let Some(added) = line.strip_prefix('+') else {
            continue;
        };
        let Some(f) = &file else { continue };
        if tests.is_match(f) || excluded.contains(f) || is_infra(f, tests, infra) {
            continue;
        }
        if reach.iter().any(|r| r.is_match(added)) {
            in_effect = true;
            out.push(format!(
                "reaches into the test framework: {f}: `{}`",
                added.trim()
            ));
        }
    }
    if !changed_test_files.is_empty() {
        in_effect = true;
        out.push(format!(
            "test files changed during the run: {}",
            changed_test_files.join(", ")
        ));
    }
    (out, in_effect)
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_report::{BuildFailure, Format};

    const PKG: &str = "example.com/gocalc";

    fn task(f2p: &[&str], p2p: &[&str]) -> TaskRecord {
        let ids = |v: &[&str]| v.iter().map(|t| format!("{PKG}.{t}")).collect();
        TaskRecord {
            instance_id: "gocalc-1".into(),
            repo: "gocalc".into(),
            fail_to_pass: ids(f2p),
            pass_to_pass: ids(p2p),
            track: "basic".into(),
            status: "released".into(),
            certified: true,
            ..TaskRecord::default()
        }
    }

    fn broken(unit: &str, message: &str) -> RunRecord {
        RunRecord {
            exit_code: Some(2),
            build_failures: vec![BuildFailure {
                unit: unit.to_owned(),
                message: message.to_owned(),
                stopped_run: false,
            }],
            ..RunRecord::default()
        }
    }

    const TOO_MANY: &str =
        "./stats.go:15:13: too many return values\n\thave (number, nil)\n\twant (float64)";

    #[test]
    fn a_patch_that_breaks_the_build_is_unresolved_the_agents_with_the_compilers_message() {
        let task = task(&["TestMeanEmpty"], &["TestAdd", "TestMean"]);
        let run = broken(PKG, TOO_MANY);
        let unbuilt = Unbuilt::of(Format::GoTestJson, &task, &run);
        assert_eq!(unbuilt.tests.len(), 3);
        let s = settle(&unbuilt, Vec::new(), 0);
        assert_eq!((s.verdict, s.fault), ("unresolved", "agent"));
        assert_eq!(s.detail, format!("{PKG} does not build: {TOO_MANY}"));
        assert_eq!(
            s.failing,
            [
                format!("{PKG}.TestAdd"),
                format!("{PKG}.TestMean"),
                format!("{PKG}.TestMeanEmpty")
            ]
        );
    }

    #[test]
    fn only_the_broken_units_tests_are_unbuilt_and_the_rest_still_count() {
        // Two packages: the agent broke `other`; gocalc's tests ran.
        let task = task(&["TestMeanEmpty"], &["TestAdd"]);
        let mut run = broken(
            "example.com/gocalc/other",
            "other.go:1:1: expected 'package'",
        );
        run.tests.insert(format!("{PKG}.TestAdd"), Outcome::Passed);
        run.tests
            .insert(format!("{PKG}.TestMeanEmpty"), Outcome::Failed);
        let unbuilt = Unbuilt::of(Format::GoTestJson, &task, &run);
        assert!(unbuilt.tests.is_empty());
        let s = settle(&unbuilt, vec![format!("{PKG}.TestMeanEmpty")], 1);
        assert_eq!(s.verdict, "unresolved");
        assert_eq!(s.detail, "1 tests still fail after 1 reruns");
        // Both at once: the compiler's message first.
        let mut run = broken(PKG, "x.go:1: boom");
        run.build_failures.push(BuildFailure {
            unit: "example.com/z".into(),
            message: String::new(),
            stopped_run: false,
        });
        let mut t = task.clone();
        t.pass_to_pass.push("example.com/z.TestZ".into());
        let unbuilt = Unbuilt::of(Format::GoTestJson, &t, &run);
        let s = settle(&unbuilt, vec!["example.com/y.TestY".into()], 2);
        assert_eq!(
            s.detail,
            format!(
                "{PKG} does not build: x.go:1: boom; example.com/z does not build: \
                 (the runner printed no reason); 1 tests still fail after 2 reruns"
            )
        );
        assert_eq!(s.failing.len(), 4);
    }

    #[test]
    fn a_run_stopped_by_a_build_failure_covers_every_expected_test() {
        let task = task(&["multiplies"], &["adds"]);
        let mut run = broken("tinycalc", "error[E0425]: cannot find function `mul`");
        run.build_failures[0].stopped_run = true;
        let unbuilt = Unbuilt::of(Format::Libtest, &task, &run);
        assert_eq!(unbuilt.tests.len(), 2);
        assert_eq!(unbuilt.failures.len(), 1);
    }

    #[test]
    fn without_build_failures_settle_decides_as_before() {
        let none = Unbuilt::default();
        let s = settle(&none, Vec::new(), 0);
        assert_eq!(
            (s.verdict, s.fault, s.detail.as_str()),
            ("resolved", "none", "")
        );
        let s = settle(&none, Vec::new(), 2);
        assert_eq!(
            (s.verdict, s.fault, s.detail.as_str()),
            ("resolved_after_rerun", "flaky_test", "passed on rerun 2")
        );
        let s = settle(&none, vec!["t".into()], 3);
        assert_eq!(
            (s.verdict, s.fault, s.detail.as_str()),
            ("unresolved", "agent", "1 tests still fail after 3 reruns")
        );
    }

    #[test]
    fn a_run_that_died_of_an_api_error_is_not_the_agents_fault() {
        let errored = crate::stages::records::RunFacts {
            is_error: Some(true),
            ..Default::default()
        };
        let (mut fault, mut detail) = (
            "agent".to_owned(),
            "2 tests still fail after 3 reruns".to_owned(),
        );
        blame_infrastructure(&mut fault, &mut detail, &errored);
        assert_eq!(fault, "infrastructure");
        assert_eq!(
            detail,
            "2 tests still fail after 3 reruns; the agent's run ended with is_error (an API or infrastructure failure)"
        );
        // Only the agent's blame moves; a run that ended well keeps it.
        let (mut fault, mut detail) = ("harness".to_owned(), String::new());
        blame_infrastructure(&mut fault, &mut detail, &errored);
        assert_eq!(fault, "harness");
        let (mut fault, mut detail) = ("agent".to_owned(), String::new());
        let fine = crate::stages::records::RunFacts {
            is_error: Some(false),
            ..Default::default()
        };
        blame_infrastructure(&mut fault, &mut detail, &fine);
        assert_eq!(fault, "agent");
    }

    /// Reruns and checks run in the graded run's environment: a grade that
    /// may start them holds a local serial environment as a run does.
    #[test]
    fn a_grade_that_may_rerun_holds_its_local_serial_environment() {
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
        };
        let params = |reruns, check: Option<&str>, run: &RunParams| GradeParams {
            arm: "exclude".into(),
            policy: Policy::TestsAndInfra,
            test_globs: Vec::new(),
            reruns,
            rerun_command: None,
            check_command: check.map(str::to_owned),
            run: run.clone(),
        };
        let holds = |p: GradeParams| {
            grade_job(p, Format::Unittest, PathBuf::new(), "env:abc".into())
                .exclusive()
                .map(str::to_owned)
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
            confine: super::super::confine::Confinement {
                executor: super::super::confine::Executor::Docker(
                    super::super::confine::DockerSettings {
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
