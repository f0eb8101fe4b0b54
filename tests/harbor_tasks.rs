//! Harbor task folders of a `[[harbor_dataset]]` (Terminal-Bench's shape:
//! an environment Dockerfile, `tests/test.sh` writing a reward,
//! `solution/solve.sh`) screened on the real Docker daemon, with base
//! image `assay-base:bookworm` (scripts/base-image.sh).
//!
//! Environments that rebuild the same way: the build has the network the
//! task declares, and only the build (a build step fetches from an HTTP
//! server this test serves on the Docker bridge's gateway: there is no
//! internet here); the environment is built twice from nothing, and a
//! rebuild that reads otherwise is `non_reproducible` with both readings;
//! reasons carry no terminal escapes; a failed build step leaves no
//! container behind.
//!
//! Sessions, imported trials and `[[agent]]` attempts on a reward-only task
//! are graded by its own verifier in a fresh container of its environment,
//! on their workspace diff alone.
//!
//! These tests fail, never skip, without the daemon.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use util::example::ROOT;

/// The base image, made once per test process.
fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let out = Command::new(Path::new(ROOT).join("scripts/base-image.sh"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/base-image.sh failed (these tests need the Docker daemon):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// An HTTP server on the Docker bridge's gateway, where a build step on the
/// default network reaches the host and one with `--network none` reaches
/// nothing. Each path answers from its list in turn, repeating the last.
struct Server {
    /// `http://GATEWAY:PORT`.
    url: String,
    hits: Arc<Mutex<BTreeMap<String, usize>>>,
}

fn serve(answers: BTreeMap<&'static str, Vec<&'static str>>) -> Server {
    // The default route of a container on the default network (the daemon
    // does not always list the bridge's gateway).
    let gateway = Command::new("docker")
        .args([
            "run",
            "--rm",
            "assay-base:bookworm",
            "python3",
            "-c",
            "import socket, struct\nfor l in open('/proc/net/route').read().splitlines()[1:]:\n    f = l.split()\n    if f[1] == '00000000':\n        print(socket.inet_ntoa(struct.pack('<L', int(f[2], 16))))",
        ])
        .output()
        .unwrap();
    let gateway = String::from_utf8(gateway.stdout).unwrap().trim().to_owned();
    assert!(!gateway.is_empty(), "a container has no default route");
    let listener = TcpListener::bind((gateway.as_str(), 0)).unwrap();
    let url = format!("http://{gateway}:{}", listener.local_addr().unwrap().port());
    let hits = Arc::new(Mutex::new(BTreeMap::new()));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut line = String::new();
            let mut reader = BufReader::new(&stream);
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
            let n = {
                let mut hits = counted.lock().unwrap();
                let n = hits.entry(path.clone()).or_insert(0);
                *n += 1;
                *n - 1
            };
            let body = answers
                .get(path.as_str())
                .map_or("missing", |a| a[n.min(a.len() - 1)]);
            let mut stream = &stream;
            let _ = write!(
                stream,
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Server { url, hits }
}

/// A Terminal-Bench-shaped task folder: its environment sets `/app/value`
/// to 1 after `steps`, the oracle writes 2, and the tests pass when the
/// value is 2 and `/app/built` holds `ok`.
fn tb_task(root: &Path, name: &str, environment: &str, steps: &str) {
    let dir = root.join(name);
    let files = [
        (
            "task.toml",
            format!(
                "schema_version = \"1.4\"\n\n[task]\nname = \"tb/{name}\"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n\n[environment]\n{environment}\n"
            ),
        ),
        ("instruction.md", "Make /app/value hold 2.\n".to_owned()),
        (
            "environment/Dockerfile",
            format!("FROM assay-base:bookworm\nWORKDIR /app\n{steps}\nRUN echo 1 > /app/value\n"),
        ),
        (
            "tests/test.sh",
            "#!/bin/sh\nif [ \"$(cat /app/value)\" = 2 ] && [ \"$(cat /app/built)\" = ok ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
                .to_owned(),
        ),
        ("solution/solve.sh", "#!/bin/sh\necho 2 > /app/value\n".to_owned()),
    ];
    write_folder(&dir, files);
}

/// `files` (path in the folder, text) written under `dir`.
fn write_folder(dir: &Path, files: impl IntoIterator<Item = (&'static str, String)>) {
    for (rel, text) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// A build step that writes what `url` answers to `/app/built`.
fn fetch_step(url: &str) -> String {
    format!(
        "RUN python3 -c \"import urllib.request; open('/app/built', 'w').write(urllib.request.urlopen('{url}', timeout=20).read().decode())\""
    )
}

fn harbor_lines(p: &util::Project) -> BTreeMap<String, Value> {
    std::fs::read_to_string(p.path().join("release/harbor-tasks.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|l| (l["folder"].as_str().unwrap().to_owned(), l))
        .collect()
}

#[test]
fn a_harbor_environment_builds_with_its_declared_network_the_same_way_twice_and_leaves_nothing_behind()
 {
    setup();
    let server = serve(BTreeMap::from([
        ("/built", vec!["ok"]),
        ("/drifts", vec!["ok", "gone"]),
    ]));
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\n\n[screen]\nrepeats = 2\n\n[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n",
    );
    let images = util::harbor::BuiltImages::of(&p);
    let tb = p.path().join("tb");
    let built = fetch_step(&format!("{}/built", server.url));
    // Installs over the network, as `apt-get install` would.
    tb_task(&tb, "public", "network_mode = \"public\"", &built);
    tb_task(&tb, "no-network", "network_mode = \"no-network\"", &built);
    // What it fetches changes between the two builds.
    let drifts = fetch_step(&format!("{}/drifts", server.url));
    tb_task(&tb, "drifts", "network_mode = \"public\"", &drifts);
    // A failing step that prints terminal escapes; the marker names its
    // intermediate container.
    let marker = format!("assay-harbor-failing-step-{}", std::process::id());
    tb_task(
        &tb,
        "escapes",
        "network_mode = \"public\"",
        &format!("RUN echo \"\u{1b}[1;31m{marker}\u{1b}[0m\" && exit 3"),
    );
    // BuildKit-only syntax: the classic builder refuses it (docs/harbor.md).
    tb_task(
        &tb,
        "mount",
        "network_mode = \"no-network\"",
        "RUN --mount=type=tmpfs,target=/scratch true",
    );
    let first = p.build_json(&[]).code(0);
    assert_eq!(first.summary.by_kind["harbor_task"].executed, 5);
    let lines = harbor_lines(&p);

    let public = &lines["public"];
    assert_eq!(public["certified"], true, "{public:#}");
    assert_eq!(public["environment"]["networked"], true, "{public:#}");
    let rebuild = &public["rebuild"];
    assert_eq!(rebuild["environment"]["ok"], true, "{public:#}");
    assert_ne!(
        rebuild["environment"]["image"], public["environment"]["image"],
        "built again from nothing, not from the daemon's layer cache"
    );
    assert_eq!(
        rebuild["readings"]["oracle"][0]["reward"], 1.0,
        "{public:#}"
    );
    assert_eq!(
        server.hits.lock().unwrap()["/built"],
        2,
        "each build of `public` fetched once; `no-network`'s never reached the server"
    );

    let offline = &lines["no-network"];
    assert_eq!(offline["certified"], false, "{offline:#}");
    assert_eq!(offline["environment"]["networked"], false, "{offline:#}");
    let why = offline["uncertified_because"][0].as_str().unwrap();
    assert!(
        why.starts_with("environment_failed: docker build failed"),
        "{why}"
    );

    let drifted = &lines["drifts"];
    assert_eq!(drifted["certified"], false, "{drifted:#}");
    let why = drifted["uncertified_because"][0].as_str().unwrap();
    assert!(
        why.starts_with("non_reproducible: the first build (sha256:")
            && why.contains("read nop 0; oracle 1, the rebuild (sha256:")
            && why.ends_with("read nop 0; oracle 0"),
        "{why}"
    );
    assert_eq!(drifted["rebuild"]["readings"]["oracle"][0]["reward"], 0.0);

    let escapes = &lines["escapes"];
    let why = escapes["uncertified_because"][0].as_str().unwrap();
    assert!(
        why.starts_with("environment_failed: docker build failed") && why.contains(&marker),
        "{why}"
    );
    assert!(!why.contains('\u{1b}'), "{why:?}");

    // The builder's own words, never its deprecation notice.
    let mount = &lines["mount"];
    assert_eq!(mount["certified"], false, "{mount:#}");
    let why = mount["uncertified_because"][0].as_str().unwrap();
    assert!(
        why.starts_with("environment_failed: docker build failed")
            && why.contains("the --mount option requires BuildKit"),
        "{why}"
    );
    for line in lines.values() {
        assert!(
            !line.to_string().contains("legacy builder is deprecated"),
            "{line:#}"
        );
    }
    let release = std::fs::read_to_string(p.path().join("release/harbor-tasks.jsonl")).unwrap();
    assert!(
        !release.contains("\\u001b"),
        "no escape anywhere in the release's lines"
    );

    // No container of assay's outlives the build: neither the controls'
    // nor the failed step's intermediate one.
    let left = Command::new("docker")
        .args(["ps", "-a", "--no-trunc", "--format", "{{.Command}}"])
        .output()
        .unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(!left.contains(&marker), "{left}");
    for line in lines.values() {
        for environment in [&line["environment"], &line["rebuild"]["environment"]] {
            let Some(image) = environment["image"].as_str() else {
                continue;
            };
            let screens = Command::new("docker")
                .args(["ps", "-aq", "--filter", &format!("ancestor={image}")])
                .output()
                .unwrap();
            let screens = String::from_utf8_lossy(&screens.stdout);
            assert!(screens.trim().is_empty(), "{image}: {screens}");
        }
    }

    // A second build executes nothing and fetches nothing.
    let again = p.build_json(&[]).code(0);
    assert_eq!(again.summary.by_kind["harbor_task"].executed, 0);
    assert_eq!(server.hits.lock().unwrap()["/built"], 2);

    // Every image the builds made carries the cache's label (the first
    // build's and the rebuild's of each built task), and goes with the
    // guard, with the layers beneath it.
    let built: Vec<String> = lines
        .values()
        .flat_map(|l| {
            [
                &l["environment"]["image"],
                &l["rebuild"]["environment"]["image"],
            ]
        })
        .filter_map(|image| image.as_str().map(str::to_owned))
        .collect();
    assert!(!built.is_empty());
    let mut labelled = images.ids();
    labelled.sort();
    let mut expected = built.clone();
    expected.sort();
    assert_eq!(labelled, expected);
    drop(images);
    for image in built {
        let gone = Command::new("docker")
            .args(["image", "inspect", &image])
            .output()
            .unwrap();
        assert!(!gone.status.success(), "{image} left behind");
    }
}

/// One trial folder as Harbor writes it for an exported task: its result,
/// and the exported verifier's `assay-verdict.json` naming the task's
/// instance id and the digest it ran, with `agent.patch`.
fn exported_trial(job: &Path, name: &str, (task, digest): (&str, &str), patch: &str) {
    let dir = job.join(name);
    std::fs::create_dir_all(dir.join("verifier")).unwrap();
    let result = serde_json::json!({
        "task_name": format!("assay/{task}"),
        "trial_name": name,
        "agent_info": {"name": "alpha", "model_info": {"name": "m"}},
        "agent_result": {},
        "verifier_result": {"rewards": {"reward": 0.0}},
    });
    std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    let verdict = serde_json::json!({"task_id": task, "digest": digest});
    std::fs::write(dir.join("verifier/assay-verdict.json"), verdict.to_string()).unwrap();
    std::fs::write(dir.join("verifier/agent.patch"), patch).unwrap();
}

/// A job run on tasks exported from a `--executor docker` build, imported
/// by a build on the pipeline's own (local) executor: the tasks have other
/// digests there (the environment is part of a task's key) but the same
/// content, so no trial is `task_changed`; a trial that ran a digest this
/// cache never held is.
#[test]
fn an_executor_override_does_not_mark_imported_trials_task_changed() {
    setup();
    let p = util::example::example_project();
    p.run(&["build", "--executor", "docker"]).code(0);
    let docker_tasks = std::fs::read_to_string(p.path().join("release/tasks.jsonl")).unwrap();
    let task: Value = docker_tasks
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|t| t["certified"] == true && !t["instance_id"].as_str().unwrap().contains("__"))
        .unwrap();
    let id = task["instance_id"].as_str().unwrap();
    let ran = task["digest"].as_str().unwrap();
    let job = p.path().join("examples/calc/sessions/harbor/elsewhere");
    std::fs::create_dir_all(&job).unwrap();
    std::fs::write(job.join("config.json"), "{}").unwrap();
    std::fs::write(job.join("result.json"), r#"{"n_total_trials": 2}"#).unwrap();
    exported_trial(&job, "same__1", (id, ran), "");
    let never = "0".repeat(64);
    exported_trial(&job, "changed__1", (id, &never), "");
    p.run(&["build"]).code(0);

    let local: Value = std::fs::read_to_string(p.path().join("release/tasks.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|t| t["instance_id"] == id && t["track"] == task["track"])
        .unwrap();
    assert_ne!(
        local["digest"], ran,
        "the local build's task has its own digest"
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    let t = &summary["trials"]["harbor:harbor/elsewhere"];
    assert_eq!(
        t["task_changed"],
        serde_json::json!(["harbor/elsewhere/changed__1"]),
        "{t:#}"
    );
}

/// A reward-only task of Terminal-Bench's shape in Python: `/app/calc.py`
/// adds wrongly; the task's own `tests/test.sh` writes reward 1 when it
/// adds, else 0; the oracle fixes it with `sed`. `name` is its `[task]
/// name`.
fn py_task(root: &Path, folder: &str, name: &str) {
    let dir = root.join(folder);
    let files = [
        (
            "task.toml",
            format!(
                "schema_version = \"1.4\"\n\n[task]\nname = \"{name}\"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n\n[environment]\nnetwork_mode = \"no-network\"\n"
            ),
        ),
        ("instruction.md", "Fix add() in /app/calc.py.\n".to_owned()),
        (
            "environment/Dockerfile",
            "FROM assay-base:bookworm\nWORKDIR /app\nCOPY calc.py /app/calc.py\n".to_owned(),
        ),
        (
            "environment/calc.py",
            "def add(a, b):\n    return a - b\n".to_owned(),
        ),
        (
            "tests/test.sh",
            "#!/bin/sh\nif python3 /tests/test_calc.py >&2; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
                .to_owned(),
        ),
        (
            "tests/test_calc.py",
            "import sys\nsys.path.insert(0, '/app')\nimport calc\nassert calc.add(2, 3) == 5, calc.add(2, 3)\nprint('ok')\n"
                .to_owned(),
        ),
        (
            "solution/solve.sh",
            "#!/bin/sh\nsed -i 's/a - b/a + b/' /app/calc.py\n".to_owned(),
        ),
    ];
    write_folder(&dir, files);
}

/// A trial of `terminal/py-calc` as Harbor writes it for a task assay did
/// not export: its result, and the working directory the job collected
/// (`artifacts/workspace/calc.py`) when `calc` is given.
fn tb_trial(job: &Path, name: &str, agent: &str, reward: Option<f64>, calc: Option<&str>) {
    let dir = job.join(name);
    std::fs::create_dir_all(dir.join("verifier")).unwrap();
    let result = serde_json::json!({
        "task_name": "terminal/py-calc",
        "trial_name": name,
        "agent_info": {"name": agent},
        "agent_result": {},
        "verifier_result": reward.map(|r| serde_json::json!({"rewards": {"reward": r}})),
    });
    std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    if let Some(calc) = calc {
        let workspace = dir.join("artifacts/workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(workspace.join("calc.py"), calc).unwrap();
    }
}

fn calc_patch(to: &str) -> String {
    format!(
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return {to}\n"
    )
}

/// The gold session `resolved`, the empty and the wrong one `unresolved`,
/// the agent's.
fn gold_empty_wrong(g: &BTreeMap<String, BTreeMap<String, String>>) {
    let verdict = |s: &str| (g[s]["verdict"].as_str(), g[s]["fault"].as_str());
    assert_eq!(
        verdict("gold.json"),
        ("resolved", "none"),
        "{:#?}",
        g["gold.json"]
    );
    assert_eq!(verdict("empty.json"), ("unresolved", "agent"));
    assert_eq!(verdict("wrong.json"), ("unresolved", "agent"));
}

fn grades(p: &util::Project) -> BTreeMap<String, BTreeMap<String, String>> {
    let text = std::fs::read_to_string(p.path().join("release/results.csv")).unwrap();
    util::csv::csv_records(&text)
        .into_iter()
        .map(|r| (r["session"].clone(), r))
        .collect()
}

/// Sessions on a reward-only Harbor task of a Harbor-only pipeline are
/// graded by the task's own verifier in a fresh container of its
/// environment, on their workspace diff: the gold `resolved`, an empty and
/// a wrong patch `unresolved`, a patch that does not apply
/// `patch_apply_failed` (each the agent's); a session on a task that did
/// not certify is not graded; the build's summary line and report.html
/// show the Harbor funnel; a second build executes nothing.
#[test]
fn sessions_on_a_reward_only_harbor_task_are_graded_by_its_own_verifier_in_a_fresh_container() {
    setup();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let tb = p.path().join("tb");
    py_task(&tb, "py-calc", "terminal/py-calc");
    // Its oracle does not fix it: never certified.
    py_task(&tb, "py-broken", "terminal/py-broken");
    std::fs::write(tb.join("py-broken/solution/solve.sh"), "#!/bin/sh\ntrue\n").unwrap();
    p.session("gold", "terminal/py-calc", &calc_patch("a + b"));
    p.session("empty", "tb/py-calc", "");
    p.session("wrong", "tb/py-calc", &calc_patch("a * b"));
    p.session(
        "stale",
        "tb/py-calc",
        &calc_patch("a + b").replace("a - b", "a / b"),
    );
    p.session("uncertified", "tb/py-broken", &calc_patch("a + b"));
    // A Harbor job of the task that collected each trial's working
    // directory as the artifact `workspace`.
    let job = p.path().join("sessions/harbor/tb");
    std::fs::create_dir_all(&job).unwrap();
    std::fs::write(job.join("config.json"), "{}").unwrap();
    std::fs::write(job.join("result.json"), r#"{"n_total_trials": 5}"#).unwrap();
    let fixed = "def add(a, b):\n    return a + b\n";
    let broken = "def add(a, b):\n    return a - b\n";
    tb_trial(&job, "oracle__1", "oracle", Some(1.0), Some(fixed));
    tb_trial(&job, "nop__1", "nop", Some(0.0), Some(broken));
    tb_trial(&job, "solved__1", "beta", Some(1.0), Some(fixed));
    // Its reward says 1; its working directory adds nothing.
    tb_trial(&job, "forged__1", "beta", Some(1.0), Some(broken));
    // Kept nothing, while the job's controls kept theirs: the agent's.
    tb_trial(&job, "lost__1", "beta", None, None);
    let first = p.build_json(&[]).code(0);
    assert_eq!(first.summary.by_kind["harbor_grade"].executed, 10);
    assert!(
        first.run.stderr.contains(
            "harbor: 2 tasks screened -> 1 certified (tb/py-calc); uncertified: oracle_fails 1"
        ),
        "{}",
        first.run.stderr
    );

    let g = grades(&p);
    gold_empty_wrong(&g);
    let verdict = |s: &str| (g[s]["verdict"].as_str(), g[s]["fault"].as_str());
    assert_eq!(verdict("stale.json"), ("patch_apply_failed", "agent"));
    assert_eq!(g["gold.json"]["instance_id"], "tb/py-calc");
    let trial = |t: &str| verdict(&format!("harbor/tb/{t}"));
    assert_eq!(trial("oracle__1"), ("resolved", "none"));
    assert_eq!(trial("nop__1"), ("unresolved", "agent"));
    assert_eq!(trial("solved__1"), ("resolved", "none"));
    assert_eq!(trial("forged__1"), ("unresolved", "agent"));
    assert_eq!(trial("lost__1"), ("unresolved", "agent"));
    assert!(!g.contains_key("uncertified.json"), "{g:#?}");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    let alpha = &summary["agents"]["alpha/model-a"];
    assert_eq!(
        (alpha["n"].as_u64(), alpha["resolved"].as_u64()),
        (Some(4), Some(1)),
        "{alpha:#}"
    );
    let not_graded = summary["not_graded"].to_string();
    assert!(
        not_graded.contains("uncertified") && not_graded.contains("not certified"),
        "{not_graded}"
    );
    let beta = &summary["agents"]["beta/none"];
    assert_eq!(
        (beta["n"].as_u64(), beta["resolved"].as_u64()),
        (Some(3), Some(1)),
        "{beta:#}"
    );
    let trials = &summary["trials"]["harbor:harbor/tb"];
    let disagreeing = trials["disagreements"].to_string();
    assert!(
        disagreeing.contains("forged__1") && disagreeing.contains("lost__1"),
        "{trials:#}"
    );
    let html = std::fs::read_to_string(p.path().join("release/report.html")).unwrap();
    assert!(html.contains("Harbor tasks") && html.contains("<code>tb/py-calc</code>"));
    // Every figure of the report names itself, the Harbor funnel's among them.
    util::figures::explained(
        &p,
        &[],
        &p.path().join("release"),
        10,
        &["funnel.harbor.certified", "funnel.harbor.uncertified"],
    );
    // No grading container outlives the build.
    let image = harbor_lines(&p)["py-calc"]["environment"]["image"]
        .as_str()
        .unwrap()
        .to_owned();
    let left = Command::new("docker")
        .args(["ps", "-aq", "--filter", &format!("ancestor={image}")])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&left.stdout).trim().is_empty());

    let again = p.build_json(&[]).code(0);
    assert_eq!(again.summary.by_kind["harbor_grade"].executed, 0);
    assert_eq!(again.summary.by_kind["harbor_task"].executed, 0);
    // Every published number recomputes from the grades.
    p.run(&["verify"]).code(0);
    // A grade by the task's verifier is an observation: read again on
    // request, and re-executed by an auditor, with the same verdicts.
    let reread = p.build_json(&["--reread", "harbor_grade"]).code(0);
    assert_eq!(reread.summary.by_kind["harbor_grade"].executed, 10);
    assert_eq!(reread.summary.by_kind["harbor_task"].executed, 0);
    let verdicts = |g: &BTreeMap<String, BTreeMap<String, String>>| {
        g.iter()
            .map(|(s, r)| (s.clone(), r["verdict"].clone(), r["fault"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(&grades(&p)), verdicts(&g));
    p.run(&["verify", "--reexecute", "harbor_grade"])
        .code(0)
        .stdout_has("re-executed 10 nodes of kinds harbor_grade")
        .stdout_has("0 verdicts changed");
}

/// A task folder whose verifier fetches `url` at verify time and writes
/// reward 1 only when the fetch answers `ok` and `/app/value` is 2 (the
/// oracle writes it), declaring `environment` in its `task.toml`.
fn fetching_task(root: &Path, folder: &str, environment: &str, url: &str) {
    let files = [
        (
            "task.toml",
            format!(
                "schema_version = \"1.4\"\n\n[task]\nname = \"tb/{folder}\"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n\n[environment]\n{environment}\n"
            ),
        ),
        ("instruction.md", "Make /app/value hold 2.\n".to_owned()),
        (
            "environment/Dockerfile",
            "FROM assay-base:bookworm\nWORKDIR /app\nRUN echo 1 > /app/value\n".to_owned(),
        ),
        (
            "tests/test.sh",
            format!(
                "#!/bin/sh\nif python3 -c \"import urllib.request; assert urllib.request.urlopen('{url}', timeout=10).read() == b'ok'\" && [ \"$(cat /app/value)\" = 2 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
            ),
        ),
        (
            "solution/solve.sh",
            "#!/bin/sh\necho 2 > /app/value\n".to_owned(),
        ),
    ];
    write_folder(&root.join(folder), files);
}

/// The network a task declares is the network of every run that decides
/// its verdicts: a verifier that fetches at verify time certifies when the
/// task declares `public` (its controls and the graded session reach the
/// server on the Docker bridge's gateway), and not when it declares
/// `no-network` or the unenforced `allowlist`, with a reason naming the
/// missing network and the declaration; each reading records whether it
/// had the network.
#[test]
fn the_network_a_harbor_task_declares_is_the_network_of_its_controls_and_graded_runs() {
    setup();
    let server = serve(BTreeMap::from([
        ("/public", vec!["ok"]),
        ("/none", vec!["ok"]),
        ("/allowlist", vec!["ok"]),
    ]));
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let tb = p.path().join("tb");
    let url = |path: &str| format!("{}{path}", server.url);
    fetching_task(&tb, "public", "network_mode = \"public\"", &url("/public"));
    fetching_task(&tb, "none", "network_mode = \"no-network\"", &url("/none"));
    fetching_task(
        &tb,
        "allowlist",
        "network_mode = \"allowlist\"\nallowed_hosts = [\"example.com\"]",
        &url("/allowlist"),
    );
    // The session that solves it: `value` in the image's working
    // directory (`/app`) made 2.
    let solve = "diff --git a/value b/value\n--- a/value\n+++ b/value\n@@ -1 +1 @@\n-1\n+2\n";
    p.session("solved", "tb/public", solve);
    p.session("offline", "tb/none", solve);
    let first = p.build_json(&[]).code(0);
    let lines = harbor_lines(&p);

    let public = &lines["public"];
    assert_eq!(public["certified"], true, "{public:#}");
    for control in ["nop", "oracle"] {
        let reading = &public["readings"][control][0];
        assert_eq!(reading["networked"], true, "{public:#}");
        assert_eq!(reading["network"], "public", "{public:#}");
    }
    let g = grades(&p);
    assert_eq!(
        (
            g["solved.json"]["verdict"].as_str(),
            g["solved.json"]["fault"].as_str()
        ),
        ("resolved", "none"),
        "{g:#?}"
    );
    assert!(!g.contains_key("offline.json"), "{g:#?}");
    // Two controls, the rebuild's two, and the session's graded run.
    assert_eq!(server.hits.lock().unwrap().get("/public"), Some(&5));

    for (folder, declared) in [("none", "no-network"), ("allowlist", "allowlist")] {
        let line = &lines[folder];
        assert_eq!(line["certified"], false, "{line:#}");
        assert_eq!(
            line["readings"]["oracle"][0]["networked"], false,
            "{line:#}"
        );
        assert_eq!(
            line["readings"]["oracle"][0]["network"], declared,
            "{line:#}"
        );
        let why = line["uncertified_because"][0].as_str().unwrap();
        assert!(
            why.starts_with("oracle_fails: reading 1 scored 0; its verifier's log: no network (the task declares `network_mode = \"")
                && why.contains(declared)
                && why.contains("Network is unreachable"),
            "{why}"
        );
        assert_eq!(server.hits.lock().unwrap().get(&format!("/{folder}")), None);
    }
    let why = lines["allowlist"]["uncertified_because"][0]
        .as_str()
        .unwrap();
    assert!(why.contains("which assay does not enforce"), "{why}");
    assert!(
        first.run.stderr.contains(
            "harbor: 3 tasks screened -> 1 certified (tb/public); uncertified: oracle_fails 2"
        ),
        "{}",
        first.run.stderr
    );
}

/// One task folder whose `task.toml` declares a `network_mode` Harbor
/// does not know fails that task alone: the other task certifies, its
/// sessions are graded and the release is written, with the bad folder
/// uncertified for the key and the value; the plain console names the
/// file and points at the value. The report names the uncertified task,
/// counts the empty patch of a session its own verifier graded, and is
/// dated by the folders' newest change.
#[test]
fn an_unsupported_network_mode_fails_only_its_task_and_the_console_names_the_file_and_the_value() {
    setup();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    let tb = p.path().join("tb");
    py_task(&tb, "py-calc", "terminal/py-calc");
    py_task(&tb, "bad-network", "terminal/bad-network");
    let toml = tb.join("bad-network/task.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, text.replace("\"no-network\"", "\"bridge\"")).unwrap();
    p.session("gold", "tb/py-calc", &calc_patch("a + b"));
    p.session("empty", "tb/py-calc", "");
    p.session("on-bad", "tb/bad-network", &calc_patch("a + b"));
    let run = p.run(&["build"]).code(0);
    for shown in [
        "tb/bad-network/task.toml: [environment] network_mode = \"bridge\" is none of",
        "[tb/bad-network/task.toml:",
        "network_mode = \"bridge\"",
        "this task is uncertified (`task_toml_invalid`)",
        "harbor: 2 tasks screened -> 1 certified (tb/py-calc); uncertified: task_toml_invalid 1",
    ] {
        assert!(run.stderr.contains(shown), "{shown}\n{}", run.stderr);
    }
    assert!(!run.stderr.contains("not written"), "{}", run.stderr);

    let lines = harbor_lines(&p);
    assert_eq!(
        lines["py-calc"]["certified"], true,
        "{:#}",
        lines["py-calc"]
    );
    let bad = &lines["bad-network"];
    assert_eq!(bad["certified"], false, "{bad:#}");
    assert_eq!(
        bad["uncertified_because"][0],
        "task_toml_invalid: task.toml: [environment] network_mode = \"bridge\" is none of \"public\", \"no-network\", \"allowlist\""
    );
    let g = grades(&p);
    assert_eq!(g["gold.json"]["verdict"], "resolved");
    assert_eq!(g["empty.json"]["empty_patch"], "true");
    assert!(!g.contains_key("on-bad.json"), "{g:#?}");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["agents"]["alpha/model-a"]["empty_patch"], 1);
    let html = std::fs::read_to_string(p.path().join("release/report.html")).unwrap();
    assert!(html.contains("<h2>Uncertified tasks (1)</h2>"), "{html}");
    assert!(html.contains("<tr><td><code>tb/bad-network</code></td><td>task_toml_invalid: "));
    assert!(html.contains(", the newest change of a Harbor task folder</td>"));
    assert!(!html.contains("1970-"));
    // The same inputs give the same bytes.
    p.run(&["build"]).code(0);
    let again = std::fs::read_to_string(p.path().join("release/report.html")).unwrap();
    assert_eq!(again, html);
}

/// A reward-only task of Terminal-Bench's shape in Go: `/app/calc.go`'s
/// `Add` subtracts; the task's `tests/test.sh` copies its test beside it
/// and writes reward 1 when `go test` passes, else 0.
fn go_task(root: &Path, folder: &str) {
    let dir = root.join(folder);
    let files = [
        (
            "task.toml",
            format!(
                "schema_version = \"1.4\"\n\n[task]\nname = \"terminal/{folder}\"\n\n[verifier]\ntimeout_sec = 120.0\n\n[agent]\ntimeout_sec = 60.0\n\n[environment]\nnetwork_mode = \"no-network\"\n"
            ),
        ),
        ("instruction.md", "Fix Add in /app/calc.go.\n".to_owned()),
        (
            "environment/Dockerfile",
            format!(
                "FROM {}\nWORKDIR /app\nCOPY go.mod calc.go /app/\n",
                util::harbor::go_image()
            ),
        ),
        ("environment/go.mod", "module calc\n\ngo 1.19\n".to_owned()),
        (
            "environment/calc.go",
            "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n".to_owned(),
        ),
        (
            "tests/test.sh",
            "#!/bin/sh\ncp /tests/calc_test.go /app/ && cd /app && if go test ./... >&2; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
                .to_owned(),
        ),
        (
            "tests/calc_test.go",
            "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n"
                .to_owned(),
        ),
        (
            "solution/solve.sh",
            "#!/bin/sh\nsed -i 's/a - b/a + b/' /app/calc.go\n".to_owned(),
        ),
    ];
    write_folder(&dir, files);
}

fn go_patch(to: &str) -> String {
    format!(
        "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1,5 +1,5 @@\n package calc\n \n func Add(a, b int) int {{\n-\treturn a - b\n+\treturn {to}\n }}\n"
    )
}

/// The same in Go: certified by its own controls, then a gold, an empty
/// and a wrong session graded by `go test` in a fresh container.
#[test]
fn sessions_on_a_go_harbor_task_are_graded_by_its_own_verifier() {
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\nsessions = \"sessions\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n",
    );
    let _images = util::harbor::BuiltImages::of(&p);
    go_task(&p.path().join("tb"), "go-calc");
    p.session("gold", "terminal/go-calc", &go_patch("a + b"));
    p.session("empty", "terminal/go-calc", "");
    p.session("wrong", "terminal/go-calc", &go_patch("b - a"));
    let first = p.build_json(&[]).code(0);
    assert_eq!(first.summary.by_kind["harbor_grade"].executed, 3);
    let line = &harbor_lines(&p)["go-calc"];
    assert_eq!(line["certified"], true, "{line:#}");
    let g = grades(&p);
    gold_empty_wrong(&g);
    let again = p.build_json(&[]).code(0);
    assert_eq!(again.summary.by_kind["harbor_grade"].executed, 0);
}

/// `gc --images`: the Harbor environment images this cache built that no
/// kept build names are counted, and removed with `--apply`; the images a
/// kept build names stay, and an image labelled for another cache (or
/// built by anything else) is never listed.
#[test]
fn gc_images_removes_only_this_caches_environment_images_no_kept_build_names() {
    setup();
    let p = util::Project::new().pipeline(
        "cache = \"cache\"\nrelease = \"release\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n",
    );
    let images = util::harbor::BuiltImages::of(&p);
    let tb = p.path().join("tb");
    tb_task(
        &tb,
        "t",
        "network_mode = \"no-network\"",
        "RUN echo ok > /app/built",
    );
    p.build_json(&[]).code(0);
    let first = images.ids();
    assert_eq!(first.len(), 2, "the build and the rebuild: {first:?}");
    // Another cache's image, labelled as assay labels its own.
    let other = format!("assay-gc-other-{}", std::process::id());
    let mut build = Command::new("docker")
        .args([
            "build",
            "-q",
            "--label",
            "assay.harbor=environment",
            "--label",
            "assay.cache=/nowhere/else/cache",
            "-t",
            &other,
            "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    build
        .stdin
        .take()
        .unwrap()
        .write_all(b"FROM assay-base:bookworm\n")
        .unwrap();
    assert!(build.wait().unwrap().success());
    let other_exists = || {
        Command::new("docker")
            .args(["image", "inspect", &other])
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(other_exists());

    // A changed instruction is a changed folder: new images.
    std::fs::write(
        tb.join("t/instruction.md"),
        "Make /app/value hold 2, please.\n",
    )
    .unwrap();
    p.build_json(&[]).code(0);
    let all = images.ids();
    assert_eq!(all.len(), 4, "{all:?}");

    // Both builds kept: nothing to free.
    p.run(&["gc", "--images"])
        .code(0)
        .stdout_has("would free 0 Harbor environment images of this cache");
    // Only the last build kept: the first build's two images.
    p.run(&["gc", "--keep", "1", "--images"])
        .code(0)
        .stdout_has("would free 2 Harbor environment images of this cache")
        .stdout_has("run `assay gc --apply --images`");
    assert_eq!(images.ids().len(), 4, "a report removes nothing");
    p.run(&["gc", "--keep", "1", "--images", "--apply"])
        .code(0)
        .stdout_has("freed 2 Harbor environment images of this cache");
    let mut left = images.ids();
    left.sort();
    let mut second: Vec<String> = all.into_iter().filter(|i| !first.contains(i)).collect();
    second.sort();
    assert_eq!(left, second, "the kept build's images stay");
    assert!(other_exists(), "another cache's image is never touched");
    let _ = Command::new("docker").args(["rmi", "-f", &other]).output();
    // The kept build's tasks are still hits.
    let again = p.build_json(&[]).code(0);
    assert_eq!(again.summary.by_kind["harbor_task"].executed, 0);
}

/// The key the scripted endpoint expects; the agents hold a placeholder.
const KEY: &str = "sk-harbor-test-key-0123456789";

/// An `[[agent]]` whose command is a Python script over `ask()` (one model
/// call through the proxy to the endpoint at `url`, its answer's content)
/// and `put(path, text)` (a write, saying whether it was made); `extra`
/// are more of its settings.
fn scripted_agent(label: &str, url: &str, extra: &str, script: &str) -> String {
    format!(
        r#"
[[agent]]
label = "{label}"
model = "script-1"
base_url = "{url}"
key_env = "OPENAI_API_KEY"
{extra}
command = '''
python3 - <<'PY'
import json, os, urllib.request
def ask():
    req = urllib.request.Request(os.environ["ASSAY_BASE_URL"] + "/chat/completions",
        data=json.dumps({{"model": "{label}"}}).encode(),
        headers={{"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"}})
    return json.loads(urllib.request.urlopen(req).read())["choices"][0]["message"]["content"]
def put(path, text):
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        open(path, "w").write(text)
        print("wrote", path)
    except OSError as e:
        print("not written", path, type(e).__name__)
{script}
print("agent-done")
PY
'''
"#
    )
}

/// `[[agent]]`s on reward-only Harbor tasks of a Harbor-only pipeline: each
/// attempt runs in a container of the task's environment image (its
/// working directory a link to the bound workspace) with its model calls
/// through assay's proxy (a scripted endpoint on loopback, the key
/// injected by the proxy), and its workspace diff is graded by the task's
/// own verifier in a fresh container. The solver `resolved`, the idle one
/// `unresolved`; the forger writes reward files where the verifier looks
/// (`/logs/verifier`), the task's tests (`/tests`), a reward inside its
/// workspace and the fix everywhere but the workspace's files (`/tmp`,
/// its home, its `.git`): nothing of it reaches its grade, `unresolved`;
/// a workspace over the read-back bound (a sparse file) is refused unread,
/// `patch_apply_failed`.
/// A task that did not certify gets no attempt run (`not_started`). A
/// second build executes nothing; a changed agent setting reruns only that
/// agent's attempts and their grades.
#[test]
fn agents_attempt_a_reward_only_harbor_task_in_its_image_and_only_their_workspace_diff_is_graded() {
    setup();
    util::project::set_env(vec![("OPENAI_API_KEY".into(), KEY.into())]);
    let llm = util::llm::Llm::start(|_, _| {
        let fix = "def add(a, b):\n    return a + b\n";
        let body = serde_json::json!({"choices": [{"message": {"content": fix}}]});
        (200, body.to_string())
    });
    let url = llm.url();
    let forger = r#"fix = ask()
for path in ["/logs/verifier/reward.txt", "/logs/verifier/reward.json", "/tests/test.sh", "/tests/test_calc.py"]:
    put(path, "1\n")
put("logs/verifier/reward.txt", "1\n")
for path in ["/tmp/calc.py", os.path.expanduser("~/calc.py"), ".git/calc.py"]:
    put(path, fix)"#;
    let pipeline = |idle_turns: u32| {
        format!(
            "cache = \"cache\"\nrelease = \"release\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n{}{}{}{}",
            scripted_agent("solver", &url, "", "put(\"/app/calc.py\", ask())"),
            scripted_agent("idle", &url, &format!("turns = {idle_turns}"), "pass"),
            scripted_agent("forger", &url, "", forger),
            // A sparse file of 2 GiB: no blocks, past the write limit by its
            // apparent size.
            scripted_agent(
                "sparse",
                &url,
                "",
                "os.truncate(open('big', 'w').fileno(), 2 << 30)"
            ),
        )
    };
    let p = util::Project::new().pipeline(&pipeline(50));
    let _images = util::harbor::BuiltImages::of(&p);
    let tb = p.path().join("tb");
    py_task(&tb, "py-calc", "terminal/py-calc");
    // Its oracle does not fix it: never certified, never attempted.
    py_task(&tb, "py-broken", "terminal/py-broken");
    std::fs::write(tb.join("py-broken/solution/solve.sh"), "#!/bin/sh\ntrue\n").unwrap();

    let first = p.build_json(&[]).code(0);
    assert_eq!(first.summary.by_kind["attempt"].executed, 8);
    assert_eq!(first.summary.by_kind["harbor_grade"].executed, 8);
    let forged = p.output_record("attempt:agent/forger/tb/py-calc/0");
    let log = String::from_utf8(p.blob(forged["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("agent-done"), "{log}");
    assert!(
        !log.contains("wrote /logs") && !log.contains("wrote /tests"),
        "the image's root is read-only to the agent: {log}"
    );
    assert!(
        log.contains("wrote /tmp/calc.py") && log.contains("wrote .git/calc.py"),
        "{log}"
    );
    let skipped = p.output_record("attempt:agent/solver/tb/py-broken/0");
    assert!(
        skipped["skipped"]
            .as_str()
            .is_some_and(|why| why.contains("not certified")),
        "{skipped:#}"
    );
    // The agents' calls (the idle one sends none: the proxy's probe of the
    // endpoint at its end goes without the key).
    let calls: Vec<_> = llm
        .seen()
        .into_iter()
        .filter(|s| s.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert!(
        calls
            .iter()
            .all(|s| s.authorization.as_deref() == Some(&format!("Bearer {KEY}"))),
        "the proxy injects the key"
    );

    let g = grades(&p);
    let verdict = |s: &str| {
        let r = g
            .get(s)
            .unwrap_or_else(|| panic!("no grade of {s}: {g:#?}"));
        (r["verdict"].as_str(), r["fault"].as_str())
    };
    assert_eq!(verdict("agent/solver/tb/py-calc/0"), ("resolved", "none"));
    assert_eq!(verdict("agent/idle/tb/py-calc/0"), ("unresolved", "agent"));
    assert_eq!(
        verdict("agent/forger/tb/py-calc/0"),
        ("unresolved", "agent")
    );
    assert_eq!(g["agent/solver/tb/py-calc/0"]["instance_id"], "tb/py-calc");
    assert!(!g.contains_key("agent/solver/tb/py-broken/0"), "{g:#?}");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    // Counted under the agent, and on its leaderboard: the certified task
    // is its denominator (the uncertified one is in no one's).
    for (label, resolved) in [("solver", 1u8), ("idle", 0), ("forger", 0), ("sparse", 0)] {
        let a = &summary["agents"][format!("{label}/script-1")];
        assert_eq!(
            (a["n"].as_u64(), a["resolved"].as_u64()),
            (Some(1), Some(u64::from(resolved))),
            "{label}: {a:#}"
        );
        let board = &a["leaderboard"];
        assert_eq!(
            (board["tasks"].as_u64(), board["score"].as_f64()),
            (Some(1), Some(f64::from(resolved))),
            "{label}: {board:#}"
        );
    }
    let attempts = &summary["trials"]["attempts"];
    assert_eq!(
        (
            attempts["planned"].as_u64(),
            attempts["completed"].as_u64(),
            attempts["not_started"].as_u64()
        ),
        (Some(8), Some(4), Some(4)),
        "{attempts:#}"
    );
    // No attempt's container outlives the build.
    let image = p.output_record("swe_env:tb/py-calc")["image"]
        .as_str()
        .unwrap()
        .to_owned();
    let left = Command::new("docker")
        .args(["ps", "-aq", "--filter", &format!("ancestor={image}")])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&left.stdout).trim().is_empty());

    let again = p.build_json(&[]).code(0);
    assert_eq!(
        again.summary.total.executed, 0,
        "{:#?}",
        again.summary.by_kind
    );
    // Every published number recomputes from the grades.
    p.run(&["verify"]).code(0);
    // The idle agent's turns change: its attempts run again, and what their
    // records change; no other agent's, no task, no environment.
    p.write("pipeline.toml", pipeline(7));
    let changed = p.build_json(&[]).code(0);
    assert_eq!(changed.summary.by_kind["attempt"].executed, 2);
    for (kind, counts) in &changed.summary.by_kind {
        if !["attempt", "harbor_grade", "release"].contains(&kind.as_str()) {
            assert_eq!(counts.executed, 0, "{kind}: {:#?}", changed.summary.by_kind);
        }
    }
    assert!(changed.summary.by_kind["harbor_grade"].executed <= 2);
}

/// An attempt on a reward-only Harbor task whose endpoint failed it (503
/// to its every request, in the proxy's records) keeps its verdict and is
/// the infrastructure's: left out of the agent's leaderboard, and tried
/// again by the next build.
#[test]
fn an_attempt_on_a_reward_only_harbor_task_the_endpoint_failed_is_the_infrastructures() {
    setup();
    util::project::set_env(vec![("OPENAI_API_KEY".into(), KEY.into())]);
    let llm = util::llm::Llm::start(|_, _| (503, r#"{"error": "overloaded"}"#.to_owned()));
    let p = util::Project::new().pipeline(&format!(
        "cache = \"cache\"\nrelease = \"release\"\n\n[screen]\nrepeats = 1\n\n[[harbor_dataset]]\nname = \"tb\"\npath = \"tb\"\n{}",
        scripted_agent("solver", &llm.url(), "retries = 0", "put(\"/app/calc.py\", ask())"),
    ));
    let _images = util::harbor::BuiltImages::of(&p);
    py_task(&p.path().join("tb"), "py-calc", "terminal/py-calc");
    p.build_json(&[]).code(0);
    let attempt = p.output_record("attempt:agent/solver/tb/py-calc/0");
    assert!(
        attempt["infrastructure"]
            .as_str()
            .is_some_and(|why| why.contains("status 503")),
        "{attempt:#}"
    );
    let g = grades(&p);
    let grade = &g["agent/solver/tb/py-calc/0"];
    assert_eq!(
        (grade["verdict"].as_str(), grade["fault"].as_str()),
        ("unresolved", "infrastructure"),
        "{grade:#?}"
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    let board = &summary["agents"]["solver/script-1"]["leaderboard"];
    assert_eq!(
        (board["tasks"].as_u64(), board["attempts"].as_u64()),
        (Some(1), Some(0)),
        "{board:#}"
    );
    assert_eq!(
        board["left_out"].as_array().map(Vec::len),
        Some(1),
        "{board:#}"
    );
    let again = p.build_json(&[]).code(0);
    assert_eq!(again.summary.by_kind["attempt"].executed, 1);
    assert_eq!(again.summary.by_kind["harbor_task"].executed, 0);
}
