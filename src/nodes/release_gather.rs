//! What the release reads from its inputs, before its files are written:
//! each input taken as what its [`Input`] word says it is, the funnel
//! counted, and the lines of `tasks.jsonl`, `tasks.uncertified.jsonl` and
//! `harbor-tasks.jsonl` serialized.

use std::collections::BTreeMap;

use assay_engine::Digest;
use serde::Serialize;

use super::release_inputs::{Input, ReleaseParams};
use crate::model::records::{Arm, GradeRecord, TaskRecord, TaskStatus, Verdict};
use crate::model::rules::funnel::Reason;
use crate::release::{Funnel, HarborScreen, InstanceFunnel, InstanceReading, PublishInput};
use crate::run::error::{Kinded, NodeError};
use crate::run::swebench;

/// One line of `harbor-tasks.jsonl`: a Harbor task folder, whether its
/// controls hold, and every reading they rest on.
#[derive(Serialize)]
struct HarborLine<'a> {
    dataset: &'a str,
    folder: &'a str,
    name: &'a str,
    /// The `harbor_task` node's key.
    digest: String,
    certified: bool,
    uncertified_because: &'a [String],
    environment: &'a crate::run::harbor::screen::Built,
    readings: &'a BTreeMap<String, Vec<crate::run::harbor::screen::Reading>>,
    /// A Deep-SWE-shaped folder's recomputed lists and whitelist
    /// disagreements.
    #[serde(skip_serializing_if = "Option::is_none")]
    swe: Option<&'a crate::run::harbor::deepswe::SweScreen>,
    /// The environment's second build and its readings.
    #[serde(skip_serializing_if = "Option::is_none")]
    rebuild: Option<&'a crate::run::harbor::screen::Rebuilt>,
}

/// One line of `tasks.jsonl` / `tasks.uncertified.jsonl`: SWE-bench's
/// instance fields first (loadable by its harness: ids unique per track, test
/// ids in its log parser's form), then assay's own.
#[derive(Serialize)]
struct Released<'a> {
    instance_id: String,
    repo: &'a str,
    base_commit: &'a str,
    patch: &'a str,
    test_patch: &'a str,
    problem_statement: &'a str,
    hints_text: &'a str,
    created_at: &'a str,
    version: &'a str,
    environment_setup_commit: &'a str,
    #[serde(rename = "FAIL_TO_PASS")]
    fail_to_pass: Vec<String>,
    #[serde(rename = "PASS_TO_PASS")]
    pass_to_pass: Vec<String>,
    log_parser: &'a str,
    eval_type: &'a str,
    eval_script: &'a str,
    /// The harness's image; the environment image on docker, else empty.
    image: &'a str,
    /// assay's task id (the same on both tracks) and its own test ids.
    task: &'a str,
    track: &'a str,
    test_ids: TestIds<'a>,
    digest: String,
    /// `released`, or `uncertified` (the reasons in `uncertified_because`).
    status: &'a str,
    certified: bool,
    uncertified_because: &'a [String],
    flaky: &'a [String],
    excluded: &'a [String],
    env: &'a str,
    topic: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    executor: &'a Option<crate::model::config::ExecutorKind>,
    /// The graded runs' timeout (s), from the slowest screening reading.
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_s: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    slowest_screening_s: Option<f64>,
    /// What its graded runs' canaries are made of (the mutants themselves
    /// are in the task node's record, which `digest` names).
    #[serde(skip_serializing_if = "Option::is_none")]
    canaries: Option<CanaryCounts>,
    /// Why its graded runs carry the shaped canaries alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    weakly_checked: &'a Option<String>,
    /// log2 of the chance that a forger's best blind strategy passes every
    /// FAIL_TO_PASS test (docs/security.md, "A forger's odds").
    #[serde(skip_serializing_if = "Option::is_none")]
    forger_odds_log2: Option<f64>,
    /// The audit hook's rules the task's honest suite trips, off for its
    /// graded runs (docs/security.md); left out when none.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    audit_off: &'a [String],
    /// An instance file's own lists and where assay's readings disagree
    /// with them (docs/instances.md); left out for every other task.
    #[serde(skip_serializing_if = "Option::is_none")]
    dataset: &'a Option<crate::model::instances::DatasetLists>,
}

