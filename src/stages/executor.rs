//! Where a test run's process runs: the seam between a run (stage a tree;
//! redact, store and read what it left) and what executes it. A [`Runner`]
//! is handed one [`TestRun`] in an environment ([`EnvHandle`]) and returns
//! how it ended ([`Ran`]), with the report file and the test files that
//! changed. [`LocalRunner`] runs a process group on this machine (under
//! bubblewrap unless `sandbox = "none"`); [`DockerRunner`] a fresh container
//! of the environment's image. Which one is the confinement's choice
//! ([`runner`]): the run stage never asks.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use assay_engine::JobError;

use super::confine::{Confinement, DockerSettings, Executor, Launch};
use super::records::EnvRecord;

/// A prepared environment, as a runner reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EnvHandle {
    /// A directory on this machine: the local executor's environments.
    HostDir(PathBuf),
    /// An image id (`sha256:…`): the docker executor's.
    Image(String),
}

impl EnvHandle {
    /// The environment an env record names: its image when it has one, else
    /// its directory (recorded relative to the cache directory).
    pub(crate) fn of(record: &EnvRecord, cache_dir: &Path) -> EnvHandle {
        match &record.image {
            Some(id) => EnvHandle::Image(id.clone()),
            None => EnvHandle::HostDir(cache_dir.join(&record.dir)),
        }
    }

    pub(crate) fn host_dir(&self) -> Result<&Path, String> {
        match self {
            EnvHandle::HostDir(dir) => Ok(dir),
            EnvHandle::Image(id) => Err(format!(
                "a local process needs an environment directory, not the image {id}"
            )),
        }
    }

    pub(crate) fn image(&self) -> Result<&str, String> {
        match self {
            EnvHandle::Image(id) => Ok(id),
            EnvHandle::HostDir(dir) => Err(format!(
                "a docker run needs its environment's image, not the directory {}",
                dir.display()
            )),
        }
    }
}

/// The watched (test) files of the staged tree: path -> blake3 of the bytes
/// the run was given (canaries included).
pub(crate) type Watched = Vec<(String, [u8; 32])>;

/// One test run, as a runner is handed it.
pub(crate) struct TestRun<'a> {
    /// The process; its `tree` is the staged copy.
    pub(crate) launch: Launch<'a>,
    pub(crate) staged: Watched,
}

/// How a run ended, whichever runner ran it.
pub(crate) struct Ran {
    pub(crate) exit_code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) timed_out: bool,
    pub(crate) limit: Option<String>,
    pub(crate) duration: Duration,
    pub(crate) log_bytes: u64,
    pub(crate) log_truncated: bool,
    /// The report file's bytes, or why it was not read; `None` when the
    /// report is the log.
    pub(crate) report: Option<Result<Vec<u8>, String>>,
    pub(crate) changed: Vec<String>,
}

pub(crate) type RunFuture<'a> = Pin<Box<dyn Future<Output = Result<Ran, JobError>> + Send + 'a>>;

/// What executes a test run.
pub(crate) trait Runner: Send + Sync {
    fn run<'a>(&'a self, test: TestRun<'a>) -> RunFuture<'a>;
}

/// The runner the confinement asks for.
pub(crate) fn runner(conf: &Confinement) -> Box<dyn Runner + '_> {
    match &conf.executor {
        Executor::Local => Box::new(LocalRunner { conf }),
        Executor::Docker(settings) => Box::new(DockerRunner { conf, settings }),
    }
}

fn err(e: &dyn std::fmt::Display) -> JobError {
    JobError::new(format!("run: {e}"))
}

/// A process group on this machine, confined as `conf` says; it reads what
/// the run left in its tree. Serial environments are not locked here: the
/// job holding the run holds its environment
/// ([`RunParams::exclusive`](super::run::RunParams::exclusive)).
pub(crate) struct LocalRunner<'a> {
    conf: &'a Confinement,
}

impl Runner for LocalRunner<'_> {
    fn run<'a>(&'a self, test: TestRun<'a>) -> RunFuture<'a> {
        Box::pin(async move {
            let work = test
                .launch
                .tree
                .ok_or_else(|| err(&"a test run needs its tree"))?
                .to_owned();
            let report_path = test.launch.report_file.map(PathBuf::from);
            let cap = test.launch.log_cap;
            let spec = super::confine::spec(self.conf, test.launch).map_err(|e| err(&e))?;
            let outcome = assay_exec::run(&spec).await.map_err(|e| err(&e))?;
            let (changed, report) = {
                let (work, staged) = (work.clone(), test.staged);
                tokio::task::spawn_blocking(move || {
                    let report = report_path.map(|rel| read_report(&work, &rel, cap));
                    (changed_files(&work, &staged), report)
                })
                .await
                .map_err(|e| err(&e))?
            };
            Ok(Ran {
                exit_code: outcome.exit_code,
                signal: outcome.signal,
                timed_out: outcome.timed_out,
                limit: outcome.limit_hit.map(|l| l.as_str().to_owned()),
                duration: outcome.duration,
                log_bytes: outcome.log_bytes,
                log_truncated: outcome.log_truncated,
                report,
                changed,
            })
        })
    }
}

/// A fresh container of the environment's image: the report and the test
/// files' fingerprints come back from it before it is removed.
pub(crate) struct DockerRunner<'a> {
    conf: &'a Confinement,
    settings: &'a DockerSettings,
}

