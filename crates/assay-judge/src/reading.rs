//! From the judge's JSON answer to a validated [`Reading`].
//!
//! Two kinds of problem, kept apart:
//!
//! - **Invalid** ([`AnswerProblem`]): not JSON, a label or criterion missing,
//!   a score that is not an integer from 1 to 5, a pair without a valid
//!   `preferred`. Such an answer is never a score; the client retries it and
//!   then reports a judge error.
//! - **Flagged** (on a valid reading): a score of 3 or below with no quote
//!   (`missing_quotes`), or a quote that is not in the patch it scores
//!   (`unverified_quotes`, rule in [`crate::quote`]). The scores stand; the
//!   flags say how far to trust them.
//!
//! Unknown extra properties are ignored.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::Mode;
use crate::labels::Label;
use crate::prompt::Prompt;
use crate::quote::quote_is_in;
use crate::schema::{Criterion, QUOTE_REQUIRED_AT_OR_BELOW};

/// Tokens the server reported, summed over every attempt that got an answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// `prompt_tokens` (OpenAI) or `input_tokens` (Anthropic).
    pub input_tokens: u64,
    /// `completion_tokens` (OpenAI) or `output_tokens` (Anthropic).
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// One criterion's score.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Score {
    pub criterion: Criterion,
    /// 1 to 5.
    pub score: u8,
    pub rationale: String,
    /// `None` when the judge gave none (empty string or absent).
    pub quote: Option<String>,
}

/// One patch's scores, in [`Criterion::ALL`] order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchReview {
    pub label: Label,
    pub slot: usize,
    pub scores: Vec<Score>,
}

impl PatchReview {
    pub fn score(&self, criterion: Criterion) -> Option<u8> {
        self.scores
            .iter()
            .find(|s| s.criterion == criterion)
            .map(|s| s.score)
    }
}

/// A score whose quote is missing or not found.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct QuoteFlag {
    pub label: Label,
    pub slot: usize,
    pub criterion: Criterion,
}

/// One validated answer of the judge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reading {
    pub mode: Mode,
    pub sample: u32,
    /// In the order the patches were shown.
    pub reviews: Vec<PatchReview>,
    /// The preferred slot (pairwise only).
    pub preferred: Option<usize>,
    pub missing_quotes: Vec<QuoteFlag>,
    pub unverified_quotes: Vec<QuoteFlag>,
    /// Summed over all attempts of this review, the rejected ones included.
    pub usage: Usage,
    /// Attempts made, this one included.
    pub attempts: u32,
    /// Why each earlier attempt was not accepted, in order.
    pub retried_because: Vec<String>,
    /// blake3 (hex) of the exact request body sent: lets an audit rebuild the
    /// prompt from the node's inputs and check it is the one answered.
    pub request_digest: String,
    /// The accepted answer as the server gave it (the JSON text, or the tool
    /// input re-serialised), for audit.
    pub answer: String,
}

/// Why an answer is not a reading.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "problem", content = "detail")]
pub enum AnswerProblem {
    #[error("the answer is not JSON: {0}")]
    NotJson(String),
    #[error("the answer has no `submit_review` tool call")]
    NoToolCall,
    #[error("the answer was cut off at the token limit")]
    Truncated,
    #[error("the model refused: {0}")]
    Refused(String),
    #[error("the answer does not fit the schema: {0}")]
    Invalid(String),
}

/// The validated content of one answer, before the client adds usage and
/// attempt counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    pub(crate) reviews: Vec<PatchReview>,
    pub(crate) preferred: Option<usize>,
    pub(crate) missing_quotes: Vec<QuoteFlag>,
    pub(crate) unverified_quotes: Vec<QuoteFlag>,
}

