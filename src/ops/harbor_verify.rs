//! The verifier of an exported Harbor task, run by its `tests/test.sh` in
//! the trial's container after the agent ends (`assay harbor-verify`).
//!
//! It grades the workspace as a build grades a session: the agent's patch
//! is the diff from the base tree (`tests/base.tar`) to the workspace's
//! files as `git add -A` would stage them; the scored arm's exclusion and
//! the reset to the hidden test patch are applied by the same staging code;
//! the staged tree replaces the workspace; canaries are planted in the
//! hidden test files; the test command runs; its report is read and the
//! verdict decided by the same rules. `reward.json` is 1 only for
//! `resolved`. The export asks Harbor for a separate verifier environment
//! (docs/harbor.md): a fresh container of the task's image that holds only
//! the agent's workspace, the agent's own container stopped first. Still not
//! the sandbox of a build (and a folder run shared puts the verifier where
//! the agent was root), so a build re-grades the patch the verifier leaves
//! in `agent.patch` (`[[sessions]] harbor_job`).
//!
//! The workspace is read back under the bound an attempt's is
//! ([`workspace::read_back`]: apparent size, then time): over it, the
//! verdict is `patch_apply_failed`, the agent's, with the figure.
//!
//! An error of the verifier itself (no git in the image, an unreadable
//! spec) leaves no `reward.json`: Harbor then records the trial as errored,
//! and the import charges it to the agent unless the job's controls failed
//! the same way (`sessions::harbor::lost`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use assay_git::TreeStore;

use crate::model::config::RunLimits;
use crate::model::config::{Confinement, SandboxMode};
use crate::model::records::{Fault, RunRecord, Verdict};
use crate::model::rules::policy::globset;
use crate::model::rules::verdict::{Graded, Limits, Readings, decide};
use crate::nodes::canaries::plant_canaries;
use crate::nodes::run::{distrust, ended, read_outcomes, restage, stage_copy};
use crate::nodes::stage::{StageParams, stage_patch};
use crate::pipeline::Arm;
use crate::run::attempt::workspace::{self, Uncollected};
use crate::run::error::{Context, Kinded, NodeError};
use crate::run::executor::{EnvHandle, Executors, Launch, TestRun};
use crate::run::fresh_seed;
use crate::run::harbor::{
    BASE_TAR, LOGS, PATCH_FILE, Reward, SPEC_FILE, SPEC_VERSION, Spec, TESTS, VERDICT_FILE,
    VerdictFile, WORKSPACE,
};
use crate::sessions::RunFacts;

/// Where the verifier reads and writes: Harbor's paths in a trial, temp
/// directories in tests.
#[derive(Clone, Debug)]
pub(crate) struct Paths {
    pub(crate) tests: PathBuf,
    pub(crate) workspace: PathBuf,
    pub(crate) logs: PathBuf,
}

impl Default for Paths {
    fn default() -> Paths {
        Paths {
            tests: TESTS.into(),
            workspace: WORKSPACE.into(),
            logs: LOGS.into(),
        }
    }
}

