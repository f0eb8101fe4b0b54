//! `session`: one agent attempt at one task, normalised from any input
//! format; its patch goes into the blob store, named by digest (the record's
//! `patch`), so the stage, grade, metrics and judge nodes read it by digest;
//! its transcript (redacted as the session was laid out), when the file
//! names one, likewise (`transcript`), for the report's transcript pages.

use std::sync::Arc;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NoInputs, NodeKind};
use crate::model::records::SessionRecord;
use crate::run::error::{Kinded, NodeError};

pub(crate) const SESSION_VERSION: u32 = 1;

/// The session node's params: the session with its patch's bytes (so the
/// key follows the patch), then why the file could not be read, if it
/// could not (the node then fails with it). The key's bytes are the
/// fields in this order: reordering them moves every session's key.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SessionParams {
    pub(crate) session: crate::sessions::Session<Vec<u8>>,
    pub(crate) error: Option<String>,
}

/// Normalises a session: its patch into the blob store, named by digest.
pub(crate) struct Session(pub(crate) SessionParams);

impl Kind for Session {
    const NAME: &'static str = NodeKind::Session.as_str();
    const VERSION: u32 = SESSION_VERSION;
    type Params = SessionParams;
    type Inputs = NoInputs;
    type Record = SessionRecord;

    fn params(&self) -> &SessionParams {
        &self.0
    }

    async fn run(
        self: Arc<Self>,
        _: NoInputs,
        ctx: JobCtx,
    ) -> Result<Made<SessionRecord>, NodeError> {
        let s = &self.0.session;
        if let Some(e) = &self.0.error {
            return Err(NodeError::input(format!("{}: {e}", s.id)));
        }
        let digest = ctx.blobs.put(&s.patch).cache()?;
        let mut attachments = vec![digest];
        let transcript = match &s.transcript {
            Some(bytes) => {
                let d = ctx.blobs.put(bytes).cache()?;
                attachments.push(d);
                Some(d.to_hex())
            }
            None => None,
        };
        Ok(Made {
            record: SessionRecord {
                patch: digest.to_hex(),
                id: s.id.clone(),
                task: s.task.clone(),
                track: s.track.clone(),
                agent: s.agent.clone(),
                model: s.model.clone(),
                facts: s.facts.clone(),
                transcript,
            },
            attachments,
        })
    }
}
