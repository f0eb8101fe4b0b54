//! The verdict of a graded session, as a pure function of what grading
//! read: [`decide`] takes the task, the staged tree, the session's own run
//! facts and the [`Readings`] (the graded run, the separate check runs and
//! the reruns), and returns the [`Decision`]. No process, file or clock is
//! touched here; the grade job (`nodes/grade.rs`) only performs the runs this
//! module asks for ([`reads_report`], [`next_rerun`]) and records the result
//! ([`grading`](super::grading)).
//!
//! The order of the rules is the contract (docs/verdicts.md): a tree that
//! could not be staged, then a run that could not be believed (environment,
//! cut log, timeout, sandbox limit, no usable report), then the expected
//! tests after reruns; on top of any of them the infrastructure blame of a
//! run that died of an API error, then a forged reading, then a pass that
//! was guessed among a window over reruns (never a flake), and last the
//! tamper demotion.

use std::collections::{BTreeMap, BTreeSet};

use assay_report::{Format, Outcome};

use super::canary;
use super::limits::limit_reason;
use super::records::{Fault, RunFacts, RunRecord, Skip, TaskRecord, TreeRecord, Verdict};
use super::tamper::tamper_suspects;

/// The settings of the graded run that its verdict's reasons quote.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) timeout_s: u64,
    pub(crate) log_cap: u64,
    /// `write_limit`: what a run may add to its tree.
    pub(crate) write: u64,
}

/// Every run grading performed over the staged tree.
#[derive(Clone, Debug, Default)]
pub(crate) struct Readings {
    /// The graded run (the `run` node).
    pub(crate) first: RunRecord,
    /// The PASS_TO_PASS and FAIL_TO_PASS checks run as commands of their
    /// own (`[grade] check_command`): only the test files they changed
    /// count towards the verdict.
    pub(crate) checks: Vec<RunRecord>,
    /// The reruns, in order, each over the tests still failing before it.
    pub(crate) reruns: Vec<RunRecord>,
}

impl Readings {
    /// Why a reading the verdict rests on is forged, by its canaries
    /// ([`canary::forged`]): a must-fail canary that passed in any run; a
    /// missing or wrong canary in the runs that made `verdict` a pass (the
    /// graded run for `resolved`, the reruns for `resolved_after_rerun`).
    fn forged(&self, verdict: Verdict) -> Option<String> {
        let first_passed = verdict == Verdict::Resolved;
        std::iter::once((&self.first, first_passed))
            .chain(self.reruns.iter().map(|r| (r, verdict.passed())))
            .chain(self.checks.iter().map(|r| (r, false)))
            .find_map(|(run, would_pass)| {
                canary::seals_forged(&run.seals)
                    .or_else(|| canary::forged(&run.canaries, would_pass))
            })
    }

    /// Why a pass after reruns is a guess, not a flake: a test that failed
    /// in one run while a must-fail canary of its window passed there (its
    /// answer was one of the window's wrong values) and passed in another.
    /// A forger that cannot tell its window's members apart passes one of
    /// them each run; a wrong pick fails the original and passes that
    /// mutant, so every rerun would otherwise be a free guess. Honest code
    /// whose answer is wrong gives the same wrong value every run; one
    /// whose answer moves between a wrong window value and the right one
    /// is not a flaky test's doing either.
    fn guessed(&self) -> Option<String> {
        let runs: Vec<&RunRecord> = std::iter::once(&self.first).chain(&self.reruns).collect();
        let name = |n: usize| match n {
            0 => "the graded run".to_owned(),
            n => format!("rerun {n}"),
        };
        for (n, run) in runs.iter().enumerate() {
            for c in &run.canaries {
                let wrong_value = c.must == canary::Must::Fail
                    && c.seen == Some(Outcome::Passed)
                    && matches!(c.original, Some(Outcome::Failed | Outcome::Error));
                let Some(id) = c.of.as_deref().filter(|_| wrong_value) else {
                    continue;
                };
                if let Some(m) = runs
                    .iter()
                    .position(|r| r.tests.get(id) == Some(&Outcome::Passed))
                {
                    return Some(format!(
                        "{id} failed in {} with a wrong value of its window (its canary {} passed) and passed in {}: a guess among the window, not a flaky test",
                        name(n),
                        c.name,
                        name(m)
                    ));
                }
            }
        }
        None
    }

