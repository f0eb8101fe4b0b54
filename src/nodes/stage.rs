//! `stage`: composes a session's graded tree for one arm — the base, the
//! session patch less what the arm leaves out, then the hidden test patch.
//! An adapter: it fetches the session patch once, reads it and the test
//! patch once, computes the arm's
//! [`Exclusion`](crate::model::rules::policy::Exclusion) once and composes what
//! [`staging`](crate::model::rules::staging) says.

use std::path::PathBuf;
use std::sync::Arc;

use assay_engine::JobCtx;
use assay_git::{ComposeError, TreeStore};
use serde::Serialize;

use super::adapter::{Kind, Made, NodeKind};
use super::blob;
use crate::model::records::{Arm, SessionRecord, Skip, TaskRecord, TreeRecord};
use crate::model::rules::policy::{
    Exclusion, PatchCaps, Policy, TestPatch, globset, session_paths_within,
};
use crate::model::rules::staging;
use crate::run::error::{Kinded, NodeError};

/// 2: the test patch's files are reset in every arm; a patch that is not a
/// diff fails to apply; the tests-and-infra policy.
/// 3: the record lists the hidden test files (`hidden`).
/// 4: paths as `git apply` reads them (a patch git reads otherwise is
/// `patch_apply_failed`); a hidden test file renamed away, deleted or put
/// in the way of is restored; the patch caps.
/// 5: the record carries the task's run timeout.
/// 6: Rust's and Go's build infrastructure (`build.rs`, `rust-toolchain`,
/// any `.cargo/config`, `go.work`) is test infrastructure.
pub(crate) const STAGE_VERSION: u32 = 6;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct StageParams {
    pub(crate) arm: Arm,
    pub(crate) policy: Policy,
    pub(crate) test_globs: Vec<String>,
    /// A larger session patch is refused before anything is staged.
    pub(crate) caps: PatchCaps,
    /// `[env] rebuild`, as the `tree` node keys it.
    #[serde(skip_serializing_if = "crate::model::rebuild::RebuildSpec::is_unset")]
    pub(crate) rebuild: crate::model::rebuild::RebuildSpec,
}

super::adapter::inputs! {
    pub(crate) struct StageInputs / StageNames { task: TaskRecord, session: SessionRecord }
}

/// Composes the graded tree: the base, the session patch less what the
/// arm leaves out, then the hidden test patch.
pub(crate) struct Stage {
    pub(crate) params: StageParams,
    pub(crate) store_dir: PathBuf,
}

impl Kind for Stage {
    const NAME: &'static str = NodeKind::Stage.as_str();
    const VERSION: u32 = STAGE_VERSION;
    type Params = StageParams;
    type Inputs = StageInputs;
    type Record = TreeRecord;

    fn params(&self) -> &StageParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: StageInputs,
        ctx: JobCtx,
    ) -> Result<Made<TreeRecord>, NodeError> {
        tokio::task::spawn_blocking(move || stage(&self.params, &self.store_dir, &i, &ctx))
            .await
            .map_err(|e| NodeError::internal(format!("stage task: {e}")))?
            .map(Made::record)
    }
}

fn stage(
    p: &StageParams,
    store_dir: &std::path::Path,
    i: &StageInputs,
    ctx: &JobCtx,
) -> Result<TreeRecord, NodeError> {
    let (task, session) = (&i.task, &i.session);
    if let Some(why) = staging::not_graded(task) {
        return Ok(staging::skipped(why));
    }
    if let Some(why) = &session.facts.patch_refused {
        return Ok(staging::skipped(Skip::PatchApplyFailed(why.clone())));
    }
    let patch = blob(ctx, &session.patch)?;
    let store = TreeStore::open_or_init(store_dir).cache()?;
    stage_patch(p, &store, task, patch).map(|(record, _)| record)
}

