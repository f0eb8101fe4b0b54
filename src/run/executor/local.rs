//! The local executor: environments are directories of the cache
//! (`envs/<key>`, set up in place), runs are process groups on this machine,
//! confined by bubblewrap unless `[env] sandbox = "none"`
//! (docs/security.md). An environment's directory is shared by its runs, so
//! a serial environment's runs take turns.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use assay_engine::JobCtx;
use assay_exec::{Bwrap, LimitHit, Limits, RunSpec, Sandbox, sandbox};

use super::{
    BoxFuture, EnvHandle, Executor, Launch, Presence, Ran, RunFuture, Setup, TestRun, Watched,
    base_env, guard_env, made, run_err,
};
use crate::model::config::RunLimits;
use crate::model::config::{self, Confinement, SandboxMode};
use crate::model::records::EnvRecord;
use crate::model::rules::limits::Limit;
use crate::run::Made;
use crate::run::error::{Context, Kinded, LaunchError, NodeError};

/// bubblewrap as the executors found it: looked for and probed on first
/// use, then the same answer for every run they launch.
#[derive(Default)]
pub(crate) struct Probe(OnceLock<Result<Bwrap, LaunchError>>);

impl Probe {
    pub(crate) fn bwrap(&self) -> Result<Bwrap, LaunchError> {
        self.0
            .get_or_init(|| Bwrap::detect().map_err(|e| LaunchError::Unavailable(e.to_string())))
            .clone()
    }
}

/// The local executor under a confinement.
pub(crate) struct Local<'a> {
    pub(crate) conf: &'a Confinement,
    pub(crate) probe: &'a Probe,
}

impl Executor for Local<'_> {
    fn prepare<'a>(
        &'a self,
        setup: Setup<'a>,
        ctx: &'a JobCtx,
    ) -> BoxFuture<'a, Result<Made<EnvRecord>, NodeError>> {
        Box::pin(prepare(self, setup, ctx))
    }

    fn present(&self, record: &EnvRecord, cache_dir: &Path) -> Presence {
        match EnvHandle::of(record, cache_dir) {
            EnvHandle::HostDir(dir) if dir.is_dir() => Presence::Present,
            _ => Presence::Gone,
        }
    }

    fn run<'a>(&'a self, test: TestRun<'a>) -> RunFuture<'a> {
        Box::pin(async move {
            let work = test
                .launch
                .tree
                .ok_or_else(|| run_err(&"a test run needs its tree"))?
                .to_owned();
            let report_path = test.launch.report_file.map(PathBuf::from);
            let cap = test.launch.log_cap;
            let spec = spec(self.conf, self.probe, test.launch).context("run")?;
            let outcome = assay_exec::run(&spec).await.map_err(|e| run_err(&e))?;
            let (changed, report) = {
                let (work, staged) = (work.clone(), test.staged);
                tokio::task::spawn_blocking(move || {
                    let report = report_path.map(|rel| read_report(&work, &rel, cap));
                    (changed_files(&work, &staged), report)
                })
                .await
                .map_err(|e| run_err(&e))?
            };
            Ok(ran(outcome, report, changed))
        })
    }

    fn attempt<'a>(&'a self, launch: Launch<'a>, _ctx: &'a JobCtx) -> RunFuture<'a> {
        Box::pin(attempt(self.conf, self.probe, launch))
    }

    /// Unsandboxed, every run may write the one directory. Under
    /// bubblewrap a test run sees it read-only, with a `/tmp`, a `HOME`, a
    /// network and warm caches of its own: runs share nothing and may
    /// overlap, whatever `serial` says.
    fn shares_env(&self) -> bool {
        self.conf.sandbox == SandboxMode::None
    }

    fn env_is_artifact(&self) -> bool {
        false
    }

    fn sandbox(&self) -> config::Sandbox {
        self.conf.sandbox.into()
    }
}

/// An agent's attempt on this machine, under bubblewrap only: an agent
/// never runs unsandboxed.
pub(crate) async fn attempt(
    conf: &Confinement,
    probe: &Probe,
    launch: Launch<'_>,
) -> Result<Ran, NodeError> {
    if conf.sandbox != SandboxMode::Bwrap {
        return Err(run_err(
            &"an agent never runs unsandboxed: attempts need `sandbox = \"bwrap\"`",
        ));
    }
    let spec = spec(conf, probe, launch).context("run")?;
    let outcome = assay_exec::run(&spec).await.map_err(|e| run_err(&e))?;
    Ok(ran(outcome, None, Vec::new()))
}

