//! The report's per-session sections: one `<section id="s-…">` per graded
//! session, on its task's page (`pages.rs`), linked from its matrix cell,
//! with every arm's verdict, fault and
//! reason, then why it is red (the failing tests grouped by what they said,
//! and the first failure in full), the failing tests (folded: a regression
//! can fail thousands) with the tail of the last log, the paths the
//! grader left out, the tamper suspects, the run's own facts and the patch.
//!
//! Patches and logs are hostile text (an agent wrote the one and its code
//! printed the other): both are escaped and capped, like every label.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::index::{Graded, Index};
use super::markup::{esc, fault_class};
use super::pages;
use super::stats::session_cost;
use crate::model::records::{GradeRecord, SessionRecord, Verdict};
use crate::model::why::{self, Silent};
use crate::pipeline::Arm;

/// How much of a patch the page shows.
const PATCH_LINES: usize = 300;
const PATCH_BYTES: usize = 24 * 1024;

/// The sections of the sessions whose home is one task's page (by id, each
/// with its grades), under one heading.
pub(super) fn sections(
    h: &mut String,
    index: &Index<'_>,
    sessions: &BTreeMap<&str, Vec<Graded<'_>>>,
) {
    let _ = writeln!(h, "<h2 id=\"sessions\">Sessions ({})</h2>", sessions.len());
    if sessions.is_empty() {
        return;
    }
    h.push_str(
        "<p>Each graded session: its verdict on every arm (the scored one first), why (the \
         failing tests grouped by what they said, and the first failure in full), the \
         tests still failing with the end of the last log, what the grader left out, the run's \
         own facts and the patch. Reached from the cells of the report's matrix.</p>\n",
    );
    for (session, grades) in sessions {
        section(h, index, session, grades);
    }
}

fn section(h: &mut String, index: &Index<'_>, session: &str, grades: &[Graded<'_>]) {
    let mut grades = grades.to_vec();
    grades.sort_by_key(|g| g.0.arm != Arm::SCORED);
    let Some(first) = grades.first().map(|g| &g.0) else {
        return;
    };
    // `not_graded` is sorted by session: one binary search.
    let at = index
        .not_graded
        .partition_point(|(s, _)| s.as_str() < session);
    let ungraded = index
        .not_graded
        .get(at)
        .filter(|(s, _)| s == session)
        .map(|(_, why)| why.as_str());
    let _ = writeln!(
        h,
        "<section class=\"session\" id=\"{}\">\n<h3>{}</h3>\n<p>{} / {} on task <strong>{}</strong> \
             ({} track), task digest <code>{}</code>{}</p>",
        pages::anchor(session),
        esc(session),
        esc(&first.agent),
        esc(&first.model),
        esc(&first.instance_id),
        esc(&first.track),
        esc(short_digest(&first.task_digest)),
        match ungraded {
            Some(why) => format!(". <strong>Not scored</strong>: {}", esc(why)),
            None => String::new(),
        }
    );
    if super::html_transcript::has_page(index, session) {
        let _ = writeln!(
            h,
            "<p><a href=\"{}\">Transcript</a>: every turn and tool call of the run.</p>",
            esc(&pages::from_page(&pages::transcript(session)))
        );
    }
    arms(h, &grades);
    // Another arm's evidence only where it tells something new: the
    // same verdict on the same failing tests is the same story.
    for g in &grades {
        let same = |o: &GradeRecord| o.verdict == g.0.verdict && o.failing == g.0.failing;
        if g.0.arm == first.arm || !same(first) {
            evidence(h, &g.0, grades.len() > 1);
        }
    }
    let record = index.sessions.get(session).copied();
    run_facts(h, index, record, &first.model);
    patch(h, index, record);
    h.push_str("</section>\n");
}

fn short_digest(d: &str) -> &str {
    d.get(..16).unwrap_or(d)
}

