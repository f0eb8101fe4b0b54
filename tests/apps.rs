//! App tasks through the real binary: `examples/webapp` (its repository
//! made by its own `make-repo.sh`, its pipeline and sessions copied as they
//! are) built on the local executor. Each session fails at the layer its
//! patch breaks, with the agent's fault; a port the task's own service
//! holds and a Chromium that cannot start are the harness's. A second
//! build executes nothing; a changed probe reruns only the probe and
//! browser nodes of its task, a changed flow only the browser nodes.
//!
//! On the docker executor the same example gives the same layers and
//! faults, a second build executes nothing and no container outlives a
//! build; a hostile app's start script reaches nothing (the probes'
//! expectations, the host, anything outside its tree) and leaves no
//! process behind.
//!
//! Needs bubblewrap, python3 and the machine's Chromium; the docker tests
//! a running Docker daemon (they fail, never skip) and build the base
//! image with `scripts/base-image.sh` when it is absent.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;
use util::Project;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");

/// The example as a project; the session kept back is moved aside.
fn project() -> Project {
    let project = Project::new();
    for dir in ["webapp", "lib"] {
        util::example::copy_tree(&Path::new(EXAMPLE).join(dir), &project.path().join(dir));
    }
    project
}

fn build(project: &Project, args: &[&str]) -> util::Build {
    let mut all = vec!["-p", "webapp/pipeline.toml", "build", "--json"];
    all.extend_from_slice(args);
    util::Build::from(project.run(&all))
}

/// Executed nodes, sorted.
fn executed(b: &util::Build) -> Vec<String> {
    b.names("node_finished")
}

/// Each session's grade: (failed layer, fault, certified).
fn grades(project: &Project, b: &util::Build) -> BTreeMap<String, (String, String, bool, Value)> {
    b.events
        .iter()
        .filter(|e| e["kind"] == "app_grade" && e["output"].is_string())
        .map(|e| {
            let record =
                project.show_json_in("webapp/pipeline.toml", e["output"].as_str().unwrap());
            let g = &record["grade"];
            let name = e["name"].as_str().unwrap().trim_start_matches("app_grade:");
            (
                name.to_owned(),
                (
                    g["failed_layer"].as_str().unwrap_or("-").to_owned(),
                    g["fault"].as_str().unwrap_or("-").to_owned(),
                    record["certified"].as_bool().unwrap(),
                    record,
                ),
            )
        })
        .collect()
}

/// The layer each of alpha's sessions fails at, and whose fault: the same
/// on every executor.
fn assert_alpha_layers(g: &BTreeMap<String, (String, String, bool, Value)>) {
    let layer = |s: &str| {
        let (l, f, c, _) = &g[&format!("alpha/{s}.json")];
        (l.as_str(), f.as_str(), *c)
    };
    assert_eq!(layer("greet-ok"), ("-", "none", true));
    assert_eq!(layer("notes-ok"), ("-", "none", true));
    assert_eq!(layer("greet-stale"), ("artifacts", "agent", true));
    assert_eq!(layer("greet-fetch"), ("admission", "agent", true));
    assert_eq!(layer("greet-syntax"), ("build", "agent", true));
    assert_eq!(layer("greet-crash"), ("deployment", "agent", true));
    assert_eq!(layer("greet-wrong"), ("probes", "agent", true));
    assert_eq!(layer("counter-unfixed"), ("browser", "agent", true));
    // The task's own service holds the port: the harness's, and the task's
    // controls fail, so the session never scores.
    assert_eq!(layer("taken"), ("deployment", "harness", false));
}

