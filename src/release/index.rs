//! The release's input, sorted and cross-referenced once: every renderer and
//! the assembly read the same order, whatever order the input came in.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::input::{About, HarborScreen, InstanceReading, Price, PublishInput};
use super::judged::Judged;
use super::quality::Figures;
use crate::model::records::{Arm, GradeRecord, MetricsRecord, SessionRecord, TaskRecord};

/// One grade with its node key.
pub(crate) type Graded<'a> = &'a (GradeRecord, String);

/// A session whose two arms disagree.
pub(crate) struct Suspect<'a> {
    pub(crate) exclude: Graded<'a>,
    pub(crate) keep: Graded<'a>,
}

/// The input, sorted and cross-referenced once.
pub(crate) struct Index<'a> {
    /// Every grade, sorted by (agent, model, session, arm, key).
    pub(crate) grades: Vec<Graded<'a>>,
    /// (agent, model) -> the scored grade of each of its sessions, by session.
    pub(crate) groups: BTreeMap<(String, String), Vec<Graded<'a>>>,
    pub(crate) sessions: BTreeMap<&'a str, &'a SessionRecord>,
    pub(crate) metrics: BTreeMap<&'a str, &'a MetricsRecord>,
    /// The `[[metric]]` figures (none without metrics).
    pub(crate) quality: Figures<'a>,
    /// Tasks sorted by (instance_id, track, digest).
    pub(crate) tasks: Vec<(&'a TaskRecord, &'a str)>,
    /// The certified reward-only Harbor tasks' digests (basic track).
    pub(crate) harbor_tasks: BTreeSet<&'a str>,
    /// Every Harbor task folder as screened, by id.
    pub(crate) harbor_screens: BTreeMap<&'a str, &'a HarborScreen>,
    /// Session -> the (instance_id, track) of the task page its section is
    /// on: its scored arm's task (any arm's where it has none).
    pub(crate) homes: BTreeMap<&'a str, (&'a str, &'a str)>,
    /// (session, reason), sorted and deduplicated; includes grades on uncertified tasks.
    pub(crate) not_graded: Vec<(String, String)>,
    pub(crate) suspects: Vec<Suspect<'a>>,
    pub(crate) prices: &'a BTreeMap<String, Price>,
    pub(crate) judged: Judged<'a>,
    pub(crate) patches: &'a BTreeMap<String, Vec<u8>>,
    /// Transcript blob digest -> its (redacted) bytes.
    pub(crate) transcripts: &'a BTreeMap<String, Vec<u8>>,
    pub(crate) about: &'a About,
    /// The Harbor jobs among the sessions (the trial accounting).
    pub(crate) jobs: &'a [crate::sessions::harbor::JobTrials],
    /// The dataset's own verifier's readings (Deep-SWE-shaped tasks).
    pub(crate) dataset_readings: &'a [(GradeRecord, String)],
    /// The app tasks' controls and their sessions' layers, with node keys.
    pub(crate) app_tasks: &'a [(crate::model::rules::app::AppCertifyRecord, String)],
    pub(crate) app_grades: &'a [(crate::model::rules::app::AppGradeRecord, String)],
    /// Screenshot blob digest -> its PNG (the failing browser steps).
    pub(crate) shots: &'a BTreeMap<String, Vec<u8>>,
    /// The instances' screening readings, sorted by (task, state,
    /// reading, key).
    pub(crate) instance_readings: Vec<&'a InstanceReading>,
}

