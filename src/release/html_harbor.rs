//! report.html's Harbor task folders, one row each: the readings of the
//! dataset's own verifier (its no-op and oracle at screening, and the
//! control trials of an imported Harbor job) beside what assay made of
//! them (certified or not, with every reason; for a Deep-SWE-shaped
//! folder, its own controls as an assay task too; for a job's control
//! trial, assay's regrade). Nothing without a `[[harbor_dataset]]`.

use std::fmt::Write as _;

use super::index::Index;
use super::input::HarborScreen;
use super::markup::esc;
use super::pages::{At, session_link};

/// The agents of a Harbor job's control trials.
const CONTROLS: [&str; 2] = ["nop", "oracle"];

/// The uncertified Harbor task folders, sorted, each with its reasons.
pub(super) fn uncertified<'a>(index: &Index<'a>) -> Vec<&'a HarborScreen> {
    index
        .harbor_screens
        .values()
        .copied()
        .filter(|h| !h.certified)
        .collect()
}

/// The table of the uncertified Harbor task folders (under "Uncertified
/// tasks"); nothing when there is none.
pub(super) fn uncertified_table(h: &mut String, index: &Index<'_>) {
    let list = uncertified(index);
    if list.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<p>Harbor task folders not certified ({}), each with every reason:</p>\n\
         <table>\n<tr><th>Harbor task</th><th>because</th></tr>",
        list.len()
    );
    for t in list {
        let because: Vec<String> = t.because.iter().map(|b| esc(b)).collect();
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            esc(&t.id),
            because.join("<br>")
        );
    }
    h.push_str("</table>\n");
}

/// Every Harbor task folder: the dataset's verifier's readings beside
/// assay's.
pub(super) fn section(h: &mut String, index: &Index<'_>) {
    if index.harbor_screens.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<h2>Harbor tasks: the dataset's verifier beside assay ({})</h2>\n\
         <p>Each folder's own verifier (<code>tests/test.sh</code>) read its no-op and its oracle \
         in fresh containers at screening; an imported Harbor job's <code>nop</code> and \
         <code>oracle</code> trials are its readings too. assay certifies a folder only when \
         every no-op scored 0 and every oracle 1, and regrades each trial itself.</p>\n\
         <table>\n<tr><th>Harbor task</th><th>no-op rewards</th><th>oracle rewards</th>\
         <th>the jobs' control trials: reward → assay's grade</th><th>assay</th></tr>",
        index.harbor_screens.len()
    );
    for t in index.harbor_screens.values() {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.id),
            rewards(t, "nop"),
            rewards(t, "oracle"),
            job_controls(index, &t.id),
            assay(index, t),
        );
    }
    h.push_str("</table>\n");
}

/// A control's rewards, reading by reading.
fn rewards(t: &HarborScreen, control: &str) -> String {
    match t.readings.get(control).filter(|r| !r.is_empty()) {
        None => "<span class=\"muted\">not read</span>".to_owned(),
        Some(readings) => readings
            .iter()
            .map(|r| r.map_or_else(|| "none".to_owned(), |x| x.to_string()))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The imported jobs' control trials of task `id`: each one's reward
/// (Harbor's) and assay's regrade.
fn job_controls(index: &Index<'_>, id: &str) -> String {
    let rows: Vec<String> = index
        .grades
        .iter()
        .filter(|g| g.0.instance_id == id && CONTROLS.contains(&g.0.agent.as_str()))
        .filter_map(|g| {
            let trial = index
                .sessions
                .get(g.0.session.as_str())?
                .facts
                .trial
                .as_ref()?;
            Some(format!(
                "{} {}: {} → <span class=\"v\">{}</span>",
                esc(&g.0.agent),
                session_link(index, &g.0.session, At::Report),
                trial
                    .reward
                    .map_or_else(|| "no reward".to_owned(), |r| r.to_string()),
                esc(g.0.verdict.as_str())
            ))
        })
        .collect();
    if rows.is_empty() {
        "<span class=\"muted\">none imported</span>".to_owned()
    } else {
        rows.join("<br>")
    }
}

/// What assay made of the folder: certified, or every reason it is not;
/// for a folder that is an assay task too, what assay's own controls said.
fn assay(index: &Index<'_>, t: &HarborScreen) -> String {
    let mut out = if t.certified {
        "certified".to_owned()
    } else {
        let because: Vec<String> = t.because.iter().map(|b| esc(b)).collect();
        format!("<strong>uncertified</strong>: {}", because.join("; "))
    };
    for (task, _) in index
        .tasks
        .iter()
        .filter(|(task, _)| task.instance_id == t.id)
    {
        let _ = write!(
            out,
            "<br>as an assay task ({} track): {}",
            esc(&task.track),
            if task.certified {
                "certified by assay's controls".to_owned()
            } else {
                format!(
                    "uncertified by assay's controls: {}",
                    esc(&task.uncertified_because.join("; "))
                )
            }
        );
    }
    out
}
