//! App tasks read for real: trees of `examples/webapp` (built by its
//! make-repo.sh), served under bubblewrap, probed from their network
//! namespace. The hostile apps write only inside their own temp dirs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use assay_browser::{Flow, Step};
use assay_exec::Bwrap;

use super::read;
use crate::model::records::Fault;
use crate::model::rules::app::{
    self, Admission, AppChecks, Expect, Layer, Outcome, Probe, Reading, Service, Start,
};

const PORT: u16 = 8000;

/// The webapp repository, built once per test in `dir`.
fn repo(dir: &Path) -> PathBuf {
    let repo = dir.join("webapp");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/webapp/make-repo.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(&repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    repo
}

/// A fresh tree of `rev` of `repo`, under `dir/name`.
fn tree(repo: &Path, rev: &str, dir: &Path, name: &str) -> PathBuf {
    let tree = dir.join(name);
    std::fs::create_dir_all(&tree).unwrap();
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "git -C '{}' archive {rev} | tar -x -C '{}'",
            repo.display(),
            tree.display()
        ))
        .status()
        .unwrap();
    assert!(status.success());
    tree
}

fn greet_checks() -> AppChecks {
    let mut health = Expect {
        status: 200,
        ..Expect::default()
    };
    health.json.insert("/ok".into(), true.into());
    AppChecks {
        build: Some("python3 -m py_compile app.py".into()),
        admission: Admission {
            required: vec!["app.py".into()],
            max_tree_bytes: Some(1 << 20),
            no_network_start: true,
        },
        start: Start {
            command: "python3 app.py".into(),
            port: PORT,
            ready_s: 10,
            probe_s: 5,
            services: Vec::new(),
        },
        probes: vec![
            Probe {
                name: "greet".into(),
                method: "GET".into(),
                path: "/greet?name={nonce}".into(),
                headers: Default::default(),
                body: None,
                expect: Expect {
                    status: 200,
                    body_contains: Some("Hello, {nonce}!".into()),
                    ..Expect::default()
                },
            },
            Probe {
                name: "health".into(),
                method: "GET".into(),
                path: "/health".into(),
                headers: Default::default(),
                body: None,
                expect: health,
            },
        ],
        flows: Vec::new(),
        flow_s: 30,
    }
}

/// The counter task: its page answers, and its flow clicks once.
fn counter_checks() -> AppChecks {
    let mut checks = greet_checks();
    checks.probes.retain(|p| p.name == "health");
    checks.flows = vec![Flow {
        name: "count once".into(),
        steps: vec![
            Step::Open {
                path: "/counter".into(),
            },
            Step::Click {
                selector: "#inc".into(),
            },
            Step::AssertText {
                selector: "#count".into(),
                contains: "Count: 1".into(),
            },
        ],
    }];
    checks
}

fn reading(checks: &AppChecks, tree: &Path, dir: &Path) -> Reading {
    reading_with(checks, tree, dir, &super::chromium())
}

fn reading_with(checks: &AppChecks, tree: &Path, dir: &Path, chromium: &Path) -> Reading {
    let bwrap = Bwrap::detect().unwrap();
    let work = dir.join(format!(
        "work-{}",
        tree.file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&work).unwrap();
    read(&bwrap, chromium, checks, Outcome::Pass, tree, &work)
}

fn certified() -> app::Controls {
    app::Controls {
        certified: true,
        ..app::Controls::default()
    }
}

/// The grade's failed layer and fault, with the reading for the message.
fn graded(r: &Reading) -> (Option<Layer>, Fault) {
    let g = app::grade(&certified(), r, None);
    (g.failed_layer, g.fault)
}

#[test]
fn the_reference_passes_every_layer_and_the_base_fails_the_probes() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let checks = greet_checks();
    let gold = reading(
        &checks,
        &tree(&repo, "greet", dir.path(), "gold"),
        dir.path(),
    );
    let base = reading(
        &checks,
        &tree(&repo, "base", dir.path(), "base"),
        dir.path(),
    );
    let controls = app::certify(std::slice::from_ref(&gold), std::slice::from_ref(&base));
    assert!(controls.certified, "{controls:?}\n{gold:?}\n{base:?}");
    assert_eq!(controls.base_fails, [Layer::Probes]);
    assert!(app::grade(&controls, &gold, None).completed);
    let (layer, fault) = graded(&base);
    assert_eq!(
        (layer, fault),
        (Some(Layer::Probes), Fault::Agent),
        "{base:?}"
    );
}

