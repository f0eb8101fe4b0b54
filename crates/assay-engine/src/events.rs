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
        /// Whose problem the failure is, as the job classed it.
        #[serde(skip_serializing_if = "Option::is_none")]
        class: Option<&'a str>,
    },
    NodeSkipped {
        name: &'a str,
        kind: &'a str,
        because: &'a str,
    },
    /// A running job's own word on its work ([`crate::Notes`]): e.g. a
    /// remote executor's `queued`, `running` and `done` on a cluster node.
    JobState {
        name: &'a str,
        kind: &'a str,
        state: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        place: Option<&'a str>,
    },
    /// A running job's warning: something the user should know that did
    /// not fail it (an environment rebuilt because its image was gone).
    JobWarning {
        name: &'a str,
        kind: &'a str,
        message: &'a str,
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
    /// The failed nodes by their class ([`crate::JobError::class`]; a
    /// failure its job did not class counts under `unclassified`).
    /// Absent when nothing failed.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub failed_by_class: BTreeMap<String, usize>,
}

/// Which count of a [`Summary`] a node's end adds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tally {
    Executed,
    Reused,
    Failed,
    Skipped,
}

impl Tally {
    /// The one of the four counts (in the order of their fields) it adds to.
    fn of(self, [executed, reused, failed, skipped]: [&mut usize; 4]) -> &mut usize {
        match self {
            Tally::Executed => executed,
            Tally::Reused => reused,
            Tally::Failed => failed,
            Tally::Skipped => skipped,
        }
    }
}

/// The word a failure its job did not class counts under.
pub const UNCLASSIFIED: &str = "unclassified";

impl Summary {
    /// One more failed node of `class`.
    pub(crate) fn count_class(&mut self, class: Option<&str>) {
        *self
            .failed_by_class
            .entry(class.unwrap_or(UNCLASSIFIED).to_owned())
            .or_default() += 1;
    }

    pub(crate) fn count(&mut self, kind: &str, tally: Tally) {
        // The kind is almost always present already: allocate only to insert it.
        if !self.by_kind.contains_key(kind) {
            self.by_kind.insert(kind.to_owned(), KindCounts::default());
        }
        if let Some(k) = self.by_kind.get_mut(kind) {
            *tally.of([
                &mut k.executed,
                &mut k.reused,
                &mut k.failed,
                &mut k.skipped,
            ]) += 1;
        }
        let s = self;
        *tally.of([
            &mut s.executed,
            &mut s.reused,
            &mut s.failed,
            &mut s.skipped,
        ]) += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tally_adds_to_its_own_count_in_total_and_by_kind() {
        let mut s = Summary::default();
        for (kind, tally) in [
            ("run", Tally::Executed),
            ("run", Tally::Reused),
            ("run", Tally::Reused),
            ("grade", Tally::Failed),
            ("grade", Tally::Skipped),
        ] {
            s.count(kind, tally);
        }
        assert_eq!((s.executed, s.reused, s.failed, s.skipped), (1, 2, 1, 1));
        assert_eq!(
            s.by_kind["run"],
            KindCounts {
                executed: 1,
                reused: 2,
                failed: 0,
                skipped: 0
            }
        );
        assert_eq!(
            s.by_kind["grade"],
            KindCounts {
                executed: 0,
                reused: 0,
                failed: 1,
                skipped: 1
            }
        );
    }
}
