//! `report.html`: one self-contained page (inline CSS and SVG, no script, no
//! link to anything outside the file). The numbers come from summary.json, so
//! the page never disagrees with it; its header adds the provenance and the
//! funnel (every count with its unit), and each matrix cell links to its
//! session's section (`detail.rs`). Every piece of text is escaped: agent,
//! model and session labels come from users.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::{Graded, Index};
use crate::stages::records::{Fault, TaskStatus, Verdict};

const CSS: &str = "
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.2em .5em;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f4f4f4}
.muted{color:#777}
svg text{font:12px system-ui,sans-serif;fill:#222}
.axis{fill:#f4f4f4}.grid{stroke:#ccc}.bar{fill:#4c78a8}.whisker{stroke:#222;stroke-width:1.5}
.v{display:inline-block;margin:1px;padding:0 .3em;border-radius:3px;font-size:12px}
.f-none{background:#c7e9c0}.f-agent{background:#fcbba1}.f-flaky_test{background:#fee391}
.f-harness{background:#d9d9d9}.f-infrastructure{background:#c6dbef}.f-ambiguous{background:#dadaeb}.f-other{background:#fff;border:1px solid #999}
a.v{color:inherit;text-decoration:none}a.v:hover{outline:1px solid #222}
code{font-size:12px}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.5em;overflow-x:auto;max-height:40em;font-size:12px;white-space:pre}
section.session{border-top:1px solid #ddd;padding:.3em 0 .8em}
section.session:target{background:#fffbe6;outline:2px solid #e6c200;outline-offset:4px}
h3{font-size:1.05em;margin:.6em 0 .2em;font-family:ui-monospace,monospace}
table.about th{background:none;font-weight:600}
";

const LABEL_W: f64 = 260.0;
const BAR_W: f64 = 400.0;
const ROW_H: f64 = 26.0;

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

pub(super) fn report(index: &Index<'_>, summary: &Value) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<title>assay release report</title>\n<style>");
    h.push_str(CSS);
    h.push_str("</style>\n</head>\n<body>\n<h1>assay release report</h1>\n");
    about(&mut h, index, summary);
    if summary["graded_unsandboxed"] == Value::Bool(true) {
        h.push_str("<p class=\"warn\"><strong>Graded unsandboxed</strong> (<code>[env] sandbox = \"none\"</code>): agent code ran with the grader's rights on the host; these verdicts are not tamper-resistant.</p>\n");
    }
    if let Some(list) = summary["not_forgery_checked"].as_array() {
        h.push_str("<p class=\"warn\"><strong>Not forgery-checked</strong>: for these grades a report faked by the graded code may not be caught, as their canary tests were missing or predictable (docs/security.md):</p>\n<ul>\n");
        for item in list {
            h.push_str(&format!(
                "<li>{} grades: {}</li>\n",
                item["grades"],
                esc(item["why"].as_str().unwrap_or_default())
            ));
        }
        h.push_str("</ul>\n");
    }
    let agents: Vec<&Value> = summary["agents"]
        .as_object()
        .map(|m| m.values().collect())
        .unwrap_or_default();
    h.push_str(
        "<p>Scored arm: <code>exclude</code> (<code>keep</code> where a session has no other). \
         Intervals are Wilson 95%. <code>resolved_after_rerun</code> is counted apart and is not \
         in the resolved rate.</p>\n",
    );

    leaderboard(&mut h, summary);
    h.push_str("<h2>Resolved rate</h2>\n");
    bars(&mut h, &agents);

    h.push_str("<h2>Verdicts</h2>\n<table>\n<tr><th>agent / model</th><th>n</th>");
    for v in Verdict::GRADED {
        let _ = write!(h, "<th>{}</th>", esc(v.as_str()));
    }
    h.push_str("<th>empty patch</th></tr>\n");
    for a in &agents {
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td>",
            label(a),
            int(&a["n"])
        );
        for v in Verdict::GRADED {
            let _ = write!(
                h,
                "<td class=\"n\">{}</td>",
                int(&a["verdicts"][v.as_str()])
            );
        }
        let _ = writeln!(h, "<td class=\"n\">{}</td></tr>", int(&a["empty_patch"]));
    }
    h.push_str("</table>\n");

    h.push_str("<h2>Tracks</h2>\n<table>\n<tr><th>agent / model</th>");
    let tracks: Vec<String> = agents
        .first()
        .and_then(|a| a["by_track"].as_object())
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for t in &tracks {
        let _ = write!(h, "<th>{}</th>", esc(t));
    }
    h.push_str("</tr>\n");
    for a in &agents {
        let _ = write!(h, "<tr><td>{}</td>", label(a));
        for t in &tracks {
            let r = &a["by_track"][t];
            let _ = write!(
                h,
                "<td class=\"n\">{} <span class=\"muted\">n={}</span></td>",
                rate_text(r),
                int(&r["n"])
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");

    matrix(&mut h, index);
    apart(&mut h, index, summary);
    suspects(&mut h, summary);
    tamper(&mut h, summary);
    not_graded(&mut h, summary);
    usage(&mut h, &agents);
    run_facts(&mut h, &agents);
    super::judged::html(&mut h, summary);
    super::detail::sections(&mut h, index);

    h.push_str("</body>\n</html>\n");
    h
}

/// What the release is (provenance) and how it was reached (the funnel),
/// every count with its unit: the funnel counts PRs until tasks are made.
fn about(h: &mut String, index: &Index<'_>, summary: &Value) {
    let about = index.about;
    h.push_str("<table class=\"about\">\n");
    let row = |h: &mut String, what: &str, value: String| {
        let _ = writeln!(h, "<tr><th>{what}</th><td>{value}</td></tr>");
    };
    if !about.release_node.is_empty() {
        row(
            h,
            "release node",
            format!("<code>{}</code>", esc(&about.release_node)),
        );
    }
    row(
        h,
        "release digest",
        "in <code>manifest.json</code> (<code>release_digest</code>): it covers this page, \
         so the page cannot hold it; <code>assay verify</code> checks both"
            .to_owned(),
    );
    if let Some(p) = &about.provenance {
        row(
            h,
            "assay",
            format!(
                "{}, commit <code>{}</code>",
                esc(&p.assay_version),
                esc(&p.assay_commit)
            ),
        );
        row(
            h,
            "pipeline.toml",
            format!("<code>{}</code> (blake3)", esc(&p.pipeline)),
        );
    }
    // The page reads no clock (it is rebuilt byte for byte from its inputs):
    // its date is the data's, the newest merge among the released tasks.
    let newest = index.tasks.iter().map(|(t, _)| t.created_at.as_str()).max();
    row(
        h,
        "date",
        match newest.filter(|d| !d.is_empty()) {
            Some(d) => format!("{}, the newest merge of a released task", esc(d)),
            None => "–".to_owned(),
        },
    );
    h.push_str("</table>\n");

    let f = &about.funnel;
    let reasons = |m: &BTreeMap<String, usize>| {
        let parts: Vec<String> = m.iter().map(|(k, n)| format!("{} {n}", esc(k))).collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"muted\">({})</span>", parts.join(", "))
        }
    };
    let tasks = &summary["tasks"];
    let sessions: std::collections::BTreeSet<&str> =
        index.grades.iter().map(|g| g.0.session.as_str()).collect();
    h.push_str("<h2>Funnel</h2>\n<table>\n");
    let _ = writeln!(
        h,
        "<tr><th>PRs merged (candidates)</th><td class=\"n\">{}</td><td></td></tr>\n\
         <tr><th>PRs eligible</th><td class=\"n\">{}</td><td>declined{}</td></tr>\n\
         <tr><th>PRs screened</th><td class=\"n\">{}</td><td></td></tr>\n\
         <tr><th>PRs certified</th><td class=\"n\">{}</td><td>with at least one certified task</td></tr>\n\
         <tr><th>tasks released</th><td class=\"n\">{}</td><td>{} certified, {} uncertified{}; \
         {} awaiting a statement (not released)</td></tr>\n\
         <tr><th>sessions graded</th><td class=\"n\">{}</td><td>{} scored; {} not graded</td></tr>",
        f.candidates,
        f.eligible,
        reasons(&f.declined),
        f.screened,
        f.certified,
        int(&tasks["released"]),
        int(&tasks["certified"]),
        int(&tasks["uncertified"]),
        reasons(&f.uncertified_because),
        f.awaiting_statement,
        sessions.len(),
        index.groups.values().map(Vec::len).sum::<usize>(),
        int(&summary["not_graded"]["total"]),
    );
    h.push_str("</table>\n");
}

fn int(v: &Value) -> String {
    v.as_u64()
        .map(|n| n.to_string())
        .unwrap_or_else(|| "–".to_owned())
}

fn text(v: &Value) -> String {
    esc(v.as_str().unwrap_or_default())
}

fn label(agent: &Value) -> String {
    format!("{} / {}", text(&agent["agent"]), text(&agent["model"]))
}

/// `42.9% [15.8, 75.0]`, or `–` without a rate.
fn rate_text(r: &Value) -> String {
    interval_text(r, "resolved_rate")
}

/// `<key>` with its `<key>_lo` and `<key>_hi` as `42.9% [15.8, 75.0]`, or `–`.
fn interval_text(r: &Value, key: &str) -> String {
    match (
        r[key].as_f64(),
        r[format!("{key}_lo").as_str()].as_f64(),
        r[format!("{key}_hi").as_str()].as_f64(),
    ) {
        (Some(p), Some(lo), Some(hi)) => {
            format!("{:.1}% [{:.1}, {:.1}]", p * 100.0, lo * 100.0, hi * 100.0)
        }
        _ => "–".to_owned(),
    }
}

/// How the agents' runs ended, from their session files and transcripts.
fn run_facts(h: &mut String, agents: &[&Value]) {
    h.push_str(
        "<h2>How the runs ended</h2>\n<table>\n<tr><th>agent / model</th><th>ended</th>\
         <th>is_error</th><th>permission denials</th><th>mean duration (s)</th></tr>\n",
    );
    for a in agents {
        let r = &a["run"];
        let ended: Vec<String> = r["ended"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{} {}", esc(k), int(v)))
                    .collect()
            })
            .unwrap_or_default();
        let seconds = r["duration_ms"]["mean"]
            .as_f64()
            .map_or_else(|| "–".to_owned(), |ms| format!("{:.1}", ms / 1000.0));
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{} of {}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{seconds}</td></tr>",
            label(a),
            ended.join("; "),
            int(&r["is_error"]),
            int(&r["is_error_sessions"]),
            int(&r["permission_denials"]["total"]),
        );
    }
    h.push_str("</table>\n");
}

/// The ranking: score over the whole certified task set of each pair's
/// tracks (unattempted tasks count as unresolved), with its coverage, beside
/// the per-attempt rate; both with Wilson intervals.
fn leaderboard(h: &mut String, summary: &Value) {
    h.push_str(
        "<h2>Leaderboard</h2>\n<p>Score: tasks resolved over every certified task of the \
         tracks a pair was scored on (a task it did not attempt counts as unresolved; a task \
         attempted twice counts by its first session). Per attempt: resolved over the \
         sessions graded.</p>\n<table>\n<tr><th>#</th><th>agent / model</th><th>score</th>\
         <th>coverage</th><th>per attempt</th></tr>\n",
    );
    let ranking = summary["ranking"].as_array().cloned().unwrap_or_default();
    for (i, key) in ranking.iter().enumerate() {
        let a = &summary["agents"][key.as_str().unwrap_or_default()];
        let b = &a["leaderboard"];
        let score = interval_text(b, "score");
        let _ = writeln!(
            h,
            "<tr><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{score}</td>\
             <td class=\"n\">{}/{}</td><td class=\"n\">{}</td></tr>",
            i + 1,
            label(a),
            int(&b["attempted"]),
            int(&b["tasks"]),
            rate_text(a),
        );
    }
    h.push_str("</table>\n");
}

/// Horizontal bars, width ∝ rate, with the Wilson interval as a whisker.
fn bars(h: &mut String, agents: &[&Value]) {
    if agents.is_empty() {
        h.push_str("<p class=\"muted\">No graded sessions.</p>\n");
        return;
    }
    let height = ROW_H * agents.len() as f64 + 24.0;
    let width = LABEL_W + BAR_W + 200.0;
    let _ = writeln!(
        h,
        "<svg width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" \
         aria-label=\"resolved rate per agent and model\">"
    );
    let plot_h = ROW_H * agents.len() as f64;
    let _ = writeln!(
        h,
        "<rect class=\"axis\" x=\"{LABEL_W:.1}\" y=\"0\" width=\"{BAR_W:.1}\" height=\"{plot_h:.1}\"/>"
    );
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let x = LABEL_W + tick * BAR_W;
        let _ = writeln!(
            h,
            "<line class=\"grid\" x1=\"{x:.1}\" y1=\"0\" x2=\"{x:.1}\" y2=\"{plot_h:.1}\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{:.0}%</text>",
            plot_h + 16.0,
            tick * 100.0
        );
    }
    for (i, a) in agents.iter().enumerate() {
        let y = i as f64 * ROW_H + 5.0;
        let mid = y + 8.0;
        let _ = write!(
            h,
            "<g><title>{}</title><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            label(a),
            LABEL_W - 8.0,
            mid + 4.0,
            esc(&short(&format!(
                "{} / {}",
                a["agent"].as_str().unwrap_or_default(),
                a["model"].as_str().unwrap_or_default()
            )))
        );
        match (
            a["resolved_rate"].as_f64(),
            a["resolved_rate_lo"].as_f64(),
            a["resolved_rate_hi"].as_f64(),
        ) {
            (Some(p), Some(lo), Some(hi)) => {
                let (xp, xlo, xhi) = (
                    LABEL_W + p * BAR_W,
                    LABEL_W + lo * BAR_W,
                    LABEL_W + hi * BAR_W,
                );
                let _ = write!(
                    h,
                    "<rect class=\"bar\" x=\"{LABEL_W:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"16\"/>\
                     <line class=\"whisker\" x1=\"{xlo:.1}\" y1=\"{mid:.1}\" x2=\"{xhi:.1}\" y2=\"{mid:.1}\"/>\
                     <line class=\"whisker\" x1=\"{xlo:.1}\" y1=\"{:.1}\" x2=\"{xlo:.1}\" y2=\"{:.1}\"/>\
                     <line class=\"whisker\" x1=\"{xhi:.1}\" y1=\"{:.1}\" x2=\"{xhi:.1}\" y2=\"{:.1}\"/>",
                    xp - LABEL_W,
                    mid - 5.0,
                    mid + 5.0,
                    mid - 5.0,
                    mid + 5.0,
                );
                let _ = write!(
                    h,
                    "<text x=\"{:.1}\" y=\"{:.1}\">{} n={}</text>",
                    LABEL_W + BAR_W + 8.0,
                    mid + 4.0,
                    rate_text(a),
                    int(&a["n"])
                );
            }
            _ => {
                let _ = write!(
                    h,
                    "<text x=\"{:.1}\" y=\"{:.1}\">n=0</text>",
                    LABEL_W + 8.0,
                    mid + 4.0
                );
            }
        }
        h.push_str("</g>\n");
    }
    h.push_str("</svg>\n");
}

/// A label cut to fit left of the bars (the full one is in the row's `<title>`).
fn short(label: &str) -> String {
    const MAX: usize = 38;
    if label.chars().count() <= MAX {
        label.to_owned()
    } else {
        let cut: String = label.chars().take(MAX - 1).collect();
        format!("{cut}…")
    }
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

/// Task × agent/model: the scored verdict of every session, coloured by fault.
fn matrix(h: &mut String, index: &Index<'_>) {
    h.push_str(
        "<h2>Tasks × agents</h2>\n<p>The scored verdict of each session; \
         a cell links to the session's detail below.</p>\n<p>",
    );
    for f in Fault::ALL {
        let _ = write!(
            h,
            "<span class=\"v {}\">fault: {}</span> ",
            fault_class(*f),
            esc(f.as_str())
        );
    }
    h.push_str("</p>\n");
    let pairs: Vec<&(String, String)> = index.groups.keys().collect();
    let mut rows: BTreeMap<(&str, &str), BTreeMap<usize, Vec<Graded<'_>>>> = BTreeMap::new();
    for (t, _) in &index.tasks {
        if t.status == TaskStatus::Released && t.certified {
            rows.entry((&t.instance_id, &t.track)).or_default();
        }
    }
    for (col, pair) in pairs.iter().enumerate() {
        for g in &index.groups[*pair] {
            rows.entry((&g.0.instance_id, &g.0.track))
                .or_default()
                .entry(col)
                .or_default()
                .push(g);
        }
    }
    if rows.is_empty() {
        h.push_str("<p class=\"muted\">No tasks.</p>\n");
        return;
    }
    h.push_str("<table>\n<tr><th>task</th><th>track</th>");
    for (agent, model) in &pairs {
        let _ = write!(h, "<th>{} / {}</th>", esc(agent), esc(model));
    }
    h.push_str("</tr>\n");
    for ((id, track), cells) in &rows {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td>", esc(id), esc(track));
        for col in 0..pairs.len() {
            h.push_str("<td>");
            match cells.get(&col) {
                Some(grades) => {
                    for g in grades {
                        let _ = write!(
                            h,
                            "<a class=\"v {}\" href=\"#{}\" title=\"{}\">{}</a>",
                            fault_class(g.0.fault),
                            super::detail::anchor(&g.0.session),
                            esc(&g.0.session),
                            esc(g.0.verdict.as_str())
                        );
                    }
                }
                None => h.push_str("<span class=\"muted\">–</span>"),
            }
            h.push_str("</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// Uncertified tasks and empty-patch sessions, counted apart.
fn apart(h: &mut String, index: &Index<'_>, summary: &Value) {
    let uncertified = summary["tasks"]["uncertified_tasks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let _ = writeln!(h, "<h2>Uncertified tasks ({})</h2>", uncertified.len());
    h.push_str("<p>An uncertified task never scores an agent.</p>\n");
    if !uncertified.is_empty() {
        h.push_str("<table>\n<tr><th>task</th><th>track</th><th>because</th></tr>\n");
        for t in &uncertified {
            let because: Vec<String> = t["because"]
                .as_array()
                .map(|b| b.iter().map(text).collect())
                .unwrap_or_default();
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                text(&t["instance_id"]),
                text(&t["track"]),
                because.join(", ")
            );
        }
        h.push_str("</table>\n");
    }
    let empty: Vec<Graded<'_>> = index
        .groups
        .values()
        .flatten()
        .copied()
        .filter(|g| {
            index
                .metrics
                .get(g.0.session.as_str())
                .is_some_and(|m| m.empty_patch)
        })
        .collect();
    let _ = writeln!(h, "<h2>Empty-patch sessions ({})</h2>", empty.len());
    h.push_str("<p>They stay in n and score zero.</p>\n");
    if !empty.is_empty() {
        h.push_str("<table>\n<tr><th>agent / model</th><th>session</th><th>task</th><th>verdict</th></tr>\n");
        for g in empty {
            let _ = writeln!(
                h,
                "<tr><td>{} / {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&g.0.agent),
                esc(&g.0.model),
                esc(&g.0.session),
                esc(&g.0.instance_id),
                esc(g.0.verdict.as_str())
            );
        }
        h.push_str("</table>\n");
    }
}

fn tamper(h: &mut String, summary: &Value) {
    let list = summary["tamper_suspects"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let _ = writeln!(h, "<h2>Tamper suspects ({})</h2>", list.len());
    h.push_str("<p>Grades whose patch touches test infrastructure, reaches into the test framework from non-test code, or whose test files changed during the run. One in effect is never scored <code>resolved</code>.</p>\n");
    if list.is_empty() {
        return;
    }
    h.push_str(
        "<table><tr><th>session</th><th>task</th><th>arm</th><th>verdict</th><th>why</th></tr>\n",
    );
    for t in &list {
        let why: Vec<String> = t["why"]
            .as_array()
            .map(|a| a.iter().filter_map(|w| w.as_str()).map(esc).collect())
            .unwrap_or_default();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(t["session"].as_str().unwrap_or("")),
            esc(t["instance_id"].as_str().unwrap_or("")),
            esc(t["arm"].as_str().unwrap_or("")),
            esc(t["verdict"].as_str().unwrap_or("")),
            why.join("<br>")
        );
    }
    h.push_str("</table>\n");
}

fn suspects(h: &mut String, summary: &Value) {
    let list = summary["verifier_suspects"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let _ = writeln!(h, "<h2>Verifier suspects ({})</h2>", list.len());
    h.push_str("<p>Sessions whose <code>exclude</code> and <code>keep</code> arms disagree: the verifier, not the agent, is the suspect.</p>\n");
    if list.is_empty() {
        return;
    }
    h.push_str(
        "<table>\n<tr><th>session</th><th>task</th><th>track</th><th>agent / model</th><th>exclude</th><th>keep</th></tr>\n",
    );
    for s in &list {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            text(&s["session"]),
            text(&s["instance_id"]),
            text(&s["track"]),
            label(s),
            text(&s["exclude"]),
            text(&s["keep"])
        );
    }
    h.push_str("</table>\n");
}

fn not_graded(h: &mut String, summary: &Value) {
    let ng = &summary["not_graded"];
    let _ = writeln!(h, "<h2>Not graded ({})</h2>", int(&ng["total"]));
    if let Some(by_reason) = ng["by_reason"].as_object().filter(|m| !m.is_empty()) {
        h.push_str("<table>\n<tr><th>reason</th><th>sessions</th></tr>\n");
        for (reason, n) in by_reason {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"n\">{}</td></tr>",
                esc(reason),
                int(n)
            );
        }
        h.push_str("</table>\n");
    }
    let list = ng["sessions"].as_array().cloned().unwrap_or_default();
    if !list.is_empty() {
        h.push_str("<table>\n<tr><th>session</th><th>reason</th></tr>\n");
        for s in &list {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td></tr>",
                text(&s["session"]),
                text(&s["reason"])
            );
        }
        h.push_str("</table>\n");
    }
}

fn usage(h: &mut String, agents: &[&Value]) {
    h.push_str(
        "<h2>Turns, tokens and cost</h2>\n<p>Means over the sessions that report them.</p>\n",
    );
    h.push_str(
        "<table>\n<tr><th>agent / model</th><th>sessions with turns</th><th>mean turns</th>\
         <th>sessions with tokens</th><th>mean tokens</th><th>mean tokens by kind</th>\
         <th>cost (USD)</th><th>cost per session</th></tr>\n",
    );
    let float = |v: &Value, decimals: usize| {
        v.as_f64()
            .map_or("–".to_owned(), |x| format!("{x:.decimals$}"))
    };
    for a in agents {
        let kinds: Vec<String> = a["tokens"]["mean_by_kind"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{} {}", esc(k), float(v, 0)))
                    .collect()
            })
            .unwrap_or_default();
        let cost = &a["cost_usd"];
        let (total, per) = if cost.is_null() {
            ("no price".to_owned(), "–".to_owned())
        } else {
            let mut total = float(&cost["total"], 4);
            if let Some(unpriced) = cost["unpriced_kinds"].as_array().filter(|u| !u.is_empty()) {
                let names: Vec<String> = unpriced.iter().map(text).collect();
                let _ = write!(
                    total,
                    " <span class=\"muted\">(no price for {})</span>",
                    names.join(", ")
                );
            }
            (total, float(&cost["mean"], 4))
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            label(a),
            int(&a["turns"]["sessions"]),
            float(&a["turns"]["mean"], 1),
            int(&a["tokens"]["sessions"]),
            float(&a["tokens"]["mean_total"], 0),
            kinds.join("; "),
            total,
            per
        );
    }
    h.push_str("</table>\n");
}