#[test]
fn an_app_answering_from_a_canned_file_fails_the_probe() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "base", dir.path(), "canned");
    // It answers every request with what a probe once saw.
    std::fs::write(
        t.join("app.py"),
        "import os\nfrom http.server import *\nclass H(BaseHTTPRequestHandler):\n def do_GET(self):\n  b=b'Hello, {nonce}! {\"ok\": true}'\n  self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)\nHTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()\n",
    )
    .unwrap();
    let r = reading(&greet_checks(), &t, dir.path());
    assert_eq!(graded(&r), (Some(Layer::Probes), Fault::Agent), "{r:?}");
    let greet = &r.probes[0];
    assert!(
        matches!(&greet.outcome, Outcome::Fail { detail } if detail.contains("lacks")),
        "{greet:?}"
    );
}

#[test]
fn a_daemon_the_start_script_forks_away_dies_with_the_deployment() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "greet", dir.path(), "daemon");
    // A daemon in a session of its own, beating into its tree.
    std::fs::write(
        t.join("start.sh"),
        "setsid sh -c 'while :; do echo beat >> beats; sleep 0.05; done' </dev/null >/dev/null 2>&1 &\nexec python3 app.py\n",
    )
    .unwrap();
    let mut checks = greet_checks();
    checks.start.command = "sh start.sh".into();
    let r = reading(&checks, &t, dir.path());
    assert!(app::grade(&certified(), &r, None).completed, "{r:?}");
    let beats = t.join("beats");
    let after = std::fs::metadata(&beats).unwrap().len();
    assert!(after > 0);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        std::fs::metadata(&beats).unwrap().len(),
        after,
        "the daemon outlived its deployment"
    );
}

#[test]
fn an_app_cannot_write_outside_its_tree_read_the_pipeline_or_reach_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "greet", dir.path(), "hostile");
    let secrets = dir.path().join("project");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(
        secrets.join("pipeline.toml"),
        "body_contains = \"Hello, {nonce}!\"\n",
    )
    .unwrap();
    let outside = secrets.join("written-by-the-app");
    // A listener of the host's, which the app tries to reach.
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    host.set_nonblocking(true).unwrap();
    let host_port = host.local_addr().unwrap().port();
    let attack = format!(
        "import socket\nres=[]\n\
         try:\n open({outside:?},'w').write('x'); res.append('wrote outside')\nexcept OSError as e: res.append('write refused')\n\
         try:\n open({pipeline:?}).read(); res.append('read the pipeline')\nexcept OSError as e: res.append('read refused')\n\
         for addr in [('127.0.0.1',{host_port}),('1.1.1.1',80)]:\n try:\n  socket.create_connection(addr,timeout=2); res.append('reached %s'%addr[0])\n except OSError: res.append('unreachable %s'%addr[0])\n\
         open('attack.txt','w').write('\\n'.join(res))\n",
        outside = outside.display().to_string(),
        pipeline = secrets.join("pipeline.toml").display().to_string(),
    );
    std::fs::write(t.join("attack.py"), attack).unwrap();
    let mut checks = greet_checks();
    checks.start.command = "python3 attack.py; exec python3 app.py".into();
    let r = reading(&checks, &t, dir.path());
    assert!(app::grade(&certified(), &r, None).completed, "{r:?}");
    let said = std::fs::read_to_string(t.join("attack.txt")).unwrap();
    assert_eq!(
        said, "write refused\nread refused\nunreachable 127.0.0.1\nunreachable 1.1.1.1",
        "{said}"
    );
    assert!(!outside.exists());
    assert!(
        host.accept().is_err(),
        "the app reached the host's listener"
    );
}

