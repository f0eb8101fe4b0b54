//! The dataset-health report of SWE-bench-family instances
//! (docs/instances.md, "The dataset-health report"): `summary.json`'s
//! `instances` and report.html's "Dataset health" section. Per instance,
//! whether assay's controls certify it and why not, every way the
//! dataset's lists disagree with assay's readings, the flaky tests found
//! and the wall time of each control reading; per repository and over
//! all, the same counted. Every number's source is the task node of its
//! instances. Absent without `[[instances]]`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::index::Index;
use super::markup::{esc, figure, named};
use super::model::{DatasetHealth, HealthCounts, InstanceHealth};
use super::paths::segment;
use super::sources::{At, Name, Source};
use crate::model::instances::DisagreementKind;
use crate::model::records::{TaskRecord, TaskStatus};

/// `summary.instances`, its numbers' sources recorded; `None` when no
/// task of the release is an instance's.
pub(super) fn summary(at: &mut At<'_>, index: &Index<'_>) -> Option<DatasetHealth> {
    let instances: Vec<(&TaskRecord, &str)> = index
        .tasks
        .iter()
        .filter(|(t, _)| t.dataset.is_some())
        .copied()
        .collect();
    if instances.is_empty() {
        return None;
    }
    let mut health = DatasetHealth::default();
    {
        let mut tasks = at.at("tasks");
        for (t, digest) in &instances {
            let one = instance(&mut tasks.at(&t.instance_id), index, t, digest);
            health.tasks.insert(t.instance_id.clone(), one);
        }
    }
    let mut by_repo: BTreeMap<&str, Vec<(&InstanceHealth, &str)>> = BTreeMap::new();
    for (t, digest) in &instances {
        by_repo
            .entry(t.repo.as_str())
            .or_default()
            .push((&health.tasks[&t.instance_id], *digest));
    }
    let mut repos = BTreeMap::new();
    {
        let mut at_repos = at.at("repos");
        for (repo, members) in &by_repo {
            repos.insert((*repo).to_owned(), counts(&mut at_repos.at(repo), members));
        }
    }
    let all: Vec<(&InstanceHealth, &str)> = by_repo.into_values().flatten().collect();
    health.total = counts(&mut at.at("total"), &all);
    health.repos = repos;
    Some(health)
}

/// One instance's health from its task record and its readings.
fn instance(o: &mut At<'_>, index: &Index<'_>, t: &TaskRecord, digest: &str) -> InstanceHealth {
    let from = Source {
        tasks: [Name::from(digest)].into(),
        ..Source::default()
    };
    let lists = t.dataset.clone().unwrap_or_default();
    let screened = t.status != TaskStatus::Declined;
    // An instance declined before its screen has no reading to disagree
    // with (its task record lists none; one cached before that rule may).
    let disagreeing = if screened {
        lists.disagreements
    } else {
        Vec::new()
    };
    let mut disagreements = BTreeMap::new();
    {
        let mut at_kinds = o.at("disagreements");
        for kind in DisagreementKind::ALL {
            let n = disagreeing.iter().filter(|d| d.kind == kind).count() as u64;
            disagreements.insert(
                kind.as_str().to_owned(),
                at_kinds.count(kind.as_str(), n, &from),
            );
        }
    }
    let mut seconds: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    {
        let mut at_seconds = o.at("seconds");
        for r in index
            .instance_readings
            .iter()
            .filter(|r| r.task == t.instance_id)
        {
            let reading = format!("r{}", r.reading);
            let mut state = at_seconds.at(&r.state);
            if let Some(s) = state.float(&reading, r.seconds, &from) {
                seconds
                    .entry(r.state.clone())
                    .or_default()
                    .insert(reading, s);
            }
        }
    }
    let (dataset, instance_id) = t
        .instance_id
        .split_once('/')
        .unwrap_or(("", &t.instance_id));
    InstanceHealth {
        dataset: dataset.to_owned(),
        instance_id: instance_id.to_owned(),
        family: lists.family,
        repo: t.repo.clone(),
        screened,
        certified: t.certified,
        uncertified_because: t.uncertified_because.clone(),
        disagreements,
        disagreeing,
        flaky_tests: o.count("flaky_tests", t.flaky.len() as u64, &from),
        flaky: t.flaky.clone(),
        seconds,
        digest: digest.to_owned(),
    }
}

/// A group of instances counted, each number's source the tasks it counts.
fn counts(o: &mut At<'_>, members: &[(&InstanceHealth, &str)]) -> HealthCounts {
    let source = |keep: &dyn Fn(&InstanceHealth) -> bool| Source {
        tasks: members
            .iter()
            .filter(|(h, _)| keep(h))
            .map(|(_, d)| Name::from(*d))
            .collect(),
        ..Source::default()
    };
    let all = source(&|_| true);
    let n = |keep: &dyn Fn(&InstanceHealth) -> bool| {
        members.iter().filter(|(h, _)| keep(h)).count() as u64
    };
    let mut c = HealthCounts {
        instances: o.count("instances", members.len() as u64, &all),
        screened: o.count("screened", n(&|h| h.screened), &source(&|h| h.screened)),
        certified: o.count("certified", n(&|h| h.certified), &source(&|h| h.certified)),
        flaky_tests: o.count(
            "flaky_tests",
            members.iter().map(|(h, _)| h.flaky_tests).sum(),
            &all,
        ),
        ..HealthCounts::default()
    };
    for kind in DisagreementKind::ALL {
        let k = kind.as_str();
        let has = |h: &InstanceHealth| h.disagreements.get(k).is_some_and(|n| *n > 0);
        let tests = members.iter().map(|(h, _)| h.disagreements[k]).sum();
        c.disagreements
            .insert(k.to_owned(), o.at("disagreements").count(k, tests, &all));
        c.instances_with.insert(
            k.to_owned(),
            o.at("instances_with").count(k, n(&has), &source(&has)),
        );
    }
    c
}

