//! How every process that runs task or graded code is confined: screening
//! runs, grade runs, reruns, checks, `verify --reexecute` and environment
//! setup all build their process spec here, so no run path can forget the
//! sandbox (docs/security.md). The executor decides the shape: a local
//! [`RunSpec`] under bubblewrap, or a Docker [`ContainerRun`] (and, for
//! setup, an [`ImageSpec`]); the runners of `executor.rs` start them.
//!
//! The executor, the sandbox and the limits are part of a run's key: they
//! change what the code under test can see and do. The local executor adds
//! nothing to the key (so local keys stay what they were before Docker
//! existed). The host paths the sandbox binds (the toolchains on `PATH`) are
//! not: they are this machine's, like the interpreter itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use assay_docker::{ContainerRun, ImageId, ImageSpec, ReportRequest};
use assay_exec::{Bwrap, Limits, RunSpec, Sandbox, sandbox};
use serde::Serialize;

use super::executor::EnvHandle;
// The limit reasons are a rule of the pure core; runs and their tests name them here.
#[cfg(test)]
use super::rules::limits::bytes_text;
pub(crate) use super::rules::limits::limit_reason;

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
    /// Bytes a test run may add to its tree (`write_limit`); its `/tmp`
    /// and `HOME` are bounded by their own sizes. Left out of the key at
    /// its default, so that keys (and task digests) stay what they were
    /// before the limit existed; any other value enters it.
    #[serde(skip_serializing_if = "is_default_write")]
    pub(crate) write: u64,
}

/// The default `write_limit`: 1 GiB.
const DEFAULT_WRITE: u64 = 1 << 30;

fn is_default_write(write: &u64) -> bool {
    *write == DEFAULT_WRITE
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
            write: DEFAULT_WRITE,
        }
    }
}

/// `[env] executor`: where environments are prepared and runs happen.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Executor {
    /// This machine, under the [`SandboxMode`].
    #[default]
    Local,
    /// An image per environment, a fresh locked-down container per run.
    Docker(DockerSettings),
}

impl Executor {
    pub(crate) fn is_local(&self) -> bool {
        matches!(self, Executor::Local)
    }
}

/// The Docker executor's settings that change what a run sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DockerSettings {
    /// The base image as written (tag or id); the environment's output
    /// records the image id it became.
    pub(crate) base_image: String,
    /// CPU of a setup or run in thousandths (`cpus = 1.5` is 1500).
    pub(crate) cpu_millis: Option<u32>,
}

/// Keyed with the settings: the image layout this assay builds and runs in
/// (a protected tree, the import guard) and the guard's digest. Environments
/// and runs made for another layout have other keys, so they are rebuilt
/// rather than run in an image that lacks what a run relies on.
impl Serialize for DockerSettings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Keyed<'a> {
            base_image: &'a str,
            cpu_millis: Option<u32>,
            layout: u32,
            guard: &'static str,
        }
        Keyed {
            base_image: &self.base_image,
            cpu_millis: self.cpu_millis,
            layout: assay_docker::LAYOUT,
            guard: super::guard::digest(),
        }
        .serialize(s)
    }
}

/// The default `[env] base_image`.
pub(crate) const DEFAULT_BASE_IMAGE: &str = "assay-base:bookworm";

/// `PATH` inside a container: the image's, never the host's.
const CONTAINER_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The confinement of a run: part of its key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Confinement {
    /// The local executor's sandbox (`bwrap` for docker: unused there).
    pub(crate) sandbox: SandboxMode,
    pub(crate) limits: RunLimits,
    /// Left out of the key when local: a local key is what it always was.
    #[serde(skip_serializing_if = "Executor::is_local")]
    pub(crate) executor: Executor,
}

impl Default for Confinement {
    fn default() -> Self {
        Confinement {
            sandbox: SandboxMode::Bwrap,
            limits: RunLimits::default(),
            executor: Executor::Local,
        }
    }
}

