//! A canary as the run reads it back: what it must do, what the reading
//! made of it, and whether a report id names it.

use assay_report::Outcome;
use serde::{Deserialize, Serialize};

use crate::words::words;

words! {
    /// What a canary must do.
    pub(crate) enum Must {
        Pass = "pass",
        Fail = "fail",
    }
}

/// One planted canary and, once read back, what the run made of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Canary {
    /// The hidden test file it was planted in.
    pub(crate) file: String,
    /// The test function's name (for unittest, `Class.method`).
    pub(crate) name: String,
    pub(crate) must: Must,
    /// Its outcome in the reading; `None` when the report did not name it.
    pub(crate) seen: Option<Outcome>,
    /// Whether the reading named another test of its file (so the canary
    /// had to be there).
    pub(crate) expected: bool,
    /// A mutant's original: its report id and its outcome in the reading.
    /// A mutant that passed where its original failed is a wrong answer
    /// that happens to equal the mutant's value, not a forgery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) of: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) original: Option<Outcome>,
}

/// Whether report id `id` names the test `name` (`Class.method` for
/// unittest): `name` ends the id at an identifier boundary, or (a custom
/// canary's description) stands in it as a whole word.
pub(crate) fn names_test(id: &str, name: &str) -> bool {
    // A JavaScript id: `file > describe > title`.
    if id
        .rsplit_once(" > ")
        .is_some_and(|(_, title)| title == name)
    {
        return true;
    }
    let word = |w: &str| w == name;
    if id
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(word)
    {
        return true;
    }
    let id = id.split(['[', ' ', '(']).next().unwrap_or(id);
    let id = id.replace("::", ".").replace('/', ".");
    id == name
        || id
            .strip_suffix(name)
            .is_some_and(|head| head.ends_with('.'))
}

/// The last identifier of a report id (`tests.test_x.T.test_a` → `test_a`,
/// `pkg.TestA` → `TestA`, `tests/x.py::test_a[1]` → `test_a`).
pub(super) fn last_segment(id: &str) -> &str {
    let id = id.split(['[', ' ', '(']).next().unwrap_or(id);
    id.rsplit([':', '.', '/']).next().unwrap_or(id)
}