#[test]
fn webapp_sessions_fail_at_their_layer_and_reruns_follow_the_changed_check() {
    let project = project();
    let late = project.path().join("late");
    std::fs::rename(project.path().join("webapp/sessions/beta"), &late).unwrap();

    let first = build(&project, &[]).code(0);
    let g = grades(&project, &first);
    assert_alpha_layers(&g);
    let unfixed = &g["alpha/counter-unfixed.json"].3;
    assert!(
        unfixed["failing_shot"]["png"].as_str().unwrap().len() == 64,
        "the failing step's screenshot is a blob: {unfixed}"
    );
    let hex = unfixed["failing_shot"]["png"].as_str().unwrap();
    let blob = project
        .path()
        .join("webapp/cache/blobs")
        .join(&hex[..2])
        .join(&hex[2..]);
    let png = std::fs::read(blob).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    // Effort beside the layers, from the session's run facts.
    assert_eq!(unfixed["effort"]["turns"], 3);
    assert_eq!(unfixed["effort"]["tokens"], 8200);

    // The release: per layer the share of each agent's sessions that
    // reached it, the failing step's screenshot, a figure explained.
    let release = project.path().join("webapp/release");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(release.join("summary.json")).unwrap())
            .unwrap();
    let alpha = &summary["apps"]["agents"]["alpha/model-a"];
    assert_eq!(alpha["sessions"], 8, "{alpha}");
    assert_eq!(alpha["reached"]["artifacts"], 1.0);
    assert_eq!(alpha["reached"]["browser"], 0.375, "{alpha}");
    assert_eq!(alpha["passed"]["completion"], 0.25, "{alpha}");
    assert_eq!(alpha["failed"]["deployment"]["agent"], 1);
    assert_eq!(summary["apps"]["tasks"]["webapp-taken"]["certified"], false);
    let csv = std::fs::read_to_string(release.join("results.csv")).unwrap();
    let rows = util::csv_records(&csv);
    let wrong = rows
        .iter()
        .find(|r| r["session"] == "alpha/greet-wrong.json")
        .unwrap();
    assert_eq!(
        (wrong["arm"].as_str(), wrong["verdict"].as_str()),
        ("app", "failed")
    );
    assert!(
        wrong["layers"].contains("probes=fail;browser=skipped"),
        "{wrong:?}"
    );
    let report = std::fs::read_to_string(release.join("report.html")).unwrap();
    assert!(
        report.contains("data:image/png;base64,"),
        "the failing step's screenshot"
    );
    let explained = project.run(&[
        "-p",
        "webapp/pipeline.toml",
        "explain",
        "summary.apps.agents[alpha/model-a].reached.probes",
    ]);
    assert_eq!(explained.code, 0, "{}", explained.stderr);
    // Every figure of the report shows its name, the apps' among them.
    util::figures::explained(
        &project,
        &["-p", "webapp/pipeline.toml"],
        &release,
        10,
        &["summary.apps.agents[alpha/model-a].passed.completion"],
    );
    assert!(
        explained.stdout.contains("alpha/greet-wrong.json"),
        "{}",
        explained.stdout
    );

    let again = build(&project, &[]).code(0);
    assert_eq!(
        executed(&again),
        Vec::<String>::new(),
        "a second build executes nothing"
    );

    // A Chromium that exits at once: the browser layer fails, the harness's.
    let fake = project.path().join("fake-chromium");
    std::fs::write(&fake, "#!/bin/sh\nexit 3\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&late, project.path().join("webapp/sessions/beta")).unwrap();
    let broken = util::Build::from(Project::run_with(
        &project,
        &["-p", "webapp/pipeline.toml", "build", "--json"],
        &[("ASSAY_CHROMIUM", fake.to_str().unwrap())],
    ))
    .code(0);
    let g = grades(&project, &broken);
    let (l, f, c, r) = &g["beta/counter-ok.json"];
    assert_eq!(
        (l.as_str(), f.as_str(), *c),
        ("browser", "harness", true),
        "{r}"
    );
    for name in executed(&broken) {
        assert!(
            name.contains("beta/counter-ok.json") || name == "release",
            "only the new session's nodes run: {name}"
        );
    }

    // One probe of webapp-greet changed: its probe and browser nodes rerun,
    // nothing of the other tasks, no build or deployment.
    let pipeline = project.path().join("webapp/pipeline.toml");
    let text = std::fs::read_to_string(&pipeline).unwrap();
    let changed = text.replacen(
        "body_contains = \"Hello, {nonce}!\"",
        "body_contains = \"Hello, {nonce}\"",
        1,
    );
    assert_ne!(changed, text);
    std::fs::write(&pipeline, &changed).unwrap();
    let probe_changed = build(&project, &[]).code(0);
    let ran = executed(&probe_changed);
    assert!(
        ran.iter()
            .any(|n| n.starts_with("app_probe:webapp-greet:reference")),
        "{ran:?}"
    );
    for name in &ran {
        let kind = name.split(':').next().unwrap();
        let greet = name.contains("webapp-greet") || name.contains("alpha/greet-");
        assert!(
            match kind {
                "app_probe" | "app_browse" | "app_certify" | "app_grade" => greet,
                "release" => true,
                _ => false,
            },
            "a changed probe reruns {name}"
        );
    }

    // One flow of webapp-counter changed: its browser nodes alone rerun.
    let text = changed.replacen(
        "{ click = \"#inc\" },\n  { assert_text = { selector = \"#count\"",
        "{ click = \"#inc\" },\n  { wait_for = \"#count\" },\n  { assert_text = { selector = \"#count\"",
        1,
    );
    assert_ne!(changed, text);
    std::fs::write(&pipeline, &text).unwrap();
    let flow_changed = build(&project, &[]).code(0);
    let ran = executed(&flow_changed);
    assert!(
        ran.iter()
            .any(|n| n.starts_with("app_browse:webapp-counter:reference")),
        "{ran:?}"
    );
    for name in &ran {
        let kind = name.split(':').next().unwrap();
        let counter = name.contains("webapp-counter") || name.contains("counter-");
        assert!(
            match kind {
                "app_browse" | "app_certify" | "app_grade" => counter,
                "release" => true,
                _ => false,
            },
            "a changed flow reruns {name}"
        );
    }
    let g = grades(&project, &flow_changed);
    assert_eq!(
        g["beta/counter-ok.json"].0, "-",
        "a working Chromium again: it passes"
    );
}

