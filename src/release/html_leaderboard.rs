//! The report's leaderboard: per agent/model, pass@1 with its interval and
//! pass@k beside it, what the infrastructure took from each score (the
//! attempts left out, as a share beside the score they would have counted
//! in), the score over the complete tasks alone when some task is not
//! complete, and the cost per attempt and per resolved task. Every number
//! is summary.json's, and its cell is named by its path there
//! (`markup::figure`), so `assay explain` answers for it.

use std::fmt::Write as _;

use super::index::Index;
use super::markup::{agent_path, esc, figure, label, rate_text, score_text};
use super::model::{Agent, LeftOut, Summary};
use super::pages::{At, session_link};

pub(super) fn section(h: &mut String, index: &Index<'_>, summary: &Summary) {
    h.push_str(
        "<h2>Leaderboard</h2>\n<p>Score: pass@1 over every certified task of \
         the tracks a pair was scored on, the mean of each task's share of resolved attempts (a \
         task it did not attempt counts 0), with a Wilson interval over the tasks; pass@k where \
         every attempted task has k attempts. Attempts whose run ended on an infrastructure fault \
         are left out and listed: <em>lost</em> is their share of the attempts made. Where a task \
         has no attempt that counts or lost one, <em>complete tasks only</em> is pass@1 over the \
         other tasks alone. Per attempt: resolved over the sessions graded. Cost: USD per attempt \
         and per resolved task, over the sessions that report tokens. Each figure's name in \
         summary.json shows when the pointer rests on it: <code>assay explain NAME</code> \
         lists what it was computed from.</p>\n\
         <table class=\"sortable\" id=\"leaderboard-table\">\n<thead><tr><th>#</th>\
         <th>agent / model</th><th>pass@1</th><th>pass@k</th><th>complete tasks only</th>\
         <th>lost</th><th>coverage</th><th>attempts</th><th>per attempt</th>\
         <th>cost / attempt</th><th>cost / resolved</th></tr></thead>\n<tbody>\n",
    );
    let ranked = summary.ranking.iter().filter_map(|k| summary.agents.get(k));
    for (i, a) in ranked.enumerate() {
        let b = &a.leaderboard;
        let at = |rest: &str| agent_path(a, rest);
        let pass_at_k: Vec<String> = b
            .pass_at_k
            .iter()
            .filter(|(k, _)| k.as_str() != "1")
            .filter_map(|(k, v)| Some(format!("@{k} {:.1}%", (*v)? * 100.0)))
            .collect();
        let complete = match (b.score_complete, b.complete) {
            (Some(s), Some(n)) => {
                format!("{:.1}% <span class=\"muted\">over {n}</span>", s * 100.0)
            }
            (None, Some(n)) => format!("– <span class=\"muted\">over {n}</span>"),
            _ => "–".to_owned(),
        };
        let (cost_attempt, cost_resolved) = match &a.cost_usd {
            None => ("–".to_owned(), "–".to_owned()),
            Some(c) => (usd(c.mean), usd(c.per_resolved)),
        };
        let _ = writeln!(
            h,
            "<tr>{}<td>{}</td>{}{}{}{}{}{}{}{}{}</tr>",
            figure(&format!("summary.ranking[{i}]"), &(i + 1).to_string()),
            label(a),
            figure(&at(".leaderboard.score"), &score_text(b)),
            figure(
                &at(".leaderboard.pass_at_k"),
                &if pass_at_k.is_empty() {
                    pass_at_k_missing(b.pass_at_k.len())
                } else {
                    esc(&pass_at_k.join(", "))
                }
            ),
            figure(
                &at(if b.score_complete.is_some() {
                    ".leaderboard.score_complete"
                } else {
                    ".leaderboard.complete"
                }),
                &complete
            ),
            figure(
                &at(".leaderboard.left_out"),
                &lost(b.left_out.len() as u64, b.attempts)
            ),
            figure(
                &at(".leaderboard.coverage"),
                &format!("{}/{}", b.attempted, b.tasks)
            ),
            figure(&at(".leaderboard.attempts"), &b.attempts.to_string()),
            figure(&at(".resolved_rate"), &per_attempt(a)),
            figure(&at(".cost_usd.mean"), &cost_attempt),
            figure(&at(".cost_usd.per_resolved"), &cost_resolved),
        );
    }
    h.push_str("</tbody></table>\n");
    left_out(h, index, summary);
}

/// Why pass@k beyond k = 1 is not shown: `ks` is how many k the pair has
/// (pass@k is estimated up to the fewest attempts an attempted task had).
fn pass_at_k_missing(ks: usize) -> String {
    if ks == 0 {
        "– <span class=\"muted\">no attempted task</span>".to_owned()
    } else {
        "– <span class=\"muted\">a task has 1 attempt</span>".to_owned()
    }
}

/// `2/7 (28.6%)` of the attempts made lost to the infrastructure, or `0`.
fn lost(lost: u64, counted: u64) -> String {
    match lost {
        0 => "0".to_owned(),
        n => format!(
            "{n}/{} ({:.1}%)",
            n + counted,
            n as f64 * 100.0 / (n + counted) as f64
        ),
    }
}

/// The per-attempt rate, and beside it the sessions the infrastructure
/// took from its denominator.
fn per_attempt(a: &Agent) -> String {
    let infra = a.faults.get("infrastructure").copied().unwrap_or(0);
    let rate = rate_text(&a.rate());
    if infra == 0 {
        rate
    } else {
        format!(
            "{rate} <span class=\"muted\">lost {}</span>",
            lost(infra, a.n)
        )
    }
}

fn usd(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |x| format!("${x:.4}"))
}

fn left_out(h: &mut String, index: &Index<'_>, summary: &Summary) {
    let left_out: Vec<(&str, &LeftOut)> = summary
        .ranking
        .iter()
        .filter_map(|k| Some((k.as_str(), summary.agents.get(k)?)))
        .flat_map(|(k, a)| a.leaderboard.left_out.iter().map(move |l| (k, l)))
        .collect();
    if left_out.is_empty() {
        return;
    }
    h.push_str("<p>Attempts left out of the leaderboard (infrastructure faults):</p>\n<ul>\n");
    for (key, l) in left_out {
        let _ = writeln!(
            h,
            "<li>{}: <code>{}</code> on {}: {}</li>",
            esc(key),
            session_link(index, &l.session, At::Report),
            esc(&l.instance_id),
            esc(&l.why)
        );
    }
    h.push_str("</ul>\n");
}