/// One row per arm: the verdict and what it rests on.
fn arms(h: &mut String, grades: &[Graded<'_>]) {
    h.push_str(
        "<table>\n<tr><th>arm</th><th>verdict</th><th>fault</th><th>reason</th>\
         <th>PASS_TO_PASS</th><th>FAIL_TO_PASS</th><th>exit</th><th>reruns</th><th>sandbox</th></tr>\n",
    );
    for g in grades {
        let r = &g.0;
        let exit = |code: Option<i32>| code.map_or("–".to_owned(), |c| c.to_string());
        let checks = |word: &str, code: Option<i32>| match code {
            Some(c) => format!("{} (exit {c})", esc(word)),
            None => esc(word),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}{}<br><span class=\"muted\">{}</span></td><td><span class=\"v {}\">{}</span></td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            esc(r.arm.as_str()),
            if r.arm == Arm::SCORED {
                " (scored)"
            } else {
                ""
            },
            esc(r.policy.as_str()),
            fault_class(r.fault),
            esc(r.verdict.as_str()),
            esc(r.fault.as_str()),
            if r.detail.is_empty() {
                "–".to_owned()
            } else {
                esc(&r.detail)
            },
            checks(&r.base_check, r.base_exit),
            checks(&r.new_check, r.new_exit),
            exit(r.exit_code),
            r.reruns,
            esc(r.sandbox.as_str()),
        );
    }
    h.push_str("</table>\n");
    h.push_str(EXIT_NOTE);
}

/// What an exit code in the arms table means for the verdict.
const EXIT_NOTE: &str = "<p class=\"muted\">exit: the test runner's own exit code. It counts the \
     canary tests assay plants among the task's, some of them certified to fail, so a resolved \
     run exits non-zero too; the verdict is read from the report, test by test, never from the \
     exit code (127, the command not found, is the one code that decides one).</p>\n";

/// What the log beside a session's failing tests holds: the raw output of
/// the graded run, canaries included, whose failure count is not the
/// session's; the session's own count is said beside it.
fn log_note(r: &GradeRecord) -> String {
    let own = match r.failing.len() {
        0 if matches!(r.verdict, Verdict::Resolved | Verdict::ResolvedAfterRerun) => {
            "none of the task's tests fails".to_owned()
        }
        0 => format!(
            "no test is counted failing: its verdict, {}, rests on the reason above",
            r.verdict.as_str()
        ),
        1 => "1 of the task's tests fails (listed above)".to_owned(),
        n => format!("{n} of the task's tests fail (listed above)"),
    };
    let after = if r.reruns > 0 {
        format!(" after {} rerun(s)", r.reruns)
    } else {
        String::new()
    };
    // Whether this run carried canaries is not in the grade (`unchecked`
    // is also set when they were planted from a predictable seed): the
    // note says what holds either way.
    format!(
        "The raw log of the graded run: it also reports the canary tests planted among the \
         task's, if any (docs/security.md, \"Canaries\"), whose certified failures it counts, so \
         its totals are not the session's. For this session, {own}{after}."
    )
}

/// At most this many groups of failures lead a section; the rest are
/// counted.
const WHY_GROUPS: usize = 8;

/// What a red grade's failing tests said, first: their groups (a count and
/// the normalised headline, largest first, `why`) and the first
/// failure of the largest group in full. Nothing when no test failed.
fn why(h: &mut String, r: &GradeRecord, arm: &str) {
    let silent = |t: &str| {
        if r.not_run.iter().any(|n| n == t) {
            Silent::NotRun
        } else {
            Silent::NoMessage
        }
    };
    let groups = why::group(&r.failing, &r.said, silent);
    if groups.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<p><strong>Why</strong> ({} failing {}){arm}:</p>\n<ul class=\"why\">",
        thousands(r.failing.len()),
        if r.failing.len() == 1 {
            "test"
        } else {
            "tests"
        }
    );
    for g in groups.iter().take(WHY_GROUPS) {
        let n = g.tests.len();
        let _ = write!(
            h,
            "<li><strong>{} {}</strong>: <code>{}</code></li>",
            thousands(n),
            if n == 1 { "test" } else { "tests" },
            esc(&g.label)
        );
    }
    let rest = &groups[groups.len().min(WHY_GROUPS)..];
    if !rest.is_empty() {
        let tests: usize = rest.iter().map(|g| g.tests.len()).sum();
        let _ = write!(
            h,
            "<li class=\"muted\">{} more groups of {} tests</li>",
            rest.len(),
            thousands(tests)
        );
    }
    h.push_str("</ul>\n");
    let first = groups
        .iter()
        .flat_map(|g| &g.tests)
        .find_map(|t| Some((t, r.said.message(t)?)));
    if let Some((test, message)) = first {
        let _ = writeln!(
            h,
            "<p><strong>First failure</strong>: <code>{}</code></p>\n<pre class=\"log said\">{}</pre>",
            esc(test),
            esc(message)
        );
    }
    if r.said.over_cap > 0 {
        let _ = writeln!(
            h,
            "<p class=\"muted\">The words of {} failing tests were left out: the run's distinct \
             messages reached their cap (their groups are counted above).</p>",
            thousands(r.said.over_cap as usize)
        );
    }
}

