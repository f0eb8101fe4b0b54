//! `report.html`: the report's entry page (inline CSS and SVG, the pages'
//! one inline script, links only to the pages beside it). The numbers come from summary.json, so
//! the page never disagrees with it; its header adds the provenance and the
//! funnel (every count with its unit), and each matrix cell links to its
//! session's section (`detail.rs`) on its task's page (`pages.rs`), as does
//! every session a list names. Every figure's cell is named by its path in
//! summary.json or funnel.json (`markup::figure`), the name `assay explain`
//! answers to. What grows with the sessions here is one
//! short row or cell each; their evidence is on the task pages. Every piece
//! of text is escaped: agent, model and session labels come from users.

use std::fmt::Write as _;

use super::html_about::about;
use super::index::{Graded, Index};
use super::limits::Limits;
use super::markup::{agent_path, count, esc, figure, label, label_of, rate_text};
use super::model::{Agent, Summary};
use super::pages::{At, session_link};
use super::paths::segment;
use super::{html_chart, html_harbor, html_judge, html_leaderboard, html_matrix, pages};
use crate::model::records::Verdict;

pub(super) const CSS: &str = "
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;display:block;max-width:100%;overflow-x:auto}
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
#search{width:30em;max-width:100%}input.filter{display:block;margin:.3em 0}
table.sortable th{cursor:pointer}
";