    /// Why the executor lost a check or a rerun, if it lost one.
    fn lost(&self) -> Option<&str> {
        self.checks
            .iter()
            .chain(&self.reruns)
            .find_map(|r| r.lost.as_deref())
    }

    /// The audit hook's findings in any of the runs that the task's gold
    /// readings did not make too (`audit_off`: a rule an honest suite
    /// trips says nothing of the patch), each once, in order.
    fn audit(&self, task: &TaskRecord) -> Vec<String> {
        let off: BTreeSet<&str> = task.audit_off.iter().map(|line| audit_rule(line)).collect();
        let mut out: Vec<String> = Vec::new();
        let runs = std::iter::once(&self.first)
            .chain(&self.checks)
            .chain(&self.reruns);
        for finding in runs.flat_map(|r| &r.audit) {
            let (rule, detail) = finding.split_once(": ").unwrap_or((finding, ""));
            let line = format!("tampers with the runner (audit event `{rule}`): {detail}");
            if !off.contains(rule) && !out.contains(&line) {
                out.push(line);
            }
        }
        out
    }

    /// Test files whose bytes any of the runs changed, sorted.
    fn changed_test_files(&self) -> Vec<String> {
        let runs = std::iter::once(&self.first)
            .chain(&self.checks)
            .chain(&self.reruns);
        let changed: BTreeSet<&String> = runs.flat_map(|r| &r.changed_test_files).collect();
        changed.into_iter().cloned().collect()
    }
}

/// What the graded session gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) verdict: Verdict,
    pub(crate) fault: Fault,
    pub(crate) detail: String,
    /// FAIL_TO_PASS / PASS_TO_PASS tests still failing (after reruns).
    pub(crate) failing: Vec<String>,
    /// Of `failing`, those no run's report named at all: the runner stopped
    /// before them (cargo stops at the first failing test binary), so they
    /// did not fail, they did not run.
    pub(crate) not_run: Vec<String>,
    /// `pass`, `fail (N)` or `not run` (the report was not usable).
    pub(crate) base_check: String,
    pub(crate) new_check: String,
    /// Tamper suspects, in effect or not (docs/verdicts.md).
    pub(crate) tamper: Vec<String>,
}

/// What [`decide`] reads besides the runs.
#[derive(Clone, Copy)]
pub(crate) struct Graded<'a> {
    pub(crate) task: &'a TaskRecord,
    pub(crate) tree: &'a TreeRecord,
    /// What the agent's own run reported about itself.
    pub(crate) facts: &'a RunFacts,
    pub(crate) format: Format,
    pub(crate) limits: Limits,
    /// The session's patch, the paths this arm left out of it, and the
    /// test globs: what the tamper suspects are read from.
    pub(crate) patch: &'a [u8],
    pub(crate) excluded: &'a [String],
    pub(crate) tests: &'a globset::GlobSet,
    /// The static flags the pipeline allows for this task, with reasons.
    pub(crate) allowed: &'a [super::tamper::Allowance],
}

