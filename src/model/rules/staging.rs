//! What a tree is composed of, and what a failed composition says: the
//! patches over the base commit for a screening state ([`State`]) or a
//! graded session ([`session_steps`]), and whose doing a patch that does
//! not apply is ([`staged`]). The `tree` and `stage` nodes compose in the
//! object store; the steps and the records are decided here.

use assay_git::{ComposeError, PatchPath, PatchStep};

pub(crate) use crate::model::names::State;

use super::policy::Exclusion;
use super::records::{Skip, TaskRecord, TaskStatus, TreeRecord, TriageRecord};

/// One patch of a composition, by the label its errors carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The session's patch, less what its arm leaves out.
    Session,
    /// The hidden test patch.
    TestPatch,
    /// The reference patch.
    GoldPatch,
}

impl Step {
    fn label(self) -> &'static str {
        match self {
            Step::Session => "session",
            Step::TestPatch => "test_patch",
            Step::GoldPatch => "gold_patch",
        }
    }

    /// The step, applying `patch` whole.
    pub(crate) fn of(self, patch: Vec<u8>) -> PatchStep {
        self.leaving_out(patch, Vec::new())
    }

    fn leaving_out(self, patch: Vec<u8>, exclude: Vec<String>) -> PatchStep {
        PatchStep {
            label: self.label().to_owned(),
            patch,
            exclude,
        }
    }

    fn is(self, label: &str) -> bool {
        label == self.label()
    }
}

impl State {
    /// The patches over the base commit, in order, each with the digest
    /// of its blob in the candidate's triage record.
    pub(crate) fn patches(self, triage: &TriageRecord) -> Vec<(Step, &str)> {
        let test = (Step::TestPatch, triage.test_patch.as_str());
        let gold = (Step::GoldPatch, triage.gold_patch.as_str());
        match self {
            State::Base => Vec::new(),
            State::Test => vec![test],
            State::Gold => vec![test, gold],
        }
    }

    /// The record of a state that could not be composed.
    pub(crate) fn unstaged(self, why: &dyn std::fmt::Display) -> TreeRecord {
        skipped(Skip::Unstaged(format!(
            "cannot compose the {} state: {why}",
            self.as_str()
        )))
    }
}

/// A tree record with no tree, and why.
pub(crate) fn skipped(why: Skip) -> TreeRecord {
    TreeRecord {
        tree: None,
        skipped: Some(why),
        hidden: Vec::new(),
        timeout_s: None,
        canaries: None,
        rebuild: Vec::new(),
    }
}

/// Why a session of `task` is not graded at all, if it is not: the task is
/// not released, or not certified.
pub(crate) fn not_graded(task: &TaskRecord) -> Option<Skip> {
    if task.certified && task.status == TaskStatus::Released {
        return None;
    }
    Some(Skip::NotGraded(format!(
        "task {} is {}",
        task.instance_id,
        if task.certified {
            task.status.as_str()
        } else {
            "uncertified"
        }
    )))
}

/// The steps of a graded tree: the session patch less what the arm leaves
/// out (no step when nothing of it is left), then the hidden test patch.
pub(crate) fn session_steps(
    patch: Vec<u8>,
    paths: &[PatchPath],
    exclusion: &Exclusion,
    test_patch: &str,
) -> Vec<PatchStep> {
    let mut steps = Vec::new();
    if !paths.is_empty() && !exclusion.leaves_nothing_of(paths) {
        steps.push(Step::Session.leaving_out(patch, exclusion.left_out.clone()));
    }
    steps.push(Step::TestPatch.of(test_patch.as_bytes().to_vec()));
    steps
}