pub(super) fn report(index: &Index<'_>, summary: &Summary, limits: &Limits) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(
        h,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        pages::csp(Some(&pages::script_hash()))
    );
    h.push_str("<title>assay release report</title>\n<style>");
    h.push_str(CSS);
    h.push_str(
        "</style>\n</head>\n<body>\n<h1>assay release report</h1>\n\
         <p><input type=\"search\" id=\"search\" placeholder=\"search the tables (task, agent, verdict, fault)\"></p>\n",
    );
    about(&mut h, index, summary);
    next_steps(&mut h, index, summary);
    if summary.graded_unsandboxed {
        h.push_str("<p class=\"warn\"><strong>Graded unsandboxed</strong> (<code>[env] sandbox = \"none\"</code>): agent code ran with the grader's rights on the host; these verdicts are not tamper-resistant.</p>\n");
    }
    if let Some(list) = &summary.not_forgery_checked {
        h.push_str("<p class=\"warn\"><strong>Not forgery-checked</strong>: for these grades a report faked by the graded code may not be caught, as their canary tests were missing or predictable (docs/security.md):</p>\n<ul>\n");
        for item in list {
            h.push_str(&format!(
                "<li>{} grades: {}</li>\n",
                item.grades,
                esc(&item.why)
            ));
        }
        h.push_str("</ul>\n");
    }
    if let Some(weak) = &summary.weakly_checked {
        h.push_str(&format!(
            "<p class=\"warn\"><strong>Weakly checked</strong>: {} task(s) gave no certified mutant of their own tests, so their graded runs ({} grades) carry the shaped canaries alone, which a forgery written against their shape passes (docs/security.md, \"Canaries\"):</p>\n<ul>\n",
            weak.tasks.len(),
            weak.grades
        ));
        for t in &weak.tasks {
            h.push_str(&format!(
                "<li><code>{}</code>: {}</li>\n",
                esc(&t.instance_id),
                esc(&t.why)
            ));
        }
        h.push_str("</ul>\n");
    }
    if let Some(odds) = &summary.forger_odds {
        h.push_str(&format!(
            "<p><strong>A forger's odds</strong> (the chance that a patch fixing nothing passes every FAIL_TO_PASS test of a task by guessing what its sealed assertions and canary windows hide; docs/security.md, \"A forger's odds\"): over {} task(s), mean 2<sup>{}</sup>, worst 2<sup>{}</sup>; target 2<sup>{}</sup>.</p>\n",
            odds.tasks, odds.mean_log2, odds.worst_log2, odds.target_log2
        ));
        if !odds.above_target.is_empty() {
            h.push_str(
                "<p class=\"warn\">Above the target (weakly checked by this figure):</p>\n<ul>\n",
            );
            for t in &odds.above_target {
                h.push_str(&format!(
                    "<li><code>{}</code>: 2<sup>{}</sup></li>\n",
                    esc(&t.instance_id),
                    t.log2
                ));
            }
            h.push_str("</ul>\n");
        }
    }
    let agents: Vec<&Agent> = summary.agents.values().collect();
    h.push_str(
        "<p>Scored arm: <code>exclude</code> (<code>keep</code> where a session has no other). \
         Intervals are Wilson 95%. <code>resolved_after_rerun</code> is counted apart and is not \
         in the resolved rate.</p>\n",
    );

    html_leaderboard::section(&mut h, index, summary);
    h.push_str("<h2>Resolved rate</h2>\n");
    html_chart::bars(&mut h, &agents);

    h.push_str("<h2>Verdicts</h2>\n<table>\n<tr><th>agent / model</th><th>n</th>");
    for v in Verdict::GRADED {
        // The words break after their underscores: eleven columns fit the page.
        let _ = write!(h, "<th>{}</th>", esc(v.as_str()).replace('_', "_<wbr>"));
    }
    h.push_str("<th>empty patch</th></tr>\n");
    for a in &agents {
        let _ = write!(
            h,
            "<tr><td>{}</td>{}",
            label(a),
            figure(&agent_path(a, ".n"), &a.n.to_string())
        );
        for v in Verdict::GRADED {
            let path = agent_path(a, &format!(".verdicts{}", segment(v.as_str())));
            h.push_str(&figure(&path, &count(&a.verdicts, v.as_str())));
        }
        let _ = writeln!(
            h,
            "{}</tr>",
            figure(&agent_path(a, ".empty_patch"), &a.empty_patch.to_string())
        );
    }
    h.push_str("</table>\n");

    h.push_str("<h2>Tracks</h2>\n<table>\n<tr><th>agent / model</th>");
    let tracks: Vec<&String> = agents
        .first()
        .map(|a| a.by_track.keys().collect())
        .unwrap_or_default();
    for t in &tracks {
        let _ = write!(h, "<th>{}</th>", esc(t));
    }
    h.push_str("</tr>\n");
    for a in &agents {
        let _ = write!(h, "<tr><td>{}</td>", label(a));
        for t in &tracks {
            let r = a.by_track.get(*t);
            let text = format!(
                "{} <span class=\"muted\">n={}</span>",
                r.map_or_else(|| "–".to_owned(), rate_text),
                r.map_or_else(|| "–".to_owned(), |r| r.n.to_string())
            );
            let path = format!(".by_track{}.resolved_rate", segment(t));
            h.push_str(&figure(&agent_path(a, &path), &text));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");

    html_matrix::section(&mut h, index, limits.matrix_sessions);
    apart(&mut h, index, summary);
    html_harbor::section(&mut h, index);
    super::instances::section(&mut h, summary.instances.as_ref());
    suspects(&mut h, index, summary);
    tamper(&mut h, index, summary);
    not_graded(&mut h, index, summary);
    trials(&mut h, index, summary);
    usage(&mut h, &agents);
    run_facts(&mut h, &agents);
    quality(&mut h, index, &agents);
    html_judge::section(&mut h, index, summary);
    super::apps::section(&mut h, index, summary.apps.as_ref());

    h.push_str(&pages::script_tag());
    h.push_str("</body>\n</html>\n");
    h
}

/// What to do next when the release has nothing to score yet: no session
/// graded, or tasks held back for their statements. A first build's report
/// says how to get from its tasks to a leaderboard.
fn next_steps(h: &mut String, index: &Index<'_>, summary: &Summary) {
    let waiting = index.about.funnel.awaiting_statement;
    let no_sessions = index.grades.is_empty() && summary.not_graded.total == 0;
    if !no_sessions && waiting == 0 {
        return;
    }
    h.push_str("<h2>Next</h2>\n<ul>\n");
    if waiting > 0 {
        let _ = writeln!(
            h,
            "<li>{waiting} task(s) screened but held back: write each one's statement, \
             <code>&lt;statements&gt;/&lt;task id&gt;.md</code> (the build names the files), \
             then <code>assay build</code>.</li>"
        );
    }
    if no_sessions {
        h.push_str(
            "<li>No session graded yet, so the tables below are empty. Put session files in \
             the pipeline's <code>sessions</code> directory (<code>assay docs sessions</code>), \
             or let assay run agents with an <code>[[agent]]</code> table, then \
             <code>assay build</code>: only the new sessions' nodes and the release run.</li>\n",
        );
    }
    h.push_str("</ul>\n");
}

/// The `[[metric]]` figures: per pair and metric, what its sessions
/// introduced against gold, then every figure that could not be measured
/// and why. Nothing without metrics.
fn quality(h: &mut String, index: &Index<'_>, agents: &[&Agent]) {
    if index.quality.metrics.is_empty() {
        return;
    }
    h.push_str(
        "<h2>Quality (findings introduced against gold)</h2>\n<p>Each metric runs the \
         project's own tool on the session's graded tree and on the task's gold tree; a \
         session's figure is the findings its tree has beyond gold's, outside test files.</p>\n\
         <table>\n<tr><th>agent / model</th><th>metric</th><th>measured</th><th>failed</th>\
         <th>median introduced</th><th>resolved sessions introducing findings</th></tr>\n",
    );
    for a in agents {
        for (metric, q) in a.quality.iter().flatten() {
            let median = q
                .median_introduced
                .map_or_else(|| "–".to_owned(), |m| format!("{m}"));
            let share = q
                .resolved_introducing_share
                .map_or_else(|| "–".to_owned(), |s| format!("{:.0}%", s * 100.0));
            let path = |field: &str| agent_path(a, &format!(".quality{}.{field}", segment(metric)));
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td><code>{}</code></td>{}{}{}{}</tr>",
                label(a),
                esc(metric),
                figure(&path("measured"), &q.measured.to_string()),
                figure(&path("failed"), &q.failed.to_string()),
                figure(&path("median_introduced"), &median),
                figure(
                    &path("resolved_introducing_share"),
                    &format!("{} of {} ({share})", q.resolved_introducing, q.resolved)
                ),
            );
        }
    }
    h.push_str("</table>\n");
    let failed: Vec<(&str, &str, &str)> = index
        .quality
        .by_session
        .iter()
        .flat_map(|(session, figures)| {
            figures.iter().filter_map(move |(metric, f)| match f {
                super::quality::Figure::Failed(why) => Some((*session, *metric, why.as_str())),
                super::quality::Figure::Introduced(_) => None,
            })
        })
        .collect();
    if !failed.is_empty() {
        h.push_str(
            "<table>\n<tr><th>session</th><th>metric</th><th>not measured because</th></tr>\n",
        );
        for (session, metric, why) in failed {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                session_link(index, session, At::Report),
                esc(metric),
                esc(why)
            );
        }
        h.push_str("</table>\n");
    }
}

