//! `release`: the published set. Its output names each release file by blob
//! digest (the files are its attachments); the CLI writes them to `release/`.
//! `tasks.jsonl` holds the released tasks (SWE-bench field names plus `digest`,
//! the task node's key); `funnel.json` counts candidates → eligible → screened
//! → certified with the reasons for every loss.

use std::collections::BTreeMap;
use std::sync::Arc;

use assay_engine::{Digest, JobCtx, KeyRecord, SCHEMA_VERSION, encode_params};
use serde::{Deserialize, Serialize};

use super::adapter::{Kind, Made, NodeKind, Raw};
use crate::model::records::{Arm, GradeRecord, TaskRecord, TaskStatus, Verdict};
use crate::model::rules::funnel::Reason;
use crate::release::{
    About, Funnel, HarborScreen, InstanceFunnel, InstanceReading, Price, PublishInput, publish,
};
use crate::run::error::{Context, Kinded, NodeError};
use crate::run::swebench;

/// 3: a release without sessions publishes too (summary.json, report.html
/// with the tasks, the funnel and what to do next, manifest.json), so a
/// first build has a page to open and a digest to anchor it.
/// 4: results.csv writes a list over 4,096 characters by its count.
pub(crate) const KIND_VERSION: u32 = 4;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ReleaseRecord {
    /// File name -> blob digest.
    pub(crate) files: BTreeMap<String, String>,
    pub(crate) funnel: Funnel,
}

/// What each input of the release node is, in input order. Part of the
/// params, so an auditor can recompute the release from its key record alone.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Input {
    /// A task, with its candidate id.
    Task(String),
    /// A Deep-SWE-shaped Harbor folder's assay task: counted in the
    /// Harbor funnel, not as a mined candidate. Its word, part of the
    /// release's params, stays `swe_task`.
    #[serde(rename = "swe_task")]
    DeepSweTask,
    Session,
    Grade,
    Metrics,
    /// A judge reading, with the judge's name.
    Judge(String),
    /// A Harbor task folder, screened.
    HarborTask,
    /// A `[[metric]]` on a graded or a gold tree.
    Quality,
    /// An app task's controls.
    AppCertify,
    /// A session's layers on an app task.
    AppGrade,
    /// The dataset's own verifier's reading of a session on a
    /// Deep-SWE-shaped task that assay grades itself: shown beside
    /// assay's verdict, never counted.
    DatasetReading,
    /// A SWE-bench-family instance's assay task (docs/instances.md):
    /// released as a task, never counted among the mined candidates.
    InstanceTask,
    /// One screening reading of an instance's task (its run record): the
    /// wall time of each control in the dataset-health report.
    InstanceReading {
        /// The task's id, `<name>/<instance_id>`.
        task: String,
        /// `base`, `test` or `gold`.
        state: String,
        reading: u32,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ReleaseParams {
    pub(crate) prices: BTreeMap<String, Price>,
    /// Sessions that were not graded, with why (known when the graph is laid out).
    pub(crate) not_graded: Vec<(String, String)>,
    /// The Harbor jobs among the sessions: their plans and every trial's
    /// outcome, for the trial accounting; left out of the key when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) trials: Vec<crate::sessions::harbor::JobTrials>,
    pub(crate) inputs: Vec<Input>,
    /// The `[[judge]]`s; left out of the key when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) judges: Vec<crate::model::records::JudgeInfo>,
    /// Sealed into manifest.json (`provenance`); absent: nothing added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) provenance: Option<crate::run::provenance::Provenance>,
    /// Each Harbor task folder's newest change (`<dataset>/<folder>` ->
    /// ISO 8601): the date of its task where the folder gives no merge,
    /// and of a release that has no merged PR. Left out of the key when
    /// there is no Harbor dataset.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) harbor_changed: BTreeMap<String, String>,
    /// The `[[instances]]` files' rows, for the funnel; left out of the
    /// key when the pipeline has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) instance_rows: Option<InstanceRows>,
}

/// How many rows the `[[instances]]` files hold, and those that do not
/// read (`<name>/line-<n>`): the funnel's rows before any node ran.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct InstanceRows {
    pub(crate) rows: usize,
    pub(crate) unreadable: Vec<String>,
}

/// The release node: every task, session, grade, metrics and judge reading,
/// described in its params' `inputs`, made into the release files.
pub(crate) struct Release(pub(crate) ReleaseParams);

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
    executor: &'a Option<String>,
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

