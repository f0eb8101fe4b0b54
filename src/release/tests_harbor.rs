//! Harbor task folders in the release, end to end through `publish`: the
//! uncertified ones named with their reasons, empty patches counted for
//! sessions no metrics node measures, the date of a release with no merged
//! PR, and the dataset's verifier's readings beside assay's.

use std::collections::BTreeMap;

use serde_json::Value;

use super::tests::{grade, task};
use super::{About, Funnel, HarborScreen, PublishInput, publish};
use crate::model::records::{MetricsRecord, RunFacts, SessionRecord};
use crate::model::session::Trial;

fn screen(id: &str, because: &[&str], nop: &[Option<f64>], oracle: &[Option<f64>]) -> HarborScreen {
    HarborScreen {
        id: id.to_owned(),
        certified: because.is_empty(),
        because: because.iter().map(|b| (*b).to_owned()).collect(),
        readings: BTreeMap::from([
            ("nop".to_owned(), nop.to_vec()),
            ("oracle".to_owned(), oracle.to_vec()),
        ]),
    }
}

/// A session graded by a Harbor task's own verifier (no metrics node):
/// `patch` its blob digest, `""` for none.
fn harbor_session(id: &str, agent: &str, patch: &str, trial: Option<Trial>) -> SessionRecord {
    SessionRecord {
        id: id.to_owned(),
        task: "tb/good".to_owned(),
        track: "basic".to_owned(),
        agent: agent.to_owned(),
        model: "none".to_owned(),
        patch: patch.to_owned(),
        facts: RunFacts {
            trial,
            ..RunFacts::default()
        },
        transcript: None,
    }
}

fn harbor_grade(
    session: &str,
    agent: &str,
    verdict: &str,
) -> (crate::model::records::GradeRecord, String) {
    let mut g = grade(session, agent, "none", "exclude", verdict, "agent");
    g.0.instance_id = "tb/good".to_owned();
    g.0.task_digest = "harbor-tb/good".to_owned();
    if verdict == "resolved" {
        g.0.fault = crate::model::records::Fault::None;
    }
    g
}

fn trial(reward: Option<f64>, workspace: Option<&str>) -> Trial {
    Trial {
        job: "harbor/tb".to_owned(),
        name: "t".to_owned(),
        reward,
        patch_kept: workspace.is_some(),
        workspace: workspace.map(str::to_owned),
        ..Trial::default()
    }
}

