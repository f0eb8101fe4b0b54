//! `triage`: decides whether a candidate can become a task, and why not; splits
//! its diff into the **test patch** (paths matching the test rules) and the
//! **gold patch** (everything else). Both patches are git-apply compatible,
//! binary-safe, and keep renames; they are stored as blobs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NoInputs, NodeKind};
use crate::model::records::{Decision, TriageRecord};
use crate::run::error::{ErrorKind, NodeError};
// The globs are compiled by a rule of the core; runs and the layout name them here.
pub(crate) use crate::model::rules::policy::globset;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct TriageParams {
    pub(crate) repo: String,
    pub(crate) id: String,
    pub(crate) base: String,
    pub(crate) head: String,
    pub(crate) title: String,
    pub(crate) body: String,
    pub(crate) test_globs: Vec<String>,
    pub(crate) docs_globs: Vec<String>,
    pub(crate) max_files: usize,
}

pub(crate) struct Triage {
    pub(crate) params: TriageParams,
    /// Where the repository lives; not in the key (commit ids are).
    pub(crate) repo_path: PathBuf,
}

impl Kind for Triage {
    const NAME: &'static str = NodeKind::Triage.as_str();
    const VERSION: u32 = 1;
    type Params = TriageParams;
    type Inputs = NoInputs;
    type Record = TriageRecord;

    fn params(&self) -> &TriageParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        _: NoInputs,
        ctx: JobCtx,
    ) -> Result<Made<TriageRecord>, NodeError> {
        tokio::task::spawn_blocking(move || triage(&self.params, &self.repo_path, &ctx))
            .await
            .map_err(|e| NodeError::internal(format!("triage task: {e}")))?
    }
}

/// The globs were checked as the pipeline loaded (a bad one here is
/// assay's); the repository and its commits are the node's input.
fn triage(
    p: &TriageParams,
    repo_path: &Path,
    ctx: &JobCtx,
) -> Result<Made<TriageRecord>, NodeError> {
    let err = |kind, e: &dyn std::fmt::Display| NodeError::new(kind, format!("{}: {e}", p.id));
    let tests = globset(&p.test_globs).map_err(|e| err(ErrorKind::Internal, &e))?;
    let docs = globset(&p.docs_globs).map_err(|e| err(ErrorKind::Internal, &e))?;
    let source = assay_git::Source::open(repo_path).map_err(|e| err(ErrorKind::Input, &e))?;
    let changes = source
        .changed_paths(&p.base, &p.head)
        .map_err(|e| err(ErrorKind::Input, &e))?;
    let mut test_files = Vec::new();
    let mut gold_files = Vec::new();
    let mut all_docs = true;
    for c in &changes {
        let is_test =
            tests.is_match(&c.path) || c.old_path.as_deref().is_some_and(|o| tests.is_match(o));
        if is_test {
            test_files.push(c.path.clone());
        } else {
            gold_files.push(c.path.clone());
        }
        // A rename keeps both names in the patch: list the old one too.
        if let Some(old) = &c.old_path {
            if is_test {
                test_files.push(old.clone());
            } else {
                gold_files.push(old.clone());
            }
        }
        if !docs.is_match(&c.path) {
            all_docs = false;
        }
    }
    test_files.sort();
    test_files.dedup();
    gold_files.sort();
    gold_files.dedup();
    let (decision, detail) = if changes.is_empty() {
        (
            Decision::EmptyDiff,
            "the pull request changes no file".to_owned(),
        )
    } else if all_docs {
        (
            Decision::DocsOnly,
            format!(
                "all {} changed files are docs or release files",
                changes.len()
            ),
        )
    } else if test_files.is_empty() {
        (
            Decision::NoTestChange,
            "no changed path matches the test rules".to_owned(),
        )
    } else if gold_files.is_empty() {
        (
            Decision::NoCodeChange,
            "every changed path is a test".to_owned(),
        )
    } else if changes.len() > p.max_files {
        (
            Decision::TooManyFiles,
            format!(
                "{} files changed, the limit is {}",
                changes.len(),
                p.max_files
            ),
        )
    } else {
        (Decision::Eligible, String::new())
    };
    let mut record = TriageRecord {
        id: p.id.clone(),
        repo: p.repo.clone(),
        base: p.base.clone(),
        head: p.head.clone(),
        title: p.title.clone(),
        body: p.body.clone(),
        decision,
        detail,
        test_files,
        gold_files,
        test_patch: String::new(),
        gold_patch: String::new(),
        dataset: None,
    };
    let mut attachments = Vec::new();
    if record.eligible() {
        for (files, slot) in [
            (record.test_files.clone(), &mut record.test_patch),
            (record.gold_files.clone(), &mut record.gold_patch),
        ] {
            let patch = source
                .diff_patch(&p.base, &p.head, &files)
                .map_err(|e| err(ErrorKind::Input, &e))?;
            let digest = ctx
                .blobs
                .put(&patch)
                .map_err(|e| err(ErrorKind::Cache, &e))?;
            attachments.push(digest);
            *slot = digest.to_hex();
        }
    }
    Ok(Made {
        record,
        attachments,
    })
}