/// The docker tests take turns: each checks that no app container is left
/// when its build has ended.
static DOCKER: Mutex<()> = Mutex::new(());

/// `assay ARGS` in `project` with `vars`, as a build whose process id is
/// known: (its output, its pid).
fn build_with_pid(project: &Project, args: &[&str], vars: &[(&str, &str)]) -> (util::Build, u32) {
    let mut cmd = project.command(args);
    cmd.envs(vars.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    (util::Build::from(util::Run::from(out)), pid)
}

/// Ids of the containers (running or not) the assay process `pid` made.
fn containers_of(pid: u32) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            "ps",
            "-aq",
            "--filter",
            "label=assay.run=1",
            "--filter",
            &format!("label=assay.pid={pid}"),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn webapp_on_docker_gives_the_local_layers_and_faults_and_leaves_no_container() {
    let _turn = DOCKER.lock().unwrap_or_else(|p| p.into_inner());
    util::fixture::docker_base_image();
    let project = project();
    let late = project.path().join("late");
    std::fs::rename(project.path().join("webapp/sessions/beta"), &late).unwrap();
    let args = [
        "-p",
        "webapp/pipeline.toml",
        "build",
        "--json",
        "--executor",
        "docker",
    ];

    let (first, pid) = build_with_pid(&project, &args, &[]);
    let first = first.code(0);
    assert_eq!(
        containers_of(pid),
        Vec::<String>::new(),
        "a container outlived its build"
    );
    let g = grades(&project, &first);
    assert_alpha_layers(&g);
    for (session, (_, _, _, record)) in &g {
        assert!(
            record["image"]
                .as_str()
                .unwrap_or("")
                .starts_with("sha256:"),
            "{session} was built and deployed in the environment's image: {record}"
        );
    }
    let release = project.path().join("webapp/release");
    let csv = std::fs::read_to_string(release.join("results.csv")).unwrap();
    for row in util::csv_records(&csv) {
        assert_eq!(row["sandbox"], "docker", "{row:?}");
    }

    let (again, pid) = build_with_pid(&project, &args, &[]);
    let again = again.code(0);
    assert_eq!(
        executed(&again),
        Vec::<String>::new(),
        "a second build executes nothing"
    );
    assert_eq!(containers_of(pid), Vec::<String>::new());

    // A Chromium that exits at once: the browser layer fails, the harness's.
    let fake = project.path().join("fake-chromium");
    std::fs::write(&fake, "#!/bin/sh\nexit 3\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&late, project.path().join("webapp/sessions/beta")).unwrap();
    let (broken, pid) = build_with_pid(
        &project,
        &args,
        &[("ASSAY_CHROMIUM", fake.to_str().unwrap())],
    );
    let broken = broken.code(0);
    assert_eq!(containers_of(pid), Vec::<String>::new());
    let g = grades(&project, &broken);
    let (l, f, c, r) = &g["beta/counter-ok.json"];
    assert_eq!(
        (l.as_str(), f.as_str(), *c),
        ("browser", "harness", true),
        "{r}"
    );
    for name in executed(&broken) {
        assert!(
            name.contains("beta/counter-ok.json") || name == "release",
            "only the new session's nodes run: {name}"
        );
    }

    // The same example on the local executor: other keys, so it runs anew.
    let local = build(&project, &["--executor", "local"]).code(0);
    assert!(
        executed(&local).iter().any(|n| n.starts_with("app_build:")),
        "a local build is keyed apart from a docker one"
    );
}

/// `project`'s pipeline: one app task `hostile` on the docker executor
/// (`env` more lines of its `[env]`), whose reference tree's start is
/// `sh start.sh`, `script`; its probe expects a text no file of the app
/// holds.
fn one_app_on_docker(project: &Project, script: &str, env: &str) {
    let mut repo = util::Repo::new(project, "repo");
    repo.put("README.md", "an app\n");
    repo.commit("base");
    repo.git(&["tag", "base"]);
    repo.put("start.sh", script);
    repo.commit("the app");
    repo.git(&["tag", "attack"]);
    let head = r#"cache = "cache"
release = "release"

[[source]]
name = "hostile"
path = "repo"
branch = "main"

[env]
test_command = "true"
report = "unittest"
executor = "docker"
"#;
    let tail = r#"
[screen]
repeats = 1

[[app]]
name = "hostile"
base = "base"
reference = "attack"
start = { command = "sh start.sh", port = 8000, ready_s = 60, probe_s = 5 }

[[app.probe]]
name = "report"
path = "/report.txt"
body_contains = "expect-7f3a9c"
"#;
    project.write("pipeline.toml", format!("{head}{env}{tail}"));
}

/// What the hostile app's start script tries. The probe's expectation is
/// built at run time so that the script's own text does not hold it.
const ATTACK: &str = r#"found() { echo "FOUND $1"; }
echo "attack ran"
tok="expect-"; tok="${tok}7f3a9c"
if grep -rqs "$tok" /assay /etc /root /home /tmp /var /opt /srv /mnt /run 2>/dev/null; then found expectation-file; fi
if cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -q "$tok"; then found expectation-env; fi
if grep -qs "$tok" "@PIPELINE@"; then found pipeline; fi
if python3 -c '
import socket, sys
for host in sys.argv[2:]:
    try:
        socket.create_connection((host, int(sys.argv[1])), 2)
        sys.exit(0)
    except OSError:
        pass
sys.exit(1)
' @PORT@ @HOSTS@; then found network; fi
for p in /assay/env/pwned /etc/pwned /usr/pwned /pwned /assay/pwned /assay/home/../pwned; do
  if (echo x > "$p") 2>/dev/null; then found "write $p"; fi
done
setsid sh -c 'exec sleep 987654.321' </dev/null >/dev/null 2>&1 &
mkdir -p www && echo "nothing here" > www/report.txt
exec python3 -m http.server "$PORT" --bind 127.0.0.1 --directory www
"#;

#[test]
fn a_hostile_app_on_docker_reaches_nothing_and_leaves_nothing_behind() {
    let _turn = DOCKER.lock().unwrap_or_else(|p| p.into_inner());
    util::fixture::docker_base_image();
    let project = Project::new();
    // The host listens where the app would reach it: on every address.
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let hosts = Command::new("hostname").arg("-I").output().unwrap();
    let mut hosts: Vec<String> = String::from_utf8_lossy(&hosts.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    hosts.extend(["172.17.0.1".to_owned(), "127.0.0.1".to_owned()]);
    let pipeline = project.path().join("pipeline.toml");
    let script = ATTACK
        .replace("@PIPELINE@", pipeline.to_str().unwrap())
        .replace("@PORT@", &port.to_string())
        .replace("@HOSTS@", &hosts.join(" "));
    one_app_on_docker(&project, &script, "");

    let (built, pid) = build_with_pid(&project, &["build", "--json"], &[]);
    built.code(0);
    let survivors = util::processes::live_with("987654.321");
    for pid in &survivors {
        // Ours, started by the app above: ended before the test fails.
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    assert_eq!(
        survivors,
        Vec::<u32>::new(),
        "the app's daemon outlived its deployment"
    );
    assert_eq!(
        containers_of(pid),
        Vec::<String>::new(),
        "a container outlived its build"
    );
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the app reached the host"
    );

    let deployed = project.output_record("app_deploy:hostile:reference:r0");
    assert_eq!(deployed["outcome"]["outcome"], "pass", "{deployed}");
    let log =
        String::from_utf8_lossy(&project.blob(deployed["log"].as_str().unwrap())).into_owned();
    assert!(log.contains("attack ran"), "{log}");
    assert!(
        !log.contains("FOUND"),
        "the app reached what it must not:\n{log}"
    );
    let probed = project.output_record("app_probe:hostile:reference:r0");
    let check = &probed["probes"][0];
    assert_eq!(check["name"], "report");
    assert_eq!(check["outcome"], "fail", "{probed}");
}

#[test]
fn a_ctrl_c_during_a_deployment_on_docker_removes_its_container() {
    let _turn = DOCKER.lock().unwrap_or_else(|p| p.into_inner());
    util::fixture::docker_base_image();
    let project = Project::new();
    // Slow to listen, with a daemon of its own: the deployment's container
    // runs for a while, then a SIGINT ends the build.
    one_app_on_docker(
        &project,
        "setsid sh -c 'exec sleep 876543.21' </dev/null >/dev/null 2>&1 &\nsleep 50\nexec python3 -m http.server \"$PORT\" --bind 127.0.0.1\n",
        "",
    );
    let child = project
        .command(&["build", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = std::time::Instant::now();
    let deployment = loop {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "no deployment container of build {pid}"
        );
        let out = Command::new("docker")
            .args([
                "ps",
                "-q",
                "--filter",
                &format!("label=assay.pid={pid}"),
                "--filter",
                "label=assay.stage=app",
            ])
            .output()
            .unwrap();
        if let Some(id) = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
        {
            break id.to_owned();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    std::thread::sleep(std::time::Duration::from_millis(500));
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(
        containers_of(pid),
        Vec::<String>::new(),
        "the deployment's container {deployment} outlived the interrupted build: {stderr}"
    );
    let survivors = util::processes::live_with("876543.21");
    for pid in &survivors {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    assert_eq!(
        survivors,
        Vec::<u32>::new(),
        "the app's daemon outlived the build"
    );
}

#[test]
fn an_app_writing_past_its_write_limit_on_docker_is_stopped_as_its_own() {
    let _turn = DOCKER.lock().unwrap_or_else(|p| p.into_inner());
    util::fixture::docker_base_image();
    let project = Project::new();
    one_app_on_docker(
        &project,
        "dd if=/dev/zero of=big bs=1M count=64 2>/dev/null\necho wrote\nexec sleep 100\n",
        "write_limit = 8388608\n",
    );
    let (built, pid) = build_with_pid(&project, &["build", "--json"], &[]);
    built.code(0);
    assert_eq!(containers_of(pid), Vec::<String>::new());
    let deployed = project.output_record("app_deploy:hostile:reference:r0");
    assert_eq!(deployed["outcome"]["outcome"], "fail", "{deployed}");
    let detail = deployed["outcome"]["detail"].as_str().unwrap();
    assert!(detail.contains("write limit"), "{detail}");
}
