//! What a grade records around its verdict: the record a grade starts from
//! ([`begin`]), the checks and reruns it runs and the evidence each leaves
//! ([`Check`], [`rerun_command`], [`Evidence`]), the decision written into it
//! ([`settle`]) and the tail of its last log ([`log_tail`]). The grade node
//! runs the processes; everything it records is decided here.

use assay_report::Format;
use std::collections::BTreeSet;

use super::policy::Exclusion;
use super::records::{
    Arm, EnvRecord, Fault, GradeRecord, LogTail, Policy, Receipt, RunRecord, SessionRecord,
    TaskRecord, Verdict,
};
use super::verdict::Decision;

/// How much of a log a grade carries: the last lines, capped in bytes.
const TAIL_LINES: usize = 40;
const TAIL_BYTES: usize = 4096;

/// The grade of a session before any check, rerun or verdict: who and what
/// was graded, how ([`Exclusion`]), and the graded run's evidence.
pub(crate) struct Subject<'a> {
    pub(crate) task: &'a TaskRecord,
    /// The task node's key, the released task's digest.
    pub(crate) task_digest: String,
    pub(crate) session: &'a SessionRecord,
    pub(crate) run: &'a RunRecord,
    pub(crate) env: &'a EnvRecord,
    pub(crate) arm: Arm,
    pub(crate) policy: Policy,
}

/// The record a grade starts from: nothing decided yet (`not_graded`, no
/// fault), the graded run's log as its first evidence.
pub(crate) fn begin(g: Subject<'_>, exclusion: Exclusion) -> GradeRecord {
    let (task, session, run, env) = (g.task, g.session, g.run, g.env);
    let mut rec = GradeRecord {
        reset_paths: exclusion.restored,
        tamper: Vec::new(),
        sandbox: run.sandbox,
        executor: env.executor,
        image: env.image.clone(),
        log_tail: None,
        unchecked: run.unchecked.clone(),
        weakly_checked: task.weakly_checked.clone(),
        session: session.id.clone(),
        instance_id: task.instance_id.clone(),
        track: task.track.clone(),
        task_digest: g.task_digest,
        agent: session.agent.clone(),
        model: session.model.clone(),
        arm: g.arm,
        policy: g.policy,
        verdict: Verdict::NotGraded,
        fault: Fault::None,
        detail: String::new(),
        failing: Vec::new(),
        not_run: Vec::new(),
        said: Default::default(),
        excluded_paths: exclusion.left_out,
        excluded_by: exclusion.rules,
        exit_code: run.exit_code,
        base_check: String::new(),
        new_check: String::new(),
        base_exit: None,
        new_exit: None,
        reruns: 0,
        evidence: Vec::new(),
        redactions: run.redactions,
    };
    if !run.log.is_empty() {
        rec.evidence.push(Receipt {
            what: "log".into(),
            digest: run.log.clone(),
            bytes: run.log_bytes,
            node: run.node.clone(),
        });
    }
    rec
}

/// A run a grade adds to the graded one, and the evidence it leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Evidence {
    /// A check run as a command of its own.
    Check(Check),
    /// The n-th rerun of the failing tests, from 1.
    Rerun(u32),
}

impl Evidence {
    /// Adds `run`'s log to the grade's evidence (and its redactions, and a
    /// check's exit code: [`Check::exit`]).
    pub(crate) fn record(self, rec: &mut GradeRecord, task: &TaskRecord, run: &RunRecord) {
        rec.redactions += run.redactions;
        let what = match self {
            Evidence::Check(c) => {
                match c {
                    Check::Base => rec.base_exit = c.exit(task, run),
                    Check::New => rec.new_exit = c.exit(task, run),
                }
                format!("{} check log", c.as_str())
            }
            Evidence::Rerun(n) => format!("rerun {n} log"),
        };
        rec.evidence.push(Receipt {
            what,
            digest: run.log.clone(),
            bytes: run.log_bytes,
            node: run.node.clone(),
        });
    }
}

/// The two checks a grade may run as commands of their own (`[grade]
/// check_command`), each keeping its exit code: `base=0 new=1` says the
/// agent broke nothing and fixed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// PASS_TO_PASS.
    Base,
    /// FAIL_TO_PASS.
    New,
}

impl Check {
    /// In the order they run.
    pub(crate) const ALL: [Check; 2] = [Check::Base, Check::New];

