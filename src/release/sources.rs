//! What every published number was computed from (grade node keys, task
//! digests, session ids, judge node keys), by the number's path in
//! summary.json: the manifest lists them so an auditor can recompute each
//! number from its grades. A count lists its whole population (the verdict
//! count `ineligible: 0` is a statement about every grade of the group); a
//! mean lists only the sessions that report the measured quantity.
//!
//! The assembly records a source through an [`At`] as it computes the
//! number; the number's value itself goes into the typed [`super::model`].
//! A test checks that every recorded path names a number of summary.json.

use super::paths::segment;
use std::collections::{BTreeMap, BTreeSet};

use super::index::Graded;
use super::stats::round6;

/// A key, digest or id a source names: shared, not copied, by every
/// number that names it (a grade is a source of dozens of numbers, and a
/// million sessions' grades are a million keys).
pub(crate) use super::model::Name;

/// What one published number was computed from.
#[derive(Clone, Debug, Default)]
pub(super) struct Source {
    pub(super) grades: BTreeSet<Name>,
    pub(super) tasks: BTreeSet<Name>,
    pub(super) sessions: BTreeSet<Name>,
    /// Judge node keys.
    pub(super) readings: BTreeSet<Name>,
    /// Grade node keys the number leaves out on purpose (a leaderboard's
    /// attempts that ended on an infrastructure fault).
    pub(super) left_out: BTreeSet<Name>,
}

impl Source {
    pub(super) fn grades<'a>(grades: impl IntoIterator<Item = &'a Graded<'a>>) -> Self {
        Source {
            grades: grades
                .into_iter()
                .map(|g| Name::from(g.1.as_str()))
                .collect(),
            ..Source::default()
        }
    }

    pub(super) fn readings<'k>(keys: impl IntoIterator<Item = &'k str>) -> Self {
        Source {
            readings: keys.into_iter().map(Name::from).collect(),
            ..Source::default()
        }
    }
}

/// Path (see [`segment`]) -> source.
pub(super) type Sources = BTreeMap<String, Source>;

/// The object being assembled at a path: records the sources of its numbers
/// and hands the numbers back for the model.
pub(super) struct At<'s> {
    path: String,
    sources: &'s mut Sources,
}

impl<'s> At<'s> {
    pub(super) fn root(sources: &'s mut Sources) -> Self {
        At {
            path: "summary".to_owned(),
            sources,
        }
    }

    fn child_path(&self, key: &str) -> String {
        format!("{}{}", self.path, segment(key))
    }

    /// A count at `key`.
    pub(super) fn count(&mut self, key: &str, value: u64, source: &Source) -> u64 {
        self.sources.insert(self.child_path(key), source.clone());
        value
    }

    /// A float at `key`, rounded; None (published as null, with no source)
    /// when there is none or it is not finite.
    pub(super) fn float(&mut self, key: &str, value: Option<f64>, source: &Source) -> Option<f64> {
        let value = value.map(round6).filter(|x| x.is_finite());
        if value.is_some() {
            self.sources.insert(self.child_path(key), source.clone());
        }
        value
    }

    /// The object at `key`.
    pub(super) fn at(&mut self, key: &str) -> At<'_> {
        At {
            path: self.child_path(key),
            sources: self.sources,
        }
    }

    /// Builds the object at `key`.
    pub(super) fn object<T>(&mut self, key: &str, build: impl FnOnce(&mut At<'_>) -> T) -> T {
        build(&mut self.at(key))
    }
}
