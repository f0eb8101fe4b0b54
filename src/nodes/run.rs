//! `run`: one execution of the test command in an environment over one exact
//! tree. Runs are observations, not functions (tests can be flaky): a recorded
//! run is reused until re-read (`--reread run`), and the repeat index is part
//! of the key. The key is env output + tree id + command + report format +
//! timeout + log cap + repeat, so identical trees share runs.
//!
//! The tree is materialized fresh into a scratch directory (nothing of the
//! history, remote or gold patch is visible); the command runs in its own
//! session and process group with a timeout that kills the whole group. Runs
//! in one local environment are serialised through the engine's one lock
//! ([`RunParams::exclusive`]): the environment directory is shared mutable
//! state (the example's flaky test depends on it).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use assay_engine::JobCtx;
use assay_git::TreeStore;
use assay_report::{Format, Trust};
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use crate::model::canary::{self, Planted};
use crate::model::rebuild::RebuildRule;
use crate::model::records::{EnvRecord, RunRecord, TreeRecord};
use crate::model::rules::rebuild;
use crate::run::error::{Kinded, NodeError};
use crate::run::executor::{EnvHandle, Executors, Launch, TestRun, Watched};

use super::canaries::{self, Plant};

/// How a test command is run and read: the run node's params (so its key),
/// and what a recheck's reruns and checks run with, their command replaced.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RunParams {
    pub(crate) command: String,
    /// Keyed by its name, a string.
    #[serde(serialize_with = "format_name")]
    pub(crate) report: Format,
    pub(crate) report_file: Option<String>,
    pub(crate) timeout_s: u64,
    /// Seconds the timeout may move for time a run waited for a CPU the
    /// machine gave to other work: what a task's timeout leaves of the
    /// environment's (`within`). Not keyed: it follows from the keyed
    /// timeouts.
    #[serde(skip)]
    pub(crate) stall_grace_s: u64,
    pub(crate) log_cap: u64,
    pub(crate) redact: crate::run::redact::RedactConfig,
    /// Runs of this environment one at a time (its directory is shared state).
    pub(crate) serial: bool,
    pub(crate) repeat: u32,
    /// The sandbox and limits.
    pub(crate) confine: crate::model::config::Confinement,
    /// Test files (by these globs) whose bytes change during the run are
    /// recorded: tamper evidence.
    pub(crate) watch: Vec<String>,
    /// `[env] canary`: the canaries of a framework with none built in. Left
    /// out of the key when absent (the keys stay what they were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) canary: Option<crate::pipeline::CanaryTemplate>,
    /// `[env] warm`: each run starts from its own copy of these caches.
    /// Left out of the key when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) warm: Vec<(String, String)>,
    /// `[env] touched_command`, on graded runs only: what a run over a
    /// graded tree runs in place of `command`, over the test files its
    /// hidden test patch touches (`rules::touched`). Left out of the key
    /// when absent (the keys stay what they were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) touched_command: Option<String>,
}

fn format_name<S: serde::Serializer>(format: &Format, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(format.as_str())
}

super::adapter::inputs! {
    pub(crate) struct RunInputs / RunNames {
        // What to run over: a tree node's record (screening) or a stage
        // node's (grading), both a `TreeRecord`.
        tree: TreeRecord,
        env: EnvRecord,
    }
}

pub(crate) struct Run {
    pub(crate) params: RunParams,
    pub(crate) store_dir: PathBuf,
    /// The env node: runs of one local environment never overlap.
    pub(crate) env: String,
    pub(crate) executors: Arc<Executors>,
}

