//! The released unit: what a task is made of (the triage record, the
//! screening record, the statement) and, in order, why it is not released
//! certified — declined by triage, not screened, a rejected topic split, a
//! failed control, a topic with no FAIL_TO_PASS test (each line of
//! `uncertified_because` starts with its [`Reason`]). And the eval script
//! SWE-bench's harness runs.

use std::collections::BTreeSet;

use regex::Regex;
use serde::Serialize;

use super::funnel::Reason;
use super::policy::TestPatch;
use super::records::{CertifyRecord, Control, ScreenRecord, TaskRecord, TaskStatus, TriageRecord};
use super::timeout::TimeoutRule;
use crate::model::canary::{self, Certified};

#[derive(Clone, Debug, Serialize)]
pub(crate) struct TaskParams {
    pub(crate) instance_id: String,
    pub(crate) track: String,
    pub(crate) statement: Option<String>,
    pub(crate) spec: Option<String>,
    /// This task's topic and every topic of the split: name -> pattern.
    pub(crate) topic: Option<String>,
    pub(crate) topics: Vec<(String, String)>,
    pub(crate) env: String,
    /// SWE-bench's `repo` (`[[source]] repo`, default the source name).
    pub(crate) repo: String,
    /// `[[source]] version`, default "0".
    pub(crate) version: String,
    pub(crate) hints: Option<String>,
    /// The merge commit's committer time, ISO 8601 UTC.
    pub(crate) created_at: String,
    /// The environment's test command and its report format's SWE-bench log
    /// parser: they make the published eval script.
    pub(crate) test_command: String,
    /// `[env] touched_command`: what the graded runs run over the test
    /// files the test patch touches, and so what the eval script runs.
    /// Left out of the key when absent (the keys stay what they were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) touched_command: Option<String>,
    pub(crate) log_parser: String,
    /// How the graded runs' timeout follows from the screening readings;
    /// absent (`[grade] timeout_factor = 0`): the environment's timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) timeout: Option<super::timeout::TimeoutRule>,
}

/// An instance's own lists with every listed test on which the screen's
/// readings disagree, in the ids of the task's log parser (the instance's).
fn dataset_lists(
    p: &TaskParams,
    triage: &TriageRecord,
    screen: &ScreenRecord,
) -> Option<crate::model::instances::DatasetLists> {
    let mut lists = triage.dataset.clone()?;
    // An instance declined before its screen (no image, no test runner)
    // has no reading to hold its lists against: none disagrees.
    if screen.readings.values().any(|tests| !tests.is_empty()) {
        lists.disagreements = crate::model::instances::compare(&lists, &screen.readings, |id| {
            crate::model::instances::test_id(&p.log_parser, id)
        });
    }
    Some(lists)
}

