//! Agents assay runs itself (`[[agent]]`): real agent processes in the
//! sandbox, real HTTP through assay's egress proxy to a scripted model
//! endpoint on loopback, the real grading fixture. A scripted shell agent
//! that commits its fix is graded `resolved`; finished attempts are reused
//! and a new one runs alone; the agent reaches only its endpoint, holds only
//! a placeholder key, and sees neither history nor cache; an endpoint that
//! fails is the infrastructure's, retried, and tried again next build.

#![allow(clippy::unwrap_used)]

mod util;

use util::agents::{KEY, ORG, agent_fixture, holding, scripted};
use util::fixture::*;
use util::llm::Llm;

/// Every assay this test process runs gets the key (and, for the
/// mini-swe-agent test, its virtualenv on PATH).
fn env() {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/target/mini-venv/bin");
    util::project::set_env(vec![
        ("OPENAI_API_KEY".into(), KEY.into()),
        ("ASSAY_TEST_ORG_SECRET".into(), ORG.into()),
        (
            "PATH".into(),
            format!("{venv}:{}", std::env::var("PATH").unwrap_or_default()),
        ),
    ]);
}

fn fixture(agents: &str) -> Fixture {
    fixture_on(Executor::Local, agents)
}

/// `fixture` on `executor` (on docker, its base image present).
fn fixture_on(executor: Executor, agents: &str) -> Fixture {
    env();
    agent_fixture(executor, agents)
}

/// [`util::agents::probe_fixture`], with this process's variables.
fn probe_fixture(executor: Executor, llm: &Llm, probe: &str) -> Fixture {
    env();
    util::agents::probe_fixture(executor, llm, probe)
}

#[test]
fn a_scripted_agent_that_commits_its_fix_is_graded_and_its_attempts_are_reused() {
    let f = fixture(&scripted(""));
    let b = f.build_ok();
    let row = f.row("agent/scripted/p-1/0", "exclude");
    assert_eq!(row["verdict"], "resolved", "{row:#?}");
    assert_eq!(
        (row["agent"].as_str(), row["model"].as_str()),
        ("scripted", "script-1")
    );
    // The other task got the same answer, which does not solve it.
    assert_eq!(
        f.row("agent/scripted/p-2/0", "exclude")["verdict"],
        "unresolved"
    );
    let attempt = f.project.output_record("attempt:agent/scripted/p-1/0");
    let log = String::from_utf8(f.project.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("agent-done"), "{log}");
    let patch = String::from_utf8(f.project.blob(attempt["patch"].as_str().unwrap())).unwrap();
    assert!(patch.contains("+    return a - b"), "{patch}");
    let attempts = |b: &util::Build| -> Vec<String> {
        b.names("node_finished")
            .into_iter()
            .filter(|n| n.starts_with("attempt:"))
            .collect()
    };
    assert_eq!(attempts(&b).len(), 2);
    // Nothing runs again; a second attempt per task runs alone.
    assert_eq!(f.build_ok().summary.total.executed, 0);
    f.edit_pipeline(
        "model = \"script-1\"\n",
        "model = \"script-1\"\nattempts = 2\n",
    );
    let b = f.build_ok();
    assert_eq!(
        attempts(&b),
        [
            "attempt:agent/scripted/p-1/1",
            "attempt:agent/scripted/p-2/1"
        ]
    );
}

