//! The mined task source: per candidate of each `[[source]]`, its
//! environment, triage → three trees → `repeats` runs of each → screen →
//! one task per topic and track; and the app tasks on the first source.
//!
//! The graph is static: a declined candidate still has its nodes, which then
//! record "declined" in microseconds, so the DAG never depends on an output.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use assay_engine::NodeSpec;
use assay_git::TreeStore;

use super::envs::{EnvSettings, Envs, env_name, env_params};

use super::screening::{Screening, screening_nodes};
use super::source::{Cx, Laid, TaskSource};
use super::sources::{CandidateLine, open_source};
use crate::model::names;
use crate::model::rules::timeout::TimeoutRule;
use crate::nodes::adapter::{self, NoNames};
use crate::nodes::env::Env;
use crate::nodes::release;
use crate::nodes::task::{self, Task, TaskNames, TaskParams};
use crate::nodes::tree::State;
use crate::nodes::triage::{Triage, TriageParams};
use crate::pipeline::{Pipeline, SourceSettings};
use crate::run::error::StageError;
use crate::run::executor::Executors;

/// The `[[source]]`s' candidates and the app tasks; `None` without
/// sources (then no environment is resolved).
pub(super) struct Mined<'a, 'p>(pub(super) Option<&'a Envs<'p>>);

impl<'e> TaskSource<'e> for Mined<'e, '_> {
    fn lay_out(
        &self,
        cx: &Cx<'_>,
        out: &mut Vec<NodeSpec>,
        laid: &mut Laid<'e>,
        warnings: &mut Vec<String>,
    ) -> Result<(), StageError> {
        let (pipeline, settings) = (cx.pipeline, &cx.pipeline.settings);
        let Some(envs) = self.0 else {
            if !settings.apps.is_empty() {
                warnings.push(format!(
                    "warning: {} [[app]] task(s) not built: an app task is on the pipeline's first [[source]], and there is none",
                    settings.apps.len()
                ));
            }
            return Ok(());
        };
        let tree_store = TreeStore::open_or_init(&cx.store_dir).map_err(StageError::cache)?;
        let mut seen = HashSet::new();
        for (n, src) in settings.sources.iter().enumerate() {
            let env = envs.for_source(pipeline, src)?;
            let (source, candidates) = open_source(pipeline, src)?;
            tree_store
                .add_alternate(&source.objects_dir())
                .map_err(StageError::cache)?;
            if n == 0 {
                laid.apps = super::apps::control_nodes(
                    pipeline,
                    cx.executors,
                    (&source, env, &cx.redact),
                    &cx.store_dir,
                    out,
                    &mut laid.release,
                )?;
            }
            let repo = src.repo_of(source.path());
            for c in candidates {
                if seen.insert(c.id.clone()) {
                    candidate_nodes(cx, (src, &source, &repo, env), &c, out, laid)?;
                }
            }
        }
        check_topic_splits(pipeline, &seen)
    }
}

/// One candidate's nodes: its environment (once per distinct one), its
/// triage, its screening nodes and its tasks.
fn candidate_nodes<'e>(
    cx: &Cx<'_>,
    (src, source, repo, env): (
        &SourceSettings,
        &assay_git::Source,
        &str,
        &'e EnvSettings<'e>,
    ),
    c: &CandidateLine,
    out: &mut Vec<NodeSpec>,
    laid: &mut Laid<'e>,
) -> Result<(), StageError> {
    let settings = &cx.pipeline.settings;
    let test_globs = &settings.triage.test_globs;
    let cid = c.id.clone();
    let (env_params, files) = env_params(env, source, &c.base, &cx.redact)?;
    let env_name = env_name(&env_params);
    if !laid.env_of.contains_key(&env_name) {
        out.push(adapter::spec(
            env_name.clone(),
            Env::new(
                env_params,
                files,
                Duration::from_secs(env.timeout.max(600)),
                cx.cache_dir.to_owned(),
                cx.executors.clone(),
            ),
            NoNames {},
        ));
        laid.env_of.insert(env_name.clone(), env);
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
            store_dir: &cx.store_dir,
            repeats: settings.repeats,
            scope: settings.scope,
            redact: &cx.redact,
            watch: test_globs,
            executors: cx.executors,
        },
    );
    let tasks = Tasks {
        candidate: &cid,
        merged_at: c.merged_at,
        source: src,
        topics: settings.topics_of(&cid),
        statements: settings.statements.as_deref(),
        env,
        env_name: &env_name,
        triage: &triage_name,
        screen: &screen_name,
        repo,
        grade: &settings.grade,
        executors: cx.executors,
    };
    for (task_key, task_name) in task_nodes_of(out, &tasks) {
        laid.gold_trees
            .insert(task_key.0.clone(), names::tree(&cid, State::Gold));
        laid.task_nodes
            .insert(task_key, (task_name.clone(), env_name.clone()));
        laid.release
            .push(task_name, release::Input::Task(cid.clone()));
    }
    Ok(())
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

fn read_statement(dir: Option<&Path>, id: &str, ext: &str) -> Option<String> {
    std::fs::read_to_string(dir?.join(format!("{id}.{ext}"))).ok()
}
