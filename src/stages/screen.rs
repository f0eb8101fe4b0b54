//! `screen`: reduces the readings of a candidate (base, test patch only, test
//! and gold), each read `repeats` times, to FAIL_TO_PASS, PASS_TO_PASS, flaky
//! tests and the controls.
//!
//! - FAIL_TO_PASS: fails (or is absent) in every test-only reading and passes in
//!   every gold reading;
//! - PASS_TO_PASS: passes in every reading of all three states;
//! - flaky: its outcome differs between readings of one state; kept out of both;
//! - controls: the gold patch must resolve (no test of the test patch fails with
//!   it, nothing that passed at base breaks), the empty patch must not (at least
//!   one FAIL_TO_PASS test), and every reading must be believable.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use assay_engine::{Job, JobCtx, JobError, JobFuture, Output};
use assay_report::Outcome;
use serde::Serialize;

use super::records::{RunRecord, ScreenRecord, TriageRecord};
use super::tree::State;

pub(super) const KIND_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct ScreenParams {
    pub(crate) repeats: u32,
}

pub(crate) struct ScreenJob {
    pub(crate) repeats: u32,
}

impl Job for ScreenJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let repeats = self.repeats as usize;
        Box::pin(async move {
            let err = |e: &dyn std::fmt::Display| JobError::new(format!("screen: {e}"));
            let triage: TriageRecord =
                serde_json::from_slice(&ctx.inputs[0]).map_err(|e| err(&e))?;
            let mut runs: BTreeMap<&'static str, Vec<RunRecord>> = BTreeMap::new();
            for (i, state) in State::ALL.iter().enumerate() {
                for r in 0..repeats {
                    let bytes = &ctx.inputs[1 + i * repeats + r];
                    let run: RunRecord = serde_json::from_slice(bytes).map_err(|e| err(&e))?;
                    runs.entry(state.as_str()).or_default().push(run);
                }
            }
            let record = reduce(&triage, &runs);
            Ok(Output {
                bytes: serde_json::to_vec(&record).map_err(|e| err(&e))?,
                attachments: Vec::new(),
            })
        })
    }
}

fn all<F: Fn(Option<Outcome>) -> bool>(v: &[Option<Outcome>], f: F) -> bool {
    !v.is_empty() && v.iter().all(|o| f(*o))
}

fn passed(o: Option<Outcome>) -> bool {
    o == Some(Outcome::Passed)
}

fn failed_or_absent(o: Option<Outcome>) -> bool {
    o.is_none_or(Outcome::is_failure)
}

fn failed(o: Option<Outcome>) -> bool {
    o.is_some_and(Outcome::is_failure)
}

pub(crate) fn reduce(
    triage: &TriageRecord,
    runs: &BTreeMap<&'static str, Vec<RunRecord>>,
) -> ScreenRecord {
    let mut rec = ScreenRecord {
        id: triage.id.clone(),
        ..ScreenRecord::default()
    };
    if let Some(skip) = runs.values().flatten().find_map(|r| r.skipped.clone()) {
        rec.skipped = Some(skip);
        return rec;
    }
    for (state, list) in runs {
        for (i, r) in list.iter().enumerate() {
            if let Some(why) = &r.untrusted {
                // A failing test-only reading is expected; anything else untrusted is not.
                rec.untrusted.push(format!("{state} reading {i}: {why}"));
            }
            if let Some(e) = &r.report_error {
                rec.untrusted
                    .push(format!("{state} reading {i}: report unreadable: {e}"));
            }
        }
    }
    let names: BTreeSet<&String> = runs
        .values()
        .flatten()
        .flat_map(|r| r.tests.keys())
        .collect();
    let files: BTreeMap<&String, &String> = runs
        .values()
        .flatten()
        .flat_map(|r| r.files.iter())
        .collect();
    let test_files: BTreeSet<&str> = triage.test_files.iter().map(String::as_str).collect();
    let empty = Vec::new();
    for name in names {
        let read = |state: &str| -> Vec<Option<Outcome>> {
            runs.get(state)
                .unwrap_or(&empty)
                .iter()
                .map(|r| r.tests.get(name).copied())
                .collect()
        };
        let (base, test, gold) = (read("base"), read("test"), read("gold"));
        for (state, v) in [("base", &base), ("test", &test), ("gold", &gold)] {
            rec.readings.entry(state.to_owned()).or_default().insert(
                name.clone(),
                v.iter().map(|o| o.unwrap_or(Outcome::Skipped)).collect(),
            );
        }
        let flaky = [&base, &test, &gold].iter().any(|v| {
            let distinct: BTreeSet<String> = v.iter().map(|o| format!("{o:?}")).collect();
            distinct.len() > 1
        });
        if flaky {
            rec.flaky.push(name.clone());
            continue;
        }
        let in_test_patch = files
            .get(name)
            .is_some_and(|f| test_files.contains(f.as_str()))
            || base.iter().all(Option::is_none);
        if all(&test, failed_or_absent) && all(&gold, passed) {
            rec.fail_to_pass.push(name.clone());
        } else if all(&base, passed) && all(&test, passed) && all(&gold, passed) {
            rec.pass_to_pass.push(name.clone());
        } else if all(&base, passed) && all(&gold, failed) {
            rec.regressions.push(name.clone());
        } else if in_test_patch && all(&gold, failed) {
            rec.gold_failures.push(name.clone());
        }
    }
    rec.cascades = cascades(runs);
    let gold_ok = rec.gold_failures.is_empty() && rec.regressions.is_empty();
    rec.controls.insert(
        "gold_resolves".into(),
        (
            gold_ok,
            if gold_ok {
                "every test of the test patch passes with the gold patch".into()
            } else {
                format!(
                    "with the gold patch these still fail: {}",
                    rec.gold_failures
                        .iter()
                        .chain(&rec.regressions)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        ),
    );
    let empty_ok = !rec.fail_to_pass.is_empty();
    rec.controls.insert(
        "empty_patch_fails".into(),
        (
            empty_ok,
            if empty_ok {
                format!(
                    "{} FAIL_TO_PASS tests fail without a fix",
                    rec.fail_to_pass.len()
                )
            } else {
                "no FAIL_TO_PASS test: an empty patch would resolve this task".into()
            },
        ),
    );
    let trusted = rec.untrusted.is_empty();
    rec.controls.insert(
        "readings_trusted".into(),
        (
            trusted,
            if trusted {
                "every reading's report is believable".into()
            } else {
                rec.untrusted.join("; ")
            },
        ),
    );
    rec
}

/// A file whose every test errored in a reading while other files ran: one
/// failure (an import, a fixture) took the whole file down.
fn cascades(runs: &BTreeMap<&'static str, Vec<RunRecord>>) -> Vec<String> {
    let mut out = BTreeSet::new();
    for (state, list) in runs {
        for r in list {
            let mut by_file: BTreeMap<&String, Vec<Outcome>> = BTreeMap::new();
            for (name, o) in &r.tests {
                if let Some(f) = r.files.get(name) {
                    by_file.entry(f).or_default().push(*o);
                }
            }
            if by_file.len() < 2 {
                continue;
            }
            for (file, outcomes) in by_file {
                if outcomes.len() >= 2 && outcomes.iter().all(|o| *o == Outcome::Error) {
                    out.insert(format!(
                        "{file}: all {} tests errored in the {state} state",
                        outcomes.len()
                    ));
                }
            }
        }
    }
    out.into_iter().collect()
}

pub(crate) fn job(repeats: u32) -> Arc<dyn Job> {
    Arc::new(ScreenJob { repeats })
}
