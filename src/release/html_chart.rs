//! The report's chart: the resolved rate of each agent/model as a
//! horizontal bar with its Wilson interval as a whisker (inline SVG).

use std::fmt::Write as _;

use super::markup::{agent_path, esc, label, rate_text};
use super::model::Agent;

const LABEL_W: f64 = 260.0;
const BAR_W: f64 = 400.0;
const ROW_H: f64 = 26.0;

/// Horizontal bars, width ∝ rate, with the Wilson interval as a whisker.
pub(super) fn bars(h: &mut String, agents: &[&Agent]) {
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
            esc(&short(&format!("{} / {}", a.agent, a.model)))
        );
        match (a.resolved_rate, a.resolved_rate_lo, a.resolved_rate_hi) {
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
                    "<text x=\"{:.1}\" y=\"{:.1}\"><title>{}</title>{} n={}</text>",
                    LABEL_W + BAR_W + 8.0,
                    mid + 4.0,
                    esc(&agent_path(a, ".resolved_rate")),
                    rate_text(&a.rate()),
                    a.n
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