#[test]
fn an_app_that_exits_or_never_listens_fails_deployment_as_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "greet", dir.path(), "crash");
    let mut checks = greet_checks();
    checks.start.command = "echo starting; python3 -c 'raise SystemExit(3)'".into();
    let r = reading(&checks, &t, dir.path());
    assert_eq!(graded(&r), (Some(Layer::Deployment), Fault::Agent), "{r:?}");
    let (_, o) = &r.stages[3];
    assert!(
        matches!(o, Outcome::Fail { detail } if detail.contains("exited with 3") && detail.contains("starting")),
        "{o:?}"
    );
    checks.start.command = "sleep 30".into();
    checks.start.ready_s = 1;
    let r = reading(&checks, &t, dir.path());
    let (_, o) = &r.stages[3];
    assert!(
        matches!(o, Outcome::Fail { detail } if detail.contains("nothing listened on port 8000 within 1 s")),
        "{o:?}"
    );
}

#[test]
fn a_port_the_tasks_own_service_takes_is_the_harness_fault() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "greet", dir.path(), "taken");
    let mut checks = greet_checks();
    // The task's own service is misdeclared onto the app's port: the
    // reference meets it too, so the task does not certify.
    checks.start.services = vec![Service {
        command: format!("python3 -m http.server --bind 127.0.0.1 {PORT}"),
        port: PORT,
    }];
    let r = reading(&checks, &t, dir.path());
    let controls = app::certify(std::slice::from_ref(&r), &[]);
    assert!(!controls.certified, "{controls:?}");
    let g = app::grade(&controls, &r, None);
    assert_eq!(
        (g.failed_layer, g.fault),
        (Some(Layer::Deployment), Fault::Harness),
        "{r:?}"
    );
}

/// An agent that has read how "port taken" is told and that the task's
/// services run in the app's tree: it rewrites the service's script to
/// also listen on the app's port, hoping the deployment finds the port
/// taken and blames the harness. The reference started on a free port
/// under the same services in every screening reading, so on a certified
/// task the taken port is the agent's.
#[test]
fn a_service_script_the_agent_rewrote_onto_the_apps_port_cannot_blame_the_harness() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let service_port = 8001;
    let mut checks = greet_checks();
    checks.start.services = vec![Service {
        command: "python3 service.py".into(),
        port: service_port,
    }];
    let serve = |ports: &[u16]| {
        let mut script = String::from("import http.server, threading\n");
        for port in ports {
            script.push_str(&format!(
                "threading.Thread(target=http.server.HTTPServer(('127.0.0.1', {port}), http.server.SimpleHTTPRequestHandler).serve_forever).start()\n"
            ));
        }
        script
    };
    let honest = tree(&repo, "greet", dir.path(), "reference");
    std::fs::write(honest.join("service.py"), serve(&[service_port])).unwrap();
    let reference = reading(&checks, &honest, dir.path());
    let base = tree(&repo, "base", dir.path(), "base");
    std::fs::write(base.join("service.py"), serve(&[service_port])).unwrap();
    let base = reading(&checks, &base, dir.path());
    let controls = app::certify(
        std::slice::from_ref(&reference),
        std::slice::from_ref(&base),
    );
    assert!(controls.certified, "{controls:?} {reference:?}");

    let hostile = tree(&repo, "greet", dir.path(), "hostile");
    // The app's port is bound before the service's own, whose readiness
    // starts the app: the squat is in place however loaded the machine.
    std::fs::write(hostile.join("service.py"), serve(&[PORT, service_port])).unwrap();
    let r = reading(&checks, &hostile, dir.path());
    let deployment = r.stage(Layer::Deployment);
    assert!(
        matches!(deployment, Outcome::Taken { .. }),
        "the service took the port: {r:?}"
    );
    let g = app::grade(&controls, &r, None);
    assert_eq!(
        (g.failed_layer, g.fault),
        (Some(Layer::Deployment), Fault::Agent),
        "{g:?}"
    );
}

