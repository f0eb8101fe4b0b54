//! `task`: assembles the released unit from the triage record, the screening
//! record and the statement. Its node key is the released task's digest, so a
//! changed statement re-releases that task alone.
//!
//! On the Docker executor the environment is a third input: the task records
//! the image it was screened (certified) in, and a rebuilt image re-releases
//! it. Local tasks have no such input, so their keys are what they were.

use std::sync::Arc;

use assay_engine::{Digest, Job, JobCtx, JobError, JobFuture, Output};
use regex::Regex;
use serde::Serialize;

use super::records::{EnvRecord, ScreenRecord, TaskRecord, TriageRecord};

pub(super) const KIND_VERSION: u32 = 1;

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
}

pub(crate) struct TaskJob {
    pub(crate) params: TaskParams,
}

impl Job for TaskJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let p = self.params.clone();
        Box::pin(async move {
            let err =
                |e: &dyn std::fmt::Display| JobError::new(format!("task {}: {e}", p.instance_id));
            let triage: TriageRecord =
                serde_json::from_slice(&ctx.inputs[0]).map_err(|e| err(&e))?;
            let screen: ScreenRecord =
                serde_json::from_slice(&ctx.inputs[1]).map_err(|e| err(&e))?;
            let patch = |d: &str| -> Result<String, JobError> {
                if d.is_empty() {
                    return Ok(String::new());
                }
                let d: Digest = d.parse().map_err(|e: String| err(&e))?;
                let bytes = ctx.blobs.get(&d).map_err(|e| err(&e))?;
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            };
            let mut record = assemble(
                &p,
                &triage,
                &screen,
                patch(&triage.gold_patch)?,
                patch(&triage.test_patch)?,
            )
            .map_err(|e| err(&e))?;
            if let Some(env) = ctx.inputs.get(2) {
                let env: EnvRecord = serde_json::from_slice(env).map_err(|e| err(&e))?;
                record.executor = env.executor;
                record.image = env.image;
            }
            Ok(Output {
                bytes: serde_json::to_vec(&record).map_err(|e| err(&e))?,
                attachments: Vec::new(),
            })
        })
    }
}

fn assemble(
    p: &TaskParams,
    triage: &TriageRecord,
    screen: &ScreenRecord,
    gold: String,
    test: String,
) -> Result<TaskRecord, regex::Error> {
    let mut record = TaskRecord {
        instance_id: p.instance_id.clone(),
        repo: triage.repo.clone(),
        base_commit: triage.base.clone(),
        patch: gold,
        test_patch: test,
        problem_statement: String::new(),
        fail_to_pass: screen.fail_to_pass.clone(),
        pass_to_pass: screen.pass_to_pass.clone(),
        track: p.track.clone(),
        status: "released".into(),
        certified: true,
        uncertified_because: Vec::new(),
        flaky: screen.flaky.clone(),
        excluded: Vec::new(),
        env: p.env.clone(),
        topic: p.topic.clone(),
        executor: None,
        image: None,
    };
    if !triage.eligible() {
        record.status = "declined".into();
        record.certified = false;
        record
            .uncertified_because
            .push(format!("{}: {}", triage.decision, triage.detail));
        return Ok(record);
    }
    if let Some(skip) = &screen.skipped {
        record.status = "declined".into();
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
            record.status = "declined".into();
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
    if p.topic.is_some() && record.fail_to_pass.is_empty() {
        record.certified = false;
        record
            .uncertified_because
            .push("empty_patch_fails: this topic has no FAIL_TO_PASS test".into());
    }
    match &p.statement {
        None => {
            record.status = "awaiting_statement".into();
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

pub(crate) fn job(params: TaskParams) -> Arc<dyn Job> {
    Arc::new(TaskJob { params })
}