impl Kind for Run {
    const NAME: &'static str = NodeKind::Run.as_str();
    /// 2: runs are sandboxed (docs/security.md), limited, and see `ASSAY_ATTEMPT`.
    /// 3: a reading whose units did not build is believed and records them
    /// (`build_failures`); a missing report file with a build failure in the log
    /// is such a reading.
    /// 4: graded code cannot tell a run from a rerun (no `ASSAY_ATTEMPT`),
    /// and the hidden test patch's files are out of its reach.
    /// 5: the guard's audit hook reports tampering with the runner on the
    /// output pipe (`ASSAY_AUDIT_FD`, `ASSAY_HIDDEN`), recorded as `audit`.
    /// 6: the hook checks the runner at each test (unittest's `startTest` /
    /// `stopTest`), result and test objects as well as classes
    /// (`runner.object`), and reports a Python started without the guard
    /// (`python.unguarded`).
    /// 7: a window's mutants change every place of the test that writes
    /// the value (issue 47); a command naming tests names their windows.
    /// 8: failing tests' words from the report (`said`); a Go vet or
    /// compiler block whose `FAIL` line went to a converter is a build failure.
    const VERSION: u32 = 8;
    const OBSERVATION: bool = true;
    type Params = RunParams;
    type Inputs = RunInputs;
    type Record = RunRecord;

    fn params(&self) -> &RunParams {
        &self.params
    }

    async fn run(self: Arc<Self>, i: RunInputs, ctx: JobCtx) -> Result<Made<RunRecord>, NodeError> {
        let p = &self.params.within(i.tree.timeout_s);
        let Some(tree_id) = &i.tree.tree else {
            let skipped = i.tree.skipped.as_ref().map(|s| s.to_string());
            return Ok(Made::record(RunRecord {
                skipped: skipped.or(Some("no tree".into())),
                ..RunRecord::default()
            }));
        };
        let (record, attachments, _) = execute_tree(
            tree_id,
            &i.tree.hidden,
            &i.tree.rebuild,
            &i.env,
            p,
            p.repeat,
            &self.store_dir,
            &self.executors,
            &ctx,
            Plant::Graded(i.tree.canaries.as_ref()),
        )
        .await?;
        Ok(Made {
            record,
            attachments,
        })
    }

    fn exclusive(&self) -> Option<&str> {
        self.params.exclusive(&self.executors, &self.env)
    }

    /// A run the executor lost is read again rather than reused.
    fn refuse_hit(&self, output: &[u8]) -> Option<String> {
        match serde_json::from_slice::<RunRecord>(output) {
            Ok(r) => r
                .lost
                .map(|why| format!("the executor lost it ({why}); it is run again")),
            Err(e) => Some(format!("its stored record does not read ({e})")),
        }
    }
}

impl RunParams {
    /// These params with the timeout of a graded tree's task (never past
    /// the environment's): `rules::timeout`.
    pub(crate) fn within(&self, task_timeout_s: Option<u64>) -> RunParams {
        let ceiling_s = self.timeout_s + self.stall_grace_s;
        let timeout_s = task_timeout_s.map_or(ceiling_s, |t| t.min(ceiling_s));
        RunParams {
            timeout_s,
            stall_grace_s: ceiling_s - timeout_s,
            ..self.clone()
        }
    }

    /// These params running `command`: a grade's check, or a rerun of
    /// chosen tests or files, replaces the test command and its scope;
    /// the test command itself (a whole-command rerun) keeps its scope.
    pub(crate) fn running(&self, command: String) -> RunParams {
        let touched_command = self
            .touched_command
            .clone()
            .filter(|_| command == self.command);
        RunParams {
            command,
            touched_command,
            ..self.clone()
        }
    }

    /// The command a run over a tree whose hidden test patch writes
    /// `hidden` runs (`rules::touched::command_over`).
    pub(crate) fn command_over(&self, hidden: &[String]) -> String {
        crate::model::rules::touched::command_over(
            self.touched_command.as_deref(),
            &self.command,
            hidden,
        )
    }

    /// The resource a job running these params holds alone: the env node,
    /// when its runs are serial and its executor shares the environment
    /// between runs (a local directory). A container's environment is its
    /// own copy: nothing is shared. Every job that runs processes in an
    /// environment (a run, a recheck's reruns and checks) says so through
    /// [`assay_engine::Job::exclusive`], the engine's one lock.
    pub(crate) fn exclusive<'a>(
        &self,
        executors: &Executors,
        env_node: &'a str,
    ) -> Option<&'a str> {
        (self.serial && executors.of(&self.confine).shares_env()).then_some(env_node)
    }
}

