//! Lays out the benchmark's nodes: per candidate, triage → three trees →
//! `repeats` runs of each → screen → one task per topic and track; one env
//! node per distinct env key (each source's tasks in its own environment,
//! see `envs`); one release node over every task.
//!
//! The graph is static: a declined candidate still has its nodes, which then
//! record "declined" in microseconds, so the DAG never depends on an output.
//! Sources are read in `sources`, the grading nodes laid out in `grading`.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use assay_engine::{NodeSpec, Store, encode_params};
use assay_git::TreeStore;

use super::envs::EnvSettings;
pub(crate) use super::envs::env_params;
use super::grading::{GradeLayout, HarborRef, grade_nodes};
use super::instances::{InstanceTask, by_instance_id, funnel_rows, instance_nodes, instance_tasks};
use super::screening::{ImageTask, Screening, SweLaid, screening_nodes};
use super::sources::open_source;
use crate::model::names;
use crate::model::rules::timeout::TimeoutRule;
use crate::nodes::adapter::{self, NoNames};
use crate::nodes::env::{Env, EnvParams};
use crate::nodes::task::{Task, TaskNames, TaskParams};
use crate::nodes::tree::State;
use crate::nodes::triage::{Triage, TriageParams};
use crate::nodes::{release, task};
use crate::pipeline::Pipeline;
use crate::release::Price;
use crate::run::error::StageError;
use crate::run::executor::Executors;
use crate::run::redact::RedactConfig;

