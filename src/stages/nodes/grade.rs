//! Grading a session: `session` (normalise), `stage` (compose the graded
//! tree), a `run` over it (the same node kind as screening, so identical trees
//! share runs), and `grade` (run the checks and reruns the verdict asks
//! for; the verdict itself is the pure [`decide`](super::verdict::decide)).
//!
//! The exclusion policy is applied per *arm*: `exclude` leaves out what the
//! policy names (by default the session's NEW files named like tests, which
//! collide with hidden tests); `keep` leaves out nothing. Where the two arms
//! disagree, the verifier — not the agent — is the suspect.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use assay_engine::{Digest, JobCtx};
use assay_git::{ComposeError, PatchPath, PatchStep, TreeStore, parse_patch, patch_paths};
use serde::Serialize;

use super::node::{Kind, Made, NoInputs, NodeKind};
use super::records::{
    Arm, EnvRecord, Fault, GradeRecord, Receipt, RunRecord, SessionRecord, Skip, TaskRecord,
    TaskStatus, TreeRecord, Verdict,
};
use super::run::{RunParams, execute_tree};
use super::verdict::{self, Readings};

pub(crate) const SESSION_VERSION: u32 = 1;
/// 2: the test patch's files are reset in every arm; a patch that is not a
/// diff fails to apply; the tests-and-infra policy.
/// 3: the record lists the hidden test files (`hidden`).
/// 4: paths as `git apply` reads them (a patch git reads otherwise is
/// `patch_apply_failed`); a hidden test file renamed away, deleted or put
/// in the way of is restored; the patch caps.
pub(crate) const STAGE_VERSION: u32 = 4;
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
pub(crate) const GRADE_VERSION: u32 = 7;

/// How much of a log a grade carries: the last lines, capped in bytes.
const TAIL_LINES: usize = 40;
const TAIL_BYTES: usize = 4096;

pub(crate) use crate::pipeline::{PatchCaps, Policy};

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
/// Read as `git apply` reads it ([`assay_git::parse_patch`]); the stage
/// refuses a patch git reads otherwise before applying it.
pub(crate) fn session_paths(patch: &[u8]) -> Result<Vec<PatchPath>, String> {
    if patch.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let paths = patch_paths(patch).map_err(|e| e.to_string())?;
    if paths.is_empty() {
        return Err("it is not a unified diff (no file headers found)".into());
    }
    Ok(paths)
}

/// Whether `path` lies below the directory `dir`.
fn is_under(path: &str, dir: &str) -> bool {
    path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/'
}

/// Whether writing `a` keeps `b` from being written: one path, or one a
/// directory above the other.
fn collides(a: &str, b: &str) -> bool {
    a == b || is_under(a, b) || is_under(b, a)
}

/// What of a session patch gives way to the hidden test patch, in every
/// arm (SWE-bench's reset, widened to every way of reaching its files).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reset {
    /// The test patch's files the session wrote, renamed or deleted, or
    /// put a file or directory in the way of, sorted: they get the test
    /// patch's version (the grade's `reset_paths`).
    pub(crate) restored: Vec<String>,
    /// The session's file sections left out for them, sorted, by the path
    /// `git apply --exclude` matches: a rename of a hidden file is left out
    /// whole, so the file stays and the new name never appears.
    pub(crate) left_out: Vec<String>,
}

/// The [`Reset`] of a session patch's sections (its [`session_paths`])
/// against the task's test patch.
pub(crate) fn reset(session: &[PatchPath], test_patch: &[u8]) -> Reset {
    let Ok(hidden) = patch_paths(test_patch) else {
        return Reset::default();
    };
    let hidden: BTreeSet<&str> = hidden.iter().flat_map(PatchPath::written).collect();
    let mut restored = BTreeSet::new();
    let mut left_out = BTreeSet::new();
    for section in session {
        for written in section.written() {
            for h in hidden.iter().filter(|h| collides(written, h)) {
                restored.insert((*h).to_owned());
                left_out.insert(section.path.clone());
            }
        }
    }
    Reset {
        restored: restored.into_iter().collect(),
        left_out: left_out.into_iter().collect(),
    }
}

