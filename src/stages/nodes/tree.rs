//! `tree`: the exact file tree of one state of a candidate — the base commit,
//! plus the test patch, plus the gold patch — composed in assay's own object
//! store (`cache/git`, borrowing the source's objects through alternates). Its
//! output is the git tree id, a content digest: identical trees give identical
//! outputs, so the runs over them share keys.

use std::path::PathBuf;
use std::sync::Arc;

use assay_engine::{Digest, Job, JobCtx, JobError, JobFuture, Output};
use assay_git::{PatchStep, TreeStore};
use serde::Serialize;

use super::records::{Skip, TreeRecord, TriageRecord};

pub(crate) const KIND_VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum State {
    /// The base commit as it is.
    Base,
    /// Base + the hidden test patch: the empty-patch control.
    Test,
    /// Base + test patch + gold patch: the reference control.
    Gold,
}

impl State {
    pub(crate) const ALL: [State; 3] = [State::Base, State::Test, State::Gold];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Base => "base",
            State::Test => "test",
            State::Gold => "gold",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct TreeParams {
    pub(crate) state: State,
}

pub(crate) struct TreeJob {
    pub(crate) state: State,
    pub(crate) store_dir: PathBuf,
}

impl Job for TreeJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let state = self.state;
        let store_dir = self.store_dir.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || compose(state, &store_dir, &ctx))
                .await
                .map_err(|e| JobError::new(format!("tree task: {e}")))?
        })
    }
}

fn compose(state: State, store_dir: &std::path::Path, ctx: &JobCtx) -> Result<Output, JobError> {
    let err = |e: &dyn std::fmt::Display| JobError::new(format!("tree: {e}"));
    let triage: TriageRecord = serde_json::from_slice(&ctx.inputs[0]).map_err(|e| err(&e))?;
    let record = if !triage.eligible() {
        TreeRecord {
            tree: None,
            skipped: Some(Skip::Declined(triage.decision)),
        }
    } else {
        let store = TreeStore::open_or_init(store_dir).map_err(|e| err(&e))?;
        let mut steps = Vec::new();
        let patch = |label: &str, digest: &str| -> Result<PatchStep, JobError> {
            let d: Digest = digest.parse().map_err(|e: String| err(&e))?;
            Ok(PatchStep {
                label: label.to_owned(),
                patch: ctx.blobs.get(&d).map_err(|e| err(&e))?,
                exclude: Vec::new(),
            })
        };
        if state != State::Base {
            steps.push(patch("test_patch", &triage.test_patch)?);
        }
        if state == State::Gold {
            steps.push(patch("gold_patch", &triage.gold_patch)?);
        }
        match store.compose(&triage.base, &steps) {
            Ok(tree) => TreeRecord {
                tree: Some(tree),
                skipped: None,
            },
            Err(e) => TreeRecord {
                tree: None,
                skipped: Some(Skip::Unstaged(format!(
                    "cannot compose the {} state: {e}",
                    state.as_str()
                ))),
            },
        }
    };
    Ok(Output {
        bytes: serde_json::to_vec(&record).map_err(|e| err(&e))?,
        attachments: Vec::new(),
    })
}

pub(crate) fn job(state: State, store_dir: PathBuf) -> Arc<dyn Job> {
    Arc::new(TreeJob { state, store_dir })
}
