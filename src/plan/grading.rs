//! The grading part of the layout: per session a session node, then per arm
//! stage → run → grade, and one metrics node; all feed the release.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use assay_engine::{NodeSpec, Store};

use super::source::{Cx, HarborRef, Laid, image_confinement};
use crate::model::names;
use crate::model::records::TaskStatus;
use crate::nodes::adapter::{self, NoNames, NodeKind};
use crate::nodes::attempt;
use crate::nodes::grade::{self, GradeParams, Policy};
use crate::nodes::metrics::{self, MetricsParams};
use crate::nodes::quality::{self, QualityParams};
use crate::nodes::recheck::{self, RecheckParams};
use crate::nodes::release::Input;
use crate::nodes::release::ReleaseInputs;
use crate::nodes::run::{Run, RunNames, RunParams};
use crate::nodes::session::{self, SessionParams};
use crate::nodes::stage::{self, StageParams};
use crate::nodes::{harbor_grade, judge};
use crate::pipeline::Arm;
use crate::pipeline::Pipeline;
use crate::run::error::StageError;
use crate::run::redact::{RedactConfig, Redactor};
use crate::sessions::Session;

pub(crate) struct GradeLayout<'a> {
    pub(crate) test_globs: &'a [String],
    /// env node -> the settings of that environment.
    pub(crate) env_of: &'a BTreeMap<String, &'a super::envs::EnvSettings<'a>>,
    pub(crate) redact: &'a RedactConfig,
    pub(crate) store_dir: &'a Path,
    pub(crate) task_nodes: &'a BTreeMap<(String, String), (String, String)>,
    /// instance id -> its gold tree node (what `[[metric]]`s measure gold on).
    pub(crate) gold_trees: &'a BTreeMap<String, String>,
    /// The Harbor tasks, by every name a session may give them.
    pub(crate) harbor: &'a BTreeMap<String, HarborRef>,
    /// The `[[instances]]` tasks by the instance's own `instance_id`
    /// (`django__django-11099` -> `verified/django__django-11099`, one
    /// per file that holds the id).
    pub(crate) instance_tasks: &'a BTreeMap<String, Vec<String>>,
    /// The app tasks, by name.
    pub(crate) apps: &'a BTreeMap<String, super::apps::AppRef>,
    pub(crate) cache_dir: &'a Path,
    pub(crate) executors: &'a std::sync::Arc<crate::run::executor::Executors>,
}

impl<'a> GradeLayout<'a> {
    /// The layout of the tasks `laid`, in `cx`.
    pub(super) fn of(cx: &'a Cx<'a>, laid: &'a Laid<'a>) -> Self {
        GradeLayout {
            test_globs: &cx.pipeline.settings.triage.test_globs,
            env_of: &laid.env_of,
            redact: &cx.redact,
            store_dir: &cx.store_dir,
            task_nodes: &laid.task_nodes,
            gold_trees: &laid.gold_trees,
            harbor: &laid.harbor,
            instance_tasks: &laid.instance_ids,
            apps: &laid.apps,
            cache_dir: cx.cache_dir,
            executors: cx.executors,
        }
    }
}

/// What the grading layout leaves to the release besides its nodes.
#[derive(Default)]
pub(crate) struct Ungraded {
    /// The sessions that cannot be graded, with why.
    pub(crate) not_graded: Vec<(String, String)>,
    /// The Harbor jobs among the sessions, for the trial accounting.
    pub(crate) jobs: Vec<crate::sessions::harbor::JobTrials>,
}

