//! The Deep-SWE task source: a Deep-SWE-shaped Harbor task folder
//! (docs/harbor.md, "Deep-SWE tasks as assay tasks") is an assay task,
//! screened and graded in its own image beside its `harbor_task`.

use std::path::Path;

use assay_engine::NodeSpec;

use super::envs::EnvSettings;
use super::harbor::harbor_folders;
use super::screening::ImageTask;
use super::source::{Cx, Laid, TaskSource, image_confinement};
use crate::model::names;
use crate::nodes::adapter;
use crate::nodes::release;
use crate::pipeline::Pipeline;
use crate::run::error::StageError;

/// A Deep-SWE-shaped Harbor task folder that reads (docs/harbor.md,
/// "Deep-SWE tasks as assay tasks"), laid out as an assay task: its own
/// environment settings, on the docker executor.
pub(super) struct DeepSweFolder {
    /// `<dataset>/<folder>`: the candidate and the task's instance id.
    id: String,
    /// Its `harbor_task` node, which screened it as Harbor runs it.
    harbor_node: String,
    path: std::path::PathBuf,
    files: Vec<(String, u32, String)>,
    /// The environment's table as if written: the suites' test command and
    /// their merged report.
    cfg: crate::pipeline::EnvConfig,
    format: assay_report::Format,
    /// `[verifier] timeout_sec`.
    timeout: u64,
    /// `[metadata] repository_url` as SWE-bench's `owner/name`, else the
    /// dataset's name.
    repo: String,
    statement: Option<String>,
    rebuild: crate::model::rebuild::RebuildSpec,
}

impl DeepSweFolder {
    pub(super) fn settings(&self) -> EnvSettings<'_> {
        EnvSettings {
            name: None,
            cfg: &self.cfg,
            format: self.format,
            timeout: self.timeout,
            log_cap: 64 << 20,
            confine: image_confinement(&self.harbor_node, None),
            touched_command: None,
            export: false,
            rebuild: &self.rebuild,
        }
    }
}

/// Every Deep-SWE-shaped folder of the `[[harbor_dataset]]`s whose
/// `tests/config.json` reads (one that does not is uncertified by its
/// `harbor_task` alone).
pub(super) fn folders(pipeline: &Pipeline) -> Result<Vec<DeepSweFolder>, StageError> {
    let mut out = Vec::new();
    for (dataset, dir) in &pipeline.settings.harbor_datasets {
        for path in harbor_folders(dir)? {
            let Some(Ok(shape)) = crate::run::harbor::deepswe::Folder::detect(&path) else {
                continue;
            };
            let folder = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // One that does not read is uncertified by its `harbor_task`.
            let Ok(toml) = crate::run::harbor::screen::TaskToml::read(&path) else {
                continue;
            };
            let mut cfg: crate::pipeline::EnvConfig =
                toml::from_str("").map_err(StageError::cache)?;
            cfg.test_command = shape.test_command().unwrap_or_default();
            cfg.report_file =
                Some(crate::run::harbor::deepswe::report_file(shape.report).to_owned());
            cfg.serial = Some(false);
            let repo = repository(&path).unwrap_or_else(|| dataset.clone());
            out.push(DeepSweFolder {
                id: format!("{dataset}/{folder}"),
                harbor_node: names::harbor_task(dataset, &folder),
                files: crate::nodes::harbor_task::folder_files(&path).map_err(StageError::cache)?,
                statement: std::fs::read_to_string(path.join("instruction.md")).ok(),
                path,
                cfg,
                format: shape.report,
                timeout: toml.verifier_timeout.as_secs().max(1),
                repo,
                rebuild: Default::default(),
            });
        }
    }
    Ok(out)
}

/// `[metadata] repository_url` of a task folder as `owner/name`.
fn repository(folder: &Path) -> Option<String> {
    let text = std::fs::read_to_string(folder.join("task.toml")).ok()?;
    let v: toml::Value = toml::from_str(&text).ok()?;
    let url = v.get("metadata")?.get("repository_url")?.as_str()?;
    let path = url
        .trim_end_matches('/')
        .trim_end_matches(".git")
        .split("://")
        .last()?;
    let mut parts = path.rsplitn(3, '/');
    let (name, owner) = (parts.next()?, parts.next()?);
    Some(format!("{owner}/{name}"))
}

/// The Deep-SWE-shaped folders, each with its environment's settings.
pub(super) struct DeepSwe<'e> {
    pub(super) folders: &'e [DeepSweFolder],
    pub(super) envs: &'e [EnvSettings<'e>],
}

/// Per Deep-SWE-shaped folder, the nodes of a mined task with the
/// folder's triage and environment in place of a source's: `swe_triage`
/// and `swe_env` (both over its `harbor_task`), the three trees,
/// `repeats` runs of each, the screen, the canaries' certification and
/// the task.
impl<'e> TaskSource<'e> for DeepSwe<'e> {
    fn lay_out(
        &self,
        cx: &Cx<'_>,
        out: &mut Vec<NodeSpec>,
        laid: &mut Laid<'e>,
        _warnings: &mut Vec<String>,
    ) -> Result<(), StageError> {
        let (store_dir, redact, executors) = (&cx.store_dir, &cx.redact, cx.executors);
        for (t, env) in self.folders.iter().zip(self.envs) {
            let triage = names::deepswe_triage(&t.id);
            out.push(adapter::spec(
                triage.clone(),
                crate::nodes::swe_task::DeepSweTriage {
                    params: crate::nodes::swe_task::DeepSweTriageParams {
                        id: t.id.clone(),
                        repo: t.repo.clone(),
                        files: t.files.clone(),
                    },
                    folder: t.path.clone(),
                    store_dir: store_dir.to_owned(),
                    executors: executors.clone(),
                },
                crate::nodes::swe_task::DeepSweTriageNames {
                    task: t.harbor_node.clone(),
                },
            ));
            let env_name = names::harbor_image_env(&t.id);
            out.push(adapter::spec(
                env_name.clone(),
                crate::nodes::swe_task::HarborImageEnv::new(
                    crate::nodes::swe_task::ImageEnvParams {
                        confine: env.confine.clone(),
                        redact: redact.clone(),
                    },
                    store_dir.parent().unwrap_or(store_dir).to_owned(),
                    executors.clone(),
                ),
                crate::nodes::swe_task::HarborImageEnvNames {
                    task: t.harbor_node.clone(),
                },
            ));
            ImageTask {
                id: &t.id,
                triage: &triage,
                env_name: &env_name,
                env,
                statement: t.statement.clone(),
                repo: &t.repo,
                version: "0",
                release: release::Input::DeepSweTask,
            }
            .lay_out(cx, out, laid);
        }
        Ok(())
    }
}
