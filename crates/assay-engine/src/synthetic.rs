//! A synthetic DAG for measuring the engine itself: `n` nodes with tiny
//! outputs, each depending on 0–3 earlier nodes, all sharing one trivial job.
//!
//! It serves `benches/engine.rs` and the hidden `assay bench-dag` command (which
//! `benches/noop-rss.sh` runs under `/usr/bin/time -v`), so both measure the
//! same graph. The shape is a pure function of `(n, seed)`.

use std::sync::Arc;

use crate::graph::NodeSpec;
use crate::job::{Job, JobCtx, JobFuture, Output};
use crate::key::encode_params;

/// Returns the first 8 bytes of its key: a few bytes that are a pure function of it.
struct Tiny;

impl Job for Tiny {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        Box::pin(async move {
            Ok(Output {
                bytes: ctx.key.0[..8].to_vec(),
                attachments: Vec::new(),
            })
        })
    }

    fn trivial(&self) -> bool {
        true
    }
}

/// The nodes of the synthetic DAG, in an order where every dependency comes first.
pub fn nodes(n: usize, seed: u64) -> Vec<NodeSpec> {
    let job: Arc<dyn Job> = Arc::new(Tiny);
    let mut state = seed.max(1);
    let mut next = move || {
        // xorshift64*: reproducible without a dependency.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    (0..n)
        .map(|i| {
            let mut deps: Vec<String> = Vec::new();
            if i > 0 {
                for _ in 0..next() % 4 {
                    let d = format!("n{}", next() % i as u64);
                    if !deps.contains(&d) {
                        deps.push(d);
                    }
                }
            }
            NodeSpec {
                name: format!("n{i}"),
                kind: "synthetic".into(),
                kind_version: 1,
                params: encode_params(&(i as u64)),
                params_json: i.to_string(),
                deps,
                observation: false,
                job: job.clone(),
            }
        })
        .collect()
}
