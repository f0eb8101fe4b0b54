//! The app tasks in the release: `summary.json`'s `apps` (per task its
//! controls; per agent/model the share of its sessions that reached and
//! passed each layer, whose fault the failures were, and their effort),
//! `results.csv`'s rows of app sessions (arm `app`, a `layers` column),
//! and `report.html`'s section: a layer strip per session and the failing
//! browser step's screenshot. Only a certified task's sessions score; the
//! others are listed with why. Absent when the pipeline has no app task.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::index::Index;
use super::markup::{esc, figure};
use super::model::{AppAgent, AppTask, Apps};
use super::paths::segment;
use super::sources::{At, Name, Source};
use super::stats::{agent_key, mean};
use crate::model::rules::app::{AppGradeRecord, Layer, LayerVerdict};

/// The first layer that failed, when one did.
fn failed_at(g: &AppGradeRecord) -> Option<(Layer, String)> {
    let grade = g.grade.as_ref()?;
    grade
        .layers
        .iter()
        .find(|l| l.verdict == LayerVerdict::Fail)
        .map(|l| (l.layer, l.fault.to_string()))
}

/// Whether `g` reached `layer` and whether it passed it.
fn at_layer(g: &AppGradeRecord, layer: Layer) -> (bool, bool) {
    let Some(grade) = &g.grade else {
        return (false, false);
    };
    match grade.layers.iter().find(|l| l.layer == layer) {
        Some(l) => (
            l.verdict != LayerVerdict::Skipped,
            l.verdict == LayerVerdict::Pass,
        ),
        None => (false, false),
    }
}

/// `summary.apps`, its numbers' sources recorded; `None` without app tasks.
pub(super) fn summary(at: &mut At<'_>, index: &Index<'_>) -> Option<Apps> {
    if index.app_tasks.is_empty() && index.app_grades.is_empty() {
        return None;
    }
    let mut apps = Apps::default();
    for (c, key) in index.app_tasks {
        apps.tasks.insert(
            c.task.clone(),
            AppTask {
                certified: c.controls.certified,
                uncertified_because: c.controls.reason.clone(),
                flaky_probes: c.controls.flaky_probes.clone(),
                flaky_flows: c.controls.flaky_flows.clone(),
                digest: key.clone(),
            },
        );
    }
    let mut groups: BTreeMap<String, Vec<(&AppGradeRecord, &str)>> = BTreeMap::new();
    for (g, key) in index.app_grades {
        if let Some(why) = &g.not_graded {
            apps.not_scored.push((g.session.clone(), why.clone()));
            continue;
        }
        groups
            .entry(agent_key(&g.agent, &g.model))
            .or_default()
            .push((g, key.as_str()));
    }
    apps.not_scored.sort();
    let mut agents = at.at("agents");
    for (agent, grades) in groups {
        let mut o = agents.at(&agent);
        let all = Source {
            grades: grades.iter().map(|(_, k)| Name::from(*k)).collect(),
            sessions: grades
                .iter()
                .map(|(g, _)| Name::from(g.session.as_str()))
                .collect(),
            ..Source::default()
        };
        let n = grades.len() as u64;
        let mut a = AppAgent {
            sessions: o.count("sessions", n, &all),
            ..AppAgent::default()
        };
        let share = |k: usize| (n > 0).then(|| k as f64 / n as f64);
        {
            let mut reached = o.at("reached");
            for layer in Layer::ALL {
                let k = grades.iter().filter(|(g, _)| at_layer(g, *layer).0).count();
                let v = reached.float(layer.as_str(), share(k), &all);
                a.reached.insert(layer.to_string(), v);
            }
        }
        {
            let mut passed = o.at("passed");
            for layer in Layer::ALL {
                let k = grades.iter().filter(|(g, _)| at_layer(g, *layer).1).count();
                let v = passed.float(layer.as_str(), share(k), &all);
                a.passed.insert(layer.to_string(), v);
            }
        }
        {
            let mut failed = o.at("failed");
            for (layer, fault) in grades.iter().filter_map(|(g, _)| failed_at(g)) {
                let faults = a.failed.entry(layer.to_string()).or_default();
                *faults.entry(fault).or_default() += 1;
            }
            for (layer, faults) in &a.failed {
                let mut f = failed.at(layer);
                for (fault, k) in faults {
                    let from: Vec<&(&AppGradeRecord, &str)> = grades
                        .iter()
                        .filter(|(g, _)| {
                            failed_at(g).is_some_and(|(l, x)| l.as_str() == layer && &x == fault)
                        })
                        .collect();
                    let src = Source {
                        grades: from.iter().map(|(_, k)| Name::from(*k)).collect(),
                        ..Source::default()
                    };
                    f.count(fault, *k, &src);
                }
            }
        }
        let effort = |f: &dyn Fn(&AppGradeRecord) -> Option<u64>| {
            let values: Vec<f64> = grades
                .iter()
                .filter_map(|(g, _)| f(g))
                .map(|v| v as f64)
                .collect();
            mean(values)
        };
        a.mean_turns = o.float("mean_turns", effort(&|g| g.effort.turns), &all);
        a.mean_tokens = o.float("mean_tokens", effort(&|g| g.effort.tokens), &all);
        a.mean_duration_ms = o.float("mean_duration_ms", effort(&|g| g.effort.duration_ms), &all);
        apps.agents.insert(agent, a);
    }
    Some(apps)
}

