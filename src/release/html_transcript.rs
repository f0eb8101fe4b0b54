//! A page per session that kept a transcript: its turns as the run made
//! them (`sessions::turns`) — the model's text, each tool call with its
//! input, each output folded under `<details>` and capped, errors and
//! permission denials marked, the token counts of every step — linked from
//! the session's matrix cell and its section on its task's page.
//!
//! A transcript is the agent's text (it can write anything in it, markup
//! and lies included): it is redacted before it is stored, and here every
//! byte of it is escaped; nothing in it is taken for a fact about the run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::index::{Graded, Index};
use super::markup::{esc, fault_class};
use super::pages;
use crate::model::records::SessionRecord;
use crate::sessions::turns::{self, Entry};

/// How much of one text, input or output a page shows.
const SHOWN_BYTES: usize = 16 * 1024;

const CSS: &str = "
.step{margin-top:1.2em;border-top:1px solid #ddd;padding-top:.3em}
.role{font-size:11px;text-transform:uppercase;color:#777}
.call{border-left:3px solid #4c78a8;padding-left:.5em;margin:.3em 0}
details.out{border-left:3px solid #c7e9c0;padding-left:.5em;margin:.3em 0}
details.err{border-left-color:#fcbba1}
.denied{border-left:3px solid #e6c200;padding-left:.5em}
.end{font-weight:600}
pre.t{white-space:pre-wrap;background:none;border:none;padding:0;font:inherit}
";

/// Every transcript page: (release file name, bytes), each made as it is
/// taken.
pub(super) fn pages<'i>(
    index: &'i Index<'i>,
    css: &'i str,
) -> impl Iterator<Item = (String, Vec<u8>)> + 'i {
    let mut grades: BTreeMap<&str, Vec<Graded<'_>>> = BTreeMap::new();
    for g in &index.grades {
        grades.entry(g.0.session.as_str()).or_default().push(g);
    }
    index.sessions.values().filter_map(move |s| {
        let bytes = index.transcripts.get(s.transcript.as_deref()?)?;
        let of = grades.get(s.id.as_str()).map_or(&[][..], Vec::as_slice);
        Some((
            pages::transcript(&s.id),
            page(index, s, of, &String::from_utf8_lossy(bytes), css).into_bytes(),
        ))
    })
}

/// Whether `session` has a transcript page.
pub(super) fn has_page(index: &Index<'_>, session: &str) -> bool {
    index
        .sessions
        .get(session)
        .and_then(|s| s.transcript.as_deref())
        .is_some_and(|d| index.transcripts.contains_key(d))
}

fn page(
    index: &Index<'_>,
    s: &SessionRecord,
    grades: &[Graded<'_>],
    text: &str,
    css: &str,
) -> String {
    let entries = turns::read(text);
    let mut h = String::new();
    // The task page the session's section is on; for a session never
    // graded, its task's page where the release holds that task.
    let task = match index.homes.get(s.id.as_str()) {
        Some((id, track)) => Some(pages::task(id, track)),
        None => index
            .tasks
            .iter()
            .any(|(t, _)| t.instance_id == s.task && t.track == s.track)
            .then(|| pages::task(&s.task, &s.track)),
    };
    let _ = writeln!(
        h,
        "<h1>Transcript of <code>{}</code></h1>\n<p>{} / {} on task {} ({} track). {}</p>",
        esc(&s.id),
        esc(&s.agent),
        esc(&s.model),
        match task {
            Some(path) => format!(
                "<a href=\"{}\">{}</a>",
                esc(&pages::from_page(&path)),
                esc(&s.task)
            ),
            None => esc(&s.task),
        },
        esc(&s.track),
        match pages::session(index, &s.id) {
            Some(path) => format!(
                "Its grades: <a href=\"{}\">the session's section</a>.",
                esc(&pages::from_page(&path))
            ),
            None => "Not graded.".to_owned(),
        },
    );
    verdicts(&mut h, grades);
    summary(&mut h, &entries);
    h.push_str(
        "<p class=\"muted\">The agent's own record, redacted and shown as written: \
         not evidence of anything the grader observed.</p>\n",
    );
    let tools: BTreeMap<&str, &str> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Call { id, tool, .. } => Some((id.as_str(), tool.as_str())),
            _ => None,
        })
        .collect();
    for e in &entries {
        entry(&mut h, e, &tools);
    }
    pages::page(
        &format!("transcript of {}", s.id),
        &format!("{css}{CSS}"),
        &h,
    )
}

/// The session's verdict on each arm, coloured by fault.
fn verdicts(h: &mut String, grades: &[Graded<'_>]) {
    if grades.is_empty() {
        h.push_str("<p>Not graded.</p>\n");
        return;
    }
    h.push_str("<p>");
    for g in grades {
        let _ = write!(
            h,
            "<span class=\"v {}\">{}: {} ({})</span> ",
            fault_class(g.0.fault),
            esc(g.0.arm.as_str()),
            esc(g.0.verdict.as_str()),
            esc(g.0.fault.as_str())
        );
    }
    h.push_str("</p>\n");
}

/// Steps, calls, errors, denials and tokens, counted.
fn summary(h: &mut String, entries: &[Entry]) {
    let mut steps = 0;
    let mut calls = 0;
    let mut errors = 0;
    let mut denied = 0;
    let mut tokens: BTreeMap<&str, u64> = BTreeMap::new();
    for e in entries {
        match e {
            Entry::Step { tokens: t, .. } => {
                steps += 1;
                for (k, n) in t {
                    *tokens.entry(k).or_default() += n;
                }
            }
            Entry::Call { .. } => calls += 1,
            Entry::Output { is_error: true, .. } => errors += 1,
            Entry::Denied { .. } => denied += 1,
            _ => {}
        }
    }
    let tokens: Vec<String> = tokens
        .iter()
        .map(|(k, n)| format!("{} {n}", esc(k)))
        .collect();
    let _ = writeln!(
        h,
        "<p id=\"counts\">{steps} model steps, {calls} tool calls, {errors} failed, \
         {denied} denied; tokens: {}</p>",
        if tokens.is_empty() {
            "not reported".to_owned()
        } else {
            tokens.join(", ")
        }
    );
}

/// At most [`SHOWN_BYTES`] of `text` (cut at a character), escaped, and
/// how much was left out.
fn capped(text: &str) -> String {
    if text.len() <= SHOWN_BYTES {
        return esc(text);
    }
    let mut cut = SHOWN_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n<span class=\"muted\">… {} more bytes not shown</span>",
        esc(&text[..cut]),
        text.len() - cut
    )
}

fn entry(h: &mut String, e: &Entry, tools: &BTreeMap<&str, &str>) {
    match e {
        Entry::Step { n, tokens } => {
            let t: Vec<String> = tokens
                .iter()
                .map(|(k, v)| format!("{} {v}", esc(k)))
                .collect();
            let _ = writeln!(
                h,
                "<h3 class=\"step\" id=\"step-{n}\">step {n}</h3>{}",
                if t.is_empty() {
                    String::new()
                } else {
                    format!("<p class=\"muted\">tokens: {}</p>", t.join(", "))
                }
            );
        }
        Entry::Text { role, text } => {
            let _ = writeln!(
                h,
                "<div><span class=\"role\">{}</span><pre class=\"t\">{}</pre></div>",
                esc(role),
                capped(text)
            );
        }
        Entry::Call { id, tool, input } => {
            let _ = writeln!(
                h,
                "<div class=\"call\"><span class=\"role\">call</span> <strong>{}</strong> \
                 <code class=\"muted\">{}</code><pre>{}</pre></div>",
                esc(tool),
                esc(id),
                capped(input)
            );
        }
        Entry::Output { id, text, is_error } => {
            let lines = text.lines().count();
            let first = text.lines().next().unwrap_or("");
            let first: String = first.chars().take(100).collect();
            let _ = writeln!(
                h,
                "<details class=\"out{}\"><summary>{}{} output: {lines} lines, {} bytes \
                 <code>{}</code></summary><pre>{}</pre></details>",
                if *is_error { " err" } else { "" },
                if *is_error {
                    "<strong>error</strong> · "
                } else {
                    ""
                },
                esc(tools.get(id.as_str()).copied().unwrap_or("tool")),
                text.len(),
                esc(&first),
                capped(text)
            );
        }
        Entry::Denied { tool, input } => {
            let _ = writeln!(
                h,
                "<div class=\"denied\"><strong>permission denied</strong>: {}<pre>{}</pre></div>",
                esc(tool),
                capped(input)
            );
        }
        Entry::End { text, is_error } => {
            let _ = writeln!(
                h,
                "<p class=\"end\">{}: {}</p>",
                if *is_error {
                    "ended with an error"
                } else {
                    "ended"
                },
                capped(text)
            );
        }
        Entry::Note(text) => {
            let _ = writeln!(h, "<p class=\"muted\">{}</p>", capped(text));
        }
    }
}