/// Validates `answer` against the prompt it answers.
pub(crate) fn check_answer(answer: &Value, prompt: &Prompt) -> Result<Checked, AnswerProblem> {
    let invalid = |what: String| Err(AnswerProblem::Invalid(what));
    let Some(reviews_obj) = answer.get("reviews").and_then(Value::as_object) else {
        return invalid("no `reviews` object".into());
    };
    let mut checked = Checked {
        reviews: Vec::new(),
        preferred: None,
        missing_quotes: Vec::new(),
        unverified_quotes: Vec::new(),
    };
    for shown in &prompt.shown {
        let Some(review) = reviews_obj.get(shown.label.as_str()) else {
            return invalid(format!("no review of patch {}", shown.label));
        };
        let mut scores = Vec::with_capacity(Criterion::ALL.len());
        for criterion in Criterion::ALL {
            let at = || format!("{}.{}", shown.label, criterion.name());
            let Some(entry) = review.get(criterion.name()) else {
                return invalid(format!("{} is missing", at()));
            };
            let score = match entry.get("score").and_then(Value::as_i64) {
                Some(n @ 1..=5) => n as u8,
                Some(n) => return invalid(format!("{}.score is {n}, not 1 to 5", at())),
                None => return invalid(format!("{}.score is not an integer", at())),
            };
            let Some(rationale) = entry.get("rationale").and_then(Value::as_str) else {
                return invalid(format!("{}.rationale is not a string", at()));
            };
            let quote = match entry.get("quote") {
                None | Some(Value::Null) => None,
                Some(Value::String(q)) if q.trim().is_empty() => None,
                Some(Value::String(q)) => Some(q.clone()),
                Some(_) => return invalid(format!("{}.quote is not a string", at())),
            };
            let flag = || QuoteFlag {
                label: shown.label.clone(),
                slot: shown.slot,
                criterion,
            };
            match &quote {
                None if score <= QUOTE_REQUIRED_AT_OR_BELOW => checked.missing_quotes.push(flag()),
                Some(q) if !quote_is_in(q, &shown.patch) => checked.unverified_quotes.push(flag()),
                _ => {}
            }
            scores.push(Score {
                criterion,
                score,
                rationale: rationale.to_owned(),
                quote,
            });
        }
        checked.reviews.push(PatchReview {
            label: shown.label.clone(),
            slot: shown.slot,
            scores,
        });
    }
    if prompt.mode == Mode::Pairwise {
        let Some(preferred) = answer.get("preferred").and_then(Value::as_str) else {
            return invalid("no `preferred` label".into());
        };
        let Some(shown) = prompt.shown.iter().find(|s| s.label.as_str() == preferred) else {
            return invalid(format!("`preferred` is {preferred:?}, not a label shown"));
        };
        checked.preferred = Some(shown.slot);
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::input::{Candidate, Grading, ReviewInput, TaskText};
    use crate::labels::Labels;
    use crate::prompt::build_prompt;

    fn prompt(pair: bool) -> Prompt {
        let task = TaskText {
            problem_statement: "s".into(),
            interface_spec: None,
            gold_patch: "+gold".into(),
        };
        let cand = |slot, patch: &str| Candidate {
            slot,
            patch: patch.into(),
            grading: Grading {
                verdict: "resolved".into(),
                failing_tests: vec![],
            },
        };
        let input = if pair {
            ReviewInput::pair(task, cand(0, "+let x = 1;"), cand(1, "+let y = 2;"))
        } else {
            ReviewInput::single(task, cand(0, "+let x = 1;"))
        };
        let labels = Labels::for_task(0, "t", 2);
        build_prompt(&input, &labels, None).unwrap_or_else(|e| panic!("{e}"))
    }

    fn review(score: i64, quote: &str) -> Value {
        let one = json!({"rationale": "r", "quote": quote, "score": score});
        json!({
            "correctness": one, "scope": one, "consistency": one,
            "simplicity": one, "cleanliness": one, "overall": one,
        })
    }

    fn answer(p: &Prompt, reviews: &[Value]) -> Value {
        let mut obj = serde_json::Map::new();
        for (s, r) in p.shown.iter().zip(reviews) {
            obj.insert(s.label.to_string(), r.clone());
        }
        json!({"reviews": obj, "preferred": p.shown[0].label.as_str()})
    }

    #[test]
    fn a_good_answer_is_a_reading_without_flags() {
        let p = prompt(true);
        let c = check_answer(&answer(&p, &[review(4, ""), review(3, "let y = 2;")]), &p)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.reviews.len(), 2);
        assert_eq!(c.reviews[1].score(Criterion::Overall), Some(3));
        assert_eq!(c.preferred, Some(0));
        assert!(c.missing_quotes.is_empty() && c.unverified_quotes.is_empty());
    }

    #[test]
    fn scores_out_of_range_or_missing_are_invalid() {
        let p = prompt(false);
        for bad in [
            answer(&p, &[review(0, "")]),
            answer(&p, &[review(6, "")]),
            json!({"reviews": {}}),
            json!({"reviews": {p.shown[0].label.as_str(): {"correctness": {"score": 5}}}}),
            json!([1, 2]),
        ] {
            assert!(
                matches!(check_answer(&bad, &p), Err(AnswerProblem::Invalid(_))),
                "{bad}"
            );
        }
        let mut float = answer(&p, &[review(4, "")]);
        float["reviews"][p.shown[0].label.as_str()]["scope"]["score"] = json!(4.5);
        assert!(check_answer(&float, &p).is_err());
    }

    #[test]
    fn pairs_need_a_shown_preference() {
        let p = prompt(true);
        let mut a = answer(&p, &[review(5, ""), review(5, "")]);
        a["preferred"] = json!("Z");
        assert!(matches!(
            check_answer(&a, &p),
            Err(AnswerProblem::Invalid(_))
        ));
    }

    #[test]
    fn low_scores_without_quotes_and_foreign_quotes_are_flagged() {
        let p = prompt(true);
        let c = check_answer(&answer(&p, &[review(2, ""), review(1, "let x = 1;")]), &p)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.missing_quotes.len(), 6);
        assert!(c.missing_quotes.iter().all(|f| f.slot == 0));
        // Slot 1 quoted slot 0's patch: not in the patch it scores.
        assert_eq!(c.unverified_quotes.len(), 6);
        assert!(c.unverified_quotes.iter().all(|f| f.slot == 1));
    }
}
