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
    pub(crate) fn of(self, slowest_s: Option<f64>) -> Option<u64> {
        // Recorded values are whole milliseconds ([`bucket`]): reckon in them.
        let ms = (slowest_s? * 1000.0).round() as u64;
        let derived = ms.saturating_mul(u64::from(self.factor)).div_ceil(1000);
        Some(derived.max(self.floor_s).min(self.ceiling_s))
    }
}

/// The steps of a decade a reading is rounded up to: 1, 1.5, 2, 3, 5 and 7
/// times a power of ten.
const STEPS: [u64; 6] = [10, 15, 20, 30, 50, 70];

/// A reading's duration as the screen records it, in seconds: rounded up to
/// 1, 1.5, 2, 3, 5 or 7 times a power of ten, at least 0.5 s. A task's key
/// rests on its screening record; a duration in milliseconds would give
/// every machine, and every load, another task digest. Only a reading near
/// a step can land on another elsewhere, and a step is at most 1.67 times
/// the one before, so the timeout it gives is never more than that above
/// `factor` times the reading. Under half a second a suite's reading is
/// mostly the start of its processes, and its noise would cross the steps
/// there (0.2, 0.3) from one build to the next; ten times half a second is
/// the default floor anyway.
pub(crate) fn bucket(ms: u64) -> f64 {
    if ms <= 500 {
        return 0.5;
    }
    let mut scale: u64 = 10;
    while scale <= 1_000_000_000_000 {
        if let Some(step) = STEPS.iter().map(|s| s * scale).find(|&v| v >= ms) {
            return step as f64 / 1000.0;
        }
        scale *= 10;
    }
    ms as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: TimeoutRule = TimeoutRule {
        factor: 10,
        floor_s: 5,
        ceiling_s: 1800,
    };

    #[test]
    fn the_timeout_is_the_factor_of_the_slowest_reading_between_floor_and_ceiling() {
        assert_eq!(RULE.of(Some(8.0)), Some(80));
        assert_eq!(
            RULE.of(Some(0.7)),
            Some(7),
            "no float dust: 0.7 s gives 7 s"
        );
        assert_eq!(RULE.of(Some(0.3)), Some(5), "the floor");
        assert_eq!(RULE.of(Some(300.0)), Some(1800), "the ceiling");
        assert_eq!(
            RULE.of(Some(1.0)),
            Some(10),
            "a record of the old powers of two"
        );
        assert_eq!(RULE.of(None), None);
    }

    #[test]
    fn a_duration_is_rounded_up_to_a_step_of_its_decade() {
        assert_eq!(bucket(0), 0.5);
        assert_eq!(bucket(230), 0.5, "noise under half a second is one step");
        assert_eq!(bucket(500), 0.5);
        assert_eq!(bucket(501), 0.7);
        assert_eq!(bucket(570), 0.7, "a 0.57 s suite times out at 7 s");
        assert_eq!(bucket(1000), 1.0);
        assert_eq!(bucket(1001), 1.5);
        assert_eq!(bucket(2900), 3.0, "a 2.9 s suite times out at 30 s");
        assert_eq!(bucket(9_000), 10.0);
        assert_eq!(bucket(60_000), 70.0);
        assert_eq!(bucket(u64::MAX), u64::MAX as f64 / 1000.0);
        for ms in [501, 699, 700, 701, 1_499, 1_501, 4_999, 5_001, 123_456] {
            let b = bucket(ms);
            assert!(
                b * 1000.0 >= ms as f64 && b * 1000.0 <= ms as f64 * 1.67,
                "{ms}: {b}"
            );
        }
    }
}
