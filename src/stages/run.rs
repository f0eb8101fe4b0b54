//! `run`: one execution of the test command in an environment over one exact
//! tree. Runs are observations, not functions (tests can be flaky): a recorded
//! run is reused until re-read (`--reread run`), and the repeat index is part
//! of the key. The key is env output + tree id + command + report format +
//! timeout + log cap + repeat, so identical trees share runs.
//!
//! The tree is materialized fresh into a scratch directory (nothing of the
//! history, remote or gold patch is visible); the command runs in its own
//! session and process group with a timeout that kills the whole group. Runs
//! in one local environment are serialised: the environment directory is
//! shared mutable state (the example's flaky test depends on it).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use assay_engine::{Job, JobCtx, JobError, JobFuture, Output};
use assay_git::TreeStore;
use assay_report::{Format, Trust};
use serde::Serialize;

use super::env::base_env;
use super::records::{EnvRecord, RunRecord, TreeRecord};

pub(super) const KIND_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct RunParams {
    pub(crate) command: String,
    pub(crate) report: String,
    pub(crate) report_file: Option<String>,
    pub(crate) timeout_s: u64,
    pub(crate) log_cap: u64,
    pub(crate) redact: super::redact::RedactConfig,
    /// Runs of this environment one at a time (its directory is shared state).
    pub(crate) serial: bool,
    pub(crate) repeat: u32,
}

pub(crate) struct RunJob {
    pub(crate) params: RunParams,
    pub(crate) format: Format,
    pub(crate) store_dir: PathBuf,
    /// The env node: runs of one local environment never overlap.
    pub(crate) env: String,
}

static ENV_LOCKS: LazyLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn env_lock(dir: &str) -> Arc<tokio::sync::Mutex<()>> {
    let mut map = ENV_LOCKS.lock().unwrap_or_else(|p| p.into_inner());
    map.entry(dir.to_owned()).or_default().clone()
}

impl Job for RunJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let params = self.params.clone();
        let format = self.format;
        let store_dir = self.store_dir.clone();
        Box::pin(async move { execute(params, format, store_dir, ctx).await })
    }

    fn exclusive(&self) -> Option<&str> {
        self.params.serial.then_some(self.env.as_str())
    }
}

async fn execute(
    p: RunParams,
    format: Format,
    store_dir: PathBuf,
    ctx: JobCtx,
) -> Result<Output, JobError> {
    let err = |e: &dyn std::fmt::Display| JobError::new(format!("run: {e}"));
    let tree: TreeRecord = serde_json::from_slice(&ctx.inputs[0]).map_err(|e| err(&e))?;
    let env: EnvRecord = serde_json::from_slice(&ctx.inputs[1]).map_err(|e| err(&e))?;
    let Some(tree_id) = tree.tree else {
        let record = RunRecord {
            skipped: tree.skipped.or(Some("no tree".into())),
            ..RunRecord::default()
        };
        return finish(record, Vec::new());
    };
    let how = HowToRun::new(&p, format);
    let (record, attachments) = execute_tree(&tree_id, &env, &how, &store_dir, &ctx).await?;
    finish(record, attachments)
}

/// How a test command is run and read.
#[derive(Clone, Debug)]
pub(crate) struct HowToRun {
    pub(crate) command: String,
    pub(crate) format: Format,
    pub(crate) report_file: Option<String>,
    pub(crate) timeout_s: u64,
    pub(crate) log_cap: u64,
    pub(crate) redact: super::redact::RedactConfig,
    pub(crate) serial: bool,
}

impl HowToRun {
    pub(crate) fn new(p: &RunParams, format: Format) -> HowToRun {
        HowToRun {
            command: p.command.clone(),
            format,
            report_file: p.report_file.clone(),
            timeout_s: p.timeout_s,
            log_cap: p.log_cap,
            redact: p.redact.clone(),
            serial: p.serial,
        }
    }
}

