//! Predictions and agents on SWE-bench-family instance tasks
//! (docs/instances.md), on the real Docker daemon, over the instances of
//! `util::instances`: a SWE-bench predictions file that names instances by
//! their own `instance_id`, graded against the one task that holds it; an
//! id two `[[instances]]` files hold, or none, fails its session alone;
//! the instances' funnel figures named and explained; scripted `[[agent]]`s
//! attempting an instance task in a container of its image, their
//! workspace free of the image's history.
//!
//! Fails, never skips, without the daemon.

#![allow(clippy::unwrap_used)]

mod util;

use serde_json::Value;
use util::instances::*;

/// The reason a failed node's event gives.
fn failure(build: &util::Build, node: &str) -> String {
    build
        .events
        .iter()
        .find(|e| e["event"] == "node_failed" && e["name"] == node)
        .unwrap_or_else(|| panic!("{node} did not fail"))["reason"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The image of one instance, built under SWE-bench's local instance image
/// key for `id`.
fn image_of(p: &util::Project, id: &str) -> (Repo, Image) {
    let build = p.path().join("image");
    let r = repository(&build.join("repo"));
    let image = Image::build(&build, &[&format!("sweb.eval.x86_64.{id}:latest")]);
    (r, image)
}

/// A SWE-bench predictions file naming instances by their own
/// `instance_id`: gold, empty and wrong predictions of an instance one
/// file holds are graded on its task (resolved, unresolved, unresolved);
/// a prediction of an id two files hold fails its session node alone,
/// naming both tasks, as does one of an id no row has, naming the nearest
/// ids. The funnel counts the rows (one that does not read), the images
/// found and what assay's controls certified, each figure named in
/// report.html and answered by `assay explain`.
#[test]
fn predictions_by_the_instances_own_id_are_graded_and_an_ambiguous_one_fails_alone() {
    util::progress::phase(
        "test predictions_by_the_instances_own_id_are_graded_and_an_ambiguous_one_fails_alone",
    );
    util::harbor::base_image();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 2\n\n\
         [[instances]]\nname = \"sb\"\npath = \"sb.jsonl\"\n\n\
         [[instances]]\nname = \"gym\"\npath = \"gym.jsonl\"\n",
    );
    let suffix = format!("{:x}", std::process::id());
    let (one, twice) = (
        format!("django__pred-{suffix}-1"),
        format!("django__pred-{suffix}-2"),
    );
    let (r, _image) = image_of(&p, &one);
    let f2p = [django("test_calc.MulTest.test_mul")];
    let p2p = [django("test_calc.CalcTest.test_add")];
    p.write(
        "sb.jsonl",
        [
            row(&one, &r, &f2p, &p2p, &[]),
            row(&twice, &r, &f2p, &p2p, &[]),
            "{\"instance_id\": 7}".to_owned(),
        ]
        .join("\n"),
    );
    p.write("gym.jsonl", row(&twice, &r, &f2p, &p2p, &[]));
    let prediction = |id: &str, patch: &str| {
        serde_json::json!({
            "instance_id": id,
            "model_name_or_path": "model-a",
            "model_patch": patch,
        })
        .to_string()
    };
    let unknown = format!("django__pred-{suffix}-9");
    p.write(
        "sessions/preds.jsonl",
        [
            prediction(&one, &r.gold_patch),
            prediction(&one, ""),
            prediction(&one, &r.gold_patch.replace("return a * b", "return a + b")),
            prediction(&twice, &r.gold_patch),
            prediction(&unknown, &r.gold_patch),
        ]
        .join("\n"),
    );

    let build = p.build_json(&[]).code(1);
    assert_eq!(
        build.names("node_failed"),
        [
            "instance:sb/line-3",
            "session:preds.jsonl#4",
            "session:preds.jsonl#5"
        ]
    );
    let ambiguous = failure(&build, "session:preds.jsonl#4");
    assert!(
        ambiguous.contains(&format!(
            "`{twice}` is the instance id of 2 [[instances]] tasks"
        )) && ambiguous.contains(&format!("`gym/{twice}`"))
            && ambiguous.contains(&format!("`sb/{twice}`")),
        "{ambiguous}"
    );
    let unknown_why = failure(&build, "session:preds.jsonl#5");
    assert!(
        unknown_why.contains(&format!("`{unknown}`")) && unknown_why.contains(&format!("`{one}`")),
        "{unknown_why}"
    );

    assert_eq!(released(&p, &format!("sb/{one}"))["certified"], true);
    assert_eq!(verdict(&p, "preds.jsonl#1"), "resolved");
    assert_eq!(verdict(&p, "preds.jsonl#2"), "unresolved");
    assert_eq!(verdict(&p, "preds.jsonl#3"), "unresolved");

    let funnel: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/funnel.json")).unwrap(),
    )
    .unwrap();
    let instances = &funnel["instances"];
    assert_eq!(instances["rows"], 4, "{funnel:#}");
    assert_eq!(instances["unreadable"], 1, "{funnel:#}");
    assert_eq!(
        instances["unreadable_rows"],
        serde_json::json!(["sb/line-3"])
    );
    assert_eq!(instances["images_found"], 1, "{funnel:#}");
    assert_eq!(instances["tasks"]["declined"]["no_image"], 2, "{funnel:#}");
    assert_eq!(instances["tasks"]["certified"], 1, "{funnel:#}");
    assert_eq!(
        instances["tasks"]["certified_tasks"],
        serde_json::json!([format!("sb/{one}")])
    );
    util::figures::explained(
        &p,
        &[],
        &p.path().join("release"),
        5,
        &[
            "funnel.instances.rows",
            "funnel.instances.unreadable",
            "funnel.instances.images_found",
            "funnel.instances.tasks.certified",
        ],
    );
    let verified = p.run(&["verify", "funnel.instances.images_found"]).code(0);
    assert!(
        verified
            .stdout
            .contains("count funnel.instances.images_found: checked"),
        "{}",
        verified.stdout
    );
}

