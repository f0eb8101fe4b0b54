//! A task's graded runs time out when they have hung, not at the
//! environment's fixed timeout: `[grade] timeout_factor` × the slowest of
//! the task's screening readings, at least `timeout_floor`, at most the
//! environment's `timeout` (docs/verdicts.md, "Timeouts"). A run ten times
//! past the slowest reading of the same tests in the same environment has
//! hung; waiting out the fixed timeout (SWE-bench's is 1,800 s) only costs.

use serde::Serialize;

/// `[grade] timeout_factor` and `timeout_floor`, with the environment's
/// timeout as the ceiling. Part of a task's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct TimeoutRule {
    pub(crate) factor: u32,
    pub(crate) floor_s: u64,
    pub(crate) ceiling_s: u64,
}

impl TimeoutRule {
    /// The timeout of a task whose slowest screening reading took
    /// `slowest_ms`; None (the environment's) when none is known.
    pub(crate) fn of(self, slowest_ms: Option<u64>) -> Option<u64> {
        let ms = slowest_ms?;
        let derived = ms.saturating_mul(u64::from(self.factor)).div_ceil(1000);
        Some(derived.max(self.floor_s).min(self.ceiling_s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: TimeoutRule = TimeoutRule {
        factor: 10,
        floor_s: 30,
        ceiling_s: 1800,
    };

    #[test]
    fn the_timeout_is_the_factor_of_the_slowest_reading_between_floor_and_ceiling() {
        assert_eq!(RULE.of(Some(9_000)), Some(90));
        assert_eq!(RULE.of(Some(9_001)), Some(91), "rounded up, never short");
        assert_eq!(RULE.of(Some(50)), Some(30), "the floor");
        assert_eq!(RULE.of(Some(600_000)), Some(1800), "the ceiling");
        assert_eq!(RULE.of(None), None);
    }
}