impl Kind for Release {
    const NAME: &'static str = NodeKind::Release.as_str();
    /// 2: manifest.json carries the provenance.
    const VERSION: u32 = KIND_VERSION;
    type Params = ReleaseParams;
    type Inputs = Raw;
    type Record = ReleaseRecord;

    fn params(&self) -> &ReleaseParams {
        &self.0
    }

    async fn run(self: Arc<Self>, raw: Raw, ctx: JobCtx) -> Result<Made<ReleaseRecord>, NodeError> {
        let mut ph = crate::run::phase::Phases::new("release");
        let inputs: Vec<(&[u8], Digest)> = raw.0.iter().map(|(b, k)| (b.as_slice(), *k)).collect();
        let (files, funnel) = assemble(&self.0, &inputs, &read_from(&ctx.blobs))?;
        ph.mark("assemble");
        let mut names = BTreeMap::new();
        let mut attachments = Vec::new();
        for (name, bytes) in files {
            let d = ctx.blobs.put(&bytes).cache()?;
            attachments.push(d);
            names.insert(name, d.to_hex());
        }
        ph.mark("blobs");
        Ok(Made {
            record: ReleaseRecord {
                files: names,
                funnel,
            },
            attachments,
        })
    }
}

/// Reads a content-addressed blob by its hex digest: the blob store for the
/// job and `verify --release`, an audit bundle's `blobs/` for `verify --bundle`.
pub(crate) type ReadBlob<'a> = &'a dyn Fn(&str) -> Result<Vec<u8>, NodeError>;

/// The [`ReadBlob`] of a blob store: a name that is no digest is the
/// record's (its input), a blob that does not read the cache's.
pub(crate) fn read_from(
    blobs: &assay_engine::Blobs,
) -> impl Fn(&str) -> Result<Vec<u8>, NodeError> + '_ {
    move |hex: &str| {
        let d: Digest = hex.parse().input()?;
        blobs.get(&d).cache()
    }
}

/// The release files from the release node's inputs (each with its node
/// key), in input order: a pure function, shared by the job and `assay verify`.
/// The only blobs it reads are the session patches and transcripts (for the
/// report), which the session records name by digest: the release key
/// covers them. A record that does not read is an [`ErrorKind::Input`]
/// failure: under `verify --bundle` the records are the bundle's.
///
/// [`ErrorKind::Input`]: crate::run::error::ErrorKind::Input
pub(crate) fn assemble(
    params: &ReleaseParams,
    inputs: &[(&[u8], Digest)],
    read: ReadBlob<'_>,
) -> Result<(BTreeMap<String, Vec<u8>>, Funnel), NodeError> {
    if inputs.len() != params.inputs.len() {
        return Err(NodeError::input(format!(
            "{} inputs, but the params describe {}",
            inputs.len(),
            params.inputs.len()
        )));
    }
    let mut ph = crate::run::phase::Phases::new("assemble");
    let mut gathered = Gathered::new(params);
    for ((bytes, key), kind) in inputs.iter().map(|(b, k)| (*b, k)).zip(&params.inputs) {
        gathered.take(params, kind, bytes, key)?;
    }
    ph.mark("inputs");
    let Gathered {
        mut funnel,
        lines,
        uncertified_lines,
        harbor_lines,
        per_candidate,
        mut publish_input,
    } = gathered;
    funnel.candidates = per_candidate.len();
    for p in per_candidate.values() {
        match &p.declined {
            Some(reason) => *funnel.declined.entry(reason.clone()).or_default() += 1,
            None => {
                funnel.eligible += 1;
                funnel.screened += usize::from(p.screened);
                funnel.certified += usize::from(p.certified);
            }
        }
    }
    let jsonl = |mut lines: Vec<(String, String, String)>| {
        lines.sort();
        let mut out = String::new();
        for (_, _, l) in lines {
            out.push_str(&l);
            out.push('\n');
        }
        out.into_bytes()
    };
    let funnel_json = serde_json::to_vec_pretty(&funnel).map_err(NodeError::internal)?;
    let mut files = BTreeMap::from([
        ("tasks.jsonl".to_owned(), jsonl(lines)),
        ("funnel.json".to_owned(), funnel_json),
    ]);
    // Uncertified tasks never score an agent: a file of their own (always
    // written, so no stale one survives), and the SWE-bench-loadable
    // `tasks.jsonl` holds only tasks whose controls hold.
    files.insert(
        "tasks.uncertified.jsonl".to_owned(),
        jsonl(uncertified_lines),
    );
    // A `[[harbor_dataset]]`'s tasks, certified or not, with their readings.
    if !harbor_lines.is_empty() {
        files.insert("harbor-tasks.jsonl".to_owned(), jsonl(harbor_lines));
    }
    publish_input.not_graded.sort();
    publish_input.not_graded.dedup();
    read_blobs(&mut publish_input, read)?;
    ph.mark("patches");
    let key = release_key(params, inputs);
    ph.mark("key");
    publish_input.about = About {
        funnel: funnel.clone(),
        provenance: params.provenance.clone(),
        release_node: key.to_hex(),
        harbor_changed: params.harbor_changed.values().max().cloned(),
    };
    publish_input.harbor_screens.sort_by(|a, b| a.id.cmp(&b.id));
    // With provenance, publish seals it into manifest.json.
    files.extend(publish(&publish_input));
    Ok((files, funnel))
}

