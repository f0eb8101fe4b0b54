//! Flows in the machine's real Chromium against pages served by a tiny HTTP
//! server on loopback, written here. After every flow no process that
//! Chromium started is left: each test's Chromium carries a marker in its
//! environment, which its children inherit, and `/proc` is searched for it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assay_browser::{BrowserError, Flow, FlowOutcome, State, Step, run_flow};

/// Pages by path; a path that is absent answers 404, and `/hang` accepts the
/// connection and never answers.
fn serve(pages: &[(&str, &str)]) -> String {
    serve_logged(pages).0
}

/// [`serve`], and the paths requested, in order.
fn serve_logged(pages: &[(&str, &str)]) -> (String, Arc<Mutex<Vec<String>>>) {
    assay_testkit::echo_panics();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&requests);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let pages: BTreeMap<String, String> = pages
        .iter()
        .map(|(path, body)| ((*path).to_owned(), (*body).to_owned()))
        .collect();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some(path) = request_path(&mut stream) else {
                continue;
            };
            if let Ok(mut log) = log.lock() {
                log.push(path.clone());
            }
            if path == "/hang" {
                held.push(stream);
                continue;
            }
            let (status, body) = match pages.get(&path) {
                Some(body) => ("200 OK", body.as_str()),
                None => ("404 Not Found", "not here"),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (base, requests)
}

fn request_path(stream: &mut TcpStream) -> Option<String> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 << 10 {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&head);
    line.split_whitespace().nth(1).map(str::to_owned)
}

static MARKS: AtomicU64 = AtomicU64::new(0);

/// The machine's Chromium, marked for [`assert_nothing_left`].
fn chromium() -> (Command, String) {
    assay_testkit::echo_panics();
    let mark = format!(
        "{}-{}",
        std::process::id(),
        MARKS.fetch_add(1, Ordering::Relaxed)
    );
    let mut command = Command::new("chromium");
    command.env("ASSAY_BROWSER_TEST_MARK", &mark);
    (command, format!("ASSAY_BROWSER_TEST_MARK={mark}"))
}

/// The live processes that carry `mark` in their environment.
fn marked(mark: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|var| var == mark.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// No live process carries `mark` in its environment.
fn assert_nothing_left(mark: &str) {
    let left: Vec<String> = marked(mark)
        .into_iter()
        .map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default())
        .collect();
    assert!(left.is_empty(), "chromium processes left: {left:#?}");
}

fn run(base: &str, steps: Vec<Step>, budget: Duration) -> Result<FlowOutcome, BrowserError> {
    let (command, mark) = chromium();
    let flow = Flow {
        name: "test".into(),
        steps,
    };
    let outcome = run_flow(command, base, &flow, budget);
    assert_nothing_left(&mark);
    outcome
}

/// The flow failed at step `at`, for a reason that mentions `why`, with a
/// screenshot when `shot`.
fn assert_failed_at(outcome: &FlowOutcome, at: usize, why: &str) {
    assert_eq!(outcome.failed_at, Some(at), "{:#?}", details(outcome));
    assert_eq!(
        outcome.steps.len(),
        at + 1,
        "no step runs after the failure"
    );
    let failed = &outcome.steps[at];
    assert!(!failed.ok);
    assert!(failed.detail.contains(why), "{}", failed.detail);
}

fn assert_within(began: Instant, bound: Duration) {
    assert!(began.elapsed() < bound, "took {:?}", began.elapsed());
}

fn is_png(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x89PNG\r\n\x1a\n")
}

const FORM: &str = r#"<!doctype html><title>form</title>
<form onsubmit="return false">
  <input id="name" autocomplete="off">
  <label><input type="checkbox" id="agree"> agree</label>
  <button id="go" type="button">Greet</button>
  <button id="off" type="button" disabled>Off</button>
</form>
<p id="out" hidden></p>
<script>
  document.getElementById("go").addEventListener("click", function (e) {
    if (!e.isTrusted) return;
    setTimeout(function () {
      var out = document.getElementById("out");
      out.textContent = "Hello, " + document.getElementById("name").value;
      out.hidden = false;
    }, 200);
  });
</script>"#;

fn open(path: &str) -> Step {
    Step::Open { path: path.into() }
}

fn click(selector: &str) -> Step {
    Step::Click {
        selector: selector.into(),
    }
}

fn wait_for(selector: &str) -> Step {
    Step::WaitFor {
        selector: selector.into(),
    }
}

fn assert_text(selector: &str, contains: &str) -> Step {
    Step::AssertText {
        selector: selector.into(),
        contains: contains.into(),
    }
}

fn assert_state(selector: &str, state: State) -> Step {
    Step::AssertState {
        selector: selector.into(),
        state,
    }
}