/// The verdict of the session graded over `readings`.
pub(crate) fn decide(g: &Graded<'_>, readings: &Readings) -> Decision {
    let mut d = match unusable(g.task, g.tree, &readings.first, g.limits) {
        Some((verdict, fault, detail)) => Decision {
            verdict,
            fault,
            detail,
            failing: Vec::new(),
            not_run: Vec::new(),
            base_check: NOT_RUN.into(),
            new_check: NOT_RUN.into(),
            tamper: Vec::new(),
        },
        None => {
            let first = &readings.first;
            let unbuilt = Unbuilt::of(g.format, g.task, first);
            let failing = failing_after(g.format, g.task, first, &readings.reruns);
            let not_run: Vec<String> = failing
                .iter()
                .filter(|t| {
                    std::iter::once(first)
                        .chain(&readings.reruns)
                        .all(|r| !r.tests.contains_key(*t))
                })
                .cloned()
                .collect();
            let settled = settle(&unbuilt, failing, &not_run, readings.reruns.len() as u32);
            Decision {
                verdict: settled.verdict,
                fault: settled.fault,
                detail: settled.detail,
                failing: settled.failing,
                not_run,
                base_check: check_word(check(&g.task.pass_to_pass, &first.tests).len()),
                new_check: check_word(check(&g.task.fail_to_pass, &first.tests).len()),
                tamper: Vec::new(),
            }
        }
    };
    blame_infrastructure(&mut d.fault, &mut d.detail, g.facts);
    let changed = readings.changed_test_files();
    let (mut suspects, mut in_effect) =
        tamper_suspects(g.patch, g.excluded, g.tests, &changed, g.allowed);
    let audit = readings.audit(g.task);
    in_effect |= !audit.is_empty();
    suspects.extend(audit);
    if let Some(why) = readings.forged(d.verdict) {
        // A forged report says nothing true: whatever else it led to, the
        // session is unresolved, and the forgery is the agent's code.
        suspects.push(why.clone());
        d.tamper = suspects;
        d.verdict = Verdict::Unresolved;
        d.fault = Fault::Agent;
        d.detail = why;
        return d;
    }
    d.tamper = suspects;
    if d.verdict.passed()
        && let Some(why) = readings.guessed()
    {
        d.verdict = Verdict::Unresolved;
        d.fault = Fault::Agent;
        d.detail = why;
        return d;
    }
    if let Some(why) = readings.lost() {
        // A check or rerun the executor lost: the reading is unfinished.
        d.verdict = Verdict::Ineligible;
        d.fault = Fault::Infrastructure;
        d.detail = lost_detail(why);
        return d;
    }
    if in_effect && d.verdict.passed() {
        d.verdict = Verdict::Unresolved;
        d.fault = Fault::Agent;
        d.detail = format!(
            "tamper suspect, never scored resolved: {}",
            d.tamper.join("; ")
        );
    }
    d
}

/// Whether the graded run's report decides the verdict: then the checks
/// and reruns are worth running.
pub(crate) fn reads_report(task: &TaskRecord, tree: &TreeRecord, first: &RunRecord) -> bool {
    let any = Limits {
        timeout_s: 0,
        log_cap: 0,
        write: 0,
    };
    unusable(task, tree, first, any).is_none()
}

/// The expected tests to rerun next, or None when no rerun is due: none
/// still fails, `max` reruns were done, or a rerun cannot change the
/// verdict — the patch is empty (the base state, whose FAIL_TO_PASS tests
/// failed in every screening reading). Tests of a unit that did not build
/// are never rerun (a build failure is no flake).
pub(crate) fn next_rerun(
    format: Format,
    task: &TaskRecord,
    readings: &Readings,
    max: u32,
    empty_patch: bool,
) -> Option<Vec<String>> {
    if empty_patch || readings.reruns.len() as u32 >= max {
        return None;
    }
    let failing = failing_after(format, task, &readings.first, &readings.reruns);
    (!failing.is_empty()).then_some(failing)
}

const NOT_RUN: &str = "not run";

/// A grade the executor lost a run of: never scored, and not the agent's.
fn lost_detail(why: &str) -> String {
    format!("the executor lost a run of it ({why}); the next build runs it again")
}

/// Whether a stored grade stands: one the executor lost a run of is graded
/// again (its lost run is, by the run node's own rule).
pub(crate) fn stands(verdict: Verdict, fault: Fault) -> bool {
    !(verdict == Verdict::Ineligible && fault == Fault::Infrastructure)
}