/// How the agents' runs ended, from their session files and transcripts.
fn run_facts(h: &mut String, agents: &[&Agent]) {
    h.push_str(
        "<h2>How the runs ended</h2>\n<table>\n<tr><th>agent / model</th><th>ended</th>\
         <th>is_error</th><th>permission denials</th><th>mean duration (s)</th></tr>\n",
    );
    for a in agents {
        let r = &a.run;
        let ended: Vec<String> = r
            .ended
            .iter()
            .map(|(k, v)| format!("{} {v}", esc(k)))
            .collect();
        let seconds = r
            .duration_ms
            .mean
            .map_or_else(|| "–".to_owned(), |ms| format!("{:.1}", ms / 1000.0));
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td>{}{}{}</tr>",
            label(a),
            ended.join("; "),
            figure(
                &agent_path(a, ".run.is_error"),
                &format!("{} of {}", r.is_error, r.is_error_sessions)
            ),
            figure(
                &agent_path(a, ".run.permission_denials.total"),
                &r.permission_denials.total.to_string()
            ),
            figure(&agent_path(a, ".run.duration_ms.mean"), &seconds),
        );
    }
    h.push_str("</table>\n");
}

/// Uncertified tasks and empty-patch sessions, counted apart.
fn apart(h: &mut String, index: &Index<'_>, summary: &Summary) {
    let uncertified = &summary.tasks.uncertified_tasks;
    let harbor = html_harbor::uncertified(index).len();
    let _ = writeln!(
        h,
        "<h2>Uncertified tasks ({})</h2>",
        uncertified.len() + harbor
    );
    h.push_str("<p>An uncertified task never scores an agent.</p>\n");
    html_harbor::uncertified_table(h, index);
    if !uncertified.is_empty() {
        h.push_str("<table>\n<tr><th>task</th><th>track</th><th>because</th></tr>\n");
        for t in uncertified {
            let because: Vec<String> = t.because.iter().map(|b| esc(b)).collect();
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&t.instance_id),
                esc(&t.track),
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
        .filter(|g| index.empty_patch(&g.0.session))
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
                session_link(index, &g.0.session, At::Report),
                esc(&g.0.instance_id),
                esc(g.0.verdict.as_str())
            );
        }
        h.push_str("</table>\n");
    }
}

