//! The release files built from grades: `results.csv`, `summary.json`,
//! `report.html` and `manifest.json`.
//!
//! [`publish`] is a pure function: the same input gives the same bytes, in
//! whatever order the input lists its grades, sessions, metrics or tasks.
//! Everything is sorted, maps are BTreeMaps, no clock is read, and published
//! floats are rounded to six decimals (see [`round6`]) so an auditor in any
//! language can reproduce them.
//!
//! Scoring rules (what summary.json counts):
//! - each session is scored once, on its `exclude` arm; a session graded only
//!   on the `keep` arm is scored on that one;
//! - a grade on a task released as uncertified never scores an agent: the
//!   session is listed under `not_graded` with the reason `task uncertified`;
//! - `resolved_after_rerun` is counted apart and is not in the resolved rate;
//! - empty-patch sessions stay in `n` (they score zero) and are also counted
//!   apart as `empty_patch`;
//! - where a session's `exclude` and `keep` arms disagree, it is listed in
//!   `verifier_suspects`: the verifier, not the agent, is the suspect.

mod csv;
mod detail;
mod html;
mod judged;
mod manifest;
mod summary;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::records::{Arm, GradeRecord, MetricsRecord, SessionRecord, TaskRecord};

/// USD per million tokens, by token kind (input, output, cache_read, …).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Price(pub(crate) BTreeMap<String, f64>);

#[derive(Default)]
pub(crate) struct PublishInput {
    /// Released tasks (certified or not) with their digests.
    pub(crate) tasks: Vec<(TaskRecord, String)>,
    /// Every grade with its grade node key.
    pub(crate) grades: Vec<(GradeRecord, String)>,
    pub(crate) metrics: Vec<MetricsRecord>,
    pub(crate) sessions: Vec<SessionRecord>,
    /// Sessions not graded, with why (unknown task, uncertified task, unreadable file).
    pub(crate) not_graded: Vec<(String, String)>,
    /// model label -> price.
    pub(crate) prices: BTreeMap<String, Price>,
    /// The `[[judge]]`s; none: nothing judged, nothing said.
    pub(crate) judges: Vec<crate::stages::judge::JudgeInfo>,
    /// Every judge reading: (judge name, record, judge node key).
    pub(crate) readings: Vec<(String, crate::stages::judge::JudgeRecord, String)>,
    /// Session patch blob digest -> its bytes (the report shows them).
    pub(crate) patches: BTreeMap<String, Vec<u8>>,
    /// What the report's header says the release is.
    pub(crate) about: About,
}

/// The release as the report's header describes it: nothing here enters
/// summary.json, results.csv or manifest.json (the provenance is sealed into
/// the manifest apart).
#[derive(Default)]
pub(crate) struct About {
    /// Candidates (PRs) → eligible → screened → certified, and the tasks.
    pub(crate) funnel: super::release::Funnel,
    pub(crate) provenance: Option<super::provenance::Provenance>,
    /// The release node's key (the release digest, which covers this file,
    /// can only be in manifest.json).
    pub(crate) release_node: String,
}

/// The tracks the rate is split by (others found in the grades are added).
pub(crate) const TRACKS: [&str; 2] = ["basic", "spec"];

/// The z of a two-sided 95% interval.
const Z95: f64 = 1.959964;

/// File name -> bytes: `results.csv`, `summary.json`, `report.html`, `manifest.json`.
pub(crate) fn publish(input: &PublishInput) -> BTreeMap<String, Vec<u8>> {
    let index = Index::new(input);
    let csv = csv::results(&index);
    let (summary, sources) = summary::summary(&index);
    let summary_bytes = summary::to_bytes(&summary);
    let html = html::report(&index, &summary);
    let mut files = BTreeMap::new();
    files.insert("results.csv".to_owned(), csv.into_bytes());
    files.insert("summary.json".to_owned(), summary_bytes);
    files.insert("report.html".to_owned(), html.into_bytes());
    let manifest = manifest::manifest(&index, &files, &summary, &sources);
    files.insert("manifest.json".to_owned(), manifest);
    files
}

/// The Wilson 95% score interval of `k` successes in `n` trials, clamped to
/// [0, 1]; None when `n` is 0 (no rate) or `k > n` (no such rate).
pub(crate) fn wilson(k: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At p = 0 or 1 the bound is exact in theory; do not let rounding leak out.
    let lo = if k == 0.0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if k == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some((lo, hi))
}

/// What a session's tokens cost by `[prices]`: per model id where its
/// transcript gives per-model usage, else by its model label. Token kinds
/// and model ids without a price add nothing and are noted in `unpriced`.
pub(crate) fn session_cost(
    prices: &BTreeMap<String, Price>,
    label: &str,
    facts: &super::records::RunFacts,
    unpriced: &mut BTreeSet<String>,
) -> f64 {
    let mut priced = |who: &str, tokens: &BTreeMap<String, u64>| {
        let Some(price) = prices.get(who) else {
            unpriced.insert(format!("model {who}"));
            return 0.0;
        };
        tokens
            .iter()
            .filter_map(|(kind, n)| match price.0.get(kind) {
                Some(usd) => Some(*n as f64 * usd / 1e6),
                None => {
                    unpriced.insert(kind.clone());
                    None
                }
            })
            .sum::<f64>()
    };
    if facts.by_model.is_empty() {
        priced(label, &facts.tokens)
    } else {
        facts
            .by_model
            .iter()
            .map(|(id, kinds)| priced(id, kinds))
            .sum()
    }
}

/// Published floats carry six decimals: recomputing with any IEEE-754 double
/// arithmetic and rounding the same way gives the same number.
pub(crate) fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// `agent/model` as the key of `summary.agents`: `%` and `/` inside either
/// label are percent-encoded, so two different pairs never share a key.
pub(crate) fn agent_key(agent: &str, model: &str) -> String {
    let enc = |s: &str| s.replace('%', "%25").replace('/', "%2F");
    format!("{}/{}", enc(agent), enc(model))
}

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
    /// Tasks sorted by (instance_id, track, digest).
    pub(crate) tasks: Vec<(&'a TaskRecord, &'a str)>,
    /// (session, reason), sorted and deduplicated; includes grades on uncertified tasks.
    pub(crate) not_graded: Vec<(String, String)>,
    pub(crate) suspects: Vec<Suspect<'a>>,
    pub(crate) prices: &'a BTreeMap<String, Price>,
    pub(crate) judged: judged::Judged<'a>,
    pub(crate) patches: &'a BTreeMap<String, Vec<u8>>,
    pub(crate) about: &'a About,
}

impl<'a> Index<'a> {
    fn new(input: &'a PublishInput) -> Self {
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
            tasks,
            not_graded: not_graded.into_iter().collect(),
            suspects,
            prices: &input.prices,
            judged: judged::Judged::new(&input.judges, &input.readings),
            patches: &input.patches,
            about: &input.about,
        }
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
