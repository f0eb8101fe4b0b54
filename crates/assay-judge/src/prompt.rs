//! The prompt: the same text for both wire formats, built only from a
//! [`ReviewInput`] and the task's [`Labels`].
//!
//! The reviewer sees the problem statement, the interface spec (spec track),
//! the merged reference patch, each patch under review under its label with
//! its grading result, and the rules. Nothing else reaches it: the input
//! types hold no authorship (see [`crate::input`]).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::input::{Candidate, Mode, ReviewInput};
use crate::labels::{Label, Labels};
use crate::schema::{Criterion, QUOTE_REQUIRED_AT_OR_BELOW, Schema, answer_schema};

/// Bumped whenever the prompt text, the built-in rubric, the schema or the
/// validation rules change meaning; it is part of [`crate::JudgeKey`].
pub const PROMPT_VERSION: u32 = 1;

/// At most this many failing test names are listed per patch.
const FAILING_SHOWN: usize = 40;

/// The scale used when the settings give no rubric.
pub const DEFAULT_RUBRIC: &str = "\
5: nothing to improve; a maintainer would merge it as is.
4: minor remarks only.
3: acceptable, but with a concrete problem a maintainer would ask to fix.
2: serious problems: wrong in places, much more or less than needed, or hard to follow.
1: does not address the problem, or breaks other things.";

/// A patch as shown: its label, its slot and the text quotes are checked against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    pub label: Label,
    pub slot: usize,
    pub patch: String,
}

/// A rendered prompt, ready for either wire format.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    pub system: String,
    pub user: String,
    pub schema: Schema,
    pub mode: Mode,
    /// The patches under review, in the order shown.
    pub shown: Vec<Shown>,
}

/// A review input that does not fit its labels: a caller bug, never retried.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("patch slot {slot} has no label (the task has {labels} labels)")]
    SlotWithoutLabel { slot: usize, labels: usize },
    #[error("a pair must show two different patches (slot {slot} twice)")]
    SameSlotTwice { slot: usize },
}

