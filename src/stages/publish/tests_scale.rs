//! The release's files at scale (`benches/report-scale.sh` runs these,
//! ignored by default): a synthetic input of T tasks × 10 agents × 3
//! attempts (one scored arm each, every session with a short transcript),
//! published at T/4 and at T; prints the time of each, their ratio (4 for
//! a cost that grows linearly), the number of files, the largest and the
//! total size; with `ASSAY_SCALE_DIR`, writes the larger release's files
//! there. No timed assertion: the figures are for the bench's note.

use std::time::Instant;

use super::tests::{grade, task};
use super::*;
use crate::model::records::{RunFacts, SessionRecord};

const AGENTS: usize = 10;
const ATTEMPTS: usize = 3;

pub(super) fn input(tasks: usize) -> PublishInput {
    let transcript = [
        serde_json::json!({"type": "assistant", "message": {"content": [
            {"type": "text", "text": "Looking at the code."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat x.py"}}
        ], "usage": {"input_tokens": 100, "output_tokens": 20}}}),
        serde_json::json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "def f():\n    return 1\n"}
        ]}}),
        serde_json::json!({"type": "result", "subtype": "success", "is_error": false, "num_turns": 1}),
    ]
    .map(|v| v.to_string())
    .join("\n");
    let mut input = PublishInput::default();
    input
        .transcripts
        .insert("tr".to_owned(), transcript.into_bytes());
    input.patches.insert(
        "patch".to_owned(),
        b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n".to_vec(),
    );
    for t in 0..tasks {
        let id = format!("repo-{t}");
        input.tasks.push(task(&id, "basic", true));
        for a in 0..AGENTS {
            for k in 0..ATTEMPTS {
                let session = format!("agent-{a}/{id}/{k}");
                let verdict = if (t + a + k) % 3 == 0 {
                    "resolved"
                } else {
                    "unresolved"
                };
                let fault = if verdict == "resolved" {
                    "none"
                } else {
                    "agent"
                };
                let mut g = grade(
                    &session,
                    &format!("agent-{a}"),
                    "m",
                    "exclude",
                    verdict,
                    fault,
                );
                g.0.instance_id = id.clone();
                g.0.task_digest = format!("task-{id}-basic");
                input.grades.push(g);
                input.sessions.push(SessionRecord {
                    id: session,
                    task: id.clone(),
                    track: "basic".to_owned(),
                    agent: format!("agent-{a}"),
                    model: "m".to_owned(),
                    patch: "patch".to_owned(),
                    facts: RunFacts {
                        turns: Some(3),
                        tokens: [("input".to_owned(), 1000), ("output".to_owned(), 200)].into(),
                        ..RunFacts::default()
                    },
                    transcript: Some("tr".to_owned()),
                });
            }
        }
    }
    input
}

fn measure(tasks: usize, keep: bool) -> f64 {
    let input = input(tasks);
    let start = Instant::now();
    let files = publish(&input);
    let secs = start.elapsed().as_secs_f64();
    let (largest, size) = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.len()))
        .max_by_key(|(_, n)| *n)
        .unwrap_or_default();
    let total: usize = files.values().map(Vec::len).sum();
    println!(
        "{tasks} tasks x {AGENTS} agents x {ATTEMPTS} attempts = {} sessions: publish {secs:.2} s, \
         {} files, {:.1} MB in all, largest {largest} {:.2} MB",
        tasks * AGENTS * ATTEMPTS,
        files.len(),
        total as f64 / 1e6,
        size as f64 / 1e6
    );
    if let Some(dir) = std::env::var("ASSAY_SCALE_DIR").ok().filter(|_| keep) {
        for (name, bytes) in &files {
            let path = std::path::Path::new(&dir).join(name);
            std::fs::create_dir_all(path.parent().unwrap_or(std::path::Path::new(&dir)))
                .unwrap_or_default();
            std::fs::write(path, bytes).unwrap_or_default();
        }
    }
    secs
}

#[test]
#[ignore = "a bench: benches/report-scale.sh"]
fn publish_at_scale() {
    let tasks: usize = std::env::var("ASSAY_SCALE_TASKS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(1000);
    let quarter = measure(tasks / 4, false);
    let full = measure(tasks, true);
    println!(
        "ratio full / quarter: {:.2} (4.00 is linear)",
        full / quarter
    );
}
