//! `task`: assembles the released unit from the triage record, the screening
//! record and the statement. Its node key is the released task's digest, so a
//! changed statement re-releases that task alone.
//!
//! On the Docker executor the environment is a third input: the task records
//! the image it was screened (certified) in, and a rebuilt image re-releases
//! it. Local tasks have no such input, so their keys are what they were.

use std::sync::Arc;

use assay_engine::{Digest, JobCtx};
use regex::Regex;
use serde::Serialize;

use super::node::{Kind, Made, NodeKind};
use super::records::{EnvRecord, ScreenRecord, TaskRecord, TaskStatus, TriageRecord};

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
    pub(crate) log_parser: String,
}

super::node::inputs! {
    pub(crate) struct TaskInputs / TaskNames {
        triage: TriageRecord,
        screen: ScreenRecord;
        // Docker only: the environment that screened (certified) the task.
        ?env: EnvRecord
    }
}

pub(crate) struct Task(pub(crate) TaskParams);

impl Kind for Task {
    const NAME: &'static str = NodeKind::Task.as_str();
    const VERSION: u32 = 2;
    type Params = TaskParams;
    type Inputs = TaskInputs;
    type Record = TaskRecord;

    fn params(&self) -> &TaskParams {
        &self.0
    }

    async fn run(self: Arc<Self>, i: TaskInputs, ctx: JobCtx) -> Result<Made<TaskRecord>, String> {
        let p = &self.0;
        let err = |e: &dyn std::fmt::Display| format!("{}: {e}", p.instance_id);
        let patch = |d: &str| -> Result<String, String> {
            if d.is_empty() {
                return Ok(String::new());
            }
            let d: Digest = d.parse().map_err(|e: String| err(&e))?;
            let bytes = ctx.blobs.get(&d).map_err(|e| err(&e))?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        };
        let (triage, screen) = (&i.triage, &i.screen);
        let mut record = assemble(
            p,
            triage,
            screen,
            patch(&triage.gold_patch)?,
            patch(&triage.test_patch)?,
        )
        .map_err(|e| err(&e))?;
        if let Some(env) = i.env {
            record.executor = env.record.executor;
            record.image = env.record.image;
        }
        Ok(Made::record(record))
    }
}

fn assemble(
    p: &TaskParams,
    triage: &TriageRecord,
    screen: &ScreenRecord,
    gold: String,
    test: String,
) -> Result<TaskRecord, regex::Error> {
    let script = eval_script(&triage.base, &triage.test_files, &test, &p.test_command);
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
    };
    if !triage.eligible() {
        record.status = TaskStatus::Declined;
        record.certified = false;
        record
            .uncertified_because
            .push(format!("{}: {}", triage.decision, triage.detail));
        return Ok(record);
    }
    if let Some(skip) = &screen.skipped {
        record.status = TaskStatus::Declined;
        record.certified = false;
        record
            .uncertified_because
            .push(format!("not screened: {skip}"));
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
            record.uncertified_because.push(format!(
                "topic_split_rejected: each FAIL_TO_PASS test must fall in exactly one topic: {}",
                offending.join("; ")
            ));
            return Ok(record);
        }
        record.fail_to_pass = mine;
    }
    record.excluded.extend(screen.gold_failures.iter().cloned());
    record.excluded.extend(screen.regressions.iter().cloned());
    record.excluded.sort();
    for (name, (ok, why)) in &screen.controls {
        if !ok {
            record.certified = false;
            record.uncertified_because.push(format!("{name}: {why}"));
        }
    }
    // A broken environment read nothing: no derived reason is added to it.
    let broken = screen.controls.contains_key("environment_broken");
    if p.topic.is_some() && record.fail_to_pass.is_empty() && !broken {
        record.certified = false;
        record
            .uncertified_because
            .push("empty_patch_fails: this topic has no FAIL_TO_PASS test".into());
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

/// The eval script SWE-bench's harness runs in `/testbed`, in its shape:
/// the test files reset to base, the test patch applied, the test command
/// between the start and end markers, the test files reset again.
fn eval_script(base: &str, test_files: &[String], test_patch: &str, command: &str) -> String {
    let files = test_files
        .iter()
        .map(|f| format!("'{}'", f.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let reset = if files.is_empty() {
        String::new()
    } else {
        format!("git checkout {base} -- {files}\n")
    };
    let mut patch = test_patch.to_owned();
    if !patch.is_empty() && !patch.ends_with('\n') {
        patch.push('\n');
    }
    format!(
        "#!/bin/bash\nset -uxo pipefail\ncd /testbed\n{reset}git apply -v - <<'EOF_114329324912'\n{patch}EOF_114329324912\n\
         : '>>>>> Start Test Output'\n{command}\n: '>>>>> End Test Output'\n{reset}"
    )
}

/// Unix seconds as ISO 8601 UTC (`2024-05-01T12:00:00Z`), by the civil
/// calendar (Howard Hinnant's days-from-civil, inverted).
pub(crate) fn iso8601(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn iso8601_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601(1_714_564_800), "2024-05-01T12:00:00Z");
        assert_eq!(iso8601(-1), "1969-12-31T23:59:59Z");
    }
}
