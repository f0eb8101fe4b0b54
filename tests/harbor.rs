//! Harbor through the real CLI (`scripts/harbor.sh`: harbor 0.26 in a
//! virtualenv under target/, with the Compose plugin) on the real Docker
//! daemon: the bundled example built on the docker executor, exported with
//! `assay export --harbor`, checked by Harbor's own loader and `harbor
//! lint`, run with Harbor's `oracle` and `nop` agents (reward 1 and 0 on
//! every task), and imported back as sessions that assay grades itself,
//! with every trial accounted for — one made to error (its test.sh writes
//! no reward) as errored, the harness's doing, never a failed agent.
//!
//! The verifier alone (`assay harbor-verify`, no container) is tried with
//! hostile workspaces: tests rewritten, a `sitecustomize.py` that passes
//! everything, history rewritten to hide the change. Each writes only in
//! its own temp directories.
//!
//! Whose fault (issue 35): a saboteur's job read back (a reward rewritten,
//! a patch deleted, git removed, a runner edited, a trial cancelled) keeps
//! every trial in the agent's column, lists each reward that disagrees
//! with assay's regrade and adds up; and a root agent's daemon, `rm git`
//! and runner edit, run by the real Harbor, never reach the separate
//! verifier.
//!
//! These tests fail, never skip, without the daemon or PyPI's harbor.

#![allow(clippy::unwrap_used)]

mod util;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;
use util::example::{ROOT, example_project};
use util::harbor::{assert_no_screening_containers, by_folder, harbor_tasks};

/// The base image and the Harbor CLI, made once per test process.
fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        for (script, args) in [("scripts/base-image.sh", &[][..]), ("scripts/harbor.sh", &["--setup"][..])]
        {
            util::progress::phase(&format!("setup: {script} {}", args.join(" ")));
            let out = Command::new(Path::new(ROOT).join(script))
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{script} {args:?} failed (the Harbor tests need the Docker daemon, and harbor from PyPI):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
}

