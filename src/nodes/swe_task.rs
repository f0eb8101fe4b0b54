//! A Deep-SWE-shaped Harbor task (docs/harbor.md, "Deep-SWE tasks as assay
//! tasks") taken in as an assay task: two nodes stand where a mined task
//! has its triage and its environment, and everything after them —
//! trees, screening runs in three states, certification, canaries, the
//! task, grades with arms and reruns — is a mined task's.
//!
//! - `swe_triage:<dataset>/<folder>` makes the triage record: the base
//!   tree is the task's screened image's working directory (`WORKDIR`) as
//!   `git add -A` stages it (its `.git` and ignored files left out),
//!   committed into assay's object store; the test patch is
//!   `tests/test.patch`, the gold patch `solution/solution.patch`, the
//!   statement `instruction.md`. A task the dataset's own controls did not
//!   certify is declined (`harbor_uncertified`), as is one whose
//!   `tests/test.sh` marks no suites' part (`no_test_runner`).
//! - `swe_env:<dataset>/<folder>` makes the docker executor's environment
//!   from the screened image: no setup of the maintainer's; the image's
//!   working directory is copied to the run's tree directory (so every
//!   run's fresh tree volume starts with what the image installed there,
//!   ignored files included, and the staged tree is uploaded over it) and
//!   the working directory becomes a link to it, so the suites' `cd /app`
//!   and absolute paths reach the staged tree; the image's `ENV` is kept in
//!   `$ASSAY_ENV/image.env` for the test command to read (a run's
//!   environment is otherwise assay's, never the image's). The home of the
//!   user the image declares (its `ENV HOME`, else `/root` for root, the
//!   default) is given to the run user and is writable in every run, each
//!   run over a fresh copy of it (docs/security.md, "Other people's
//!   images"): toolchain caches the image's `ENV` points there
//!   (`GOCACHE=/root/.cache/go-build`) work as they do in Harbor, and no
//!   run sees what another wrote there.
//!
//! Both take the screened task's record as input (its image id), and the
//! triage is keyed by the folder's files too: a changed folder or a
//! rebuilt image makes them again, and only what their records change
//! reruns.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::harbor_task::HarborTaskRecord;
use crate::model::records::{Decision, EnvRecord, TriageRecord};
use crate::model::shell;
use crate::run::error::{Context, Kinded, NodeError};
use crate::run::executor::{Confinement, ExecutorSetting, Executors, Presence, Setup};
use crate::run::harbor::deepswe;
use crate::run::harbor::workspace;
use crate::run::redact::RedactConfig;

/// (path, mode, blake3) of every file of a folder, sorted.
type Files = Vec<(String, u32, String)>;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct DeepSweTriageParams {
    /// `<dataset>/<folder>`: the task's instance id.
    pub(crate) id: String,
    /// SWE-bench's `repo`: `[metadata] repository_url`, else the dataset.
    pub(crate) repo: String,
    pub(crate) files: Files,
}

super::adapter::inputs! {
    pub(crate) struct DeepSweTriageInputs / DeepSweTriageNames { task: HarborTaskRecord }
}

pub(crate) struct DeepSweTriage {
    pub(crate) params: DeepSweTriageParams,
    pub(crate) folder: PathBuf,
    /// assay's object store (`cache/git`), where the base is committed.
    pub(crate) store_dir: PathBuf,
    /// The image's working directory is read through the executors' daemon.
    pub(crate) executors: Arc<Executors>,
}

impl Kind for DeepSweTriage {
    const NAME: &'static str = NodeKind::DeepSweTriage.as_str();
    const VERSION: u32 = 1;
    type Params = DeepSweTriageParams;
    type Inputs = DeepSweTriageInputs;
    type Record = TriageRecord;

