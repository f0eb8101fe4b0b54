//! Text for HTML: escaping (every label, patch and log is user-written),
//! the fault colour classes the matrix and the session sections share, and
//! how the report writes a label, a count and a rate with its interval,
//! and the name a figure carries: its path in summary.json (or funnel.json),
//! the one `assay explain` takes, as the cell's `title`.

use std::collections::BTreeMap;

use super::model::{Agent, Leaderboard, Rate};
use super::paths::segment;
use super::stats::agent_key;
use crate::model::records::Fault;

/// Escapes text for HTML content and attribute values alike.
pub(super) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(super) fn fault_class(fault: Fault) -> &'static str {
    match fault {
        Fault::None => "f-none",
        Fault::Agent => "f-agent",
        Fault::FlakyTest => "f-flaky_test",
        Fault::Harness => "f-harness",
        Fault::Ambiguous => "f-ambiguous",
        Fault::Infrastructure => "f-infrastructure",
    }
}

/// A count of a map, or `–` when it has none by that key.
pub(super) fn count(map: &BTreeMap<String, u64>, key: &str) -> String {
    map.get(key).map_or_else(|| "–".to_owned(), u64::to_string)
}

pub(super) fn label_of(agent: &str, model: &str) -> String {
    format!("{} / {}", esc(agent), esc(model))
}

pub(super) fn label(a: &Agent) -> String {
    label_of(&a.agent, &a.model)
}

/// `42.9% [15.8, 75.0]`, or `–` without a rate.
pub(super) fn rate_text(r: &Rate) -> String {
    interval_text(r.resolved_rate, r.resolved_rate_lo, r.resolved_rate_hi)
}

/// A rate with its interval as `42.9% [15.8, 75.0]`, or `–`.
fn interval_text(p: Option<f64>, lo: Option<f64>, hi: Option<f64>) -> String {
    match (p, lo, hi) {
        (Some(p), Some(lo), Some(hi)) => {
            format!("{:.1}% [{:.1}, {:.1}]", p * 100.0, lo * 100.0, hi * 100.0)
        }
        _ => "–".to_owned(),
    }
}

pub(super) fn score_text(b: &Leaderboard) -> String {
    interval_text(b.score, b.score_lo, b.score_hi)
}

/// A table cell holding a figure, named by its path (`summary.…` or
/// `funnel.…`) in a `title`: a reader hovers for the name `assay explain`
/// answers to, and no figure on the page goes without one. A cell with no
/// figure in it (`–`) names nothing: its path may not exist.
pub(super) fn figure(path: &str, text: &str) -> String {
    if text.bytes().any(|b| b.is_ascii_digit()) {
        format!("<td class=\"n\" title=\"{}\">{text}</td>", esc(path))
    } else {
        format!("<td class=\"n\">{text}</td>")
    }
}

/// A figure inside running text, named as [`figure`] names a cell: a
/// `span` whose `title` is the figure's path.
pub(super) fn named(path: &str, text: &str) -> String {
    if text.bytes().any(|b| b.is_ascii_digit()) {
        format!("<span class=\"n\" title=\"{}\">{text}</span>", esc(path))
    } else {
        text.to_owned()
    }
}

/// The path of a number of an agent/model's object in summary.json;
/// `rest` is the rest of the path, written as [`segment`] writes it.
pub(super) fn agent_path(a: &Agent, rest: &str) -> String {
    format!(
        "summary.agents{}{rest}",
        segment(&agent_key(&a.agent, &a.model))
    )
}
