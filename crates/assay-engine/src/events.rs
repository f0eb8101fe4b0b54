//! What a build tells the world, kept apart from how it is shown.
//!
//! The scheduler emits [`Event`]s; the CLI's progress bar, `--json` stream and
//! closing summary are separate consumers.

use std::collections::BTreeMap;

use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    BuildStarted {
        build: i64,
        nodes: usize,
    },
    NodeStarted {
        name: String,
        kind: String,
        key: String,
    },
    NodeFinished {
        name: String,
        kind: String,
        key: String,
        output: String,
        duration_ms: u64,
    },
    NodeReused {
        name: String,
        kind: String,
        key: String,
        output: String,
    },
    NodeFailed {
        name: String,
        kind: String,
        key: String,
        reason: String,
    },
    NodeSkipped {
        name: String,
        kind: String,
        because: String,
    },
    /// A cached result whose blob was missing or corrupt: treated as a miss.
    CacheRepaired {
        name: String,
        kind: String,
        key: String,
        problem: String,
    },
    Summary(Summary),
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    pub executed: usize,
    pub reused: usize,
    pub failed: usize,
    pub skipped: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub executed: usize,
    pub reused: usize,
    pub failed: usize,
    pub skipped: usize,
    pub by_kind: BTreeMap<String, KindCounts>,
}

impl Summary {
    pub(crate) fn count(&mut self, kind: &str, status: &str) {
        let k = self.by_kind.entry(kind.to_owned()).or_default();
        match status {
            "executed" => {
                self.executed += 1;
                k.executed += 1;
            }
            "reused" => {
                self.reused += 1;
                k.reused += 1;
            }
            "failed" => {
                self.failed += 1;
                k.failed += 1;
            }
            _ => {
                self.skipped += 1;
                k.skipped += 1;
            }
        }
    }
}