/// Grades the workspace and writes `reward.json`, `assay-verdict.json` and
/// `agent.patch` into the logs directory; returns the verdict file. The
/// exported tests folder is the verifier's input; the trial's container
/// (its directories, processes) its infrastructure.
pub(crate) fn verify(paths: &Paths) -> Result<VerdictFile, NodeError> {
    let started = std::time::Instant::now();
    let spec_path = paths.tests.join(SPEC_FILE);
    let bad_spec =
        |e: &dyn std::fmt::Display| NodeError::input(format!("{}: {e}", spec_path.display()));
    let spec: Spec = serde_json::from_slice(&std::fs::read(&spec_path).map_err(|e| bad_spec(&e))?)
        .map_err(|e| bad_spec(&e))?;
    if spec.version != SPEC_VERSION {
        return Err(NodeError::input(format!(
            "{} is of version {}, this assay reads {SPEC_VERSION}: export the task again",
            spec_path.display(),
            spec.version
        )));
    }
    let format: assay_report::Format = spec
        .report
        .parse()
        .map_err(|_| NodeError::input(format!("unknown report format `{}`", spec.report)))?;
    std::fs::create_dir_all(&paths.logs)
        .map_err(|e| NodeError::infra(format!("{}: {e}", paths.logs.display())))?;
    // A workspace the agent replaced by a symbolic link is read as the
    // empty directory it left (its answer deletes everything): never
    // followed, so nothing it points at is read, emptied or refilled.
    if std::fs::symlink_metadata(&paths.workspace).is_ok_and(|m| !m.is_dir()) {
        std::fs::remove_file(&paths.workspace)
            .and_then(|()| std::fs::create_dir(&paths.workspace))
            .map_err(|e| {
                NodeError::infra(format!(
                    "replacing the workspace's link with a directory: {e}"
                ))
            })?;
    }
    let scratch = tempfile::Builder::new()
        .prefix("assay-verify-")
        .tempdir()
        .map_err(|e| NodeError::infra(format!("a scratch directory: {e}")))?;

    // The base, from the tests folder the agent never saw.
    let base_dir = scratch.path().join("base");
    let tar_path = paths.tests.join(BASE_TAR);
    let tar = std::fs::File::open(&tar_path)
        .map_err(|e| NodeError::input(format!("{}: {e}", tar_path.display())))?;
    tar::Archive::new(tar)
        .unpack(&base_dir)
        .map_err(|e| NodeError::input(format!("unpacking {}: {e}", tar_path.display())))?;
    let store = TreeStore::open_or_init(&scratch.path().join("store")).infra()?;
    let base_tree = store.write_tree_of(&base_dir).infra()?;
    let agent_tree = match read_workspace(&store, &base_dir, &paths.workspace)? {
        Ok(tree) => tree,
        Err(why) => return refuse(paths, &spec, why, started),
    };
    let patch = store.diff(&base_tree, &agent_tree).infra()?;
    put(&paths.logs, PATCH_FILE, &patch)?;

    let mut task = spec.task.clone();
    task.base_commit = store.commit_of_tree(&base_tree).infra()?;
    let stage = StageParams {
        arm: Arm::SCORED,
        policy: spec.policy,
        test_globs: spec.test_globs.clone(),
        caps: spec.caps(),
        rebuild: Default::default(),
    };
    let (tree, exclusion) = stage_patch(&stage, &store, &task, patch.clone())?;

    let mut first = RunRecord::default();
    if let Some(id) = &tree.tree {
        // The task's timeout from its screening readings, as a build's.
        let timeout_s = tree
            .timeout_s
            .map_or(spec.timeout_s, |t| t.min(spec.timeout_s));
        first = run_staged(
            paths,
            &spec,
            format,
            store.path(),
            id,
            &tree.hidden,
            timeout_s,
        )?;
    }
    let tests = globset(&spec.test_globs).input()?;
    let facts = RunFacts::default();
    let decision = decide(
        &Graded {
            task: &task,
            tree: &tree,
            facts: &facts,
            format,
            limits: Limits {
                timeout_s: tree
                    .timeout_s
                    .map_or(spec.timeout_s, |t| t.min(spec.timeout_s)),
                log_cap: spec.log_cap,
                write: u64::MAX,
            },
            patch: &patch,
            excluded: &exclusion.left_out,
            tests: &tests,
            // A Harbor task folder carries no pipeline: nothing allowed.
            allowed: &[],
        },
        &Readings {
            first: first.clone(),
            ..Readings::default()
        },
    );
    let passed = |ids: &[String]| {
        ids.iter()
            .filter(|t| first.tests.get(*t) == Some(&assay_report::Outcome::Passed))
            .count() as u64
    };
    let reward = Reward {
        reward: if decision.verdict == Verdict::Resolved {
            1.0
        } else {
            0.0
        },
        fail_to_pass: task.fail_to_pass.len() as u64,
        fail_to_pass_passed: passed(&task.fail_to_pass),
        pass_to_pass: task.pass_to_pass.len() as u64,
        pass_to_pass_passed: passed(&task.pass_to_pass),
    };
    let verdict = VerdictFile {
        digest: spec.digest.clone(),
        task_id: spec.task_id.clone(),
        verdict: decision.verdict,
        fault: decision.fault,
        detail: decision.detail,
        failing: decision.failing,
        excluded_paths: exclusion.left_out,
        reset_paths: exclusion.restored,
        tamper: decision.tamper,
        patch_digest: blake3::hash(&patch).to_hex().to_string(),
        patch_bytes: patch.len() as u64,
        unchecked: first.unchecked.clone(),
        duration_ms: started.elapsed().as_millis() as u64,
    };
    put_json(&paths.logs, VERDICT_FILE, &verdict)?;
    // Last: Harbor reads a trial without reward.json as errored.
    put_json(&paths.logs, "reward.json", &reward)?;
    Ok(verdict)
}