impl Runner for DockerRunner<'_> {
    fn run<'a>(&'a self, test: TestRun<'a>) -> RunFuture<'a> {
        Box::pin(async move {
            let cap = test.launch.log_cap;
            let run = super::confine::container(self.conf, self.settings, test.launch)
                .map_err(|e| err(&e))?;
            let docker = super::docker::client().await.map_err(|e| err(&e))?;
            let outcome = docker.run(&run).await.map_err(|e| err(&e))?;
            let changed = {
                let (staged, watched) = (test.staged, outcome.watched.clone());
                tokio::task::spawn_blocking(move || changed_in(&staged, &watched))
                    .await
                    .map_err(|e| err(&e))?
            };
            Ok(Ran {
                exit_code: outcome.exit_code,
                signal: None,
                timed_out: outcome.timed_out,
                limit: outcome.killed_by.map(|k| {
                    match k {
                        assay_docker::KilledBy::WallClock => "time",
                        assay_docker::KilledBy::Memory => "memory",
                        assay_docker::KilledBy::Written => assay_exec::LimitHit::Written.as_str(),
                    }
                    .to_owned()
                }),
                duration: outcome.duration,
                log_bytes: outcome.log_bytes,
                log_truncated: outcome.log_truncated,
                report: outcome.report.map(|r| container_report(r, cap)),
                changed,
            })
        })
    }
}

/// A report copied out of a container, in the words of [`read_report`].
fn container_report(report: assay_docker::Report, cap: u64) -> Result<Vec<u8>, String> {
    match report {
        assay_docker::Report::Present(bytes) => Ok(bytes),
        assay_docker::Report::Missing => Err("not found".into()),
        assay_docker::Report::NotAFile => {
            Err("is a symbolic link or not a regular file; not read".into())
        }
        assay_docker::Report::TooLarge { size } => Err(format!(
            "is {size} bytes, over the evidence cap ({cap} bytes); not read"
        )),
    }
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

/// The watched files whose fingerprints after a container run differ from
/// the staged bytes (changed, deleted or no longer a regular file), sorted.
fn changed_in(
    staged: &Watched,
    watched: &std::collections::BTreeMap<PathBuf, Option<[u8; 32]>>,
) -> Vec<String> {
    let mut out: Vec<String> = staged
        .iter()
        .filter(|(path, then)| {
            let now = watched.get(Path::new(path)).copied().flatten();
            now != Some(*then)
        })
        .map(|(p, _)| p.clone())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::confine::SandboxMode;

    fn record(json: &str) -> EnvRecord {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn an_env_record_names_its_directory_under_the_cache_or_its_image() {
        let cache = Path::new("/cache");
        let local = record(r#"{"dir":"envs/ab12","ok":true,"exit_code":0,"setup_log":""}"#);
        assert_eq!(
            EnvHandle::of(&local, cache),
            EnvHandle::HostDir(PathBuf::from("/cache/envs/ab12"))
        );
        let docker = record(
            r#"{"dir":"","ok":true,"exit_code":0,"setup_log":"","executor":"docker","image":"sha256:0123"}"#,
        );
        let image = EnvHandle::of(&docker, cache);
        assert_eq!(image, EnvHandle::Image("sha256:0123".into()));
        assert!(image.host_dir().is_err());
        assert!(EnvHandle::of(&local, cache).image().is_err());
    }

    /// A run's pieces in a temp dir: the staged tree, the environment, the
    /// scratch directory.
    struct Dirs {
        root: tempfile::TempDir,
        tree: PathBuf,
        scratch: PathBuf,
        env: EnvHandle,
    }

    impl Dirs {
        fn new() -> Dirs {
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

        fn test_run(&self, command: &str) -> TestRun<'_> {
            let root = self.root.path();
            TestRun {
                launch: Launch {
                    command: command.into(),
                    tree: Some(&self.tree),
                    env: &self.env,
                    setup: false,
                    scratch: &self.scratch,
                    log_path: root.join("log"),
                    log_cap: 1 << 16,
                    timeout: Duration::from_secs(30),
                    attempt: None,
                    protect: Vec::new(),
                    report_file: Some("report.txt"),
                    watch: Vec::new(),
                },
                staged: Vec::new(),
            }
        }
    }

    #[test]
    fn the_local_runner_runs_in_the_tree_and_reads_the_report_it_left() {
        let conf = Confinement {
            sandbox: SandboxMode::None,
            ..Confinement::default()
        };
        let dirs = Dirs::new();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let ran = rt
            .block_on(runner(&conf).run(dirs.test_run("echo read; printf ok > report.txt; exit 3")))
            .unwrap();
        assert_eq!(ran.exit_code, Some(3));
        assert!(!ran.timed_out);
        assert_eq!(ran.report, Some(Ok(b"ok".to_vec())));
        let log = std::fs::read(dirs.root.path().join("log")).unwrap();
        assert_eq!(log, b"read\n");
    }

    #[test]
    fn the_docker_runner_refuses_an_environment_directory_before_starting_anything() {
        let conf = Confinement {
            executor: Executor::Docker(DockerSettings {
                base_image: "assay-base:bookworm".into(),
                cpu_millis: None,
            }),
            ..Confinement::default()
        };
        let dirs = Dirs::new();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let refused = rt.block_on(runner(&conf).run(dirs.test_run("true")));
        let Err(e) = refused else {
            panic!("a docker run started without an image");
        };
        assert!(
            e.to_string().contains("needs its environment's image"),
            "{e}"
        );
    }
}