/// The paths the hidden test patch leaves in the graded tree (not those it
/// deletes), sorted: the files a run may not change.
pub(crate) fn hidden_paths(test_patch: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = patch_paths(test_patch)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| !p.is_deleted)
        .map(|p| p.path)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The sections of a session patch (its [`session_paths`]) that `policy`
/// leaves out, sorted, by the path `git apply --exclude` matches (the
/// [`Reset`] comes on top). A section counts as an edit of every path it
/// writes: a rename of a test file to `pkg/x.py` is an edit of that test
/// file.
pub(crate) fn excluded_paths(
    session: &[PatchPath],
    test_patch: &[u8],
    policy: Policy,
    tests: &globset::GlobSet,
) -> Vec<String> {
    let infra = infra_globset();
    let hidden: BTreeSet<String> = match policy {
        Policy::ResetTestPatchFiles => patch_paths(test_patch)
            .unwrap_or_default()
            .iter()
            .flat_map(|p| p.written().map(str::to_owned))
            .collect(),
        _ => BTreeSet::new(),
    };
    let mut out: Vec<String> = session
        .iter()
        .filter(|p| match policy {
            Policy::TestsAndInfra => p
                .written()
                .any(|w| tests.is_match(w) || is_infra(w, tests, infra)),
            // A rename's or copy's target is new at base too.
            Policy::NewTestFiles => (p.is_new || p.old_path.is_some()) && tests.is_match(&p.path),
            Policy::AllTestFiles => p.written().any(|w| tests.is_match(w)),
            Policy::ResetTestPatchFiles => p.written().any(|w| hidden.contains(w)),
            Policy::None => false,
        })
        .map(|p| p.path.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

// ---- session ---------------------------------------------------------------

/// The session node's params: the session with its patch's bytes (so the
/// key follows the patch), then why the file could not be read, if it
/// could not (the node then fails with it). The key's bytes are the
/// fields in this order, as before the session became one shared type.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SessionParams {
    pub(crate) session: crate::sessions::Session<Vec<u8>>,
    pub(crate) error: Option<String>,
}

/// Normalises a session: its patch into the blob store, named by digest.
pub(crate) struct Session(pub(crate) SessionParams);

impl Kind for Session {
    const NAME: &'static str = NodeKind::Session.as_str();
    const VERSION: u32 = SESSION_VERSION;
    type Params = SessionParams;
    type Inputs = NoInputs;
    type Record = SessionRecord;

    fn params(&self) -> &SessionParams {
        &self.0
    }

    async fn run(self: Arc<Self>, _: NoInputs, ctx: JobCtx) -> Result<Made<SessionRecord>, String> {
        let s = &self.0.session;
        if let Some(e) = &self.0.error {
            return Err(format!("{}: {e}", s.id));
        }
        let digest = ctx.blobs.put(&s.patch).map_err(|e| e.to_string())?;
        Ok(Made {
            record: SessionRecord {
                patch: digest.to_hex(),
                id: s.id.clone(),
                task: s.task.clone(),
                track: s.track.clone(),
                agent: s.agent.clone(),
                model: s.model.clone(),
                facts: s.facts.clone(),
            },
            attachments: vec![digest],
        })
    }
}

// ---- stage -----------------------------------------------------------------

#[derive(Clone, Debug, Serialize)]
pub(crate) struct StageParams {
    pub(crate) arm: Arm,
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
    /// A larger session patch is refused before anything is staged.
    pub(crate) caps: PatchCaps,
}

/// The blob `hex` names; nothing for an empty name (an empty patch).
pub(crate) fn blob(ctx: &JobCtx, hex: &str) -> Result<Vec<u8>, String> {
    if hex.is_empty() {
        return Ok(Vec::new());
    }
    let d: Digest = hex.parse()?;
    ctx.blobs.get(&d).map_err(|e| e.to_string())
}

super::node::inputs! {
    pub(crate) struct StageInputs / StageNames { task: TaskRecord, session: SessionRecord }
}

/// Composes the graded tree: the base, the session patch less what the
/// arm leaves out, then the hidden test patch.
pub(crate) struct Stage {
    pub(crate) params: StageParams,
    pub(crate) store_dir: PathBuf,
}

impl Kind for Stage {
    const NAME: &'static str = NodeKind::Stage.as_str();
    const VERSION: u32 = STAGE_VERSION;
    type Params = StageParams;
    type Inputs = StageInputs;
    type Record = TreeRecord;

    fn params(&self) -> &StageParams {
        &self.params
    }

    async fn run(self: Arc<Self>, i: StageInputs, ctx: JobCtx) -> Result<Made<TreeRecord>, String> {
        tokio::task::spawn_blocking(move || stage(&self.params, &self.store_dir, &i, &ctx))
            .await
            .map_err(|e| format!("stage task: {e}"))?
            .map(Made::record)
    }
}

/// The session patch's paths, or why it is refused before anything is
/// staged: over a cap (bytes first, so a huge patch is not even read), or
/// not a patch.
fn session_paths_within(patch: &[u8], caps: PatchCaps) -> Result<Vec<PatchPath>, String> {
    if let Some(why) = caps.over_bytes(patch.len() as u64) {
        return Err(why);
    }
    let paths = session_paths(patch).map_err(|e| format!("the patch cannot be read: {e}"))?;
    match caps.over_files(paths.len() as u64) {
        Some(why) => Err(why),
        None => Ok(paths),
    }
}

fn stage(
    p: &StageParams,
    store_dir: &std::path::Path,
    i: &StageInputs,
    ctx: &JobCtx,
) -> Result<TreeRecord, String> {
    let (task, session) = (&i.task, &i.session);
    let skipped = |why: Skip| TreeRecord {
        tree: None,
        skipped: Some(why),
        hidden: Vec::new(),
    };
    let record = if !task.certified || task.status != TaskStatus::Released {
        skipped(Skip::NotGraded(format!(
            "task {} is {}",
            task.instance_id,
            if task.certified {
                task.status.as_str()
            } else {
                "uncertified"
            }
        )))
    } else {
        let patch = blob(ctx, &session.patch)?;
        let tests = super::triage::globset(&p.test_globs).map_err(|e| e.to_string())?;
        match session_paths_within(&patch, p.caps) {
            Err(e) => skipped(Skip::PatchApplyFailed(e)),
            Ok(paths) => {
                let test_patch = task.test_patch.as_bytes();
                let mut exclude = excluded_paths(&paths, test_patch, p.policy, &tests);
                exclude.extend(reset(&paths, test_patch).left_out);
                exclude.sort();
                exclude.dedup();
                let store = TreeStore::open_or_init(store_dir).map_err(|e| e.to_string())?;
                let mut steps = Vec::new();
                let left_out: BTreeSet<&String> = exclude.iter().collect();
                let all_excluded = paths.iter().all(|x| left_out.contains(&x.path));
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
                        hidden: hidden_paths(task.test_patch.as_bytes()),
                    },
                    Err(ComposeError::Apply { label, stderr }) if label == "session" => {
                        skipped(Skip::PatchApplyFailed(stderr.trim().to_owned()))
                    }
                    Err(ComposeError::Misread { label, reason }) if label == "session" => {
                        skipped(Skip::PatchApplyFailed(reason))
                    }
                    Err(ComposeError::PathEscape { path, reason, .. }) => {
                        skipped(Skip::PatchApplyFailed(format!("{path}: {reason}")))
                    }
                    Err(ComposeError::Apply { stderr, .. }) => {
                        skipped(Skip::TestPatchConflict(stderr.trim().to_owned()))
                    }
                    // The task's own test patch, read otherwise by git:
                    // nothing about it can be trusted, and it is no
                    // session's doing.
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
    };
    Ok(record)
}

// ---- grade -----------------------------------------------------------------

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
}

/// Gathers the readings (the graded run, then the checks and reruns
/// [`verdict`](super::verdict) asks for) and records the decision.
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
    let tests = super::triage::globset(&p.test_globs).map_err(|e| e.to_string())?;
    // Over a cap, or not a patch: it was never staged, and nothing of it
    // is read again (reading is what a huge patch costs).
    let (paths, patch) = match session_paths_within(&patch, p.caps) {
        Ok(paths) => (paths, patch),
        Err(_) => (Vec::new(), Vec::new()),
    };
    let reset = reset(&paths, task.test_patch.as_bytes());
    let mut excluded = excluded_paths(&paths, task.test_patch.as_bytes(), p.policy, &tests);
    excluded.extend(reset.left_out);
    excluded.sort();
    excluded.dedup();
    let mut rec = GradeRecord {
        reset_paths: reset.restored,
        tamper: Vec::new(),
        sandbox: run.sandbox.clone(),
        executor: env.executor.clone(),
        image: env.image.clone(),
        log_tail: None,
        unchecked: run.unchecked.clone(),
        session: session.id.clone(),
        instance_id: task.instance_id.clone(),
        track: task.track.clone(),
        task_digest,
        agent: session.agent.clone(),
        model: session.model.clone(),
        arm: p.arm,
        policy: p.policy,
        verdict: Verdict::NotGraded,
        fault: Fault::None,
        detail: String::new(),
        failing: Vec::new(),
        excluded_paths: excluded,
        exit_code: run.exit_code,
        base_check: String::new(),
        new_check: String::new(),
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
    let mut readings = Readings {
        first: run,
        ..Readings::default()
    };
    let record_run = |rec: &mut GradeRecord, what: String, r: &RunRecord| {
        rec.redactions += r.redactions;
        rec.evidence.push(Receipt {
            what,
            digest: r.log.clone(),
            bytes: r.log_bytes,
        });
    };
    let tree_id = tree.tree.clone().unwrap_or_default();
    if verdict::reads_report(&task, &tree, &readings.first) {
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
                let (checked, att) =
                    execute_tree(tree_id, &tree.hidden, &env, &how, 0, store_dir, &ctx)
                        .await
                        .map_err(|e| e.0)?;
                attachments.extend(att);
                record_run(&mut rec, format!("{which} check log"), &checked);
                if which == "base" {
                    rec.base_exit = checked.exit_code;
                } else {
                    rec.new_exit = checked.exit_code;
                }
                readings.checks.push(checked);
            }
        }
        while let Some(failing) = verdict::next_rerun(format, &task, &readings, p.reruns) {
            let rerun = readings.reruns.len() as u32 + 1;
            let how = RunParams {
                command: rerun_command(p, &readings.first, &failing),
                ..p.run.clone()
            };
            let (again, att) =
                execute_tree(&tree_id, &tree.hidden, &env, &how, rerun, store_dir, &ctx)
                    .await
                    .map_err(|e| e.0)?;
            attachments.extend(att);
            record_run(&mut rec, format!("rerun {rerun} log"), &again);
            readings.reruns.push(again);
        }
    }
    let graded = verdict::Graded {
        task: &task,
        tree: &tree,
        facts: &session.facts,
        format,
        limits: verdict::Limits {
            timeout_s: p.run.timeout_s,
            log_cap: p.run.log_cap,
            write: p.run.confine.limits.write,
        },
        patch: &patch,
        excluded: &rec.excluded_paths,
        tests: &tests,
    };
    let decision = verdict::decide(&graded, &readings);
    rec.verdict = decision.verdict;
    rec.fault = decision.fault;
    rec.detail = decision.detail;
    rec.failing = decision.failing;
    rec.base_check = decision.base_check;
    rec.new_check = decision.new_check;
    rec.tamper = decision.tamper;
    rec.reruns = readings.reruns.len() as u32;
    if rec.verdict != Verdict::Resolved
        && let Some(last) = rec.evidence.last()
    {
        rec.log_tail = Some(log_tail(&last.what, &blob(&ctx, &last.digest)?));
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

/// The last [`TAIL_LINES`] lines of `log`, at most [`TAIL_BYTES`] bytes of
/// them (a longer last line is cut from its start, on a character boundary,
/// and marked with `…`).
pub(crate) fn log_tail(of: &str, log: &[u8]) -> super::records::LogTail {
    let text = String::from_utf8_lossy(log);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let lines: Vec<&str> = text.split('\n').collect();
    let (mut start, mut bytes) = (lines.len(), 0);
    while start > 0
        && lines.len() - start < TAIL_LINES
        && bytes + lines[start - 1].len() < TAIL_BYTES
    {
        start -= 1;
        bytes += lines[start].len() + 1;
    }
    let tail = if start == lines.len() {
        // The last line alone is over the cap: its end.
        start -= 1;
        let last = lines[start];
        let mut cut = last.len() - TAIL_BYTES;
        while !last.is_char_boundary(cut) {
            cut += 1;
        }
        format!("…{}", &last[cut..])
    } else {
        lines[start..].join("\n")
    };
    super::records::LogTail {
        of: of.to_owned(),
        lines_omitted: start as u64,
        text: tail,
    }
}

/// The command that reruns `failing`: `[grade] rerun_command` over their
/// files, where the graded run's report names them; else the test command.
fn rerun_command(p: &GradeParams, first: &RunRecord, failing: &[String]) -> String {
    let files: BTreeSet<&String> = failing.iter().filter_map(|t| first.files.get(t)).collect();
    match &p.rerun_command {
        Some(c) if !files.is_empty() => {
            let files: Vec<&str> = files.iter().map(|f| f.as_str()).collect();
            c.replace("{files}", &files.join(" "))
        }
        _ => p.run.command.clone(),
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
    let excluded: BTreeSet<&str> = excluded.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    let mut in_effect = false;
    // The sections as git applies them; the added lines of each, walked by
    // its hunks' counts (a line shaped like a header is content).
    let files = if patch.iter().all(u8::is_ascii_whitespace) {
        Vec::new()
    } else {
        parse_patch(patch).unwrap_or_default()
    };
    for f in &files {
        let neutralised = excluded.contains(f.path.path.as_str());
        for written in f.path.written().filter(|w| is_infra(w, tests, infra)) {
            in_effect |= !neutralised;
            out.push(format!(
                "touches test infrastructure: {written}{}",
                if neutralised { " (neutralised)" } else { "" }
            ));
        }
    }
    for f in &files {
        let path = &f.path.path;
        if tests.is_match(path) || excluded.contains(path.as_str()) || is_infra(path, tests, infra)
        {
            continue;
        }
        for added in f
            .added
            .iter()
            .filter(|a| reach.iter().any(|r| r.is_match(&a.text)))
        {
            in_effect = true;
            out.push(format!(
                "reaches into the test framework: {path}: `{}`",
                added.text.trim()
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

    /// The hidden test patch of the tests below: it edits
    /// `tests/test_ops.py` and creates `tests/test_mul.py`.
    const TEST_PATCH: &str = "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -1 +1,2 @@\n a\n+b\ndiff --git a/tests/test_mul.py b/tests/test_mul.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_mul.py\n@@ -0,0 +1 @@\n+m\n";

    fn test_globs() -> globset::GlobSet {
        super::super::triage::globset(&["tests/**".to_owned()]).expect("globs")
    }

    /// Renamed away, deleted, or a file or directory put in its way: every
    /// way of keeping a hidden test file from the test patch's version
    /// gives way to it (it was `test_patch_conflict`, ambiguous).
    #[test]
    fn a_hidden_test_file_renamed_away_deleted_or_in_the_way_is_reset() {
        let cases = [
            (
                "diff --git a/tests/test_ops.py b/pkg/moved.py\nsimilarity index 100%\nrename from tests/test_ops.py\nrename to pkg/moved.py\n",
                "tests/test_ops.py",
                "pkg/moved.py",
            ),
            (
                "diff --git a/tests/test_ops.py b/tests/test_ops.py\ndeleted file mode 100644\n--- a/tests/test_ops.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n",
                "tests/test_ops.py",
                "tests/test_ops.py",
            ),
            (
                "diff --git a/tests/test_mul.py/x.py b/tests/test_mul.py/x.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_mul.py/x.py\n@@ -0,0 +1 @@\n+x\n",
                "tests/test_mul.py",
                "tests/test_mul.py/x.py",
            ),
            // A traditional diff git writes to the hidden file itself.
            (
                "--- a/tests/test_ops.py\n+++ b/tests/test_ops.py.orig\n@@ -1 +1,2 @@\n a\n+z\n",
                "tests/test_ops.py",
                "tests/test_ops.py",
            ),
        ];
        for (patch, restored, left_out) in cases {
            let paths = session_paths(patch.as_bytes()).expect("a patch");
            assert_eq!(
                reset(&paths, TEST_PATCH.as_bytes()),
                Reset {
                    restored: vec![restored.to_owned()],
                    left_out: vec![left_out.to_owned()],
                },
                "{patch}"
            );
        }
        // A copy of a hidden file only reads it; a file beside one is free.
        let copy = "diff --git a/tests/test_ops.py b/pkg/copy.py\nsimilarity index 100%\ncopy from tests/test_ops.py\ncopy to pkg/copy.py\ndiff --git a/tests/test_ops.pyc b/tests/test_ops.pyc\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_ops.pyc\n@@ -0,0 +1 @@\n+c\n";
        let paths = session_paths(copy.as_bytes()).expect("a patch");
        assert_eq!(reset(&paths, TEST_PATCH.as_bytes()), Reset::default());
    }

    /// A rename of a test file to a name that is not one is an edit of
    /// that test file: the policy leaves it out.
    #[test]
    fn the_policy_leaves_out_a_test_file_renamed_to_a_plain_name() {
        let patch = "diff --git a/tests/test_x.py b/pkg/x.py\nsimilarity index 100%\nrename from tests/test_x.py\nrename to pkg/x.py\n";
        let paths = session_paths(patch.as_bytes()).expect("a patch");
        let out = excluded_paths(
            &paths,
            TEST_PATCH.as_bytes(),
            Policy::TestsAndInfra,
            &test_globs(),
        );
        assert_eq!(out, ["pkg/x.py"]);
    }

    /// The scanner desync of issue 18: an added line `++ b/tests/...`
    /// (the diff line `+++ b/tests/...`) in the package made every later
    /// added line count as test-file content, and the framework reach
    /// below it went unflagged.
    #[test]
    fn a_framework_reach_after_an_added_line_shaped_like_a_header_is_flagged() {
        let patch = "diff --git a/pkg/__init__.py b/pkg/__init__.py\n--- a/pkg/__init__.py\n+++ b/pkg/__init__.py\n@@ -0,0 +1,5 @@\n+_DOC = \"\"\"\n+++ b/tests/test_ops.py\n+\"\"\"\n+import unittest\n+unittest.TestCase.run = lambda self, result=None: None\n";
        let (suspects, in_effect) = tamper_suspects(patch.as_bytes(), &[], &test_globs(), &[]);
        assert!(in_effect, "{suspects:?}");
        assert_eq!(
            suspects,
            [
                "reaches into the test framework: pkg/__init__.py: `import unittest`",
                "reaches into the test framework: pkg/__init__.py: `unittest.TestCase.run = lambda self, result=None: None`",
            ]
        );
    }

    /// Renaming test infrastructure away is touching it.
    #[test]
    fn renaming_infrastructure_away_touches_it() {
        let patch = "diff --git a/tests/conftest.py b/pkg/helpers.py\nsimilarity index 100%\nrename from tests/conftest.py\nrename to pkg/helpers.py\n";
        let (suspects, in_effect) = tamper_suspects(patch.as_bytes(), &[], &test_globs(), &[]);
        assert!(in_effect);
        assert_eq!(suspects, ["touches test infrastructure: tests/conftest.py"]);
    }

    #[test]
    fn a_log_tail_is_the_last_lines_within_the_byte_cap() {
        let log: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let t = log_tail("rerun 1 log", log.as_bytes());
        assert_eq!((t.of.as_str(), t.lines_omitted), ("rerun 1 log", 60));
        assert!(t.text.starts_with("line 61\n") && t.text.ends_with("line 100"));
        // Long lines: fewer of them, never over the cap.
        let wide = "x".repeat(1000);
        let log = format!("{wide}\n{wide}\n{wide}\n{wide}\n{wide}\nend\n");
        let t = log_tail("log", log.as_bytes());
        assert!(t.text.len() <= TAIL_BYTES);
        assert_eq!(
            t.lines_omitted, 1,
            "four of the five wide lines and the last"
        );
        assert!(t.text.ends_with("\nend"));
        // One line over the cap: its end, cut on a character boundary.
        let log = "é".repeat(3000);
        let t = log_tail("log", log.as_bytes());
        let cut = t.text.strip_prefix('…').expect("marked as cut");
        assert!(cut.len() <= TAIL_BYTES && cut.chars().all(|c| c == 'é'));
        assert_eq!(t.lines_omitted, 0);
        assert_eq!(log_tail("log", b"").text, "");
    }

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