/// Every node of the benchmark part of the pipeline, appended to `out`.
/// Returns the confinements of the executors in use (one per setting), and
/// which executor each environment node's runs go to.
pub(crate) fn nodes(
    pipeline: &Pipeline,
    store: &Store,
    executors: &Arc<Executors>,
    out: &mut Vec<NodeSpec>,
    warnings: &mut Vec<String>,
) -> Result<crate::run::executor::InUse, StageError> {
    let settings = &pipeline.settings;
    if settings.sources.is_empty() {
        if !settings.apps.is_empty() {
            warnings.push(format!(
                "warning: {} [[app]] task(s) not built: an app task is on the pipeline's first [[source]], and there is none",
                settings.apps.len()
            ));
        }
        // A pipeline of Harbor datasets alone: their tasks, the sessions on
        // them, and the release.
        let mut release_inputs = release::ReleaseInputs::default();
        let swe = swe_folders(pipeline)?;
        let swe_envs: Vec<EnvSettings<'_>> = swe.iter().map(SweFolder::settings).collect();
        let rows = instance_tasks(pipeline)?;
        let row_envs: Vec<EnvSettings<'_>> = rows.iter().map(InstanceTask::settings).collect();
        let harbor = harbor_nodes(pipeline, executors, out, &mut release_inputs, warnings)?;
        if !harbor.is_empty() || !rows.is_empty() {
            let cache_dir = store.dir();
            let redact = RedactConfig {
                patterns: settings.redact_patterns.clone(),
                env: settings.redact_env.clone(),
            };
            let store_dir = cache_dir.join("git");
            let mut laid = SweLaid::default();
            swe_nodes(
                pipeline,
                executors,
                (&swe, &swe_envs),
                (&store_dir, &redact),
                out,
                &mut release_inputs,
                &mut laid,
            );
            instance_nodes(
                pipeline,
                executors,
                (&rows, &row_envs),
                (&store_dir, &redact),
                out,
                &mut release_inputs,
                &mut laid,
            );
            let ctx = GradeLayout {
                test_globs: &settings.triage.test_globs,
                env_of: &laid.env_of,
                redact: &redact,
                store_dir: &store_dir,
                task_nodes: &laid.task_nodes,
                gold_trees: &laid.gold_trees,
                harbor: &harbor,
                instance_tasks: &by_instance_id(&rows),
                apps: &BTreeMap::new(),
                cache_dir,
                executors,
            };
            graded_release(
                pipeline,
                store,
                (&ctx, &rows),
                out,
                release_inputs,
                warnings,
            )?;
        }
        return Ok(Default::default());
    }
    let envs = super::envs::Envs::resolve(pipeline, executors, warnings)?;
    // Every source's environment is checked before any source is read.
    let in_use = envs.executors(pipeline, &settings.sources)?;
    let cache_dir = store.dir();
    let store_dir = cache_dir.join("git");
    let tree_store = TreeStore::open_or_init(&store_dir).map_err(StageError::cache)?;
    let test_globs = &settings.triage.test_globs;
    let repeats = settings.repeats;
    let redact = RedactConfig {
        patterns: settings.redact_patterns.clone(),
        env: settings.redact_env.clone(),
    };
    let statements_dir = settings.statements.as_deref();
    let swe = swe_folders(pipeline)?;
    let swe_envs: Vec<EnvSettings<'_>> = swe.iter().map(SweFolder::settings).collect();
    let rows = instance_tasks(pipeline)?;
    let row_envs: Vec<EnvSettings<'_>> = rows.iter().map(InstanceTask::settings).collect();

    let watch = test_globs.clone();

    let mut env_nodes: HashSet<String> = HashSet::new();
    // (instance_id, track) -> (task node, env node)
    let mut task_nodes: BTreeMap<(String, String), (String, String)> = BTreeMap::new();
    // instance id -> its gold tree node
    let mut gold_trees: BTreeMap<String, String> = BTreeMap::new();
    // env node -> its settings, for the grading nodes.
    let mut env_of = BTreeMap::new();
    let mut release_inputs = release::ReleaseInputs::default();
    let mut seen_candidates = HashSet::new();
    let mut apps = BTreeMap::new();
    for (n, src) in settings.sources.iter().enumerate() {
        let env = envs.for_source(pipeline, src)?;
        let (source, candidates) = open_source(pipeline, src)?;
        let repo = src.repo_of(source.path());
        tree_store
            .add_alternate(&source.objects_dir())
            .map_err(StageError::cache)?;
        if n == 0 {
            apps = super::apps::control_nodes(
                pipeline,
                executors,
                (&source, env, &redact),
                &store_dir,
                out,
                &mut release_inputs,
            )?;
        }
        for c in candidates {
            if !seen_candidates.insert(c.id.clone()) {
                continue;
            }
            let cid = c.id.clone();
            let (env_params, files) = env_params(env, &source, &c.base, &redact)?;
            let env_name = env_name(&env_params);
            if env_nodes.insert(env_name.clone()) {
                out.push(adapter::spec(
                    env_name.clone(),
                    Env::new(
                        env_params,
                        files,
                        Duration::from_secs(env.timeout.max(600)),
                        cache_dir.to_owned(),
                        executors.clone(),
                    ),
                    NoNames {},
                ));
                env_of.insert(env_name.clone(), env);
            }
            let triage_name = names::triage(&cid);
            let tp = TriageParams {
                repo: src.name.get_ref().clone(),
                id: cid.clone(),
                base: c.base.clone(),
                head: c.head.clone(),
                title: c.title.clone(),
                body: c.body.clone(),
                test_globs: test_globs.clone(),
                docs_globs: settings.triage.docs_globs.clone(),
                max_files: settings.triage.max_files,
            };
            out.push(adapter::spec(
                triage_name.clone(),
                Triage {
                    params: tp,
                    repo_path: source.path().to_owned(),
                },
                NoNames {},
            ));
            let screen_name = screening_nodes(
                out,
                &Screening {
                    candidate: &cid,
                    triage: &triage_name,
                    env,
                    env_name: &env_name,
                    store_dir: &store_dir,
                    repeats,
                    scope: settings.scope,
                    redact: &redact,
                    watch: &watch,
                    executors,
                },
            );
            let tasks = Tasks {
                candidate: &cid,
                merged_at: c.merged_at,
                source: src,
                topics: settings.topics_of(&cid),
                statements: statements_dir,
                env,
                env_name: &env_name,
                triage: &triage_name,
                screen: &screen_name,
                repo: &repo,
                grade: &settings.grade,
                executors,
            };
            for (task_key, task_name) in task_nodes_of(out, &tasks) {
                gold_trees.insert(task_key.0.clone(), names::tree(&cid, State::Gold));
                task_nodes.insert(task_key, (task_name.clone(), env_name.clone()));
                release_inputs.push(task_name, release::Input::Task(cid.clone()));
            }
        }
    }
    check_topic_splits(pipeline, &seen_candidates)?;
    let harbor = harbor_nodes(pipeline, executors, out, &mut release_inputs, warnings)?;
    let mut laid = SweLaid {
        env_of,
        task_nodes,
        gold_trees,
    };
    swe_nodes(
        pipeline,
        executors,
        (&swe, &swe_envs),
        (&store_dir, &redact),
        out,
        &mut release_inputs,
        &mut laid,
    );
    instance_nodes(
        pipeline,
        executors,
        (&rows, &row_envs),
        (&store_dir, &redact),
        out,
        &mut release_inputs,
        &mut laid,
    );
    let SweLaid {
        env_of,
        task_nodes,
        gold_trees,
    } = laid;
    let ctx = GradeLayout {
        test_globs,
        env_of: &env_of,
        redact: &redact,
        store_dir: &store_dir,
        task_nodes: &task_nodes,
        gold_trees: &gold_trees,
        harbor: &harbor,
        instance_tasks: &by_instance_id(&rows),
        apps: &apps,
        cache_dir,
        executors,
    };
    graded_release(
        pipeline,
        store,
        (&ctx, &rows),
        out,
        release_inputs,
        warnings,
    )?;
    let env_nodes = env_of
        .iter()
        .map(|(name, env)| (name.clone(), env.confine.executor.kind()))
        .collect();
    Ok(crate::run::executor::InUse {
        confinements: in_use,
        env_nodes,
    })
}

