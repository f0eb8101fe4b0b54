//! `step`: a generic command node. Its key holds the command, the names and
//! content digests of its input files and the names of its deps (their outputs
//! enter by digest); its output is the command's stdout. It is the smallest
//! real user of the engine and the substrate of the engine's own tests.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use assay_engine::{Job, JobCtx, JobFuture, NodeSpec, Output, encode_params};
use serde::Serialize;

use crate::pipeline::Pipeline;
use crate::run::error::{ErrorKind, NodeError, StageError};

const KIND_VERSION: u32 = 1;

#[derive(Serialize)]
struct StepParams {
    run: String,
    /// (path as written, blake3 of its content)
    inputs: Vec<(String, String)>,
    deps: Vec<String>,
}

struct StepJob {
    run: String,
    inputs: Vec<(String, PathBuf)>,
    deps: Vec<String>,
    timeout: Duration,
}

pub(crate) fn nodes(pipeline: &Pipeline, out: &mut Vec<NodeSpec>) -> Result<(), StageError> {
    for step in &pipeline.settings.steps {
        let mut inputs = Vec::new();
        let mut keyed = Vec::new();
        for input in &step.inputs {
            let path = pipeline.resolve(input.get_ref());
            let bytes = std::fs::read(&path).map_err(|e| {
                pipeline.error_at(
                    input.span(),
                    format!(
                        "step `{}` names an input that cannot be read: {e}",
                        step.name.get_ref()
                    ),
                    "this file",
                    format!(
                        "create {} or fix the path (paths are relative to the pipeline file)",
                        path.display()
                    ),
                )
            })?;
            keyed.push((
                input.get_ref().clone(),
                blake3::hash(&bytes).to_hex().to_string(),
            ));
            inputs.push((input.get_ref().clone(), path));
        }
        let deps = step.deps.clone();
        let params = StepParams {
            run: step.run.clone(),
            inputs: keyed,
            deps: deps.clone(),
        };
        out.push(NodeSpec {
            name: crate::model::names::step(step.name.get_ref()),
            kind: super::adapter::NodeKind::Step.as_str().into(),
            kind_version: KIND_VERSION,
            params: encode_params(&params),
            params_json: serde_json::to_string(&params).unwrap_or_default(),
            deps: deps.iter().map(|d| crate::model::names::step(d)).collect(),
            observation: false,
            job: Arc::new(StepJob {
                run: step.run.clone(),
                inputs,
                deps,
                timeout: step.timeout,
            }),
        });
    }
    Ok(())
}

impl Job for StepJob {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let run = self.run.clone();
        let inputs = self.inputs.clone();
        let deps = self.deps.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            step(&run, &inputs, &deps, timeout, &ctx)
                .await
                .map_err(NodeError::into_job)
        })
    }
}

/// Runs a step's command. The command is the maintainer's: its failure is
/// the node's input's ([`NodeError::input`]); the machine's failing under
/// it (a scratch directory, a process that cannot start) is not.
async fn step(
    run: &str,
    inputs: &[(String, PathBuf)],
    deps: &[String],
    timeout: Duration,
    ctx: &JobCtx,
) -> Result<Output, NodeError> {
    let scratch = tempfile::Builder::new()
        .prefix("step-")
        .tempdir_in(ctx.cache_dir.join("tmp"))
        .or_else(|_| tempfile::tempdir())
        .map_err(|e| {
            NodeError::caused(
                ErrorKind::Infrastructure,
                "cannot make a scratch directory",
                e,
            )
        })?;
    let dir = scratch.path();
    for (rel, src) in inputs {
        let dest = dir.join("inputs").join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(NodeError::infra)?;
        }
        std::fs::copy(src, &dest).map_err(|e| NodeError::input(format!("input {rel}: {e}")))?;
    }
    std::fs::create_dir_all(dir.join("deps")).map_err(NodeError::infra)?;
    for (name, bytes) in deps.iter().zip(&ctx.inputs) {
        std::fs::write(dir.join("deps").join(name), bytes.as_slice()).map_err(NodeError::infra)?;
    }
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".to_owned(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
    );
    env.insert("HOME".to_owned(), dir.display().to_string());
    env.insert("LANG".to_owned(), "C.UTF-8".to_owned());
    let spec = assay_exec::RunSpec {
        command: format!("exec 3>&1 1>.assay-stdout; {run}"),
        cwd: dir.to_owned(),
        env,
        timeout,
        stall_grace: None,
        log_path: dir.join(".assay-log"),
        log_cap: 1 << 20,
        limits: assay_exec::Limits::default(),
        // A step is the maintainer's own command, not task code.
        sandbox: None,
    };
    let outcome = assay_exec::run(&spec).await.map_err(NodeError::infra)?;
    if outcome.timed_out {
        return Err(NodeError::input(format!(
            "timed out after {}s",
            timeout.as_secs()
        )));
    }
    if outcome.exit_code != Some(0) {
        let log = std::fs::read_to_string(dir.join(".assay-log")).unwrap_or_default();
        let tail: String = log
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join(" | ");
        return Err(NodeError::input(format!(
            "the command exited with {}: {tail}",
            outcome
                .exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| format!("signal {}", outcome.signal.unwrap_or(0)))
        )));
    }
    let bytes = std::fs::read(dir.join(".assay-stdout")).map_err(|e| {
        NodeError::caused(ErrorKind::Infrastructure, "reading the step's stdout", e)
    })?;
    Ok(Output {
        bytes,
        attachments: Vec::new(),
    })
}