/// Per session: a session node, then per arm stage → run → grade, and one
/// metrics node.
pub(crate) fn grade_nodes(
    pipeline: &Pipeline,
    store: &Store,
    g: &GradeLayout<'_>,
    out: &mut Vec<NodeSpec>,
    release: &mut ReleaseInputs,
    warnings: &mut Vec<String>,
) -> Result<Ungraded, StageError> {
    let previous_tasks = previous_task_keys(store);
    let mut released: Option<BTreeSet<String>> = None;
    let mut not_graded = Vec::new();
    let mut reviewable = Vec::new();
    let (sessions, mut jobs) = match &pipeline.settings.sessions {
        Some(dir) => crate::sessions::load_all(dir),
        None => {
            unread_sessions(pipeline, warnings);
            Default::default()
        }
    };
    for t in jobs.iter_mut().flat_map(|j| j.trials.values_mut()) {
        t.task_content = t
            .task_digest
            .as_deref()
            .and_then(|d| task_content(store, d));
    }
    let redactors = (
        Redactor::values(&RedactConfig {
            patterns: Vec::new(),
            env: secret_env(pipeline, g),
        }),
        Redactor::new(&RedactConfig {
            patterns: g.redact.patterns.clone(),
            env: secret_env(pipeline, g),
        }),
    );
    for loaded in sessions {
        let (s, file) = match loaded {
            Ok(parsed) => (parsed.session, parsed.file),
            Err(e) => {
                let id = e.id.clone();
                let why = e.message.clone();
                warnings.push(format!("{:?}", miette::Report::new(e)));
                not_graded.push((id.clone(), format!("unreadable session file: {why}")));
                out.push(failed_session_node(&id, why));
                continue;
            }
        };
        if let Some(models) = model_disagrees(&s.model, &s.facts.models) {
            warnings.push(format!(
                "warning: session {} ({}) is labelled model `{}`, but its transcript names {models}: reports group it under the label",
                s.id,
                file.display(),
                s.model
            ));
        }
        // A Harbor trial that kept no patch has nothing to grade: the
        // release accounts for it, with whose doing it is.
        if let Some(why) = s
            .facts
            .trial
            .as_ref()
            .and_then(crate::sessions::harbor::not_graded_because)
        {
            not_graded.push((s.id.clone(), why));
            continue;
        }
        let (mut task_id, track) = match named_task(g, &previous_tasks, &s) {
            Ok(named) => named,
            Err((short, why)) => {
                not_graded.push((s.id.clone(), short));
                out.push(failed_session_node(&s.id, why));
                continue;
            }
        };
        // A Deep-SWE-shaped Harbor task is an assay task too, whichever
        // name the session gives it: graded by assay, with the dataset's
        // own verifier's reading beside.
        let reading = g
            .harbor
            .get(&s.task)
            .filter(|h| g.task_nodes.contains_key(&(h.id.clone(), track.clone())));
        if let Some(h) = reading {
            task_id = h.id.clone();
        }
        let target = match g.task_nodes.get(&(task_id.clone(), track.clone())) {
            Some((task_node, env_node)) => Target::Task {
                id: &task_id,
                task_node,
                env_node,
                reading,
            },
            None => match (g.harbor.get(&s.task), g.apps.get(&s.task)) {
                (Some(h), _) => Target::RewardOnly(h),
                (None, Some(app)) => Target::App(app),
                (None, None) => {
                    let released = released.get_or_insert_with(|| released_tasks(store));
                    let unknown = Unknown {
                        session: &s.id,
                        file: &file,
                        task: &s.task,
                        track: &track,
                    };
                    let (why, failed) = unknown.refused(g, released, warnings);
                    not_graded.push((s.id.clone(), why));
                    out.extend(failed);
                    continue;
                }
            },
        };
        let workspace = trial_workspace(pipeline, &s);
        let id = s.id.clone();
        let session_node = session_node(s, target.task(), track, &redactors, out);
        release.push(session_node.clone(), Input::Session);
        grade_on(
            pipeline,
            g,
            &target,
            (&id, &session_node, workspace),
            out,
            release,
            &mut reviewable,
        );
    }
    attempt_nodes(pipeline, g, out, release, &mut reviewable);
    judge::nodes(pipeline, &reviewable, out, release)?;
    Ok(Ungraded { not_graded, jobs })
}