/// A local environment: a directory of the cache, set up in place.
async fn prepare(
    exec: &Local<'_>,
    setup: Setup<'_>,
    ctx: &JobCtx,
) -> Result<Made<EnvRecord>, NodeError> {
    let name = ctx.key.to_hex();
    let dir = ctx.cache_dir.join("envs").join(&name);
    let rel = format!("envs/{name}");
    // Built in place (tools such as venvs embed absolute paths); the
    // directory only counts once this node's row is committed, and a
    // leftover from a killed build is wiped here first.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".home")).infra()?;
    for (path, bytes) in setup.files {
        let dest = dir.join(path);
        if let Some(p) = dest.parent() {
            std::fs::create_dir_all(p).infra()?;
        }
        std::fs::write(&dest, bytes).infra()?;
    }
    std::fs::create_dir_all(ctx.cache_dir.join("tmp")).infra()?;
    let scratch = tempfile::Builder::new()
        .prefix("setup-")
        .tempdir_in(ctx.cache_dir.join("tmp"))
        .infra()?;
    let log_path = scratch.path().join("log");
    let mut exit_code = Some(0);
    if !setup.commands.is_empty() {
        let handle = EnvHandle::HostDir(dir.clone());
        let spec = spec(
            exec.conf,
            exec.probe,
            Launch {
                command: assay_exec::setup::script(
                    setup.commands,
                    &format!("\"$ASSAY_ENV/{FAILED_STEP_FILE}\""),
                ),
                tree: None,
                env: &handle,
                setup: true,
                env_at: setup.at,
                scratch: scratch.path(),
                log_path: log_path.clone(),
                log_cap: super::SETUP_LOG_CAP,
                timeout: setup.timeout,
                stall_grace: None,
                attempt: None,
                protect: Vec::new(),
                report_file: None,
                watch: Vec::new(),
                warm: setup.warm,
                agent: None,
            },
        )?;
        let out = assay_exec::run(&spec).await.infra()?;
        exit_code = if out.timed_out { None } else { out.exit_code };
    }
    let raw = std::fs::read(&log_path).unwrap_or_default();
    let (log, _) = crate::run::redact::Redactor::new(setup.redact).redact(&raw);
    let log_digest = ctx.blobs.put(&log).cache()?;
    let ok = exit_code == Some(0);
    let mut failed_command = None;
    if !ok {
        let step = std::fs::read_to_string(dir.join(FAILED_STEP_FILE))
            .ok()
            .and_then(|t| assay_exec::setup::failed_step(&t));
        failed_command = step.and_then(|i| setup.commands.get(i).cloned());
        let _ = std::fs::remove_dir_all(&dir);
    }
    let digest = if ok {
        dir_digest(&dir).infra()?
    } else {
        String::new()
    };
    Ok(made(EnvRecord {
        dir: rel,
        ok,
        exit_code,
        setup_log: log_digest.to_hex(),
        digest,
        executor: None,
        image: None,
        base_image: None,
        export: None,
        failed_command,
    }))
}

/// Where a failed setup's exit trap writes the failing step: in the
/// environment, which a failed setup leaves behind anyway.
const FAILED_STEP_FILE: &str = ".assay-setup-failed";

/// The process limits of a sandboxed run under `limits`: its log may grow
/// to `log_cap` whatever the file-size limit, and what it writes into its
/// tree is measured when `measured` (not for setup, which writes its
/// environment). Every sandboxed process assay starts — a test run, a
/// setup, an agent's attempt — is limited through this.
pub(crate) fn process_limits(limits: &RunLimits, log_cap: u64, measured: bool) -> Limits {
    Limits {
        max_file_size: Some(limits.file_size.max(log_cap)),
        max_processes: Some(limits.processes),
        max_open_files: Some(limits.open_files),
        max_memory: Some(limits.memory),
        no_core: true,
        max_written: measured.then_some(limits.write),
    }
}

/// How a local run ended.
fn ran(
    outcome: assay_exec::RunOutcome,
    report: Option<Result<Vec<u8>, String>>,
    changed: Vec<String>,
) -> Ran {
    Ran {
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        timed_out: outcome.timed_out,
        limit: outcome.limit_hit.map(limit_word),
        duration: outcome.duration,
        cpu_stalled: outcome.cpu_stalled,
        log_bytes: outcome.log_bytes,
        log_truncated: outcome.log_truncated,
        report,
        changed,
        ..Ran::default()
    }
}

/// The rules' word for the limit a local run hit.
fn limit_word(hit: LimitHit) -> Limit {
    match hit {
        LimitHit::Time => Limit::Time,
        LimitHit::Memory => Limit::Memory,
        LimitHit::Processes => Limit::Processes,
        LimitHit::FileSize => Limit::FileSize,
        LimitHit::Written => Limit::Write,
    }
}

