//! The Harbor task source: one `harbor_task` node per task folder of each
//! `[[harbor_dataset]]`, which screens the task as Harbor runs it. A
//! session on a reward-only task is graded by the task's own verifier
//! (`grading`); a Deep-SWE-shaped folder is an assay task too (`deepswe`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use assay_engine::NodeSpec;

use super::source::{Cx, HarborRef, Laid, TaskSource};
use crate::model::names;
use crate::nodes::adapter::{self, NoNames};
use crate::nodes::{release, task};
use crate::pipeline::Pipeline;
use crate::run::error::StageError;
use crate::run::executor::Executors;

/// The `[[harbor_dataset]]`s' task folders.
pub(super) struct HarborFolders;

impl<'e> TaskSource<'e> for HarborFolders {
    fn lay_out(
        &self,
        cx: &Cx<'_>,
        out: &mut Vec<NodeSpec>,
        laid: &mut Laid<'e>,
        warnings: &mut Vec<String>,
    ) -> Result<(), StageError> {
        laid.harbor = harbor_nodes(cx.pipeline, cx.executors, out, &mut laid.release, warnings)?;
        Ok(())
    }
}

/// One `harbor_task` node per task folder of each `[[harbor_dataset]]` (a
/// directory holding a `task.toml`), in folder order; the tasks by every
/// name a session may give them (`<dataset>/<folder>`, and its `[task]
/// name` unless another task has it).
fn harbor_nodes(
    pipeline: &Pipeline,
    executors: &Arc<Executors>,
    out: &mut Vec<NodeSpec>,
    release: &mut release::ReleaseInputs,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, HarborRef>, StageError> {
    let mut by_id = BTreeMap::new();
    let mut by_name: BTreeMap<String, Vec<HarborRef>> = BTreeMap::new();
    for (dataset, dir) in &pipeline.settings.harbor_datasets {
        for path in harbor_folders(dir)? {
            let folder = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let files =
                crate::nodes::harbor_task::folder_files(&path).map_err(StageError::cache)?;
            let name = names::harbor_task(dataset, &folder);
            let mut task = HarborRef {
                node: name.clone(),
                id: format!("{dataset}/{folder}"),
                path: path.clone(),
                files: files.clone(),
                network: Default::default(),
            };
            match crate::run::harbor::screen::TaskToml::read(&path) {
                Ok(toml) => {
                    task.network = toml.network;
                    if let Some(harbor_name) = toml.name {
                        by_name.entry(harbor_name).or_default().push(task.clone());
                    }
                }
                Err(e) => warnings.push(task_toml_warning(pipeline, &path, e)),
            }
            let network = task.network;
            by_id.insert(task.id.clone(), task);
            out.push(adapter::spec(
                name.clone(),
                crate::nodes::harbor_task::HarborTask {
                    params: crate::nodes::harbor_task::HarborTaskParams {
                        dataset: dataset.clone(),
                        folder,
                        files,
                        network,
                        repeats: pipeline.settings.repeats,
                    },
                    path,
                    executors: executors.clone(),
                },
                NoNames {},
            ));
            release.push(name, release::Input::HarborTask);
        }
    }
    let mut all = by_id.clone();
    for (name, mut tasks) in by_name {
        if tasks.len() == 1 && !by_id.contains_key(&name) {
            all.insert(name, tasks.remove(0));
        }
    }
    Ok(all)
}

/// A task folder whose `task.toml` does not read, as the console shows
/// it: a diagnostic naming the file (relative to the pipeline) and
/// pointing at the value.
fn task_toml_warning(
    pipeline: &Pipeline,
    folder: &Path,
    e: crate::run::harbor::task_toml::TaskTomlError,
) -> String {
    let file = folder.join("task.toml");
    let shown = file.strip_prefix(&pipeline.root).unwrap_or(&file);
    let e = e.named(&shown.display().to_string());
    let mut out = String::new();
    let handler =
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor());
    if handler.render_report(&mut out, &e).is_err() {
        out = format!("warning: {e}");
    }
    out.trim_end().to_owned()
}