/// The task (id, track) a session names: its id, or a task node's key
/// of the last build, or a spec twin's SWE-bench instance id, or an
/// `[[instances]]` row's own instance id. Err (why in short, in full): an
/// instance id more than one `[[instances]]` file holds.
fn named_task(
    g: &GradeLayout<'_>,
    previous_tasks: &BTreeMap<String, String>,
    s: &Session<Vec<u8>, Option<String>>,
) -> Result<(String, String), (String, String)> {
    let mut track = s.track.clone().unwrap_or_else(|| "basic".into());
    let mut task_id = previous_tasks
        .get(&s.task)
        .cloned()
        .unwrap_or_else(|| s.task.clone());
    // A SWE-bench instance id of a spec twin (`calc-1__spec`) names the
    // task and its track; an explicit other track keeps the id as it is.
    if let Some((task, twin)) = crate::run::swebench::split_instance_id(&task_id)
        && s.track.as_deref().is_none_or(|t| t == twin)
    {
        (task_id, track) = (task.to_owned(), twin.to_owned());
    }
    // A SWE-bench prediction names an instance task by the instance's
    // own id; more than one `[[instances]]` file holding it fails the
    // session alone.
    if !g.task_nodes.contains_key(&(task_id.clone(), track.clone())) {
        match g.instance_tasks.get(&task_id).map(Vec::as_slice) {
            Some([task]) => task_id = task.clone(),
            Some(tasks @ [_, _, ..]) => {
                let why = format!(
                    "`{task_id}` is the instance id of {} [[instances]] tasks: {}; name one of them as the task",
                    tasks.len(),
                    quoted(tasks.iter())
                );
                return Err((format!("ambiguous instance id `{task_id}`"), why));
            }
            _ => {}
        }
    }
    Ok((task_id, track))
}

/// `a`, `b`: each name in backquotes.
fn quoted<S: std::fmt::Display>(names: impl Iterator<Item = S>) -> String {
    names
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A session naming a task this pipeline does not have.
struct Unknown<'s> {
    session: &'s str,
    file: &'s Path,
    task: &'s str,
    track: &'s str,
}

impl Unknown<'_> {
    /// Why the session is not graded, and its failing node. A pipeline of
    /// `[[instances]]` reads predictions by instance id: one that names
    /// none fails alone, with the nearest ids. Otherwise it is left out
    /// with a warning naming the nearest tasks of the last release (not
    /// every candidate: declined ones have a task id too).
    fn refused(
        &self,
        g: &GradeLayout<'_>,
        released: &BTreeSet<String>,
        warnings: &mut Vec<String>,
    ) -> (String, Option<NodeSpec>) {
        let (task, track) = (self.task, self.track);
        let near = crate::words::nearest(task, released.iter().map(String::as_str), 3);
        let why = format!("unknown task `{task}` ({track} track)");
        if !g.instance_tasks.is_empty() {
            let ids = g.instance_tasks.keys().map(String::as_str);
            let near_ids = crate::words::nearest(task, ids, 3);
            let candidates = match near_ids.iter().chain(&near).count() {
                0 => "no instance id or task is near it".to_owned(),
                _ => format!("candidates: {}", quoted(near_ids.iter().chain(&near))),
            };
            let detail = format!(
                "`{task}` ({track} track) is neither a task of this pipeline nor the instance id of an [[instances]] row; {candidates}"
            );
            return (why, Some(failed_session_node(self.session, detail)));
        }
        let hint = match near.as_slice() {
            [] => String::new(),
            some => format!(" (did you mean {}?)", quoted(some.iter())),
        };
        warnings.push(format!(
            "warning: session {} ({}) names task `{task}` ({track} track), which this pipeline does not release: not graded{hint}",
            self.session,
            self.file.display(),
        ));
        (why, None)
    }
}

/// What a session file or an attempt is graded on.
enum Target<'g> {
    /// A task of assay's, graded by assay; a Deep-SWE-shaped task's own
    /// verifier reads the session too, beside assay's verdict.
    Task {
        id: &'g str,
        task_node: &'g str,
        env_node: &'g str,
        reading: Option<&'g HarborRef>,
    },
    /// A reward-only Harbor task, graded by its own verifier.
    RewardOnly(&'g HarborRef),
    /// An app task.
    App(&'g super::apps::AppRef),
}

impl Target<'_> {
    /// The task its session node names.
    fn task(&self) -> String {
        match self {
            Target::Task { id, .. } => (*id).to_owned(),
            Target::RewardOnly(h) => h.id.clone(),
            Target::App(app) => app.settings.name.clone(),
        }
    }
}