fn tamper(h: &mut String, index: &Index<'_>, summary: &Summary) {
    let list = &summary.tamper_suspects;
    let _ = writeln!(h, "<h2>Tamper suspects ({})</h2>", list.len());
    h.push_str("<p>Grades whose patch touches test infrastructure, reaches into the test framework from non-test code, or whose test files changed during the run. One in effect is never scored <code>resolved</code>.</p>\n");
    if list.is_empty() {
        return;
    }
    h.push_str(
        "<table><tr><th>session</th><th>task</th><th>arm</th><th>verdict</th><th>why</th></tr>\n",
    );
    for t in list {
        let why: Vec<String> = t.why.iter().map(|w| esc(w)).collect();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            session_link(index, &t.session, At::Report),
            esc(&t.instance_id),
            esc(t.arm.as_str()),
            esc(t.verdict.as_str()),
            why.join("<br>")
        );
    }
    h.push_str("</table>\n");
}

fn suspects(h: &mut String, index: &Index<'_>, summary: &Summary) {
    let list = &summary.verifier_suspects;
    let _ = writeln!(h, "<h2>Verifier suspects ({})</h2>", list.len());
    h.push_str("<p>Sessions whose <code>exclude</code> and <code>keep</code> arms disagree: the verifier, not the agent, is the suspect.</p>\n");
    if list.is_empty() {
        return;
    }
    h.push_str(
        "<table>\n<tr><th>session</th><th>task</th><th>track</th><th>agent / model</th><th>exclude</th><th>keep</th></tr>\n",
    );
    for s in list {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            session_link(index, &s.session, At::Report),
            esc(&s.instance_id),
            esc(&s.track),
            label_of(&s.agent, &s.model),
            esc(s.exclude.as_str()),
            esc(s.keep.as_str())
        );
    }
    h.push_str("</table>\n");
}

fn not_graded(h: &mut String, index: &Index<'_>, summary: &Summary) {
    let ng = &summary.not_graded;
    let _ = writeln!(h, "<h2>Not graded ({})</h2>", ng.total);
    if !ng.by_reason.is_empty() {
        h.push_str("<table>\n<tr><th>reason</th><th>sessions</th></tr>\n");
        for (reason, n) in &ng.by_reason {
            let path = format!("summary.not_graded.by_reason{}", segment(reason));
            let _ = writeln!(
                h,
                "<tr><td>{}</td>{}</tr>",
                esc(reason),
                figure(&path, &n.to_string())
            );
        }
        h.push_str("</table>\n");
    }
    let list = &ng.sessions;
    if !list.is_empty() {
        h.push_str("<table>\n<tr><th>session</th><th>reason</th></tr>\n");
        for s in list {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td></tr>",
                session_link(index, &s.session, At::Report),
                esc(&s.reason)
            );
        }
        h.push_str("</table>\n");
    }
}