/// The verdict of a session whose graded run says nothing about its tests,
/// or None when its report is usable.
fn unusable(
    task: &TaskRecord,
    tree: &TreeRecord,
    run: &RunRecord,
    limits: Limits,
) -> Option<(Verdict, Fault, String)> {
    if let Some(why) = &tree.skipped {
        return Some(match why {
            Skip::PatchApplyFailed(d) => (Verdict::PatchApplyFailed, Fault::Agent, d.clone()),
            Skip::TestPatchConflict(d) => (Verdict::TestPatchConflict, Fault::Ambiguous, d.clone()),
            Skip::NotGraded(d) => (Verdict::NotGraded, Fault::None, d.clone()),
            // The tree node's skips; a stage never records them.
            Skip::Declined(_) | Skip::Unstaged(_) => {
                (Verdict::NotGraded, Fault::None, why.to_string())
            }
        });
    }
    if let Some(why) = &run.lost {
        return Some((Verdict::Ineligible, Fault::Infrastructure, lost_detail(why)));
    }
    // Exit 127 (command not found) on a certified task is the patch's doing:
    // the task's controls ran the same command in the same environment.
    // Nothing such a run printed is believed.
    if run.exit_code == Some(127) && task.certified && !run.env_failed {
        return Some((
            Verdict::NoReport,
            Fault::Agent,
            "exit 127 (command or interpreter not found) while the task's controls ran the same command normally: the patch's code ended the run so".into(),
        ));
    }
    if run.env_failed || run.exit_code == Some(127) {
        return Some((
            Verdict::EnvSetupFailed,
            Fault::Harness,
            "the environment could not run the command (setup failed or exit 127: command or interpreter not found)".into(),
        ));
    }
    if run.log_truncated {
        let (fault, whose) = over_cap(task.loudest_screening_log, limits.log_cap);
        return Some((
            Verdict::Ineligible,
            fault,
            format!(
                "the evidence ({} bytes) exceeds the cap ({} bytes); the stored log was cut after {} bytes, and a grade is never scored on a cut log; {whose}",
                run.log_bytes, limits.log_cap, limits.log_cap
            ),
        ));
    }
    if run.timed_out {
        let why = format!("timed out after {} s", limits.timeout_s);
        return Some((Verdict::Unresolved, Fault::Agent, why));
    }
    if let Some(limit) = &run.limit {
        // The sandbox's memory, process, file-size or write limit ended or
        // broke the run: the patch's code did that, as with a timeout.
        let why = limit_reason(limit, limits.write);
        return Some((Verdict::Unresolved, Fault::Agent, why));
    }
    if run.report_error.is_some()
        || run.untrusted.is_some()
        || (run.tests.is_empty() && run.build_failures.is_empty())
    {
        let why = run
            .report_error
            .clone()
            .or(run.untrusted.clone())
            .unwrap_or_else(|| "the report holds no tests".into());
        // Graded tasks are certified: their controls reported normally, so a
        // run of this tree that gives no usable report is the patch's doing
        // (its code broke or faked the runner).
        let fault = if task.certified {
            Fault::Agent
        } else {
            Fault::Harness
        };
        return Some((Verdict::NoReport, fault, why));
    }
    None
}

/// Whose a graded run over the evidence cap is, and why: the agent's when
/// the task's controls stayed under the cap in every screening reading
/// (`loudest`, the most any of them wrote: its code made the flood); the
/// harness's when a control also overflowed, or when the task's record
/// predates this count.
fn over_cap(loudest: Option<u64>, cap: u64) -> (Fault, String) {
    match loudest {
        Some(bytes) if bytes <= cap => (
            Fault::Agent,
            format!(
                "the task's controls stayed under the cap in every screening reading (the most one wrote: {bytes} bytes): the flood is the patch's"
            ),
        ),
        Some(bytes) => (
            Fault::Harness,
            format!(
                "a control of the task overflowed the cap at screening too ({bytes} bytes): the cap, not the patch, is at fault"
            ),
        ),
        None => (
            Fault::Harness,
            "the task's record does not say how much its controls wrote".into(),
        ),
    }
}

/// The expected tests (PASS_TO_PASS, then FAIL_TO_PASS) the first run
/// failed, less those whose unit did not build (a rerun of the same tree
/// would only compile it again), less those a later rerun passed.
fn failing_after(
    format: Format,
    task: &TaskRecord,
    first: &RunRecord,
    reruns: &[RunRecord],
) -> Vec<String> {
    let unbuilt = Unbuilt::of(format, task, first);
    let mut failing: Vec<String> = check(&task.pass_to_pass, &first.tests)
        .into_iter()
        .chain(check(&task.fail_to_pass, &first.tests))
        .filter(|t| !unbuilt.tests.contains(t))
        .collect();
    for again in reruns {
        failing.retain(|t| again.tests.get(t) != Some(&Outcome::Passed));
    }
    failing
}

fn check(tests: &[String], outcomes: &BTreeMap<String, Outcome>) -> Vec<String> {
    tests
        .iter()
        .filter(|t| outcomes.get(*t) != Some(&Outcome::Passed))
        .cloned()
        .collect()
}

fn check_word(failing: usize) -> String {
    if failing == 0 {
        "pass".into()
    } else {
        format!("fail ({failing})")
    }
}