    fn params(&self) -> &DeepSweTriageParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: DeepSweTriageInputs,
        ctx: JobCtx,
    ) -> Result<Made<TriageRecord>, NodeError> {
        let p = &self.params;
        let folder = match deepswe::Folder::detect(&self.folder) {
            Some(Ok(f)) => Some(f),
            _ => None,
        };
        let instruction = std::fs::read_to_string(self.folder.join("instruction.md"))
            .unwrap_or_default()
            .trim()
            .to_owned();
        let title = instruction.lines().next().unwrap_or_default().to_owned();
        let mut record = TriageRecord {
            id: p.id.clone(),
            repo: p.repo.clone(),
            base: String::new(),
            head: String::new(),
            title,
            body: instruction,
            decision: Decision::Eligible,
            detail: String::new(),
            test_files: folder
                .as_ref()
                .map(|f| f.test_files.clone())
                .unwrap_or_default(),
            gold_files: folder
                .as_ref()
                .map(|f| f.gold_files.clone())
                .unwrap_or_default(),
            test_patch: String::new(),
            gold_patch: String::new(),
            dataset: None,
        };
        let task = &i.task.record;
        let image = match (task.certified, task.environment.image.as_deref(), &folder) {
            (true, Some(image), Some(folder)) if folder.suites.is_some() => image.to_owned(),
            (true, Some(_), Some(_)) => {
                record.decision = Decision::NoTestRunner;
                record.detail = format!(
                    "tests/test.sh marks no suites' part (`{}` … `{}`): assay has no test command to run",
                    deepswe::RUN_TESTS,
                    deepswe::END_RUN_TESTS
                );
                return Ok(Made::record(record));
            }
            _ => {
                record.decision = Decision::HarborUncertified;
                record.detail = if task.uncertified_because.is_empty() {
                    "the task's folder does not read as Deep-SWE's".to_owned()
                } else {
                    task.uncertified_because.join("; ")
                };
                return Ok(Made::record(record));
            }
        };
        let base = workspace::commit_working_directory(
            self.executors.daemon(),
            &image,
            &ctx.cache_dir.join("tmp"),
            &self.store_dir,
        )
        .await?;
        (record.base, record.head) = (base.clone(), base);
        let mut attachments = Vec::new();
        for (rel, slot) in [
            ("tests/test.patch", &mut record.test_patch),
            ("solution/solution.patch", &mut record.gold_patch),
        ] {
            let bytes = std::fs::read(self.folder.join(rel)).input().context(rel)?;
            let digest = ctx.blobs.put(&bytes).cache()?;
            *slot = digest.to_hex();
            attachments.push(digest);
        }
        Ok(Made {
            record,
            attachments,
        })
    }
}

/// The params of an environment made from a task's own image (`swe_env`,
/// `instance_env`): one type, so both kinds' keys are made alike.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ImageEnvParams {
    /// The docker executor's limits (its base image is the task's own, an
    /// input).
    pub(crate) confine: Confinement,
    pub(crate) redact: RedactConfig,
}

/// Where an [`ImageEnv`] reads the task's image from: its kind's word and
/// version, its input, and whether the image's history is removed.
pub(crate) trait ImageOf: Send + Sync + 'static {
    const NAME: &'static str;
    const VERSION: u32;
    /// The working directory's `.git` removed, and checked gone
    /// ([`FromImage`]'s `scrub_history`).
    const SCRUB_HISTORY: bool;
    type Inputs: super::adapter::Inputs;
    /// The image, or why there is none (the setup log) with the base
    /// image the record names.
    fn image(inputs: &Self::Inputs) -> Result<String, (String, String)>;
}

/// The docker executor's environment made from a task's own image
/// ([`FromImage`]), the image read by `S`.
pub(crate) struct ImageEnv<S> {
    pub(crate) params: ImageEnvParams,
    pub(crate) timeout: Duration,
    pub(crate) cache_dir: PathBuf,
    pub(crate) executors: Arc<Executors>,
    image_of: std::marker::PhantomData<S>,
}

impl<S> ImageEnv<S> {
    /// Ten minutes to set it up.
    pub(crate) fn new(
        params: ImageEnvParams,
        cache_dir: PathBuf,
        executors: Arc<Executors>,
    ) -> ImageEnv<S> {
        ImageEnv {
            params,
            timeout: Duration::from_secs(600),
            cache_dir,
            executors,
            image_of: std::marker::PhantomData,
        }
    }
}

/// The file of the image's `ENV` in the environment directory.
pub(crate) const IMAGE_ENV: &str = "image.env";

impl<S: ImageOf> Kind for ImageEnv<S> {
    const NAME: &'static str = S::NAME;
    const VERSION: u32 = S::VERSION;
    type Params = ImageEnvParams;
    type Inputs = S::Inputs;
    type Record = EnvRecord;

    fn params(&self) -> &ImageEnvParams {
        &self.params
    }

    async fn run(self: Arc<Self>, i: S::Inputs, ctx: JobCtx) -> Result<Made<EnvRecord>, NodeError> {
        let image = match S::image(&i) {
            Ok(image) => image,
            Err((why, base_image)) => return not_set_up(&why, base_image, &ctx),
        };
        let from = FromImage {
            image,
            confine: &self.params.confine,
            redact: &self.params.redact,
            timeout: self.timeout,
            scrub_history: S::SCRUB_HISTORY,
        };
        from.prepare(&self.executors, &ctx).await
    }