/// The record of a graded tree's composition: the tree with its `hidden`
/// test files, or whose doing it is that there is none. An error of the
/// task's own test patch is no session's doing, nor a conflict with it:
/// nothing about it can be trusted, and the node fails with it (as does a
/// failure of the object store, [`ComposeError::Git`]).
pub(crate) fn staged(
    composed: Result<String, ComposeError>,
    hidden: Vec<String>,
) -> Result<TreeRecord, ComposeError> {
    Ok(match composed {
        Ok(tree) => TreeRecord {
            tree: Some(tree),
            skipped: None,
            hidden,
            timeout_s: None,
            canaries: None,
            rebuild: Vec::new(),
        },
        Err(ComposeError::Apply { label, stderr }) if Step::Session.is(&label) => {
            skipped(Skip::PatchApplyFailed(stderr.trim().to_owned()))
        }
        Err(ComposeError::Misread { label, reason }) if Step::Session.is(&label) => {
            skipped(Skip::PatchApplyFailed(reason))
        }
        Err(ComposeError::PathEscape { path, reason, .. }) => {
            skipped(Skip::PatchApplyFailed(format!("{path}: {reason}")))
        }
        Err(ComposeError::Apply { stderr, .. }) => {
            skipped(Skip::TestPatchConflict(stderr.trim().to_owned()))
        }
        Err(e) => return Err(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_adds_its_patches_in_order() {
        let triage = TriageRecord {
            id: "calc-2".into(),
            repo: "calc".into(),
            base: String::new(),
            head: String::new(),
            title: String::new(),
            body: String::new(),
            decision: super::super::records::Decision::Eligible,
            detail: String::new(),
            test_files: Vec::new(),
            gold_files: Vec::new(),
            test_patch: "t".into(),
            gold_patch: "g".into(),
            dataset: None,
        };
        let patches = |s: State| -> Vec<(&str, &str)> {
            s.patches(&triage)
                .into_iter()
                .map(|(step, d)| (step.label(), d))
                .collect()
        };
        assert_eq!(patches(State::Base), []);
        assert_eq!(patches(State::Test), [("test_patch", "t")]);
        assert_eq!(
            patches(State::Gold),
            [("test_patch", "t"), ("gold_patch", "g")]
        );
        assert_eq!(
            State::Gold.unstaged(&"boom").skipped,
            Some(Skip::Unstaged("cannot compose the gold state: boom".into()))
        );
    }

    #[test]
    fn only_a_released_certified_task_is_graded() {
        let mut task = TaskRecord {
            instance_id: "calc-3".into(),
            certified: true,
            ..TaskRecord::default()
        };
        assert_eq!(not_graded(&task), None);
        task.status = TaskStatus::AwaitingStatement;
        assert_eq!(
            not_graded(&task),
            Some(Skip::NotGraded("task calc-3 is awaiting_statement".into()))
        );
        task.certified = false;
        assert_eq!(
            not_graded(&task),
            Some(Skip::NotGraded("task calc-3 is uncertified".into()))
        );
    }

    #[test]
    fn a_session_left_out_whole_is_no_step() {
        let patch = b"--- /dev/null\n+++ b/tests/test_x.py\n@@ -0,0 +1 @@\n+x\n".to_vec();
        let paths = super::super::policy::session_paths(&patch).expect("a patch");
        let mut exclusion = Exclusion::default();
        let steps = session_steps(patch.clone(), &paths, &exclusion, "T");
        assert_eq!(steps.len(), 2);
        exclusion.left_out = vec!["tests/test_x.py".into()];
        let steps = session_steps(patch, &paths, &exclusion, "T");
        assert_eq!(steps, [Step::TestPatch.of(b"T".to_vec())]);
        assert_eq!(session_steps(Vec::new(), &[], &exclusion, "T").len(), 1);
    }

    /// The session's failures are the agent's; the test patch's conflict is
    /// ambiguous; anything else of the test patch fails the node.
    #[test]
    fn a_failed_composition_says_whose_doing_it_is() {
        let apply = |label: &str| ComposeError::Apply {
            label: label.into(),
            stderr: " conflict \n".into(),
        };
        let skip = |e| {
            staged(Err(e), Vec::new())
                .map(|r| r.skipped)
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            skip(apply("session")),
            Ok(Some(Skip::PatchApplyFailed("conflict".into())))
        );
        assert_eq!(
            skip(apply("test_patch")),
            Ok(Some(Skip::TestPatchConflict("conflict".into())))
        );
        let misread = |label: &str| ComposeError::Misread {
            label: label.into(),
            reason: "r".into(),
        };
        assert_eq!(
            skip(misread("session")),
            Ok(Some(Skip::PatchApplyFailed("r".into())))
        );
        assert!(skip(misread("test_patch")).is_err());
        let ok = staged(Ok("t".into()), vec!["tests/a.py".into()]).expect("a tree");
        assert_eq!((ok.tree.as_deref(), ok.hidden.len()), (Some("t"), 1));
    }
}