pub(crate) fn host_path() -> String {
    std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into())
}

/// What a process needs to run the toolchains on `path` (the host's): the
/// read-only roots of the programs, and the homes of the managers whose
/// proxies they are (rustup, pyenv), each also set in `env`
/// ([`sandbox::toolchain_homes`]): without them a proxy looks in the run's
/// own `HOME` and finds no toolchain.
pub(crate) fn toolchain(path: &str, env: &mut BTreeMap<String, String>) -> Vec<PathBuf> {
    let mut roots = sandbox::toolchain_roots(path);
    for (var, dir) in sandbox::toolchain_homes(path, |v| std::env::var_os(v)) {
        env.insert(var.to_owned(), dir.display().to_string());
        if !roots.iter().any(|r| dir.starts_with(r)) {
            roots.push(dir);
        }
    }
    roots
}

/// The process spec of one local run under `conf`.
pub(crate) fn spec(
    conf: &Confinement,
    probe: &Probe,
    mut launch: Launch<'_>,
) -> Result<RunSpec, NodeError> {
    let env_dir = launch.env.host_dir()?;
    let agent = launch.agent.take();
    let path = match &agent {
        Some(agent) => format!("{}:{}", agent.path_first, host_path()),
        None => host_path(),
    };
    let mut env = base_env(&path, launch.attempt);
    let toolchain = toolchain(&path, &mut env);
    // A test run's tree; setup writes its environment instead.
    let measured = launch.tree.is_some() && !launch.setup;
    let limits = process_limits(&conf.limits, launch.log_cap, measured);
    let (cwd, sandbox) = match conf.sandbox {
        SandboxMode::None => {
            let home = if launch.setup {
                env_dir.join(".home")
            } else {
                launch.scratch.join("home")
            };
            std::fs::create_dir_all(&home).infra()?;
            env.insert("HOME".to_owned(), home.display().to_string());
            env.insert("TMPDIR".to_owned(), home.display().to_string());
            env.insert("ASSAY_ENV".to_owned(), env_dir.display().to_string());
            for (var, at) in warm(&launch, env_dir)? {
                let seen = at.unwrap_or_else(|| launch.scratch.join("warm").join(&var));
                env.insert(var, seen.display().to_string());
            }
            if let Some(tree) = launch.tree.filter(|_| !launch.setup)
                && let Some(tree) = tree.to_str()
            {
                let dir = launch.scratch.join("guard");
                crate::run::guard::write(&dir, tree).infra()?;
                guard_env(&mut env, &dir.display().to_string(), &launch.protect);
            }
            let cwd = launch.tree.unwrap_or(env_dir).to_owned();
            (cwd, None)
        }
        SandboxMode::Bwrap => {
            let env_at = launch.env_at.unwrap_or(sandbox::ENV);
            let home = if launch.setup {
                format!("{env_at}/.home")
            } else {
                sandbox::HOME.to_owned()
            };
            if launch.setup {
                std::fs::create_dir_all(env_dir.join(".home")).infra()?;
            }
            env.insert("HOME".to_owned(), home);
            env.insert("TMPDIR".to_owned(), "/tmp".to_owned());
            env.insert("ASSAY_ENV".to_owned(), env_at.to_owned());
            let guard = if launch.tree.is_some() && !launch.setup && agent.is_none() {
                let dir = launch.scratch.join("guard");
                crate::run::guard::write(&dir, sandbox::TREE).infra()?;
                guard_env(&mut env, sandbox::GUARD, &launch.protect);
                Some(dir)
            } else {
                None
            };
            let mut binds = Vec::new();
            for (var, at) in warm(&launch, env_dir)? {
                let seen = match at {
                    // Setup warms the cache in the environment it writes.
                    Some(dir) => format!(
                        "{env_at}/{}",
                        dir.strip_prefix(env_dir).unwrap_or(&dir).display()
                    ),
                    None => {
                        let seen = format!("{}/{var}", sandbox::WARM);
                        binds.push(assay_exec::Bind {
                            host: launch.scratch.join("warm").join(&var),
                            at: PathBuf::from(&seen),
                            writable: true,
                        });
                        seen
                    }
                };
                env.insert(var, seen);
            }
            if let Some(agent) = agent {
                env.extend(agent.env);
                binds.extend(agent.binds);
            }
            let sandbox = Sandbox {
                tree: launch.tree.map(Path::to_owned),
                env_dir: Some(env_dir.to_owned()),
                env_writable: launch.setup,
                network: launch.setup,
                read_only: toolchain,
                tmp_bytes: conf.limits.tmp,
                home_bytes: conf.limits.home,
                protect: launch.protect,
                guard,
                binds,
                env_at: launch.env_at.map(PathBuf::from),
            };
            (
                launch.scratch.to_owned(),
                Some((probe.bwrap().infra()?, sandbox)),
            )
        }
    };
    Ok(RunSpec {
        command: launch.command,
        cwd,
        env,
        timeout: launch.timeout,
        stall_grace: launch.stall_grace,
        log_path: launch.log_path,
        log_cap: launch.log_cap,
        limits,
        sandbox,
    })
}