/// What a failed environment says about its setup: the command that failed
/// (when the executor knows it) and how it ended.
pub(crate) fn setup_failure(env: &EnvRecord) -> String {
    let what = match &env.failed_command {
        Some(c) => format!("the environment's setup failed: `{c}`"),
        None => "the environment's setup failed".to_owned(),
    };
    match env.exit_code {
        Some(code) => format!("{what} exited with {code}"),
        None => format!("{what} (timed out or killed)"),
    }
}

/// Materializes `tree_id` into a fresh scratch directory and runs the command
/// there in environment `env`: the shared core of screening runs and grading
/// reruns. Logs are redacted before they are stored. Gives back what was
/// planted, if anything.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn execute_tree(
    tree_id: &str,
    hidden: &[String],
    rebuild: &[RebuildRule],
    env: &EnvRecord,
    p: &RunParams,
    attempt: u32,
    store_dir: &std::path::Path,
    executors: &Executors,
    ctx: &JobCtx,
    plant: Plant<'_>,
) -> Result<(RunRecord, Vec<assay_engine::Digest>, Option<Planted>), NodeError> {
    let mut record = RunRecord {
        sandbox: executors.of(&p.confine).sandbox(),
        ..RunRecord::default()
    };
    if !env.ok {
        record.env_failed = true;
        record.exit_code = env.exit_code;
        record.untrusted = Some(setup_failure(env));
        record.log = env.setup_log.clone();
        return Ok((record, Vec::new(), None));
    }
    let mut ph = crate::run::phase::Phases::wall("run");
    let scratch = executors.scratch(&p.confine, &ctx.cache_dir).infra()?;
    let work = scratch.path().join("tree");
    let staged = {
        let work = work.clone();
        let store_dir = store_dir.to_owned();
        let tree_id = tree_id.to_owned();
        let watch = p.watch.clone();
        tokio::task::spawn_blocking(move || stage_copy(&store_dir, &tree_id, &work, &watch))
            .await
            .internal()?
            .cache()?
    };
    let mut staged = staged;
    ph.mark("materialize");
    let mut command = p.command_over(hidden);
    let files = match plant {
        Plant::Certify(files) | Plant::Seal(files) => files,
        Plant::Graded(_) => hidden,
    };
    let planted = if files.is_empty() {
        None
    } else {
        let (planted, predictable) = canaries::plant_before_run(
            &work,
            tree_id,
            files,
            (p.report, p.canary.as_ref()),
            plant,
            &command,
        )
        .await?;
        if predictable {
            record.unchecked = Some(
                "canaries predictable: seeded by ASSAY_CANARY_SEED in assay's environment (reproducible tests only)".into(),
            );
        }
        match planted {
            Ok(mut planted) => {
                restage(&mut staged, &planted);
                // A check or rerun naming tests names them as this run
                // does, each with its canaries.
                command = canary::renamed_command(&command, &mut planted);
                Some(planted)
            }
            Err(why) if matches!(plant, Plant::Seal(_)) => {
                // Nothing to seal: the sealed reading has nothing to read.
                record.unchecked = Some(why);
                return Ok((record, Vec::new(), None));
            }
            Err(why) => {
                record.unchecked = Some(why);
                None
            }
        }
    };
    ph.mark("canaries");
    let log_path = scratch.path().join("log");
    let env_handle = EnvHandle::of(env, &ctx.cache_dir);
    let watch = staged.iter().map(|(path, _)| PathBuf::from(path)).collect();
    let mut ran = executors
        .of(&p.confine)
        .run(TestRun {
            launch: Launch {
                command: crate::run::guard::with_channel(&format!(
                    "{}{command}",
                    rebuild::prelude(rebuild)
                )),
                tree: Some(&work),
                env: &env_handle,
                setup: false,
                env_at: None,
                scratch: scratch.path(),
                log_path: log_path.clone(),
                log_cap: p.log_cap,
                timeout: Duration::from_secs(p.timeout_s),
                stall_grace: Some(Duration::from_secs(p.stall_grace_s)),
                // Graded code (a tree with hidden tests) sees no attempt number.
                attempt: hidden.is_empty().then_some(attempt),
                protect: hidden.iter().map(PathBuf::from).collect(),
                report_file: p.report_file.as_deref(),
                watch,
                warm: &p.warm,
                agent: None,
            },
            staged,
            ctx: Some(ctx),
        })
        .await?;
    ph.mark("executor");
    record.limit = ran.limit.map(|l| l.as_str().to_owned());
    record.node = ran.node.take();
    record.retried = std::mem::take(&mut ran.retried);
    if let Some(why) = ran.lost.take() {
        record.untrusted = Some(why.clone());
        record.lost = Some(why);
        let empty = ctx.blobs.put(b"").cache()?;
        record.log = empty.to_hex();
        return Ok((record, vec![empty], planted));
    }
    ended(&mut record, &mut ran);
    let redactor = crate::run::redact::Redactor::new(&p.redact);
    let (audit, output) = crate::run::guard::findings(&std::fs::read(&log_path).infra()?);
    record.audit = audit;
    let (seal_reports, output) = canary::seal_reports(&output);
    let (log, redactions) = redactor.redact(&output);
    record.redactions = redactions;
    let log_digest = ctx.blobs.put(&log).cache()?;
    record.log = log_digest.to_hex();
    let mut attachments = vec![log_digest];
    let report_file = kept_report(p, ran.report, &redactor, &mut record, ctx, &mut attachments)?;
    read_outcomes(&mut record, p.report, &log, report_file, Some(&work));
    rebuilt(&mut record, rebuild, &log);
    let mut planted = planted;
    read_planted(&mut record, p.report, planted.as_mut(), seal_reports);
    distrust(
        &mut record,
        p.timeout_s,
        p.confine.limits.write,
        p.report_file.is_some(),
    );
    ph.mark("read back");
    Ok((record, attachments, planted))
}

