//! `judge`: one LLM reading of a graded patch, or of two patches of one task
//! shown in one order. Laid out per (graded session, judge, sample) on the
//! session's scored arm, and with `pairwise = true` per (pair of sessions on
//! one task, order, sample): both orders are nodes of their own, so a
//! reviewer preferring whatever comes first shows up as two readings that
//! disagree.
//!
//! **Key.** Params: the judge's [`JudgeKey`] for this sample (prompt version,
//! API, base URL, model, temperature, rubric text, sample index), the labels
//! seed, the mode, the labels by slot and the slots in the order shown. Deps,
//! by output digest: the task record (statement, spec, gold patch), then per
//! slot the session record (its patch) and its scored grade (the verdict and
//! failing tests the prompt shows). Nothing else: not the judge's name, the
//! key or its variable, concurrency, timeout, retries or `max_tokens`, so a
//! fork that changes only a judge reruns only its readings and the release.
//!
//! **Blind labels.** A review shows only its own patches, so its labels are
//! drawn for it alone: `Labels::for_task(seed, basis, n)` with `n` the
//! patches shown and `basis` the task and the sessions under review. A single
//! review is always `P`; a pair's two labels are a seeded permutation per
//! (task, pair). Adding a session to a task therefore relabels nothing and
//! reruns no earlier reading. Session ids enter the label draw and the key,
//! never the prompt: the prompt is built from [`ReviewInput`], which has no
//! field for authorship.
//!
//! **Failures.** An infrastructure error (after the library's retries), a
//! refused key or a rejected request fails the node: nothing is committed and
//! the next build asks again. An answer that never became a reading is
//! recorded as `no_usable_answer` with its usage, never as a score. A session
//! whose task is not graded (uncertified, awaiting a statement) is recorded
//! as `not_judged` without a request.

use std::collections::BTreeMap;
use std::sync::Arc;

use assay_engine::{JobCtx, NodeSpec};
use assay_judge::{
    Candidate, ErrorKind, Grading, Judge, JudgeKey, Labels, Mode, ReviewInput, Settings, TaskText,
    Usage,
};
use serde::Serialize;

use super::adapter::{self, Kind, Made, NodeKind};
use super::blob;
use super::release;
use super::release::ReleaseInputs;
use crate::model::names;
use crate::model::records::{GradeRecord, SessionRecord, TaskRecord, Verdict};
pub(crate) use crate::model::records::{JudgeInfo, JudgeOutcome, JudgeRecord};
use crate::pipeline::{ConfigError, JudgeConfig, Pipeline};
use crate::run::error::{self, NodeError, StageError};

pub(crate) const KIND_VERSION: u32 = 1;

/// The separator the task stage puts between a statement and its spec.
const SPEC_HEADER: &str = "\n\n## Interface\n\n";