    fn as_str(self) -> &'static str {
        match self {
            Check::Base => "base",
            Check::New => "new",
        }
    }

    /// The task's tests this check runs.
    pub(crate) fn tests(self, task: &TaskRecord) -> &[String] {
        match self {
            Check::Base => &task.pass_to_pass,
            Check::New => &task.fail_to_pass,
        }
    }

    /// The check's exit code as a grade keeps it: the runner's, unless
    /// canaries ran in the check (a check naming tests runs their windows,
    /// whose must-fail members fail by design, so every exit would be
    /// non-zero) or it was sealed (a sealed test passes in its runner and
    /// fails in assay's reading on a wrong value): then 0 when every test
    /// the check names passed in its reading, else 1.
    pub(crate) fn exit(self, task: &TaskRecord, run: &RunRecord) -> Option<i32> {
        if !run.canaries.iter().any(|c| c.seen.is_some()) && run.sealed == 0 {
            return run.exit_code;
        }
        let passed = self
            .tests(task)
            .iter()
            .all(|t| run.tests.get(t) == Some(&assay_report::Outcome::Passed));
        Some(i32::from(!passed))
    }

    /// The check's command: `template` over its tests, or None when it has
    /// none to run.
    pub(crate) fn command(
        self,
        template: &str,
        format: Format,
        task: &TaskRecord,
    ) -> Option<String> {
        let tests = self.tests(task);
        (!tests.is_empty()).then(|| template.replace("{tests}", &test_args(format, tests)))
    }
}

/// `{tests}`: what selects each test on its runner's command line
/// ([`assay_report::selector`]: a libtest doctest by its file and item),
/// each once, quoted for `sh` where it needs to be (a doctest's spaces and
/// parentheses, a parameter's brackets).
pub(crate) fn test_args(format: Format, tests: &[String]) -> String {
    let mut seen = BTreeSet::new();
    tests
        .iter()
        .map(|t| assay_report::selector(format, t))
        .filter(|s| seen.insert(s.clone()))
        .map(|s| crate::model::shell::word(&s))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command that reruns `failing`: `[grade] rerun_command` over the
/// failing tests (`{tests}`) or their files (`{files}`, where the graded
/// run's report names them); without a `rerun_command`, the check command
/// over the failing tests alone when it selects tests (`{tests}`); else the
/// whole test command.
pub(crate) fn rerun_command(
    template: Option<&str>,
    check_template: Option<&str>,
    test_command: &str,
    format: Format,
    first: &RunRecord,
    failing: &[String],
) -> String {
    let by_tests = match template {
        Some(c) => Some(c).filter(|c| c.contains("{tests}")),
        None => check_template.filter(|c| c.contains("{tests}")),
    };
    if let Some(c) = by_tests
        && !failing.is_empty()
    {
        return c.replace("{tests}", &test_args(format, failing));
    }
    let files: BTreeSet<&String> = failing.iter().filter_map(|t| first.files.get(t)).collect();
    match template {
        Some(c) if !files.is_empty() && c.contains("{files}") => {
            let files: Vec<&str> = files.iter().map(|f| f.as_str()).collect();
            c.replace("{files}", &files.join(" "))
        }
        _ => test_command.to_owned(),
    }
}

/// Writes the decision into the grade, with the number of reruns it took.
pub(crate) fn settle(rec: &mut GradeRecord, decision: Decision, reruns: u32) {
    rec.verdict = decision.verdict;
    rec.fault = decision.fault;
    rec.detail = decision.detail;
    rec.failing = decision.failing;
    rec.not_run = decision.not_run;
    rec.base_check = decision.base_check;
    rec.new_check = decision.new_check;
    rec.tamper = decision.tamper;
    rec.reruns = reruns;
}

/// The evidence whose log a grade's tail is cut from: the last, on a
/// grade that is not `resolved` (a resolved grade carries none).
pub(crate) fn tail_of(rec: &GradeRecord) -> Option<&Receipt> {
    (rec.verdict != Verdict::Resolved)
        .then(|| rec.evidence.last())
        .flatten()
}

/// A graded log as the report shows its end: the tests the runs renamed
/// under their declared names, and the canaries' lines left out (a
/// section between two rules of `=` or `_`, as unittest and pytest print
/// a failure, that names a canary and no other test; any other line that
/// names one). The canaries fail by design: their failures would push
/// the real ones out of the tail. The stored log is the evidence, as the
/// run wrote it.
pub(crate) fn without_canaries<'a>(
    log: &[u8],
    runs: impl Iterator<Item = &'a RunRecord>,
) -> Vec<u8> {
    let mut canaries = std::collections::BTreeSet::new();
    let mut renamed = std::collections::BTreeMap::new();
    for r in runs {
        for c in &r.canaries {
            canaries.insert(c.name.rsplit('.').next().unwrap_or(&c.name).to_owned());
        }
        renamed.extend(r.renamed.iter().map(|(a, b)| (a.clone(), b.clone())));
    }
    if canaries.is_empty() && renamed.is_empty() {
        return log.to_vec();
    }
    let text = String::from_utf8_lossy(log);
    let names = |line: &str, set: &dyn Fn(&str) -> bool| {
        line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(set)
    };
    let is_canary = |line: &str| names(line, &|w| canaries.contains(w));
    let is_real = |line: &str| names(line, &|w| renamed.contains_key(w));
    let rule = |line: &str| {
        let t = line.trim();
        t.len() >= 20 && (t.chars().all(|c| c == '=') || t.starts_with("____"))
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut k = 0;
    while k < lines.len() {
        if rule(lines[k]) {
            // The section up to the next rule (or a closing `---` rule
            // followed by the runner's summary).
            let mut end = k + 1;
            while end < lines.len() && !rule(lines[end]) && !lines[end].starts_with("Ran ") {
                end += 1;
            }
            if end < lines.len() && lines[end].starts_with("Ran ") && end > k + 1 {
                end -= 1;
            }
            let section = &lines[k..end];
            let canary = section.iter().take(3).any(|l| is_canary(l));
            let real = section.iter().take(3).any(|l| is_real(l));
            if !canary || real {
                out.extend(section.iter().copied());
            }
            k = end;
            continue;
        }
        if !is_canary(lines[k]) {
            out.push_str(lines[k]);
        }
        k += 1;
    }
    let mut back = String::with_capacity(out.len());
    let mut word = String::new();
    for ch in out.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            word.push(ch);
            continue;
        }
        back.push_str(renamed.get(&word).map_or(word.as_str(), String::as_str));
        word.clear();
        back.push(ch);
    }
    back.push_str(renamed.get(&word).map_or(word.as_str(), String::as_str));
    back.into_bytes()
}

