//! What a review is about, and nothing about who wrote it.
//!
//! These types are the blinding boundary: they have no field for an agent,
//! model, session or file name, so a caller cannot pass authorship to the
//! prompt even by mistake. A patch is identified only by its *slot* (its
//! index in the task's [`crate::Labels`]), and its text goes to the judge as
//! is.

use serde::{Deserialize, Serialize};

/// The task side of a review: the same for every patch of a task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskText {
    pub problem_statement: String,
    /// The interface spec of the spec track, if the task has one.
    pub interface_spec: Option<String>,
    pub gold_patch: String,
}

/// How a patch fared in grading, as shown to the judge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grading {
    /// The verdict word (`resolved`, `unresolved`, …).
    pub verdict: String,
    /// FAIL_TO_PASS / PASS_TO_PASS tests still failing.
    pub failing_tests: Vec<String>,
}

/// One patch under review.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// Index into the task's labels.
    pub slot: usize,
    pub patch: String,
    pub grading: Grading,
}

/// One patch, or two shown in this order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnderReview {
    Single(Candidate),
    Pair(Candidate, Candidate),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Single,
    Pairwise,
}

/// Everything the judge is shown for one reading.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewInput {
    pub task: TaskText,
    pub under_review: UnderReview,
}

impl ReviewInput {
    pub fn single(task: TaskText, candidate: Candidate) -> ReviewInput {
        ReviewInput {
            task,
            under_review: UnderReview::Single(candidate),
        }
    }

    /// Two patches, `first` shown first.
    pub fn pair(task: TaskText, first: Candidate, second: Candidate) -> ReviewInput {
        ReviewInput {
            task,
            under_review: UnderReview::Pair(first, second),
        }
    }

    /// The two readings of a pair: `a` first, then `b` first. Each patch keeps
    /// its label in both; only the position changes, which is what exposes a
    /// reviewer's position bias.
    pub fn both_orders(task: TaskText, a: Candidate, b: Candidate) -> [ReviewInput; 2] {
        let ab = ReviewInput::pair(task, a, b);
        let ba = ab.swapped();
        [ab, ba]
    }

    /// The same review with a pair's order reversed (a single is unchanged).
    pub fn swapped(&self) -> ReviewInput {
        let under_review = match &self.under_review {
            UnderReview::Single(c) => UnderReview::Single(c.clone()),
            UnderReview::Pair(a, b) => UnderReview::Pair(b.clone(), a.clone()),
        };
        ReviewInput {
            task: self.task.clone(),
            under_review,
        }
    }

    pub fn mode(&self) -> Mode {
        match self.under_review {
            UnderReview::Single(_) => Mode::Single,
            UnderReview::Pair(..) => Mode::Pairwise,
        }
    }

    /// The patches under review, in the order shown.
    pub fn candidates(&self) -> Vec<&Candidate> {
        match &self.under_review {
            UnderReview::Single(c) => vec![c],
            UnderReview::Pair(a, b) => vec![a, b],
        }
    }
}