/// The report file the run wrote, redacted and stored as an attachment;
/// `Err` says why it was not read.
fn kept_report(
    p: &RunParams,
    read: Option<Result<Vec<u8>, String>>,
    redactor: &crate::run::redact::Redactor,
    record: &mut RunRecord,
    ctx: &JobCtx,
    attachments: &mut Vec<assay_engine::Digest>,
) -> Result<Result<Option<Vec<u8>>, String>, NodeError> {
    Ok(match (&p.report_file, read) {
        (None, _) => Ok(None),
        (Some(_), Some(Ok(b))) => {
            let (b, n) = redactor.redact(&b);
            record.redactions += n;
            let d = ctx.blobs.put(&b).cache()?;
            attachments.push(d);
            Ok(Some(b))
        }
        (Some(rel), read) => {
            let why = match read {
                Some(Err(why)) => why,
                _ => "not read".to_owned(),
            };
            Err(format!("the report {rel}: {why}"))
        }
    })
}

/// What the run's reading says of what it planted: the seals judged (over
/// the names the run gave its tests), the canaries read and taken out of
/// the tests, what the run said of them. Seal reports where nothing was
/// sealed are judged too: the run's own code wrote them.
fn read_planted(
    record: &mut RunRecord,
    format: Format,
    planted: Option<&mut Planted>,
    seal_reports: Vec<(String, String)>,
) {
    if let Some(planted) = planted {
        // Seals first, over the names the run gave its tests: a sealed
        // canary copy is held to its values as the test it copies.
        if !planted.sealed.is_empty() || !seal_reports.is_empty() {
            record.sealed = planted.sealed.len() as u64;
            record.seals = canary::judge_seals(format, planted, &seal_reports, &mut record.tests);
            for r in &mut record.seals {
                if let Some(orig) = planted.renamed.get(&r.test) {
                    r.test = orig.clone();
                }
            }
        }
        planted.reports = seal_reports;
        record.canaries = canary::read(planted, &mut record.tests, &mut record.files);
        record.said = crate::model::why::said_without_canaries(planted, &record.said);
        record.said =
            crate::model::why::said_with_seals(&record.said, &record.seals, &record.tests);
        record.renamed = planted.renamed.clone();
    } else if !seal_reports.is_empty() {
        // Seal reports where nothing was sealed: written by the run's own
        // code.
        let mut none = std::collections::BTreeMap::new();
        record.seals = canary::judge_seals(format, &Planted::default(), &seal_reports, &mut none);
    }
}