/// `layer=verdict` for every layer, `;`-joined.
fn strip_text(g: &AppGradeRecord) -> String {
    g.grade
        .as_ref()
        .map(|grade| {
            grade
                .layers
                .iter()
                .map(|l| format!("{}={}", l.layer, l.verdict))
                .collect::<Vec<_>>()
                .join(";")
        })
        .unwrap_or_default()
}

/// results.csv's rows of the app sessions: `width` fields, the session,
/// task (as `instance_id`), track `app`, agent, model, arm `app`, then the
/// verdict (`completed`, `failed` or `not_graded`), the fault and the
/// failing layer's detail; the layers in the `layers` column, last.
/// `column` gives a fixed column's position.
pub(super) fn csv_rows(
    index: &Index<'_>,
    width: usize,
    column: &dyn Fn(&str) -> Option<usize>,
) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = index
        .app_grades
        .iter()
        .map(|(g, key)| {
            let (verdict, fault, detail) = match (&g.not_graded, &g.grade) {
                (Some(why), _) => ("not_graded".to_owned(), String::new(), why.clone()),
                (None, Some(grade)) if grade.completed => {
                    ("completed".to_owned(), "none".to_owned(), String::new())
                }
                (None, Some(grade)) => (
                    "failed".to_owned(),
                    grade.fault.to_string(),
                    grade
                        .layers
                        .iter()
                        .find(|l| l.verdict == LayerVerdict::Fail)
                        .map(|l| format!("{}: {}", l.layer, l.detail))
                        .unwrap_or_default(),
                ),
                (None, None) => ("not_graded".to_owned(), String::new(), String::new()),
            };
            let mut row = vec![String::new(); width];
            let head = [
                g.session.clone(),
                g.task.clone(),
                "app".to_owned(),
                g.agent.clone(),
                g.model.clone(),
                "app".to_owned(),
                String::new(),
                verdict,
                fault,
                detail,
            ];
            for (cell, value) in row.iter_mut().zip(head) {
                *cell = value;
            }
            let named = |row: &mut Vec<String>, name: &str, value: String| {
                if let Some(i) = column(name) {
                    row[i] = value;
                }
            };
            named(&mut row, "grade_digest", key.clone());
            named(&mut row, "turns", opt(g.effort.turns));
            named(&mut row, "tokens_total", opt(g.effort.tokens));
            named(&mut row, "duration_ms", opt(g.effort.duration_ms));
            let sandbox = if g.image.is_some() { "docker" } else { "bwrap" };
            named(&mut row, "sandbox", sandbox.to_owned());
            row.push(strip_text(g));
            row
        })
        .collect();
    rows.sort();
    rows
}