/// `[[agent]]`s attempt an instance task in a container of its image: one
/// that writes the gold fix is resolved, one that does nothing unresolved;
/// the workspace the fixer sees is one commit, with no tag, commit or
/// object of the image's repository (its `future` branch and `v2` tag
/// hold the fix).
#[test]
fn agents_attempt_an_instance_task_in_its_image_without_its_history() {
    util::progress::phase("test agents_attempt_an_instance_task_in_its_image_without_its_history");
    util::harbor::base_image();
    let fixed = format!("{CALC}\n\ndef mul(a, b):\n    return a * b\n");
    let agents = format!(
        r#"
[[agent]]
label = "fixer"
model = "script-1"
command = '''
cat > calc.py <<'PY'
{fixed}PY
git() {{ command git -c safe.directory='*' "$@"; }}
echo "commits: $(git cat-file --batch-all-objects --batch-check | grep -c ' commit ')"
echo "tags: $(git tag | tr '\n' ' ')"
for d in /testbed /assay/tree "$PWD"; do
  git -C "$d" show base:calc.py >/dev/null && echo "base read in $d"
  git -C "$d" show future:calc.py >/dev/null 2>&1 && echo "future seen in $d"
  git -C "$d" show v2:calc.py >/dev/null 2>&1 && echo "future seen in $d"
done
echo agent-done
'''

[[agent]]
label = "idle"
model = "script-1"
command = "echo idle"
"#
    );
    let p = util::Project::new().pipeline(&format!(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 2\n\n\
         [[instances]]\nname = \"sb\"\npath = \"sb.jsonl\"\n{agents}"
    ));
    p.write(
        "sessions/README",
        "no session files: the agents make them\n",
    );
    let id = format!("django__agent-{:x}-1", std::process::id());
    let (r, _image) = image_of(&p, &id);
    p.write("sb.jsonl", mul_row(&id, &r));

    p.build_json(&[]).code(0);
    let fixer = format!("agent/fixer/sb/{id}/0");
    assert_eq!(verdict(&p, &fixer), "resolved");
    assert_eq!(verdict(&p, &format!("agent/idle/sb/{id}/0")), "unresolved");
    let attempt = p.output_record(&format!("attempt:{fixer}"));
    let log = String::from_utf8(p.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("agent-done"), "{log}");
    assert!(log.contains("commits: 1\n"), "{log}");
    assert!(log.contains("tags: base \n"), "{log}");
    assert!(log.contains("base read in /testbed"), "{log}");
    assert!(!log.contains("future seen"), "{log}");
}
