//! `results.csv`: one row per grade (session × arm), RFC 4180, rows sorted by
//! (agent, model, session, arm). Lists are joined with `;`; a missing value is
//! an empty field.

use super::{Index, round6};

const HEADER: [&str; 38] = [
    "session",
    "instance_id",
    "track",
    "agent",
    "model",
    "arm",
    "policy",
    "verdict",
    "fault",
    "failing",
    "excluded_paths",
    "exit_code",
    "base_check",
    "new_check",
    "base_exit",
    "new_exit",
    "reruns",
    "redactions",
    "grade_digest",
    "task_digest",
    "lines_added",
    "lines_removed",
    "files_touched",
    "size_vs_gold",
    "suppressions_added",
    "comment_lines_added",
    "empty_patch",
    "turns",
    "tokens_total",
    "reset_paths",
    "tamper",
    "sandbox",
    "ended",
    "is_error",
    "permission_denials",
    "duration_ms",
    "cost_usd",
    "reported_cost_usd",
];

pub(super) fn results(index: &Index<'_>) -> String {
    let mut out = String::new();
    let judged = super::judged::Columns::new(index);
    let judge_header = judged.header().into_iter();
    push_row(
        &mut out,
        HEADER.iter().map(|h| (*h).to_owned()).chain(judge_header),
    );
    for graded in &index.grades {
        let (g, key) = (&graded.0, &graded.1);
        let m = index.metrics.get(g.session.as_str());
        let facts = index.sessions.get(g.session.as_str()).map(|s| &s.facts);
        let num = |f: &dyn Fn(&super::MetricsRecord) -> u64| {
            m.map(|m| f(m).to_string()).unwrap_or_default()
        };
        let row = [
            g.session.clone(),
            g.instance_id.clone(),
            g.track.clone(),
            g.agent.clone(),
            g.model.clone(),
            g.arm.to_string(),
            g.policy.to_string(),
            g.verdict.to_string(),
            g.fault.to_string(),
            g.failing.join(";"),
            g.excluded_paths.join(";"),
            g.exit_code.map(|c| c.to_string()).unwrap_or_default(),
            g.base_check.clone(),
            g.new_check.clone(),
            g.base_exit.map(|c| c.to_string()).unwrap_or_default(),
            g.new_exit.map(|c| c.to_string()).unwrap_or_default(),
            g.reruns.to_string(),
            g.redactions.to_string(),
            key.clone(),
            g.task_digest.clone(),
            num(&|m| m.lines_added),
            num(&|m| m.lines_removed),
            num(&|m| m.files_touched),
            m.and_then(|m| m.size_vs_gold)
                .map(|x| round6(x).to_string())
                .unwrap_or_default(),
            num(&|m| m.suppressions_added),
            num(&|m| m.comment_lines_added),
            m.map(|m| m.empty_patch.to_string()).unwrap_or_default(),
            facts
                .and_then(|f| f.turns)
                .map(|t| t.to_string())
                .unwrap_or_default(),
            facts
                .filter(|f| !f.tokens.is_empty())
                .map(|f| f.tokens.values().sum::<u64>().to_string())
                .unwrap_or_default(),
            g.reset_paths.join(";"),
            g.tamper.join(";"),
            g.sandbox.clone(),
            facts.and_then(|f| f.ended.clone()).unwrap_or_default(),
            facts
                .and_then(|f| f.is_error)
                .map(|b| b.to_string())
                .unwrap_or_default(),
            facts
                .and_then(|f| f.permission_denials)
                .map(|n| n.to_string())
                .unwrap_or_default(),
            facts
                .and_then(|f| f.duration_ms)
                .map(|n| n.to_string())
                .unwrap_or_default(),
            cost(index, g, facts),
            facts
                .and_then(|f| f.reported_cost_usd)
                .map(|c| round6(c).to_string())
                .unwrap_or_default(),
        ];
        push_row(&mut out, row.into_iter().chain(judged.cells(graded)));
    }
    out
}

/// The session's cost by `[prices]` (empty without tokens, or when no price
/// applies to any of them).
fn cost(
    index: &Index<'_>,
    g: &super::GradeRecord,
    facts: Option<&super::super::records::RunFacts>,
) -> String {
    let Some(f) = facts.filter(|f| !f.tokens.is_empty() || !f.by_model.is_empty()) else {
        return String::new();
    };
    if f.by_model.is_empty() && !index.prices.contains_key(&g.model) {
        return String::new();
    }
    let mut unpriced = std::collections::BTreeSet::new();
    round6(super::session_cost(
        index.prices,
        &g.model,
        f,
        &mut unpriced,
    ))
    .to_string()
}

/// Rows end with CRLF, as RFC 4180 says.
fn push_row(out: &mut String, fields: impl Iterator<Item = String>) {
    for (i, field) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&quote(&field));
    }
    out.push_str("\r\n");
}

/// Quotes a field holding a comma, a quote, CR or LF; doubles its quotes.
pub(super) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}