fn greet_steps() -> Vec<Step> {
    vec![
        open("/"),
        assert_state("#out", State::Hidden),
        assert_state("#off", State::Disabled),
        Step::Type {
            selector: "#name".into(),
            text: "Ada".into(),
        },
        click("#agree"),
        assert_state("#agree", State::Checked),
        click("#go"),
        wait_for("#out"),
        assert_text("#out", "Hello, Ada"),
    ]
}

#[test]
fn a_form_is_filled_and_submitted_with_real_input_events() {
    let base = serve(&[("/", FORM)]);
    let outcome = run(&base, greet_steps(), Duration::from_secs(60)).expect("the flow runs");
    assert_eq!(outcome.failed_at, None, "{:#?}", details(&outcome));
    assert_eq!(outcome.steps.len(), 9);
    for (i, step) in outcome.steps.iter().enumerate() {
        assert_eq!(step.index, i);
        assert!(step.ok, "{}", step.detail);
        assert!(
            is_png(&step.screenshot_png),
            "step {i} has no PNG: {}",
            step.detail
        );
    }
}

#[test]
fn a_failing_assertion_stops_the_flow_at_its_step_with_a_screenshot() {
    let base = serve(&[("/", FORM)]);
    let mut steps = greet_steps();
    steps[8] = assert_text("#out", "Goodbye");
    steps.push(click("#go"));
    let outcome = run(&base, steps, Duration::from_secs(60)).expect("the flow runs");
    assert_failed_at(
        &outcome,
        8,
        "does not contain \"Goodbye\"; it reads \"Hello, Ada\"",
    );
    assert!(is_png(&outcome.steps[8].screenshot_png));
}

#[test]
fn a_missing_element_is_the_apps_failure() {
    let base = serve(&[("/", FORM)]);
    let steps = vec![open("/"), click("#nope"), click("#go")];
    let outcome = run(&base, steps, Duration::from_secs(60)).expect("no harness error");
    assert_failed_at(&outcome, 1, "no element matches #nope");
    assert!(is_png(&outcome.steps[1].screenshot_png));
}

#[test]
fn wait_for_gives_up_at_the_steps_deadline() {
    let base = serve(&[("/", FORM)]);
    let began = Instant::now();
    let steps = vec![open("/"), wait_for("#out")];
    let outcome = run(&base, steps, Duration::from_secs(8)).expect("the flow runs");
    assert_failed_at(&outcome, 1, "never became visible");
    assert_within(began, Duration::from_secs(10));
}

#[test]
fn a_chromium_that_exits_at_once_is_a_launch_failure() {
    let flow = Flow {
        name: "x".into(),
        steps: vec![open("/")],
    };
    let mut exits = Command::new("sh");
    exits.args(["-c", "echo no display here >&2; exit 3", "chromium"]);
    match run_flow(exits, "http://127.0.0.1:9", &flow, Duration::from_secs(20)) {
        Err(BrowserError::Launch(why)) => {
            assert!(why.contains("exited with status 3"), "{why}");
            assert!(why.contains("no display here"), "{why}");
        }
        other => panic!("expected Launch, got {other:?}"),
    }
    let missing = Command::new("/nonexistent/chromium");
    assert!(matches!(
        run_flow(
            missing,
            "http://127.0.0.1:9",
            &flow,
            Duration::from_secs(20)
        ),
        Err(BrowserError::Launch(_))
    ));
}

#[test]
fn a_chromium_that_never_answers_ends_within_the_budget() {
    let flow = Flow {
        name: "x".into(),
        steps: vec![open("/")],
    };
    let (_, mark) = chromium();
    let mut silent = Command::new("sh");
    // Holds the pipe open in a grandchild of its group, and says nothing.
    silent.args(["-c", "sleep 600 & sleep 600", "chromium"]);
    let (key, value) = mark.split_once('=').expect("mark");
    silent.env(key, value);
    let began = Instant::now();
    let result = run_flow(silent, "http://127.0.0.1:9", &flow, Duration::from_secs(2));
    assert_nothing_left(&mark);
    assert!(matches!(result, Err(BrowserError::Budget(_))), "{result:?}");
    assert_within(began, Duration::from_secs(4));
}

#[test]
fn a_page_that_never_answers_fails_at_open_within_the_budget() {
    let base = serve(&[("/", FORM)]);
    let began = Instant::now();
    let steps = vec![open("/hang"), click("#go")];
    let outcome = run(&base, steps, Duration::from_secs(8)).expect("no harness error");
    assert_failed_at(&outcome, 0, "did not load");
    assert_within(began, Duration::from_secs(9));
}

