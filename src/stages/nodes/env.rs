//! `env` (rebuild): prepares an environment once per env key — the env spec
//! plus the content of its key files at the base commit — so every task with
//! that key shares it: a directory `envs/<key>` in the cache (local), or an
//! image named by its id (docker). A failing setup is recorded (with its log)
//! as a failed environment, which runs report as `env_setup_failed`.
//!
//! A Docker environment's output names its image by id, so a rebuilt image
//! changes the keys of every run in it. A cached one whose image the daemon
//! no longer has is not a hit: it is loaded back from its saved blob (`[env]
//! export`: the same id, so nothing downstream reruns) or rebuilt (a new id:
//! its runs run again), and the build says which.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assay_engine::JobCtx;
use serde::Serialize;

use super::executor::EnvHandle;
use super::node::{Kind, Made, NoInputs, NodeKind};
use super::records::EnvRecord;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct EnvParams {
    pub(crate) setup: Vec<String>,
    /// (path, blake3 of its content at the base commit, or "absent")
    pub(crate) key_files: Vec<(String, String)>,
    pub(crate) confine: super::confine::Confinement,
    pub(crate) redact: super::redact::RedactConfig,
    /// Docker: save the image into the cache as a blob. Left out of the key
    /// when false, so a local key is what it always was.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) export: bool,
}

pub(crate) struct Env {
    pub(crate) params: EnvParams,
    /// The key files' bytes, written into the directory before setup runs.
    pub(crate) files: Vec<(String, Vec<u8>)>,
    pub(crate) timeout: Duration,
    pub(crate) cache_dir: PathBuf,
    /// A cached record turned down because its image is gone: what to load
    /// back, and what to say.
    pub(crate) lost: Mutex<Option<EnvRecord>>,
}

impl Env {
    pub(crate) fn new(
        params: EnvParams,
        files: Vec<(String, Vec<u8>)>,
        timeout: Duration,
        cache_dir: PathBuf,
    ) -> Env {
        Env {
            params,
            files,
            timeout,
            cache_dir,
            lost: Mutex::new(None),
        }
    }
}

impl Kind for Env {
    const NAME: &'static str = NodeKind::Env.as_str();
    /// 2: setup runs sandboxed, with the environment at `/assay/env`; its log
    /// is redacted.
    const VERSION: u32 = 2;
    type Params = EnvParams;
    type Inputs = NoInputs;
    type Record = EnvRecord;

    fn params(&self) -> &EnvParams {
        &self.params
    }

    async fn run(self: Arc<Self>, _: NoInputs, ctx: JobCtx) -> Result<Made<EnvRecord>, String> {
        if self.params.confine.docker().is_some() {
            let lost = self.lost.lock().unwrap_or_else(|p| p.into_inner()).take();
            return docker_env(&self, lost, ctx).await;
        }
        local_env(&self, ctx).await
    }

    fn hit_valid(&self, output: &[u8]) -> bool {
        let Ok(r) = serde_json::from_slice::<EnvRecord>(output) else {
            return false;
        };
        if !r.ok {
            return true;
        }
        match EnvHandle::of(&r, &self.cache_dir) {
            EnvHandle::HostDir(dir) => dir.is_dir(),
            // Unchecked (no build started): the run itself will say.
            EnvHandle::Image(id) => match super::docker::image_present(&id) {
                Some(false) => {
                    *self.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                    false
                }
                Some(true) | None => true,
            },
        }
    }
}

/// A local environment: a directory of the cache, set up in place.
async fn local_env(env: &Env, ctx: JobCtx) -> Result<Made<EnvRecord>, String> {
    let name = ctx.key.to_hex();
    let final_dir = ctx.cache_dir.join("envs").join(&name);
    let rel = format!("envs/{name}");
    // Built in place (tools such as venvs embed absolute paths); the
    // directory only counts once this node's row is committed, and a
    // leftover from a killed build is wiped here first.
    let tmp = final_dir.clone();
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join(".home")).map_err(|e| e.to_string())?;
    for (path, bytes) in &env.files {
        let dest = tmp.join(path);
        if let Some(p) = dest.parent() {
            std::fs::create_dir_all(p).map_err(|e| e.to_string())?;
        }
        std::fs::write(&dest, bytes).map_err(|e| e.to_string())?;
    }
    std::fs::create_dir_all(ctx.cache_dir.join("tmp")).map_err(|e| e.to_string())?;
    let scratch = tempfile::Builder::new()
        .prefix("setup-")
        .tempdir_in(ctx.cache_dir.join("tmp"))
        .map_err(|e| e.to_string())?;
    let log_path = scratch.path().join("log");
    let mut exit_code = Some(0);
    let setup = &env.params.setup;
    if !setup.is_empty() {
        let handle = EnvHandle::HostDir(tmp.clone());
        let spec = super::confine::spec(
            &env.params.confine,
            super::confine::Launch {
                command: format!("set -e\n{}", setup.join("\n")),
                tree: None,
                env: &handle,
                setup: true,
                scratch: scratch.path(),
                log_path: log_path.clone(),
                log_cap: 16 << 20,
                timeout: env.timeout,
                attempt: None,
                protect: Vec::new(),
                report_file: None,
                watch: Vec::new(),
            },
        )
        .map_err(|e| e.to_string())?;
        let out = assay_exec::run(&spec).await.map_err(|e| e.to_string())?;
        exit_code = if out.timed_out { None } else { out.exit_code };
    }
    let raw = std::fs::read(&log_path).unwrap_or_default();
    let (log, _) = super::redact::Redactor::new(&env.params.redact).redact(&raw);
    let log_digest = ctx.blobs.put(&log).map_err(|e| e.to_string())?;
    let ok = exit_code == Some(0);
    if !ok {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    let digest = if ok {
        dir_digest(&tmp).map_err(|e| e.to_string())?
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
        failed_command: None,
    }))
}