/// A task's certified canaries, counted.
#[derive(Serialize)]
struct CanaryCounts {
    mutants: usize,
    /// Mutants of its FAIL_TO_PASS tests: the ones a targeted forgery
    /// must tell from the real tests.
    fail_to_pass_mutants: usize,
    copies: usize,
    /// Files whose tests are renamed in every graded run.
    renamed_files: usize,
    /// Sealed assertions (docs/security.md, "Sealed expectations"), and
    /// those of its FAIL_TO_PASS tests; left out when none.
    #[serde(skip_serializing_if = "is_zero")]
    seals: usize,
    #[serde(skip_serializing_if = "is_zero")]
    fail_to_pass_seals: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct TestIds<'a> {
    #[serde(rename = "FAIL_TO_PASS")]
    fail_to_pass: &'a [String],
    #[serde(rename = "PASS_TO_PASS")]
    pass_to_pass: &'a [String],
}

impl<'a> Released<'a> {
    fn new(task: &'a TaskRecord, digest: String) -> Self {
        let map = |ids: &[String]| -> Vec<String> {
            ids.iter()
                .map(|t| swebench::test_id(&task.log_parser, t))
                .collect()
        };
        Released {
            instance_id: swebench::instance_id(&task.instance_id, &task.track),
            repo: &task.repo,
            base_commit: &task.base_commit,
            patch: &task.patch,
            test_patch: &task.test_patch,
            problem_statement: &task.problem_statement,
            hints_text: &task.hints_text,
            created_at: &task.created_at,
            version: &task.version,
            environment_setup_commit: &task.base_commit,
            fail_to_pass: map(&task.fail_to_pass),
            pass_to_pass: map(&task.pass_to_pass),
            log_parser: &task.log_parser,
            eval_type: "pass_and_fail",
            eval_script: &task.eval_script,
            image: task.image.as_deref().unwrap_or(""),
            task: &task.instance_id,
            track: &task.track,
            test_ids: TestIds {
                fail_to_pass: &task.fail_to_pass,
                pass_to_pass: &task.pass_to_pass,
            },
            digest,
            status: if task.certified {
                task.status.as_str()
            } else {
                "uncertified"
            },
            certified: task.certified,
            uncertified_because: &task.uncertified_because,
            flaky: &task.flaky,
            excluded: &task.excluded,
            canaries: task.canaries.as_ref().map(|c| CanaryCounts {
                mutants: c.mutants.len(),
                fail_to_pass_mutants: c.mutants.iter().filter(|m| m.fail_to_pass).count(),
                copies: c.copies.len(),
                renamed_files: c.renamed.len(),
                seals: c.seals.len(),
                fail_to_pass_seals: c.seals.iter().filter(|s| s.fail_to_pass).count(),
            }),
            forger_odds_log2: task.forger_odds_log2,
            weakly_checked: &task.weakly_checked,
            env: &task.env,
            topic: &task.topic,
            executor: &task.executor,
            timeout_s: task.timeout_s,
            slowest_screening_s: task.slowest_screening_s,
            audit_off: &task.audit_off,
            dataset: &task.dataset,
        }
    }
}

/// Per candidate: how far it got along the funnel, over all its tasks.
#[derive(Default)]
pub(super) struct Progress {
    pub(super) declined: Option<String>,
    pub(super) screened: bool,
    pub(super) certified: bool,
}

/// What the release reads from its inputs, before its files are written.
pub(super) struct Gathered {
    pub(super) funnel: Funnel,
    /// (instance id, track, line) of `tasks.jsonl`.
    pub(super) lines: Vec<(String, String, String)>,
    /// The same of `tasks.uncertified.jsonl`.
    pub(super) uncertified_lines: Vec<(String, String, String)>,
    /// (dataset, folder, line) of `harbor-tasks.jsonl`.
    pub(super) harbor_lines: Vec<(String, String, String)>,
    pub(super) per_candidate: BTreeMap<String, Progress>,
    pub(super) publish_input: PublishInput,
}

