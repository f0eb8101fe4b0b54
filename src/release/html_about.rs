//! The report's "about" part: what the release is (provenance) and how it
//! was reached (the funnel of pull requests, Harbor tasks and `[[instances]]`
//! rows), every count with its unit and named by its path in funnel.json or
//! summary.json.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::index::Index;
use super::markup::{esc, figure, named};
use super::model::{Funnel, HarborFunnel, InstanceFunnel, Summary, SweFunnel};
use super::paths::segment;

/// What the release is (provenance) and how it was reached (the funnel),
/// every count with its unit: the funnel counts PRs until tasks are made.
pub(super) fn about(h: &mut String, index: &Index<'_>, summary: &Summary) {
    provenance(h, index);
    let f = &index.about.funnel;
    funnel(h, index, summary, f);
    if let Some(harbor) = &f.harbor {
        harbor_funnel(h, harbor);
        if let Some(swe) = &harbor.assay_tasks {
            harbor_assay_tasks(h, swe);
        }
    }
    if let Some(instances) = &f.instances {
        instances_table(h, instances);
    }
    super::instances::funnel_link(h, summary.instances.as_ref());
}

/// The provenance table: the release node, where its digest is, the assay
/// version and commit, the pipeline's digest and the release's date.
fn provenance(h: &mut String, index: &Index<'_>) {
    let about = index.about;
    h.push_str("<table class=\"about\">\n");
    let row = |h: &mut String, what: &str, value: String| {
        let _ = writeln!(h, "<tr><th>{what}</th><td>{value}</td></tr>");
    };
    if !about.release_node.is_empty() {
        row(
            h,
            "release node",
            format!("<code>{}</code>", esc(&about.release_node)),
        );
    }
    row(
        h,
        "release digest",
        "in <code>manifest.json</code> (<code>release_digest</code>): it covers this page, \
         so the page cannot hold it; <code>assay verify</code> checks both"
            .to_owned(),
    );
    if let Some(p) = &about.provenance {
        row(
            h,
            "assay",
            format!(
                "{}, commit <code>{}</code>",
                esc(&p.assay_version),
                esc(&p.assay_commit)
            ),
        );
        row(
            h,
            "pipeline.toml",
            format!("<code>{}</code> (blake3)", esc(&p.pipeline)),
        );
    }
    row(h, "date", date(index));
    h.push_str("</table>\n");
}

/// The funnel of the pull requests' tasks, from the candidates to the
/// sessions graded.
fn funnel(h: &mut String, index: &Index<'_>, summary: &Summary, f: &Funnel) {
    // The pull requests' tasks: a Deep-SWE task taken in from a Harbor
    // dataset is counted in the Harbor tables below.
    let mined_certified = f.tasks_released.saturating_sub(f.uncertified);
    let sessions: BTreeSet<&str> = index.grades.iter().map(|g| g.0.session.as_str()).collect();
    h.push_str("<h2>Funnel</h2>\n<table>\n");
    // The sessions graded are counted by origin in summary.json `trials`;
    // with one origin that count is this row's.
    // With none graded there is no `trials` to name: the cell is a
    // plain 0.
    let graded = match summary
        .trials
        .as_ref()
        .map(|t| t.keys().collect::<Vec<_>>())
    {
        Some(origins) if origins.len() == 1 => figure(
            &format!("summary.trials{}.graded", segment(origins[0])),
            &sessions.len().to_string(),
        ),
        Some(_) => figure("summary.trials", &sessions.len().to_string()),
        None => format!("<td>{}</td>", sessions.len()),
    };
    let _ = writeln!(
        h,
        "<tr><th>PRs merged (candidates)</th>{}<td></td></tr>\n\
         <tr><th>PRs eligible</th>{}<td>declined{}</td></tr>\n\
         <tr><th>PRs screened</th>{}<td></td></tr>\n\
         <tr><th>PRs certified</th>{}<td>with at least one certified task{}</td></tr>\n\
         <tr><th>tasks released</th>{}<td>{} certified, {} uncertified{}; \
         {} awaiting a statement (not released)</td></tr>\n\
         <tr><th>sessions graded</th>{}<td>{} scored; {} not graded</td></tr>",
        figure("funnel.candidates", &f.candidates.to_string()),
        figure("funnel.eligible", &f.eligible.to_string()),
        reasons(&f.declined),
        figure("funnel.screened", &f.screened.to_string()),
        figure("funnel.certified", &f.certified.to_string()),
        if f.awaiting_statement_certified > 0 {
            format!(
                "; {} more certified, awaiting a statement",
                f.awaiting_statement_certified
            )
        } else {
            String::new()
        },
        figure("funnel.tasks_released", &f.tasks_released.to_string()),
        mined_certified,
        f.uncertified,
        reasons(&f.uncertified_because),
        f.awaiting_statement,
        graded,
        index.groups.values().map(Vec::len).sum::<usize>(),
        summary.not_graded.total,
    );
    h.push_str("</table>\n");
}