#[test]
fn an_agent_reaches_only_its_endpoint_with_a_key_it_never_holds() {
    let llm = Llm::start(|_, _| (200, r#"{"choices":[{"message":{"content":"hi"}}]}"#.into()));
    let probe = format!(
        r#"
import os, socket, subprocess, urllib.request
try:
    urllib.request.urlopen(base.rsplit("/v1", 1)[0] + "/admin/keys")
    print("REACHED-OUTSIDE-THE-ENDPOINT")
except Exception as e:
    print("refused:", e)
for host, port in [("127.0.0.1", {port}), ("1.1.1.1", 80)]:
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); print("REACHED", host)
    except Exception as e:
        print("unreachable", host, type(e).__name__)
print("history:", subprocess.run(["git", "log", "--oneline", "--all"], capture_output=True, text=True).stdout.strip())
print("cache visible:", os.path.exists("{cache}"))
print("repository visible:", os.path.exists("{repo}"))
# Write outside the workspace: the project, the prompt; outlive the attempt.
for path in ["{project}/escaped.txt", "/assay/in/prompt.md"]:
    try:
        open(path, "a").write("escaped")
        print("WROTE", path)
    except OSError as e:
        print("not written", path, type(e).__name__)
subprocess.Popen(["setsid", "sh", "-c", "exec sleep 77123"], start_new_session=True)
# Another host named through the proxy: an absolute URI, then a Host header.
s = socket.create_connection(("127.0.0.1", 8417))
s.sendall(b"GET http://1.1.1.1/ HTTP/1.1\r\nHost: 1.1.1.1\r\n\r\n")
print("absolute uri:", s.recv(200).split(b"\r\n")[0].decode())
req = urllib.request.Request(base + "/models?token=sk-ant-api03-planted0123456789abcdef", headers={{"Host": "1.1.1.1"}})
print("host header:", urllib.request.urlopen(req).read().decode()[:40])
print("tests visible:", os.path.exists("tests/test_ops.py"))
"#,
        port = llm.port,
        cache = "CACHE",
        repo = "REPO",
        project = "PROJECT"
    );
    let f = probe_fixture(Executor::Local, &llm, &probe);
    f.edit_pipeline(
        "\"REPO\"",
        &format!("\"{}\"", f.path().join("repo").display()),
    );
    f.build_ok();
    let attempt = f.project.output_record("attempt:agent/probe/p-1/0");
    let log = String::from_utf8(f.project.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert!(
        log.contains(&format!("key-held: {}", "assay-proxy-holds-the-key")),
        "{log}"
    );
    assert!(log.contains("answer: {\"choices\""), "{log}");
    assert!(log.contains("refused:"), "{log}");
    assert!(!log.contains("REACHED"), "{log}");
    assert!(
        log.contains("unreachable 127.0.0.1") && log.contains("unreachable 1.1.1.1"),
        "{log}"
    );
    assert!(log.contains("cache visible: False"), "{log}");
    assert!(log.contains("repository visible: False"), "{log}");
    assert!(log.contains("not written /assay/in/prompt.md"), "{log}");
    let outside = format!("not written {}/escaped.txt", f.path().display());
    assert!(log.contains(&outside), "{log}");
    assert!(!log.contains("WROTE"), "{log}");
    assert!(!f.path().join("escaped.txt").exists());
    // The daemon it started did not outlive its attempt.
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("sleep 77123"))
        .collect();
    assert!(survivors.is_empty(), "{survivors:?}");
    assert!(log.contains("absolute uri: HTTP/1.1 400"), "{log}");
    // A Host header changes nothing: the request went to the endpoint.
    assert!(log.contains("host header: {\"choices\""), "{log}");
    let history: Vec<&str> = log
        .lines()
        .find_map(|l| l.strip_prefix("history: "))
        .unwrap()
        .lines()
        .collect();
    assert_eq!(history.len(), 1, "one commit, the base: {log}");
    assert!(history[0].ends_with(" base"), "{log}");
    // The endpoint got the real key, put in by the proxy, and only the
    // requests under its path: two from each attempt (two tasks).
    let seen = llm.seen();
    assert_eq!(seen.len(), 4, "{seen:?}");
    for s in &seen {
        assert!(
            s.path == "/v1/chat/completions" || s.path.starts_with("/v1/models?"),
            "{s:?}"
        );
        assert_eq!(
            s.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    // The attempt recorded them all: two answered, two refused (outside
    // the endpoint's path; not an HTTP request of ours).
    let requests = attempt["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 4, "{requests:?}");
    let refused = requests
        .iter()
        .filter(|r| {
            r["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("refused"))
        })
        .count();
    let answered = requests.iter().filter(|r| r["status"] == 200).count();
    assert_eq!((refused, answered), (2, 2), "{requests:?}");
    // A secret the agent put in a path is redacted in the record.
    let paths: Vec<&str> = requests.iter().filter_map(|r| r["path"].as_str()).collect();
    assert!(
        paths.iter().any(|p| p.starts_with("/v1/models?token=")),
        "{paths:?}"
    );
    assert!(
        !paths.iter().any(|p| p.contains("planted0123456789")),
        "{paths:?}"
    );
    assert!(attempt.get("infrastructure").is_none(), "{attempt}");
    // The key is nowhere in the project: cache, release, logs.
    assert_eq!(
        holding(f.project.path(), KEY.as_bytes()),
        Vec::<String>::new()
    );
}

#[test]
fn an_endpoint_that_fails_is_the_infrastructures_retried_once_and_tried_again_next_build() {
    let llm = Llm::start(|_, _| (503, r#"{"error":{"message":"overloaded"}}"#.into()));
    let agent = format!(
        r#"
[[agent]]
label = "unlucky"
model = "m-1"
base_url = "{url}"
key_env = "OPENAI_API_KEY"
command = '''
python3 -c 'import os, urllib.request; urllib.request.urlopen(urllib.request.Request(os.environ["ASSAY_BASE_URL"] + "/chat/completions", data=b"{{}}"))'
'''
"#,
        url = llm.url()
    );
    let f = fixture(&agent);
    let b = f.build_ok();
    // The build says what it lost, where, and that it will try again,
    // beside the engine's `0 failed`.
    assert!(
        b.run.stderr.contains(
            "lost to the infrastructure: 2 attempts (not graded as the agent's; \
             the next build tries them again)"
        ),
        "{}",
        b.run.stderr
    );
    assert!(
        b.run.stderr.contains(&format!(
            "endpoint {}: 2 attempts: the endpoint failed the agent's last request (status 503) (×2)",
            llm.url()
        )),
        "{}",
        b.run.stderr
    );
    // `assay plan` names the real reason the attempts run again.
    let plan = f.project.run(&["plan"]).code(0);
    assert!(
        plan.stdout.contains(
            "run      attempt:agent/unlucky/p-1/0  (cached result unusable: the infrastructure \
             failed its last try (the endpoint failed the agent's last request (status 503)); \
             it is tried again)"
        ),
        "{}",
        plan.stdout
    );
    let attempt = f.project.output_record("attempt:agent/unlucky/p-1/0");
    assert!(
        attempt["infrastructure"]
            .as_str()
            .unwrap()
            .contains("status 503"),
        "{attempt}"
    );
    assert_eq!(attempt["retried"].as_array().unwrap().len(), 1, "{attempt}");
    assert_eq!(attempt["facts"]["is_error"], true);
    let row = f.row("agent/unlucky/p-1/0", "exclude");
    assert_eq!(row["fault"], "infrastructure", "{row:#?}");
    // Two tasks, two tries each.
    assert_eq!(llm.seen().len(), 4);
    // Not in the agent's denominator: counted as the infrastructure's.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.path().join("release/summary.json")).unwrap())
            .unwrap();
    let agent = summary["agents"]["unlucky/m-1"].clone();
    assert_eq!(agent["n"], 0, "{agent:#}");
    assert_eq!(agent["faults"]["infrastructure"], 2, "{agent:#}");
    assert!(agent["resolved_rate"].is_null(), "{agent:#}");
    // Not the agent's result: the next build tries again.
    f.build_ok();
    assert_eq!(llm.seen().len(), 8);
}

/// The step of a conversation a request is at: the assistant messages it
/// carries (each attempt is its own conversation).
fn step_of(body: &str) -> usize {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    v["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count())
}

/// mini-swe-agent (the real CLI, from the virtualenv under `target/` that
/// `scripts/mini-swe-agent.sh --setup` makes) solves task p-1 through the scripted endpoint and is graded
/// `resolved` with its trajectory's facts; with a step limit of 1 it stops
/// early, which is the agent's doing, and its tree is graded as it is.
#[test]
fn mini_swe_agent_solves_a_task_through_the_proxy_and_its_step_limit_is_its_own() {
    // The test prepares its agent itself, once, cached under target/.
    let setup = std::process::Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/mini-swe-agent.sh"
    ))
    .arg("--setup")
    .output()
    .unwrap();
    assert!(
        setup.status.success(),
        "scripts/mini-swe-agent.sh --setup failed (it installs mini-swe-agent from PyPI into target/mini-venv): {}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let fix = format!("cat > pkg/ops.py <<'PY'\n{OPS_SUB}PY");
    let script = [
        fix,
        "git add -A && git commit -qm fix".to_owned(),
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT".to_owned(),
    ];
    let llm = Llm::start(move |_, seen| {
        let step = step_of(&seen.body).min(script.len() - 1);
        (200, util::llm::bash_call(step, &script[step]))
    });
    let mini = |label: &str, turns: u32| {
        format!(
            r#"
[[agent]]
label = "{label}"
model = "model-x"
model_id = "scripted-model"
transcript = "mini-swe-agent"
base_url = "{url}"
key_env = "OPENAI_API_KEY"
turns = {turns}
time_limit = 300
command = '''
MSWEA_CONFIGURED=true MSWEA_GLOBAL_CONFIG_DIR=$HOME/.mini LITELLM_LOCAL_MODEL_COST_MAP=True MSWEA_COST_TRACKING=ignore_errors mini -y --exit-immediately -m openai/{{model_id}} -t "$(cat {{prompt_file}})" -o {{transcript}} -c mini.yaml -c model.model_kwargs.api_base={{base_url}} -c environment.cwd={{workspace}} -c agent.step_limit={{turns}}
'''
"#,
            url = llm.url()
        )
    };
    let f = fixture(&format!("{}{}", mini("mini", 10), mini("mini-short", 1)));
    f.build_ok();
    let row = f.row("agent/mini/p-1/0", "exclude");
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("resolved", "none"),
        "{row:#?}"
    );
    let attempt = f.project.output_record("attempt:agent/mini/p-1/0");
    let facts = &attempt["facts"];
    assert_eq!(facts["ended"], "Submitted", "{attempt}");
    assert_eq!(facts["is_error"], false);
    assert_eq!(facts["turns"], 3);
    assert_eq!(facts["tokens"]["output"], 30);
    // The model under test is named by its label only.
    assert_eq!(facts["models"], serde_json::json!(["model-x"]), "{attempt}");
    assert_eq!(facts["by_model"]["model-x"]["output"], 30, "{attempt}");
    assert_eq!(row["model"], "model-x");
    let trajectory = f.project.blob(attempt["transcript"].as_str().unwrap());
    assert!(String::from_utf8_lossy(&trajectory).contains("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"));
    assert!(
        attempt["requests"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == 200),
        "{attempt}"
    );
    for s in llm.seen() {
        assert_eq!(
            s.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    // Stopped after one step: the agent's limit, not the infrastructure's;
    // the fix it wrote (uncommitted) is its answer and passes.
    let short = f.project.output_record("attempt:agent/mini-short/p-1/0");
    assert_eq!(short["facts"]["ended"], "LimitsExceeded", "{short}");
    assert!(short.get("infrastructure").is_none(), "{short}");
    let row = f.row("agent/mini-short/p-1/0", "exclude");
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("resolved", "none"),
        "{row:#?}"
    );
    assert_eq!(
        holding(f.project.path(), KEY.as_bytes()),
        Vec::<String>::new()
    );
}

/// A build stopped by ctrl-c while attempts are queued: the next build runs
/// only the attempts that had not finished.
#[test]
fn after_ctrl_c_the_next_build_runs_only_the_missing_attempts() {
    use std::io::BufRead;
    // Four attempts of two seconds or more, one at a time.
    let f =
        fixture(&scripted("attempts = 2").replace("cat > pkg/ops.py", "sleep 2\ncat > pkg/ops.py"));
    let mut child = f
        .project
        .command(&["build", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut finished = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let e: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if e["event"] == "node_finished" && e["kind"] == "attempt" {
            finished.push(e["name"].as_str().unwrap().to_owned());
            let pid = child.id().to_string();
            std::process::Command::new("kill")
                .args(["-INT", &pid])
                .status()
                .unwrap();
            break;
        }
    }
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_eq!(finished.len(), 1);
    let b = f.build_ok();
    let ran: Vec<String> = b
        .names("node_finished")
        .into_iter()
        .filter(|n| n.starts_with("attempt:"))
        .collect();
    assert_eq!(ran.len(), 3, "{ran:?}");
    assert!(!ran.contains(&finished[0]), "{ran:?} {finished:?}");
    assert!(b.names("node_reused").contains(&finished[0]));
}

/// An agent whose key variable is not set in assay's environment is not
/// run: its attempts fail saying which variable to set, and no request
/// goes out.
#[test]
fn an_unset_key_variable_fails_the_attempts_and_says_which() {
    let llm = Llm::start(|_, _| (200, "{}".into()));
    let agent = format!(
        r#"
[[agent]]
label = "keyless"
model = "m-1"
base_url = "{url}"
key_env = "ASSAY_TEST_NO_SUCH_KEY"
command = "true"
"#,
        url = llm.url()
    );
    let f = fixture(&agent);
    let b = f.build(&[]);
    let failed: Vec<String> = b
        .events
        .iter()
        .filter(|e| e["event"] == "node_failed" && e["kind"] == "attempt")
        .map(|e| e["reason"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(failed.len(), 2, "{:?}", b.summary);
    assert!(failed[0].contains("`ASSAY_TEST_NO_SUCH_KEY`"), "{failed:?}");
    assert!(llm.seen().is_empty());
    // The settings' problem, known only as the attempt runs: exit 3.
    assert_eq!(
        b.events.last().unwrap()["failed_by_class"],
        serde_json::json!({"config": 2})
    );
    assert_eq!(b.run.code, 3, "{}", b.run.stderr);
}

/// Tools that did not set up are the harness's failure, not the agent's:
/// every attempt of the agent fails classed `infrastructure`, and a build
/// whose failures are all of that kind exits 9 with what to do.
#[test]
fn an_agent_whose_tools_did_not_set_up_fails_its_attempts_as_infrastructure() {
    let agent = r#"
[[agent]]
label = "toolless"
model = "m-1"
setup = ["echo installing; exit 3"]
command = "true"
"#;
    let f = fixture(agent);
    let b = f.build(&[]);
    assert_eq!(b.run.code, 9, "stderr:\n{}", b.run.stderr);
    let failed: Vec<(&str, &str)> = b
        .events
        .iter()
        .filter(|e| e["event"] == "node_failed")
        .map(|e| (e["kind"].as_str().unwrap(), e["class"].as_str().unwrap()))
        .collect();
    assert_eq!(
        failed,
        [("attempt", "infrastructure"), ("attempt", "infrastructure")],
        "{:?}",
        b.summary
    );
    assert!(
        b.run
            .stderr
            .contains("error: 2 nodes failed: 2 infrastructure")
            && b.run.stderr.contains("fix it and build again"),
        "{}",
        b.run.stderr
    );
    // The cache keeps the class beside the reason: `explain` names it.
    let attempt = b
        .events
        .iter()
        .find(|e| e["event"] == "node_failed")
        .and_then(|e| e["name"].as_str())
        .unwrap()
        .to_owned();
    let explained = f.project.run(&["explain", &attempt]).code(0);
    assert!(
        explained
            .stdout
            .contains("failed   build 1 (infrastructure): "),
        "{}",
        explained.stdout
    );
}

/// The proxy's path rule holds after the forwarder's URL parser has
/// resolved the path: dot segments, plain or encoded, backslashes, double
/// encoding and empty segments sent raw from the sandbox never reach the
/// endpoint host outside `base_url`'s path (each would carry the real key).
#[test]
fn paths_that_resolve_outside_the_endpoint_never_reach_its_host() {
    let llm = Llm::start(|_, _| (200, r#"{"choices":[{"message":{"content":"hi"}}]}"#.into()));
    let agent = r#"
[[agent]]
label = "climber"
model = "m-1"
base_url = "ENDPOINT-URL"
key_env = "OPENAI_API_KEY"
command = '''
python3 - <<'PY'
import os, socket, urllib.parse
port = urllib.parse.urlsplit(os.environ["ASSAY_BASE_URL"]).port
for path in ["/v1/%2e%2e/admin", "/v1/.%2e/admin", "/v1/..\\admin", "/v1/..",
             "/v1/%2e%2e/%2e%2e/etc/passwd", "/v1/%252e%252e/admin", "/v1/..;/admin",
             "/v1/.\t./admin", "//admin", "/v1x/admin", "/v1/chat/completions"]:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n").encode())
    print("status", repr(path), s.recv(200).split(b"\r\n")[0].decode())
PY
'''
"#
    .replace("ENDPOINT-URL", &llm.url());
    let f = fixture(&agent);
    f.build_ok();
    let attempt = f.project.output_record("attempt:agent/climber/p-1/0");
    let log = String::from_utf8(f.project.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert_eq!(log.matches(" HTTP/1.1 403").count(), 10, "{log}");
    assert!(log.contains("'/v1/chat/completions' HTTP/1.1 200"), "{log}");
    // Only the honest request reached the host, from each of the two tasks.
    let seen: Vec<String> = llm.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(seen, ["/v1/chat/completions"; 2], "{log}");
}

/// An agent that leaves sparse files (no blocks, but gigabytes of zeros
/// to whoever reads them) and ends before the write watchdog's first look:
/// the look after the run finds it over its write limit by their length,
/// and the workspace is refused before it is read: `patch_apply_failed`,
/// the agent's, with the figure. Read, they cost assay ~10 s of CPU per GiB.
#[test]
fn sparse_files_in_a_workspace_are_refused_by_their_apparent_size_unread() {
    let f = fixture(
        r#"
[[agent]]
label = "sparse"
model = "m-1"
command = '''
for i in 1 2 3 4; do truncate -s 1000M big$i.bin; done
du -sh . ; echo sparse-done
'''
"#,
    );
    let started = std::time::Instant::now();
    f.build_ok();
    let took = started.elapsed();
    let attempt = f.project.output_record("attempt:agent/sparse/p-1/0");
    let log = String::from_utf8(f.project.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("sparse-done"), "{log}");
    assert_eq!(attempt["limit"], "write", "{attempt:#}");
    let why = attempt["collect_error"].as_str().unwrap_or_default();
    assert!(
        why.contains("the workspace holds 3.9 GiB of file content (apparent size)")
            && why.contains("over the 1.0 GiB cap"),
        "{attempt:#}"
    );
    assert_eq!(attempt["patch"], "", "{attempt:#}");
    let row = f.row("agent/sparse/p-1/0", "exclude");
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("patch_apply_failed", "agent"),
        "{row:#?}"
    );
    eprintln!("two attempts of 3.9 GiB of sparse files: built in {took:?}");
}

/// An endpoint that echoes the Authorization header it was sent (some
/// gateways do, in error bodies) and carries a `[redact] env` secret; an
/// agent that writes what it got into its workspace (plain, base64, hex)
/// and its transcript. The proxy takes both out of the answer, so no
/// encoding of them can exist; an imported session's patch holding both
/// is stored redacted (marked so, its digest of the redacted bytes).
/// Neither is anywhere in the cache or the release, in any of the forms.
#[test]
fn secrets_an_endpoint_echoes_are_nowhere_in_the_cache_or_the_release() {
    let llm = Llm::start(|_, seen| {
        let echo = serde_json::json!({"error": {
            "message": format!("denied for {}", seen.authorization.clone().unwrap_or_default()),
            "org": ORG,
        }});
        (200, echo.to_string())
    });
    let agent = r#"
[[agent]]
label = "echoed"
model = "m-1"
base_url = "ENDPOINT-URL"
key_env = "OPENAI_API_KEY"
transcript = "claude-stream-json"
command = '''
python3 - <<'PY'
import base64, json, os, urllib.request
req = urllib.request.Request(os.environ["ASSAY_BASE_URL"] + "/chat/completions", data=b"{}",
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
answer = urllib.request.urlopen(req).read().decode()
error = json.loads(answer)["error"]
got = error["message"].rsplit(" ", 1)[-1]
for secret, name in [(got, "key"), (error["org"], "org")]:
    open(name + ".txt", "w").write(secret + "\n")
    open(name + ".b64", "w").write(base64.b64encode(secret.encode()).decode() + "\n")
    open(name + ".hex", "w").write(secret.encode().hex() + "\n")
print("answer:", answer)
result = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
          "result": answer, "usage": {"input_tokens": 1, "output_tokens": 1}}
open("/assay/out/transcript", "w").write(json.dumps(result) + "\n")
PY
'''

[redact]
env = ["ASSAY_TEST_ORG_SECRET"]
"#
    .replace("ENDPOINT-URL", &llm.url());
    let f = fixture(&agent);
    // An imported session whose agent got both some other way: its patch
    // is stored redacted too.
    let leaked = format!("# {KEY} {ORG}\n{OPS_SUB}");
    f.session(
        "imported/leak.json",
        "p-1",
        &f.diff1(&[("pkg/ops.py", Some(&leaked))]),
    );
    f.build_ok();
    let imported = f.project.output_record("session:imported/leak.json");
    assert_eq!(imported["facts"]["patch_redacted"], 2, "{imported:#}");
    assert_eq!(
        f.row("imported/leak.json", "exclude")["verdict"],
        "resolved"
    );
    // The endpoint got the key, and echoed it.
    let bearer = format!("Bearer {KEY}");
    assert!(
        llm.seen()
            .iter()
            .all(|s| s.authorization.as_deref() == Some(bearer.as_str()))
    );
    let attempt = f.project.output_record("attempt:agent/echoed/p-1/0");
    let patch = String::from_utf8(f.project.blob(attempt["patch"].as_str().unwrap())).unwrap();
    // What the agent got, and wrote, was the proxy's redaction.
    assert!(patch.contains("+[REDACTED]"), "{patch}");
    assert!(patch.contains("+W1JFREFDVEVEXQ=="), "{patch}");
    assert!(attempt["transcript"].is_string(), "{attempt:#}");
    let hex = |s: &[u8]| s.iter().map(|b| format!("{b:02x}")).collect::<String>();
    for secret in [KEY, ORG] {
        let encoded = std::process::Command::new("sh")
            .args(["-c", "printf %s \"$0\" | base64 -w0", secret])
            .output()
            .unwrap()
            .stdout;
        for form in [
            secret.as_bytes().to_vec(),
            encoded,
            hex(secret.as_bytes()).into_bytes(),
        ] {
            let mut found = holding(&f.project.path().join("cache"), &form);
            found.extend(holding(&f.project.path().join("release"), &form));
            assert_eq!(
                found,
                Vec::<String>::new(),
                "{}",
                String::from_utf8_lossy(&form)
            );
        }
    }
    assert!(f.project.path().join("release/report.html").exists());
}

/// An `[[agent]]` table reaching `url` with `command`; `extra` lines after
/// its model.
fn agent_table(label: &str, url: &str, extra: &str, command: &str) -> String {
    format!(
        r#"
[[agent]]
label = "{label}"
model = "m-1"
{extra}base_url = "{url}"
key_env = "OPENAI_API_KEY"
command = '''
{command}
'''
"#
    )
}

/// The attempt of `label` graded `unresolved`, the agent's, both of its
/// tasks in the agent's denominator.
fn counted_as_the_agents(f: &Fixture, summary: &serde_json::Value, label: &str) {
    let row = f.row(&format!("agent/{label}/p-1/0"), "exclude");
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("unresolved", "agent"),
        "{label}: {row:#?}"
    );
    let a = &summary["agents"][format!("{label}/m-1")];
    assert_eq!(a["n"], 2, "{label}: {a:#}");
}

/// Whose fault, on the proxy's word only (issue 35): agents that leave no
/// transcript, that write a trajectory ending in `RateLimitError` while
/// the proxy saw every request answered, or that never call an endpoint
/// that is up, are counted as their own failures; a real 429 and an
/// endpoint that refuses connections, as the proxy saw them, are the
/// infrastructure's, retried; an agent that never called an endpoint that
/// was down is the infrastructure's too (the proxy's probe).
#[test]
fn only_the_proxys_records_make_an_attempt_the_infrastructures() {
    let ok = Llm::start(|_, _| (200, r#"{"choices":[]}"#.into()));
    let busy = Llm::start(|_, _| (429, r#"{"error":{"message":"rate limited"}}"#.into()));
    // A port nothing listens on: the endpoint is down.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}/v1", l.local_addr().unwrap().port())
    };
    let call = r#"python3 -c 'import os, urllib.request; urllib.request.urlopen(urllib.request.Request(os.environ["ASSAY_BASE_URL"] + "/chat/completions", data=b"{}"))' || true"#;
    let fake = r#"echo '{"info":{"exit_status":"RateLimitError","model_stats":{}},"messages":[]}' > {transcript}"#;
    let agent = |label: &str, url: &str, command: &str| {
        agent_table(label, url, "transcript = \"mini-swe-agent\"\n", command)
    };
    let agents = [
        agent("silent", &ok.url(), call),
        agent("claims", &ok.url(), &format!("{call}\n{fake}")),
        agent("mute", &ok.url(), "true"),
        agent("limited", &busy.url(), &format!("{call}\n{fake}")),
        agent("refused", &down, call),
        agent("stranded", &down, fake),
    ]
    .concat();
    let f = fixture(&agents);
    f.build_ok();
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.path().join("release/summary.json")).unwrap())
            .unwrap();
    for label in ["silent", "claims", "mute"] {
        let attempt = f
            .project
            .output_record(&format!("attempt:agent/{label}/p-1/0"));
        assert!(
            attempt.get("infrastructure").is_none(),
            "{label}: {attempt:#}"
        );
        assert_eq!(attempt["facts"]["is_error"], false, "{label}: {attempt:#}");
        assert_eq!(
            attempt["proxy"]["forwarder_up"], true,
            "{label}: {attempt:#}"
        );
        counted_as_the_agents(&f, &summary, label);
    }
    let claims = f.project.output_record("attempt:agent/claims/p-1/0");
    assert_eq!(claims["facts"]["ended"], "RateLimitError", "{claims:#}");
    assert!(
        claims["requests"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == 200)
    );
    // The probe found the endpoint up: sending nothing was the agent's choice.
    let mute = f.project.output_record("attempt:agent/mute/p-1/0");
    assert_eq!(mute["proxy"]["probe"]["up"], true, "{mute:#}");
    for (label, why) in [
        ("limited", "status 429"),
        ("refused", "refused: the endpoint did not answer"),
        (
            "stranded",
            "the endpoint was down at the run's end (refused)",
        ),
    ] {
        let attempt = f
            .project
            .output_record(&format!("attempt:agent/{label}/p-1/0"));
        let got = attempt["infrastructure"].as_str().unwrap_or_default();
        assert!(got.contains(why), "{label}: {attempt:#}");
        assert_eq!(attempt["retried"].as_array().unwrap().len(), 1, "{label}");
        assert_eq!(attempt["facts"]["is_error"], true, "{label}");
        let row = f.row(&format!("agent/{label}/p-1/0"), "exclude");
        assert_eq!(row["fault"], "infrastructure", "{label}: {row:#?}");
        let a = &summary["agents"][format!("{label}/m-1")];
        assert_eq!(a["n"], 0, "{label}: {a:#}");
    }
    // The proxy's records never hold the key.
    assert_eq!(
        holding(f.project.path(), KEY.as_bytes()),
        Vec::<String>::new()
    );
}

/// A request the proxy reads but could not send as written (a space in a
/// header name, a control byte in a header value) is refused when read, a
/// 4xx to the agent, and is the agent's: 20 of 20 such attempts were
/// recorded as an upstream failure (`infrastructure`), retried, and left
/// out of the agent's denominator.
#[test]
fn a_request_the_proxy_cannot_forward_is_refused_as_the_agents() {
    let llm = Llm::start(|_, _| (200, r#"{"choices":[]}"#.into()));
    // Raw HTTP on the forwarder's port: Python's own client would refuse
    // to send such headers.
    let raw = |header: &str| {
        format!(
            r#"python3 - <<'EOF' || true
import os, socket, urllib.parse
u = urllib.parse.urlsplit(os.environ["ASSAY_BASE_URL"])
s = socket.create_connection((u.hostname, u.port))
s.sendall(b"POST " + u.path.encode() + b"/chat/completions HTTP/1.1\r\nHost: x\r\n" + {header} + b"\r\nContent-Length: 2\r\n\r\n{{}}")
print("answer:", s.recv(4096).split(b"\r\n")[0])
EOF"#
        )
    };
    let agent = |label: &str, command: &str| agent_table(label, &llm.url(), "", command);
    let agents = [
        agent("spaced", &raw(r#"b"X Bad: 1""#)),
        agent("control", &raw(r#"b"X-Bad: a\x01b""#)),
    ]
    .concat();
    let f = fixture(&agents);
    f.build_ok();
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.path().join("release/summary.json")).unwrap())
            .unwrap();
    for label in ["spaced", "control"] {
        let attempt = f
            .project
            .output_record(&format!("attempt:agent/{label}/p-1/0"));
        assert!(
            attempt.get("infrastructure").is_none(),
            "{label}: {attempt:#}"
        );
        let requests = attempt["requests"].as_array().unwrap();
        assert_eq!(requests.len(), 1, "{label}: {attempt:#}");
        let r = &requests[0];
        assert!(
            r["error"].as_str().is_some_and(
                |e| e.starts_with("refused: ") && e.contains("cannot be sent as written")
            ),
            "{label}: {r:#}"
        );
        assert!(r.get("upstream").is_none(), "{label}: {r:#}");
        counted_as_the_agents(&f, &summary, label);
    }
    // Nothing of it reached the endpoint.
    assert!(llm.seen().is_empty(), "{:?}", llm.seen());
}

// ---- on the docker executor ------------------------------------------------------

#[test]
fn a_scripted_agent_on_docker_makes_the_same_answers_and_verdicts_as_on_local() {
    let local = fixture(&scripted(""));
    let docker = fixture_on(Executor::Docker, &scripted(""));
    local.build_ok();
    let b = docker.build_ok();
    assert_eq!(
        b.names("node_finished")
            .iter()
            .filter(|n| n.starts_with("attempt:"))
            .count(),
        2
    );
    for id in ["agent/scripted/p-1/0", "agent/scripted/p-2/0"] {
        for arm in ["exclude", "keep"] {
            let (l, d) = (local.row(id, arm), docker.row(id, arm));
            assert_eq!(l["verdict"], d["verdict"], "{id} {arm}: {l:#?} {d:#?}");
        }
        // The same answer (its digest), read back from the workspace on
        // the host.
        let patch =
            |f: &Fixture| f.project.output_record(&format!("attempt:{id}"))["patch"].clone();
        assert_eq!(patch(&local), patch(&docker), "{id}");
    }
    assert_eq!(
        docker.row("agent/scripted/p-1/0", "exclude")["verdict"],
        "resolved"
    );
    let p1 = docker.project.output_record("attempt:agent/scripted/p-1/0");
    assert_ne!(p1["patch"], "", "{p1}");
    assert_eq!(
        docker.row("agent/scripted/p-1/0", "exclude")["sandbox"],
        "docker"
    );
    let attempt = docker.project.output_record("attempt:agent/scripted/p-1/0");
    let log = String::from_utf8(docker.project.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("agent-done"), "{log}");
    // A second build executes nothing.
    assert_eq!(docker.build_ok().summary.total.executed, 0);
}

#[test]
fn an_agent_on_docker_reaches_only_its_endpoint_and_finds_no_key_anywhere() {
    let llm = Llm::start(|_, _| (200, r#"{"choices":[{"message":{"content":"hi"}}]}"#.into()));
    let probe = format!(
        r#"
import os, socket, urllib.request
# The key in any variable of any process, or in any file it can read
# (written reversed here, so that this script does not hold it).
secret = "{key}"[::-1].encode()
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        if secret in open("/proc/%s/environ" % pid, "rb").read():
            print("KEY-IN-ENVIRON", pid)
    except OSError:
        pass
read = 0
for root, dirs, files in os.walk("/"):
    if root in ("/proc", "/sys", "/dev"):
        dirs[:] = []
        continue
    for name in files:
        path = os.path.join(root, name)
        try:
            if os.path.islink(path) or os.path.getsize(path) > (64 << 20):
                continue
            if secret in open(path, "rb").read():
                print("KEY-IN-FILE", path)
            read += 1
        except OSError:
            pass
print("files searched:", read)
# Any other way out: the internet, the endpoint's host port directly, the
# host through the default bridge's gateway, the Docker daemon.
for host, port in [("1.1.1.1", 80), ("127.0.0.1", {port}), ("172.17.0.1", {port}), ("172.17.0.1", 2375)]:
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); print("REACHED", host, port)
    except Exception as e:
        print("unreachable", host, port, type(e).__name__)
for sock in ["/var/run/docker.sock", "/run/docker.sock"]:
    print("docker socket", sock, "present" if os.path.exists(sock) else "absent")
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(sock); print("REACHED", sock)
    except Exception as e:
        print("unreachable", sock, type(e).__name__)
# Write outside the workspace: the prompt, the tools, the environment, the
# system, the forwarder, the project.
for path in ["/assay/in/prompt.md", "/assay/agent/planted", "/assay/env/planted",
             "/etc/planted", "/assay/bin/assay", "{project}/escaped.txt"]:
    try:
        open(path, "a").write("escaped")
        print("WROTE", path)
    except OSError as e:
        print("not written", path, type(e).__name__)
print("cache visible:", os.path.exists("{cache}"))
print("uid:", os.getuid())
"#,
        key = KEY.chars().rev().collect::<String>(),
        port = llm.port,
        cache = "CACHE",
        project = "PROJECT"
    );
    let f = probe_fixture(Executor::Docker, &llm, &probe);
    f.build_ok();
    let attempt = f.project.output_record("attempt:agent/probe/p-1/0");
    let log = String::from_utf8(f.project.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("key-held: assay-proxy-holds-the-key"), "{log}");
    assert!(log.contains("answer: {\"choices\""), "{log}");
    assert!(!log.contains("KEY-IN"), "{log}");
    let searched: u64 = log
        .lines()
        .find_map(|l| l.strip_prefix("files searched: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(searched > 1000, "the image's files were searched: {log}");
    assert!(!log.contains("REACHED"), "{log}");
    assert_eq!(log.matches("unreachable").count(), 6, "{log}");
    assert!(!log.contains("WROTE"), "{log}");
    assert_eq!(log.matches("not written").count(), 6, "{log}");
    assert!(!f.path().join("escaped.txt").exists());
    assert!(log.contains("cache visible: False"), "{log}");
    assert!(!log.contains("uid: 0"), "{log}");
    // The endpoint got the real key from the proxy, on the one request.
    let seen = llm.seen();
    assert_eq!(seen.len(), 2, "one request from each attempt: {seen:?}");
    for s in &seen {
        assert_eq!(s.path, "/v1/chat/completions");
        assert_eq!(
            s.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    assert!(attempt.get("infrastructure").is_none(), "{attempt}");
    // The key is nowhere in the project: cache, release, logs.
    assert_eq!(
        holding(f.project.path(), KEY.as_bytes()),
        Vec::<String>::new()
    );
}

#[test]
fn an_agent_filling_its_bound_workspace_on_docker_is_stopped_at_the_write_limit() {
    // Harmless if the defence fails: it writes 256 MiB into its own
    // workspace, in this test's cache.
    let f = fixture_on(
        Executor::Docker,
        r#"
[[agent]]
label = "filler"
model = "fill-1"
tracks = ["basic"]
transcript = "none"
command = '''
python3 - <<'PY'
import time
for i in range(16):
    with open("fill-%d.bin" % i, "wb") as out:
        for _ in range(16):
            out.write(b"\1" * (1 << 20))
    print("filled", i + 1, flush=True)
    time.sleep(0.2)
PY
'''
"#,
    );
    f.edit_pipeline("timeout = 60", "timeout = 60\nwrite_limit = 33554432");
    f.build_ok();
    let attempt = f.project.output_record("attempt:agent/filler/p-1/0");
    assert_eq!(attempt["limit"], "write", "{attempt:#}");
    assert_eq!(attempt["facts"]["ended"], "limit:write", "{attempt:#}");
    let log = String::from_utf8(f.project.blob(attempt["log"].as_str().unwrap())).unwrap();
    assert!(!log.contains("filled 16"), "{log}");
}