/// A graded session the judges may review (known once its grade is laid out).
pub(crate) struct Reviewable {
    pub(crate) session: String,
    pub(crate) task_node: String,
    pub(crate) session_node: String,
    /// The grade of the scored arm.
    pub(crate) grade_node: String,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct JudgeParams {
    pub(crate) judge: JudgeKey,
    pub(crate) seed: u64,
    pub(crate) mode: Mode,
    /// Labels by slot; slot `i` is the i-th (session, grade) among the deps.
    pub(crate) labels: Labels,
    /// Slots in the order shown.
    pub(crate) order: Vec<usize>,
}

/// Why a judge cannot run here, if it cannot: its key variable is unset,
/// empty or not UTF-8. The value is never kept.
fn key_problem(settings: &Settings) -> Option<String> {
    let var = settings.api_key_env.as_ref()?;
    let problem = match std::env::var(var) {
        Ok(v) if v.is_empty() => "is empty",
        Ok(_) => return None,
        Err(std::env::VarError::NotPresent) => "is not set",
        Err(std::env::VarError::NotUnicode(_)) => "is not valid UTF-8",
    };
    Some(format!(
        "the variable {var} that should hold the API key {problem}"
    ))
}

fn settings_digest(j: &JudgeConfig) -> String {
    let s = &j.settings;
    let bytes = assay_engine::encode_params(&(s.key(0), j.seed, s.samples.get(), s.pairwise));
    blake3::hash(&bytes).to_hex().to_string()
}

/// The judges as the release lists them; warns once per skipped judge.
pub(crate) fn release_info(pipeline: &Pipeline, warnings: &mut Vec<String>) -> Vec<JudgeInfo> {
    pipeline
        .judges
        .iter()
        .map(|j| {
            let s = &j.settings;
            let skipped = key_problem(s);
            if let Some(why) = &skipped {
                warnings.push(format!(
                    "warning: judge `{}`: {why}: its readings are skipped (summary.json lists it)",
                    s.name
                ));
            }
            JudgeInfo {
                name: s.name.clone(),
                api: format!("{:?}", s.api).to_lowercase(),
                model: s.model.clone(),
                samples: s.samples.get(),
                pairwise: s.pairwise,
                seed: j.seed,
                settings_digest: settings_digest(j),
                skipped,
            }
        })
        .collect()
}

/// The judge nodes over `reviewable`, for every judge that can run.
pub(crate) fn nodes(
    pipeline: &Pipeline,
    reviewable: &[Reviewable],
    out: &mut Vec<NodeSpec>,
    release: &mut ReleaseInputs,
) -> Result<(), StageError> {
    // Per task, its sessions in a stable order (by id).
    let mut by_task: BTreeMap<&str, Vec<&Reviewable>> = BTreeMap::new();
    for r in reviewable {
        by_task.entry(&r.task_node).or_default().push(r);
    }
    for sessions in by_task.values_mut() {
        sessions.sort_by(|a, b| a.session.cmp(&b.session));
    }
    for j in &pipeline.judges {
        let s = &j.settings;
        if key_problem(s).is_some() {
            continue;
        }
        let client = Judge::new(s.clone()).map_err(|e| {
            ConfigError::plain(
                e.to_string(),
                "check this judge's settings in pipeline.toml",
            )
        })?;
        let mut push = |name: String, shown: &[&Reviewable], order: Vec<usize>, sample: u32| {
            let basis: Vec<&str> = std::iter::once(shown[0].task_node.as_str())
                .chain(shown.iter().map(|r| r.session.as_str()))
                .collect();
            let params = JudgeParams {
                judge: s.key(sample),
                seed: j.seed,
                mode: if shown.len() == 1 {
                    Mode::Single
                } else {
                    Mode::Pairwise
                },
                labels: Labels::for_task(j.seed, &basis.join("\n"), shown.len()),
                order,
            };
            out.push(adapter::spec(
                name.clone(),
                Review {
                    judge: client.clone(),
                    params,
                },
                JudgeNames {
                    task: shown[0].task_node.clone(),
                    reviewed: shown
                        .iter()
                        .map(|r| (r.session_node.clone(), r.grade_node.clone()))
                        .collect(),
                },
            ));
            release.push(name, release::Input::Judge(s.name.clone()));
        };
        for sessions in by_task.values() {
            for r in sessions {
                for k in 0..s.samples.get() {
                    push(
                        names::judge_single(&s.name, &r.session, k),
                        &[r],
                        vec![0],
                        k,
                    );
                }
            }
            if !s.pairwise {
                continue;
            }
            for (i, a) in sessions.iter().enumerate() {
                for b in &sessions[i + 1..] {
                    for k in 0..s.samples.get() {
                        for (order, (x, y)) in [(vec![0, 1], (a, b)), (vec![1, 0], (b, a))] {
                            push(
                                names::judge_pair(&s.name, &x.session, &y.session, k),
                                &[a, b],
                                order,
                                k,
                            );
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

super::adapter::inputs! {
    /// The task, then per slot the reviewed session and its scored grade.
    pub(crate) struct JudgeInputs / JudgeNames {
        task: TaskRecord;
        ..reviewed: [SessionRecord, GradeRecord]
    }
}

/// One reading by one judge.
struct Review {
    judge: Judge,
    params: JudgeParams,
}

impl Kind for Review {
    const NAME: &'static str = NodeKind::Judge.as_str();
    const VERSION: u32 = KIND_VERSION;
    /// A reading is an observation of the model: `--reread judge` asks again.
    const OBSERVATION: bool = true;
    type Params = JudgeParams;
    type Inputs = JudgeInputs;
    type Record = JudgeRecord;

    fn params(&self) -> &JudgeParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: JudgeInputs,
        ctx: JobCtx,
    ) -> Result<Made<JudgeRecord>, NodeError> {
        review(&self.judge, &self.params, i, &ctx)
            .await
            .map(Made::record)
    }
}

/// The task as the judge sees it: the spec track's spec apart from the statement.
fn task_text(task: &TaskRecord) -> TaskText {
    let (statement, spec) = match task.problem_statement.split_once(SPEC_HEADER) {
        Some((s, spec)) if task.track == "spec" => (s.to_owned(), Some(spec.to_owned())),
        _ => (task.problem_statement.clone(), None),
    };
    TaskText {
        problem_statement: statement,
        interface_spec: spec,
        gold_patch: task.patch.clone(),
    }
}

async fn review(
    judge: &Judge,
    p: &JudgeParams,
    i: JudgeInputs,
    ctx: &JobCtx,
) -> Result<JudgeRecord, NodeError> {
    let task = i.task.record;
    let mut candidates = Vec::new();
    let mut sessions = Vec::new();
    let mut first_grade: Option<GradeRecord> = None;
    let mut not_graded = None;
    for (slot, (session, grade)) in i.reviewed.into_iter().enumerate() {
        let (session, grade) = (session.record, grade.record);
        if grade.verdict == Verdict::NotGraded {
            not_graded = Some(format!("{} is not graded: {}", session.id, grade.detail));
        }
        candidates.push(Candidate {
            slot,
            patch: String::from_utf8_lossy(&blob(ctx, &session.patch)?).into_owned(),
            grading: Grading {
                verdict: grade.verdict.to_string(),
                failing_tests: grade.failing.clone(),
            },
        });
        sessions.push(session.id);
        first_grade.get_or_insert(grade);
    }
    let Some(grade) = first_grade else {
        return Err(NodeError::internal("no session to review"));
    };
    let mut record = JudgeRecord {
        instance_id: grade.instance_id.clone(),
        track: grade.track.clone(),
        task_digest: grade.task_digest.clone(),
        sessions,
        order: p.order.clone(),
        mode: p.mode,
        sample: p.judge.sample,
        model: p.judge.model.clone(),
        outcome: JudgeOutcome::NotJudged,
        detail: String::new(),
        usage: Usage::default(),
        attempts: 0,
        reading: None,
    };
    if let Some(why) = not_graded {
        record.detail = why;
    } else {
        let mut shown = p.order.iter().filter_map(|&s| candidates.get(s).cloned());
        let input = match (shown.next(), shown.next()) {
            (Some(a), None) => ReviewInput::single(task_text(&task), a),
            (Some(a), Some(b)) => ReviewInput::pair(task_text(&task), a, b),
            _ => return Err(NodeError::internal("the shown order names no session")),
        };
        match judge.review(&input, &p.labels, p.judge.sample).await {
            Ok(reading) => {
                record.outcome = JudgeOutcome::Reading;
                record.usage = reading.usage;
                record.attempts = reading.attempts;
                record.reading = Some(reading);
            }
            Err(e) if e.kind() == ErrorKind::Answer => {
                record.outcome = JudgeOutcome::NoUsableAnswer;
                record.detail = e.to_string();
                record.usage = e.usage();
                record.attempts = e.attempts();
            }
            // Infrastructure, configuration or a bug: nothing is committed.
            Err(e) => {
                let kind = match e.kind() {
                    ErrorKind::Configuration => error::ErrorKind::Config,
                    ErrorKind::Infrastructure => error::ErrorKind::Infrastructure,
                    ErrorKind::Input | ErrorKind::Answer => error::ErrorKind::Internal,
                };
                return Err(NodeError::new(kind, e));
            }
        }
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::records::TaskStatus;

    fn task(track: &str, statement: &str) -> TaskRecord {
        TaskRecord {
            instance_id: "t".into(),
            repo: "r".into(),
            base_commit: "b".into(),
            patch: "+gold".into(),
            problem_statement: statement.into(),
            track: track.into(),
            status: TaskStatus::Released,
            certified: true,
            env: "e".into(),
            ..TaskRecord::default()
        }
    }

    #[test]
    fn the_spec_track_shows_its_spec_apart() {
        let t = task_text(&task("spec", "It breaks.\n\n## Interface\n\nfn f()"));
        assert_eq!(t.problem_statement, "It breaks.");
        assert_eq!(t.interface_spec.as_deref(), Some("fn f()"));
        assert_eq!(t.gold_patch, "+gold");
        let basic = task_text(&task("basic", "It breaks.\n\n## Interface\n\nfn f()"));
        assert_eq!(basic.interface_spec, None);
        assert!(basic.problem_statement.ends_with("fn f()"));
    }
}