/// `scripts/harbor.sh ARGS` in `dir`; must succeed.
fn harbor(dir: &Path, args: &[&str]) -> String {
    util::harbor::harbor_cli(dir, args)
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// The trial folders of a job, by trial name.
fn trials(job: &Path) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(job)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("result.json").is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                json(&e.path().join("result.json")),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The example built on the docker executor and exported: (project, the
/// Harbor dataset directory, the release's certified tasks by instance id
/// with their digests).
fn exported() -> (util::Project, PathBuf, Vec<(String, String)>) {
    setup();
    let p = example_project();
    p.run(&["build", "--executor", "docker"]).code(0);
    let dataset = p.path().join("harbor-tasks");
    let out = p
        .run(&["export", "--harbor", dataset.to_str().unwrap()])
        .code(0);
    assert!(
        out.stdout.contains("as Harbor task folders"),
        "{}",
        out.stdout
    );
    let tasks: Vec<(String, String)> =
        std::fs::read_to_string(p.path().join("release/tasks.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|t| t["certified"] == true)
            .map(|t| {
                (
                    t["instance_id"].as_str().unwrap().to_owned(),
                    t["digest"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
    (p, dataset, tasks)
}

#[test]
fn exported_tasks_pass_with_the_oracle_fail_with_nop_and_come_back_accounted_for() {
    util::progress::phase(
        "test exported_tasks_pass_with_the_oracle_fail_with_nop_and_come_back_accounted_for",
    );
    let (p, dataset, tasks) = exported();
    // One folder per certified task and track, carrying its digest.
    let mut folders: Vec<String> = std::fs::read_dir(&dataset)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut ids: Vec<String> = tasks.iter().map(|(id, _)| id.clone()).collect();
    ids.sort();
    assert_eq!(folders, ids);
    assert!(
        ids.iter().any(|id| id.ends_with("__spec")),
        "both tracks: {ids:?}"
    );
    for (id, digest) in &tasks {
        let toml = std::fs::read_to_string(dataset.join(id).join("task.toml")).unwrap();
        assert!(
            toml.contains(&format!("assay_digest = \"{digest}\"")),
            "{id}: {toml}"
        );
        assert!(toml.contains(&format!("name = \"assay/{id}\"")), "{toml}");
    }
    // A task made to error: its test.sh writes no reward.
    let broken = dataset.join("zz-noreward");
    copy_dir(&dataset.join(&ids[0]), &broken);
    let toml = std::fs::read_to_string(broken.join("task.toml")).unwrap();
    std::fs::write(
        broken.join("task.toml"),
        toml.replace(
            &format!("name = \"assay/{}\"", ids[0]),
            "name = \"assay/zz-noreward\"",
        ),
    )
    .unwrap();
    std::fs::write(broken.join("tests/test.sh"), "#!/bin/sh\nexit 0\n").unwrap();

    // Harbor's own checks.
    let folders: Vec<String> = std::fs::read_dir(&dataset)
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .collect();
    let mut lint = vec!["lint", "--ignore", "shared-verifier"];
    lint.extend(folders.iter().map(String::as_str));
    harbor(p.path(), &lint);
    let venv_python = Path::new(ROOT).join("target/harbor-venv/bin/python");
    let loaded = Command::new(venv_python)
        .args([
            "-c",
            "import sys, pathlib\nfrom harbor.models.task.task import Task\nfor d in sys.argv[1:]: print(Task(pathlib.Path(d)).name)",
        ])
        .args(&folders)
        .output()
        .unwrap();
    assert!(
        loaded.status.success(),
        "{}",
        String::from_utf8_lossy(&loaded.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&loaded.stdout).lines().count(),
        folders.len()
    );

    // Harbor runs them, offline.
    let nonet = p.path().join("nonet.yaml");
    std::fs::write(&nonet, "services:\n  main:\n    network_mode: none\n").unwrap();
    let jobs = p.path().join("examples/calc/sessions/harbor");
    for agent in ["oracle", "nop"] {
        harbor(
            p.path(),
            &[
                "run",
                "-p",
                dataset.to_str().unwrap(),
                "-a",
                agent,
                "-e",
                "docker",
                // One trial at a time: the calc tasks' environments are the
                // same image (same layers, same id), and Harbor's `down
                // --rmi local` at one trial's end deletes it under a
                // concurrent trial's build ("failed to get digest").
                "-n",
                "1",
                "-o",
                jobs.to_str().unwrap(),
                "--job-name",
                agent,
                "-y",
                "--extra-docker-compose",
                nonet.to_str().unwrap(),
            ],
        );
        let job = jobs.join(agent);
        let trials = trials(&job);
        assert_eq!(trials.len(), ids.len() + 1, "{agent}: {trials:#?}");
        for (name, r) in &trials {
            if name.starts_with("zz-noreward") {
                assert_eq!(
                    r["exception_info"]["exception_type"], "RewardFileNotFoundError",
                    "{agent} {name}: {r:#}"
                );
                continue;
            }
            let want = if agent == "oracle" { 1.0 } else { 0.0 };
            assert_eq!(
                r["verifier_result"]["rewards"]["reward"].as_f64(),
                Some(want),
                "{agent} {name}: {r:#}"
            );
            assert!(r["exception_info"].is_null(), "{agent} {name}: {r:#}");
            let verdict = json(&job.join(name).join("verifier/assay-verdict.json"));
            let id = &verdict["task_id"];
            let digest = &tasks.iter().find(|(t, _)| t == id).unwrap().1;
            assert_eq!(
                verdict["digest"].as_str(),
                Some(digest.as_str()),
                "{verdict:#}"
            );
        }
    }

    // Back in: the jobs are sessions assay grades itself.
    p.run(&["build", "--executor", "docker"]).code(0);
    let summary = json(&p.path().join("release/summary.json"));
    let n = ids.len() as u64;
    for (agent, resolved) in [("oracle", n), ("nop", 0)] {
        let job_result = json(&jobs.join(agent).join("result.json"));
        let t = &summary["trials"][format!("harbor:harbor/{agent}")];
        assert_eq!(t["planned"], job_result["n_total_trials"], "{t:#}");
        assert_eq!(t["started"].as_u64(), Some(n + 1), "{t:#}");
        assert_eq!(t["completed"].as_u64(), Some(n), "{t:#}");
        assert_eq!(
            t["errored"],
            serde_json::json!({"RewardFileNotFoundError": 1}),
            "{t:#}"
        );
        let errored = job_result["stats"]["n_errored_trials"].as_u64().unwrap();
        assert_eq!(errored, 1, "Harbor's own count agrees: {job_result:#}");
        let excluded = t["excluded"].as_array().unwrap();
        assert_eq!(excluded.len(), 1, "{t:#}");
        assert_eq!(excluded[0]["fault"], "harness", "{t:#}");
        assert!(
            excluded[0]["session"]
                .as_str()
                .unwrap()
                .contains("zz-noreward"),
            "{t:#}"
        );
        assert_eq!(
            (t["graded"].as_u64(), t["scored"].as_u64()),
            (Some(n), Some(n))
        );
        let a = &summary["agents"][format!("{agent}/none")];
        assert_eq!(a["n"].as_u64(), Some(n), "{a:#}");
        assert_eq!(a["resolved"].as_u64(), Some(resolved), "{a:#}");
        if agent == "nop" {
            assert_eq!(a["faults"]["agent"].as_u64(), Some(n), "{a:#}");
        }
        // explain reaches the accounting's numbers, down to the sessions.
        let path =
            format!("summary.trials[harbor:harbor/{agent}].errored[RewardFileNotFoundError]");
        let out = p.run(&["explain", &path]).code(0);
        assert!(out.stdout.contains("= 1"), "{}", out.stdout);
    }
}

/// `harbor-verify` on one exported task's tests folder, with `workspace`
/// as the agent left it: its verdict file.
fn verify(tests: &Path, workspace: &Path) -> Value {
    let logs = tempfile::tempdir().unwrap();
    verify_into(tests, workspace, logs.path())
}

/// [`verify`], writing into `logs`.
fn verify_into(tests: &Path, workspace: &Path, logs: &Path) -> Value {
    let out = Command::new(tests.join("assay"))
        .args(["harbor-verify", "--tests"])
        .arg(tests)
        .arg("--workspace")
        .arg(workspace)
        .arg("--logs")
        .arg(logs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reward = json(&logs.join("reward.json"));
    let verdict = json(&logs.join("assay-verdict.json"));
    let resolved = verdict["verdict"] == "resolved";
    assert_eq!(
        reward["reward"].as_f64(),
        Some(if resolved { 1.0 } else { 0.0 })
    );
    let patch = std::fs::symlink_metadata(logs.join("agent.patch")).unwrap();
    assert!(patch.is_file(), "agent.patch is a regular file of its own");
    verdict
}

/// A workspace of the task: its base tree, a git repository at `base`.
fn workspace(task: &Path) -> tempfile::TempDir {
    let w = tempfile::tempdir().unwrap();
    let st = Command::new("tar")
        .arg("-xf")
        .arg(task.join("environment/base.tar"))
        .arg("-C")
        .arg(w.path())
        .status()
        .unwrap();
    assert!(st.success());
    util::git_in(w.path(), 0, &["init", "-q", "."]);
    util::git_in(w.path(), 0, &["add", "-A"]);
    util::git_in(w.path(), 0, &["commit", "-qm", "base"]);
    w
}

fn apply_gold(task: &Path, w: &Path) {
    let solve = std::fs::read_to_string(task.join("solution/solve.sh")).unwrap();
    // The heredoc's body: the gold patch.
    let start = solve.find("<<'").unwrap();
    let marker = solve[start + 3..].split('\'').next().unwrap();
    let body = solve.split_once(&format!("<<'{marker}'\n")).unwrap().1;
    let patch = body.rsplit_once(&format!("{marker}\n")).unwrap().0;
    std::fs::write(w.join("gold.patch"), patch).unwrap();
    util::git_in(w, 0, &["apply", "gold.patch"]);
    std::fs::remove_file(w.join("gold.patch")).unwrap();
}

#[test]
fn the_verifier_grades_what_the_agent_changed_and_cannot_be_talked_into_a_pass() {
    util::progress::phase(
        "test the_verifier_grades_what_the_agent_changed_and_cannot_be_talked_into_a_pass",
    );
    let (_p, dataset, tasks) = exported();
    let id = &tasks.iter().find(|(id, _)| id == "calc-1").unwrap().0;
    let task = dataset.join(id);
    let tests = task.join("tests");

    // Untouched: the F2P test fails, the agent's doing.
    let w = workspace(&task);
    let v = verify(&tests, w.path());
    assert_eq!(
        (v["verdict"].as_str(), v["fault"].as_str()),
        (Some("unresolved"), Some("agent")),
        "{v:#}"
    );

    // The gold patch, committed and the history rewritten: still read
    // against the base the tests folder carries.
    let w = workspace(&task);
    apply_gold(&task, w.path());
    util::git_in(w.path(), 0, &["commit", "-qam", "fix", "--amend"]);
    let v = verify(&tests, w.path());
    assert_eq!(v["verdict"], "resolved", "{v:#}");
    assert!(v["patch_bytes"].as_u64().unwrap() > 0, "{v:#}");

    // The workspace replaced by a link to another directory, and the log's
    // agent.patch planted as a link to a file: neither is followed.
    let victim = workspace(&task);
    apply_gold(&task, victim.path());
    let outer = tempfile::tempdir().unwrap();
    let linked = outer.path().join("tree");
    std::os::unix::fs::symlink(victim.path(), &linked).unwrap();
    let logs = tempfile::tempdir().unwrap();
    let target = outer.path().join("host-file");
    std::fs::write(&target, "untouched\n").unwrap();
    std::os::unix::fs::symlink(&target, logs.path().join("agent.patch")).unwrap();
    let v = verify_into(&tests, &linked, logs.path());
    assert_ne!(v["verdict"], "resolved", "{v:#}");
    assert!(
        victim.path().join("calc/ops.py").is_file(),
        "the linked directory was emptied"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched\n");

    // Tests rewritten to pass without a fix: reset to the hidden test patch.
    unresolved_leaving_out(&task, "tests/test_ops.py", "import unittest\n");
    // A sitecustomize.py that reports every test passed: left out by the
    // exclusion policy.
    unresolved_leaving_out(
        &task,
        "sitecustomize.py",
        "import unittest\nunittest.TestCase.run = lambda self, result=None: None\n",
    );
}

/// A workspace whose only change writes `text` to `rel`: unresolved, with
/// `rel` left out of the graded tree.
fn unresolved_leaving_out(task: &Path, rel: &str, text: &str) {
    let w = workspace(task);
    std::fs::write(w.path().join(rel), text).unwrap();
    let v = verify(&task.join("tests"), w.path());
    assert_eq!(v["verdict"], "unresolved", "{rel}: {v:#}");
    let excluded = v["excluded_paths"].as_array().unwrap();
    assert!(excluded.iter().any(|p| p == rel), "{rel}: {v:#}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A Harbor task folder under `root`: the image has `/app/value` = `built`,
/// the oracle writes `solved`, and the tests pass when the value is 2.
fn harbor_task(root: &Path, name: &str, from: &str, built: u32, solved: u32) {
    let dir = root.join(name);
    let files = [
        (
            "task.toml",
            format!("schema_version = \"1.4\"\n\n[task]\nname = \"tb/{name}\"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n"),
        ),
        ("instruction.md", "Make /app/value hold 2.\n".to_owned()),
        (
            "environment/Dockerfile",
            format!("FROM {from}\nWORKDIR /app\nRUN echo {built} > /app/value\n"),
        ),
        (
            "tests/test.sh",
            "#!/bin/sh\nif [ \"$(cat /app/value)\" = 2 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
                .to_owned(),
        ),
        ("solution/solve.sh", format!("#!/bin/sh\necho {solved} > /app/value\n")),
    ];
    for (rel, text) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

#[test]
fn a_harbor_dataset_is_certified_by_its_own_oracle_and_no_op_offline() {
    util::progress::phase("test a_harbor_dataset_is_certified_by_its_own_oracle_and_no_op_offline");
    setup();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\n\n[screen]\nrepeats = 2\n\n[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let tb = p.path().join("tb");
    harbor_task(&tb, "good", "assay-base:bookworm", 1, 2);
    harbor_task(&tb, "oracle-fails", "assay-base:bookworm", 1, 3);
    harbor_task(&tb, "nop-passes", "assay-base:bookworm", 2, 2);
    harbor_task(&tb, "offline", "assay-no-such-image:never", 1, 2);
    let first = p.build_json(&[]).code(0);
    assert_eq!(first.summary.by_kind["harbor_task"].executed, 4);
    let (_, lines) = harbor_tasks(&p);
    let by_folder = |f: &str| by_folder(&lines, f);
    let good = by_folder("good");
    assert_eq!(good["certified"], true, "{good:#}");
    assert_eq!(
        good["readings"]["oracle"].as_array().unwrap().len(),
        2,
        "repeated as screening is"
    );
    for (folder, why) in [
        ("oracle-fails", "oracle_fails: reading 1 scored 0"),
        ("nop-passes", "nop_passes: reading 1 scored 1"),
        ("offline", "environment_failed: cannot pull offline"),
    ] {
        let t = by_folder(folder);
        assert_eq!(t["certified"], false, "{t:#}");
        let reasons = t["uncertified_because"].to_string();
        assert!(reasons.contains(why), "{folder}: {reasons}");
    }
    let funnel = json(&p.path().join("release/funnel.json"));
    assert_eq!(funnel["harbor"]["tasks"], 4, "{funnel:#}");
    assert_eq!(funnel["harbor"]["certified"], 1, "{funnel:#}");
    // Tasks, not readings: each failing task counts once, however many of
    // its two readings failed.
    assert_eq!(
        funnel["harbor"]["uncertified_because"],
        serde_json::json!({"environment_failed": 1, "nop_passes": 1, "oracle_fails": 1}),
        "{funnel:#}"
    );
    assert_no_screening_containers(&lines);

    // Nothing changed: nothing screened again; a changed solution: that task alone.
    let again = p.build_json(&[]).code(0);
    assert_eq!(again.summary.by_kind["harbor_task"].executed, 0);
    std::fs::write(
        tb.join("oracle-fails/solution/solve.sh"),
        "#!/bin/sh\necho 2 > /app/value\n",
    )
    .unwrap();
    let fixed = p.build_json(&[]).code(0);
    assert_eq!(
        fixed.names("node_finished"),
        ["harbor_task:tb/oracle-fails", "release"]
    );
    let fixed = util::harbor::by_folder(&harbor_tasks(&p).1, "oracle-fails");
    assert_eq!(fixed["certified"], true, "{fixed:#}");
    // explain names the file that changed; the folder's list is printed
    // once, as the key's params, not again as the change.
    let why = p.run(&["explain", "harbor_task:tb/oracle-fails"]).code(0);
    assert!(
        why.stdout
            .contains("change   param `files`: `solution/solve.sh` changed"),
        "{}",
        why.stdout
    );
    assert_eq!(why.stdout.matches("task.toml").count(), 1, "{}", why.stdout);
}

/// One trial folder as Harbor writes it: `result.json` with the fields the
/// import reads, and `verifier/agent.patch` when `patch` is `Some`.
fn write_trial(
    job: &Path,
    name: &str,
    (task, agent): (&str, &str),
    reward: Option<f64>,
    exception: Option<&str>,
    patch: Option<&str>,
) {
    let dir = job.join(name);
    std::fs::create_dir_all(dir.join("verifier")).unwrap();
    let result = serde_json::json!({
        "task_name": format!("assay/{task}"),
        "trial_name": name,
        "agent_info": {"name": agent, "model_info": if agent == "saboteur" { serde_json::json!({"name": "m"}) } else { Value::Null }},
        "agent_result": {},
        "verifier_result": reward.map(|r| serde_json::json!({"rewards": {"reward": r}})),
        "exception_info": exception.map(|e| serde_json::json!({"exception_type": e})),
    });
    std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    if let Some(patch) = patch {
        std::fs::write(dir.join("verifier/agent.patch"), patch).unwrap();
    }
}

/// The bundled example, built; and one of its certified tasks of a single
/// topic, as released.
fn built_example() -> (util::Project, Value) {
    let p = example_project();
    p.run(&["build"]).code(0);
    let task: Value = std::fs::read_to_string(p.path().join("release/tasks.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|t| t["certified"] == true && !t["instance_id"].as_str().unwrap().contains("__"))
        .unwrap();
    (p, task)
}

/// A Harbor agent root in the container its verifier runs in (issue 35),
/// as its trials come back: a daemon that rewrote the reward to 1 and
/// deleted `agent.patch`, `rm /usr/bin/git` (no reward, no patch:
/// `RewardFileNotFoundError`), a system runner edited to pass (reward 1,
/// empty patch). Each is the agent's failure, graded and counted (the
/// job's oracle and nop of the same task kept their patches), and each
/// reward that disagrees with assay's regrade is listed in summary.json
/// and report.html. A trial submitted with no files and Harbor's own
/// `CancelledError` is the agent's too, graded as an empty patch (it was
/// excluded as the harness's, though the same job's controls ran and kept
/// their patches), and counted once; the accounting adds up; `explain`
/// names a count's sessions.
#[test]
fn a_saboteur_cannot_move_its_trials_out_of_its_column() {
    util::progress::phase("test a_saboteur_cannot_move_its_trials_out_of_its_column");
    let (p, task) = built_example();
    let id = task["instance_id"].as_str().unwrap();
    let gold = task["patch"].as_str().unwrap();
    let job = p.path().join("examples/calc/sessions/harbor/sabotage");
    std::fs::create_dir_all(&job).unwrap();
    std::fs::write(job.join("config.json"), "{}").unwrap();
    // Seven planned; six left a folder; Harbor's stats count the cancelled
    // trial that left one among its two cancelled.
    std::fs::write(
        job.join("result.json"),
        r#"{"n_total_trials": 7, "stats": {"n_cancelled_trials": 2, "n_pending_trials": 0, "n_running_trials": 0}}"#,
    )
    .unwrap();
    write_trial(
        &job,
        "oracle__1",
        (id, "oracle"),
        Some(1.0),
        None,
        Some(gold),
    );
    write_trial(&job, "nop__1", (id, "nop"), Some(0.0), None, Some(""));
    write_trial(&job, "daemon__1", (id, "saboteur"), Some(1.0), None, None);
    let nogit = Some("RewardFileNotFoundError");
    write_trial(&job, "nogit__1", (id, "saboteur"), None, nogit, None);
    write_trial(
        &job,
        "runner__1",
        (id, "saboteur"),
        Some(1.0),
        None,
        Some(""),
    );
    let cancelled = Some("CancelledError");
    write_trial(
        &job,
        "cancelled__1",
        (id, "saboteur"),
        None,
        cancelled,
        None,
    );
    p.run(&["build"]).code(0);

    let summary = json(&p.path().join("release/summary.json"));
    let a = &summary["agents"]["saboteur/m"];
    assert_eq!(
        (a["n"].as_u64(), a["resolved"].as_u64()),
        (Some(4), Some(0)),
        "every sabotaged trial is in the saboteur's denominator: {a:#}"
    );
    let t = &summary["trials"]["harbor:harbor/sabotage"];
    assert_eq!(
        (
            t["planned"].as_u64(),
            t["started"].as_u64(),
            t["not_ended"].as_u64()
        ),
        (Some(7), Some(6), Some(1)),
        "{t:#}"
    );
    assert_eq!(t["completed"].as_u64(), Some(4), "{t:#}");
    assert_eq!(
        t["errored"],
        serde_json::json!({"CancelledError": 1, "RewardFileNotFoundError": 1}),
        "{t:#}"
    );
    assert_eq!(
        t["excluded"].as_array().map_or(0, Vec::len),
        0,
        "the cancelled trial is not the harness's: {t:#}"
    );
    let mut disagreeing: Vec<&str> = t["disagreements"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| d["session"].as_str().unwrap())
        .collect();
    disagreeing.sort_unstable();
    assert_eq!(
        disagreeing,
        [
            "harbor/sabotage/cancelled__1",
            "harbor/sabotage/daemon__1",
            "harbor/sabotage/nogit__1",
            "harbor/sabotage/runner__1"
        ],
        "{t:#}"
    );
    let daemon = t["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["session"] == "harbor/sabotage/daemon__1")
        .unwrap();
    assert_eq!(
        (daemon["reward"].as_f64(), daemon["verdict"].as_str()),
        (Some(1.0), Some("unresolved"))
    );
    let why = daemon["why"].as_str().unwrap();
    assert!(
        why.contains("no patch kept") && why.contains("nop and oracle"),
        "{why}"
    );
    let cancelled = t["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["session"] == "harbor/sabotage/cancelled__1")
        .unwrap();
    let why = cancelled["why"].as_str().unwrap();
    assert!(
        why.contains("no patch kept (CancelledError)") && why.contains("nop and oracle"),
        "{why}"
    );
    let html = std::fs::read_to_string(p.path().join("release/report.html")).unwrap();
    assert!(
        html.contains("Harbor&#39;s reward beside assay&#39;s regrade")
            || html.contains("Harbor's reward beside assay's regrade"),
        "no disagreement table"
    );
    assert!(html.contains("harbor/sabotage/runner__1"));
    // explain names the sessions a trial count counts.
    let out = p
        .run(&["explain", "summary.trials[harbor:harbor/sabotage].started"])
        .code(0);
    assert!(
        out.stdout.contains("harbor/sabotage/daemon__1"),
        "{}",
        out.stdout
    );
}

/// A hostile agent, root in its container (issue 35), run by Harbor as the
/// oracle of a task whose `solve.sh` is the attack: it leaves a daemon that
/// rewrites the reward to 1 and deletes `agent.patch` under
/// `/logs/verifier` (bind-mounted from the trial's folder), removes `git`,
/// and edits the system's unittest runner so that every failure prints
/// `ok`. The exported task runs its verifier in a separate environment
/// (`environment_mode = "separate"`): Harbor stops the agent's container
/// first, copies only the workspace out, and grades in a fresh container
/// of the task's image — so the trial keeps its patch, and its reward is
/// 0 (nothing was fixed), written by assay's verifier.
#[test]
fn a_root_agents_daemon_git_removal_and_runner_edit_do_not_reach_the_verifier() {
    util::progress::phase(
        "test a_root_agents_daemon_git_removal_and_runner_edit_do_not_reach_the_verifier",
    );
    let (p, dataset, tasks) = exported();
    let id = &tasks.iter().find(|(id, _)| !id.contains("__")).unwrap().0;
    let hostile = p.path().join("hostile");
    let task = hostile.join("zz-saboteur");
    copy_dir(&dataset.join(id), &task);
    let toml = std::fs::read_to_string(task.join("task.toml")).unwrap();
    assert!(toml.contains("environment_mode = \"separate\""), "{toml}");
    std::fs::write(
        task.join("task.toml"),
        toml.replace(
            &format!("name = \"assay/{id}\""),
            "name = \"assay/zz-saboteur\"",
        ),
    )
    .unwrap();
    std::fs::write(
        task.join("solution/solve.sh"),
        r#"#!/bin/sh
nohup sh -c 'while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; echo "{\"reward\": 1}" > /logs/verifier/reward.json; rm -f /logs/verifier/agent.patch; sleep 0.1; done' >/dev/null 2>&1 &
runner=$(python3 -c 'import unittest.runner as r; print(r.__file__)')
printf '\nTextTestResult.addFailure = lambda self, test, err: TextTestResult.addSuccess(self, test)\nTextTestResult.addError = TextTestResult.addFailure\n' >> "$runner"
rm -f /usr/bin/git /bin/git
echo sabotaged
"#,
    )
    .unwrap();
    let nonet = p.path().join("nonet.yaml");
    std::fs::write(&nonet, "services:\n  main:\n    network_mode: none\n").unwrap();
    let jobs = p.path().join("hostile-jobs");
    harbor(
        p.path(),
        &[
            "run",
            "-p",
            hostile.to_str().unwrap(),
            "-a",
            "oracle",
            "-e",
            "docker",
            "-o",
            jobs.to_str().unwrap(),
            "--job-name",
            "saboteur",
            "-y",
            "--extra-docker-compose",
            nonet.to_str().unwrap(),
        ],
    );
    let job = jobs.join("saboteur");
    let trials = trials(&job);
    assert_eq!(trials.len(), 1, "{trials:#?}");
    let (name, r) = &trials[0];
    assert!(r["exception_info"].is_null(), "{name}: {r:#}");
    assert_eq!(
        r["verifier_result"]["rewards"]["reward"].as_f64(),
        Some(0.0),
        "the daemon's reward or the edited runner's pass reached the verifier: {r:#}"
    );
    let verifier = job.join(name).join("verifier");
    assert!(verifier.join("agent.patch").is_file(), "the patch was lost");
    let verdict = json(&verifier.join("assay-verdict.json"));
    assert_eq!(verdict["verdict"], "unresolved", "{verdict:#}");
}

/// A Harbor agent that raises `RateLimitError` inside its own run (issue
/// 35): Harbor has no proxy record assay can read, so the exception is
/// the agent's failure, graded and counted, while the job's oracle and nop
/// of the same task ran clean. In a job whose control of the task raised
/// an infrastructure exception too, the same trial is the
/// infrastructure's, left out, and the reason says which.
#[test]
fn a_harbor_agents_own_rate_limit_error_is_its_failure_unless_the_controls_failed_too() {
    util::progress::phase(
        "test a_harbor_agents_own_rate_limit_error_is_its_failure_unless_the_controls_failed_too",
    );
    let (p, task) = built_example();
    let id = task["instance_id"].as_str().unwrap();
    let gold = task["patch"].as_str().unwrap();
    let limited = Some("RateLimitError");
    let sessions = p.path().join("examples/calc/sessions/harbor");
    for (name, control_error) in [("clean", None), ("outage", Some("ApiConnectionError"))] {
        let job = sessions.join(name);
        std::fs::create_dir_all(&job).unwrap();
        std::fs::write(job.join("config.json"), "{}").unwrap();
        std::fs::write(job.join("result.json"), r#"{"n_total_trials": 3}"#).unwrap();
        let oracle = (id, "oracle");
        write_trial(
            &job,
            "oracle__1",
            oracle,
            Some(1.0),
            control_error,
            Some(gold),
        );
        write_trial(&job, "nop__1", (id, "nop"), Some(0.0), None, Some(""));
        write_trial(
            &job,
            "agent__1",
            (id, "saboteur"),
            Some(0.0),
            limited,
            Some(""),
        );
    }
    p.run(&["build"]).code(0);

    let summary = json(&p.path().join("release/summary.json"));
    let a = &summary["agents"]["saboteur/m"];
    assert_eq!(
        (a["n"].as_u64(), a["resolved"].as_u64()),
        (Some(1), Some(0)),
        "the clean job's trial is in the denominator: {a:#}"
    );
    let left_out: Vec<&str> = a["leaderboard"]["left_out"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| l["session"].as_str().unwrap())
        .collect();
    assert_eq!(left_out, ["harbor/outage/agent__1"], "{a:#}");
    let clean = &summary["trials"]["harbor:harbor/clean"];
    assert_eq!(clean["scored"].as_u64(), Some(3), "{clean:#}");
    assert_eq!(clean["excluded"], serde_json::json!([]), "{clean:#}");
    let outage = &summary["trials"]["harbor:harbor/outage"];
    let excluded: Vec<&str> = outage["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["session"].as_str().unwrap())
        .collect();
    assert!(excluded.contains(&"harbor/outage/agent__1"), "{outage:#}");

    let grades = std::fs::read_to_string(p.path().join("release/results.csv")).unwrap();
    // The scored arm's fault (columns: session, …, arm 5, …, fault 8).
    let fault = |session: &str| -> &str {
        grades
            .lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|c| c[0] == session && c[5] == "exclude")
            .unwrap_or_else(|| panic!("no scored row of {session}:\n{grades}"))[8]
    };
    assert_eq!(fault("harbor/clean/agent__1"), "agent", "{grades}");
    assert_eq!(fault("harbor/outage/agent__1"), "infrastructure");
}

/// A Harbor job whose trial kept the agent's ATIF trajectory
/// (`agent/trajectory.json`), imported and published: its transcript page
/// shows the turns (the model's text, a tool call with its input and its
/// output, each step's token counts), a secret the trajectory holds is in
/// no file of the release, and markup in a tool's output is text. The
/// trial's matrix cell and every other link lead somewhere.
#[test]
fn an_imported_atif_trajectory_is_a_redacted_escaped_transcript_page() {
    util::progress::phase("test an_imported_atif_trajectory_is_a_redacted_escaped_transcript_page");
    const SECRET: &str = "sk-ant-api03-Zq8vN2xLw5Rt7Yk1Hb4Jm6Pc9Df3Gs0Ae";
    const HOSTILE: &str = "</pre><script>alert('tool')</script>";
    let (p, task) = built_example();
    let id = task["instance_id"].as_str().unwrap();
    let gold = task["patch"].as_str().unwrap();
    let job = p.path().join("examples/calc/sessions/harbor/atif");
    std::fs::create_dir_all(&job).unwrap();
    std::fs::write(job.join("config.json"), "{}").unwrap();
    std::fs::write(job.join("result.json"), r#"{"n_total_trials": 1}"#).unwrap();
    write_trial(
        &job,
        "terminus__1",
        (id, "terminus"),
        Some(1.0),
        None,
        Some(gold),
    );
    let trajectory = serde_json::json!({
        "schema_version": "ATIF-v1.4",
        "session_id": "atif-1",
        "agent": {"name": "terminus", "version": "2", "model_name": "model-t"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Fix the calculator's failing test."},
            {"step_id": 2, "source": "agent", "message": "Reading the operations first.",
             "tool_calls": [{"tool_call_id": "call_1", "function_name": "bash",
                             "arguments": {"command": "cat calc/ops.py"}}],
             "observation": {"results": [{"source_call_id": "call_1",
                             "content": format!("def add(a, b):\n{HOSTILE}\nANTHROPIC_API_KEY={SECRET}")}]},
             "metrics": {"prompt_tokens": 1234, "completion_tokens": 56}},
            {"step_id": 3, "source": "agent", "message": "Patched; the tests pass.",
             "metrics": {"prompt_tokens": 1500, "completion_tokens": 20}}
        ]
    });
    std::fs::create_dir_all(job.join("terminus__1/agent")).unwrap();
    std::fs::write(
        job.join("terminus__1/agent/trajectory.json"),
        serde_json::to_string_pretty(&trajectory).unwrap(),
    )
    .unwrap();
    p.run(&["build"]).code(0);

    let release = p.path().join("release");
    let files = util::links::read(&release);
    for (name, bytes) in &files {
        assert!(
            !String::from_utf8_lossy(bytes).contains(SECRET),
            "the secret reached {name}"
        );
    }
    assert_eq!(util::links::dangling(&files), Vec::<String>::new());
    let session = "harbor/atif/terminus__1";
    let (name, page) = files
        .iter()
        .filter(|(n, _)| n.ends_with("-transcript.html"))
        .map(|(n, b)| (n, String::from_utf8_lossy(b).into_owned()))
        .find(|(_, page)| page.contains(&format!("Transcript of <code>{session}</code>")))
        .expect("the trial's transcript page");
    for text in [
        "Fix the calculator&#39;s failing test.",
        "Reading the operations first.",
        "<strong>bash</strong>",
        "cat calc/ops.py",
        "def add(a, b):",
        "&lt;/pre&gt;&lt;script&gt;alert(&#39;tool&#39;)&lt;/script&gt;",
        "ANTHROPIC_API_KEY=[REDACTED]",
        "tokens: completion 56, prompt 1234",
        "2 model steps, 1 tool calls, 0 failed, 0 denied; tokens: completion 76, prompt 2734",
    ] {
        assert!(page.contains(text), "{name} lacks {text:?}:\n{page}");
    }
    // The one script is the pages' own.
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    assert!(!page.contains(HOSTILE), "{page}");
    // The trial's matrix cell reaches its section, which links the page.
    let report = String::from_utf8_lossy(&files["report.html"]);
    let cell = report
        .split("<a class=\"v ")
        .skip(1)
        .find(|c| c.contains(&format!("title=\"{session}\"")))
        .expect("the trial's cell");
    let href = &cell[cell.find("href=\"").unwrap() + 6..];
    let (task_page, _) = href[..href.find('"').unwrap()].split_once('#').unwrap();
    let task_page = String::from_utf8_lossy(&files[task_page]);
    assert!(
        task_page.contains(&format!(
            "href=\"{}\">Transcript</a>",
            name.strip_prefix("pages/").unwrap()
        )),
        "{task_page}"
    );
}

/// `export --harbor` says by its exit code what stopped it: nothing built
/// to export from is 6 ("build first"); a destination it cannot write (a
/// file on its way) is a bad input, 2, as a non-empty one is; and a
/// pipeline of Harbor datasets alone whose tasks are none of assay's (a
/// reward-only folder; a certified Deep-SWE-shaped one would be exported:
/// tests/deepswe.rs) exports nothing, 6, rather than stopping on a missing
/// `[env]`.
#[test]
fn an_export_to_harbor_exits_by_what_stopped_it() {
    util::progress::phase("test an_export_to_harbor_exits_by_what_stopped_it");
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\n\n[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n",
    );
    // A folder with no environment: screened (and uncertified) at once.
    p.write("tb/empty/task.toml", "[task]\nname = \"x/empty\"\n");
    let dest = |rel: &str| p.path().join(rel).display().to_string();
    p.run(&["export", "--harbor", &dest("out")])
        .code(6)
        .stderr_has("build first");
    p.run(&["build"]).code(0);
    p.write("a-file", "x");
    p.run(&["export", "--harbor", &dest("a-file/out")])
        .code(2)
        .stderr_has("os error 20");
    p.write("full/x", "x");
    p.run(&["export", "--harbor", &dest("full")])
        .code(2)
        .stderr_has("is not empty");
    p.run(&["export", "--harbor", &dest("out")])
        .code(6)
        .stdout_has("exported 0 certified tasks");
}