    fn refuse_hit(&self, output: &[u8]) -> Option<String> {
        env_gone(
            &self.executors,
            &self.params.confine,
            &self.cache_dir,
            output,
        )
    }
}

super::adapter::inputs! {
    pub(crate) struct HarborImageEnvInputs / HarborImageEnvNames { task: HarborTaskRecord }
}

/// `swe_env`: a screened Harbor task's environment, from its image: a
/// Deep-SWE task's, and a reward-only task's for the agents' attempts.
pub(crate) struct HarborTaskImage;

/// The node kind `swe_env`.
pub(crate) type HarborImageEnv = ImageEnv<HarborTaskImage>;

impl ImageOf for HarborTaskImage {
    const NAME: &'static str = NodeKind::HarborImageEnv.as_str();
    const VERSION: u32 = 2;
    const SCRUB_HISTORY: bool = false;
    type Inputs = HarborImageEnvInputs;

    fn image(i: &HarborImageEnvInputs) -> Result<String, (String, String)> {
        let task = &i.task.record;
        match (task.certified, task.environment.image.as_deref()) {
            (true, Some(image)) => Ok(image.to_owned()),
            _ => Err((
                format!(
                    "the Harbor task {}/{} is not certified: {}\n",
                    task.dataset,
                    task.folder,
                    task.uncertified_because.join("; ")
                ),
                image_or_none(task),
            )),
        }
    }
}

/// Why a stored environment record is not taken: the image it names is
/// gone from its executor.
pub(crate) fn env_gone(
    executors: &Executors,
    confine: &Confinement,
    cache_dir: &std::path::Path,
    output: &[u8],
) -> Option<String> {
    let r = serde_json::from_slice::<EnvRecord>(output).ok()?;
    match (r.ok, executors.of(confine).present(&r, cache_dir)) {
        (true, Presence::Gone) => Some(format!(
            "the environment it names ({}) is gone from its executor",
            r.image.as_deref().unwrap_or_default()
        )),
        _ => None,
    }
}

/// An environment that was not set up, and why (its setup log).
pub(crate) fn not_set_up(
    why: &str,
    base_image: String,
    ctx: &JobCtx,
) -> Result<Made<EnvRecord>, NodeError> {
    let log = ctx.blobs.put(why.as_bytes()).cache()?;
    Ok(crate::run::executor::made(EnvRecord {
        dir: String::new(),
        ok: false,
        exit_code: None,
        setup_log: log.to_hex(),
        digest: String::new(),
        executor: Some("docker".into()),
        image: None,
        base_image: Some(base_image),
        export: None,
        failed_command: None,
    }))
}

/// The docker executor's environment made from a task's own image: its
/// working directory copied to the run's tree directory (owned by the run
/// user) and replaced by a link to it, its `ENV` kept in
/// `$ASSAY_ENV/image.env`. With `scrub_history`, the working directory's
/// `.git` goes first — every ref, reflog, tag and packed object of it —
/// and the setup fails unless no repository is left there or in the tree.
pub(crate) struct FromImage<'a> {
    pub(crate) image: String,
    pub(crate) confine: &'a Confinement,
    pub(crate) redact: &'a RedactConfig,
    pub(crate) timeout: Duration,
    pub(crate) scrub_history: bool,
}

