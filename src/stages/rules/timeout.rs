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
    /// The timeout of a task whose slowest screening reading took at most
    /// `slowest_s` ([`bucket`]); None (the environment's) when none is known.
    pub(crate) fn of(self, slowest_s: Option<u64>) -> Option<u64> {
        let derived = slowest_s?.saturating_mul(u64::from(self.factor));
        Some(derived.max(self.floor_s).min(self.ceiling_s))
    }
}

/// A reading's duration as the screen records it: whole seconds rounded up
/// to a power of two (1, 2, 4, 8, …). A task's key rests on its screening
/// record; a duration in milliseconds would give every machine, and every
/// load, another task digest. Only a reading near a power of two can land
/// in another bucket elsewhere.
pub(crate) fn bucket(ms: u64) -> u64 {
    ms.div_ceil(1000).max(1).next_power_of_two()
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
        assert_eq!(RULE.of(Some(8)), Some(80));
        assert_eq!(RULE.of(Some(1)), Some(30), "the floor");
        assert_eq!(RULE.of(Some(256)), Some(1800), "the ceiling");
        assert_eq!(RULE.of(None), None);
    }

    #[test]
    fn a_duration_is_bucketed_to_a_power_of_two_seconds_rounded_up() {
        assert_eq!(bucket(0), 1);
        assert_eq!(bucket(50), 1);
        assert_eq!(bucket(1000), 1);
        assert_eq!(bucket(1001), 2);
        assert_eq!(bucket(2900), 4, "a 2.9 s suite times out at 40 s");
        assert_eq!(bucket(9_000), 16);
    }
}