/// The nodes that grade a session (a file's or an attempt's, its node
/// `session_node`) on `target`, all fed to the release.
fn grade_on(
    pipeline: &Pipeline,
    g: &GradeLayout<'_>,
    target: &Target<'_>,
    (id, session_node, workspace): (&str, &str, Option<std::path::PathBuf>),
    out: &mut Vec<NodeSpec>,
    release: &mut ReleaseInputs,
    reviewable: &mut Vec<judge::Reviewable>,
) {
    match *target {
        Target::Task {
            id: task,
            task_node,
            env_node,
            reading,
        } => {
            if let Some(h) = reading {
                harbor_verifier_node(
                    pipeline,
                    g,
                    h,
                    (session_node, workspace),
                    out,
                    (release, Input::DatasetReading),
                );
            }
            let graded = Graded {
                id,
                task,
                session_node,
                task_node,
                env_node,
            };
            graded_nodes(pipeline, g, graded, out, release, reviewable);
        }
        Target::RewardOnly(h) => harbor_verifier_node(
            pipeline,
            g,
            h,
            (session_node, workspace),
            out,
            (release, Input::Grade),
        ),
        Target::App(app) => {
            super::apps::session_nodes(app, id, session_node, g.store_dir, out, release);
        }
    }
}

/// The node of a session that cannot be graded: it fails alone, with why.
fn failed_session_node(id: &str, why: String) -> NodeSpec {
    let params = SessionParams {
        session: Session {
            id: id.to_owned(),
            task: String::new(),
            track: String::new(),
            agent: String::new(),
            model: String::new(),
            patch: Vec::new(),
            facts: Default::default(),
            transcript: None,
        },
        error: Some(why),
    };
    adapter::spec(names::session(id), session::Session(params), NoNames {})
}

/// A session's node, naming `task` and `track`; returns its name. A key in
/// a session's patch is no answer: the session node (its params, its blob)
/// holds the redacted bytes.
fn session_node(
    s: Session<Vec<u8>, Option<String>>,
    task: String,
    track: String,
    (patch_redactor, transcript_redactor): &(Redactor, Redactor),
    out: &mut Vec<NodeSpec>,
) -> String {
    // A key in a session's patch is no answer: the session node (its
    // params, its blob) holds the redacted bytes.
    let (patch, redacted) = patch_redactor.redact(&s.patch);
    // The transcript is shown in the report: every secret shape and value
    // out of it first.
    let transcript = s
        .transcript
        .as_deref()
        .map(|t| transcript_redactor.redact(t).0);
    let mut facts = s.facts;
    if redacted > 0 {
        facts.patch_redacted = Some(redacted);
    }
    let name = names::session(&s.id);
    let params = SessionParams {
        session: Session {
            id: s.id,
            task,
            track,
            agent: s.agent,
            model: s.model,
            patch,
            facts,
            transcript,
        },
        error: None,
    };
    out.push(adapter::spec(
        name.clone(),
        session::Session(params),
        NoNames {},
    ));
    name
}

/// The working directory an imported Harbor trial's job collected, when it
/// did (graded in place of a patch).
fn trial_workspace(
    pipeline: &Pipeline,
    s: &Session<Vec<u8>, Option<String>>,
) -> Option<std::path::PathBuf> {
    s.facts
        .trial
        .as_ref()
        .filter(|t| t.workspace.is_some())
        .zip(pipeline.settings.sessions.as_deref())
        .map(|(_, dir)| crate::sessions::harbor::workspace_dir(&dir.join(&s.id)))
}

/// The `harbor_grade` node of a session on a Harbor task: the task's own
/// verifier on its patch, fed to the release as `input` — a grade on a
/// reward-only task (`Input::Grade`), or on a Deep-SWE-shaped task, which
/// assay grades itself, a reading shown beside assay's verdict and never
/// counted (`Input::DatasetReading`).
fn harbor_verifier_node(
    pipeline: &Pipeline,
    g: &GradeLayout<'_>,
    h: &HarborRef,
    (session_node, workspace): (&str, Option<std::path::PathBuf>),
    out: &mut Vec<NodeSpec>,
    (release, input): (&mut ReleaseInputs, Input),
) {
    let id = session_node
        .strip_prefix("session:")
        .or_else(|| session_node.strip_prefix("attempt:"))
        .unwrap_or(session_node);
    let name = names::harbor_grade(id);
    out.push(adapter::spec(
        name.clone(),
        harbor_grade::HarborGrade {
            params: harbor_grade::HarborGradeParams {
                session: id.to_owned(),
                task: h.id.clone(),
                files: h.files.clone(),
                network: h.network,
                max_patch_bytes: pipeline.settings.grade.caps.bytes,
            },
            folder: h.path.clone(),
            workspace,
            executors: g.executors.clone(),
        },
        harbor_grade::HarborGradeNames {
            session: session_node.to_owned(),
            task: h.node.clone(),
        },
    ));
    release.push(name, input);
}

