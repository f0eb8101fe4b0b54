//! The `[[instances]]` files laid out (docs/instances.md): per row that
//! reads, the nodes of a mined task with the instance's own in place of a
//! source's triage and environment — `instance`, `instance_triage` and
//! `instance_env` — then the three trees, `repeats` runs of each, the
//! screen, the canaries' certification and the task. A row that does not
//! read is one `instance` node that fails with the file, line and field,
//! and nothing hangs on it.

use std::collections::{BTreeMap, BTreeSet};

use assay_engine::NodeSpec;

use super::envs::EnvSettings;
use super::screening::ImageTask;
use super::source::{Cx, Laid, TaskSource, image_confinement};
use crate::model::config::SlurmSettings;
use crate::model::instances::{self, Family, ImageLayout, Instance, Place};
use crate::model::names;
use crate::nodes::adapter::{self, NoNames};
use crate::nodes::instance::{
    InstanceEnv, InstanceEnvNames, InstanceNode, InstanceParams, InstanceTriage,
    InstanceTriageNames, InstanceTriageParams,
};
use crate::nodes::release;
use crate::nodes::swe_task::ImageEnvParams;
use crate::pipeline::{InstancesSettings, Pipeline};
use crate::run::error::StageError;

/// SWE-bench's own timeout of an instance's tests (`run_evaluation`'s
/// default, 1,800 s).
const TIMEOUT_S: u64 = 1800;

/// One row of an instance file, laid out.
pub(super) struct InstanceTask {
    /// `<name>/<instance_id>`, or `<name>/line-<n>` for a row that does
    /// not read.
    id: String,
    dataset: String,
    family: Family,
    row: Result<Instance, String>,
    /// The environment's table as if written: the test command and report.
    cfg: crate::pipeline::EnvConfig,
    format: assay_report::Format,
    no_test_command: Option<String>,
    /// The test command, and where it came from, for the instance record.
    command: Option<instances::TestCommand>,
    rebuild: crate::model::rebuild::RebuildSpec,
}

impl InstanceTask {
    /// Its environment's settings: its runs in containers of its image,
    /// on this machine or on the nodes of the cluster `on_cluster` names.
    pub(super) fn settings(&self, on_cluster: Option<SlurmSettings>) -> EnvSettings<'_> {
        EnvSettings {
            name: None,
            cfg: &self.cfg,
            format: self.format,
            timeout: TIMEOUT_S,
            log_cap: 64 << 20,
            confine: image_confinement(&names::instance(&self.id), on_cluster),
            touched_command: None,
            export: false,
            rebuild: &self.rebuild,
        }
    }
}

/// Every row of every `[[instances]]` file, in file order.
pub(super) fn instance_tasks(pipeline: &Pipeline) -> Result<Vec<InstanceTask>, StageError> {
    let mut out = Vec::new();
    for file in &pipeline.settings.instances {
        let text = std::fs::read_to_string(&file.path).map_err(|e| {
            StageError::cache(format!(
                "cannot read the instance file {}: {e}",
                file.path.display()
            ))
        })?;
        let family = file
            .family
            .unwrap_or_else(|| Family::infer(instances::first_value(&text).as_ref()));
        let mut seen = BTreeSet::new();
        for (place, row) in instances::rows(&text) {
            let row = row
                .and_then(|r| match seen.insert(r.instance_id.clone()) {
                    true => Ok(r),
                    false => Err(instances::RowError {
                        place,
                        id: Some(r.instance_id.clone()),
                        field: "instance_id".to_owned(),
                        why: "is an instance id an earlier row has".to_owned(),
                    }),
                })
                .map_err(|e| format!("{}: {e}", file.path.display()));
            out.push(laid_row(file, family, place, row)?);
        }
    }
    Ok(out)
}

fn laid_row(
    file: &InstancesSettings,
    family: Family,
    place: Place,
    row: Result<Instance, String>,
) -> Result<InstanceTask, StageError> {
    let id = match &row {
        Ok(r) => format!("{}/{}", file.name, r.instance_id),
        Err(_) => format!("{}/{}", file.name, place.to_string().replace(' ', "-")),
    };
    let mut cfg: crate::pipeline::EnvConfig = toml::from_str("").map_err(StageError::cache)?;
    cfg.serial = Some(false);
    let mut format = assay_report::Format::Pytest;
    let mut no_test_command = None;
    let mut command = None;
    if let Ok(r) = &row {
        let test_files: Vec<String> = assay_git::patch_paths(r.test_patch.as_bytes())
            .map(|ps| ps.into_iter().map(|p| p.path).collect())
            .unwrap_or_default();
        match instances::test_command(r, &test_files, file.fallback.as_ref()) {
            Ok((spec, record)) => {
                cfg.test_command = test_command(&spec.command);
                format = spec.format;
                command = Some(record);
            }
            Err(why) => no_test_command = Some(why),
        }
    }
    Ok(InstanceTask {
        id,
        dataset: file.name.clone(),
        family,
        row,
        cfg,
        format,
        no_test_command,
        command,
        rebuild: Default::default(),
    })
}