/// The task folders of a `[[harbor_dataset]]`'s directory (each holding a
/// `task.toml`), sorted.
pub(super) fn harbor_folders(dir: &Path) -> Result<Vec<std::path::PathBuf>, StageError> {
    let mut folders: Vec<_> = std::fs::read_dir(dir)
        .map_err(StageError::cache)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("task.toml").is_file())
        .collect();
    folders.sort();
    Ok(folders)
}

/// Each Harbor task folder's newest change (`<dataset>/<folder>` -> ISO
/// 8601): the date of a task and a release that no merge dates. In a
/// clean git checkout of the dataset, the folder's last commit (the same
/// in every clone); else its files' newest modification time.
pub(super) fn harbor_changed(pipeline: &Pipeline) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (dataset, dir) in &pipeline.settings.harbor_datasets {
        let committed = committed_folders(dir);
        for path in harbor_folders(dir).unwrap_or_default() {
            let folder = path.file_name().unwrap_or_default().to_string_lossy();
            let secs = match &committed {
                Some(dates) => dates.get(folder.as_ref()).copied(),
                None => crate::nodes::harbor_task::newest_change(&path),
            };
            if let Some(secs) = secs {
                out.insert(format!("{dataset}/{folder}"), task::iso8601(secs));
            }
        }
    }
    out
}

/// The last commit date (seconds) of each folder of `dir`, when `dir` is in
/// a git work tree with nothing changed or untracked under it; None
/// otherwise (not a repository, or a change the commits do not date).
fn committed_folders(dir: &Path) -> Option<BTreeMap<String, i64>> {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let changed = git(&["status", "--porcelain", "--untracked-files=all", "--", "."])?;
    if !changed.trim().is_empty() {
        return None;
    }
    let log = git(&[
        "log",
        "--format=%x00%ct",
        "--name-only",
        "--relative",
        "--",
        ".",
    ])?;
    let mut dates = BTreeMap::new();
    let mut at = None;
    for line in log.lines() {
        if let Some(secs) = line.strip_prefix('\0') {
            at = secs.trim().parse::<i64>().ok();
        } else if let (Some(secs), Some(folder)) = (at, line.split('/').next())
            && !line.is_empty()
        {
            // Newest first: a folder's first line is its last commit.
            dates.entry(folder.to_owned()).or_insert(secs);
        }
    }
    (!dates.is_empty()).then_some(dates)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    /// A dataset in a clean git checkout is dated by its folders' last
    /// commits (the same in every clone, whatever the files' times); a
    /// change under it falls back to the files' times.
    #[test]
    fn a_committed_dataset_is_dated_by_its_folders_last_commits() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        let git = |args: &[&str], date: &str| {
            let out = Command::new("git")
                .args(args)
                .current_dir(repo)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_AUTHOR_NAME", "a")
                .env("GIT_AUTHOR_EMAIL", "a@x")
                .env("GIT_COMMITTER_NAME", "a")
                .env("GIT_COMMITTER_EMAIL", "a@x")
                .env("GIT_AUTHOR_DATE", date)
                .env("GIT_COMMITTER_DATE", date)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
        };
        git(&["init", "-q"], "");
        let dataset = repo.join("tb");
        for (folder, date) in [("a", "1700000000 +0000"), ("b", "1710000000 +0000")] {
            std::fs::create_dir_all(dataset.join(folder)).unwrap();
            std::fs::write(dataset.join(folder).join("task.toml"), folder).unwrap();
            git(&["add", "."], date);
            git(&["commit", "-qm", folder], date);
        }
        std::fs::write(dataset.join("a/instruction.md"), "x").unwrap();
        git(&["add", "."], "1720000000 +0000");
        git(&["commit", "-qm", "a again"], "1720000000 +0000");
        let dates = super::committed_folders(&dataset).unwrap();
        assert_eq!(
            dates.into_iter().collect::<Vec<_>>(),
            [
                ("a".to_owned(), 1_720_000_000),
                ("b".to_owned(), 1_710_000_000)
            ]
        );
        std::fs::write(dataset.join("b/new.txt"), "untracked").unwrap();
        assert_eq!(super::committed_folders(&dataset), None);
        assert_eq!(
            super::committed_folders(tmp.path().join("nowhere").as_path()),
            None
        );
    }
}
