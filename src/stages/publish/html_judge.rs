//! The report's judge section, rendered from [`Summary`] (so the page never
//! disagrees with summary.json).

use std::fmt::Write as _;

use assay_judge::Criterion;

use super::index::Index;
use super::markup::esc;
use super::model::Summary;
use super::pages::{At, session_link};

/// The report's judge section, from summary.json.
pub(super) fn section(h: &mut String, index: &Index<'_>, summary: &Summary) {
    let Some(judges) = &summary.judges else {
        return;
    };
    h.push_str("<h2>Judge readings</h2>\n<p>Blind LLM reviews of the graded patches (docs/judge.md). \
        Scores 1–5; a session's score is the mean of its samples; intervals are Student t 95% over sessions.</p>\n");
    let pct = |v: Option<f64>| {
        v.map(|x| format!("{:.1}%", x * 100.0))
            .unwrap_or_else(|| "–".to_owned())
    };
    for (name, j) in judges {
        let _ = writeln!(
            h,
            "<h3>{}</h3>\n<p><code>{}</code> model <code>{}</code>, {} sample(s){}, settings digest <code>{}</code>.</p>",
            esc(name),
            esc(&j.api),
            esc(&j.model),
            j.samples,
            if j.pairwise {
                ", pairwise in both orders"
            } else {
                ""
            },
            esc(&j.settings_digest),
        );
        if let Some(why) = &j.skipped {
            let _ = writeln!(h, "<p><strong>Skipped:</strong> {}.</p>", esc(why));
            continue;
        }
        let _ = writeln!(
            h,
            "<p>{} readings, {} without a usable answer, {} not judged. Sample agreement {}; \
             position inconsistency {} of {} pairs ({}); unverified quotes {}; low scores without a quote {}.</p>",
            j.readings,
            j.no_usable_answer,
            j.not_judged,
            pct(j.sample_agreement.rate),
            j.position_inconsistency.inconsistent,
            j.position_inconsistency.pairs,
            pct(j.position_inconsistency.rate),
            pct(j.quotes.unverified_rate),
            pct(j.quotes.missing_rate),
        );
        h.push_str("<table>\n<tr><th>agent / model</th><th>sessions</th>");
        for c in Criterion::ALL {
            let _ = write!(h, "<th>{}</th>", c.name());
        }
        h.push_str("<th>unverified quotes</th><th>preferred</th></tr>\n");
        for a in summary.agents.values() {
            let Some(r) = a.judge.as_ref().and_then(|by| by.get(name)) else {
                continue;
            };
            let _ = write!(
                h,
                "<tr><td>{} / {}</td><td class=\"n\">{}</td>",
                esc(&a.agent),
                esc(&a.model),
                r.sessions
            );
            for c in Criterion::ALL {
                let m = r.criteria.get(c.name());
                let text = match m.map_or((None, None, None), |m| (m.mean, m.lo, m.hi)) {
                    (Some(x), Some(lo), Some(hi)) => format!("{x:.2} [{lo:.2}, {hi:.2}]"),
                    (Some(x), _, _) => format!("{x:.2}"),
                    _ => "–".to_owned(),
                };
                let _ = write!(h, "<td class=\"n\">{text}</td>");
            }
            let _ = writeln!(
                h,
                "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                pct(r.quotes.unverified_rate),
                pct(r.pairwise.preferred_rate)
            );
        }
        h.push_str("</table>\n");
        let flagged = &j.flagged;
        if !flagged.is_empty() {
            h.push_str("<table>\n<tr><th>flag</th><th>session</th><th>agent / model</th><th>task</th><th>criterion</th><th>sample</th></tr>\n");
            const SHOWN: usize = 50;
            for f in flagged.iter().take(SHOWN) {
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{} / {}</td><td>{} ({})</td><td>{}</td><td class=\"n\">{}</td></tr>",
                    esc(&f.flag),
                    session_link(index, &f.session, At::Report),
                    esc(&f.agent),
                    esc(&f.model),
                    esc(&f.instance_id),
                    esc(&f.track),
                    esc(&f.criterion),
                    f.sample
                );
            }
            h.push_str("</table>\n");
            if flagged.len() > SHOWN {
                let _ = writeln!(
                    h,
                    "<p class=\"muted\">… and {} more flags (summary.json lists them all).</p>",
                    flagged.len() - SHOWN
                );
            }
        }
    }
}