/// The path of a number of `summary.instances`.
fn path(rest: &[&str]) -> String {
    rest.iter()
        .fold("summary.instances".to_owned(), |p, k| p + &segment(k))
}

/// Under the instances' funnel: where their dataset-health report is.
pub(super) fn funnel_link(h: &mut String, health: Option<&DatasetHealth>) {
    if health.is_some() {
        h.push_str(
            "<p><a href=\"#datasets\">Dataset health</a>: each instance and repository \
             as assay's controls read them, against the dataset's lists.</p>\n",
        );
    }
}

/// report.html's "Dataset health": per repository, then per instance.
pub(super) fn section(h: &mut String, health: Option<&DatasetHealth>) {
    let Some(health) = health else { return };
    h.push_str(
        "<h2 id=\"datasets\">Dataset health</h2>\n\
         <p>The instances of the <code>[[instances]]</code> files as assay's controls read them: \
         whether each is certified, and every test of the dataset's FAIL_TO_PASS / PASS_TO_PASS \
         on which assay's readings disagree (<code>passes_at_base</code>: a FAIL_TO_PASS test \
         passing at base; <code>fails_at_gold</code>: not passing with the gold patch; \
         <code>flaky</code>: one state's readings differ; <code>never_ran</code>: no reading names it).</p>\n\
         <table>\n<tr><th>repository</th><th>instances</th><th>screened</th><th>certified</th>",
    );
    for kind in DisagreementKind::ALL {
        let _ = write!(h, "<th>{}</th>", kind.as_str().replace('_', "_<wbr>"));
    }
    h.push_str("<th>flaky tests</th></tr>\n");
    let rows = health
        .repos
        .iter()
        .map(|(r, c)| {
            (
                format!("<code>{}</code>", esc(r)),
                vec!["repos", r.as_str()],
                c,
            )
        })
        .chain([("all".to_owned(), vec!["total"], &health.total)]);
    for (label, at, c) in rows {
        let p = |rest: &[&str]| path(&[at.as_slice(), rest].concat());
        let _ = write!(
            h,
            "<tr><td>{label}</td>{}{}{}",
            figure(&p(&["instances"]), &c.instances.to_string()),
            figure(&p(&["screened"]), &c.screened.to_string()),
            figure(&p(&["certified"]), &c.certified.to_string()),
        );
        for kind in DisagreementKind::ALL {
            let k = kind.as_str();
            let text = format!(
                "{} {}",
                named(&p(&["disagreements", k]), &c.disagreements[k].to_string()),
                named(
                    &p(&["instances_with", k]),
                    &format!("({} inst.)", c.instances_with[k])
                ),
            );
            let _ = write!(h, "<td>{text}</td>");
        }
        let _ = writeln!(
            h,
            "{}</tr>",
            figure(&p(&["flaky_tests"]), &c.flaky_tests.to_string())
        );
    }
    h.push_str(
        "</table>\n<table>\n<tr><th>instance</th><th>certified</th>\
         <th>disagreements with the dataset</th><th>flaky tests</th><th>control readings (wall time)</th></tr>\n",
    );
    for (id, i) in &health.tasks {
        let certified = if i.certified {
            "yes".to_owned()
        } else {
            let why: Vec<String> = i.uncertified_because.iter().map(|w| esc(w)).collect();
            format!("no: {}", why.join("<br>"))
        };
        let listed: Vec<String> = i
            .disagreeing
            .iter()
            .map(|d| {
                format!(
                    "<code>{}</code> {} in {} <span class=\"muted\">({})</span>",
                    d.kind.as_str(),
                    esc(&d.test),
                    esc(&d.list),
                    esc(&d.readings)
                )
            })
            .collect();
        let flaky: Vec<String> = i
            .flaky
            .iter()
            .map(|t| format!("<code>{}</code>", esc(t)))
            .collect();
        let times: Vec<String> = i
            .seconds
            .iter()
            .map(|(state, readings)| {
                let each: Vec<String> = readings
                    .iter()
                    .map(|(r, s)| {
                        named(
                            &path(&["tasks", id, "seconds", state, r]),
                            &format!("{s:.2} s"),
                        )
                    })
                    .collect();
                format!("{}: {}", esc(state), each.join(", "))
            })
            .collect();
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code><br><span class=\"muted\">{}</span></td><td>{certified}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(id),
            esc(&format!("{} · {}", i.family, i.repo)),
            if i.screened {
                listed.join("<br>")
            } else {
                "not screened".to_owned()
            },
            flaky.join("<br>"),
            times.join("<br>"),
        );
    }
    h.push_str("</table>\n");
}
