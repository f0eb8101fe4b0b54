//! The task × agent matrix: the scored verdict of every session, coloured
//! by fault, each cell linking to the session's section on its task's page.
//! It grows with the sessions (about 210 bytes a cell), so a release of
//! more than `Limits::matrix_sessions` (5,000) scored sessions shows it on pages of its
//! own (`pages/matrix-0001.html`, …: whole task rows, at most that many
//! sessions a page, save a single task that alone has more), report.html
//! listing them with the tasks each holds; a smaller release has it in
//! report.html.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::html_transcript;
use super::index::{Graded, Index};
use super::markup::{esc, fault_class};
use super::pages::{self, At};
use crate::model::records::{Fault, TaskStatus};

type Row<'a> = BTreeMap<usize, Vec<Graded<'a>>>;

/// The matrix's columns (agent/model pairs) and rows (tasks).
struct Matrix<'a> {
    pairs: Vec<&'a (String, String)>,
    rows: BTreeMap<(&'a str, &'a str), Row<'a>>,
}

impl<'a> Matrix<'a> {
    fn new(index: &'a Index<'a>) -> Self {
        let pairs: Vec<&(String, String)> = index.groups.keys().collect();
        let mut rows: BTreeMap<(&str, &str), Row<'a>> = BTreeMap::new();
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
        Matrix { pairs, rows }
    }

    fn sessions(row: &Row<'_>) -> usize {
        row.values().map(Vec::len).sum()
    }

    /// The rows cut into pages of at most `most` sessions; one page when
    /// they all fit.
    fn pages(&self, most: usize) -> Vec<Vec<(&(&'a str, &'a str), &Row<'a>)>> {
        let mut out = vec![Vec::new()];
        let mut used: usize = 0;
        for (key, row) in &self.rows {
            let n = Self::sessions(row);
            if used > 0 && used.saturating_add(n) > most {
                out.push(Vec::new());
                used = 0;
            }
            used += n;
            if let Some(last) = out.last_mut() {
                last.push((key, row));
            }
        }
        out
    }
}

fn page_name(i: usize) -> String {
    format!("{}/matrix-{:04}.html", pages::DIR, i + 1)
}

/// report.html's section: the matrix, or the list of its pages.
pub(super) fn section(h: &mut String, index: &Index<'_>, most: usize) {
    heading(h);
    let matrix = Matrix::new(index);
    if matrix.rows.is_empty() {
        h.push_str("<p class=\"muted\">No tasks.</p>\n");
        return;
    }
    let parts = matrix.pages(most);
    if parts.len() == 1 {
        table(h, index, &matrix, &parts[0], At::Report);
        return;
    }
    let _ = writeln!(
        h,
        "<p>{} tasks on {} pages, at most {most} sessions a page:</p>\n<ul>",
        matrix.rows.len(),
        parts.len()
    );
    for (i, part) in parts.iter().enumerate() {
        let first = part.first().map(|(k, _)| k.0).unwrap_or_default();
        let last = part.last().map(|(k, _)| k.0).unwrap_or_default();
        let _ = writeln!(
            h,
            "<li><a href=\"{}\">{}</a>: {} tasks, {} to {}</li>",
            page_name(i),
            i + 1,
            part.len(),
            esc(first),
            esc(last)
        );
    }
    h.push_str("</ul>\n");
}

/// The matrix's pages; none when report.html holds it.
pub(super) fn pages(index: &Index<'_>, css: &str, most: usize) -> Vec<(String, Vec<u8>)> {
    let matrix = Matrix::new(index);
    let parts = matrix.pages(most);
    if parts.len() < 2 {
        return Vec::new();
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let mut h = format!(
                "<h1>Tasks × agents, page {} of {}</h1>\n",
                i + 1,
                parts.len()
            );
            heading(&mut h);
            table(&mut h, index, &matrix, part, At::Page);
            let title = format!("tasks × agents {}/{}", i + 1, parts.len());
            (page_name(i), pages::page(&title, css, &h).into_bytes())
        })
        .collect()
}

fn heading(h: &mut String) {
    h.push_str(
        "<h2>Tasks × agents</h2>\n<p>The scored verdict of each session; \
         a cell links to the session's detail on its task's page (a task's name, to the \
         page), ¶ to its transcript.</p>\n<p>",
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
}

fn table(
    h: &mut String,
    index: &Index<'_>,
    matrix: &Matrix<'_>,
    rows: &[(&(&str, &str), &Row<'_>)],
    at: At,
) {
    h.push_str("<table class=\"sortable\" id=\"matrix\">\n<thead><tr><th>task</th><th>track</th>");
    for (agent, model) in &matrix.pairs {
        let _ = write!(
            h,
            "<th><a href=\"{}\">{} / {}</a></th>",
            at.href(&pages::agent(agent, model)),
            esc(agent),
            esc(model)
        );
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for ((id, track), cells) in rows {
        let _ = write!(
            h,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td>",
            at.href(&pages::task(id, track)),
            esc(id),
            esc(track)
        );
        for col in 0..matrix.pairs.len() {
            h.push_str("<td>");
            match cells.get(&col) {
                Some(grades) => {
                    for g in grades {
                        let section = pages::session(index, &g.0.session)
                            .map(|p| at.href(&p))
                            .unwrap_or_default();
                        let _ = write!(
                            h,
                            "<a class=\"v {}\" href=\"{}\" title=\"{}\">{}</a>",
                            fault_class(g.0.fault),
                            esc(&section),
                            esc(&g.0.session),
                            esc(g.0.verdict.as_str())
                        );
                        if html_transcript::has_page(index, &g.0.session) {
                            let _ = write!(
                                h,
                                "<a class=\"tr\" href=\"{}\" title=\"transcript\">¶</a>",
                                at.href(&pages::transcript(&g.0.session))
                            );
                        }
                    }
                }
                None => h.push_str("<span class=\"muted\">–</span>"),
            }
            h.push_str("</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n");
}