/// The agent's workspace as a tree in `store`, bounded as an attempt's
/// read-back is ([`workspace::read_back`]): the agent was root where it
/// wrote, and sparse files of no blocks cost ~10 s of CPU per GiB to read,
/// enough to push the verifier past Harbor's timeout with no patch kept.
/// `Ok(Err(why))`: over the bound, the agent's doing.
fn read_workspace(
    store: &TreeStore,
    base_dir: &Path,
    workspace: &Path,
) -> Result<Result<String, String>, NodeError> {
    let limit = workspace::READ_BACK_LIMIT;
    let base = workspace::apparent_size(base_dir, std::time::Instant::now() + limit).infra()?;
    match workspace::read_back(store, workspace, base, RunLimits::default().write, limit) {
        Ok(tree) => Ok(Ok(tree)),
        Err(Uncollected::Refused(why)) => Ok(Err(why)),
        Err(Uncollected::Failed(e)) => {
            Err(NodeError::infra(format!("{}: {e}", workspace.display())))
        }
    }
}

/// A workspace over the read-back bound: `patch_apply_failed`, the
/// agent's, with the figure; reward 0. No `agent.patch` is written, as
/// none was read.
fn refuse(
    paths: &Paths,
    spec: &Spec,
    why: String,
    started: std::time::Instant,
) -> Result<VerdictFile, NodeError> {
    let verdict = VerdictFile {
        digest: spec.digest.clone(),
        task_id: spec.task_id.clone(),
        verdict: Verdict::PatchApplyFailed,
        fault: Fault::Agent,
        detail: why,
        failing: Vec::new(),
        excluded_paths: Vec::new(),
        reset_paths: Vec::new(),
        tamper: Vec::new(),
        patch_digest: String::new(),
        patch_bytes: 0,
        unchecked: None,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    put_json(&paths.logs, VERDICT_FILE, &verdict)?;
    put_json(&paths.logs, "reward.json", &Reward::default())?;
    Ok(verdict)
}

/// The one reading of a staged tree, as a build's run: the tree replaces
/// the workspace's files, canaries are planted, and the local executor
/// (unsandboxed: the trial's container is the boundary) runs the test
/// command where a build runs it and reads the report and the test files
/// back.
fn run_staged(
    paths: &Paths,
    spec: &Spec,
    format: assay_report::Format,
    store_dir: &Path,
    tree: &str,
    hidden: &[String],
    timeout_s: u64,
) -> Result<RunRecord, NodeError> {
    let work = &paths.workspace;
    let scratch = tempfile::Builder::new()
        .prefix("assay-graded-")
        .tempdir()
        .map_err(|e| NodeError::infra(format!("a scratch directory: {e}")))?;
    // Emptied and refilled in place: a directory of the image's lower layer
    // cannot be renamed on overlayfs (EXDEV), and the tests must run where a
    // build runs them. The agent's files are already read (its patch).
    empty(work)
        .map_err(|e| NodeError::infra(format!("emptying the workspace {}: {e}", work.display())))?;
    let mut staged = stage_copy(store_dir, tree, work, &spec.test_globs)
        .map_err(|e| NodeError::infra(format!("writing the graded tree: {e}")))?;
    let mut record = RunRecord {
        sandbox: crate::model::config::Sandbox::Harbor,
        ..RunRecord::default()
    };
    let planted = match plant_canaries(
        work,
        hidden,
        format,
        &spec.test_command,
        fresh_seed(),
        spec.canary.as_ref(),
    ) {
        Ok(p) => {
            restage(&mut staged, &p);
            Some(p)
        }
        Err(why) => {
            record.unchecked = Some(why);
            None
        }
    };
    let conf = Confinement {
        sandbox: SandboxMode::None,
        ..Confinement::default()
    };
    let env = EnvHandle::HostDir(PathBuf::from(assay_docker::ENV_DIR));
    let log_path = scratch.path().join("log");
    let test = TestRun {
        launch: Launch {
            command: spec.test_command.clone(),
            tree: Some(work),
            env: &env,
            setup: false,
            env_at: None,
            scratch: scratch.path(),
            log_path: log_path.clone(),
            log_cap: spec.log_cap,
            timeout: Duration::from_secs(timeout_s),
            stall_grace: None,
            attempt: None,
            protect: Vec::new(),
            report_file: spec.report_file.as_deref(),
            watch: staged.iter().map(|(p, _)| PathBuf::from(p)).collect(),
            warm: &[],
            agent: None,
        },
        staged,
        ctx: None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .infra()?;
    let mut ran = rt
        .block_on(Executors::default().of(&conf).run(test))
        .context("running the test command")?;
    let log = std::fs::read(&log_path).unwrap_or_default();
    // The test log, for Harbor's test-stdout.txt.
    println!("{}", String::from_utf8_lossy(&log));
    ended(&mut record, &mut ran);
    let report = match (&spec.report_file, ran.report) {
        (None, _) => Ok(None),
        (Some(_), Some(Ok(bytes))) => Ok(Some(bytes)),
        (Some(rel), Some(Err(why))) => Err(format!("the report {rel}: {why}")),
        (Some(rel), None) => Err(format!("the report {rel}: not read")),
    };
    read_outcomes(&mut record, format, &log, report, Some(work.as_path()));
    if let Some(planted) = &planted {
        record.canaries = crate::model::canary::read(planted, &mut record.tests, &mut record.files);
        record.said = crate::model::why::said_without_canaries(planted, &record.said);
    }
    distrust(
        &mut record,
        timeout_s,
        conf.limits.write,
        spec.report_file.is_some(),
    );
    Ok(record)
}

/// Writes `name` in `dir` through a new file renamed into place: whatever
/// the agent left at that name (a symbolic link to a file of the host's,
/// once Harbor hands the directory back) is replaced, never written through.
fn put(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), NodeError> {
    let tmp = dir.join(format!(".{name}.assay-tmp"));
    let _ = std::fs::remove_file(&tmp);
    let path = dir.join(name);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| NodeError::infra(format!("{}: {e}", path.display())))
}

/// [`put`] of a value as pretty JSON.
fn put_json(dir: &Path, name: &str, value: &impl serde::Serialize) -> Result<(), NodeError> {
    let mut bytes = serde_json::to_vec_pretty(value).internal()?;
    bytes.push(b'\n');
    put(dir, name, &bytes)
}

/// Removes everything inside `dir` (never following a symbolic link).
fn empty(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if std::fs::symlink_metadata(&path)?.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace the agent filled with sparse files (no blocks, so under
    /// any block quota) is refused by its apparent size before a byte of it
    /// is read, at once and with the figure; an honest one is read.
    #[test]
    fn a_workspace_of_sparse_files_is_refused_quickly_with_the_figure() {
        let dir = tempfile::tempdir().unwrap();
        let (base, ws) = (dir.path().join("base"), dir.path().join("ws"));
        for d in [&base, &ws] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("a.py"), "x = 1\n").unwrap();
        }
        let store = TreeStore::open_or_init(&dir.path().join("store")).unwrap();
        let honest = read_workspace(&store, &base, &ws).unwrap();
        assert!(honest.is_ok(), "{honest:?}");
        for i in 0..2 {
            let f = std::fs::File::create(ws.join(format!("zeros{i}"))).unwrap();
            f.set_len(1 << 30).unwrap();
        }
        let t = std::time::Instant::now();
        let why = read_workspace(&store, &base, &ws).unwrap().unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(
            why,
            "the workspace holds 2.0 GiB of file content (apparent size) beyond the base's, \
             over the 1.0 GiB cap (the write limit)"
        );
    }
}
