//! What a build tells the world, kept apart from how it is shown.
//!
//! The scheduler emits [`Event`]s; the CLI's progress bar, `--json` stream and
//! closing summary are separate consumers.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::key::Digest;

/// One thing that happened in a build. Events borrow from the build (names,
/// kinds, reasons) and carry digests as values, so emitting one per node of a
/// no-op build allocates nothing; digests serialize as hex.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event<'a> {
    BuildStarted {
        build: i64,
        nodes: usize,
    },
    NodeStarted {
        name: &'a str,
        kind: &'a str,
        #[serde(serialize_with = "hex")]
        key: Digest,
    },
    NodeFinished {
        name: &'a str,
        kind: &'a str,
        #[serde(serialize_with = "hex")]
        key: Digest,
        #[serde(serialize_with = "hex")]
        output: Digest,
        duration_ms: u64,
    },
    NodeReused {
        name: &'a str,
        kind: &'a str,
        #[serde(serialize_with = "hex")]
        key: Digest,
        #[serde(serialize_with = "hex")]
        output: Digest,
    },
    NodeFailed {
        name: &'a str,
        kind: &'a str,
        #[serde(serialize_with = "hex")]
        key: Digest,
        reason: &'a str,
    },
    NodeSkipped {
        name: &'a str,
        kind: &'a str,
        because: &'a str,
    },
    /// A cached result whose blob was missing or corrupt: treated as a miss.
    CacheRepaired {
        name: &'a str,
        kind: &'a str,
        #[serde(serialize_with = "hex")]
        key: Digest,
        problem: &'a str,
    },
    Summary(&'a Summary),
}

fn hex<S: serde::Serializer>(d: &Digest, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(d.hex_into(&mut [0u8; 64]))
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
        // The kind is almost always present already: allocate only to insert it.
        if !self.by_kind.contains_key(kind) {
            self.by_kind.insert(kind.to_owned(), KindCounts::default());
        }
        let Some(k) = self.by_kind.get_mut(kind) else {
            return;
        };
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
