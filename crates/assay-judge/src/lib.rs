//! The LLM judge: blind reviews of patches, as a library.
//!
//! A review goes: [`Settings`] (one `[[judge]]` table) → [`Judge`] (HTTP
//! client, shared concurrency limit) and, per task, [`Labels::for_task`]
//! (seeded blind labels) → [`ReviewInput`] (statement, spec, gold patch,
//! patch(es) under review with their grading; no authorship) →
//! [`build_prompt`] → one request in either wire format ([`Api`]) → the
//! answer validated into a [`Reading`] (scores, quote flags, token usage) or a
//! [`JudgeError`] whose [`ErrorKind`] says whether the server failed
//! (infrastructure) or the judge answered garbage. An error is never a score.
//!
//! Invariants:
//! - Nothing that identifies an author can reach a request: the input types
//!   have no field for it, and a patch is shown under its label only.
//! - The API key is read from its variable when a review starts and appears
//!   in no returned value, error, `Debug` output or log.
//! - [`Settings::key`] holds exactly the settings that can change an answer
//!   ([`JudgeKey`]); timeouts, retries, concurrency and the key stay out.

mod client;
mod error;
mod input;
mod labels;
mod prompt;
mod quote;
mod reading;
mod schema;
mod settings;
mod wire;

pub use client::{Judge, SleepFuture, Sleeper, TokioSleeper};
pub use error::{ErrorKind, InfraFailure, JudgeError};
pub use input::{Candidate, Grading, Mode, ReviewInput, TaskText, UnderReview};
pub use labels::{Label, Labels};
pub use prompt::{DEFAULT_RUBRIC, InputError, PROMPT_VERSION, Prompt, Shown, build_prompt};
pub use quote::{normalise, quote_is_in};
pub use reading::{AnswerProblem, PatchReview, QuoteFlag, Reading, Score, Usage};
pub use schema::{Criterion, QUOTE_REQUIRED_AT_OR_BELOW, Schema, answer_schema};
pub use settings::{Api, JudgeKey, Settings, SettingsError};
pub use wire::{ANTHROPIC_VERSION, TOOL_NAME};