/// `1870` as `1,870`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A list folded under `<details>`: its title and count show, its items
/// on demand (a regression can fail thousands of tests).
fn folded(h: &mut String, title: &str, items: &[String], arm: &str) {
    if items.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<details class=\"tests\"><summary><strong>{title}</strong> ({}){arm}</summary>\n<ul>",
        thousands(items.len())
    );
    for i in items {
        let _ = write!(h, "<li><code>{}</code></li>", esc(i));
    }
    h.push_str("</ul></details>\n");
}

/// Failing tests, the log's tail, excluded and reset paths, tamper suspects:
/// each only where the grade has some.
fn evidence(h: &mut String, r: &GradeRecord, name_arm: bool) {
    let arm = if name_arm {
        format!(
            " <span class=\"muted\">({} arm)</span>",
            esc(r.arm.as_str())
        )
    } else {
        String::new()
    };
    let list = |h: &mut String, title: &str, items: &[String]| {
        if items.is_empty() {
            return;
        }
        let _ = write!(
            h,
            "<p><strong>{title}</strong> ({}){arm}:</p>\n<ul>",
            items.len()
        );
        for i in items {
            let _ = write!(h, "<li><code>{}</code></li>", esc(i));
        }
        h.push_str("</ul>\n");
    };
    why(h, r, &arm);
    let ran: Vec<String> = r
        .failing
        .iter()
        .filter(|t| !r.not_run.contains(t))
        .cloned()
        .collect();
    folded(h, "Failing tests", &ran, &arm);
    folded(h, "Tests that did not run", &r.not_run, &arm);
    if let Some(t) = &r.log_tail {
        let omitted = if t.lines_omitted == 0 {
            String::new()
        } else {
            format!(", after {} lines left out", t.lines_omitted)
        };
        let receipt = r.evidence.iter().find(|e| e.what == t.of);
        let _ = writeln!(
            h,
            "<p><strong>End of the {}</strong>{arm}{omitted}{}:</p>\n<p class=\"muted\">{}</p>\n{}",
            esc(&t.of),
            receipt.map_or(String::new(), |e| format!(
                " (blob <code>{}</code>, {} bytes)",
                esc(short_digest(&e.digest)),
                e.bytes
            )),
            esc(&log_note(r)),
            if t.text.is_empty() {
                "<p class=\"muted\">(the log is empty)</p>".to_owned()
            } else {
                format!("<pre class=\"log\">{}</pre>", esc(&t.text))
            }
        );
    }
    let left_out: Vec<String> = r
        .excluded_paths
        .iter()
        .map(|p| match r.excluded_by.get(p) {
            Some(rule) => format!("{p} ({rule})"),
            None => p.clone(),
        })
        .collect();
    list(h, "Left out by the policy", &left_out);
    list(h, "Reset to the test patch", &r.reset_paths);
    list(h, "Tamper suspects", &r.tamper);
}

