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

use std::collections::{BTreeMap, BTreeSet};

use super::index::Graded;
use super::stats::round6;

/// What one published number was computed from.
#[derive(Clone, Debug, Default)]
pub(super) struct Source {
    pub(super) grades: BTreeSet<String>,
    pub(super) tasks: BTreeSet<String>,
    pub(super) sessions: BTreeSet<String>,
    /// Judge node keys.
    pub(super) readings: BTreeSet<String>,
    /// Grade node keys the number leaves out on purpose (a leaderboard's
    /// attempts that ended on an infrastructure fault).
    pub(super) left_out: BTreeSet<String>,
}

impl Source {
    pub(super) fn grades<'a>(grades: impl IntoIterator<Item = &'a Graded<'a>>) -> Self {
        Source {
            grades: grades.into_iter().map(|g| g.1.clone()).collect(),
            ..Source::default()
        }
    }

    pub(super) fn readings<'k>(keys: impl IntoIterator<Item = &'k str>) -> Self {
        Source {
            readings: keys.into_iter().map(str::to_owned).collect(),
            ..Source::default()
        }
    }
}

/// Path (see [`segment`]) -> source.
pub(super) type Sources = BTreeMap<String, Source>;

/// One step of a number's path: `.key` for a plain key (lowercase letters,
/// digits, `_`), `[key]` for any other key with `%`, `[` and `]`
/// percent-encoded, `[i]` for an array index. Paths start at `summary`.
pub(crate) fn segment(key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if plain {
        format!(".{key}")
    } else {
        format!(
            "[{}]",
            key.replace('%', "%25")
                .replace('[', "%5B")
                .replace(']', "%5D")
        )
    }
}

/// The value at `path` in a published JSON file's tree (`root` names the
/// tree: `summary`, `funnel`), found by writing every node's path as the
/// manifest writes a number's, so a path on the report resolves exactly as
/// written there; None when no node has it.
pub(crate) fn value_at<'v>(
    tree: &'v serde_json::Value,
    root: &str,
    path: &str,
) -> Option<&'v serde_json::Value> {
    if path == root {
        return Some(tree);
    }
    let children: Vec<(String, &serde_json::Value)> = match tree {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(k, v)| (format!("{root}{}", segment(k)), v))
            .collect(),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{root}[{i}]"), v))
            .collect(),
        _ => return None,
    };
    children
        .into_iter()
        .filter(|(p, _)| path.starts_with(p.as_str()))
        .find_map(|(p, v)| value_at(v, &p, path))
}

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