fn opt(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// Per agent/model: its sessions, the share passing each layer and its mean
/// effort, each figure named by its path in summary.json.
fn agents_table(h: &mut String, apps: &Apps) {
    if apps.agents.is_empty() {
        return;
    }
    h.push_str("<table>\n<tr><th>agent / model</th><th>sessions</th>");
    for layer in Layer::ALL {
        let _ = write!(h, "<th>{layer} passed</th>");
    }
    h.push_str("<th>mean turns</th><th>mean tokens</th></tr>\n");
    let share = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |x| format!("{:.0}%", x * 100.0));
    let mean = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |x| format!("{x:.1}"));
    for (agent, a) in &apps.agents {
        let path = |rest: &str| format!("summary.apps.agents{}{rest}", segment(agent));
        let _ = write!(
            h,
            "<tr><td>{}</td>{}",
            esc(agent),
            figure(&path(".sessions"), &a.sessions.to_string())
        );
        for layer in Layer::ALL {
            let v = a.passed.get(layer.as_str()).copied().flatten();
            h.push_str(&figure(
                &path(&format!(".passed{}", segment(layer.as_str()))),
                &share(v),
            ));
        }
        let _ = writeln!(
            h,
            "{}{}</tr>",
            figure(&path(".mean_turns"), &mean(a.mean_turns)),
            figure(&path(".mean_tokens"), &mean(a.mean_tokens))
        );
    }
    h.push_str("</table>\n");
}

/// report.html's section: per app task its controls, then per session a
/// strip of its layers and, where the browser failed, the failing step's
/// screenshot (inline: the report fetches nothing).
pub(super) fn section(h: &mut String, index: &Index<'_>, apps: Option<&Apps>) {
    if index.app_tasks.is_empty() && index.app_grades.is_empty() {
        return;
    }
    if let Some(apps) = apps {
        agents_table(h, apps);
    }
    h.push_str("<h2 id=\"apps\">App tasks</h2>\n<table>\n<tr><th>task</th><th>controls</th><th>flaky</th></tr>\n");
    let mut tasks: Vec<_> = index.app_tasks.iter().collect();
    tasks.sort_by(|a, b| a.0.task.cmp(&b.0.task));
    for (c, _) in tasks {
        let flaky: Vec<&String> = c
            .controls
            .flaky_probes
            .iter()
            .chain(&c.controls.flaky_flows)
            .collect();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.task),
            if c.controls.certified {
                "certified".to_owned()
            } else {
                format!(
                    "uncertified: {}",
                    esc(c.controls.reason.as_deref().unwrap_or(""))
                )
            },
            esc(&flaky
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "))
        );
    }
    h.push_str("</table>\n<table>\n<tr><th>session</th><th>task</th><th>agent</th>");
    for layer in Layer::ALL {
        let _ = write!(h, "<th>{layer}</th>");
    }
    h.push_str("<th>fault</th><th>turns</th><th>tokens</th></tr>\n");
    let mut grades: Vec<_> = index.app_grades.iter().collect();
    grades.sort_by(|a, b| a.0.session.cmp(&b.0.session));
    for (g, _) in grades {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td>",
            esc(&g.session),
            esc(&g.task),
            esc(&agent_key(&g.agent, &g.model))
        );
        for layer in Layer::ALL {
            let l = g
                .grade
                .as_ref()
                .and_then(|grade| grade.layers.iter().find(|l| l.layer == *layer));
            let (word, style, title) = match l {
                Some(l) if l.verdict == LayerVerdict::Pass => {
                    ("pass", "background:#cfc", String::new())
                }
                Some(l) if l.verdict == LayerVerdict::Fail => (
                    "fail",
                    "background:#fcc",
                    format!("{}: {}", l.fault, l.detail),
                ),
                _ => ("–", "color:#888", String::new()),
            };
            let _ = write!(
                h,
                "<td style=\"{style}\" title=\"{}\">{word}</td>",
                esc(&title)
            );
        }
        let fault = g
            .grade
            .as_ref()
            .map(|grade| grade.fault.to_string())
            .unwrap_or_default();
        let _ = writeln!(
            h,
            "<td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&fault),
            opt(g.effort.turns),
            opt(g.effort.tokens)
        );
        if let Some(shot) = &g.failing_shot
            && let Some(png) = index.shots.get(&shot.png)
        {
            let _ = writeln!(
                h,
                "<tr><td colspan=\"13\"><details><summary>{} step {}: {}</summary><img alt=\"the failing step\" width=\"640\" src=\"data:image/png;base64,{}\"><p class=\"muted\">blob {}</p></details></td></tr>",
                esc(&shot.flow),
                shot.step + 1,
                esc(&shot.detail),
                super::pages::base64(png),
                esc(&shot.png)
            );
        }
    }
    h.push_str("</table>\n");
}