/// A red grade the agent would carry is not its fault when a witness the
/// agent cannot write saw its run die of an API or infrastructure failure
/// (`is_error: true`: the egress proxy's records, a Harbor trial's
/// controls): the patch is what a broken run left behind. The run's own
/// claim (`claimed_error`: a transcript's `is_error`, a trajectory's
/// `RateLimitError`) moves nothing, since the agent writes its own file;
/// it is said in the detail. Tamper suspects, decided after this, stay
/// the agent's.
pub(crate) fn blame_infrastructure(fault: &mut Fault, detail: &mut String, facts: &RunFacts) {
    if *fault != Fault::Agent {
        return;
    }
    let why = if facts.is_error == Some(true) {
        *fault = Fault::Infrastructure;
        "the agent's run ended with is_error (an API or infrastructure failure)"
    } else if facts.claimed_error == Some(true) {
        "the run's own file claims an API or infrastructure failure (claimed_error), which no witness of assay's saw: the agent's, counted"
    } else {
        return;
    };
    *detail = if detail.is_empty() {
        why.to_owned()
    } else {
        format!("{detail}; {why}")
    };
}

/// The verdict of a run that produced a usable report.
#[derive(Debug, PartialEq, Eq)]
struct Settled {
    verdict: Verdict,
    fault: Fault,
    detail: String,
    failing: Vec<String>,
}

/// Decides the verdict once the reruns are done: `failing`, the expected
/// tests that still fail after `reruns` reruns (`not_run` of them in no
/// report at all), besides the `unbuilt` ones (never rerun). A unit the
/// patch keeps from building is the agent's failure, with the compiler's
/// message as the reason.
fn settle(
    unbuilt: &Unbuilt<'_>,
    mut failing: Vec<String>,
    not_run: &[String],
    reruns: u32,
) -> Settled {
    let settled = |verdict, fault, detail: String, failing| Settled {
        verdict,
        fault,
        detail,
        failing,
    };
    if failing.is_empty() && unbuilt.tests.is_empty() {
        return if reruns == 0 {
            settled(Verdict::Resolved, Fault::None, String::new(), failing)
        } else {
            let detail = format!("passed on rerun {reruns}");
            settled(
                Verdict::ResolvedAfterRerun,
                Fault::FlakyTest,
                detail,
                failing,
            )
        };
    }
    let mut detail = Vec::new();
    if !unbuilt.tests.is_empty() {
        detail.push(unbuilt.detail());
    }
    let failed = failing.len() - not_run.len();
    if failed > 0 {
        detail.push(format!("{failed} tests still fail after {reruns} reruns"));
    }
    if !not_run.is_empty() {
        detail.push(format!(
            "{} tests did not run (no run's report names them: the runner stopped before them)",
            not_run.len()
        ));
    }
    failing.extend(unbuilt.tests.iter().cloned());
    failing.sort();
    failing.dedup();
    settled(
        Verdict::Unresolved,
        Fault::Agent,
        detail.join("; "),
        failing,
    )
}

/// The expected tests (FAIL_TO_PASS, PASS_TO_PASS) a graded run did not
/// name because their unit did not build, and those units' failures.
#[derive(Debug, Default, PartialEq, Eq)]
struct Unbuilt<'a> {
    /// Sorted, unique.
    tests: BTreeSet<String>,
    /// The failures that account for them, sorted by unit.
    failures: Vec<&'a assay_report::BuildFailure>,
}

impl<'a> Unbuilt<'a> {
    fn of(format: assay_report::Format, task: &TaskRecord, run: &'a RunRecord) -> Unbuilt<'a> {
        let mut out = Unbuilt::default();
        for t in task.fail_to_pass.iter().chain(&task.pass_to_pass) {
            if let Some(b) = run.build_failure_for(format, t, None) {
                out.tests.insert(t.clone());
                if !out.failures.contains(&b) {
                    out.failures.push(b);
                }
            }
        }
        out.failures.sort_by(|a, b| a.unit.cmp(&b.unit));
        out
    }

    /// The failing reason: each unit with the compiler's message.
    fn detail(&self) -> String {
        self.failures
            .iter()
            .map(|b| {
                let message = if b.message.is_empty() {
                    "(the runner printed no reason)"
                } else {
                    b.message.as_str()
                };
                format!("{} does not build: {message}", b.unit)
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The rule a finding of `run::guard::findings` belongs to: its audit event.
pub(crate) fn audit_rule(finding: &str) -> &str {
    finding.split_once(": ").map_or(finding, |(event, _)| event)
}

#[cfg(test)]
mod tests;