/// What a candidate's tasks are laid out with.
struct Tasks<'a> {
    candidate: &'a str,
    merged_at: i64,
    source: &'a crate::pipeline::SourceSettings,
    /// The candidate's `[[topic_split]]` (empty: one task).
    topics: Vec<(String, String)>,
    statements: Option<&'a Path>,
    env: &'a EnvSettings<'a>,
    env_name: &'a str,
    triage: &'a str,
    screen: &'a str,
    /// SWE-bench's `repo` of the source's tasks.
    repo: &'a str,
    grade: &'a crate::pipeline::GradeSettings,
    executors: &'a Executors,
}

/// A candidate's tasks: one per topic (or one), on the basic track and, with
/// a spec statement, the spec track. Returns each task's (id, track) and
/// node name.
fn task_nodes_of(out: &mut Vec<NodeSpec>, t: &Tasks<'_>) -> Vec<((String, String), String)> {
    let (cid, src, env) = (t.candidate, t.source, t.env);
    let topics = &t.topics;
    let topic_list: Vec<Option<String>> = if topics.is_empty() {
        vec![None]
    } else {
        topics.iter().map(|(n, _)| Some(n.clone())).collect()
    };
    let mut laid = Vec::new();
    for topic in topic_list {
        let instance_id = match &topic {
            Some(t) => format!("{cid}-{t}"),
            None => cid.to_owned(),
        };
        let statement = read_statement(t.statements, &instance_id, "md");
        let spec = read_statement(t.statements, &instance_id, "spec.md");
        let mut tracks = vec![("basic", None)];
        if spec.is_some() {
            tracks.push(("spec", spec));
        }
        for (track, spec) in tracks {
            let params = TaskParams {
                instance_id: instance_id.clone(),
                track: track.to_owned(),
                statement: statement.clone(),
                spec,
                topic: topic.clone(),
                topics: topics.clone(),
                env: t.env_name.to_owned(),
                repo: t.repo.to_owned(),
                version: src.version.clone(),
                hints: read_statement(t.statements, &instance_id, "hints.md"),
                created_at: task::iso8601(t.merged_at),
                test_command: env.cfg.test_command.clone(),
                touched_command: env.touched_command.map(str::to_owned),
                log_parser: crate::run::swebench::log_parser(env.format).to_owned(),
                timeout: (t.grade.timeout_factor > 0).then_some(TimeoutRule {
                    factor: t.grade.timeout_factor,
                    floor_s: t.grade.timeout_floor,
                    ceiling_s: env.timeout,
                }),
            };
            let task_name = names::task(&instance_id, track);
            out.push(adapter::spec(
                task_name.clone(),
                Task(params),
                TaskNames {
                    triage: t.triage.to_owned(),
                    screen: t.screen.to_owned(),
                    certify: names::certify(t.candidate),
                    // The task records the image that certified it.
                    env: t
                        .executors
                        .of(&env.confine)
                        .env_is_artifact()
                        .then(|| t.env_name.to_owned()),
                },
            ));
            laid.push(((instance_id.clone(), track.to_owned()), task_name));
        }
    }
    laid
}