/// The last [`TAIL_LINES`] lines of `log`, at most [`TAIL_BYTES`] bytes of
/// them (a longer last line is cut from its start, on a character boundary,
/// and marked with `…`).
pub(crate) fn log_tail(of: &str, log: &[u8]) -> LogTail {
    let text = String::from_utf8_lossy(log);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let lines: Vec<&str> = text.split('\n').collect();
    let (mut start, mut bytes) = (lines.len(), 0);
    while start > 0
        && lines.len() - start < TAIL_LINES
        && bytes + lines[start - 1].len() < TAIL_BYTES
    {
        start -= 1;
        bytes += lines[start].len() + 1;
    }
    let tail = if start == lines.len() {
        // The last line alone is over the cap: its end.
        start -= 1;
        let last = lines[start];
        let mut cut = last.len() - TAIL_BYTES;
        while !last.is_char_boundary(cut) {
            cut += 1;
        }
        format!("…{}", &last[cut..])
    } else {
        lines[start..].join("\n")
    };
    LogTail {
        of: of.to_owned(),
        lines_omitted: start as u64,
        text: tail,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_reports_log_tail_leaves_the_canaries_out_and_names_tests_as_declared() {
        let log = "\
test_zero_value (tests.test_ops.TestOps.test_zero_value) ... FAIL
test_order_case (tests.test_ops.TestOps.test_order_case) ... FAIL
test_range_basic (tests.test_ops.TestOps.test_range_basic) ... ok

======================================================================
FAIL: test_order_case (tests.test_ops.TestOps.test_order_case)
----------------------------------------------------------------------
AssertionError: 1024 != 1015

======================================================================
FAIL: test_zero_value (tests.test_ops.TestOps.test_zero_value)
----------------------------------------------------------------------
AssertionError: 8 != 2

----------------------------------------------------------------------
Ran 3 tests in 0.001s

FAILED (failures=2)
";
        let run = RunRecord {
            canaries: vec![crate::model::canary::Canary {
                file: "tests/test_ops.py".into(),
                name: "TestOps.test_order_case".into(),
                must: crate::model::canary::Must::Fail,
                seen: None,
                expected: true,
                of: None,
                original: None,
            }],
            renamed: [
                ("test_zero_value".to_owned(), "test_sub".to_owned()),
                ("test_range_basic".to_owned(), "test_add".to_owned()),
            ]
            .into(),
            ..RunRecord::default()
        };
        let out = String::from_utf8(without_canaries(log.as_bytes(), [&run].into_iter())).unwrap();
        assert!(
            !out.contains("test_order_case") && !out.contains("1015"),
            "{out}"
        );
        assert!(
            out.contains("FAIL: test_sub (tests.test_ops.TestOps.test_sub)"),
            "{out}"
        );
        assert!(
            out.contains("AssertionError: 8 != 2") && out.contains("Ran 3 tests"),
            "{out}"
        );
        assert!(
            out.contains("test_add (tests.test_ops.TestOps.test_add) ... ok"),
            "{out}"
        );
    }

    use super::*;

    #[test]
    fn a_log_tail_is_the_last_lines_within_the_byte_cap() {
        let log: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let t = log_tail("rerun 1 log", log.as_bytes());
        assert_eq!((t.of.as_str(), t.lines_omitted), ("rerun 1 log", 60));
        assert!(t.text.starts_with("line 61\n") && t.text.ends_with("line 100"));
        // Long lines: fewer of them, never over the cap.
        let wide = "x".repeat(1000);
        let log = format!("{wide}\n{wide}\n{wide}\n{wide}\n{wide}\nend\n");
        let t = log_tail("log", log.as_bytes());
        assert!(t.text.len() <= TAIL_BYTES);
        assert_eq!(
            t.lines_omitted, 1,
            "four of the five wide lines and the last"
        );
        assert!(t.text.ends_with("\nend"));
        // One line over the cap: its end, cut on a character boundary.
        let log = "é".repeat(3000);
        let t = log_tail("log", log.as_bytes());
        let cut = t.text.strip_prefix('…').expect("marked as cut");
        assert!(cut.len() <= TAIL_BYTES && cut.chars().all(|c| c == 'é'));
        assert_eq!(t.lines_omitted, 0);
        assert_eq!(log_tail("log", b"").text, "");
    }

    const PY: Format = Format::Pytest;

    fn task() -> TaskRecord {
        TaskRecord {
            fail_to_pass: vec!["t.T.test_new".into()],
            pass_to_pass: Vec::new(),
            ..TaskRecord::default()
        }
    }

    #[test]
    fn a_check_runs_its_own_tests_and_none_without_them() {
        let task = task();
        assert_eq!(
            Check::New.command("pytest {tests}", PY, &task).as_deref(),
            Some("pytest t.T.test_new")
        );
        assert_eq!(Check::Base.command("pytest {tests}", PY, &task), None);
    }

    #[test]
    fn a_rerun_runs_the_failing_tests_files_where_the_report_names_them() {
        let mut first = RunRecord::default();
        first
            .files
            .insert("t.T.test_new".into(), "tests/test_t.py".into());
        let failing = ["t.T.test_new".to_owned(), "t.T.unnamed".to_owned()];
        let template = Some("pytest {files}");
        assert_eq!(
            rerun_command(template, None, "pytest", PY, &first, &failing),
            "pytest tests/test_t.py"
        );
        assert_eq!(
            rerun_command(None, None, "pytest", PY, &first, &failing),
            "pytest"
        );
        let unnamed = ["t.T.unnamed".to_owned()];
        assert_eq!(
            rerun_command(template, None, "pytest", PY, &first, &unnamed),
            "pytest"
        );
    }

    /// Where a template can select tests, a rerun runs the failing tests
    /// alone, not their whole files: `rerun_command`'s `{tests}`, or, with
    /// no `rerun_command`, the check command's. An explicit `{files}`
    /// rerun command is kept.
    #[test]
    fn a_rerun_runs_only_the_failing_tests_where_they_can_be_selected() {
        let mut first = RunRecord::default();
        first
            .files
            .insert("t.T.test_new".into(), "tests/test_t.py".into());
        let failing = ["t.T.test_new".to_owned()];
        assert_eq!(
            rerun_command(None, Some("pytest {tests}"), "pytest", PY, &first, &failing),
            "pytest t.T.test_new"
        );
        assert_eq!(
            rerun_command(
                Some("pytest {files}"),
                Some("pytest {tests}"),
                "pytest",
                PY,
                &first,
                &failing
            ),
            "pytest tests/test_t.py"
        );
        assert_eq!(
            rerun_command(
                Some("run {tests}"),
                Some("check {tests}"),
                "x",
                PY,
                &first,
                &failing
            ),
            "run t.T.test_new"
        );
        assert_eq!(
            rerun_command(None, Some("check --all"), "x", PY, &first, &failing),
            "x",
            "a check command that selects nothing is not a rerun"
        );
    }

    #[test]
    fn each_run_leaves_its_evidence_and_a_check_its_exit_code() {
        let session = SessionRecord {
            id: "s".into(),
            task: "calc-1".into(),
            track: "basic".into(),
            agent: "a".into(),
            model: "m".into(),
            patch: String::new(),
            facts: Default::default(),
            transcript: None,
        };
        let (task, env) = (task(), env());
        let run = RunRecord {
            log: "aa".into(),
            log_bytes: 3,
            redactions: 1,
            ..RunRecord::default()
        };
        let mut rec = begin(
            Subject {
                task: &task,
                task_digest: "dd".into(),
                session: &session,
                run: &run,
                env: &env,
                arm: Arm::Exclude,
                policy: Policy::TestsAndInfra,
            },
            Exclusion::default(),
        );
        let check = RunRecord {
            exit_code: Some(1),
            log: "bb".into(),
            redactions: 2,
            ..RunRecord::default()
        };
        let task = TaskRecord {
            fail_to_pass: vec!["t.T.test_a".into()],
            ..TaskRecord::default()
        };
        Evidence::Check(Check::New).record(&mut rec, &task, &check);
        Evidence::Rerun(1).record(&mut rec, &task, &RunRecord::default());
        let whats: Vec<&str> = rec.evidence.iter().map(|r| r.what.as_str()).collect();
        assert_eq!(whats, ["log", "new check log", "rerun 1 log"]);
        assert_eq!(
            (rec.base_exit, rec.new_exit, rec.redactions),
            (None, Some(1), 3)
        );
        assert_eq!(tail_of(&rec).map(|r| r.what.as_str()), Some("rerun 1 log"));
        rec.verdict = Verdict::Resolved;
        assert_eq!(tail_of(&rec), None);
    }

    /// A check naming tests runs their windows, whose must-fail members
    /// fail by design; its exit code still says whether the check's own
    /// tests passed (`base=0 new=1`).
    #[test]
    fn a_check_that_ran_canaries_keeps_its_tests_outcome_as_its_exit() {
        let task = TaskRecord {
            fail_to_pass: vec!["t.T.test_a".into()],
            pass_to_pass: vec!["t.T.test_b".into()],
            ..TaskRecord::default()
        };
        let canary = crate::model::canary::Canary {
            file: "t.py".into(),
            name: "T.test_zero".into(),
            must: crate::model::canary::Must::Fail,
            seen: Some(assay_report::Outcome::Failed),
            expected: true,
            of: Some("t.T.test_a".into()),
            original: None,
        };
        let run = |outcome, canaries: Vec<_>| RunRecord {
            exit_code: Some(1),
            tests: [("t.T.test_a".to_owned(), outcome)].into(),
            canaries,
            ..RunRecord::default()
        };
        use assay_report::Outcome::{Failed, Passed};
        assert_eq!(
            Check::New.exit(&task, &run(Passed, vec![canary.clone()])),
            Some(0)
        );
        assert_eq!(
            Check::New.exit(&task, &run(Failed, vec![canary.clone()])),
            Some(1)
        );
        // A test the check names that its reading lacks did not pass.
        assert_eq!(Check::Base.exit(&task, &run(Passed, vec![canary])), Some(1));
        // No canary ran: the runner's own exit code.
        assert_eq!(Check::New.exit(&task, &run(Passed, Vec::new())), Some(1));
    }

    fn env() -> EnvRecord {
        EnvRecord {
            dir: String::new(),
            ok: true,
            exit_code: Some(0),
            setup_log: String::new(),
            digest: String::new(),
            executor: None,
            image: None,
            base_image: None,
            export: None,
            failed_command: None,
        }
    }

    /// A doctest's stable id selects it by file and item (each item once);
    /// ids with spaces, parentheses or brackets reach the command quoted.
    #[test]
    fn selected_tests_are_quoted_and_doctests_selected_by_their_item() {
        let ids = [
            "src/lib.rs - add".to_owned(),
            "src/lib.rs - add #2".to_owned(),
            "tests::adds".to_owned(),
            "it's".to_owned(),
        ];
        assert_eq!(
            test_args(Format::Libtest, &ids),
            "'src/lib.rs - add (line' tests::adds 'it'\\''s'"
        );
        let param = ["tests/test_x.py::test_a[1-2]".to_owned()];
        assert_eq!(test_args(PY, &param), "'tests/test_x.py::test_a[1-2]'");
        assert_eq!(test_args(PY, &["t.T.test_new".to_owned()]), "t.T.test_new");
    }
}
