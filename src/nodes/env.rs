//! `env` (rebuild): prepares an environment once per env key — the env spec
//! plus the content of its key files at the base commit — so every task with
//! that key shares it. The executor prepares it (`executor`: a directory
//! `envs/<key>` of the cache, or an image named by its id) and says whether
//! a stored one is still there. A failing setup is recorded (with its log)
//! as a failed environment, which runs report as `env_setup_failed`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NoInputs, NodeKind};
use crate::model::records::EnvRecord;
use crate::run::executor::{Executors, Presence, Setup};

#[derive(Clone, Debug, Serialize)]
pub(crate) struct EnvParams {
    pub(crate) setup: Vec<String>,
    /// (path, blake3 of its content at the base commit, or "absent")
    pub(crate) key_files: Vec<(String, String)>,
    pub(crate) confine: crate::model::config::Confinement,
    pub(crate) redact: crate::run::redact::RedactConfig,
    /// Docker: save the image into the cache as a blob. Left out of the key
    /// when false, so a local key is what it always was.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) export: bool,
    /// Where it is set up and seen when not at `/assay/env` (an agent's
    /// tools: `/assay/agent`). Left out of the key when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) at: Option<String>,
    /// `[env] warm`: (variable, directory) of the toolchain caches setup
    /// warms. Left out of the key when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) warm: Vec<(String, String)>,
}

pub(crate) struct Env {
    pub(crate) params: EnvParams,
    /// The key files' bytes, written into the environment before setup runs.
    pub(crate) files: Vec<(String, Vec<u8>)>,
    pub(crate) timeout: Duration,
    pub(crate) cache_dir: PathBuf,
    /// A cached record turned down because its environment is gone: handed
    /// to the executor, which may restore it.
    pub(crate) lost: Mutex<Option<EnvRecord>>,
    pub(crate) executors: Arc<Executors>,
}

impl Env {
    pub(crate) fn new(
        params: EnvParams,
        files: Vec<(String, Vec<u8>)>,
        timeout: Duration,
        cache_dir: PathBuf,
        executors: Arc<Executors>,
    ) -> Env {
        Env {
            params,
            files,
            timeout,
            cache_dir,
            lost: Mutex::new(None),
            executors,
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

    async fn run(
        self: Arc<Self>,
        _: NoInputs,
        ctx: JobCtx,
    ) -> Result<Made<EnvRecord>, crate::run::error::NodeError> {
        let p = &self.params;
        let setup = Setup {
            commands: &p.setup,
            files: &self.files,
            timeout: self.timeout,
            redact: &p.redact,
            export: p.export,
            lost: self.lost.lock().unwrap_or_else(|p| p.into_inner()).take(),
            at: p.at.as_deref(),
            warm: &p.warm,
            writable: &[],
        };
        self.executors.of(&p.confine).prepare(setup, &ctx).await
    }

    fn refuse_hit(&self, output: &[u8]) -> Option<String> {
        let r = match serde_json::from_slice::<EnvRecord>(output) {
            Ok(r) => r,
            Err(e) => return Some(format!("its stored record does not read ({e})")),
        };
        if !r.ok {
            return None;
        }
        match self
            .executors
            .of(&self.params.confine)
            .present(&r, &self.cache_dir)
        {
            Presence::Present | Presence::Unknown => None,
            Presence::Gone => {
                let what = r.image.clone().unwrap_or_else(|| r.dir.clone());
                *self.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                Some(format!(
                    "the environment it names ({what}) is gone from its executor"
                ))
            }
        }
    }
}
