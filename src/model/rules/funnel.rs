//! Why a candidate or a task is lost along the funnel (candidates →
//! eligible → screened → certified → released): the first word of each
//! line of a task's `uncertified_because`, typed. The task stage writes the
//! lines ([`Reason::line`]); the release counts them by reason
//! ([`Reason::of`]).
//!
//! A reason is counted under its word, and reasons are ordered by their
//! words: `funnel.json` lists them in the order it always had.

use std::cmp::Ordering;

use super::records::{Control, Decision};

/// Why a task is declined or uncertified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Reason {
    /// Triage declined the candidate (a task of it never screened).
    Declined(Decision),
    /// The candidate's readings were skipped (a state could not be composed).
    NotScreened,
    /// A FAIL_TO_PASS test falls in no topic of the split, or in several.
    TopicSplitRejected,
    /// A screening control failed (and a topic with no FAIL_TO_PASS test
    /// fails `empty_patch_fails`).
    Control(Control),
}

impl Reason {
    const NOT_SCREENED: &'static str = "not screened";
    const TOPIC_SPLIT_REJECTED: &'static str = "topic_split_rejected";

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Reason::Declined(d) => d.as_str(),
            Reason::NotScreened => Self::NOT_SCREENED,
            Reason::TopicSplitRejected => Self::TOPIC_SPLIT_REJECTED,
            Reason::Control(c) => c.as_str(),
        }
    }

    /// The line a task records: `<reason>: <detail>`.
    pub(crate) fn line(self, detail: &dyn std::fmt::Display) -> String {
        format!("{}: {detail}", self.as_str())
    }

    /// The reason a recorded line gives: its first word. None for a line
    /// of no known reason.
    pub(crate) fn of(line: &str) -> Option<Reason> {
        let word = first_word(line);
        match word {
            Self::NOT_SCREENED => Some(Reason::NotScreened),
            Self::TOPIC_SPLIT_REJECTED => Some(Reason::TopicSplitRejected),
            _ => Decision::parse(word)
                .map(Reason::Declined)
                .or_else(|| Control::parse(word).map(Reason::Control)),
        }
    }

    /// The word the funnel counts a recorded line under: its reason's; a
    /// line of no known reason (no stage of this version writes one) under
    /// its first word, as the funnel always counted it.
    pub(crate) fn word_of(line: &str) -> &str {
        Reason::of(line).map_or_else(|| first_word(line), |r| r.as_str())
    }
}

/// What a line says before its first colon (all of it, without one).
fn first_word(line: &str) -> &str {
    line.split(':').next().unwrap_or(line)
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// By word: the order `funnel.json`'s maps keep.
impl Ord for Reason {
    fn cmp(&self, other: &Reason) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Reason {
    fn partial_cmp(&self, other: &Reason) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl serde::Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every() -> Vec<Reason> {
        let mut all = vec![Reason::NotScreened, Reason::TopicSplitRejected];
        all.extend(Decision::ALL.iter().map(|d| Reason::Declined(*d)));
        all.extend(Control::ALL.iter().map(|c| Reason::Control(*c)));
        all
    }

    /// Every reason reads back from the line it writes, whatever the
    /// detail says (colons included).
    #[test]
    fn a_reason_reads_back_from_its_line() {
        for r in every() {
            assert_eq!(Reason::of(&r.line(&"a: b")), Some(r), "{r}");
        }
        assert_eq!(Reason::of("gremlins: x"), None);
        // An unknown reason is counted under its first word.
        assert_eq!(Reason::word_of("gremlins: x: y"), "gremlins");
        assert_eq!(Reason::word_of("not screened: a: b"), "not screened");
        assert_eq!(
            Reason::Control(Control::GoldResolves).line(&"tests fail"),
            "gold_resolves: tests fail"
        );
    }

    /// Reasons sort as their words did when the funnel was keyed by them.
    #[test]
    fn reasons_sort_by_their_words() {
        let mut typed = every();
        typed.sort();
        let mut words: Vec<&str> = every().iter().map(|r| r.as_str()).collect();
        words.sort();
        assert_eq!(typed.iter().map(|r| r.as_str()).collect::<Vec<_>>(), words);
        let map: std::collections::BTreeMap<Reason, usize> =
            every().into_iter().map(|r| (r, 1)).collect();
        let json = serde_json::to_string(&map).expect("serializes");
        let strings: std::collections::BTreeMap<&str, usize> =
            every().iter().map(|r| (r.as_str(), 1)).collect();
        assert_eq!(json, serde_json::to_string(&strings).expect("serializes"));
    }
}
