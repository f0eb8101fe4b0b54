//! The rebuild rules as the pipeline checked them, and what one did in a
//! run: the records' words. When a rule applies and what its output says
//! are decided in `rules::rebuild`.

use serde::{Deserialize, Serialize};

/// One rule as the pipeline checked it: when a tree differs from its base
/// in a path matching one of `paths` (globs over repo-relative paths),
/// `command` runs at the tree's root before the test command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RebuildRule {
    pub(crate) paths: Vec<String>,
    pub(crate) command: String,
}

impl RebuildRule {
    /// How a record, a grade's detail and the report name the rule.
    pub(crate) fn label(&self) -> String {
        format!("rebuild `{}` ({})", self.command, self.paths.join(", "))
    }
}

/// An environment's rules: written, or (`detect`, the node preset with no
/// `rebuild` written) read from each tree's base workspace manifest
/// ([`detect`]). Keyed by the nodes that compose trees; left out of their
/// keys when unset.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RebuildSpec {
    pub(crate) rules: Vec<RebuildRule>,
    pub(crate) detect: bool,
}

impl RebuildSpec {
    pub(crate) fn is_unset(&self) -> bool {
        self.rules.is_empty() && !self.detect
    }
}

/// What one rule did in a run: recorded in the run's record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Rebuilt {
    pub(crate) paths: Vec<String>,
    pub(crate) command: String,
    /// Its exit code; absent when it never ended (the run timed out or was
    /// killed during it) or never started (an earlier rule failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) exit_code: Option<i32>,
    /// Whether it started.
    pub(crate) started: bool,
    /// The last lines of its output (the log is already redacted).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) tail: String,
}

impl Rebuilt {
    pub(crate) fn failed(&self) -> bool {
        self.started && self.exit_code != Some(0)
    }
}