/// The released task of a candidate (of one topic of it, when split), and
/// why it is not certified, if it is not: `gold` and `test` are the
/// patches' text.
pub(crate) fn assemble(
    p: &TaskParams,
    triage: &TriageRecord,
    screen: &ScreenRecord,
    gold: String,
    test: String,
) -> Result<TaskRecord, regex::Error> {
    // What the graded runs run: the touched command, where there is one.
    let hidden = TestPatch::read(test.as_bytes()).hidden();
    let command =
        super::touched::command_over(p.touched_command.as_deref(), &p.test_command, &hidden);
    // An instance's eval script runs in the instance's own image, whose
    // repository has the instance's base commit, not assay's tree of it.
    let base = triage
        .dataset
        .as_ref()
        .map_or(&triage.base, |d| &d.base_commit);
    let script = eval_script(base, &test, &command);
    let mut record = TaskRecord {
        instance_id: p.instance_id.clone(),
        repo: p.repo.clone(),
        base_commit: triage.base.clone(),
        patch: gold,
        test_patch: test,
        problem_statement: String::new(),
        fail_to_pass: screen.fail_to_pass.clone(),
        pass_to_pass: screen.pass_to_pass.clone(),
        track: p.track.clone(),
        status: TaskStatus::Released,
        certified: true,
        uncertified_because: Vec::new(),
        flaky: screen.flaky.clone(),
        excluded: Vec::new(),
        env: p.env.clone(),
        topic: p.topic.clone(),
        executor: None,
        image: None,
        hints_text: p.hints.clone().unwrap_or_default(),
        created_at: p.created_at.clone(),
        version: p.version.clone(),
        log_parser: p.log_parser.clone(),
        eval_script: script,
        timeout_s: p.timeout.and_then(|rule| rule.of(screen.slowest_s)),
        slowest_screening_s: p.timeout.and(screen.slowest_s),
        loudest_screening_log: screen.loudest_log_bytes,
        canaries: None,
        weakly_checked: None,
        forger_odds_log2: None,
        slowest_certify_s: None,
        audit_off: screen.audit_off.clone(),
        dataset: dataset_lists(p, triage, screen),
    };
    if !triage.eligible() {
        record.status = TaskStatus::Declined;
        record.certified = false;
        record
            .uncertified_because
            .push(Reason::Declined(triage.decision).line(&triage.detail));
        return Ok(record);
    }
    if let Some(skip) = &screen.skipped {
        record.status = TaskStatus::Declined;
        record.certified = false;
        record
            .uncertified_because
            .push(Reason::NotScreened.line(skip));
        return Ok(record);
    }
    if let Some(topic) = &p.topic {
        let patterns: Vec<(String, Regex)> = p
            .topics
            .iter()
            .map(|(n, pat)| Regex::new(pat).map(|r| (n.clone(), r)))
            .collect::<Result<_, _>>()?;
        let mut offending = Vec::new();
        let mut mine = Vec::new();
        for t in &screen.fail_to_pass {
            let hits: Vec<&String> = patterns
                .iter()
                .filter(|(_, r)| r.is_match(t))
                .map(|(n, _)| n)
                .collect();
            match hits.as_slice() {
                [one] if *one == topic => mine.push(t.clone()),
                [_] => record.excluded.push(t.clone()),
                [] => offending.push(format!("{t} (no topic)")),
                many => offending.push(format!(
                    "{t} (topics {})",
                    many.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
        if !offending.is_empty() {
            record.status = TaskStatus::Declined;
            record.certified = false;
            record
                .uncertified_because
                .push(Reason::TopicSplitRejected.line(&format!(
                    "each FAIL_TO_PASS test must fall in exactly one topic: {}",
                    offending.join("; ")
                )));
            return Ok(record);
        }
        record.fail_to_pass = mine;
    }
    record.excluded.extend(screen.gold_failures.iter().cloned());
    record.excluded.extend(screen.regressions.iter().cloned());
    record.excluded.sort();
    for (control, (ok, why)) in &screen.controls {
        if !ok {
            record.certified = false;
            record
                .uncertified_because
                .push(Reason::Control(*control).line(why));
        }
    }
    // A broken environment read nothing: no derived reason is added to it.
    let broken = screen.controls.contains_key(&Control::EnvironmentBroken);
    if p.topic.is_some() && record.fail_to_pass.is_empty() && !broken {
        record.certified = false;
        record.uncertified_because.push(
            Reason::Control(Control::EmptyPatchFails).line(&"this topic has no FAIL_TO_PASS test"),
        );
    }
    match &p.statement {
        None => {
            record.status = TaskStatus::AwaitingStatement;
        }
        Some(s) => {
            record.problem_statement = match &p.spec {
                Some(spec) => format!("{s}\n\n## Interface\n\n{spec}"),
                None => s.clone(),
            };
        }
    }
    Ok(record)
}

/// The canaries of a task's graded runs: what certification kept of its
/// own tests (FAIL_TO_PASS and PASS_TO_PASS alone: a copy or a mutant of
/// a test outside them could fail or pass for reasons of its own), or why
/// its grades are weakly checked (docs/security.md, "Canaries").
pub(crate) fn canaries_of(
    record: &mut TaskRecord,
    certify: &CertifyRecord,
    timeout: Option<TimeoutRule>,
) {
    if !record.certified {
        return;
    }
    let f2p: BTreeSet<&str> = record.fail_to_pass.iter().map(String::as_str).collect();
    let keep: BTreeSet<&str> = f2p
        .iter()
        .copied()
        .chain(record.pass_to_pass.iter().map(String::as_str))
        .collect();
    let c = &certify.certified;
    let mutants: Vec<_> = c
        .mutants
        .iter()
        .filter(|m| keep.contains(m.of.id.as_str()))
        .map(|m| {
            let mut m = m.clone();
            m.fail_to_pass = f2p.contains(m.of.id.as_str());
            m
        })
        .collect();
    let seals: Vec<_> = c
        .seals
        .iter()
        .filter(|s| keep.contains(s.of.id.as_str()))
        .map(|s| {
            let mut s = s.clone();
            s.fail_to_pass = f2p.contains(s.of.id.as_str());
            s
        })
        .collect();
    if mutants.is_empty() && seals.is_empty() {
        let why = match &certify.none {
            Some(why) => why.clone(),
            None => "no certified mutant of the task's own tests".to_owned(),
        };
        record.weakly_checked = Some(why);
        record.forger_odds_log2 = canary::forger_odds_log2(None, &record.fail_to_pass);
        return;
    }
    // The graded runs carry up to what certification carried: they time
    // out from its reading where it was the slowest.
    if let (Some(rule), Some(c)) = (timeout, certify.slowest_s)
        && record.slowest_screening_s.is_some_and(|s| c > s)
    {
        record.slowest_certify_s = Some(c);
        record.timeout_s = rule.of(Some(c));
    }
    record.canaries = Some(Certified {
        mutants,
        copies: c
            .copies
            .iter()
            .filter(|t| keep.contains(t.id.as_str()))
            .cloned()
            .collect(),
        renamed: c.renamed.clone(),
        seals,
    });
    record.forger_odds_log2 =
        canary::forger_odds_log2(record.canaries.as_ref(), &record.fail_to_pass);
}

/// The eval script SWE-bench's harness runs in `/testbed`, in its shape:
/// the test patch's files reset, the test patch applied, the test command
/// between the start and end markers, the test patch's files reset again.
///
/// The harness applies the session's patch whole, then runs this; assay
/// leaves out the session's sections that reach the test patch's files
/// ([`super::policy::reset`]). The reset makes the tree the same: every
/// path the test patch writes (a file it creates, deletes or renames too)
/// goes back to the base, and so does anything in its way. It runs under
/// `set -uxo pipefail`, without `-e`, so each step is one that cannot fail
/// on a tree the session changed: a file or symlink where the test patch
/// needs a directory is removed first (before anything is removed below
/// it: a symlink is never followed), then each path whole (`rm -rf`: a
/// directory the session put in its place too), then the ones the base
/// has are checked out. A file the test patch creates is absent at base,
/// so `git checkout <base> -- file` cannot reset it; left there, the
/// session's own copy of it would make `git apply` refuse the test patch
/// ("already exists in working directory") and the hidden tests not run.
pub(crate) fn eval_script(base: &str, test_patch: &str, command: &str) -> String {
    let q = crate::model::shell::quote;
    let written = TestPatch::read(test_patch.as_bytes()).written_at_base();
    let mut dirs = BTreeSet::new();
    for (path, _) in &written {
        let mut at = path.as_str();
        while let Some((dir, _)) = at.rsplit_once('/') {
            dirs.insert(dir);
            at = dir;
        }
    }
    // Shallowest first: a symlinked directory goes before what is below it.
    let mut dirs: Vec<&str> = dirs.into_iter().collect();
    dirs.sort_by_key(|d| (d.matches('/').count(), *d));
    let mut reset = String::new();
    for d in dirs {
        let d = q(d);
        reset.push_str(&format!("[ -d {d} ] && [ ! -L {d} ] || rm -f -- {d}\n"));
    }
    let all: Vec<String> = written.iter().map(|(p, _)| q(p)).collect();
    let at_base: Vec<String> = written
        .iter()
        .filter(|(_, at_base)| *at_base)
        .map(|(p, _)| q(p))
        .collect();
    if !all.is_empty() {
        reset.push_str(&format!("rm -rf -- {}\n", all.join(" ")));
    }
    if !at_base.is_empty() {
        reset.push_str(&format!("git checkout {base} -- {}\n", at_base.join(" ")));
    }
    let mut patch = test_patch.to_owned();
    if !patch.is_empty() && !patch.ends_with('\n') {
        patch.push('\n');
    }
    format!(
        "#!/bin/bash\nset -uxo pipefail\ncd /testbed\n{reset}git apply -v - <<'EOF_114329324912'\n{patch}EOF_114329324912\n\
         : '>>>>> Start Test Output'\n{command}\n: '>>>>> End Test Output'\n{reset}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::records::Decision;

    fn params(topic: Option<&str>) -> TaskParams {
        TaskParams {
            instance_id: "calc-1".into(),
            track: "basic".into(),
            statement: Some("It breaks.".into()),
            spec: None,
            topic: topic.map(str::to_owned),
            topics: vec![
                ("div".into(), "test_div".into()),
                ("mul".into(), "test_mul".into()),
            ],
            env: "py".into(),
            repo: "calc".into(),
            version: "0".into(),
            hints: None,
            created_at: String::new(),
            test_command: "pytest".into(),
            touched_command: None,
            log_parser: String::new(),
            timeout: Some(super::super::timeout::TimeoutRule {
                factor: 10,
                floor_s: 30,
                ceiling_s: 1800,
            }),
        }
    }

    fn triage() -> TriageRecord {
        TriageRecord {
            id: "calc-1".into(),
            repo: "calc".into(),
            base: "abc".into(),
            head: String::new(),
            title: String::new(),
            body: String::new(),
            decision: Decision::Eligible,
            detail: String::new(),
            test_files: vec!["tests/test_ops.py".into()],
            gold_files: Vec::new(),
            test_patch: String::new(),
            gold_patch: String::new(),
            dataset: None,
        }
    }

    /// The task of `screen` (of the topic `mul` when `topic`), and the
    /// reasons of its `uncertified_because`.
    fn assembled(
        triage: &TriageRecord,
        screen: &ScreenRecord,
        topic: bool,
    ) -> (TaskRecord, Vec<Option<Reason>>) {
        let p = params(topic.then_some("mul"));
        let t = assemble(&p, triage, screen, String::new(), String::new()).expect("assembles");
        let reasons = t
            .uncertified_because
            .iter()
            .map(|l| Reason::of(l))
            .collect();
        (t, reasons)
    }

    /// Every line of `uncertified_because` starts with the reason the
    /// funnel counts it under.
    #[test]
    fn each_reason_a_task_is_not_certified_leads_its_line() {
        let mut screen = ScreenRecord {
            fail_to_pass: vec!["tests/test_ops.py::test_div".into()],
            ..ScreenRecord::default()
        };
        let control = |c, ok, why: &str| (c, (ok, why.to_owned()));
        screen.controls = [
            control(Control::GoldResolves, false, "a: b"),
            control(Control::ReadingsTrusted, true, ""),
        ]
        .into();
        let (t, _) = assembled(&triage(), &screen, false);
        assert!(!t.certified);
        assert_eq!(t.uncertified_because, ["gold_resolves: a: b"]);
        // The topic `mul` has no FAIL_TO_PASS test of its own.
        let (_, reasons) = assembled(&triage(), &screen, true);
        assert_eq!(
            reasons,
            [
                Some(Reason::Control(Control::GoldResolves)),
                Some(Reason::Control(Control::EmptyPatchFails))
            ]
        );
        // A broken environment stands alone.
        screen.controls = [control(Control::EnvironmentBroken, false, "`go` not found")].into();
        let (_, reasons) = assembled(&triage(), &screen, true);
        assert_eq!(reasons, [Some(Reason::Control(Control::EnvironmentBroken))]);
        // A test in no topic rejects the split.
        screen.fail_to_pass = vec!["tests/test_ops.py::test_add".into()];
        let (t, reasons) = assembled(&triage(), &screen, true);
        assert_eq!(t.status, TaskStatus::Declined);
        assert_eq!(reasons, [Some(Reason::TopicSplitRejected)]);
        // Declined by triage, or never screened.
        let declined = TriageRecord {
            decision: Decision::DocsOnly,
            ..triage()
        };
        let (_, reasons) = assembled(&declined, &screen, false);
        assert_eq!(reasons, [Some(Reason::Declined(Decision::DocsOnly))]);
        let skipped = ScreenRecord {
            skipped: Some("cannot compose".into()),
            ..ScreenRecord::default()
        };
        let (_, reasons) = assembled(&triage(), &skipped, false);
        assert_eq!(reasons, [Some(Reason::NotScreened)]);
    }

    /// The eval script runs what the graded runs run: the touched command
    /// over the test files the test patch leaves, where one is set; the
    /// test command otherwise, and where the patch leaves no file to run.
    #[test]
    fn the_eval_script_runs_the_graded_runs_command() {
        let test = "diff --git a/tests/test_ops.py b/tests/test_ops.py\n\
                    --- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n\
                    @@ -1 +1,2 @@\n x\n+y\n";
        let screen = ScreenRecord::default();
        let script = |touched: Option<&str>, test: &str| {
            let p = TaskParams {
                touched_command: touched.map(str::to_owned),
                ..params(None)
            };
            assemble(&p, &triage(), &screen, String::new(), test.to_owned())
                .expect("assembles")
                .eval_script
        };
        let touched = script(Some("python -m pytest -rA {files}"), test);
        assert!(
            touched.contains("python -m pytest -rA tests/test_ops.py"),
            "{touched}"
        );
        let whole = script(None, test);
        assert!(whole.contains("\npytest"), "{whole}");
        assert!(!whole.contains("-rA"), "{whole}");
        let nothing_left = script(Some("python -m pytest -rA {files}"), "");
        assert!(!nothing_left.contains("-rA"), "{nothing_left}");
    }
}