impl Confinement {
    /// How a run was confined, as records say it: `bwrap`, `none` or `docker`.
    pub(crate) fn label(&self) -> &'static str {
        match self.executor {
            Executor::Local => self.sandbox.as_str(),
            Executor::Docker(_) => "docker",
        }
    }

    pub(crate) fn docker(&self) -> Option<&DockerSettings> {
        match &self.executor {
            Executor::Local => None,
            Executor::Docker(d) => Some(d),
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
    /// The environment: a directory for a local process (for setup, the
    /// one being prepared), an image for a container.
    pub(crate) env: &'a EnvHandle,
    /// Environment setup only: it writes its environment and may reach the
    /// network to install packages.
    pub(crate) setup: bool,
    /// A private scratch directory of the run, for `HOME` when unsandboxed.
    pub(crate) scratch: &'a Path,
    pub(crate) log_path: PathBuf,
    pub(crate) log_cap: u64,
    pub(crate) timeout: Duration,
    /// `ASSAY_ATTEMPT`: the repeat index of a screening run (the maintainer's
    /// code, whose flaky tests may read it). `None` for graded runs: graded
    /// code must not tell a first run from a rerun or a check.
    pub(crate) attempt: Option<u32>,
    /// Tree-relative paths the run may read but not change: the hidden
    /// test patch's files (written, replaced, renamed or unlinked). Empty
    /// for screening and setup, which run no agent code.
    pub(crate) protect: Vec<PathBuf>,
    /// Docker: the report file to copy out of the container's tree.
    pub(crate) report_file: Option<&'a str>,
    /// Docker: tree files to fingerprint after the run (tamper evidence).
    pub(crate) watch: Vec<PathBuf>,
}

/// `PYTHONPATH` of a test run: the import guard's directory alone
/// (`super::guard`). A test command that sets its own `PYTHONPATH` must
/// keep this one in it (`PYTHONPATH=src:$PYTHONPATH`).
fn guard_env(env: &mut BTreeMap<String, String>, dir: &str) {
    env.insert("PYTHONPATH".to_owned(), dir.to_owned());
}

fn host_path() -> String {
    std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into())
}

/// What every process of a run sees besides its paths: built from nothing.
/// A graded run's environment says nothing that tells a first run from a
/// rerun or a check: graded code that could tell them apart could behave
/// differently in each.
fn base_env(path: &str, attempt: Option<u32>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("PATH".to_owned(), path.to_owned());
    env.insert("LANG".to_owned(), "C.UTF-8".to_owned());
    env.insert("PYTHONDONTWRITEBYTECODE".to_owned(), "1".to_owned());
    env.insert("PYTHONHASHSEED".to_owned(), "0".to_owned());
    if let Some(n) = attempt {
        env.insert("ASSAY_ATTEMPT".to_owned(), n.to_string());
    }
    env
}

fn docker_limits(conf: &Confinement, d: &DockerSettings) -> assay_docker::Limits {
    assay_docker::Limits {
        cpu_millis: d.cpu_millis,
        memory: Some(conf.limits.memory),
        pids: Some(u32::try_from(conf.limits.processes).unwrap_or(u32::MAX)),
        open_files: Some(conf.limits.open_files),
        file_size: Some(conf.limits.file_size),
        written: Some(conf.limits.write),
    }
}