/// Per `[[agent]]`: its tools' environment, then per task of its tracks
/// and attempt an `attempt` node (a session assay makes), graded as a
/// session file's would be (`grade_on`).
fn attempt_nodes(
    pipeline: &Pipeline,
    g: &GradeLayout<'_>,
    out: &mut Vec<NodeSpec>,
    release: &mut ReleaseInputs,
    reviewable: &mut Vec<judge::Reviewable>,
) {
    let reward_only = reward_only(g);
    if g.task_nodes.is_empty() && reward_only.is_empty() {
        // Nothing for an agent to attempt: no tools to build.
        return;
    }
    let mut image_envs = BTreeSet::new();
    for agent in &pipeline.settings.agents {
        let tools = names::agent_env(&agent.label);
        out.push(tools_node(g, agent, &tools));
        let mut laid: u32 = 0;
        for mut a in attempted(g, agent, &reward_only) {
            if let Some(env) = a.image_env.take()
                && image_envs.insert(a.env_node.clone())
            {
                out.push(env);
            }
            for index in 0..agent.attempts {
                // The agent's attempts take its lanes in turn.
                laid += 1;
                let id = crate::run::attempt::session_id(&agent.label, a.id, a.track, index);
                let node_name = names::attempt(&id);
                let mut params = attempt::AttemptParams::of(agent, index, &a.confine, g.redact);
                params.instruction.clone_from(&a.instruction);
                out.push(adapter::spec(
                    node_name.clone(),
                    attempt::Attempt {
                        params,
                        store_dir: g.store_dir.to_owned(),
                        lane: format!("agent-lane:{}:{}", agent.label, laid % agent.lanes),
                        retries: agent.retries,
                        id: id.clone(),
                        track: a.track.to_owned(),
                        executors: g.executors.clone(),
                    },
                    attempt::AttemptNames {
                        task: a.task_node.to_owned(),
                        env: a.env_node.clone(),
                        tools: tools.clone(),
                    },
                ));
                release.push(node_name.clone(), Input::Session);
                let session = (id.as_str(), node_name.as_str(), None);
                grade_on(pipeline, g, &a.target, session, out, release, reviewable);
            }
        }
    }
}

/// An agent's tools: their own environment, built from its `setup`.
fn tools_node(
    g: &GradeLayout<'_>,
    agent: &crate::pipeline::AgentSettings,
    tools: &str,
) -> NodeSpec {
    adapter::spec(
        tools.to_owned(),
        crate::nodes::env::Env::new(
            crate::nodes::env::EnvParams {
                setup: agent.setup.clone(),
                key_files: Vec::new(),
                confine: crate::run::executor::Confinement::default(),
                redact: g.redact.clone(),
                export: false,
                at: Some(crate::run::attempt::AGENT_AT.to_owned()),
                warm: Vec::new(),
            },
            Vec::new(),
            std::time::Duration::from_secs(3600),
            g.cache_dir.to_owned(),
            g.executors.clone(),
        ),
        NoNames {},
    )
}

/// A task an agent attempts: where its attempts hang, what they run in,
/// and what grades them.
struct Attempted<'g> {
    id: &'g str,
    track: &'g str,
    task_node: &'g str,
    env_node: String,
    /// The environment node made from a reward-only task's image (laid
    /// out once for every agent).
    image_env: Option<NodeSpec>,
    confine: crate::run::executor::Confinement,
    /// A reward-only task's one statement, its `instruction.md`.
    instruction: Option<String>,
    target: Target<'g>,
}

