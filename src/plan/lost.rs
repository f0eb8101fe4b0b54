//! What a build lost to the infrastructure, for its closing lines: attempts
//! whose endpoint failed them (on the proxy's word, after their retries)
//! and test runs the executor lost. Such nodes *succeed* for the engine
//! (their records say what happened), so the engine's `0 failed` alone
//! hides them; none is ever a cache hit, so the next build tries each again.

use std::collections::BTreeMap;
use std::fmt;

use assay_engine::{BuildOutcome, Graph, Store};

use crate::model::kind::NodeKind;
use crate::model::records::RunRecord;
use crate::nodes::attempt::AttemptRecord;

/// The attempts and runs a build lost to the infrastructure.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Lost {
    /// Endpoint (the agent's `base_url`) -> the reason each attempt gave,
    /// counted.
    pub(crate) attempts: BTreeMap<String, BTreeMap<String, usize>>,
    /// The executor's reasons for the runs it lost, counted.
    pub(crate) runs: BTreeMap<String, usize>,
}

impl Lost {
    /// Reads every attempt and run node's output of the build.
    pub(crate) fn of_build(store: &Store, outcome: &BuildOutcome, graph: &Graph) -> Lost {
        let mut lost = Lost::default();
        for id in 0..graph.len() {
            let spec = graph.node(id);
            let is = |k: NodeKind| spec.kind == k.as_str();
            if !is(NodeKind::Attempt) && !is(NodeKind::Run) {
                continue;
            }
            let Some(bytes) = outcome.output(store, id).ok().flatten() else {
                continue;
            };
            if is(NodeKind::Attempt) {
                let Ok(r) = serde_json::from_slice::<AttemptRecord>(&bytes) else {
                    continue;
                };
                let Some(why) = r.infrastructure else {
                    continue;
                };
                let params: serde_json::Value =
                    serde_json::from_str(&spec.params_json).unwrap_or_default();
                lost.attempt(params["base_url"].as_str(), why);
            } else if let Ok(RunRecord {
                lost: Some(why), ..
            }) = serde_json::from_slice::<RunRecord>(&bytes)
            {
                *lost.runs.entry(why).or_default() += 1;
            }
        }
        lost
    }

    fn attempt(&mut self, endpoint: Option<&str>, why: String) {
        let endpoint = endpoint
            .unwrap_or("the agent's default endpoint")
            .to_owned();
        *self
            .attempts
            .entry(endpoint)
            .or_default()
            .entry(why)
            .or_default() += 1;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.attempts.is_empty() && self.runs.is_empty()
    }
}

/// `lost to the infrastructure: …`, one line per endpoint and one for the
/// executor, each reason with its count (the first few).
impl fmt::Display for Lost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let attempts: usize = self.attempts.values().flat_map(|m| m.values()).sum();
        let runs: usize = self.runs.values().sum();
        let mut what = Vec::new();
        if attempts > 0 {
            what.push(format!("{attempts} attempt{}", plural(attempts)));
        }
        if runs > 0 {
            what.push(format!("{runs} run{}", plural(runs)));
        }
        write!(
            f,
            "lost to the infrastructure: {} (not graded as the agent's; the next build tries {} again)",
            what.join(" and "),
            if attempts + runs == 1 { "it" } else { "them" }
        )?;
        for (endpoint, reasons) in &self.attempts {
            let n: usize = reasons.values().sum();
            write!(
                f,
                "\n  endpoint {endpoint}: {n} attempt{}: {}",
                plural(n),
                reasons_text(reasons)
            )?;
        }
        if runs > 0 {
            write!(
                f,
                "\n  executor: {runs} run{}: {}",
                plural(runs),
                reasons_text(&self.runs)
            )?;
        }
        Ok(())
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Each reason with its count, the most frequent first, the first three.
fn reasons_text(reasons: &BTreeMap<String, usize>) -> String {
    const SHOWN: usize = 3;
    let mut by: Vec<(&String, &usize)> = reasons.iter().collect();
    by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut parts: Vec<String> = by
        .iter()
        .take(SHOWN)
        .map(|(why, n)| format!("{why} (×{n})"))
        .collect();
    if by.len() > SHOWN {
        parts.push(format!("and {} other reasons", by.len() - SHOWN));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_attempts_name_their_endpoint_count_and_retry() {
        let mut lost = Lost::default();
        assert!(lost.is_empty());
        for _ in 0..5 {
            lost.attempt(
                Some("http://127.0.0.1:9/v1"),
                "the endpoint failed the agent's last request (status 500)".into(),
            );
        }
        lost.runs.insert("slurm step cancelled".into(), 1);
        assert_eq!(
            lost.to_string(),
            "lost to the infrastructure: 5 attempts and 1 run (not graded as the agent's; \
             the next build tries them again)\n  \
             endpoint http://127.0.0.1:9/v1: 5 attempts: the endpoint failed the agent's last \
             request (status 500) (×5)\n  \
             executor: 1 run: slurm step cancelled (×1)"
        );
    }
}