/// A test run in a fresh container of the environment's image; the same
/// environment variables as a local run, with the container's paths.
pub(crate) fn container(
    conf: &Confinement,
    d: &DockerSettings,
    launch: Launch<'_>,
) -> Result<ContainerRun, String> {
    let Some(tree) = launch.tree else {
        return Err("a docker run needs a tree".into());
    };
    let image = ImageId::parse(launch.env.image()?).map_err(|e| e.to_string())?;
    let mut env = base_env(CONTAINER_PATH, launch.attempt);
    env.insert("HOME".to_owned(), assay_docker::HOME_DIR.to_owned());
    env.insert("TMPDIR".to_owned(), "/tmp".to_owned());
    env.insert("ASSAY_ENV".to_owned(), assay_docker::ENV_DIR.to_owned());
    guard_env(&mut env, assay_docker::GUARD_DIR);
    Ok(ContainerRun {
        image,
        tree: tree.to_owned(),
        command: launch.command,
        env,
        timeout: launch.timeout,
        log_path: launch.log_path,
        log_cap: launch.log_cap,
        report: launch.report_file.map(|rel| ReportRequest {
            path: rel.into(),
            cap: launch.log_cap,
        }),
        limits: docker_limits(conf, d),
        tmp_size: conf.limits.tmp,
        home_size: conf.limits.home,
        watch: launch.watch,
        protect: launch.protect,
    })
}

/// A Docker environment's image: the base image, the key files in
/// `/assay/env`, the setup commands as one `set -e` script with the network
/// (the maintainer's commands, never agent code), the same limits as a run.
pub(crate) fn image_spec(
    conf: &Confinement,
    d: &DockerSettings,
    setup: &[String],
    key_files: &[(String, Vec<u8>)],
    timeout: Duration,
    log_cap: u64,
) -> ImageSpec {
    let mut env = base_env(CONTAINER_PATH, None);
    env.insert("HOME".to_owned(), "/root".to_owned());
    env.insert("TMPDIR".to_owned(), "/tmp".to_owned());
    ImageSpec {
        base: d.base_image.clone(),
        key_files: key_files.iter().cloned().collect(),
        guard: [(
            super::guard::FILE.to_owned(),
            super::guard::source(assay_docker::TREE_DIR).into_bytes(),
        )]
        .into(),
        setup: setup.to_vec(),
        env,
        user: assay_docker::RunUser::default(),
        timeout,
        log_cap,
        limits: assay_docker::Limits {
            // Setup writes the environment, not a tree: the maintainer's
            // commands, bounded by the timeout.
            written: None,
            ..docker_limits(conf, d)
        },
    }
}