/// Every attempt on paper and what became of it, by origin (summary.json
/// `trials`).
fn trials(h: &mut String, index: &Index<'_>, summary: &Summary) {
    let Some(trials) = &summary.trials else {
        return;
    };
    h.push_str(
        "<h2>Trials</h2>\n<p>Every attempt on paper and what became of it, each in one bucket: \
         planned = completed + errored + not started + not ended; started = completed + errored = \
         graded + excluded before grading; scored = graded − excluded grades.</p>\n<table>\n\
         <tr><th>origin</th><th>planned</th><th>started</th><th>not started</th>\
         <th>not ended</th><th>completed</th><th>errored</th><th>graded</th><th>scored</th></tr>\n",
    );
    for (origin, t) in trials {
        let errored: Vec<String> = t.errored.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let at = |field: &str, n: u64| {
            figure(
                &format!("summary.trials{}.{field}", segment(origin)),
                &n.to_string(),
            )
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td>{}{}{}{}{}<td>{}</td>{}{}</tr>",
            esc(origin),
            at("planned", t.planned),
            at("started", t.started),
            at("not_started", t.not_started),
            at("not_ended", t.not_ended),
            at("completed", t.completed),
            esc(&if errored.is_empty() {
                "0".to_owned()
            } else {
                errored.join(", ")
            }),
            at("graded", t.graded),
            at("scored", t.scored)
        );
    }
    h.push_str("</table>\n");
    let excluded: Vec<_> = trials
        .iter()
        .flat_map(|(origin, t)| t.excluded.iter().map(move |e| (origin, e)))
        .collect();
    if !excluded.is_empty() {
        h.push_str(
            "<table>\n<tr><th>origin</th><th>session</th><th>fault</th><th>why excluded</th></tr>\n",
        );
        for (origin, e) in excluded {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(origin),
                session_link(index, &e.session, At::Report),
                esc(&e.fault),
                esc(&e.why)
            );
        }
        h.push_str("</table>\n");
    }
    let disagreements: Vec<_> = trials
        .iter()
        .flat_map(|(origin, t)| t.disagreements.iter().map(move |d| (origin, d)))
        .collect();
    if !disagreements.is_empty() {
        h.push_str(
            "<p>Harbor's reward beside assay's regrade, where they disagree: the published grade \
             is assay's (the agent was root in the container Harbor's verifier ran in).</p>\n\
             <table>\n<tr><th>origin</th><th>trial</th><th>Harbor's reward</th>\
             <th>assay's verdict</th><th>why</th></tr>\n",
        );
        for (origin, d) in disagreements {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(origin),
                session_link(index, &d.session, At::Report),
                d.reward.map_or("none".to_owned(), |r| r.to_string()),
                esc(&d.verdict),
                esc(d.why.as_deref().unwrap_or(""))
            );
        }
        h.push_str("</table>\n");
    }
}

fn usage(h: &mut String, agents: &[&Agent]) {
    h.push_str(
        "<h2>Turns, tokens and cost</h2>\n<p>Means over the sessions that report them.</p>\n",
    );
    h.push_str(
        "<table>\n<tr><th>agent / model</th><th>sessions with turns</th><th>mean turns</th>\
         <th>sessions with tokens</th><th>mean tokens</th><th>mean tokens by kind</th>\
         <th>cost (USD)</th><th>cost per session</th></tr>\n",
    );
    let float =
        |v: Option<f64>, decimals: usize| v.map_or("–".to_owned(), |x| format!("{x:.decimals$}"));
    for a in agents {
        let kinds: Vec<String> = a
            .tokens
            .mean_by_kind
            .iter()
            .map(|(k, v)| format!("{} {}", esc(k), float(*v, 0)))
            .collect();
        let (total, per) = match &a.cost_usd {
            None => ("no price".to_owned(), "–".to_owned()),
            Some(cost) => {
                let mut total = float(cost.total, 4);
                if !cost.unpriced_kinds.is_empty() {
                    let names: Vec<String> = cost.unpriced_kinds.iter().map(|u| esc(u)).collect();
                    let _ = write!(
                        total,
                        " <span class=\"muted\">(no price for {})</span>",
                        names.join(", ")
                    );
                }
                (total, float(cost.mean, 4))
            }
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td>{}{}{}{}<td>{}</td>{}{}</tr>",
            label(a),
            figure(
                &agent_path(a, ".turns.sessions"),
                &a.turns.sessions.to_string()
            ),
            figure(&agent_path(a, ".turns.mean"), &float(a.turns.mean, 1)),
            figure(
                &agent_path(a, ".tokens.sessions"),
                &a.tokens.sessions.to_string()
            ),
            figure(
                &agent_path(a, ".tokens.mean_total"),
                &float(a.tokens.mean_total, 0)
            ),
            kinds.join("; "),
            figure(&agent_path(a, ".cost_usd.total"), &total),
            figure(&agent_path(a, ".cost_usd.mean"), &per)
        );
    }
    h.push_str("</table>\n");
}
