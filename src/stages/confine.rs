//! How every process that runs task or graded code is confined: screening
//! runs, grade runs, reruns, checks, `verify --reexecute` and environment
//! setup all build their process spec here, so no run path can forget the
//! sandbox (docs/security.md).
//!
//! The sandbox and the limits are part of a run's key: they change what the
//! code under test can see and do. The host paths the sandbox binds (the
//! toolchains on `PATH`) are not: they are this machine's, like the
//! interpreter itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use assay_exec::{Bwrap, Limits, RunSpec, Sandbox, sandbox};
use serde::Serialize;

/// `[env] sandbox`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SandboxMode {
    /// bubblewrap: the default.
    Bwrap,
    /// Unconfined, on the maintainer's host: a warning on every build, and
    /// the release says so.
    None,
}

impl SandboxMode {
    pub(crate) fn parse(s: &str) -> Option<SandboxMode> {
        match s {
            "bwrap" => Some(SandboxMode::Bwrap),
            "none" => Some(SandboxMode::None),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Bwrap => "bwrap",
            SandboxMode::None => "none",
        }
    }
}

/// The limits of one run, all in bytes or counts (docs/pipeline.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct RunLimits {
    pub(crate) memory: u64,
    pub(crate) processes: u64,
    pub(crate) open_files: u64,
    pub(crate) file_size: u64,
    pub(crate) tmp: u64,
    pub(crate) home: u64,
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            memory: 4 << 30,
            processes: 1024,
            open_files: 4096,
            file_size: 1 << 30,
            tmp: 1 << 30,
            home: 512 << 20,
        }
    }
}

/// The confinement of a run: part of its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Confinement {
    pub(crate) sandbox: SandboxMode,
    pub(crate) limits: RunLimits,
}

impl Default for Confinement {
    fn default() -> Self {
        Confinement {
            sandbox: SandboxMode::Bwrap,
            limits: RunLimits::default(),
        }
    }
}

static BWRAP: OnceLock<Result<Bwrap, String>> = OnceLock::new();

/// bubblewrap, found and probed once per process.
pub(crate) fn bwrap() -> Result<Bwrap, String> {
    BWRAP
        .get_or_init(|| Bwrap::detect().map_err(|e| e.to_string()))
        .clone()
}

/// What one process of a run is given.
pub(crate) struct Launch<'a> {
    pub(crate) command: String,
    /// The fresh copy of the staged tree (`None` for environment setup).
    pub(crate) tree: Option<&'a Path>,
    pub(crate) env_dir: &'a Path,
    /// Environment setup only: it writes its environment and may reach the
    /// network to install packages.
    pub(crate) setup: bool,
    /// A private scratch directory of the run, for `HOME` when unsandboxed.
    pub(crate) scratch: &'a Path,
    pub(crate) log_path: PathBuf,
    pub(crate) log_cap: u64,
    pub(crate) timeout: Duration,
    /// `ASSAY_ATTEMPT`: the repeat index of a screening run, the rerun
    /// number of a grade's rerun.
    pub(crate) attempt: u32,
}

fn host_path() -> String {
    std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into())
}

/// The process spec of one run under `conf`.
pub(crate) fn spec(conf: &Confinement, launch: Launch<'_>) -> Result<RunSpec, String> {
    let path = host_path();
    let mut env = BTreeMap::new();
    env.insert("PATH".to_owned(), path.clone());
    env.insert("LANG".to_owned(), "C.UTF-8".to_owned());
    env.insert("PYTHONDONTWRITEBYTECODE".to_owned(), "1".to_owned());
    env.insert("PYTHONHASHSEED".to_owned(), "0".to_owned());
    env.insert("ASSAY_ATTEMPT".to_owned(), launch.attempt.to_string());
    let limits = Limits {
        max_file_size: Some(conf.limits.file_size.max(launch.log_cap)),
        max_processes: Some(conf.limits.processes),
        max_open_files: Some(conf.limits.open_files),
        max_memory: Some(conf.limits.memory),
        no_core: true,
    };
    let (cwd, sandbox) = match conf.sandbox {
        SandboxMode::None => {
            let home = if launch.setup {
                launch.env_dir.join(".home")
            } else {
                launch.scratch.join("home")
            };
            std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
            env.insert("HOME".to_owned(), home.display().to_string());
            env.insert("TMPDIR".to_owned(), home.display().to_string());
            env.insert("ASSAY_ENV".to_owned(), launch.env_dir.display().to_string());
            let cwd = launch.tree.unwrap_or(launch.env_dir).to_owned();
            (cwd, None)
        }
        SandboxMode::Bwrap => {
            let home = if launch.setup {
                format!("{}/.home", sandbox::ENV)
            } else {
                sandbox::HOME.to_owned()
            };
            if launch.setup {
                std::fs::create_dir_all(launch.env_dir.join(".home")).map_err(|e| e.to_string())?;
            }
            env.insert("HOME".to_owned(), home);
            env.insert("TMPDIR".to_owned(), "/tmp".to_owned());
            env.insert("ASSAY_ENV".to_owned(), sandbox::ENV.to_owned());
            let sandbox = Sandbox {
                tree: launch.tree.map(Path::to_owned),
                env_dir: Some(launch.env_dir.to_owned()),
                env_writable: launch.setup,
                network: launch.setup,
                read_only: sandbox::toolchain_roots(&path),
                tmp_bytes: conf.limits.tmp,
                home_bytes: conf.limits.home,
            };
            (launch.scratch.to_owned(), Some((bwrap()?, sandbox)))
        }
    };
    Ok(RunSpec {
        command: launch.command,
        cwd,
        env,
        timeout: launch.timeout,
        log_path: launch.log_path,
        log_cap: launch.log_cap,
        limits,
        sandbox,
    })
}