/// The tasks `agent` attempts: assay's tasks on its tracks, then, on the
/// basic track, the reward-only Harbor tasks.
fn attempted<'g>(
    g: &GradeLayout<'g>,
    agent: &crate::pipeline::AgentSettings,
    reward_only: &[&'g HarborRef],
) -> Vec<Attempted<'g>> {
    let mut out = Vec::new();
    for ((id, track), (task_node, env_node)) in g.task_nodes {
        let Some(env) = g
            .env_of
            .get(env_node)
            .filter(|_| agent.tracks.contains(track))
        else {
            continue;
        };
        out.push(Attempted {
            id,
            track,
            task_node,
            env_node: env_node.clone(),
            image_env: None,
            confine: env.confine.clone(),
            instruction: None,
            target: Target::Task {
                id,
                task_node,
                env_node,
                // A Deep-SWE-shaped task's own verifier reads the attempt's
                // patch too, beside assay's grade.
                reading: g.harbor.get(id),
            },
        });
    }
    if !agent.tracks.iter().any(|t| t == HARBOR_TRACK) {
        return out;
    }
    for &h in reward_only {
        let env_node = names::harbor_image_env(&h.id);
        let confine = image_confinement(&h.node);
        let image_env = adapter::spec(
            env_node.clone(),
            crate::nodes::swe_task::HarborImageEnv::new(
                crate::nodes::swe_task::ImageEnvParams {
                    confine: confine.clone(),
                    redact: g.redact.clone(),
                },
                g.cache_dir.to_owned(),
                g.executors.clone(),
            ),
            crate::nodes::swe_task::HarborImageEnvNames {
                task: h.node.clone(),
            },
        );
        out.push(Attempted {
            id: &h.id,
            track: HARBOR_TRACK,
            task_node: &h.node,
            env_node,
            image_env: Some(image_env),
            confine,
            instruction: Some(
                std::fs::read_to_string(h.path.join("instruction.md")).unwrap_or_default(),
            ),
            target: Target::RewardOnly(h),
        });
    }
    out
}

/// The track of a reward-only Harbor task: its one statement.
const HARBOR_TRACK: &str = "basic";

/// The Harbor tasks that are not tasks of assay's (reward-only: no
/// Deep-SWE shape that reads), once each, in `<dataset>/<folder>` order.
fn reward_only<'g>(g: &GradeLayout<'g>) -> Vec<&'g HarborRef> {
    g.harbor
        .iter()
        .filter(|(name, h)| {
            **name == h.id
                && !g
                    .task_nodes
                    .contains_key(&(h.id.clone(), HARBOR_TRACK.to_owned()))
        })
        .map(|(_, h)| h)
        .collect()
}

/// Where a session's grading nodes hang: its node and its task's.
struct Graded<'s> {
    id: &'s str,
    /// The task's instance id (what `[[grade.allow_tamper]]` matches).
    task: &'s str,
    session_node: &'s str,
    task_node: &'s str,
    env_node: &'s str,
}