/// Each instance id that reads, with the tasks of the rows holding it
/// (more than one: in more than one file), for predictions that name an
/// instance by its own id.
fn by_instance_id(rows: &[InstanceTask]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in rows {
        if let Ok(r) = &t.row {
            out.entry(r.instance_id.clone())
                .or_default()
                .push(t.id.clone());
        }
    }
    out
}

/// The rows, for the funnel: none without `[[instances]]` rows.
fn funnel_rows(rows: &[InstanceTask]) -> Option<release::InstanceRows> {
    (!rows.is_empty()).then(|| release::InstanceRows {
        rows: rows.len(),
        unreadable: rows
            .iter()
            .filter(|t| t.row.is_err())
            .map(|t| t.id.clone())
            .collect(),
    })
}

/// The command a run of an instance runs at the staged tree's root: the
/// image's environment read, SWE-bench's conda environment `testbed`
/// activated where the image has it, then the spec's command.
fn test_command(command: &str) -> String {
    let script = format!(
        "[ -f \"$ASSAY_ENV/image.env\" ] && . \"$ASSAY_ENV/image.env\"\n\
         if [ -f /opt/miniconda3/bin/activate ]; then . /opt/miniconda3/bin/activate && conda activate testbed; fi\n\
         {command}\n"
    );
    format!("bash -c {}", crate::model::shell::quote(&script))
}

/// The `[[instances]]` rows, each with its environment's settings.
pub(super) struct Instances<'e> {
    pub(super) rows: &'e [InstanceTask],
    pub(super) envs: &'e [EnvSettings<'e>],
}

/// Per instance, its nodes (module doc); the rows that do not read, their
/// failing `instance` node alone.
impl<'e> TaskSource<'e> for Instances<'e> {
    fn lay_out(
        &self,
        cx: &Cx<'_>,
        out: &mut Vec<NodeSpec>,
        laid: &mut Laid<'e>,
        _warnings: &mut Vec<String>,
    ) -> Result<(), StageError> {
        let (settings, executors) = (&cx.pipeline.settings, cx.executors);
        let (store_dir, redact) = (cx.store_dir.as_path(), &cx.redact);
        laid.instance_ids = by_instance_id(self.rows);
        laid.instance_rows = funnel_rows(self.rows);
        for (t, env) in self.rows.iter().zip(self.envs) {
            let instance = names::instance(&t.id);
            let names_tried = match &t.row {
                Ok(r) => t.family.image_names(r),
                Err(_) => Vec::new(),
            };
            out.push(adapter::spec(
                instance.clone(),
                InstanceNode {
                    params: InstanceParams {
                        dataset: t.dataset.clone(),
                        family: t.family,
                        row: t.row.clone(),
                        names: names_tried,
                        test_command: t.command.clone(),
                        layout: match &t.row {
                            Ok(r) => t.family.layout(&r.repo, &r.patch),
                            Err(_) => ImageLayout::default(),
                        },
                    },
                    executors: executors.clone(),
                },
                NoNames {},
            ));
            let Ok(row) = &t.row else { continue };
            let triage = names::instance_triage(&t.id);
            out.push(adapter::spec(
                triage.clone(),
                InstanceTriage {
                    params: InstanceTriageParams {
                        id: t.id.clone(),
                        row: row.clone(),
                        family: t.family,
                        no_test_command: t.no_test_command.clone(),
                    },
                    store_dir: store_dir.to_owned(),
                    executors: executors.clone(),
                },
                InstanceTriageNames {
                    instance: instance.clone(),
                },
            ));
            let env_name = names::instance_env(&t.id);
            out.push(adapter::spec(
                env_name.clone(),
                InstanceEnv::new(
                    ImageEnvParams {
                        confine: env.confine.clone(),
                        redact: redact.clone(),
                    },
                    store_dir.parent().unwrap_or(store_dir).to_owned(),
                    executors.clone(),
                ),
                InstanceEnvNames {
                    instance: instance.clone(),
                },
            ));
            ImageTask {
                id: &t.id,
                triage: &triage,
                env_name: &env_name,
                env,
                statement: Some(row.problem_statement.clone()),
                repo: &row.repo,
                version: &row.version,
                release: release::Input::InstanceTask,
            }
            .lay_out(cx, out, laid);
            // Each screening reading, for the dataset-health report's times.
            for (state, reading) in crate::nodes::screen::readings(settings.repeats) {
                laid.release.push(
                    names::screen_run(&t.id, state, reading),
                    release::Input::InstanceReading {
                        task: t.id.clone(),
                        state: state.as_str().to_owned(),
                        reading,
                    },
                );
            }
        }
        Ok(())
    }
}
