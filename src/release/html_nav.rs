//! The pages a reader navigates by: one per released task (every agent's
//! sessions on it with verdict, fault and cost, then each of those
//! sessions' sections, `detail.rs`, and only then its statement and its
//! test lists, folded: a reader comes for the sessions, and a PASS_TO_PASS
//! list of 2,000 ids would push them out of sight; a task some
//! grade names but the release does not hold gets one too, saying so) and
//! one per agent/model pair (its sessions on every task), linked
//! from the matrix's rows and columns. Their tables sort and filter with
//! the report's one inline script ([`pages::SCRIPT`]); without it they read
//! the same, unsorted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::detail;
use super::html_transcript;
use super::index::{Graded, Index};
use super::markup::{esc, fault_class};
use super::pages;
use super::stats::session_cost;
use crate::model::records::TaskRecord;

/// Test ids a task page lists in full; the rest are counted.
const LISTED: usize = 200;

/// Every task page and agent page, each handed to `put` (release file
/// name, bytes) as it is made.
pub(super) fn pages<E>(
    index: &Index<'_>,
    css: &str,
    per_page: usize,
    put: &mut dyn FnMut(String, Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    let mut by_task: BTreeMap<(&str, &str), Vec<Graded<'_>>> = BTreeMap::new();
    let mut by_pair: BTreeMap<(&str, &str), Vec<Graded<'_>>> = BTreeMap::new();
    for g in &index.grades {
        by_task
            .entry((&g.0.instance_id, &g.0.track))
            .or_default()
            .push(g);
        by_pair.entry((&g.0.agent, &g.0.model)).or_default().push(g);
    }
    // Each session's section goes on its home task's page.
    let mut by_home: BTreeMap<(&str, &str), BTreeMap<&str, Vec<Graded<'_>>>> = BTreeMap::new();
    for g in &index.grades {
        if let Some(home) = index.homes.get(g.0.session.as_str()) {
            by_home
                .entry(*home)
                .or_default()
                .entry(&g.0.session)
                .or_default()
                .push(g);
        }
    }
    let mut seen = BTreeSet::new();
    let tasks = index
        .tasks
        .iter()
        .map(|(t, d)| ((t.instance_id.as_str(), t.track.as_str()), Some((*t, *d))));
    // A grade on a task the release does not hold still has a page to link to.
    let orphans = by_task
        .keys()
        .chain(by_home.keys())
        .map(|k| (*k, None))
        .collect::<Vec<_>>();
    for (key, record) in tasks.chain(orphans) {
        if !seen.insert(key) {
            continue;
        }
        let grades = by_task.get(&key).map_or(&[][..], Vec::as_slice);
        let sessions = by_home.remove(&key).unwrap_or_default();
        put(
            pages::task(key.0, key.1),
            task_page(index, key, record, grades, &sessions, css).into_bytes(),
        )?;
    }
    for ((agent, model), grades) in &by_pair {
        let parts: Vec<&[Graded<'_>]> = grades.chunks(per_page.max(1)).collect();
        for (i, rows) in parts.iter().enumerate() {
            let part = Part {
                at: i,
                of: parts.len(),
                total: grades.len(),
                rows: per_page,
            };
            put(
                pages::agent_part(agent, model, i),
                agent_page(index, agent, model, rows, part, css).into_bytes(),
            )?;
        }
    }
    Ok(())
}

/// Which of an agent's pages this is.
#[derive(Clone, Copy)]
struct Part {
    at: usize,
    of: usize,
    total: usize,
    rows: usize,
}

/// A task's test list, folded: its name and count show, its ids on demand
/// (PASS_TO_PASS can run to thousands of lines).
fn list(h: &mut String, what: &str, ids: &[String]) {
    let _ = writeln!(h, "<h2>{} ({})</h2>", esc(what), ids.len());
    if ids.is_empty() {
        h.push_str("<p class=\"muted\">none</p>\n");
        return;
    }
    let _ = writeln!(
        h,
        "<details class=\"tests\"><summary>{} test {}</summary>",
        ids.len(),
        if ids.len() == 1 { "id" } else { "ids" }
    );
    h.push_str("<ul>\n");
    for id in ids.iter().take(LISTED) {
        let _ = writeln!(h, "<li><code>{}</code></li>", esc(id));
    }
    if ids.len() > LISTED {
        let _ = writeln!(
            h,
            "<li class=\"muted\">and {} more</li>",
            ids.len() - LISTED
        );
    }
    h.push_str("</ul></details>\n");
}

fn task_page(
    index: &Index<'_>,
    (instance_id, track): (&str, &str),
    record: Option<(&TaskRecord, &str)>,
    grades: &[Graded<'_>],
    sessions: &BTreeMap<&str, Vec<Graded<'_>>>,
    css: &str,
) -> String {
    let mut h = String::new();
    // The task's own text and lists, after its sessions.
    let mut about = String::new();
    match record {
        Some((t, digest)) => {
            let _ = writeln!(
                h,
                "<h1>Task <code>{}</code></h1>\n<p>{} track · {} · repository <code>{}</code> at \
                 <code>{}</code> · digest <code>{}</code></p>",
                esc(&t.instance_id),
                esc(&t.track),
                if t.certified {
                    "certified".to_owned()
                } else {
                    format!(
                        "<strong>uncertified</strong>: {}",
                        esc(&t.uncertified_because.join("; "))
                    )
                },
                esc(&t.repo),
                esc(&t.base_commit),
                esc(digest),
            );
            let _ = writeln!(
                h,
                "<p>Its sessions first; <a href=\"#statement\">its statement and test lists</a> \
                 after them.</p>"
            );
            about.push_str("<h2 id=\"statement\">Statement</h2>\n");
            let _ = writeln!(
                about,
                "<pre class=\"t\">{}</pre>",
                esc(&t.problem_statement)
            );
            list(&mut about, "FAIL_TO_PASS", &t.fail_to_pass);
            list(&mut about, "PASS_TO_PASS", &t.pass_to_pass);
            if !t.flaky.is_empty() {
                list(&mut about, "flaky", &t.flaky);
            }
            if !t.excluded.is_empty() {
                list(&mut about, "excluded", &t.excluded);
            }
        }
        None => {
            let _ = writeln!(
                h,
                "<h1>Task <code>{}</code></h1>\n<p>{} track · not a task of this release: \
                 only its grades are.</p>",
                esc(instance_id),
                esc(track),
            );
        }
    }
    let _ = writeln!(h, "<h2>Grades ({})</h2>", grades.len());
    sessions_table(&mut h, index, grades, Column::Agent);
    detail::sections(&mut h, index, sessions);
    h.push_str(&about);
    // A task has a page per track: the title names both, so no two pages
    // share one.
    pages::page(&format!("task {instance_id} ({track} track)"), css, &h)
}

fn agent_page(
    index: &Index<'_>,
    agent: &str,
    model: &str,
    grades: &[Graded<'_>],
    part: Part,
    css: &str,
) -> String {
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<h1>{} / {}</h1>\n<p>Its standing: <a href=\"../report.html\">the leaderboard</a>. \
         Every graded session, on every arm:</p>",
        esc(agent),
        esc(model)
    );
    if part.of > 1 {
        parts_nav(&mut h, agent, model, part);
    }
    let _ = writeln!(h, "<h2>Grades ({})</h2>", grades.len());
    sessions_table(&mut h, index, grades, Column::Task);
    pages::page(&format!("{agent} / {model}"), css, &h)
}

/// The links to an agent's other pages.
fn parts_nav(h: &mut String, agent: &str, model: &str, part: Part) {
    let _ = write!(
        h,
        "<p>{} grades on {} pages, {} a page; this is page {}:",
        part.total,
        part.of,
        part.rows,
        part.at + 1
    );
    for i in 0..part.of {
        if i == part.at {
            let _ = write!(h, " <b>{}</b>", i + 1);
        } else {
            let _ = write!(
                h,
                " <a href=\"{}\">{}</a>",
                esc(&pages::from_page(&pages::agent_part(agent, model, i))),
                i + 1
            );
        }
    }
    h.push_str("</p>\n");
}

/// What the first column of a sessions table names: the agent on a task's
/// page, the task on an agent's.
#[derive(Clone, Copy, PartialEq)]
enum Column {
    Agent,
    Task,
}

fn sessions_table(h: &mut String, index: &Index<'_>, grades: &[Graded<'_>], first: Column) {
    if grades.is_empty() {
        h.push_str("<p class=\"muted\">No graded session.</p>\n");
        return;
    }
    let _ = writeln!(
        h,
        "<table class=\"sortable\">\n<thead><tr><th>{}</th><th>session</th><th>arm</th>\
         <th>verdict</th><th>fault</th><th>turns</th><th>cost (USD)</th><th>transcript</th>\
         </tr></thead>\n<tbody>",
        if first == Column::Agent {
            "agent / model"
        } else {
            "task"
        }
    );
    for g in grades {
        let r = &g.0;
        let lead = match first {
            Column::Agent => format!(
                "<a href=\"{}\">{} / {}</a>",
                esc(&pages::from_page(&pages::agent(&r.agent, &r.model))),
                esc(&r.agent),
                esc(&r.model)
            ),
            Column::Task => format!(
                "<a href=\"{}\">{}</a> <span class=\"muted\">{}</span>",
                esc(&pages::from_page(&pages::task(&r.instance_id, &r.track))),
                esc(&r.instance_id),
                esc(&r.track)
            ),
        };
        let session = index.sessions.get(r.session.as_str());
        let turns = session
            .and_then(|s| s.facts.turns)
            .map_or("–".to_owned(), |t| t.to_string());
        let cost = session
            .filter(|s| !s.facts.tokens.is_empty() || !s.facts.by_model.is_empty())
            .map(|s| session_cost(index.prices, &r.model, &s.facts, &mut BTreeSet::new()))
            .filter(|c| *c > 0.0)
            .map_or("–".to_owned(), |c| format!("{c:.4}"));
        let transcript = if html_transcript::has_page(index, &r.session) {
            format!(
                "<a href=\"{}\">turns</a>",
                esc(&pages::from_page(&pages::transcript(&r.session)))
            )
        } else {
            "–".to_owned()
        };
        let _ = writeln!(
            h,
            "<tr><td>{lead}</td><td>{}</td><td>{}</td>\
             <td><span class=\"v {}\">{}</span></td><td>{}</td><td class=\"n\">{turns}</td>\
             <td class=\"n\">{cost}</td><td>{transcript}</td></tr>",
            pages::session_link(index, &r.session, pages::At::Page),
            esc(r.arm.as_str()),
            fault_class(r.fault),
            esc(r.verdict.as_str()),
            esc(r.fault.as_str()),
        );
    }
    h.push_str("</tbody></table>\n");
}