#[test]
fn a_page_that_spins_forever_fails_its_step_within_the_budget() {
    let spin = r#"<!doctype html><p id="a">a</p>
<button id="spin" onclick="setTimeout(function () { for (;;) {} }, 0)">spin</button>"#;
    let base = serve(&[("/", spin)]);
    let began = Instant::now();
    let steps = vec![open("/"), click("#spin"), assert_text("#a", "a")];
    let outcome = run(&base, steps, Duration::from_secs(10)).expect("no harness error");
    assert_failed_at(&outcome, 2, "did not answer");
    assert_within(began, Duration::from_secs(11));
}

/// The page replaces the DOM and string methods a driver would call in its
/// own world, to fake an assertion or read what it expects: the driver's
/// scripts run in an isolated world and see neither.
#[test]
fn a_page_cannot_fake_or_read_an_assertion() {
    let forger = r#"<!doctype html><p id="out">nothing yet</p>
<script>
  var fake = document.createElement("p");
  fake.textContent = "Welcome back, you are logged in";
  document.querySelector = function () { return fake; };
  Element.prototype.checkVisibility = function () { return true; };
  Object.defineProperty(HTMLElement.prototype, "innerText", { get: function () { return fake.textContent; } });
  String.prototype.indexOf = function (needle) {
    new Image().src = "/leak?" + encodeURIComponent(needle);
    return 0;
  };
</script>"#;
    let (base, requests) = serve_logged(&[("/", forger)]);
    let steps = vec![open("/"), assert_text("#out", "logged in as ada")];
    let outcome = run(&base, steps, Duration::from_secs(60)).expect("no harness error");
    assert_failed_at(&outcome, 1, "it reads \"nothing yet\"");
    let seen = requests.lock().expect("log").clone();
    assert!(
        !seen.iter().any(|path| path.starts_with("/leak")),
        "{seen:?}"
    );
}

/// A sandbox prefix keeps fds 3 and 4: Chromium in a network namespace of
/// its own is driven as usual, and the host's loopback is not reachable
/// from it (the app's failure to serve there, not the harness's).
#[test]
fn chromium_in_an_empty_network_namespace_reaches_nothing_outside() {
    let base = serve(&[("/", FORM)]);
    let (_, mark) = chromium();
    let mut command = Command::new("unshare");
    command.args(["--user", "--map-root-user", "--net", "chromium"]);
    let (key, value) = mark.split_once('=').expect("mark");
    command.env(key, value);
    let flow = Flow {
        name: "netns".into(),
        steps: vec![open("/")],
    };
    let outcome =
        run_flow(command, &base, &flow, Duration::from_secs(60)).expect("driven through unshare");
    assert_nothing_left(&mark);
    assert_failed_at(&outcome, 0, "could not open");
}

/// Console floods, alerts, popups and a navigation to the outside: the page
/// may fail its flow, never the driver. Popups are closed as they appear.
#[test]
fn a_hostile_page_does_not_break_the_driver() {
    let hostile = r#"<!doctype html><p id="status">loading</p>
<button id="go">go</button>
<script>
  var big = "x".repeat(1 << 20);
  for (var i = 0; i < 40; i++) console.log(big, i);
  alert("a dialog " + big.slice(0, 1000));
  var opened = 0;
  for (var j = 0; j < 20; j++) if (window.open("/popup" + j)) opened++;
  document.getElementById("status").textContent = "ready, " + opened + " popups";
  document.getElementById("go").onclick = function () {
    for (var k = 0; k < 20; k++) window.open("/popup-on-click" + k);
    setInterval(function () { console.error(big); }, 1);
    confirm("leave?");
    location.href = "http://198.51.100.7/outside";
  };
</script>"#;
    let popup = r#"<!doctype html><p>popup</p>
<script>setInterval(function () { new Image().src = "/popup-still-open?" + Date.now(); }, 300);</script>"#;
    let (base, requests) = serve_logged(&[("/", hostile), ("/popup-on-click0", popup)]);
    let outcome = run(
        &base,
        vec![
            open("/"),
            assert_text("#status", "ready, 0 popups"),
            click("#go"),
            Step::Open { path: "/".into() },
            assert_text("#status", "ready, 0 popups"),
            click("#go"),
            wait_for("#go"),
            wait_for("#status"),
        ],
        Duration::from_secs(30),
    )
    .expect("a hostile page is no harness error");
    assert!(
        outcome.steps[..6].iter().all(|s| s.ok),
        "{:#?}",
        details(&outcome)
    );
    // The page left for the outside: the app's failure, not the driver's.
    assert_failed_at(&outcome, 6, "#go");
    let seen = requests.lock().expect("log").clone();
    assert!(
        !seen
            .iter()
            .any(|path| path.starts_with("/popup-still-open")),
        "a popup stayed open: {seen:?}"
    );
}