/// A session's grading nodes: per arm stage → run → grade, then one
/// metrics node, all fed to the release; the scored arm's grade is
/// reviewable by the judges.
fn graded_nodes(
    pipeline: &Pipeline,
    g: &GradeLayout<'_>,
    s: Graded<'_>,
    out: &mut Vec<NodeSpec>,
    release: &mut ReleaseInputs,
    reviewable: &mut Vec<judge::Reviewable>,
) {
    let grade = &pipeline.settings.grade;
    let (policy, arms) = (grade.policy, &grade.arms);
    let (id, session_node, task_node, env_node) = (s.id, s.session_node, s.task_node, s.env_node);
    let Some(env) = g.env_of.get(env_node) else {
        return;
    };
    let scored = arms.iter().find(|a| **a == Arm::SCORED).or(arms.first());
    if let Some(&arm) = scored {
        quality_nodes(pipeline, g, &s, &names::stage(id, arm), out, release);
    }
    for &arm in arms {
        let arm_policy = match arm {
            Arm::Keep => Policy::None,
            Arm::Exclude => policy,
        };
        let sp = StageParams {
            arm,
            policy: arm_policy,
            test_globs: g.test_globs.to_vec(),
            caps: grade.caps,
            rebuild: env.rebuild.clone(),
        };
        let stage_node = names::stage(id, arm);
        out.push(adapter::spec(
            stage_node.clone(),
            stage::Stage {
                params: sp,
                store_dir: g.store_dir.to_owned(),
            },
            stage::StageNames {
                task: task_node.to_owned(),
                session: session_node.to_owned(),
            },
        ));
        let rp: RunParams = env.graded_run_params(g.redact, g.test_globs);
        let run_node = names::graded_run(id, arm);
        out.push(adapter::spec(
            run_node.clone(),
            Run {
                params: rp.clone(),
                store_dir: g.store_dir.to_owned(),
                env: env_node.to_owned(),
                executors: g.executors.clone(),
            },
            RunNames {
                tree: stage_node.clone(),
                env: env_node.to_owned(),
            },
        ));
        let recheck_node = names::recheck(id, arm);
        out.push(adapter::spec(
            recheck_node.clone(),
            recheck::Recheck {
                params: RecheckParams {
                    caps: grade.caps,
                    reruns: grade.reruns,
                    rerun_command: grade.rerun_command.clone(),
                    check_command: grade.check_command.clone(),
                    run: rp.clone(),
                },
                store_dir: g.store_dir.to_owned(),
                env: env_node.to_owned(),
                executors: g.executors.clone(),
            },
            recheck::RecheckNames {
                task: task_node.to_owned(),
                session: session_node.to_owned(),
                stage: stage_node.clone(),
                run: run_node.clone(),
                env: env_node.to_owned(),
            },
        ));
        let gp = GradeParams {
            arm,
            policy: arm_policy,
            test_globs: g.test_globs.to_vec(),
            caps: grade.caps,
            run: rp.clone(),
            allowed: crate::pipeline::allowances(&grade.allow_tamper, s.task),
        };
        let grade_node = names::grade(id, arm);
        out.push(adapter::spec(
            grade_node.clone(),
            grade::Grade { params: gp },
            grade::GradeNames {
                task: task_node.to_owned(),
                session: session_node.to_owned(),
                stage: stage_node,
                run: run_node,
                env: env_node.to_owned(),
                recheck: recheck_node,
            },
        ));
        if Some(&arm) == scored {
            reviewable.push(judge::Reviewable {
                session: id.to_owned(),
                task_node: task_node.to_owned(),
                session_node: session_node.to_owned(),
                grade_node: grade_node.clone(),
            });
        }
        release.push(grade_node, Input::Grade);
    }
    let mp = MetricsParams {
        policy,
        test_globs: g.test_globs.to_vec(),
        caps: grade.caps,
    };
    let metrics_node = names::metrics(id);
    out.push(adapter::spec(
        metrics_node.clone(),
        metrics::Metrics(mp),
        metrics::MetricsNames {
            task: task_node.to_owned(),
            session: session_node.to_owned(),
        },
    ));
    release.push(metrics_node, Input::Metrics);
}

/// Per `[[metric]]`: the session's scored tree measured, and its task's
/// gold tree (once per task), both fed to the release.
fn quality_nodes(
    pipeline: &Pipeline,
    g: &GradeLayout<'_>,
    s: &Graded<'_>,
    stage_node: &str,
    out: &mut Vec<NodeSpec>,
    release: &mut ReleaseInputs,
) {
    let (Some(env), Some(gold_tree)) = (g.env_of.get(s.env_node), g.gold_trees.get(s.task)) else {
        return;
    };
    for metric in &pipeline.settings.metrics {
        let node = |session: Option<&str>, tree: &str| {
            adapter::spec(
                match session {
                    Some(id) => names::quality(&metric.name, id),
                    None => names::quality_gold(&metric.name, s.task),
                },
                quality::Quality {
                    params: QualityParams::new(
                        metric,
                        g.test_globs,
                        env.graded_run_params(g.redact, &[]),
                    ),
                    store_dir: g.store_dir.to_owned(),
                    env: s.env_node.to_owned(),
                    executors: g.executors.clone(),
                },
                quality::QualityNames {
                    task: s.task_node.to_owned(),
                    tree: tree.to_owned(),
                    env: s.env_node.to_owned(),
                    session: session.map(|_| s.session_node.to_owned()),
                },
            )
        };
        let gold = node(None, gold_tree);
        if release.push_once(gold.name.clone(), Input::Quality) {
            out.push(gold);
        }
        let session = node(Some(s.id), stage_node);
        release.push(session.name.clone(), Input::Quality);
        out.push(session);
    }
}