/// What the tree's rebuild rules did, into the record. A failed rebuild
/// stopped the run before its tests: whatever report the tree holds is
/// not theirs (the run's own or one its patch wrote), so the reading is
/// that failure alone, believed as a build failure is.
fn rebuilt(record: &mut RunRecord, rules: &[RebuildRule], log: &[u8]) {
    if rules.is_empty() {
        return;
    }
    record.rebuild = rebuild::read(rules, log);
    if let Some(failure) = rebuild::failure(&record.rebuild) {
        record.tests.clear();
        record.files.clear();
        record.said = Default::default();
        record.report_error = None;
        record.untrusted = None;
        record.build_failures = vec![failure];
    }
}

/// Why a run's reading cannot be believed, when it cannot: it timed out,
/// hit a limit, or its log (being its report) was cut.
pub(crate) fn distrust(
    record: &mut RunRecord,
    timeout_s: u64,
    write_limit: u64,
    report_file: bool,
) {
    if record.timed_out {
        record.untrusted = Some(format!("timed out after {timeout_s} s"));
    } else if let Some(limit) = &record.limit {
        record.untrusted = Some(crate::model::rules::limits::limit_reason(
            limit,
            write_limit,
        ));
    } else if record.log_truncated && !report_file {
        record.untrusted =
            Some("the log exceeded the evidence cap; its report was not believed".into());
    }
}

/// How the run ended, into its record (the report is read apart).
pub(crate) fn ended(record: &mut RunRecord, ran: &mut crate::run::executor::Ran) {
    record.changed_test_files = std::mem::take(&mut ran.changed);
    record.exit_code = ran.exit_code;
    record.signal = ran.signal;
    record.timed_out = ran.timed_out;
    record.duration_ms = ran.duration.as_millis() as u64;
    record.cpu_stalled_ms = ran.cpu_stalled.map(|d| d.as_millis() as u64);
    record.log_bytes = ran.log_bytes;
    record.log_truncated = ran.log_truncated;
    record.limit = ran.limit.map(|l| l.as_str().to_owned());
}

/// The staged fingerprints of the files canaries were planted in: the
/// bytes the run is given.
pub(crate) fn restage(staged: &mut Watched, planted: &Planted) {
    for (path, bytes) in &planted.files {
        if let Some(w) = staged.iter_mut().find(|(p, _)| p == path) {
            w.1 = *blake3::hash(bytes).as_bytes();
        }
    }
}

/// Fills the record's outcomes, build failures and trust from what the run
/// left: its `log`, and `report_file` when the report is a file of its own
/// (`Ok(None)`: the log is the report; `Err`: why that file was not read).
/// A report file never holds build failures (the producer failed before
/// writing it), so the log is scanned for them; with no file at all, a
/// recognised build failure in the log still makes a usable reading. A
/// reading whose units did not build is believed (`Trust::BuildFailed`):
/// their tests count as failed, which screening and grading read from
/// `build_failures` (docs/verdicts.md). Test files a report names by
/// absolute path are made relative to the tree as the sandbox shows it
/// (`/assay/tree`) or to `tree`, where the run was unconfined.
pub(crate) fn read_outcomes(
    record: &mut RunRecord,
    format: Format,
    log: &[u8],
    report_file: Result<Option<Vec<u8>>, String>,
    tree: Option<&std::path::Path>,
) {
    let sandboxed = std::path::Path::new(assay_exec::sandbox::TREE);
    let roots: Vec<&std::path::Path> = std::iter::once(sandboxed).chain(tree).collect();
    let parse = |bytes: &[u8]| assay_report::parse_under(format, bytes, &roots);
    let report = match report_file {
        Ok(None) => parse(log),
        Ok(Some(bytes)) => parse(&bytes).map(|mut r| {
            r.add_build_failures(assay_report::scan_build_failures(format, log));
            r
        }),
        Err(why) => {
            let found = assay_report::scan_build_failures(format, log);
            if found.is_empty() {
                record.report_error = Some(why);
                return;
            }
            let mut r = assay_report::Report::empty(format);
            r.add_build_failures(found);
            Ok(r)
        }
    };
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            record.report_error = Some(e.to_string());
            return;
        }
    };
    match assay_report::assess(record.exit_code, &report) {
        Trust::Trusted | Trust::BuildFailed(_) => {}
        Trust::Untrustworthy(why) => record.untrusted = Some(why),
    }
    record.said = crate::model::why::Said::of(
        report
            .tests
            .iter()
            .filter_map(|t| Some((t.name.as_str(), t.message.as_deref()?))),
    );
    for t in report.tests {
        if let Some(f) = t.file {
            record.files.insert(t.name.clone(), f);
        }
        record.tests.insert(t.name, t.outcome);
    }
    record.build_failures = report.build_failures;
}