/// Three Harbor folders (one certified, two not: one for two reasons),
/// sessions on the certified one (an empty patch, a blank one, none, a
/// collected working directory, a real patch), the job's no-op and
/// oracle trials, and a mined task with one empty-patch session.
fn input() -> PublishInput {
    let mined = grade("m1", "alpha", "none", "exclude", "unresolved", "agent");
    let refused = grade(
        "refused",
        "alpha",
        "none",
        "exclude",
        "patch_apply_failed",
        "agent",
    );
    let mut funnel = Funnel::default();
    let harbor = funnel.harbor.get_or_insert_with(Default::default);
    harbor.tasks = 3;
    harbor.certified = 1;
    harbor.uncertified = 2;
    harbor.certified_tasks = vec!["tb/good".to_owned()];
    harbor.uncertified_tasks = BTreeMap::from([
        (
            "tb/bad-network".to_owned(),
            vec!["task_toml_invalid: task.toml: [environment] network_mode = \"bridge\" is none of \"public\", \"no-network\", \"allowlist\"".to_owned()],
        ),
        (
            "tb/both".to_owned(),
            vec![
                "nop_passes: reading 1 scored 1".to_owned(),
                "oracle_fails: reading 1 scored 0".to_owned(),
            ],
        ),
    ]);
    harbor.uncertified_because = BTreeMap::from([
        ("nop_passes".to_owned(), 1),
        ("oracle_fails".to_owned(), 1),
        ("task_toml_invalid".to_owned(), 1),
    ]);
    PublishInput {
        tasks: vec![task("t1", "basic", true)],
        harbor_tasks: vec!["harbor-tb/good".to_owned()],
        harbor_screens: vec![
            screen(
                "tb/bad-network",
                &[
                    "task_toml_invalid: task.toml: [environment] network_mode = \"bridge\" is none of \"public\", \"no-network\", \"allowlist\"",
                ],
                &[],
                &[],
            ),
            screen(
                "tb/both",
                &[
                    "nop_passes: reading 1 scored 1",
                    "oracle_fails: reading 1 scored 0",
                ],
                &[Some(1.0)],
                &[Some(0.0)],
            ),
            screen("tb/good", &[], &[Some(0.0), Some(0.0)], &[Some(1.0), None]),
        ],
        grades: vec![
            mined,
            refused,
            harbor_grade("empty", "alpha", "unresolved"),
            harbor_grade("blank", "alpha", "unresolved"),
            harbor_grade("lost", "beta", "unresolved"),
            harbor_grade("workspace", "beta", "resolved"),
            harbor_grade("fixed", "alpha", "resolved"),
            harbor_grade("harbor/tb/nop__1", "nop", "unresolved"),
            harbor_grade("harbor/tb/oracle__1", "oracle", "resolved"),
        ],
        metrics: ["m1", "refused"]
            .map(|session| MetricsRecord {
                session: session.to_owned(),
                empty_patch: true,
                ..MetricsRecord::default()
            })
            .to_vec(),
        sessions: vec![
            harbor_session("m1", "alpha", "", None),
            SessionRecord {
                facts: RunFacts {
                    patch_refused: Some("over the 1 GiB cap".to_owned()),
                    ..RunFacts::default()
                },
                ..harbor_session("refused", "alpha", "", None)
            },
            harbor_session("empty", "alpha", "", None),
            harbor_session("blank", "alpha", "blank-digest", None),
            harbor_session("lost", "beta", "", Some(trial(None, None))),
            harbor_session("workspace", "beta", "", Some(trial(Some(1.0), Some("ws")))),
            harbor_session("fixed", "alpha", "fix-digest", None),
            harbor_session(
                "harbor/tb/nop__1",
                "nop",
                "",
                Some(trial(Some(0.0), Some("ws-nop"))),
            ),
            harbor_session(
                "harbor/tb/oracle__1",
                "oracle",
                "",
                Some(trial(Some(1.0), Some("ws-oracle"))),
            ),
        ],
        patches: BTreeMap::from([
            ("blank-digest".to_owned(), b"\n  \n".to_vec()),
            ("fix-digest".to_owned(), b"diff --git a/x b/x\n".to_vec()),
        ]),
        about: About {
            funnel,
            harbor_changed: Some("2026-11-30T08:15:00Z".to_owned()),
            ..About::default()
        },
        ..PublishInput::default()
    }
}

fn report(input: &PublishInput) -> String {
    String::from_utf8(publish(input)["report.html"].clone()).expect("utf8")
}

/// Sessions a Harbor task's own verifier graded have no metrics node:
/// their empty patches (none kept, or whitespace alone) count all the
/// same, in summary.json, the report and results.csv; a collected working
/// directory is not an empty patch; a mined task's session counts by its
/// metrics, unless assay refused to read its workspace (too much, not
/// nothing).
#[test]
fn empty_patches_count_for_harbor_sessions_and_mined_ones_alike() {
    let input = input();
    let files = publish(&input);
    let summary: Value = serde_json::from_slice(&files["summary.json"]).expect("json");
    assert_eq!(
        summary["agents"]["alpha/none"]["empty_patch"], 3,
        "m1 (metrics), empty (no patch), blank (whitespace); not `refused`: {:#}",
        summary["agents"]["alpha/none"]
    );
    assert_eq!(
        summary["agents"]["beta/none"]["empty_patch"], 1,
        "lost (no patch, no working directory); not `workspace`"
    );
    let html = report(&input);
    assert!(html.contains("<h2>Empty-patch sessions (4)</h2>"), "{html}");
    let csv = String::from_utf8(files["results.csv"].clone()).expect("utf8");
    let rows = csv_rows(&csv);
    let empty = |s: &str| rows[s]["empty_patch"].clone();
    assert_eq!(
        (
            empty("empty"),
            empty("blank"),
            empty("workspace"),
            empty("fixed")
        ),
        ("true".into(), "true".into(), "false".into(), "false".into())
    );
}