/// Task digests of the last build, so a session may name its task by digest.
/// The variables whose values are secrets in what a session brings: the
/// `[redact] env` names, and every agent's and judge's key variable.
fn secret_env(pipeline: &Pipeline, g: &GradeLayout<'_>) -> Vec<String> {
    g.redact
        .env
        .iter()
        .cloned()
        .chain(
            pipeline
                .settings
                .agents
                .iter()
                .filter_map(|a| a.endpoint.as_ref()?.key_env.clone()),
        )
        .chain(
            pipeline
                .judges
                .iter()
                .filter_map(|j| j.settings.api_key_env.clone()),
        )
        .collect()
}

fn previous_task_keys(store: &Store) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let Ok(builds) = store.builds(1) else {
        return map;
    };
    if let Some(Ok(Some(m))) = builds.first().map(|b| store.manifest(b)) {
        for e in m.entries.iter().filter(|e| e.kind == NodeKind::Task) {
            if let (Some(k), Some(id)) = (e.key, names::task_of(&e.name)) {
                map.insert(k.to_hex(), id.to_owned());
            }
        }
    }
    map
}

/// The ids of the tasks the last build released certified: what a session
/// naming an unknown task is pointed to (a declined or uncertified
/// candidate has a task id too, and grading it is refused). Empty before a
/// first build: the suggestion waits for a release.
fn released_tasks(store: &Store) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let Ok(builds) = store.builds(1) else {
        return ids;
    };
    let Some(Ok(Some(m))) = builds.first().map(|b| store.manifest(b)) else {
        return ids;
    };
    for key in m
        .entries
        .iter()
        .filter(|e| e.kind == NodeKind::Task)
        .filter_map(|e| e.key)
    {
        let Ok(Some((_, _, row))) = store.key_record(&key) else {
            continue;
        };
        let task = store
            .output_bytes(&row)
            .ok()
            .and_then(|b| serde_json::from_slice::<crate::model::records::TaskRecord>(&b).ok());
        if let Some(t) = task.filter(|t| t.status == TaskStatus::Released && t.certified) {
            ids.insert(t.instance_id);
        }
    }
    ids
}

/// The content (`TaskRecord::content_digest`) of the task node keyed
/// `hex`, when this cache holds it.
fn task_content(store: &Store, hex: &str) -> Option<String> {
    let key = hex.parse::<assay_engine::Digest>().ok()?;
    let (record, _, row) = store.key_record(&key).ok().flatten()?;
    if record.kind != NodeKind::Task {
        return None;
    }
    let bytes = store.output_bytes(&row).ok()?;
    let task: crate::model::records::TaskRecord = serde_json::from_slice(&bytes).ok()?;
    Some(task.content_digest())
}

/// The transcript's models, listed, when the session's model label names
/// none of them (a label agrees with an id it equals or begins: `claude-x`
/// with `claude-x-20250101`); None when they agree or the transcript names none.
fn model_disagrees(label: &str, models: &[String]) -> Option<String> {
    if models.is_empty() || models.iter().any(|m| m.starts_with(label)) {
        return None;
    }
    Some(
        models
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// A `sessions/` directory beside a pipeline that names no `sessions`
/// holds files no build reads: said, so they are not taken for graded.
fn unread_sessions(pipeline: &Pipeline, warnings: &mut Vec<String>) {
    let dir = pipeline.resolve("sessions");
    let files = walk_files(&dir);
    if files > 0 {
        warnings.push(format!(
            "warning: {} holds {files} file(s), but {} names no `sessions`: none is graded (add `sessions = \"sessions\"`)",
            dir.display(),
            pipeline.path.display()
        ));
    }
}

/// The files under `dir`, at any depth (0 when it does not read).
fn walk_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => walk_files(&e.path()),
                    Ok(_) => 1,
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::model_disagrees;

    #[test]
    fn a_model_label_agrees_with_the_ids_it_begins() {
        let ids = ["claude-sonnet-4-5-20250929".to_owned()];
        assert_eq!(model_disagrees("claude-sonnet-4-5", &ids), None);
        assert_eq!(model_disagrees("model-a", &[]), None);
        assert_eq!(
            model_disagrees("model-a", &ids).as_deref(),
            Some("`claude-sonnet-4-5-20250929`")
        );
    }
}
