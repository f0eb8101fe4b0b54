//! What `verify` reports: one disagreement, or one thing that could not be
//! checked, named by the first thing that differs.

use serde::Serialize;

/// One disagreement, or one thing that could not be checked.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Finding {
    pub(crate) what: String,
    pub(crate) problem: String,
}

pub(crate) fn finding(what: impl Into<String>, problem: impl Into<String>) -> Finding {
    Finding {
        what: what.into(),
        problem: problem.into(),
    }
}