/// report.html names every uncertified Harbor task with all its
/// reasons, and its counts agree: two tasks uncertified, the heading
/// counts them, the reasons by word are labelled as counted per reason.
#[test]
fn the_report_names_the_uncertified_harbor_tasks_with_their_reasons() {
    let html = report(&input());
    assert!(html.contains("<h2>Uncertified tasks (2)</h2>"), "{html}");
    for named in [
        "<tr><td><code>tb/bad-network</code></td><td>task_toml_invalid: task.toml: [environment] network_mode = &quot;bridge&quot;",
        "<tr><td><code>tb/both</code></td><td>nop_passes: reading 1 scored 1<br>oracle_fails: reading 1 scored 0</td></tr>",
    ] {
        assert!(html.contains(named), "{named}\n{html}");
    }
    let funnel = html
        .split("<h3>Harbor tasks</h3>")
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .expect("the Harbor funnel");
    assert!(
        funnel.contains(
            "<tr><th>tasks uncertified</th><td class=\"n\" title=\"funnel.harbor.uncertified\">2</td><td><code>tb/bad-network</code> (task_toml_invalid), <code>tb/both</code> (nop_passes, oracle_fails)"
        ),
        "{funnel}"
    );
    assert!(
        funnel.contains("a task counted under each of its reasons"),
        "{funnel}"
    );
}

/// Each Harbor task's row shows its dataset verifier's rewards at
/// screening and its job's control trials (Harbor's reward and assay's
/// regrade) beside assay's certification.
#[test]
fn the_report_shows_the_dataset_verifiers_readings_beside_assays() {
    let html = report(&input());
    let table = html
        .split("<h2>Harbor tasks: the dataset's verifier beside assay (3)</h2>")
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .expect("the Harbor tasks' table");
    let row = |id: &str| {
        table
            .split("<tr>")
            .find(|r| r.starts_with(&format!("<td><code>{id}</code>")))
            .unwrap_or_else(|| panic!("no row of {id}: {table}"))
            .to_owned()
    };
    let good = row("tb/good");
    assert!(good.contains("<td>0, 0</td><td>1, none</td>"), "{good}");
    assert!(
        good.contains("nop <a href=") && good.contains(": 0 → <span class=\"v\">unresolved</span>"),
        "{good}"
    );
    assert!(
        good.contains("oracle <a href=")
            && good.contains(": 1 → <span class=\"v\">resolved</span>"),
        "{good}"
    );
    assert!(good.ends_with("<td>certified</td></tr>\n"), "{good}");
    let both = row("tb/both");
    assert!(
        both.contains("<td>1</td><td>0</td><td><span class=\"muted\">none imported</span></td>"),
        "{both}"
    );
    assert!(
        both.contains("<strong>uncertified</strong>: nop_passes: reading 1 scored 1; oracle_fails"),
        "{both}"
    );
    let bad = row("tb/bad-network");
    assert!(
        bad.contains("<span class=\"muted\">not read</span>"),
        "{bad}"
    );
}

/// A release with no merged PR is dated by its Harbor folders' newest
/// change, never 1970 nor left blank; the same input gives the same bytes.
#[test]
fn a_harbor_only_release_is_dated_by_its_folders_newest_change() {
    let mut input = input();
    input.tasks.clear();
    let html = report(&input);
    assert!(
        html.contains("2026-11-30T08:15:00Z, the newest change of a Harbor task folder"),
        "{html}"
    );
    assert!(!html.contains("1970-"), "{html}");
    assert_eq!(publish(&input), publish(&input));
}

/// results.csv's rows by session, each a map of column to field.
fn csv_rows(csv: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut lines = csv.lines().map(fields);
    let header = lines.next().expect("a header");
    lines
        .map(|row| {
            let row: BTreeMap<String, String> = header.iter().cloned().zip(row).collect();
            (row["session"].clone(), row)
        })
        .collect()
}

/// One CSV line's fields (quoted ones unquoted); no field here spans lines.
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    out.push(field);
    out
}