/// The Harbor tasks' funnel: screened, certified and uncertified (by
/// reason).
fn harbor_funnel(h: &mut String, harbor: &HarborFunnel) {
    let _ = writeln!(
        h,
        "<h3>Harbor tasks</h3>\n<table>\n\
         <tr><th>tasks screened</th>{}<td>no-op and oracle read in fresh containers</td></tr>\n\
         <tr><th>tasks certified</th>{}<td>{}</td></tr>\n\
         <tr><th>tasks uncertified</th>{}<td>{}{}</td></tr>\n</table>",
        figure("funnel.harbor.tasks", &harbor.tasks.to_string()),
        figure("funnel.harbor.certified", &harbor.certified.to_string()),
        harbor
            .certified_tasks
            .iter()
            .map(|t| format!("<code>{}</code>", esc(t)))
            .collect::<Vec<_>>()
            .join(", "),
        figure("funnel.harbor.uncertified", &harbor.uncertified.to_string()),
        harbor
            .uncertified_tasks
            .iter()
            .map(|(t, why)| {
                let words: BTreeSet<&str> = why
                    .iter()
                    .map(|w| w.split(':').next().unwrap_or(w))
                    .collect();
                let words: Vec<&str> = words.into_iter().collect();
                format!("<code>{}</code> ({})", esc(t), esc(&words.join(", ")))
            })
            .collect::<Vec<_>>()
            .join(", "),
        if harbor.uncertified_because.is_empty() {
            String::new()
        } else {
            format!(
                "<br><span class=\"muted\">by reason, a task counted under each of its reasons:</span>{}",
                reasons(&harbor.uncertified_because)
            )
        },
    );
}

/// The Harbor tasks taken in as assay tasks (Deep-SWE-shaped): taken in,
/// screened by assay's own controls, certified, uncertified.
fn harbor_assay_tasks(h: &mut String, swe: &SweFunnel) {
    let _ = writeln!(
        h,
        "<h3>Harbor tasks as assay tasks (Deep-SWE-shaped)</h3>\n<table>\n\
         <tr><th>tasks taken in</th>{}<td>declined{}</td></tr>\n\
         <tr><th>tasks screened</th>{}<td>by assay's own controls: base, tests, gold</td></tr>\n\
         <tr><th>tasks certified</th>{}<td>{}</td></tr>\n\
         <tr><th>tasks uncertified</th>{}<td>{}</td></tr>\n</table>",
        figure("funnel.harbor.assay_tasks.tasks", &swe.tasks.to_string()),
        reasons(&swe.declined),
        figure(
            "funnel.harbor.assay_tasks.screened",
            &swe.screened.to_string()
        ),
        figure(
            "funnel.harbor.assay_tasks.certified",
            &swe.certified.to_string()
        ),
        swe.certified_tasks
            .iter()
            .map(|t| format!("<code>{}</code>", esc(t)))
            .collect::<Vec<_>>()
            .join(", "),
        figure(
            "funnel.harbor.assay_tasks.uncertified",
            &swe.uncertified.to_string()
        ),
        reasons(&swe.uncertified_because),
    );
}

/// ` (word n, word n)`, muted: counts by reason; empty when none.
fn reasons(m: &BTreeMap<String, usize>) -> String {
    let parts: Vec<String> = m.iter().map(|(k, n)| format!("{} {n}", esc(k))).collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" <span class=\"muted\">({})</span>", parts.join(", "))
    }
}

/// The `[[instances]]` rows' table of the funnel: rows, images found,
/// then as far as assay's own controls took their tasks.
fn instances_table(h: &mut String, i: &InstanceFunnel) {
    let codes = |names: &[String]| {
        names
            .iter()
            .map(|t| format!("<code>{}</code>", esc(t)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let t = &i.tasks;
    let _ = writeln!(
        h,
        "<h3>Instance tasks ([[instances]] rows)</h3>\n<table>\n\
         <tr><th>rows read</th>{}<td>{} unreadable {}</td></tr>\n\
         <tr><th>images found</th>{}<td>declined{}</td></tr>\n\
         <tr><th>tasks screened</th>{}<td>by assay's own controls: base, tests, gold</td></tr>\n\
         <tr><th>tasks certified</th>{}<td>{}</td></tr>\n\
         <tr><th>tasks uncertified</th>{}<td>{}</td></tr>\n</table>",
        figure("funnel.instances.rows", &i.rows.to_string()),
        named("funnel.instances.unreadable", &i.unreadable.to_string()),
        codes(&i.unreadable_rows),
        figure("funnel.instances.images_found", &i.images_found.to_string()),
        reasons(&t.declined),
        figure("funnel.instances.tasks.screened", &t.screened.to_string()),
        figure("funnel.instances.tasks.certified", &t.certified.to_string()),
        codes(&t.certified_tasks),
        figure(
            "funnel.instances.tasks.uncertified",
            &t.uncertified.to_string()
        ),
        reasons(&t.uncertified_because),
    );
}

/// The release's date. The page reads no clock (it is rebuilt byte for
/// byte from its inputs): its date is the data's, the newest merge among
/// the released mined tasks or the newest change of a Harbor task folder,
/// whichever is later.
fn date(index: &Index<'_>) -> String {
    let merged = index
        .tasks
        .iter()
        .filter(|(t, _)| !index.harbor_screens.contains_key(t.instance_id.as_str()))
        .map(|(t, _)| t.created_at.as_str())
        .filter(|d| !d.is_empty())
        .max()
        .map(|d| (d, "the newest merge of a released task"));
    let changed = index
        .about
        .harbor_changed
        .as_deref()
        .map(|d| (d, "the newest change of a Harbor task folder"));
    match merged.into_iter().chain(changed).max() {
        Some((d, what)) => format!("{}, {what}", esc(d)),
        None => "–".to_owned(),
    }
}