impl Gathered {
    pub(super) fn new(params: &ReleaseParams) -> Self {
        Gathered {
            funnel: Funnel {
                instances: params
                    .instance_rows
                    .as_ref()
                    .map(|r| InstanceFunnel::of_rows(r.rows, &r.unreadable)),
                ..Funnel::default()
            },
            lines: Vec::new(),
            uncertified_lines: Vec::new(),
            harbor_lines: Vec::new(),
            per_candidate: BTreeMap::new(),
            publish_input: PublishInput {
                not_graded: params.not_graded.clone(),
                trials: params.trials.clone(),
                prices: params.prices.clone(),
                judges: params.judges.clone(),
                ..PublishInput::default()
            },
        }
    }

    /// Takes one input, read as what `kind` says it is.
    pub(super) fn take(
        &mut self,
        params: &ReleaseParams,
        kind: &Input,
        bytes: &[u8],
        key: &Digest,
    ) -> Result<(), NodeError> {
        let publish_input = &mut self.publish_input;
        match kind {
            Input::Task(candidate) => {
                self.mined_task(candidate, serde_json::from_slice(bytes).input()?, key)?;
            }
            Input::DeepSweTask | Input::InstanceTask => {
                let task = serde_json::from_slice(bytes).input()?;
                self.image_task(params, kind, task, key)?;
            }
            Input::Session => publish_input
                .sessions
                .push(serde_json::from_slice(bytes).input()?),
            Input::Metrics => publish_input
                .metrics
                .push(serde_json::from_slice(bytes).input()?),
            Input::Quality => publish_input
                .quality
                .push((serde_json::from_slice(bytes).input()?, key.to_hex())),
            Input::Judge(judge) => {
                let r = serde_json::from_slice(bytes).input()?;
                publish_input
                    .readings
                    .push((judge.clone(), r, key.to_hex()));
            }
            Input::HarborTask => self.harbor_task(serde_json::from_slice(bytes).input()?, key)?,
            Input::AppCertify => publish_input
                .app_tasks
                .push((serde_json::from_slice(bytes).input()?, key.to_hex())),
            Input::AppGrade => publish_input
                .app_grades
                .push((serde_json::from_slice(bytes).input()?, key.to_hex())),
            Input::InstanceReading {
                task,
                state,
                reading,
            } => {
                let run: crate::model::records::RunRecord =
                    serde_json::from_slice(bytes).input()?;
                publish_input.instance_readings.push(InstanceReading {
                    task: task.clone(),
                    state: state.clone(),
                    reading: *reading,
                    seconds: run
                        .skipped
                        .is_none()
                        .then(|| run.duration_ms as f64 / 1000.0),
                    key: key.to_hex(),
                });
            }
            Input::DatasetReading => {
                let g: GradeRecord = serde_json::from_slice(bytes).input()?;
                publish_input.dataset_readings.push((g, key.to_hex()));
            }
            Input::Grade => {
                let g: GradeRecord = serde_json::from_slice(bytes).input()?;
                if g.verdict != Verdict::NotGraded {
                    publish_input.grades.push((g, key.to_hex()));
                } else if g.arm != Arm::Keep {
                    publish_input
                        .not_graded
                        .push((g.session.clone(), g.detail.clone()));
                }
            }
        }
        Ok(())
    }

    /// A released task's line, in `tasks.jsonl` when certified, else in
    /// `tasks.uncertified.jsonl`.
    fn release(&mut self, task: TaskRecord, key: &Digest) -> Result<(), NodeError> {
        let line = serde_json::to_string(&Released::new(&task, key.to_hex()))
            .map_err(NodeError::internal)?;
        let file = if task.certified {
            &mut self.lines
        } else {
            &mut self.uncertified_lines
        };
        file.push((task.instance_id.clone(), task.track.clone(), line));
        self.publish_input.tasks.push((task, key.to_hex()));
        Ok(())
    }