/// An agent that has read how "port taken" is told (docs/verdicts.md):
/// its build step forks a daemon onto the app's port, hoping the
/// deployment finds the port taken and blames the harness. The build's
/// sandbox ends with the build, in a network namespace of its own, so the
/// app starts on a free port and is graded on its own answers.
#[test]
fn a_build_that_leaves_a_daemon_on_the_apps_port_cannot_blame_the_harness() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "greet", dir.path(), "squatter");
    std::fs::write(
        t.join("build.sh"),
        format!(
            "setsid python3 -m http.server --bind 127.0.0.1 {PORT} >/dev/null 2>&1 &\n\
             sleep 1\npython3 -m py_compile app.py\n"
        ),
    )
    .unwrap();
    let mut checks = greet_checks();
    checks.build = Some("sh build.sh".into());
    let r = reading(&checks, &t, dir.path());
    assert!(app::grade(&certified(), &r, None).completed, "{r:?}");
}

#[test]
fn admission_and_build_fail_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "greet", dir.path(), "fetching");
    std::fs::write(
        t.join("start.sh"),
        "pip install flask\nexec python3 app.py\n",
    )
    .unwrap();
    let mut checks = greet_checks();
    checks.start.command = "sh start.sh".into();
    let r = reading(&checks, &t, dir.path());
    assert_eq!(graded(&r), (Some(Layer::Admission), Fault::Agent), "{r:?}");
    assert!(
        !dir.path().join("work-fetching/app.log").exists(),
        "it was started"
    );
    let t = tree(&repo, "greet", dir.path(), "broken");
    std::fs::write(t.join("app.py"), "def broken(:\n").unwrap();
    let r = reading(&greet_checks(), &t, dir.path());
    assert_eq!(graded(&r), (Some(Layer::Build), Fault::Agent), "{r:?}");
}

/// A build that makes a file past the run's file-size limit (sparse, so
/// nothing is really written) and then waits: the run's limits end it as
/// the app's failure, never the harness's.
#[test]
fn a_build_past_its_file_size_limit_fails_the_build_as_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "greet", dir.path(), "filling");
    let mut checks = greet_checks();
    checks.build = Some("truncate -s 2G filler && sleep 30".into());
    let r = reading(&checks, &t, dir.path());
    assert_eq!(graded(&r), (Some(Layer::Build), Fault::Agent), "{r:?}");
    let (_, o) = &r.stages[2];
    assert!(
        format!("{o:?}").contains("file_size limit"),
        "the run's limit ended it: {o:?}"
    );
}

#[test]
fn a_bug_only_the_browser_shows_fails_the_browser_layer_and_the_fix_passes() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let checks = counter_checks();
    let gold = reading(
        &checks,
        &tree(&repo, "counter", dir.path(), "gold"),
        dir.path(),
    );
    let base = reading(
        &checks,
        &tree(&repo, "notes", dir.path(), "base"),
        dir.path(),
    );
    let controls = app::certify(std::slice::from_ref(&gold), std::slice::from_ref(&base));
    assert!(controls.certified, "{controls:?}\n{gold:?}\n{base:?}");
    assert_eq!(controls.base_fails, [Layer::Browser]);
    let g = app::grade(&controls, &base, None);
    assert_eq!(
        (g.failed_layer, g.fault),
        (Some(Layer::Browser), Fault::Agent),
        "{g:?}"
    );
    assert!(g.layers[5].detail.contains("step 3"), "{g:?}");
}

#[test]
fn a_browser_that_cannot_start_is_the_harness_fault() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let r = reading_with(
        &counter_checks(),
        &tree(&repo, "counter", dir.path(), "gold"),
        dir.path(),
        Path::new("/bin/false"),
    );
    assert_eq!(graded(&r), (Some(Layer::Browser), Fault::Harness), "{r:?}");
}

