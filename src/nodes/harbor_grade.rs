//! `harbor_grade:<session>`: a session on a Harbor task of a
//! `[[harbor_dataset]]` (a session file, or an imported Harbor trial)
//! graded by the task's own verifier on the session's workspace diff, in a
//! fresh container of the task's screened environment
//! (`harbor::workspace`). Keyed by the session, the task folder's files
//! and the patch cap; its inputs are the session (its patch) and the
//! screened task (its image, whether it is certified). A task assay did
//! not certify grades nothing: its sessions are `not_graded`, with its
//! reasons. An attempt's workspace refused unread (over its read-back
//! bound) is `patch_apply_failed`, and a red grade of a run a witness saw
//! fail (`is_error`: the proxy's records, a Harbor job's controls) is the
//! infrastructure's, as in a grade of assay's.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use assay_engine::JobCtx;
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::blob;
use super::harbor_task::HarborTaskRecord;
use crate::model::records::{Fault, GradeRecord, LogTail, SessionRecord, Verdict};
use crate::pipeline::{Arm, Policy};
use crate::run::error::NodeError;
use crate::run::executor::Executors;
use crate::run::harbor::screen::TaskToml;
use crate::run::harbor::workspace;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct HarborGradeParams {
    pub(crate) session: String,
    /// `<dataset>/<folder>`: the task's id in the release.
    pub(crate) task: String,
    /// (path, mode, blake3) of every file of the task's folder, sorted: a
    /// changed verifier grades again.
    pub(crate) files: Vec<(String, u32, String)>,
    /// The network the task declares: the verifier's run has it when it is
    /// `public` (`harbor::screen::NetworkMode::runs_networked`).
    pub(crate) network: crate::run::harbor::screen::NetworkMode,
    /// `[grade] max_patch_bytes`: a larger patch is not applied.
    pub(crate) max_patch_bytes: u64,
}

super::adapter::inputs! {
    pub(crate) struct HarborGradeInputs / HarborGradeNames {
        session: SessionRecord,
        task: HarborTaskRecord,
    }
}

pub(crate) struct HarborGrade {
    pub(crate) params: HarborGradeParams,
    /// The task's folder (its files are in the key).
    pub(crate) folder: PathBuf,
    /// The working directory an imported trial's job collected (its files'
    /// digest is in the session's record, an input), graded in place of a
    /// patch.
    pub(crate) workspace: Option<PathBuf>,
    /// The verifier's container goes through the executors' daemon.
    pub(crate) executors: Arc<Executors>,
}

impl Kind for HarborGrade {
    const NAME: &'static str = NodeKind::HarborGrade.as_str();
    const VERSION: u32 = 3;
    /// The task's verifier run on the answer: read again with `--reread`,
    /// a reading that differs on re-execution is a new reading (a changed
    /// verdict is still a mismatch).
    const OBSERVATION: bool = true;
    type Params = HarborGradeParams;
    type Inputs = HarborGradeInputs;
    type Record = GradeRecord;

    fn params(&self) -> &HarborGradeParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: HarborGradeInputs,
        ctx: JobCtx,
    ) -> Result<Made<GradeRecord>, NodeError> {
        let patch = blob(&ctx, &i.session.patch)?;
        let task_digest = i.task.key.to_hex();
        let tmp = ctx.cache_dir.join("tmp");
        tokio::task::spawn_blocking(move || grade(&self, &i, &patch, task_digest, &tmp))
            .await
            .map_err(|e| NodeError::internal(format!("harbor grade: {e}")))?
            .map(Made::record)
    }
}

fn grade(
    node: &HarborGrade,
    i: &HarborGradeInputs,
    patch: &[u8],
    task_digest: String,
    tmp: &Path,
) -> Result<GradeRecord, NodeError> {
    let (p, session, task) = (&node.params, &i.session, &i.task);
    let mut record = GradeRecord {
        session: session.id.clone(),
        instance_id: p.task.clone(),
        track: session.track.clone(),
        task_digest,
        agent: session.agent.clone(),
        model: session.model.clone(),
        arm: Arm::SCORED,
        policy: Policy::None,
        verdict: Verdict::NotGraded,
        fault: Fault::None,
        detail: String::new(),
        failing: Vec::new(),
        not_run: Vec::new(),
        said: Default::default(),
        excluded_paths: Vec::new(),
        excluded_by: Default::default(),
        exit_code: None,
        base_check: "not run".into(),
        new_check: "not run".into(),
        base_exit: None,
        new_exit: None,
        reruns: 0,
        evidence: Vec::new(),
        redactions: 0,
        reset_paths: Vec::new(),
        tamper: Vec::new(),
        sandbox: crate::model::config::Sandbox::Docker,
        executor: Some(crate::model::config::ExecutorKind::Docker),
        image: task.environment.image.clone(),
        log_tail: None,
        unchecked: Some(
            "a Harbor task's own verifier: no canary of assay's is planted in it".into(),
        ),
        weakly_checked: None,
    };
    let image = match (task.certified, task.environment.image.as_deref()) {
        (true, Some(image)) => image,
        _ => {
            record.detail = format!(
                "the Harbor task {} is not certified: {}",
                p.task,
                task.uncertified_because.join("; ")
            );
            return Ok(record);
        }
    };
    // An attempt's workspace refused unread: no patch was taken.
    let graded: Result<workspace::Graded, String> = if let Some(why) = &session.facts.patch_refused
    {
        Err(format!("no patch was taken from the workspace: {why}"))
    } else if patch.len() as u64 > p.max_patch_bytes {
        Ok(workspace::Graded::PatchFailed(format!(
            "the patch is {} bytes, over the {} byte cap",
            patch.len(),
            p.max_patch_bytes
        )))
    } else {
        let toml = TaskToml::read(&node.folder).map_err(NodeError::input)?;
        let answer = match &node.workspace {
            Some(dir) => workspace::Answer::Tree(dir),
            None => workspace::Answer::Patch(patch),
        };
        // A blocking task: it waits on the daemon through the runtime's handle.
        Ok(tokio::runtime::Handle::current().block_on(workspace::grade(
            node.executors.daemon(),
            &node.folder,
            image,
            &toml,
            answer,
            tmp,
        )))
    };
    let (verdict, mut fault, mut detail) = match &graded {
        Ok(graded) => workspace::decide(graded),
        Err(refused) => (Verdict::PatchApplyFailed, Fault::Agent, refused.clone()),
    };
    crate::model::rules::verdict::blame_infrastructure(&mut fault, &mut detail, &session.facts);
    (record.verdict, record.fault, record.detail) = (verdict, fault, detail);
    if let Ok(workspace::Graded::Read(r)) = &graded {
        if verdict != Verdict::Resolved {
            record.failing = vec!["reward".into()];
        }
        if !r.tail.is_empty() {
            record.log_tail = Some(LogTail {
                of: "the task's verifier (test-stdout.txt)".into(),
                lines_omitted: 0,
                text: r.tail.clone(),
            });
        }
    }
    Ok(record)
}