/// Materializes `tree_id` into `dest` and lists the watched files in it.
pub(crate) fn stage_copy(
    store_dir: &std::path::Path,
    tree_id: &str,
    dest: &std::path::Path,
    watch: &[String],
) -> Result<Watched, assay_git::GitError> {
    let store = TreeStore::open_or_init(store_dir)?;
    store.materialize(tree_id, dest)?;
    if watch.is_empty() {
        return Ok(Vec::new());
    }
    let globs = super::triage::globset(watch).unwrap_or_else(|_| globset::GlobSet::empty());
    let blobs = store.blob_reader()?;
    let mut out = Vec::new();
    for e in store.entries(tree_id)? {
        if e.mode != 0o120000 && globs.is_match(&e.path) {
            let bytes = blobs.read(&e.id)?;
            out.push((e.path, *blake3::hash(&bytes).as_bytes()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GO_BUILD_FAIL: &[u8] = include_bytes!(
        "../../crates/assay-report/tests/fixtures/go_test_json_build_fail_go119.txt"
    );
    const MAVEN_COMPILE_ERROR: &[u8] =
        include_bytes!("../../crates/assay-report/tests/fixtures/maven_compile_error.txt");

    fn read(
        format: Format,
        exit: i32,
        log: &[u8],
        file: Result<Option<Vec<u8>>, String>,
    ) -> RunRecord {
        let mut r = RunRecord {
            exit_code: Some(exit),
            ..RunRecord::default()
        };
        read_outcomes(&mut r, format, log, file, None);
        r
    }

    /// The run params as they were keyed when the report was a string.
    #[derive(Serialize)]
    struct KeyedByName {
        command: String,
        report: String,
        report_file: Option<String>,
        timeout_s: u64,
        log_cap: u64,
        redact: crate::run::redact::RedactConfig,
        serial: bool,
        repeat: u32,
        confine: crate::model::config::Confinement,
        watch: Vec<String>,
    }

    #[test]
    fn run_params_key_their_report_format_by_name_as_they_always_did() {
        let p = RunParams {
            command: "python3 -m unittest -v".into(),
            report: Format::LibtestJson,
            report_file: Some("report.json".into()),
            timeout_s: 120,
            stall_grace_s: 0,
            log_cap: 1 << 20,
            redact: Default::default(),
            serial: true,
            repeat: 2,
            confine: Default::default(),
            watch: vec!["tests/**".into()],
            canary: None,
            warm: Vec::new(),
            touched_command: None,
        };
        let old = KeyedByName {
            command: p.command.clone(),
            report: "libtest-json".into(),
            report_file: p.report_file.clone(),
            timeout_s: p.timeout_s,
            log_cap: p.log_cap,
            redact: p.redact.clone(),
            serial: p.serial,
            repeat: p.repeat,
            confine: p.confine.clone(),
            watch: p.watch.clone(),
        };
        assert_eq!(
            assay_engine::encode_params(&p),
            assay_engine::encode_params(&old)
        );
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            serde_json::to_string(&old).unwrap()
        );
    }

    fn scoped(touched: Option<&str>) -> RunParams {
        RunParams {
            command: "python3 -m unittest -v".into(),
            report: Format::Unittest,
            report_file: None,
            timeout_s: 120,
            stall_grace_s: 0,
            log_cap: 1 << 20,
            redact: Default::default(),
            serial: true,
            repeat: 0,
            confine: Default::default(),
            watch: Vec::new(),
            canary: None,
            warm: Vec::new(),
            touched_command: touched.map(str::to_owned),
        }
    }

    /// A graded tree runs the touched test files; a screening tree (no
    /// hidden files), a test patch of data only, and a grade's own
    /// commands run as they are written.
    #[test]
    fn a_scoped_run_runs_the_touched_test_files_of_a_graded_tree_only() {
        let p = scoped(Some("python3 -m unittest -v {files}"));
        let hidden = [
            "tests/data/in.json".to_owned(),
            "tests/test_mul.py".to_owned(),
        ];
        assert_eq!(
            p.command_over(&hidden),
            "python3 -m unittest -v tests/test_mul.py"
        );
        assert_eq!(p.command_over(&[]), "python3 -m unittest -v");
        assert_eq!(p.command_over(&hidden[..1]), "python3 -m unittest -v");
        assert_eq!(scoped(None).command_over(&hidden), "python3 -m unittest -v");
        // A whole-command rerun keeps the scope; a check or a rerun of
        // chosen tests or files does not.
        let rerun = p.running(p.command.clone());
        assert_eq!(
            rerun.command_over(&hidden),
            "python3 -m unittest -v tests/test_mul.py"
        );
        let check = p.running("python3 -m unittest -v tests.test_ops.TestOps.test_add".into());
        assert_eq!(
            check.command_over(&hidden),
            "python3 -m unittest -v tests.test_ops.TestOps.test_add"
        );
    }

    /// The option enters the run's key only when it is set: the keys of
    /// pipelines without it are what they were.
    #[test]
    fn a_touched_command_changes_the_key_only_when_set() {
        let plain = assay_engine::encode_params(&scoped(None));
        let touched = assay_engine::encode_params(&scoped(Some("python3 -m unittest -v {files}")));
        assert_ne!(plain, touched);
        let json = serde_json::to_string(&scoped(None)).unwrap();
        assert!(!json.contains("touched_command"), "{json}");
    }

    #[test]
    fn a_reading_whose_package_did_not_build_is_believed_and_records_the_failure() {
        let r = read(Format::GoTestJson, 2, GO_BUILD_FAIL, Ok(None));
        assert_eq!(r.untrusted, None);
        assert_eq!(r.report_error, None);
        assert!(r.tests.is_empty());
        assert_eq!(r.build_failures.len(), 1);
        assert_eq!(r.build_failures[0].unit, "example.com/calc");
        assert_eq!(
            r.build_failures[0].message,
            "./calc_test.go:12:5: undefined: Mul"
        );
        assert!(
            r.build_failure_for(Format::GoTestJson, "example.com/calc.TestMul", None)
                .is_some()
        );
        // Exit code 0 with a build failure is not believed.
        let r = read(Format::GoTestJson, 0, GO_BUILD_FAIL, Ok(None));
        assert!(r.untrusted.is_some());
    }

    #[test]
    fn a_reading_with_no_tests_and_no_build_failure_stays_untrusted() {
        let r = read(
            Format::GoTestJson,
            1,
            b"go: updates to go.mod needed; to update it:\n\tgo mod tidy\n",
            Ok(None),
        );
        assert_eq!(r.untrusted.as_deref(), Some("the report holds no tests"));
        assert!(r.build_failures.is_empty());
        // Serialized without the empty field: older records keep their bytes.
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("build_failures"), "{json}");
        let back: RunRecord = serde_json::from_str(&json).unwrap();
        assert!(back.build_failures.is_empty());
    }

    #[test]
    fn a_missing_report_file_with_a_compile_error_in_the_log_is_a_build_failure() {
        let missing = || Err("the report target/surefire.xml: not found".to_owned());
        let r = read(Format::Junit, 1, MAVEN_COMPILE_ERROR, missing());
        assert_eq!(r.report_error, None);
        assert_eq!(r.untrusted, None);
        assert_eq!(r.build_failures[0].unit, "calc");
        assert!(r.build_failures[0].stopped_run);
        // Without one, the missing file is what the record says.
        let r = read(Format::Junit, 1, b"Killed\n", missing());
        assert_eq!(
            r.report_error.as_deref(),
            Some("the report target/surefire.xml: not found")
        );
        assert!(r.build_failures.is_empty());
    }
}