/// Every `[[topic_split]]` names a candidate of the sources (unless the
/// sources are bounded by since/limit, which may leave it out on purpose).
fn check_topic_splits(pipeline: &Pipeline, seen: &HashSet<String>) -> Result<(), StageError> {
    // With bounds (since/limit) a split may name a candidate left out on purpose.
    let settings = &pipeline.settings;
    let bounded = settings.sources.iter().any(|s| s.bounds.any());
    for t in &settings.topic_splits {
        if !bounded && !seen.contains(t.candidate.get_ref()) {
            return Err(pipeline
                .error_at(
                    t.candidate.span(),
                    format!("no candidate `{}` in the sources", t.candidate.get_ref()),
                    "not a candidate",
                    "candidate ids are `<source name>-<PR number>`; `assay plan --all` lists them",
                )
                .into());
        }
    }
    Ok(())
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
fn harbor_folders(dir: &Path) -> Result<Vec<std::path::PathBuf>, StageError> {
    let mut folders: Vec<_> = std::fs::read_dir(dir)
        .map_err(StageError::cache)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("task.toml").is_file())
        .collect();
    folders.sort();
    Ok(folders)
}

/// A Deep-SWE-shaped Harbor task folder that reads (docs/harbor.md,
/// "Deep-SWE tasks as assay tasks"), laid out as an assay task: its own
/// environment settings, on the docker executor.
struct SweFolder {
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

impl SweFolder {
    fn settings(&self) -> EnvSettings<'_> {
        EnvSettings {
            name: None,
            cfg: &self.cfg,
            format: self.format,
            timeout: self.timeout,
            log_cap: 64 << 20,
            confine: super::grading::image_confinement(&self.harbor_node),
            touched_command: None,
            export: false,
            rebuild: &self.rebuild,
        }
    }
}