impl FromImage<'_> {
    pub(crate) async fn prepare(
        self,
        executors: &Executors,
        ctx: &JobCtx,
    ) -> Result<Made<EnvRecord>, NodeError> {
        let workdir = workspace::inspect(executors.daemon(), &self.image)
            .await
            .infra()?;
        if workdir.dir.starts_with("/assay") {
            return Err(NodeError::input(format!(
                "the image's working directory {} is under /assay, where assay's layout goes",
                workdir.dir
            )));
        }
        // SWE-bench's images say `WORKDIR /testbed/`: `ln -s` refuses a
        // link path with a trailing slash.
        let dir = workdir.dir.trim_end_matches('/');
        let tree = assay_docker::TREE_DIR;
        let user = assay_docker::RunUser::default();
        let scrub = if self.scrub_history {
            format!(
                "rm -rf \"$W/.git\" && if [ -e \"$W/.git\" ] || [ -e {tree}/.git ]; then echo 'a repository is left in the working directory' >&2; exit 1; fi && "
            )
        } else {
            String::new()
        };
        let mut commands = vec![format!(
            "W={w}; {scrub}cp -a \"$W\"/. {tree}/ && chown -R {uid}:{gid} {tree} && rm -rf \"$W\" && ln -s {tree} \"$W\"",
            w = shell::quote(dir),
            uid = user.uid,
            gid = user.gid,
        )];
        let writable: Vec<String> = image_home(&workdir.user, &workdir.env)
            .filter(|home| writable_home(home, dir))
            .into_iter()
            .collect();
        for home in &writable {
            commands.push(format!(
                "H={h}; mkdir -p \"$H\" && chown -R {uid}:{gid} \"$H\"",
                h = shell::quote(home),
                uid = user.uid,
                gid = user.gid,
            ));
        }
        let files = vec![(IMAGE_ENV.to_owned(), image_env(&workdir.env).into_bytes())];
        let mut confine = self.confine.clone();
        if let ExecutorSetting::Docker(settings) = &mut confine.executor {
            settings.base_image = self.image;
        }
        let setup = Setup {
            commands: &commands,
            files: &files,
            timeout: self.timeout,
            redact: self.redact,
            export: false,
            lost: None,
            at: None,
            warm: &[],
            writable: &writable,
        };
        executors.of(&confine).prepare(setup, ctx).await
    }
}

fn image_or_none(task: &HarborTaskRecord) -> String {
    task.environment
        .image
        .clone()
        .unwrap_or_else(|| "none".to_owned())
}

/// The home of the user an image declares: its `ENV HOME` where it sets
/// an absolute one, else `/root` when the user is root (`USER` unset,
/// `root` or uid 0), else unknown (a named user's home is in the image's
/// `/etc/passwd`, which is not read).
fn image_home(user: &str, env: &[String]) -> Option<String> {
    let declared = env
        .iter()
        .filter_map(|entry| entry.strip_prefix("HOME="))
        .next_back()
        .filter(|home| home.starts_with('/'))
        .map(|home| home.trim_end_matches('/').to_owned())
        .filter(|home| !home.is_empty());
    let name = user.split(':').next().unwrap_or_default();
    declared.or_else(|| matches!(name, "" | "root" | "0").then(|| "/root".to_owned()))
}

/// Whether runs may write `home` as a copy of the image's: a directory a
/// volume may stand at, and not the working directory or beneath it (that
/// is the tree's, and a link to it once set up).
fn writable_home(home: &str, workdir: &str) -> bool {
    let workdir = workdir.trim_end_matches('/');
    assay_docker::writable_dir(home).is_ok()
        && home != workdir
        && !home.starts_with(&format!("{workdir}/"))
}

/// `export KEY='value'` per `KEY=value` of the image's `ENV`, but `HOME`
/// (a run's home is its own).
fn image_env(env: &[String]) -> String {
    env.iter()
        .filter_map(|entry| entry.split_once('='))
        .filter(|(key, _)| {
            *key != "HOME"
                && !key.is_empty()
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .map(|(key, value)| format!("export {key}={}\n", shell::quote(value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_users_home_is_its_env_home_else_roots_for_root() {
        let env = |home: &str| vec!["PATH=/usr/bin".to_owned(), format!("HOME={home}")];
        assert_eq!(image_home("", &[]).as_deref(), Some("/root"));
        assert_eq!(image_home("root", &[]).as_deref(), Some("/root"));
        assert_eq!(image_home("0:0", &[]).as_deref(), Some("/root"));
        assert_eq!(
            image_home("", &env("/home/dev/")).as_deref(),
            Some("/home/dev")
        );
        assert_eq!(
            image_home("dev", &env("/home/dev")).as_deref(),
            Some("/home/dev")
        );
        assert_eq!(image_home("dev", &[]), None);
        assert_eq!(image_home("1001", &env("relative")), None);
        assert!(writable_home("/root", "/app"));
        assert!(writable_home("/root", "/root/app"));
        assert!(!writable_home("/app", "/app/"));
        assert!(!writable_home("/app/home", "/app"));
        assert!(!writable_home("/assay/home", "/app"));
    }

    #[test]
    fn the_images_env_is_exported_but_home_and_names_sh_cannot_take() {
        let env = [
            "PATH=/root/go/bin:/usr/bin".to_owned(),
            "HOME=/root".to_owned(),
            "GREETING=it's".to_owned(),
            "BAD-NAME=x".to_owned(),
            "$(touch /x)=y".to_owned(),
        ];
        assert_eq!(
            image_env(&env),
            "export PATH='/root/go/bin:/usr/bin'\nexport GREETING='it'\\''s'\n"
        );
    }
}
