//! `env` (rebuild): prepares an environment directory once per env key — the
//! env spec plus the content of its key files at the base commit — so every task
//! with that key shares it, as `envs/<key>` in the cache. A failing setup is recorded (with
//! its log) as a failed environment, which runs report as `env_setup_failed`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use assay_engine::{Job, JobCtx, JobError, JobFuture, Output};
use serde::Serialize;

use super::records::EnvRecord;

/// 2: setup runs sandboxed, with the environment at `/assay/env`; its log
/// is redacted.
pub(super) const KIND_VERSION: u32 = 2;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct EnvParams {
    pub(crate) setup: Vec<String>,
    /// (path, blake3 of its content at the base commit, or "absent")
    pub(crate) key_files: Vec<(String, String)>,
    pub(crate) confine: super::confine::Confinement,
    pub(crate) redact: super::redact::RedactConfig,
}

pub(crate) struct EnvJob {
    pub(crate) params: EnvParams,
    /// The key files' bytes, written into the directory before setup runs.
    pub(crate) files: Vec<(String, Vec<u8>)>,
    pub(crate) timeout: Duration,
    pub(crate) cache_dir: PathBuf,
}

impl Job for EnvJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let setup = self.params.setup.clone();
        let confine = self.params.confine;
        let redact = self.params.redact.clone();
        let files = self.files.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            let err = |e: &dyn std::fmt::Display| JobError::new(format!("env: {e}"));
            let name = ctx.key.to_hex();
            let final_dir = ctx.cache_dir.join("envs").join(&name);
            let rel = format!("envs/{name}");
            // Built in place (tools such as venvs embed absolute paths); the
            // directory only counts once this node's row is committed, and a
            // leftover from a killed build is wiped here first.
            let tmp = final_dir.clone();
            let _ = std::fs::remove_dir_all(&tmp);
            std::fs::create_dir_all(tmp.join(".home")).map_err(|e| err(&e))?;
            for (path, bytes) in &files {
                let dest = tmp.join(path);
                if let Some(p) = dest.parent() {
                    std::fs::create_dir_all(p).map_err(|e| err(&e))?;
                }
                std::fs::write(&dest, bytes).map_err(|e| err(&e))?;
            }
            std::fs::create_dir_all(ctx.cache_dir.join("tmp")).map_err(|e| err(&e))?;
            let scratch = tempfile::Builder::new()
                .prefix("setup-")
                .tempdir_in(ctx.cache_dir.join("tmp"))
                .map_err(|e| err(&e))?;
            let log_path = scratch.path().join("log");
            let mut exit_code = Some(0);
            if !setup.is_empty() {
                let spec = super::confine::spec(
                    &confine,
                    super::confine::Launch {
                        command: format!("set -e\n{}", setup.join("\n")),
                        tree: None,
                        env_dir: &tmp,
                        setup: true,
                        scratch: scratch.path(),
                        log_path: log_path.clone(),
                        log_cap: 16 << 20,
                        timeout,
                        attempt: 0,
                    },
                )
                .map_err(|e| err(&e))?;
                let out = assay_exec::run(&spec).await.map_err(|e| err(&e))?;
                exit_code = if out.timed_out { None } else { out.exit_code };
            }
            let raw = std::fs::read(&log_path).unwrap_or_default();
            let (log, _) = super::redact::Redactor::new(&redact).redact(&raw);
            let log_digest = ctx.blobs.put(&log).map_err(|e| err(&e))?;
            let ok = exit_code == Some(0);
            if !ok {
                let _ = std::fs::remove_dir_all(&tmp);
            }
            let digest = if ok {
                dir_digest(&tmp).map_err(|e| err(&e))?
            } else {
                String::new()
            };
            let record = EnvRecord {
                dir: rel,
                ok,
                exit_code,
                setup_log: log_digest.to_hex(),
                digest,
            };
            Ok(Output {
                bytes: serde_json::to_vec(&record).map_err(|e| err(&e))?,
                attachments: vec![log_digest],
            })
        })
    }

    fn hit_valid(&self, output: &[u8]) -> bool {
        match serde_json::from_slice::<EnvRecord>(output) {
            Ok(r) => !r.ok || self.cache_dir.join(&r.dir).is_dir(),
            Err(_) => false,
        }
    }
}

pub(crate) fn job(
    params: EnvParams,
    files: Vec<(String, Vec<u8>)>,
    timeout: Duration,
    cache_dir: PathBuf,
) -> Arc<dyn Job> {
    Arc::new(EnvJob {
        params,
        files,
        timeout,
        cache_dir,
    })
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