/// The warm caches of a launch (`[env] warm`): for setup, each variable
/// with its directory in the environment (made if missing), which setup
/// warms; for a test run, each variable with `None`, its cache copied from
/// the environment into the run's scratch (`warm/<VAR>`: a reflink where
/// the file system can, else a copy), so every run starts warm and nothing
/// it writes reaches another run or the environment.
fn warm(launch: &Launch<'_>, env_dir: &Path) -> Result<Vec<(String, Option<PathBuf>)>, NodeError> {
    let mut out = Vec::new();
    for (var, dir) in launch.warm {
        let cache = env_dir.join(dir);
        if launch.setup {
            std::fs::create_dir_all(&cache)
                .map_err(|e| NodeError::infra(format!("{}: {e}", cache.display())))?;
            out.push((var.clone(), Some(cache)));
            continue;
        }
        let copy = launch.scratch.join("warm").join(var);
        std::fs::create_dir_all(launch.scratch.join("warm")).infra()?;
        if cache.is_dir() {
            let out = std::process::Command::new("cp")
                .args(["-a", "--reflink=auto"])
                .arg(&cache)
                .arg(&copy)
                .output()
                .map_err(|e| NodeError::infra(format!("copying the warm cache {dir}: {e}")))?;
            if !out.status.success() {
                return Err(NodeError::infra(format!(
                    "copying the warm cache {dir}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        } else {
            std::fs::create_dir_all(&copy).infra()?;
        }
        out.push((var.clone(), None));
    }
    Ok(out)
}

/// Reads a report the code under test wrote in its tree `work`: opened
/// from the tree with no symlink followed anywhere on `rel` (a directory on
/// the way may have become a link to a host path), never a FIFO or device
/// (which could block the grader), never more than `cap` bytes
/// ([`assay_exec::beneath`]).
fn read_report(work: &Path, rel: &Path, cap: u64) -> Result<Vec<u8>, String> {
    assay_exec::beneath::read(work, rel, cap).map_err(|e| e.to_string())
}

/// The watched files whose bytes differ after the run from the staged ones
/// (changed, deleted, replaced by a link or reached only through one),
/// sorted. Read as reports are: beneath the tree, following no link.
fn changed_files(work: &Path, staged: &Watched) -> Vec<String> {
    let mut out: Vec<String> = staged
        .iter()
        .filter(|(path, then)| {
            assay_exec::beneath::hash(work, Path::new(path)).map_or(true, |now| &now != then)
        })
        .map(|(p, _)| p.clone())
        .collect();
    out.sort();
    out
}

/// blake3 over a directory tree: every entry's relative path, type,
/// executable bit, and content (a link's target), in sorted order. Links are
/// never followed. An environment's digest, recomputed by `verify`.
pub(crate) fn dir_digest(dir: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut entries: Vec<(Vec<u8>, PathBuf)> = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let path = e.path();
            let rel = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .as_os_str()
                .as_encoded_bytes()
                .to_vec();
            if e.file_type()?.is_dir() {
                stack.push(path.clone());
            }
            entries.push((rel, path));
        }
    }
    entries.sort();
    let mut h = blake3::Hasher::new();
    for (rel, path) in entries {
        let meta = std::fs::symlink_metadata(&path)?;
        h.update(&(rel.len() as u64).to_le_bytes());
        h.update(&rel);
        if meta.file_type().is_symlink() {
            h.update(b"L");
            let target = std::fs::read_link(&path)?;
            let t = target.as_os_str().as_encoded_bytes();
            h.update(&(t.len() as u64).to_le_bytes());
            h.update(t);
        } else if meta.is_dir() {
            h.update(b"D");
        } else {
            h.update(if meta.permissions().mode() & 0o111 != 0 {
                b"X"
            } else {
                b"F"
            });
            h.update(&meta.len().to_le_bytes());
            let mut f = std::fs::File::open(&path)?;
            h.update_reader(&mut f)?;
        }
    }
    Ok(h.finalize().to_hex().to_string())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use super::*;

    /// Every hit maps to the limit whose word the executor writes, so a
    /// record reads back as the limit the run hit.
    #[test]
    fn a_limit_hit_is_the_rules_limit_of_the_same_word() {
        for hit in [
            LimitHit::Time,
            LimitHit::Memory,
            LimitHit::Processes,
            LimitHit::FileSize,
            LimitHit::Written,
        ] {
            assert_eq!(Some(limit_word(hit)), Limit::parse(hit.as_str()));
        }
    }

    /// A run's pieces in a temp dir: the staged tree, the environment, the
    /// scratch directory.
    pub(crate) struct Dirs {
        pub(crate) root: tempfile::TempDir,
        tree: PathBuf,
        scratch: PathBuf,
        env: EnvHandle,
    }

    impl Dirs {
        pub(crate) fn new() -> Dirs {
            let root = tempfile::tempdir().unwrap();
            for d in ["tree", "env", "scratch"] {
                std::fs::create_dir(root.path().join(d)).unwrap();
            }
            Dirs {
                tree: root.path().join("tree"),
                scratch: root.path().join("scratch"),
                env: EnvHandle::HostDir(root.path().join("env")),
                root,
            }
        }

        pub(crate) fn test_run(&self, command: &str) -> TestRun<'_> {
            let root = self.root.path();
            TestRun {
                launch: Launch {
                    command: command.into(),
                    tree: Some(&self.tree),
                    env: &self.env,
                    setup: false,
                    env_at: None,
                    scratch: &self.scratch,
                    log_path: root.join("log"),
                    log_cap: 1 << 16,
                    timeout: Duration::from_secs(30),
                    stall_grace: None,
                    attempt: None,
                    protect: Vec::new(),
                    report_file: Some("report.txt"),
                    watch: Vec::new(),
                    warm: &[],
                    agent: None,
                },
                staged: Vec::new(),
                ctx: None,
            }
        }
    }

    #[test]
    fn the_local_executor_runs_in_the_tree_and_reads_the_report_it_left() {
        let conf = Confinement {
            sandbox: SandboxMode::None,
            ..Confinement::default()
        };
        let dirs = Dirs::new();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let ran = rt
            .block_on(
                super::super::Executors::default()
                    .of(&conf)
                    .run(dirs.test_run("echo read; printf ok > report.txt; exit 3")),
            )
            .unwrap();
        assert_eq!(ran.exit_code, Some(3));
        assert!(!ran.timed_out);
        assert_eq!(ran.report, Some(Ok(b"ok".to_vec())));
        let log = std::fs::read(dirs.root.path().join("log")).unwrap();
        assert_eq!(log, b"read\n");
    }

    /// `[env] warm`: a run sees the environment's cache at its variable,
    /// writable, and starts from it; what it writes there (a poisoned entry)
    /// reaches neither the environment nor the next run.
    #[test]
    fn a_warm_cache_is_each_runs_own_copy_of_the_environments() {
        let conf = Confinement::default();
        let warm = [("WARM_CACHE".to_owned(), "warm-cache".to_owned())];
        let first = Dirs::new();
        let env_dir = first.root.path().join("env");
        std::fs::create_dir_all(env_dir.join("warm-cache")).unwrap();
        std::fs::write(env_dir.join("warm-cache/seed"), "warmed").unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mut run = first.test_run(
            "test \"$(cat \"$WARM_CACHE/seed\")\" = warmed && echo poisoned > \"$WARM_CACHE/seed\" && touch \"$WARM_CACHE/new\" && printf ok > report.txt",
        );
        run.launch.warm = &warm;
        let ran = rt
            .block_on(super::super::Executors::default().of(&conf).run(run))
            .unwrap();
        assert_eq!(
            ran.report,
            Some(Ok(b"ok".to_vec())),
            "exit {:?}",
            ran.exit_code
        );

        let mut second = Dirs::new();
        second.env = EnvHandle::HostDir(env_dir.clone());
        let mut run = second
            .test_run("cat \"$WARM_CACHE/seed\" > report.txt; ls \"$WARM_CACHE\" >> report.txt");
        run.launch.warm = &warm;
        let ran = rt
            .block_on(super::super::Executors::default().of(&conf).run(run))
            .unwrap();
        assert_eq!(ran.report, Some(Ok(b"warmedseed\n".to_vec())));
        assert_eq!(
            std::fs::read_to_string(env_dir.join("warm-cache/seed")).unwrap(),
            "warmed"
        );
        assert!(!env_dir.join("warm-cache/new").exists());
    }
}
