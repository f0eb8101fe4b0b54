//! What grading reads of the layout ([`GradeLayout`]), what a session or
//! an attempt is graded on ([`Target`]), and the nodes that grade it there:
//! per arm stage → run → recheck → grade, one metrics node and the
//! `[[metric]]`s' quality nodes, or a Harbor task's own verifier, or an
//! app task's layers; all fed to the release.

use std::collections::BTreeMap;
use std::path::Path;

use assay_engine::NodeSpec;

use super::source::{Cx, HarborRef, Laid};
use crate::model::names;
use crate::nodes::adapter::{self, NoNames};
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
use crate::run::redact::RedactConfig;
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

/// What a session file or an attempt is graded on.
pub(super) enum Target<'g> {
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
    pub(super) fn task(&self) -> String {
        match self {
            Target::Task { id, .. } => (*id).to_owned(),
            Target::RewardOnly(h) => h.id.clone(),
            Target::App(app) => app.settings.name.clone(),
        }
    }
}

/// The nodes that grade a session (a file's or an attempt's, its node
/// `session_node`) on `target`, all fed to the release.
pub(super) fn grade_on(
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
pub(super) fn failed_session_node(id: &str, why: String) -> NodeSpec {
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