/// Bytes of setup output kept as the setup log.
const SETUP_LOG_CAP: u64 = 16 << 20;

/// A Docker environment: its image loaded back from the saved blob of a
/// record whose image is gone, or built (reused by the daemon when an image
/// of the same spec is there).
async fn docker_env(
    env: &Env,
    lost: Option<EnvRecord>,
    ctx: JobCtx,
) -> Result<Made<EnvRecord>, String> {
    let params = &env.params;
    let Some(settings) = params.confine.docker() else {
        return Err("not a docker environment".to_owned());
    };
    let docker = super::docker::client().await.map_err(|e| e.to_string())?;
    let gone = lost.as_ref().and_then(|r| r.image.clone());
    if let Some(old) = &lost
        && let (Some(id), Some(blob)) = (&old.image, &old.export)
    {
        match reload(docker, &ctx, blob).await {
            Ok(loaded) if loaded.as_str() == id => {
                eprintln!(
                    "{}: image {id} was gone from the Docker daemon; loaded back from its saved blob",
                    ctx.name
                );
                return Ok(made(old.clone()));
            }
            Ok(loaded) => eprintln!(
                "{}: the saved blob of image {id} loaded as {loaded}; rebuilding",
                ctx.name
            ),
            Err(e) => eprintln!(
                "{}: image {id} is gone and its saved blob cannot be loaded ({e}); rebuilding",
                ctx.name
            ),
        }
    }
    let spec = super::confine::image_spec(
        &params.confine,
        settings,
        &params.setup,
        &env.files,
        env.timeout,
        SETUP_LOG_CAP,
    );
    let base = docker
        .base_image(&settings.base_image)
        .await
        .map_err(|e| e.to_string())?;
    let redactor = super::redact::Redactor::new(&params.redact);
    let mut record = EnvRecord {
        dir: String::new(),
        ok: true,
        exit_code: Some(0),
        setup_log: String::new(),
        digest: String::new(),
        executor: Some("docker".into()),
        image: None,
        base_image: Some(base.to_string()),
        export: None,
        failed_command: None,
    };
    match docker.build_image(&spec).await {
        Ok(built) => {
            let (log, _) = redactor.redact(&built.setup_log);
            let log_digest = ctx.blobs.put(&log).map_err(|e| e.to_string())?;
            record.setup_log = log_digest.to_hex();
            record.image = Some(built.id.to_string());
            if params.export {
                let tar = docker
                    .save_image(&built.id)
                    .await
                    .map_err(|e| e.to_string())?;
                let blob = ctx.blobs.put(&tar).map_err(|e| e.to_string())?;
                record.export = Some(blob.to_hex());
            }
            if let Some(old) = gone {
                eprintln!(
                    "{}: image {old} was gone from the Docker daemon (not exported); rebuilt as {}: the runs in it run again",
                    ctx.name, built.id
                );
            }
        }
        Err(assay_docker::DockerError::Setup(failure)) => {
            // The failing command and its log are the environment's setup
            // log; every run in it reports `env_setup_failed`.
            let mut raw = failure.log.clone();
            raw.extend_from_slice(
                format!(
                    "
assay: {failure}
"
                )
                .as_bytes(),
            );
            let (log, _) = redactor.redact(&raw);
            let log_digest = ctx.blobs.put(&log).map_err(|e| e.to_string())?;
            record.ok = false;
            record.exit_code = if failure.timed_out {
                None
            } else {
                failure.exit_code
            };
            record.setup_log = log_digest.to_hex();
            record.failed_command = failure.command.clone();
            eprintln!(
                "{}: {failure}: its runs report env_setup_failed (setup log: `assay show {}`)",
                ctx.name, record.setup_log
            );
        }
        Err(e) => return Err(e.to_string()),
    }
    Ok(made(record))
}

/// Loads a saved image blob into the daemon.
async fn reload(
    docker: &assay_docker::Docker,
    ctx: &JobCtx,
    blob: &str,
) -> Result<assay_docker::ImageId, String> {
    let digest: assay_engine::Digest = blob.parse()?;
    let tar = ctx.blobs.get(&digest).map_err(|e| e.to_string())?;
    docker.load_image(tar).await.map_err(|e| e.to_string())
}

/// The record, with the blobs it names: its setup log and saved image.
fn made(record: EnvRecord) -> Made<EnvRecord> {
    let attachments = std::iter::once(&record.setup_log)
        .chain(&record.export)
        .filter_map(|d| d.parse::<assay_engine::Digest>().ok())
        .collect();
    Made {
        record,
        attachments,
    }
}

/// blake3 over a directory tree: every entry's relative path, type,
/// executable bit, and content (a link's target), in sorted order. Links are
/// never followed.
pub(crate) fn dir_digest(dir: &std::path::Path) -> std::io::Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut entries: Vec<(Vec<u8>, std::path::PathBuf)> = Vec::new();
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