/// The browser runs confined as the app does: a "Chromium" that is a
/// script tries to write beside itself, into the test's directory and into
/// the host's `/tmp`, to list the host's processes and to reach a listener
/// of the host's loopback, then exits. Nothing of it lands on the host,
/// it sees only its own processes, and the failed start is the harness's.
#[test]
fn the_browser_runs_under_bubblewrap_in_the_apps_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = host.local_addr().unwrap().port();
    let report = dir.path().join("report");
    std::fs::create_dir_all(&report).unwrap();
    let marker = format!("assay-escape-{}", std::process::id());
    let fake = bin.join("chromium");
    std::fs::write(
        &fake,
        format!(
            r#"#!/bin/sh
touch {bin}/{marker} {dir}/{marker} /tmp/{marker} 2>/dev/null
n=$(ls /proc | grep -c '^[0-9]')
if python3 -c 'import socket; socket.create_connection(("127.0.0.1", {port}), 1)' 2>/dev/null; then reached=yes; else reached=no; fi
echo "procs=$n reached=$reached" >&2
exit 3
"#,
            bin = bin.display(),
            dir = dir.path().display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = reading_with(
        &counter_checks(),
        &tree(&repo, "counter", dir.path(), "gold"),
        dir.path(),
        &fake,
    );
    assert_eq!(graded(&r), (Some(Layer::Browser), Fault::Harness), "{r:?}");
    for place in [
        bin.join(&marker),
        dir.path().join(&marker),
        Path::new("/tmp").join(&marker),
    ] {
        assert!(!place.exists(), "the browser wrote {}", place.display());
    }
    let detail = format!("{:?}", r.flows);
    assert!(
        detail.contains("reached=no"),
        "the host's loopback: {detail}"
    );
    let procs: u32 = detail
        .split("procs=")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no process count in {detail}"));
    assert!(procs < 10, "its own pid namespace: {procs} processes seen");
    drop(host);
}

/// A build that leaves sparse files: no blocks, but 800 MB to whoever
/// reads the tree (its pack for the deployments). Their length counts
/// against the build's write bound (512 MiB).
#[test]
fn a_build_that_leaves_sparse_files_past_its_write_bound_fails_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "greet", dir.path(), "sparse");
    let mut checks = greet_checks();
    checks.build = Some("truncate -s 400M a && truncate -s 400M b && sleep 20".into());
    let r = reading(&checks, &t, dir.path());
    assert_eq!(graded(&r), (Some(Layer::Build), Fault::Agent), "{r:?}");
    let (_, o) = &r.stages[2];
    assert!(
        format!("{o:?}").contains("write limit"),
        "the write bound ended it: {o:?}"
    );
}

/// The app serves, then fills its tree (1 MiB every 50 ms, at most
/// 96 MiB) against a write bound of 16 MiB: the hold stops it while it is
/// deployed, and the probes sent after say why, first.
#[test]
fn an_app_that_hits_a_limit_while_serving_is_stopped_and_its_probes_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "greet", dir.path(), "filler");
    let mut checks = greet_checks();
    checks.start.command = "python3 app.py & sleep 2;         for i in $(seq 96); do head -c 1048576 /dev/zero >> big; sleep 0.05; done; wait"
        .into();
    let mut limits = super::deploy::limits();
    limits.max_written = Some(16 << 20);
    let bwrap = Bwrap::detect().unwrap();
    let deployment = super::deploy::Deployment::start_limited(
        &bwrap,
        &t,
        &checks.start,
        &dir.path().join("app.log"),
        limits,
    )
    .unwrap_or_else(|o| panic!("it listens first: {o:?}"));
    let stop = deployment.wait_stopped(Duration::from_secs(30));
    assert_eq!(
        stop,
        Some(assay_exec::Stop::Limit(assay_exec::LimitHit::Written))
    );
    let probes = deployment.probe(&checks.probes, "n0nce", Duration::from_secs(2));
    drop(deployment);
    assert_eq!(probes[0].name, super::deploy::STOPPED_CHECK, "{probes:?}");
    let reading = Reading {
        stages: [
            Layer::Artifacts,
            Layer::Admission,
            Layer::Build,
            Layer::Deployment,
        ]
        .into_iter()
        .map(|l| (l, Outcome::Pass))
        .collect(),
        probes,
        ..Reading::default()
    };
    let g = app::grade(&certified(), &reading, None);
    assert_eq!(
        (g.failed_layer, g.fault),
        (Some(Layer::Probes), Fault::Agent),
        "{g:?}"
    );
    assert!(g.layers[4].detail.contains("hit its write limit"), "{g:?}");
    let written = std::fs::metadata(t.join("big")).unwrap().len();
    assert!(
        written < 96 << 20,
        "stopped after {written} bytes: it finished"
    );
}

