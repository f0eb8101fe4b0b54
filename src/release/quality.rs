//! The `[[metric]]` figures of the release: per session and metric, what the
//! session introduced against its task's gold tree
//! ([`rules::quality::introduced`](crate::model::rules::quality::introduced)),
//! or why there is no figure (its node or the gold node failed).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::records::QualityRecord;
use crate::model::rules::quality::introduced;

/// One session's figure for one metric.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Figure {
    /// Findings the session's tree has beyond the gold tree's.
    Introduced(u64),
    /// Why it could not be measured.
    Failed(String),
}

impl Figure {
    pub(crate) fn introduced(&self) -> Option<u64> {
        match self {
            Figure::Introduced(n) => Some(*n),
            Figure::Failed(_) => None,
        }
    }
}

/// Every metric's figures.
#[derive(Default)]
pub(crate) struct Figures<'a> {
    /// The metrics, sorted by name.
    pub(crate) metrics: Vec<&'a str>,
    /// session -> metric -> its figure.
    pub(crate) by_session: BTreeMap<&'a str, BTreeMap<&'a str, Figure>>,
}

impl<'a> Figures<'a> {
    pub(crate) fn new(records: &'a [(QualityRecord, String)]) -> Figures<'a> {
        let mut metrics = BTreeSet::new();
        let mut gold: BTreeMap<(&str, &str), &QualityRecord> = BTreeMap::new();
        for (r, _) in records {
            metrics.insert(r.metric.as_str());
            if r.session.is_none() {
                gold.insert((r.metric.as_str(), r.task.as_str()), r);
            }
        }
        let mut by_session: BTreeMap<&str, BTreeMap<&str, Figure>> = BTreeMap::new();
        for (r, _) in records {
            let Some(session) = &r.session else {
                continue;
            };
            let figure = match (&r.failed, gold.get(&(r.metric.as_str(), r.task.as_str()))) {
                (Some(why), _) => Figure::Failed(why.clone()),
                (None, None) => Figure::Failed("the gold tree was not measured".into()),
                (None, Some(g)) => match &g.failed {
                    Some(why) => Figure::Failed(format!("the gold tree: {why}")),
                    None => Figure::Introduced(introduced(&r.by_path, &g.by_path)),
                },
            };
            by_session
                .entry(session.as_str())
                .or_default()
                .insert(r.metric.as_str(), figure);
        }
        Figures {
            metrics: metrics.into_iter().collect(),
            by_session,
        }
    }

    /// The figure of `session` for `metric`, if it was measured.
    pub(crate) fn get(&self, session: &str, metric: &str) -> Option<&Figure> {
        self.by_session.get(session)?.get(metric)
    }
}