fn run_facts(h: &mut String, index: &Index<'_>, record: Option<&SessionRecord>, model: &str) {
    let Some(s) = record else {
        h.push_str("<p class=\"muted\">No session record.</p>\n");
        return;
    };
    let f = &s.facts;
    let opt = |v: Option<String>| v.map_or("–".to_owned(), |v| esc(&v));
    let tokens = if f.tokens.is_empty() {
        "–".to_owned()
    } else {
        let kinds: Vec<String> = f
            .tokens
            .iter()
            .map(|(k, n)| format!("{} {n}", esc(k)))
            .collect();
        format!("{} ({})", f.tokens.values().sum::<u64>(), kinds.join(", "))
    };
    let cost = if index.prices.is_empty() || f.tokens.is_empty() && f.by_model.is_empty() {
        "–".to_owned()
    } else {
        let mut unpriced = BTreeSet::new();
        let usd = session_cost(index.prices, model, f, &mut unpriced);
        let names: Vec<String> = unpriced.iter().map(|u| esc(u)).collect();
        match (usd == 0.0, names.is_empty()) {
            // Nothing priced is no cost of zero.
            (true, false) => format!("no price for {}", names.join(", ")),
            (false, false) => format!("{usd:.4} (no price for {})", names.join(", ")),
            _ => format!("{usd:.4}"),
        }
    };
    let _ = writeln!(
        h,
        "<table class=\"facts\">\n<tr><th>turns</th><th>tokens</th><th>cost (USD)</th>\
         <th>reported cost (USD)</th><th>ended</th><th>is_error</th><th>permission denials</th>\
         <th>duration (s)</th><th>models</th></tr>\n<tr><td class=\"n\">{}</td><td>{tokens}</td>\
         <td class=\"n\">{cost}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>\
         <td class=\"n\">{}</td><td>{}</td></tr>\n</table>",
        opt(f.turns.map(|t| t.to_string())),
        opt(f.reported_cost_usd.map(|c| format!("{c:.4}"))),
        opt(f.ended.clone()),
        // A claim no witness saw is marked so: it charged nothing.
        opt(f.ended_in_error().map(|e| if f.error_only_claimed() {
            format!("{e} (claimed)")
        } else {
            e.to_string()
        })),
        opt(f.permission_denials.map(|d| d.to_string())),
        opt(f.duration_ms.map(|ms| format!("{:.1}", ms as f64 / 1000.0))),
        if f.models.is_empty() {
            "–".to_owned()
        } else {
            esc(&f.models.join(", "))
        },
    );
}

/// The session's patch, capped, in a closed `<details>` (open it to read).
fn patch(h: &mut String, index: &Index<'_>, record: Option<&SessionRecord>) {
    let Some(bytes) = record.and_then(|s| index.patches.get(&s.patch)) else {
        h.push_str("<p class=\"muted\">No patch.</p>\n");
        return;
    };
    let text = String::from_utf8_lossy(bytes);
    if text.trim().is_empty() {
        h.push_str("<p><strong>Patch</strong>: empty.</p>\n");
        return;
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut shown = 0;
    let mut size = 0;
    for l in lines.iter().take(PATCH_LINES) {
        if size + l.len() + 1 > PATCH_BYTES {
            break;
        }
        size += l.len() + 1;
        shown += 1;
    }
    let shape = index
        .metrics
        .get(record.map_or("", |s| s.id.as_str()))
        .map_or(String::new(), |m| {
            format!(
                ", +{} −{} in {} file{}",
                m.lines_added,
                m.lines_removed,
                m.files_touched,
                if m.files_touched == 1 { "" } else { "s" }
            )
        });
    let more = lines.len() - shown;
    let _ = write!(
        h,
        "<details class=\"patch\"><summary><strong>Patch</strong>: {} lines{shape} \
         (blob <code>{}</code>)</summary>\n<pre>{}</pre>",
        lines.len(),
        esc(short_digest(
            &record.map_or(String::new(), |s| s.patch.clone())
        )),
        esc(&lines[..shown].join("\n"))
    );
    if more > 0 {
        let _ = write!(
            h,
            "<p class=\"muted\">… {more} more lines (the whole patch is the session's blob)</p>"
        );
    }
    h.push_str("</details>\n");
}

#[cfg(test)]
mod tests {
    use super::super::tests::grade;
    use super::log_note;

    #[test]
    fn a_resolved_sessions_log_says_its_failures_are_the_canaries() {
        let (mut r, _) = grade(
            "a/s.json",
            "a",
            "m",
            "exclude",
            "resolved_after_rerun",
            "flaky_test",
        );
        r.reruns = 1;
        let note = log_note(&r);
        assert!(note.contains("canary tests"), "{note}");
        assert!(
            note.ends_with("For this session, none of the task's tests fails after 1 rerun(s)."),
            "{note}"
        );
    }

    #[test]
    fn an_unresolved_sessions_log_gives_its_own_count() {
        let (r, _) = grade("a/s.json", "a", "m", "exclude", "unresolved", "agent");
        let note = log_note(&r);
        assert!(
            note.ends_with("For this session, 2 of the task's tests fail (listed above)."),
            "{note}"
        );
    }
}