/// Builds the prompt; `rubric` is the settings' rubric text (`None`: built-in).
pub fn build_prompt(
    input: &ReviewInput,
    labels: &Labels,
    rubric: Option<&str>,
) -> Result<Prompt, InputError> {
    let candidates = input.candidates();
    if let [a, b] = candidates.as_slice()
        && a.slot == b.slot
    {
        return Err(InputError::SameSlotTwice { slot: a.slot });
    }
    let shown = candidates
        .iter()
        .map(|c| {
            let label = labels.get(c.slot).ok_or(InputError::SlotWithoutLabel {
                slot: c.slot,
                labels: labels.len(),
            })?;
            Ok(Shown {
                label: label.clone(),
                slot: c.slot,
                patch: c.patch.clone(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let shown_labels: Vec<&Label> = shown.iter().map(|s| &s.label).collect();
    let mode = input.mode();
    Ok(Prompt {
        system: system_text(mode, rubric.unwrap_or(DEFAULT_RUBRIC)),
        user: user_text(input, &candidates, &shown_labels),
        schema: answer_schema(&shown_labels),
        mode,
        shown,
    })
}

fn system_text(mode: Mode, rubric: &str) -> String {
    let mut s = String::new();
    let what = match mode {
        Mode::Single => "a patch",
        Mode::Pairwise => "two patches",
    };
    let _ = writeln!(
        s,
        "You review {what} written to solve a problem in a software repository. You are \
         shown the problem statement, the reference patch that was merged for it, the \
         patch under review and how it fared on the hidden tests. You are not told who or \
         what wrote a patch: judge the code alone.\n"
    );
    s.push_str("Score each patch on each criterion with an integer from 1 to 5:\n");
    for c in Criterion::ALL {
        let _ = writeln!(s, "- {}: {}", c.name(), c.question());
    }
    let _ = writeln!(s, "\nScale:\n{}\n", rubric.trim_end());
    let _ = writeln!(
        s,
        "Rules:\n\
         - Write the rationale first, then the score.\n\
         - Every score of {QUOTE_REQUIRED_AT_OR_BELOW} or below must carry a `quote`: lines \
         copied verbatim from the patch being scored that show the problem (the diff's \
         leading +/-/space markers may be left out; mark a gap with ...). For a score \
         of 4 or 5 leave `quote` empty.\n\
         - Quote only the patch you are scoring, never the reference patch.\n\
         - The reference patch is one good solution, not the only one."
    );
    if mode == Mode::Pairwise {
        let _ = writeln!(
            s,
            "- Score both patches, then name the one you prefer in `preferred`. The order \
             in which they are shown means nothing."
        );
    }
    s.push_str(
        "\nAnswer only with the JSON object the schema describes (through the \
         `submit_review` tool where one is offered).",
    );
    s
}

fn user_text(input: &ReviewInput, candidates: &[&Candidate], labels: &[&Label]) -> String {
    let mut s = String::new();
    section(
        &mut s,
        "Problem statement",
        "text",
        &input.task.problem_statement,
    );
    if let Some(spec) = &input.task.interface_spec {
        section(
            &mut s,
            "Interface spec (the patch must follow it)",
            "text",
            spec,
        );
    }
    section(
        &mut s,
        "Reference patch (merged)",
        "diff",
        &input.task.gold_patch,
    );
    for (c, label) in candidates.iter().zip(labels) {
        let _ = writeln!(s, "## Patch {label}\n");
        let _ = writeln!(s, "Hidden tests: verdict `{}`.", c.grading.verdict);
        if c.grading.failing_tests.is_empty() {
            s.push_str("Failing tests: none.\n");
        } else {
            s.push_str("Failing tests:\n");
            for t in c.grading.failing_tests.iter().take(FAILING_SHOWN) {
                let _ = writeln!(s, "- {t}");
            }
            let more = c.grading.failing_tests.len().saturating_sub(FAILING_SHOWN);
            if more > 0 {
                let _ = writeln!(s, "- … and {more} more");
            }
        }
        s.push('\n');
        fenced(&mut s, "diff", &c.patch);
    }
    s.push_str("## Your task\n\n");
    match labels {
        [one] => {
            let _ = writeln!(s, "Review patch {one}.");
        }
        _ => {
            let names: Vec<&str> = labels.iter().map(|l| l.as_str()).collect();
            let _ = writeln!(
                s,
                "Review patches {} and say which you prefer.",
                names.join(" and ")
            );
        }
    }
    s
}

fn section(s: &mut String, title: &str, lang: &str, body: &str) {
    let _ = writeln!(s, "## {title}\n");
    fenced(s, lang, body);
}

/// A fenced block whose fence is longer than any backtick run inside, so a
/// patch that itself contains ``` cannot close it early.
fn fenced(s: &mut String, lang: &str, body: &str) {
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(
        s,
        "{fence}{lang}\n{}\n{fence}\n",
        body.trim_end_matches('\n')
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Grading, TaskText};

    fn task() -> TaskText {
        TaskText {
            problem_statement: "Division by zero in `ratio`.".into(),
            interface_spec: Some("fn ratio(a: u32, b: u32) -> Option<u32>".into()),
            gold_patch: "+    if b == 0 { return None; }".into(),
        }
    }

    fn cand(slot: usize, patch: &str) -> Candidate {
        Candidate {
            slot,
            patch: patch.into(),
            grading: Grading {
                verdict: "unresolved".into(),
                failing_tests: vec!["tests::ratio_zero".into()],
            },
        }
    }

    #[test]
    fn prompt_shows_every_part_under_its_label() {
        let labels = Labels::for_task(5, "t", 2);
        let input = ReviewInput::pair(task(), cand(0, "+a ```x``` b"), cand(1, "+other"));
        let p = build_prompt(&input, &labels, None).unwrap_or_else(|e| panic!("{e}"));
        let (l0, l1) = (
            labels.get(0).map(Label::to_string),
            labels.get(1).map(Label::to_string),
        );
        let (l0, l1) = (l0.unwrap_or_default(), l1.unwrap_or_default());
        assert!(p.user.find(&format!("## Patch {l0}")) < p.user.find(&format!("## Patch {l1}")));
        for part in [
            "Division by zero",
            "fn ratio",
            "return None",
            "tests::ratio_zero",
        ] {
            assert!(p.user.contains(part), "{part}");
        }
        // The inner ``` does not close the fence.
        assert!(p.user.contains("````diff\n+a ```x``` b\n````"));
        assert!(p.system.contains("preferred"));
        assert!(p.system.contains(DEFAULT_RUBRIC));
        assert_eq!(p.mode, Mode::Pairwise);
        assert_eq!(p.shown[0].slot, 0);
    }

    #[test]
    fn custom_rubric_replaces_the_scale() {
        let labels = Labels::for_task(5, "t", 1);
        let input = ReviewInput::single(task(), cand(0, "+x"));
        let p = build_prompt(&input, &labels, Some("Be harsh.")).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.system.contains("Be harsh."));
        assert!(!p.system.contains(DEFAULT_RUBRIC));
        assert!(!p.system.contains("preferred"));
    }

    #[test]
    fn inputs_that_do_not_fit_the_labels_are_refused() {
        let labels = Labels::for_task(5, "t", 1);
        let far = ReviewInput::single(task(), cand(3, "+x"));
        assert_eq!(
            build_prompt(&far, &labels, None),
            Err(InputError::SlotWithoutLabel { slot: 3, labels: 1 })
        );
        let labels = Labels::for_task(5, "t", 2);
        let twice = ReviewInput::pair(task(), cand(1, "+x"), cand(1, "+y"));
        assert_eq!(
            build_prompt(&twice, &labels, None),
            Err(InputError::SameSlotTwice { slot: 1 })
        );
    }
}