/// benches/app-layers.sh: the greet reference read `ASSAY_BENCH_RUNS`
/// times (default 5); one line per reading, `layers_ms TOTAL` and each
/// layer's time. Measures, asserts nothing of time.
#[test]
#[ignore = "a bench: run by benches/app-layers.sh"]
fn layers_wall_time() {
    let runs: usize = std::env::var("ASSAY_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let checks = greet_checks();
    for n in 0..runs {
        let t = tree(&repo, "greet", dir.path(), &format!("run{n}"));
        let started = std::time::Instant::now();
        let r = reading(&checks, &t, dir.path());
        let total = started.elapsed().as_millis();
        assert!(app::grade(&certified(), &r, None).completed, "{r:?}");
        let layers: Vec<String> = r.ms.iter().map(|(l, ms)| format!("{l}={ms}")).collect();
        println!("layers_ms {total} {}", layers.join(" "));
    }
}

#[test]
fn a_form_whose_submission_changes_the_page_passes_probes_and_flow_and_the_base_fails() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let mut checks = greet_checks();
    let post = |name: &str, status: u16| Probe {
        name: name.into(),
        method: "POST".into(),
        path: "/notes".into(),
        headers: [(
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        )]
        .into(),
        body: Some("note={nonce}".into()),
        expect: Expect {
            status,
            ..Expect::default()
        },
    };
    let listed = Probe {
        name: "listed".into(),
        method: "GET".into(),
        path: "/notes".into(),
        headers: Default::default(),
        body: None,
        expect: Expect {
            status: 200,
            body_contains: Some("<li>{nonce}</li>".into()),
            ..Expect::default()
        },
    };
    checks.probes = vec![post("add", 303), listed];
    checks.flows = vec![Flow {
        name: "add a note".into(),
        steps: vec![
            Step::Open {
                path: "/notes".into(),
            },
            Step::Type {
                selector: "#note".into(),
                text: "buy milk".into(),
            },
            Step::Click {
                selector: "#add".into(),
            },
            Step::WaitFor {
                selector: "#notes li".into(),
            },
            Step::AssertText {
                selector: "#notes".into(),
                contains: "buy milk".into(),
            },
        ],
    }];
    let gold = reading(
        &checks,
        &tree(&repo, "notes", dir.path(), "gold"),
        dir.path(),
    );
    let base = reading(
        &checks,
        &tree(&repo, "greet", dir.path(), "base"),
        dir.path(),
    );
    let controls = app::certify(std::slice::from_ref(&gold), std::slice::from_ref(&base));
    assert!(controls.certified, "{controls:?}\n{gold:?}\n{base:?}");
    assert_eq!(controls.base_fails, [Layer::Probes]);
    assert_eq!(gold.flows.len(), 1);
}

/// The deployment layer's app is the one its probes read: parked serving
/// under its limits, taken once by the probes of the same built tree and
/// start, and ended with the build if nothing took it.
#[test]
fn the_probes_read_the_deployment_the_deployment_layer_left_serving() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(dir.path());
    let t = tree(&repo, "greet", dir.path(), "parked");
    let tar = super::pack(&t).unwrap().unwrap();
    let checks = greet_checks();
    let bwrap = Bwrap::detect().unwrap();
    let served = super::Served::start(&bwrap, &super::Runner::Local, &tar, &checks.start);
    let pid = served.deployment.as_ref().unwrap().pid();
    let key = super::park_key("tree-a", &checks.start);
    let lot = crate::run::executor::Parking::default();
    served.park(&lot, key.clone());
    let mut other = checks.start.clone();
    other.ready_s += 1;
    assert!(super::Served::unpark(&lot, &super::park_key("tree-b", &checks.start)).is_none());
    assert!(super::Served::unpark(&lot, &super::park_key("tree-a", &other)).is_none());
    let again = super::Served::unpark(&lot, &key).unwrap();
    let deployment = again.deployment.as_ref().unwrap();
    assert_eq!(deployment.pid(), pid);
    let probes = deployment.probe(&checks.probes, "n0nce", Duration::from_secs(5));
    assert!(probes.iter().all(|c| c.outcome.passed()), "{probes:?}");
    assert!(super::Served::unpark(&lot, &key).is_none(), "taken once");
    again.park(&lot, key.clone());
    lot.end_all();
    assert!(!assay_exec::process_alive(pid as i32));
    assert!(super::Served::unpark(&lot, &key).is_none());
}
