//! The report's judge section, rendered from [`Summary`] (so the page never
//! disagrees with summary.json).

use std::fmt::Write as _;

use assay_judge::Criterion;

use super::index::Index;
use super::markup::{agent_path, esc, figure, named};
use super::model::Summary;
use super::pages::{At, session_link};
use super::paths::segment;

/// A rate as a percentage, `–` when there is none.
fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:.1}%", x * 100.0))
        .unwrap_or_else(|| "–".to_owned())
}

/// The report's judge section, from summary.json.
pub(super) fn section(h: &mut String, index: &Index<'_>, summary: &Summary) {
    let Some(judges) = &summary.judges else {
        return;
    };
    h.push_str("<h2>Judge readings</h2>\n<p>Blind LLM reviews of the graded patches (docs/judge.md). \
        Scores 1–5; a session's score is the mean of its samples; intervals are Student t 95% over sessions.</p>\n");
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
        let judge = format!("summary.judges{}", segment(name));
        let at = |field: &str| format!("{judge}.{field}");
        let _ = writeln!(
            h,
            "<p>{} readings, {} without a usable answer, {} not judged. Sample agreement {}; \
             position inconsistency {} of {} pairs ({}); unverified quotes {}; low scores without a quote {}.</p>",
            named(&at("readings"), &j.readings.to_string()),
            named(&at("no_usable_answer"), &j.no_usable_answer.to_string()),
            named(&at("not_judged"), &j.not_judged.to_string()),
            named(&at("sample_agreement.rate"), &pct(j.sample_agreement.rate)),
            named(
                &at("position_inconsistency.inconsistent"),
                &j.position_inconsistency.inconsistent.to_string()
            ),
            named(
                &at("position_inconsistency.pairs"),
                &j.position_inconsistency.pairs.to_string()
            ),
            named(
                &at("position_inconsistency.rate"),
                &pct(j.position_inconsistency.rate)
            ),
            named(
                &at("quotes.unverified_rate"),
                &pct(j.quotes.unverified_rate)
            ),
            named(&at("quotes.missing_rate"), &pct(j.quotes.missing_rate)),
        );
        agents_table(h, summary, name);
        let flagged = &j.flagged;
        if !flagged.is_empty() {
            h.push_str("<table>\n<tr><th>flag</th><th>session</th><th>agent / model</th><th>task</th><th>criterion</th><th>sample</th></tr>\n");
            const SHOWN: usize = 50;
            for f in flagged.iter().take(SHOWN) {
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{} / {}</td><td>{} ({})</td><td>{}</td><td>{}</td></tr>",
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

/// Per agent/model: one judge's readings of its sessions, by criterion,
/// each figure named by its path in summary.json.
fn agents_table(h: &mut String, summary: &Summary, name: &str) {
    h.push_str("<table>\n<tr><th>agent / model</th><th>sessions</th>");
    for c in Criterion::ALL {
        let _ = write!(h, "<th>{}</th>", c.name());
    }
    h.push_str("<th>unverified quotes</th><th>preferred</th></tr>\n");
    for a in summary.agents.values() {
        let Some(r) = a.judge.as_ref().and_then(|by| by.get(name)) else {
            continue;
        };
        let path = |rest: &str| agent_path(a, &format!(".judge{}.{rest}", segment(name)));
        let _ = write!(
            h,
            "<tr><td>{} / {}</td>{}",
            esc(&a.agent),
            esc(&a.model),
            figure(&path("sessions"), &r.sessions.to_string())
        );
        for c in Criterion::ALL {
            let m = r.criteria.get(c.name());
            let text = match m.map_or((None, None, None), |m| (m.mean, m.lo, m.hi)) {
                (Some(x), Some(lo), Some(hi)) => format!("{x:.2} [{lo:.2}, {hi:.2}]"),
                (Some(x), _, _) => format!("{x:.2}"),
                _ => "–".to_owned(),
            };
            let mean = path(&format!("criteria{}.mean", segment(c.name())));
            h.push_str(&figure(&mean, &text));
        }
        let _ = writeln!(
            h,
            "{}{}</tr>",
            figure(
                &path("quotes.unverified_rate"),
                &pct(r.quotes.unverified_rate)
            ),
            figure(
                &path("pairwise.preferred_rate"),
                &pct(r.pairwise.preferred_rate)
            )
        );
    }
    h.push_str("</table>\n");
}