    /// A mined candidate's task: counted along the funnel, released unless
    /// declined or awaiting its statement.
    fn mined_task(
        &mut self,
        candidate: &str,
        task: TaskRecord,
        key: &Digest,
    ) -> Result<(), NodeError> {
        let funnel = &mut self.funnel;
        let progress = self.per_candidate.entry(candidate.to_owned()).or_default();
        // A task is counted under its first reason ([`Reason`]).
        let first = task.uncertified_because.first().map(String::as_str);
        let word = first.map(Reason::word_of).unwrap_or_default().to_owned();
        match task.status {
            TaskStatus::Declined if first.and_then(Reason::of) == Some(Reason::NotScreened) => {
                *funnel.declined.entry(word).or_default() += 1;
                return Ok(());
            }
            TaskStatus::Declined
                if first.and_then(Reason::of) == Some(Reason::TopicSplitRejected) =>
            {
                progress.screened = true;
                *funnel.declined.entry(word).or_default() += 1;
                return Ok(());
            }
            TaskStatus::Declined => {
                progress.declined = Some(word);
                return Ok(());
            }
            TaskStatus::AwaitingStatement => {
                progress.screened = true;
                funnel.awaiting_statement += 1;
                funnel.awaiting_statement_certified += usize::from(task.certified);
                return Ok(());
            }
            TaskStatus::Released => {}
        }
        progress.screened = true;
        if task.certified {
            progress.certified = true;
        } else {
            funnel.uncertified += 1;
            for why in &task.uncertified_because {
                let k = Reason::word_of(why).to_owned();
                *funnel.uncertified_because.entry(k).or_default() += 1;
            }
        }
        funnel.tasks_released += 1;
        self.release(task, key)
    }

    /// A Deep-SWE-shaped folder's task, counted in the Harbor funnel and
    /// dated by its folder's newest change (it has no merge date); or an
    /// instance's, counted in the instances' funnel.
    fn image_task(
        &mut self,
        params: &ReleaseParams,
        kind: &Input,
        mut task: TaskRecord,
        key: &Digest,
    ) -> Result<(), NodeError> {
        if matches!(kind, Input::InstanceTask) {
            self.funnel
                .instances
                .get_or_insert_with(Default::default)
                .count(&task);
        }
        if matches!(kind, Input::DeepSweTask) {
            if let Some(changed) = params.harbor_changed.get(&task.instance_id) {
                task.created_at.clone_from(changed);
            }
            let swe = self
                .funnel
                .harbor
                .get_or_insert_with(Default::default)
                .assay_tasks
                .get_or_insert_with(Default::default);
            if !swe.count(&task) {
                return Ok(());
            }
        }
        self.release(task, key)
    }

    /// A Harbor task folder's screening: its line of `harbor-tasks.jsonl`
    /// and the Harbor funnel's counts.
    fn harbor_task(
        &mut self,
        t: super::harbor_task::HarborTaskRecord,
        key: &Digest,
    ) -> Result<(), NodeError> {
        // A Deep-SWE-shaped task is an assay task, released as one.
        if t.certified && t.swe.is_none() {
            self.publish_input.harbor_tasks.push(key.to_hex());
        }
        let id = format!("{}/{}", t.dataset, t.folder);
        self.publish_input.harbor_screens.push(HarborScreen {
            id: id.clone(),
            certified: t.certified,
            because: t.uncertified_because.clone(),
            readings: t
                .readings
                .iter()
                .map(|(control, rs)| (control.clone(), rs.iter().map(|r| r.reward).collect()))
                .collect(),
        });
        let h = self.funnel.harbor.get_or_insert_with(Default::default);
        h.tasks += 1;
        if t.certified {
            h.certified += 1;
            h.certified_tasks.push(id);
        } else {
            h.uncertified += 1;
            h.uncertified_tasks
                .insert(id, t.uncertified_because.clone());
        }
        // Tasks, not readings: a task two readings failed counts once.
        let words: std::collections::BTreeSet<&str> = t
            .uncertified_because
            .iter()
            .map(|why| why.split(':').next().unwrap_or(why))
            .collect();
        for word in words {
            *h.uncertified_because.entry(word.to_owned()).or_default() += 1;
        }
        let line = serde_json::to_string(&HarborLine {
            dataset: &t.dataset,
            folder: &t.folder,
            name: &t.name,
            digest: key.to_hex(),
            certified: t.certified,
            uncertified_because: &t.uncertified_because,
            environment: &t.environment,
            readings: &t.readings,
            swe: t.swe.as_ref(),
            rebuild: t.rebuild.as_ref(),
        })
        .map_err(NodeError::internal)?;
        self.harbor_lines
            .push((t.dataset.clone(), t.folder.clone(), line));
        Ok(())
    }
}