/// Per candidate: how far it got along the funnel, over all its tasks.
#[derive(Default)]
struct Progress {
    declined: Option<String>,
    screened: bool,
    certified: bool,
}

/// What the release reads from its inputs, before its files are written.
struct Gathered {
    funnel: Funnel,
    /// (instance id, track, line) of `tasks.jsonl`.
    lines: Vec<(String, String, String)>,
    /// The same of `tasks.uncertified.jsonl`.
    uncertified_lines: Vec<(String, String, String)>,
    /// (dataset, folder, line) of `harbor-tasks.jsonl`.
    harbor_lines: Vec<(String, String, String)>,
    per_candidate: BTreeMap<String, Progress>,
    publish_input: PublishInput,
}

impl Gathered {
    fn new(params: &ReleaseParams) -> Self {
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
    fn take(
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

/// The blobs the report shows, read once each: the sessions' patches and
/// transcripts, and the app grades' failing screenshots.
fn read_blobs(publish_input: &mut PublishInput, read: ReadBlob<'_>) -> Result<(), NodeError> {
    for s in &publish_input.sessions {
        if !s.patch.is_empty() && !publish_input.patches.contains_key(&s.patch) {
            let patch = read(&s.patch).with_context(|| format!("session {}: patch", s.id))?;
            publish_input.patches.insert(s.patch.clone(), patch);
        }
        if let Some(t) = &s.transcript
            && !publish_input.transcripts.contains_key(t)
        {
            let bytes = read(t).with_context(|| format!("session {}: transcript", s.id))?;
            publish_input.transcripts.insert(t.clone(), bytes);
        }
    }
    for (g, _) in &publish_input.app_grades {
        if let Some(shot) = g.failing_shot.as_ref().filter(|s| !s.png.is_empty())
            && !publish_input.shots.contains_key(&shot.png)
        {
            let png =
                read(&shot.png).with_context(|| format!("session {}: screenshot", g.session))?;
            publish_input.shots.insert(shot.png.clone(), png);
        }
    }
    Ok(())
}

/// The release node's key, from its params and its inputs' bytes: what the
/// engine computes for it.
fn release_key(params: &ReleaseParams, inputs: &[(&[u8], Digest)]) -> Digest {
    KeyRecord {
        schema: SCHEMA_VERSION,
        kind: NodeKind::Release.as_str().to_owned(),
        kind_version: KIND_VERSION,
        params: encode_params(params),
        deps: inputs.iter().map(|(b, _)| Digest::of(b)).collect(),
    }
    .key()
}
/// The release node's inputs as they are laid out: each node beside what
/// it is (the release params list the latter, in the same order).
#[derive(Default)]
pub(crate) struct ReleaseInputs {
    nodes: Vec<(String, Input)>,
    /// The nodes that may be pushed by several sessions (a task's gold
    /// quality), pushed once.
    once: std::collections::BTreeSet<String>,
}

impl ReleaseInputs {
    pub(crate) fn push(&mut self, node: String, what: Input) {
        self.nodes.push((node, what));
    }

    /// Pushes `node` unless it was pushed this way before; whether it was new.
    pub(crate) fn push_once(&mut self, node: String, what: Input) -> bool {
        let new = self.once.insert(node.clone());
        if new {
            self.push(node, what);
        }
        new
    }

    pub(crate) fn split(self) -> (Vec<String>, Vec<Input>) {
        self.nodes.into_iter().unzip()
    }
}

#[cfg(test)]
mod tests {
    use super::Input;

    /// The inputs' words are part of the release's params, so of its key:
    /// a Deep-SWE folder's task keeps the word `swe_task`.
    #[test]
    fn a_deepswe_task_input_keeps_its_word() {
        let words = serde_json::to_string(&[Input::DeepSweTask, Input::InstanceTask]).unwrap();
        assert_eq!(words, r#"["swe_task","instance_task"]"#);
    }
}
