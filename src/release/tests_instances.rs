//! The dataset-health report (`summary.instances`, report.html's "Dataset
//! health") from instance tasks and their screening readings.

use std::collections::BTreeSet;

use super::manifest::walk;
use super::tests::task;
use super::*;
use crate::model::instances::{DatasetLists, Disagreement, DisagreementKind};
use crate::model::records::{TaskRecord, TaskStatus};

fn instance_task(
    id: &str,
    repo: &str,
    kinds: &[DisagreementKind],
    declined: bool,
) -> (TaskRecord, String) {
    let (mut t, digest) = task(id, "basic", !declined && kinds.is_empty());
    t.repo = repo.to_owned();
    if declined {
        t.status = TaskStatus::Declined;
        t.uncertified_because =
            vec!["no_image: the docker daemon has none of the images tried".to_owned()];
    }
    t.flaky = kinds
        .iter()
        .filter(|k| **k == DisagreementKind::Flaky)
        .map(|_| "t::coin".to_owned())
        .collect();
    t.dataset = Some(DatasetLists {
        family: "swe-rebench".to_owned(),
        disagreements: kinds
            .iter()
            .enumerate()
            .map(|(i, k)| Disagreement {
                test: format!("t::{i}"),
                list: "PASS_TO_PASS".to_owned(),
                kind: *k,
                readings: "test: passed; gold: failed".to_owned(),
            })
            .collect(),
        ..DatasetLists::default()
    });
    (t, digest)
}

fn input() -> PublishInput {
    let mut input = PublishInput {
        tasks: vec![
            instance_task("rb/a-1", "acme/calc", &[], false),
            instance_task(
                "rb/a-2",
                "acme/calc",
                &[DisagreementKind::Flaky, DisagreementKind::FailsAtGold],
                false,
            ),
            // Declined: its every listed test "never ran", none counted.
            instance_task("rb/b-1", "other/lib", &[DisagreementKind::NeverRan], true),
            task("mined-1", "basic", true),
        ],
        ..PublishInput::default()
    };
    for (task, state, reading, seconds) in [
        ("rb/a-1", "gold", 1, Some(1.25)),
        ("rb/a-1", "base", 0, Some(0.5)),
        ("rb/b-1", "base", 0, None),
    ] {
        input.instance_readings.push(InstanceReading {
            task: task.to_owned(),
            state: state.to_owned(),
            reading,
            seconds,
            key: format!("run-{task}-{state}-{reading}"),
        });
    }
    input
}

#[test]
fn instances_are_counted_per_instance_and_per_repository() {
    let input = input();
    let index = index::Index::new(&input);
    let (summary, sources) = summary::summary(&index);
    let health = summary.instances.expect("a dataset-health report");
    assert_eq!(health.tasks.len(), 3, "the mined task is not an instance's");
    let a2 = &health.tasks["rb/a-2"];
    assert_eq!(
        (a2.dataset.as_str(), a2.instance_id.as_str()),
        ("rb", "a-2")
    );
    assert_eq!(a2.disagreements["flaky"], 1);
    assert_eq!(a2.disagreements["fails_at_gold"], 1);
    assert_eq!(a2.disagreements["passes_at_base"], 0);
    assert_eq!(a2.flaky_tests, 1);
    let b1 = &health.tasks["rb/b-1"];
    assert!(!b1.screened && b1.disagreeing.is_empty() && b1.seconds.is_empty());
    assert_eq!(b1.disagreements["never_ran"], 0);
    let a1 = &health.tasks["rb/a-1"];
    assert_eq!(a1.seconds["gold"]["r1"], 1.25);
    assert_eq!(a1.seconds["base"]["r0"], 0.5);
    let calc = &health.repos["acme/calc"];
    assert_eq!((calc.instances, calc.screened, calc.certified), (2, 2, 1));
    assert_eq!(calc.instances_with["flaky"], 1);
    assert_eq!(health.total.instances, 3);
    assert_eq!(health.total.screened, 2);
    // Every number under `instances` has its tasks as its source.
    let tree = serde_json::to_value(&health).expect("a tree");
    let mut paths = BTreeSet::new();
    walk(&tree, "summary.instances".to_owned(), &mut |path, _| {
        paths.insert(path);
    });
    for path in &paths {
        assert!(sources.contains_key(path), "{path}: no source");
    }
    assert_eq!(
        sources["summary.instances.repos[acme/calc].certified"].tasks,
        BTreeSet::from([Name::from("task-rb/a-1-basic")])
    );
}

#[test]
fn the_report_has_the_section_linked_and_a_release_without_instances_has_none() {
    let files = publish(&input());
    let html = String::from_utf8(files["report.html"].clone()).unwrap();
    for text in [
        "<h2 id=\"datasets\">Dataset health</h2>",
        "href=\"#datasets\"",
        "title=\"summary.instances.tasks[rb/a-1].seconds.gold.r1\">1.25 s</span>",
        "title=\"summary.instances.repos[acme/calc].certified\">1</td>",
        "<code>flaky</code> t::0 in PASS_TO_PASS",
    ] {
        assert!(html.contains(text), "{text}");
    }
    let plain = PublishInput {
        tasks: vec![task("mined-1", "basic", true)],
        ..PublishInput::default()
    };
    let files = publish(&plain);
    let summary = String::from_utf8(files["summary.json"].clone()).unwrap();
    assert!(!summary.contains("\"instances\""), "{summary}");
    let html = String::from_utf8(files["report.html"].clone()).unwrap();
    assert!(!html.contains("datasets"));
}