/// The process spec of one local run under `conf`.
pub(crate) fn spec(conf: &Confinement, launch: Launch<'_>) -> Result<RunSpec, String> {
    let env_dir = launch.env.host_dir()?;
    let path = host_path();
    let mut env = base_env(&path, launch.attempt);
    let limits = Limits {
        max_file_size: Some(conf.limits.file_size.max(launch.log_cap)),
        max_processes: Some(conf.limits.processes),
        max_open_files: Some(conf.limits.open_files),
        max_memory: Some(conf.limits.memory),
        no_core: true,
        // A test run's tree; setup writes its environment instead.
        max_written: (launch.tree.is_some() && !launch.setup).then_some(conf.limits.write),
    };
    let (cwd, sandbox) = match conf.sandbox {
        SandboxMode::None => {
            let home = if launch.setup {
                env_dir.join(".home")
            } else {
                launch.scratch.join("home")
            };
            std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
            env.insert("HOME".to_owned(), home.display().to_string());
            env.insert("TMPDIR".to_owned(), home.display().to_string());
            env.insert("ASSAY_ENV".to_owned(), env_dir.display().to_string());
            if let Some(tree) = launch.tree.filter(|_| !launch.setup)
                && let Some(tree) = tree.to_str()
            {
                let dir = launch.scratch.join("guard");
                super::guard::write(&dir, tree).map_err(|e| e.to_string())?;
                guard_env(&mut env, &dir.display().to_string());
            }
            let cwd = launch.tree.unwrap_or(env_dir).to_owned();
            (cwd, None)
        }
        SandboxMode::Bwrap => {
            let home = if launch.setup {
                format!("{}/.home", sandbox::ENV)
            } else {
                sandbox::HOME.to_owned()
            };
            if launch.setup {
                std::fs::create_dir_all(env_dir.join(".home")).map_err(|e| e.to_string())?;
            }
            env.insert("HOME".to_owned(), home);
            env.insert("TMPDIR".to_owned(), "/tmp".to_owned());
            env.insert("ASSAY_ENV".to_owned(), sandbox::ENV.to_owned());
            let guard = if launch.tree.is_some() && !launch.setup {
                let dir = launch.scratch.join("guard");
                super::guard::write(&dir, sandbox::TREE).map_err(|e| e.to_string())?;
                guard_env(&mut env, sandbox::GUARD);
                Some(dir)
            } else {
                None
            };
            let sandbox = Sandbox {
                tree: launch.tree.map(Path::to_owned),
                env_dir: Some(env_dir.to_owned()),
                env_writable: launch.setup,
                network: launch.setup,
                read_only: sandbox::toolchain_roots(&path),
                tmp_bytes: conf.limits.tmp,
                home_bytes: conf.limits.home,
                protect: launch.protect,
                guard,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The confinement as it was before the docker executor existed.
    #[derive(Serialize)]
    struct LocalOnly {
        sandbox: SandboxMode,
        limits: RunLimits,
    }

    #[test]
    fn a_local_confinement_keys_as_it_always_did() {
        for sandbox in [SandboxMode::Bwrap, SandboxMode::None] {
            let conf = Confinement {
                sandbox,
                ..Confinement::default()
            };
            let old = LocalOnly {
                sandbox,
                limits: conf.limits,
            };
            assert_eq!(
                assay_engine::encode_params(&conf),
                assay_engine::encode_params(&old)
            );
            assert_eq!(
                serde_json::to_string(&conf).unwrap_or_default(),
                serde_json::to_string(&old).unwrap_or_default()
            );
        }
    }

    /// The limits as they were before the write limit existed.
    #[derive(Serialize)]
    struct LimitsBeforeWrites {
        memory: u64,
        processes: u64,
        open_files: u64,
        file_size: u64,
        tmp: u64,
        home: u64,
    }

    #[test]
    fn the_write_limit_enters_the_key_and_its_reason_says_how_much() {
        let d = RunLimits::default();
        let before = LimitsBeforeWrites {
            memory: d.memory,
            processes: d.processes,
            open_files: d.open_files,
            file_size: d.file_size,
            tmp: d.tmp,
            home: d.home,
        };
        assert_eq!(
            assay_engine::encode_params(&d),
            assay_engine::encode_params(&before)
        );
        let lowered = Confinement {
            limits: RunLimits {
                write: 64 << 20,
                ..RunLimits::default()
            },
            ..Confinement::default()
        };
        assert_ne!(
            assay_engine::encode_params(&lowered),
            assay_engine::encode_params(&Confinement::default())
        );
        assert_eq!(
            limit_reason("write", RunLimits::default().write),
            "the run hit its write limit: it wrote over 1 GiB into its tree"
        );
        assert_eq!(
            limit_reason("write", lowered.limits.write),
            "the run hit its write limit: it wrote over 64 MiB into its tree"
        );
        assert_eq!(
            limit_reason("memory", lowered.limits.write),
            "the run hit its memory limit"
        );
        assert_eq!(bytes_text(1536 << 20), "1536 MiB");
        assert_eq!(bytes_text(1000), "1000 bytes");
    }

    #[test]
    fn the_docker_executor_and_its_settings_enter_the_key() {
        let docker = |base: &str, cpu_millis| Confinement {
            executor: Executor::Docker(DockerSettings {
                base_image: base.into(),
                cpu_millis,
            }),
            ..Confinement::default()
        };
        let keys: Vec<Vec<u8>> = [
            Confinement::default(),
            docker("assay-base:bookworm", None),
            docker("assay-base:bookworm", Some(1500)),
            docker("python:3.12", None),
        ]
        .iter()
        .map(assay_engine::encode_params)
        .collect();
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(docker("x", None).label(), "docker");
        assert_eq!(Confinement::default().label(), "bwrap");
    }
}