impl<'a> Index<'a> {
    pub(super) fn new(input: &'a PublishInput) -> Self {
        let mut grades: Vec<Graded<'a>> = input.grades.iter().collect();
        grades.sort_by(|a, b| grade_order(a).cmp(&grade_order(b)));

        let mut tasks: Vec<(&TaskRecord, &str)> =
            input.tasks.iter().map(|(t, d)| (t, d.as_str())).collect();
        tasks.sort_by(|a, b| {
            (&a.0.instance_id, &a.0.track, a.1).cmp(&(&b.0.instance_id, &b.0.track, b.1))
        });
        let uncertified: BTreeSet<&str> = tasks
            .iter()
            .filter(|(t, _)| !t.certified)
            .map(|(_, d)| *d)
            .collect();

        let mut not_graded: BTreeSet<(String, String)> = input.not_graded.iter().cloned().collect();

        // session -> arm -> first grade in sorted order.
        let mut arms: BTreeMap<&str, BTreeMap<Arm, Graded<'a>>> = BTreeMap::new();
        for g in &grades {
            arms.entry(g.0.session.as_str())
                .or_default()
                .entry(g.0.arm)
                .or_insert(*g);
        }
        let homes = arms
            .iter()
            .filter_map(|(session, by_arm)| {
                let g = by_arm
                    .get(&Arm::SCORED)
                    .or_else(|| by_arm.values().next())?;
                Some((*session, (g.0.instance_id.as_str(), g.0.track.as_str())))
            })
            .collect();
        let mut groups: BTreeMap<(String, String), Vec<Graded<'a>>> = BTreeMap::new();
        let mut suspects = Vec::new();
        for (session, by_arm) in &arms {
            if let (Some(ex), Some(keep)) = (by_arm.get(&Arm::SCORED), by_arm.get(&Arm::CONTRAST))
                && ex.0.verdict != keep.0.verdict
            {
                suspects.push(Suspect { exclude: ex, keep });
            }
            let Some(scored) = by_arm
                .get(&Arm::SCORED)
                .or_else(|| by_arm.get(&Arm::CONTRAST))
            else {
                continue;
            };
            if uncertified.contains(scored.0.task_digest.as_str()) {
                not_graded.insert(((*session).to_owned(), "task uncertified".to_owned()));
                continue;
            }
            groups
                .entry((scored.0.agent.clone(), scored.0.model.clone()))
                .or_default()
                .push(scored);
        }

        Index {
            grades,
            groups,
            sessions: first_by(&input.sessions, |s| s.id.as_str()),
            metrics: first_by(&input.metrics, |m| m.session.as_str()),
            quality: Figures::new(&input.quality),
            tasks,
            harbor_tasks: input.harbor_tasks.iter().map(String::as_str).collect(),
            harbor_screens: input
                .harbor_screens
                .iter()
                .map(|h| (h.id.as_str(), h))
                .collect(),
            homes,
            not_graded: not_graded.into_iter().collect(),
            suspects,
            prices: &input.prices,
            judged: Judged::new(&input.judges, &input.readings),
            patches: &input.patches,
            transcripts: &input.transcripts,
            about: &input.about,
            jobs: &input.trials,
            dataset_readings: &input.dataset_readings,
            app_tasks: &input.app_tasks,
            app_grades: &input.app_grades,
            shots: &input.shots,
            instance_readings: {
                let mut r: Vec<&InstanceReading> = input.instance_readings.iter().collect();
                r.sort_by(|a, b| {
                    (&a.task, &a.state, a.reading, &a.key)
                        .cmp(&(&b.task, &b.state, b.reading, &b.key))
                });
                r
            },
        }
    }

    /// Each session's scored grade (what its pair's numbers count).
    pub(crate) fn scored_by_session(&self) -> BTreeMap<&'a str, Graded<'a>> {
        self.groups
            .values()
            .flatten()
            .map(|g| (g.0.session.as_str(), *g))
            .collect()
    }

    /// Whether `session` answered with an empty patch: as its metrics
    /// measured the patch graded, and for a session no metrics node
    /// measures (one graded by a Harbor task's own verifier: a session
    /// file, an imported trial, an attempt), as its record says — no patch,
    /// or one of whitespace alone, and no working directory graded in its
    /// place. An attempt whose workspace assay refused to read (over the
    /// read-back bound) answered too much, not nothing.
    pub(crate) fn empty_patch(&self, session: &str) -> bool {
        let record = self.sessions.get(session);
        if record.is_some_and(|s| s.facts.patch_refused.is_some()) {
            return false;
        }
        if let Some(m) = self.metrics.get(session) {
            return m.empty_patch;
        }
        let Some(s) = record else {
            return false;
        };
        let workspace = s
            .facts
            .trial
            .as_ref()
            .is_some_and(|t| t.workspace.is_some());
        let blank = s.patch.is_empty()
            || self
                .patches
                .get(&s.patch)
                .is_some_and(|p| p.iter().all(u8::is_ascii_whitespace));
        blank && !workspace
    }

    /// The scored grades of a pair (none when every one hit an uncertified task).
    pub(crate) fn scored(&self, agent: &str, model: &str) -> &[Graded<'a>] {
        self.groups
            .get(&(agent.to_owned(), model.to_owned()))
            .map_or(&[], Vec::as_slice)
    }

    /// (agent, model) pairs that have any grade, scored or not, so a pair whose
    /// every session hit an uncertified task still shows (with n = 0).
    pub(crate) fn pairs(&self) -> BTreeSet<(String, String)> {
        let mut pairs: BTreeSet<(String, String)> = self.groups.keys().cloned().collect();
        pairs.extend(
            self.grades
                .iter()
                .map(|g| (g.0.agent.clone(), g.0.model.clone())),
        );
        pairs
    }
}

fn grade_order<'a>(g: Graded<'a>) -> (&'a str, &'a str, &'a str, &'a str, &'a str) {
    (&g.0.agent, &g.0.model, &g.0.session, g.0.arm.as_str(), &g.1)
}

/// One record per id; where the input repeats an id, the record whose JSON
/// sorts first wins, so input order never matters.
fn first_by<'a, T: Serialize>(
    items: &'a [T],
    id: impl Fn(&'a T) -> &'a str,
) -> BTreeMap<&'a str, &'a T> {
    let mut out: BTreeMap<&str, (String, &T)> = BTreeMap::new();
    for item in items {
        let json = serde_json::to_string(item).unwrap_or_default();
        match out.get(id(item)) {
            Some((best, _)) if *best <= json => {}
            _ => {
                out.insert(id(item), (json, item));
            }
        }
    }
    out.into_iter().map(|(k, (_, v))| (k, v)).collect()
}