/// Every Deep-SWE-shaped folder of the `[[harbor_dataset]]`s whose
/// `tests/config.json` reads (one that does not is uncertified by its
/// `harbor_task` alone).
fn swe_folders(pipeline: &Pipeline) -> Result<Vec<SweFolder>, StageError> {
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
            out.push(SweFolder {
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

/// Per Deep-SWE-shaped folder, the nodes of a mined task with the
/// folder's triage and environment in place of a source's: `swe_triage`
/// and `swe_env` (both over its `harbor_task`), the three trees,
/// `repeats` runs of each, the screen, the canaries' certification and
/// the task.
fn swe_nodes<'e>(
    pipeline: &Pipeline,
    executors: &Arc<Executors>,
    (swe, envs): (&[SweFolder], &'e [EnvSettings<'e>]),
    (store_dir, redact): (&Path, &RedactConfig),
    out: &mut Vec<NodeSpec>,
    release_inputs: &mut release::ReleaseInputs,
    laid: &mut SweLaid<'e>,
) {
    let settings = &pipeline.settings;
    for (t, env) in swe.iter().zip(envs) {
        let triage = names::swe_triage(&t.id);
        out.push(adapter::spec(
            triage.clone(),
            crate::nodes::swe_task::SweTriage {
                params: crate::nodes::swe_task::SweTriageParams {
                    id: t.id.clone(),
                    repo: t.repo.clone(),
                    files: t.files.clone(),
                },
                folder: t.path.clone(),
                store_dir: store_dir.to_owned(),
                executors: executors.clone(),
            },
            crate::nodes::swe_task::SweTriageNames {
                task: t.harbor_node.clone(),
            },
        ));
        let env_name = names::swe_env(&t.id);
        out.push(adapter::spec(
            env_name.clone(),
            crate::nodes::swe_task::SweEnv::new(
                crate::nodes::swe_task::ImageEnvParams {
                    confine: env.confine.clone(),
                    redact: redact.clone(),
                },
                store_dir.parent().unwrap_or(store_dir).to_owned(),
                executors.clone(),
            ),
            crate::nodes::swe_task::SweEnvNames {
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
            release: release::Input::SweTask,
        }
        .lay_out(
            (settings, executors),
            (store_dir, redact),
            out,
            release_inputs,
            laid,
        );
    }
}

/// The sessions' grading nodes, then the release node over them and
/// `release_inputs`, the `[[instances]]` rows counted in its funnel.
fn graded_release(
    pipeline: &Pipeline,
    store: &Store,
    (g, rows): (&GradeLayout<'_>, &[InstanceTask]),
    out: &mut Vec<NodeSpec>,
    mut release_inputs: release::ReleaseInputs,
    warnings: &mut Vec<String>,
) -> Result<(), StageError> {
    let ungraded = grade_nodes(pipeline, store, g, out, &mut release_inputs, warnings)?;
    out.push(release_node(
        pipeline,
        (ungraded, funnel_rows(rows)),
        release_inputs,
        warnings,
    ));
    Ok(())
}

/// The release node over every task, session, grade, metrics and judge reading.
fn release_node(
    pipeline: &Pipeline,
    (ungraded, instance_rows): (super::grading::Ungraded, Option<release::InstanceRows>),
    release_inputs: release::ReleaseInputs,
    warnings: &mut Vec<String>,
) -> NodeSpec {
    let prices: BTreeMap<String, Price> = pipeline
        .settings
        .prices
        .iter()
        .map(|(k, v)| (k.clone(), Price(v.clone())))
        .collect();
    let (release_deps, inputs) = release_inputs.split();
    let params = release::ReleaseParams {
        prices,
        not_graded: ungraded.not_graded,
        trials: ungraded.jobs,
        judges: crate::nodes::judge::release_info(pipeline, warnings),
        inputs,
        provenance: Some(crate::run::provenance::Provenance::of(&pipeline.text)),
        harbor_changed: harbor_changed(pipeline),
        instance_rows,
    };
    adapter::spec(
        names::RELEASE.into(),
        release::Release(params),
        release_deps,
    )
}

/// Each Harbor task folder's newest change (`<dataset>/<folder>` -> ISO
/// 8601): the date of a task and a release that no merge dates. In a
/// clean git checkout of the dataset, the folder's last commit (the same
/// in every clone); else its files' newest modification time.
fn harbor_changed(pipeline: &Pipeline) -> BTreeMap<String, String> {
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

fn read_statement(dir: Option<&Path>, id: &str, ext: &str) -> Option<String> {
    std::fs::read_to_string(dir?.join(format!("{id}.{ext}"))).ok()
}

/// The env node's name: its params' digest.
pub(crate) fn env_name(params: &EnvParams) -> String {
    names::env(&blake3::hash(&encode_params(params)))
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