#[test]
fn steps_read_from_toml_in_both_shapes() {
    #[derive(serde::Deserialize)]
    struct Doc {
        flow: Flow,
    }
    let doc: Doc = toml::from_str(
        r##"
[flow]
name = "greet"
steps = [
  { open = "/" },
  { open = { path = "/b" } },
  { type = { selector = "#name", text = "Ada" } },
  { click = "#go" },
  { click = { selector = "#go" } },
  { wait_for = "#out" },
  { assert_text = { selector = "#out", contains = "Hello" } },
  { assert_state = { selector = "#agree", state = "checked" } },
]
"##,
    )
    .expect("parses");
    assert_eq!(doc.flow.steps[0], open("/"));
    assert_eq!(doc.flow.steps[1], open("/b"));
    assert_eq!(doc.flow.steps[3], click("#go"));
    assert_eq!(doc.flow.steps[4], click("#go"));
    assert_eq!(doc.flow.steps[7], assert_state("#agree", State::Checked));
    // What serializes reads back.
    let again: Doc =
        toml::from_str(&toml::to_string(&serde_json::json!({"flow": doc.flow})).expect("ser"))
            .expect("reads back");
    assert_eq!(again.flow.steps.len(), 8);
    for bad in [
        r##"steps = [{ click = { selectr = "#go" } }]"##,
        r##"steps = [{ jump = "#go" }]"##,
        r##"steps = [{ assert_state = { selector = "#a", state = "shiny" } }]"##,
        r##"steps = [{ type = { selector = "#a" } }]"##,
    ] {
        let error = toml::from_str::<Flow>(&format!("name = \"x\"\n{bad}")).expect_err(bad);
        assert!(error.span().is_some(), "{bad}: {error}");
    }
}

fn details(outcome: &FlowOutcome) -> Vec<(bool, &str)> {
    outcome
        .steps
        .iter()
        .map(|s| (s.ok, s.detail.as_str()))
        .collect()
}

#[test]
fn an_app_that_is_not_listening_fails_at_open_with_the_error_page_shown() {
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let outcome = run(&base, vec![open("/")], Duration::from_secs(60)).expect("no harness error");
    assert_failed_at(&outcome, 0, "ERR_CONNECTION_REFUSED");
    assert!(
        is_png(&outcome.steps[0].screenshot_png),
        "{}",
        outcome.steps[0].detail
    );
}

/// Chromium killed in the middle of a step is the harness's failure, told
/// at once, not a step the app failed when the budget runs out.
#[test]
fn chromium_dying_mid_flow_is_a_protocol_error() {
    let base = serve(&[("/", FORM)]);
    let (command, mark) = chromium();
    let flow = Flow {
        name: "dies".into(),
        steps: vec![open("/"), wait_for("#never")],
    };
    let began = Instant::now();
    let running =
        std::thread::spawn(move || run_flow(command, &base, &flow, Duration::from_secs(60)));
    // The browser is the marked process whose parent is this test.
    let browser = loop {
        let found = marked(&mark)
            .into_iter()
            .find(|&pid| parent(pid) == Some(std::process::id() as i32));
        if let Some(pid) = found {
            break pid;
        }
        assert_within(began, Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: a signal to a child of this test.
    unsafe { libc::kill(browser, libc::SIGKILL) };
    let result = running.join().expect("run_flow returns");
    assert!(
        matches!(result, Err(BrowserError::Protocol(_))),
        "{result:?}"
    );
    assert_within(began, Duration::from_secs(30));
    assert_nothing_left(&mark);
}

fn parent(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A Chromium so slow to start that no step has time left is the harness's
/// budget, not a failed `open` of the app. The wait alone (6.5 s) is past
/// the steps' deadline (8 s less the 2 s reserve), however fast Chromium
/// itself starts (0.44 s on a quiet machine).
#[test]
fn a_chromium_slow_to_start_is_the_harness_budget() {
    let base = serve(&[("/", FORM)]);
    let (_, mark) = chromium();
    let mut slow = Command::new("sh");
    slow.args(["-c", "sleep 6.5; exec chromium \"$@\"", "sh"]);
    let (key, value) = mark.split_once('=').expect("mark");
    slow.env(key, value);
    let flow = Flow {
        name: "slow".into(),
        steps: vec![open("/")],
    };
    let result = run_flow(slow, &base, &flow, Duration::from_secs(8));
    assert!(matches!(result, Err(BrowserError::Budget(_))), "{result:?}");
    assert_nothing_left(&mark);
}