/// Materializes `tree_id` into a fresh scratch directory and runs the command
/// there in environment `env`: the shared core of screening runs and grading
/// reruns. Logs are redacted before they are stored.
pub(crate) async fn execute_tree(
    tree_id: &str,
    env: &EnvRecord,
    p: &HowToRun,
    store_dir: &std::path::Path,
    ctx: &JobCtx,
) -> Result<(RunRecord, Vec<assay_engine::Digest>), JobError> {
    let err = |e: &dyn std::fmt::Display| JobError::new(format!("run: {e}"));
    let mut record = RunRecord::default();
    if !env.ok {
        record.env_failed = true;
        record.exit_code = env.exit_code;
        record.untrusted = Some("the environment's setup failed".into());
        record.log = env.setup_log.clone();
        return Ok((record, Vec::new()));
    }
    let env_dir = ctx.cache_dir.join(&env.dir);
    let scratch = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(ctx.cache_dir.join("tmp"))
        .map_err(|e| err(&e))?;
    let work = scratch.path().join("tree");
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).map_err(|e| err(&e))?;
    {
        let work = work.clone();
        let store_dir = store_dir.to_owned();
        let tree_id = tree_id.to_owned();
        tokio::task::spawn_blocking(move || {
            TreeStore::open_or_init(&store_dir)?.materialize(&tree_id, &work)
        })
        .await
        .map_err(|e| err(&e))?
        .map_err(|e| err(&e))?;
    }
    let mut vars = base_env(&home);
    vars.insert("ASSAY_ENV".into(), env_dir.display().to_string());
    vars.insert("TMPDIR".into(), home.display().to_string());
    let log_path = scratch.path().join("log");
    let spec = assay_exec::RunSpec {
        command: p.command.clone(),
        cwd: work.clone(),
        env: vars,
        timeout: Duration::from_secs(p.timeout_s),
        log_path: log_path.clone(),
        log_cap: p.log_cap,
        limits: assay_exec::Limits {
            max_file_size: Some(p.log_cap.max(1 << 30)),
            ..assay_exec::Limits::default()
        },
    };
    let outcome = if p.serial {
        let lock = env_lock(&env.dir);
        let _guard = lock.lock().await;
        assay_exec::run(&spec).await.map_err(|e| err(&e))?
    } else {
        assay_exec::run(&spec).await.map_err(|e| err(&e))?
    };
    record.exit_code = outcome.exit_code;
    record.signal = outcome.signal;
    record.timed_out = outcome.timed_out;
    record.duration_ms = outcome.duration.as_millis() as u64;
    record.log_bytes = outcome.log_bytes;
    record.log_truncated = outcome.log_truncated;
    let redactor = super::redact::Redactor::new(&p.redact);
    let (log, redactions) = redactor.redact(&std::fs::read(&log_path).map_err(|e| err(&e))?);
    record.redactions = redactions;
    let log_digest = ctx.blobs.put(&log).map_err(|e| err(&e))?;
    record.log = log_digest.to_hex();
    let mut attachments = vec![log_digest];
    let report_bytes = match &p.report_file {
        None => Some(log),
        // Code under test wrote this file: never follow a link it left there.
        Some(rel)
            if std::fs::symlink_metadata(work.join(rel))
                .is_ok_and(|m| m.file_type().is_symlink()) =>
        {
            record.report_error = Some(format!("the report {rel} is a symbolic link; not read"));
            None
        }
        Some(rel) => match std::fs::read(work.join(rel)) {
            Ok(b) => {
                let (b, n) = redactor.redact(&b);
                record.redactions += n;
                let d = ctx.blobs.put(&b).map_err(|e| err(&e))?;
                attachments.push(d);
                Some(b)
            }
            Err(e) => {
                record.report_error = Some(format!("no report at {rel}: {e}"));
                None
            }
        },
    };
    if let Some(bytes) = report_bytes {
        match assay_report::parse(p.format, &bytes) {
            Ok(report) => {
                if let Trust::Untrustworthy(why) = assay_report::assess(outcome.exit_code, &report)
                {
                    record.untrusted = Some(why);
                }
                for t in report.tests {
                    if let Some(f) = t.file {
                        record.files.insert(t.name.clone(), f);
                    }
                    record.tests.insert(t.name, t.outcome);
                }
            }
            Err(e) => record.report_error = Some(e.to_string()),
        }
    }
    if outcome.timed_out {
        record.untrusted = Some(format!("timed out after {} s", p.timeout_s));
    } else if outcome.log_truncated && p.report_file.is_none() {
        record.untrusted =
            Some("the log exceeded the evidence cap; its report was not believed".into());
    }
    Ok((record, attachments))
}

fn finish(record: RunRecord, attachments: Vec<assay_engine::Digest>) -> Result<Output, JobError> {
    Ok(Output {
        bytes: serde_json::to_vec(&record).map_err(|e| JobError::new(e.to_string()))?,
        attachments,
    })
}

pub(crate) fn job(
    params: RunParams,
    format: Format,
    store_dir: PathBuf,
    env: String,
) -> Arc<dyn Job> {
    Arc::new(RunJob {
        params,
        format,
        store_dir,
        env,
    })
}