/// The graded tree of `patch` over `task` in `store` (a released task;
/// [`staging::not_graded`] is the caller's), and what the arm left out of
/// it. Shared with the Harbor verifier, which grades a workspace's diff
/// exactly so. A session's patch that does not apply is a record
/// (`patch_apply_failed`); the task's own test patch that does not is the
/// node's failure, of its input.
pub(crate) fn stage_patch(
    p: &StageParams,
    store: &TreeStore,
    task: &TaskRecord,
    patch: Vec<u8>,
) -> Result<(TreeRecord, Exclusion), NodeError> {
    let tests = globset(&p.test_globs).internal()?;
    let paths = match session_paths_within(&patch, p.caps) {
        Err(e) => {
            return Ok((
                staging::skipped(Skip::PatchApplyFailed(e)),
                Exclusion::default(),
            ));
        }
        Ok(paths) => paths,
    };
    let test_patch = TestPatch::read(task.test_patch.as_bytes());
    let exclusion = Exclusion::of(&paths, &test_patch, p.policy, &tests, &p.test_globs);
    let steps = staging::session_steps(patch, &paths, &exclusion, &task.test_patch);
    let mut record = staging::staged(
        store.compose(&task.base_commit, &steps),
        test_patch.hidden(),
    )
    .map_err(|e| match e {
        ComposeError::Git(_) => NodeError::cache(e),
        _ => NodeError::input(e),
    })?;
    if let Some(tree) = &record.tree {
        record.rebuild = super::tree::rebuilds(store, &task.base_commit, tree, &p.rebuild)?;
    }
    record.timeout_s = task.timeout_s;
    record.canaries = task.canaries.clone();
    Ok((record, exclusion))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::*;
    use crate::model::rules::task::eval_script;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "core.symlinks=true",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// Writes `files` (path, content; `None` removes the path, a content
    /// starting with `->` makes a symlink) into `dir`.
    fn write(dir: &Path, files: &[(&str, Option<&str>)]) {
        for (path, content) in files {
            let at = dir.join(path);
            if let Ok(meta) = std::fs::symlink_metadata(&at) {
                if meta.is_dir() {
                    std::fs::remove_dir_all(&at).expect("rm dir");
                } else {
                    std::fs::remove_file(&at).expect("rm");
                }
            }
            let Some(content) = content else { continue };
            std::fs::create_dir_all(at.parent().expect("a parent")).expect("mkdir");
            match content.strip_prefix("->") {
                Some(target) => std::os::unix::fs::symlink(target, &at).expect("symlink"),
                None => std::fs::write(&at, content).expect("write"),
            }
        }
    }

    /// The diff from `base` of `base` with `files` written, as `git diff`
    /// gives it.
    fn diff_of(repo: &Path, base: &str, files: &[(&str, Option<&str>)]) -> String {
        git(repo, &["checkout", "-q", "--detach", base]);
        write(repo, files);
        git(repo, &["add", "-A"]);
        git(repo, &["commit", "-q", "-m", "change"]);
        let patch = git(repo, &["diff", "--find-renames", base, "HEAD"]);
        git(repo, &["checkout", "-q", base]);
        patch
    }

    /// The published eval script resets the graded tree as assay stages
    /// it: for each session, SWE-bench's order (the session patch applied
    /// whole, then the script) tests the very tree the `keep` arm stages
    /// (base, the session patch less what reaches the test patch's files,
    /// the test patch) — for a test patch that edits, creates (in a new
    /// directory too), deletes and renames test files, and sessions that
    /// create the file the test patch creates (`alpha/calc-5` of the
    /// example: `git checkout <base> --` cannot reset a file the base does
    /// not have, and the hidden tests never ran), edit, delete, put a file
    /// or a symlink out of the tree where the test patch needs a directory,
    /// or a directory where it creates a file. The script removes nothing
    /// outside the tree, and leaves none of the test patch's files behind.
    #[test]
    fn the_eval_script_tests_the_tree_assay_stages() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).expect("mkdir");
        git(&repo, &["init", "-q"]);
        write(
            &repo,
            &[
                ("calc.py", Some("def f():\n    return 1\n")),
                ("tests/test_ops.py", Some("a\nb\nc\n")),
                ("tests/test_gone.py", Some("gone\n")),
                ("tests/test_old.py", Some("one\ntwo\nthree\nfour\nfive\n")),
            ],
        );
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "base"]);
        let base = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
        let test_patch = diff_of(
            &repo,
            &base,
            &[
                ("tests/test_ops.py", Some("a\nb\nc\nhidden\n")),
                ("tests/test_new.py", Some("hidden new\n")),
                ("tests/deep/test_deep.py", Some("hidden deep\n")),
                ("tests/test_gone.py", None),
                ("tests/test_old.py", None),
                (
                    "tests/test_renamed.py",
                    Some("one\ntwo\nthree\nfour\nfive\nsix\n"),
                ),
            ],
        );
        assert!(
            test_patch.contains("rename from tests/test_old.py"),
            "{test_patch}"
        );
        let victim = tmp.path().join("outside");
        write(&victim, &[("test_deep.py", Some("not the tree's\n"))]);
        let outside = format!("->{}", victim.display());
        let sessions: Vec<Vec<(&str, Option<&str>)>> = vec![
            vec![
                ("calc.py", Some("def f():\n    return 2\n")),
                ("tests/test_new.py", Some("the agent's own\n")),
            ],
            vec![
                ("tests/test_ops.py", Some("a\nb\nc\nmine\n")),
                ("tests/test_old.py", Some("one\n")),
                ("tests/test_gone.py", None),
                ("tests/test_renamed.py", Some("mine\n")),
            ],
            vec![
                ("tests/deep", Some("a file in the way\n")),
                ("tests/test_new.py/x.py", Some("a directory in the way\n")),
            ],
            vec![("tests/deep", Some(outside.as_str()))],
        ];
        let store = TreeStore::open_or_init(&tmp.path().join("store")).expect("store");
        store.add_alternate(&repo.join(".git")).expect("alternate");
        let params = StageParams {
            arm: Arm::Keep,
            policy: Policy::None,
            test_globs: vec!["tests/**".into()],
            caps: PatchCaps::default(),
            rebuild: Default::default(),
        };
        let task = TaskRecord {
            base_commit: base.clone(),
            test_patch: test_patch.clone(),
            ..TaskRecord::default()
        };
        for (n, files) in sessions.iter().enumerate() {
            let patch = diff_of(&repo, &base, files);
            let (staged, exclusion) =
                stage_patch(&params, &store, &task, patch.clone().into_bytes()).expect("stages");
            let staged = staged
                .tree
                .clone()
                .unwrap_or_else(|| panic!("session {n}: {staged:?}"));
            assert!(!exclusion.restored.is_empty(), "session {n}: {exclusion:?}");
            // SWE-bench: the session patch whole, then the eval script,
            // whose test command copies the tree it tests.
            let testbed = tmp.path().join(format!("testbed-{n}"));
            let tested = tmp.path().join(format!("tested-{n}"));
            git(
                tmp.path(),
                &[
                    "clone",
                    "-q",
                    &repo.display().to_string(),
                    &testbed.display().to_string(),
                ],
            );
            git(&testbed, &["checkout", "-q", &base]);
            let patch_file = tmp.path().join(format!("session-{n}.diff"));
            std::fs::write(&patch_file, &patch).expect("write");
            git(&testbed, &["apply", &patch_file.display().to_string()]);
            let script = eval_script(
                &base,
                &test_patch,
                &format!("cp -a . '{}'", tested.display()),
            )
            .replace("cd /testbed", &format!("cd '{}'", testbed.display()));
            let ran = Command::new("bash")
                .arg("-c")
                .arg(&script)
                .output()
                .expect("bash");
            let log = String::from_utf8_lossy(&ran.stderr);
            let copied = store.write_tree_of(&tested).expect("a tree");
            assert_eq!(
                copied, staged,
                "session {n}: the script tested another tree:\n{script}\n{log}"
            );
            assert!(
                victim.join("test_deep.py").exists(),
                "session {n}: the reset removed a file outside the tree\n{log}"
            );
            for created in [
                "tests/test_new.py",
                "tests/deep/test_deep.py",
                "tests/test_renamed.py",
            ] {
                assert!(
                    std::fs::symlink_metadata(testbed.join(created)).is_err(),
                    "session {n}: {created} left behind\n{log}"
                );
            }
        }
    }
}
