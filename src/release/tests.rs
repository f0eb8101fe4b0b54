use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::manifest::walk;
use super::stats::{agent_key, round6, wilson, wilson_share};
use super::*;
use crate::model::records::{
    Arm, Fault, GradeRecord, MetricsRecord, QualityRecord, RunFacts, SessionRecord, TaskRecord,
    TaskStatus, Verdict,
};
use crate::pipeline::Policy;

pub(super) fn task(id: &str, track: &str, certified: bool) -> (TaskRecord, String) {
    let record = TaskRecord {
        instance_id: id.to_owned(),
        repo: "acme/widgets".to_owned(),
        base_commit: "abc".to_owned(),
        patch: String::new(),
        test_patch: String::new(),
        problem_statement: "fix it".to_owned(),
        fail_to_pass: vec!["t::a".to_owned()],
        pass_to_pass: vec![],
        track: track.to_owned(),
        status: TaskStatus::Released,
        certified,
        uncertified_because: if certified {
            vec![]
        } else {
            vec!["gold_resolves".to_owned()]
        },
        flaky: vec![],
        excluded: vec![],
        env: "default".to_owned(),
        ..TaskRecord::default()
    };
    (record, format!("task-{id}-{track}"))
}

pub(super) fn grade(
    session: &str,
    agent: &str,
    model: &str,
    arm: &str,
    verdict: &str,
    fault: &str,
) -> (GradeRecord, String) {
    let record = GradeRecord {
        session: session.to_owned(),
        instance_id: "t1".to_owned(),
        track: "basic".to_owned(),
        task_digest: "task-t1-basic".to_owned(),
        agent: agent.to_owned(),
        model: model.to_owned(),
        arm: Arm::parse(arm).expect("an arm"),
        policy: if arm == "exclude" {
            Policy::NewTestFiles
        } else {
            Policy::None
        },
        verdict: Verdict::parse(verdict).expect("a verdict"),
        fault: Fault::parse(fault).expect("a fault"),
        detail: String::new(),
        failing: if verdict == "unresolved" {
            vec!["t::a".to_owned(), "t::b".to_owned()]
        } else {
            vec![]
        },
        not_run: vec![],
        said: Default::default(),
        excluded_paths: vec![],
        excluded_by: Default::default(),
        exit_code: Some(0),
        base_check: "pass".to_owned(),
        new_check: "pass".to_owned(),
        base_exit: None,
        new_exit: None,
        reruns: 0,
        evidence: vec![],
        redactions: 0,
        reset_paths: vec![],
        tamper: vec![],
        sandbox: crate::model::config::Sandbox::Bwrap,
        executor: None,
        image: None,
        log_tail: None,
        unchecked: None,
        weakly_checked: None,
    };
    (record, format!("grade-{session}-{arm}"))
}

/// The same grade on another task.
fn on(mut g: (GradeRecord, String), instance: &str, track: &str) -> (GradeRecord, String) {
    g.0.instance_id = instance.to_owned();
    g.0.track = track.to_owned();
    g.0.task_digest = format!("task-{instance}-{track}");
    g
}

fn session(
    id: &str,
    agent: &str,
    model: &str,
    turns: Option<u64>,
    tokens: &[(&str, u64)],
) -> SessionRecord {
    SessionRecord {
        id: id.to_owned(),
        task: "t1".to_owned(),
        track: "basic".to_owned(),
        agent: agent.to_owned(),
        model: model.to_owned(),
        patch: "patch".to_owned(),
        facts: RunFacts {
            turns,
            tokens: tokens.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
            ..RunFacts::default()
        },
        transcript: None,
    }
}

fn metrics(session: &str, empty: bool) -> MetricsRecord {
    MetricsRecord {
        session: session.to_owned(),
        lines_added: if empty { 0 } else { 3 },
        lines_removed: 1,
        files_touched: 1,
        size_vs_gold: Some(1.0 / 3.0),
        empty_patch: empty,
        ..MetricsRecord::default()
    }
}

/// Two agents, both arms, one rerun, one arm disagreement, one empty patch,
/// one uncertified task, one not-graded session.
fn sample() -> PublishInput {
    let grades = vec![
        grade("s1", "alpha", "model-a", "exclude", "resolved", "none"),
        grade("s1", "alpha", "model-a", "keep", "resolved", "none"),
        grade(
            "s2",
            "alpha",
            "model-a",
            "exclude",
            "resolved_after_rerun",
            "flaky_test",
        ),
        grade(
            "s2",
            "alpha",
            "model-a",
            "keep",
            "resolved_after_rerun",
            "flaky_test",
        ),
        grade("s3", "alpha", "model-a", "exclude", "unresolved", "agent"),
        grade("s3", "alpha", "model-a", "keep", "resolved", "none"),
        on(
            grade("s4", "alpha", "model-a", "exclude", "resolved", "none"),
            "t2",
            "spec",
        ),
        grade(
            "s5",
            "beta",
            "model-b",
            "keep",
            "patch_apply_failed",
            "agent",
        ),
        on(
            grade("s6", "beta", "model-b", "exclude", "resolved", "none"),
            "t3",
            "basic",
        ),
    ];
    PublishInput {
        tasks: vec![
            task("t1", "basic", true),
            task("t2", "spec", true),
            task("t3", "basic", false),
        ],
        grades,
        metrics: vec![
            metrics("s1", false),
            metrics("s3", true),
            metrics("s5", false),
        ],
        sessions: vec![
            session(
                "s1",
                "alpha",
                "model-a",
                Some(10),
                &[("input", 1000), ("output", 200)],
            ),
            session("s2", "alpha", "model-a", Some(20), &[("input", 3000)]),
            session("s3", "alpha", "model-a", None, &[]),
        ],
        not_graded: vec![("s9".to_owned(), "unknown task".to_owned())],
        prices: [(
            "model-a".to_owned(),
            Price([("input".to_owned(), 3.0), ("output".to_owned(), 15.0)].into()),
        )]
        .into(),
        judges: vec![],
        readings: vec![],
        ..PublishInput::default()
    }
}

fn json(files: &BTreeMap<String, Vec<u8>>, name: &str) -> Value {
    serde_json::from_slice(&files[name]).expect("valid json")
}

/// summary.json printed `"score": -0.0` for an agent that resolved nothing
/// (an empty f64 sum is -0.0): no published number is a negative zero.
#[test]
fn no_published_number_is_a_negative_zero() {
    assert!(round6(-0.0).is_sign_positive());
    assert!(round6(-1e-9).is_sign_positive());
    assert_eq!(round6(-0.25), -0.25);
    assert_eq!(serde_json::to_string(&round6(-0.0)).expect("json"), "0.0");
    let mut input = sample();
    input.tasks.push(task("t4", "basic", true));
    let files = publish(&input);
    let b = &json(&files, "summary.json")["agents"]["beta/model-b"]["leaderboard"];
    assert_eq!(b["resolved"], 0, "an agent that resolved nothing");
    for name in [
        "summary.json",
        "results.csv",
        "manifest.json",
        "report.html",
    ] {
        let text = String::from_utf8_lossy(&files[name]);
        assert!(
            !text.contains("-0.0") && !text.contains("-0,"),
            "{name}: {text}"
        );
    }
}

#[test]
fn wilson_matches_known_values() {
    let r4 = |(lo, hi): (f64, f64)| ((lo * 1e4).round() / 1e4, (hi * 1e4).round() / 1e4);
    assert_eq!(wilson(0, 10).map(r4), Some((0.0, 0.2775)));
    assert_eq!(wilson(5, 10).map(r4), Some((0.2366, 0.7634)));
    assert_eq!(wilson(10, 10).map(r4), Some((0.7225, 1.0)));
    assert_eq!(wilson(0, 0), None);
    assert_eq!(wilson(3, 2), None);
}

#[test]
fn csv_quotes_commas_and_quotes() {
    let mut input = sample();
    input.grades = vec![grade(
        "s1",
        "al,pha \"x\"",
        "m",
        "exclude",
        "resolved",
        "none",
    )];
    let files = publish(&input);
    let csv = String::from_utf8(files["results.csv"].clone()).expect("utf8");
    let mut lines = csv.split("\r\n");
    assert_eq!(
        lines.next(),
        Some(
            "session,instance_id,track,agent,model,arm,policy,verdict,fault,failing,not_run,excluded_paths,exit_code,\
             base_check,new_check,base_exit,new_exit,reruns,redactions,grade_digest,task_digest,lines_added,lines_removed,\
             files_touched,size_vs_gold,suppressions_added,comment_lines_added,empty_patch,turns,tokens_total,\
             reset_paths,tamper,sandbox,ended,is_error,permission_denials,duration_ms,cost_usd,reported_cost_usd"
        )
    );
    let row = lines.next().expect("a row");
    assert!(
        row.starts_with("s1,t1,basic,\"al,pha \"\"x\"\"\",m,exclude,"),
        "{row}"
    );
    assert!(
        row.ends_with(",3,1,1,0.333333,0,0,false,10,1200,,,bwrap,,,,,,"),
        "{row}"
    );
}

/// A regression failing thousands of tests made a `failing` field of
/// 169,604 characters; Python's `csv` refuses fields over 131,072, so the
/// whole file was unreadable. Long lists go by count.
#[test]
fn a_session_failing_2000_tests_keeps_results_csv_readable_by_pythons_csv() {
    let mut input = sample();
    let mut many = grade("s1", "alpha", "m", "exclude", "unresolved", "agent");
    many.0.failing = (0..2000)
        .map(|i| {
            format!(
                "tests/test_regression.py::TestEverything::test_case_number_{i:04}_with_a_long_name"
            )
        })
        .collect();
    let few = grade("s2", "alpha", "m", "exclude", "unresolved", "agent");
    input.grades = vec![many, few];
    let files = publish(&input);
    let script = "import csv, io, json, sys\n\
                  rows = list(csv.DictReader(io.StringIO(sys.stdin.read(), newline='')))\n\
                  print(json.dumps([[r['session'], r['failing']] for r in rows]))\n";
    let mut python = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    use std::io::Write;
    python
        .stdin
        .take()
        .expect("stdin")
        .write_all(&files["results.csv"])
        .expect("write");
    let out = python.wait_with_output().expect("python3 ran");
    assert!(
        out.status.success(),
        "Python's csv refused results.csv: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<(String, String)> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        rows,
        [
            (
                "s1".to_owned(),
                "2000 tests: the full list is in the grade record (assay show <grade_digest>)"
                    .to_owned()
            ),
            ("s2".to_owned(), "t::a;t::b".to_owned()),
        ]
    );
}

#[test]
fn csv_rows_sorted_and_lists_joined() {
    let files = publish(&sample());
    let csv = String::from_utf8(files["results.csv"].clone()).expect("utf8");
    let rows: Vec<&str> = csv
        .split("\r\n")
        .skip(1)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), 9);
    let keys: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            let f: Vec<&str> = r.split(',').collect();
            (f[0], f[5])
        })
        .collect();
    assert_eq!(keys[0], ("s1", "exclude"));
    assert_eq!(keys[1], ("s1", "keep"));
    assert_eq!(keys[7], ("s5", "keep"));
    assert!(rows.iter().any(|r| r.contains(",t::a;t::b,")));
}

#[test]
fn output_is_deterministic_under_shuffling() {
    let a = publish(&sample());
    assert_eq!(a, publish(&sample()));
    let mut shuffled = sample();
    shuffled.grades.reverse();
    shuffled.grades.swap(0, 4);
    shuffled.tasks.reverse();
    shuffled.sessions.reverse();
    shuffled.metrics.reverse();
    assert_eq!(a, publish(&shuffled));
    assert_eq!(a.keys().filter(|k| k.starts_with("pages/")).count(), 5);
    assert_eq!(
        a.keys()
            .filter(|k| !k.starts_with("pages/"))
            .collect::<Vec<_>>(),
        [
            "manifest.json",
            "report.html",
            "results.csv",
            "summary.json"
        ]
    );
}

#[test]
fn resolved_after_rerun_is_not_in_the_resolved_rate() {
    let s = json(&publish(&sample()), "summary.json");
    let a = &s["agents"]["alpha/model-a"];
    // exclude arm: s1 resolved, s2 resolved_after_rerun, s3 unresolved, s4 resolved.
    assert_eq!(a["n"], 4);
    assert_eq!(a["resolved"], 2);
    assert_eq!(a["resolved_after_rerun"], 1);
    assert_eq!(a["resolved_rate"], 0.5);
    assert_eq!(a["verdicts"].as_object().map(|m| m.len()), Some(8));
    assert_eq!(a["verdicts"]["ineligible"], 0);
    assert_eq!(a["faults"]["flaky_test"], 1);
    assert_eq!(a["empty_patch"], 1);
    assert_eq!(a["by_track"]["basic"]["n"], 3);
    assert_eq!(a["by_track"]["spec"]["resolved_rate"], 1.0);
    assert_eq!(a["turns"]["mean"], 15.0);
    assert_eq!(a["tokens"]["mean_by_kind"]["input"], 2000.0);
    // (1000 * 3 + 200 * 15) / 1e6 + 3000 * 3 / 1e6
    assert_eq!(a["cost_usd"]["total"], 0.015);
    // beta: only a keep arm on a certified task; s6 is on an uncertified task.
    let b = &s["agents"]["beta/model-b"];
    assert_eq!(b["n"], 1);
    assert_eq!(b["arms"]["keep"], 1);
    assert_eq!(b["cost_usd"], Value::Null);
    assert_eq!(s["tasks"]["uncertified"], 1);
    assert_eq!(s["not_graded"]["by_reason"]["task uncertified"], 1);
    assert_eq!(s["not_graded"]["by_reason"]["unknown task"], 1);
}

#[test]
fn zero_sessions_give_null_rates() {
    let mut input = sample();
    input
        .grades
        .retain(|g| g.0.agent == "beta" && g.0.session == "s6");
    let s = json(&publish(&input), "summary.json");
    let b = &s["agents"]["beta/model-b"];
    assert_eq!(b["n"], 0);
    assert_eq!(b["resolved_rate"], Value::Null);
    assert_eq!(b["resolved_rate_lo"], Value::Null);
}

/// A release with no session graded has no `trials` in summary.json: its
/// funnel's "sessions graded" cell is a plain 0, named by nothing that
/// `assay explain` could not answer.
#[test]
fn with_no_session_graded_the_funnel_names_no_missing_figure() {
    let mut input = sample();
    input.grades.clear();
    input.metrics.clear();
    input.sessions.clear();
    input.not_graded.clear();
    let files = publish(&input);
    let summary = json(&files, "summary.json");
    assert!(summary.get("trials").is_none(), "{summary:#}");
    let html = String::from_utf8(files["report.html"].clone()).unwrap();
    assert!(
        html.contains("<tr><th>sessions graded</th><td>0</td>"),
        "{html}"
    );
    assert!(!html.contains("title=\"summary.trials"), "{html}");
}

#[test]
fn verifier_suspects_are_sessions_whose_arms_disagree() {
    let s = json(&publish(&sample()), "summary.json");
    let suspects = s["verifier_suspects"].as_array().expect("array");
    assert_eq!(suspects.len(), 1);
    assert_eq!(suspects[0]["session"], "s3");
    assert_eq!(suspects[0]["instance_id"], "t1");
    assert_eq!(suspects[0]["exclude"], "unresolved");
    assert_eq!(suspects[0]["keep"], "resolved");
}

#[test]
fn release_digest_is_recomputable() {
    let files = publish(&sample());
    let m = json(&files, "manifest.json");
    let digest = m["release_digest"].as_str().expect("digest").to_owned();
    assert_eq!(digest.len(), 64);
    let text = String::from_utf8(files["manifest.json"].clone()).expect("utf8");
    let needle = format!("\"release_digest\": \"{digest}\"");
    assert_eq!(text.matches(&needle).count(), 1);
    let emptied = text.replace(&needle, "\"release_digest\": \"\"");
    assert_eq!(
        blake3::hash(emptied.as_bytes()).to_hex().to_string(),
        digest
    );
    for name in ["results.csv", "summary.json", "report.html"] {
        assert_eq!(
            m["files"][name],
            blake3::hash(&files[name]).to_hex().to_string()
        );
    }
    assert_eq!(m["tasks"]["t2/spec"], "task-t2-spec");
}

#[test]
fn every_summary_number_is_in_the_manifest() {
    let files = publish(&sample());
    let s = json(&files, "summary.json");
    let m = json(&files, "manifest.json");
    let numbers: BTreeMap<&str, &Value> = m["numbers"]
        .as_array()
        .expect("numbers")
        .iter()
        .map(|n| (n["path"].as_str().expect("path"), n))
        .collect();
    let mut seen = 0;
    walk(&s, "summary".to_owned(), &mut |path, value| {
        seen += 1;
        let n = numbers
            .get(path.as_str())
            .unwrap_or_else(|| panic!("{path} missing"));
        assert_eq!(n["value"], Value::Number(value.clone()), "{path}");
        let grades = n["grades"].as_array().expect("grades");
        if path.starts_with("summary.agents[alpha/model-a]") && !path.contains(".by_track[") {
            assert!(!grades.is_empty(), "{path} lists no grade");
        }
    });
    assert_eq!(seen, numbers.len());
    let rate = numbers["summary.agents[alpha/model-a].resolved_rate"];
    assert_eq!(rate["value"], 0.5);
    let grades: Vec<&str> = rate["grades"]
        .as_array()
        .expect("grades")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        grades,
        [
            "grade-s1-exclude",
            "grade-s2-exclude",
            "grade-s3-exclude",
            "grade-s4-exclude"
        ]
    );
    let mean = numbers["summary.agents[alpha/model-a].turns.mean"];
    assert_eq!(mean["grades"].as_array().map(Vec::len), Some(2));
    assert!(
        numbers["summary.tasks.released"]["tasks"]
            .as_array()
            .is_some_and(|t| t.len() == 3)
    );
}

#[test]
fn report_is_self_contained_and_escaped() {
    let mut input = sample();
    input.grades.push(grade(
        "s7",
        "<script>alert('x')</script>",
        "m&m",
        "exclude",
        "resolved",
        "none",
    ));
    let files = publish(&input);
    let html = String::from_utf8(files["report.html"].clone()).expect("utf8");
    assert!(!html.contains("http://"));
    assert!(!html.contains("https://"));
    assert!(!html.contains("src="));
    assert!(!html.contains("<link"));
    // One script, the pages' own, admitted by its hash and nothing else.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(html.contains(&pages::script_tag()));
    assert!(html.contains(&format!("script-src 'sha256-{}'", pages::script_hash())));
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; / m&amp;m"));
    assert!(html.contains("<svg"));
    assert!(html.contains("50.0% ["), "the bar label");
    for section in [
        "Verdicts",
        "Tracks",
        "Tasks × agents",
        "Verifier suspects",
        "Not graded",
        "Turns, tokens and cost",
    ] {
        assert!(html.contains(&format!("<h2>{section}")), "{section}");
    }
}

/// A transcript is the agent's text: markup in its prose, its tool inputs
/// and its outputs is shown as text on its page, under the same policy
/// as every page (no script, nothing loaded), and every page is a release
/// file the manifest lists.
#[test]
fn a_transcript_page_shows_every_turn_escaped() {
    let hostile = "</script><img src=x onerror=alert(1)>";
    let text = [
        serde_json::json!({"type": "assistant", "message": {"content": [
            {"type": "text", "text": format!("I will {hostile}")},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": hostile}}
        ], "usage": {"input_tokens": 7, "output_tokens": 11}}}),
        serde_json::json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": hostile, "is_error": true}
        ]}}),
        serde_json::json!({"type": "result", "subtype": "success", "is_error": false,
            "num_turns": 1, "result": hostile,
            "permission_denials": [{"tool_name": "Write", "tool_input": {"file_path": hostile}}]}),
    ]
    .map(|v| v.to_string())
    .join("\n");
    let mut input = sample();
    input.sessions[0].transcript = Some("tr1".to_owned());
    input
        .transcripts
        .insert("tr1".to_owned(), text.into_bytes());
    let files = publish(&input);
    let name = pages::transcript("s1");
    let page = String::from_utf8(files[&name].clone()).expect("utf8");
    // The pages' own script, admitted by its hash, is the one script.
    assert_eq!(page.matches(&pages::script_tag()).count(), 1);
    let page = page.replace(&pages::script_tag(), "");
    assert!(
        !page.contains("<img") && !page.contains("</script>"),
        "{page}"
    );
    assert!(
        !page.contains("<script") && !page.contains("http:"),
        "{page}"
    );
    assert!(page.contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
    assert!(page.contains("Content-Security-Policy"));
    assert!(page.contains("<h3 class=\"step\" id=\"step-1\">step 1</h3>"));
    assert!(page.contains("tokens: input 7, output 11"), "{page}");
    assert!(page.contains("<details class=\"out err\"><summary><strong>error</strong>"));
    assert!(page.contains("<strong>permission denied</strong>: Write"));
    assert!(page.contains("1 model steps, 1 tool calls, 1 failed, 1 denied"));
    // Reached from the matrix cell, and on the task's page from the
    // session's section and its rows (two arms).
    let report = String::from_utf8(files["report.html"].clone()).expect("utf8");
    assert_eq!(report.matches(&format!("href=\"{name}\"")).count(), 1);
    let task = String::from_utf8(files[&pages::task("t1", "basic")].clone()).expect("utf8");
    let from_task = format!("href=\"{}\"", pages::from_page(&name));
    assert_eq!(task.matches(&from_task).count(), 3, "{task}");
    // And it leads back to the section.
    assert!(page.contains(&format!(
        "href=\"{}#{}\"",
        pages::from_page(&pages::task("t1", "basic")),
        pages::anchor("s1")
    )));
    let manifest = json(&files, "manifest.json");
    assert!(manifest["files"][&name].is_string(), "{manifest:#}");
    // A session without a transcript has no page.
    assert!(!files.contains_key(&pages::transcript("s2")));
}

/// A page per task (statement, lists, every agent's sessions) and per
/// agent, reached from the matrix's rows and columns, each table sortable.
#[test]
fn every_task_and_agent_has_a_page_linked_from_the_matrix() {
    let mut input = sample();
    input.tasks[0].0.problem_statement = "divide <b>by</b> zero".to_owned();
    let files = publish(&input);
    let report = String::from_utf8(files["report.html"].clone()).expect("utf8");
    let task = pages::task("t1", "basic");
    let page = String::from_utf8(files[&task].clone()).expect("a task page");
    assert!(page.contains("divide &lt;b&gt;by&lt;/b&gt; zero"), "{page}");
    assert!(page.contains("<h2>FAIL_TO_PASS (1)</h2>"), "{page}");
    assert!(
        page.contains("<h2>Grades (7)</h2>"),
        "s1-s3 on both arms, s5: {page}"
    );
    assert!(page.contains("<table class=\"sortable\">"));
    assert!(page.contains(&format!(
        "href=\"{}\"",
        pages::from_page(&pages::agent("beta", "model-b"))
    )));
    // Its sessions' sections are on it, each row linking to its own.
    for s in ["s1", "s2", "s3", "s5"] {
        let id = pages::anchor(s);
        assert!(page.contains(&format!("<section class=\"session\" id=\"{id}\">")));
        assert!(page.contains(&format!("href=\"{}#{id}\"", pages::from_page(&task))));
    }
    assert!(report.contains(&format!("<a href=\"{task}\">t1</a>")));
    let agent = pages::agent("alpha", "model-a");
    let page = String::from_utf8(files[&agent].clone()).expect("an agent page");
    assert!(page.contains("<h2>Grades (7)</h2>"), "{page}");
    assert!(report.contains(&format!("<a href=\"{agent}\">alpha / model-a</a>")));
    // Every page is a release file the manifest lists.
    let manifest = json(&files, "manifest.json");
    for name in files.keys().filter(|n| n.starts_with("pages/")) {
        assert!(manifest["files"][name].is_string(), "{name}");
    }
}

#[test]
fn agent_keys_do_not_collide() {
    assert_eq!(agent_key("alpha", "model-a"), "alpha/model-a");
    assert_ne!(agent_key("a/b", "c"), agent_key("a", "b/c"));
}

#[test]
fn cost_is_priced_per_model_id_and_the_reported_cost_kept_beside_it() {
    let mut input = sample();
    let s1 = input
        .sessions
        .iter_mut()
        .find(|s| s.id == "s1")
        .expect("s1");
    s1.facts.by_model = BTreeMap::from([
        (
            "big-model".to_owned(),
            BTreeMap::from([("input".to_owned(), 1_000_000), ("output".to_owned(), 2)]),
        ),
        (
            "small-model".to_owned(),
            BTreeMap::from([("input".to_owned(), 10)]),
        ),
    ]);
    s1.facts.reported_cost_usd = Some(0.5);
    input.prices.insert(
        "big-model".to_owned(),
        Price([("input".to_owned(), 15.0)].into()),
    );
    let s = json(&publish(&input), "summary.json");
    let cost = &s["agents"]["alpha/model-a"]["cost_usd"];
    // s1: 1e6 input tokens of big-model at $15/M (its output unpriced, and
    // small-model has no price); s2 by its label: 3000 input at $3/M.
    assert_eq!(cost["total"], 15.009);
    assert_eq!(
        cost["unpriced_kinds"],
        serde_json::json!(["model small-model", "output"])
    );
    assert_eq!(cost["reported_sessions"], 1);
    assert_eq!(cost["reported_total"], 0.5);
}

/// Counted by hand: alpha/model-a is scored on the basic and spec tracks,
/// whose certified tasks are t1, t4 (basic) and t2 (spec); t3 is
/// uncertified. It attempted t1 three times (s1 resolved, s2 resolved only
/// after a rerun, s3 unresolved: 1/3), t2 once (resolved: 1), t4 never (0):
/// pass@1 = (1/3 + 1 + 0)/3 = 4/9, over 3 tasks. beta/model-b (basic only:
/// t1, t4) failed its one attempt: 0 of 2.
#[test]
fn the_leaderboard_scores_over_every_certified_task_of_the_track() {
    let mut input = sample();
    input.tasks.push(task("t4", "basic", true));
    let files = publish(&input);
    let s = json(&files, "summary.json");
    let a = &s["agents"]["alpha/model-a"]["leaderboard"];
    assert_eq!(
        (
            a["tasks"].clone(),
            a["attempted"].clone(),
            a["attempts"].clone(),
            a["resolved"].clone()
        ),
        (3.into(), 2.into(), 4.into(), 2.into())
    );
    assert_eq!(a["score"], round6(4.0 / 9.0));
    assert_eq!(a["coverage"], round6(2.0 / 3.0));
    let (lo, hi) = wilson_share(4.0 / 9.0, 3).expect("interval");
    assert_eq!(
        (a["score_lo"].clone(), a["score_hi"].clone()),
        (round6(lo).into(), round6(hi).into())
    );
    // t2 has one attempt: pass@k stops at k = 1.
    assert_eq!(a["pass_at_k"], serde_json::json!({"1": round6(4.0 / 9.0)}));
    // The per-attempt rate beside it: 2 resolved of 4 sessions.
    assert_eq!(s["agents"]["alpha/model-a"]["resolved_rate"], 0.5);
    let b = &s["agents"]["beta/model-b"]["leaderboard"];
    assert_eq!(
        (
            b["tasks"].clone(),
            b["attempted"].clone(),
            b["resolved"].clone()
        ),
        (2.into(), 1.into(), 0.into())
    );
    assert_eq!(b["score"], 0.0);
    assert_eq!(b["score_lo"], 0.0);
    assert_eq!(
        s["ranking"],
        serde_json::json!(["alpha/model-a", "beta/model-b"])
    );
    let html = String::from_utf8(files["report.html"].clone()).expect("utf8");
    assert!(html.contains("<h2>Leaderboard</h2>"));
    assert!(html.contains("44.4% ["), "the score");
    assert!(html.contains(">2/3<"), "the coverage");
}

/// An outage that takes a task's attempts reads apart from the agent
/// failing it: the lost share sits beside the score, and pass@1 over the
/// complete tasks alone beside the headline. alpha: t1 (1 of 3 resolved),
/// t2 (s4 resolved, s7 lost to the infrastructure), t4 never attempted:
/// only t1 is complete, so that figure is 1/3. Cost: s1 ($0.006) and s2
/// ($0.009) report tokens, and s1 alone resolved: $0.015 per resolved task.
#[test]
fn the_leaderboard_shows_lost_attempts_complete_tasks_and_cost_per_resolved() {
    let mut input = sample();
    input.tasks.push(task("t4", "basic", true));
    input.grades.push(on(
        grade(
            "s7",
            "alpha",
            "model-a",
            "exclude",
            "unresolved",
            "infrastructure",
        ),
        "t2",
        "spec",
    ));
    let files = publish(&input);
    let s = json(&files, "summary.json");
    let a = &s["agents"]["alpha/model-a"];
    let b = &a["leaderboard"];
    assert_eq!(b["complete"], 1, "{b:#}");
    assert_eq!(b["score_complete"], round6(1.0 / 3.0), "{b:#}");
    assert_eq!(b["score"], round6((1.0 / 3.0 + 1.0) / 3.0), "{b:#}");
    assert_eq!(a["cost_usd"]["per_resolved"], 0.015, "{a:#}");
    assert_eq!(a["cost_usd"]["mean"], 0.0075, "{a:#}");
    // beta attempted only t1 of its t1 and t4, nothing lost: incomplete too.
    let beta = &s["agents"]["beta/model-b"]["leaderboard"];
    assert_eq!(beta["complete"], 1, "{beta:#}");
    // Every task complete: neither figure is published.
    let full = json(&publish(&sample()), "summary.json");
    let b1 = &full["agents"]["beta/model-b"]["leaderboard"];
    assert_eq!(b1["complete"], Value::Null, "{b1:#}");
    assert_eq!(b1["score_complete"], Value::Null, "{b1:#}");
    let html = String::from_utf8(files["report.html"].clone()).expect("utf8");
    assert!(
        html.contains(
            "<td class=\"n\" title=\"summary.agents[alpha/model-a].leaderboard.left_out\">1/5 (20.0%)</td>"
        ),
        "the lost share, named by its path"
    );
    assert!(
        html.contains("33.3% <span class=\"muted\">over 1</span>"),
        "complete tasks only"
    );
    assert!(html.contains("$0.0150"), "cost per resolved");
}

/// k attempts per task, as the field runs them: pass@1 is the mean share
/// of resolved attempts per task, pass@k the unbiased estimator, and an
/// attempt whose run ended on an infrastructure fault is left out of the
/// denominator, listed, and named in the manifest apart.
#[test]
fn attempts_combine_into_pass_at_1_and_pass_at_k_infrastructure_apart() {
    let mut input = sample();
    let g = |s: &str, t: &str, verdict: &str, fault: &str| {
        on(
            grade(s, "gamma", "model-g", "exclude", verdict, fault),
            t,
            "basic",
        )
    };
    input.tasks = vec![
        task("t1", "basic", true),
        task("t2", "basic", true),
        task("t3", "basic", true),
    ];
    input.grades = vec![
        // t1: 2 of 3 resolved.
        g("g1", "t1", "resolved", "none"),
        g("g2", "t1", "unresolved", "agent"),
        g("g3", "t1", "resolved", "none"),
        // t2: 0 of 2, and one run the API failed.
        g("g4", "t2", "unresolved", "agent"),
        g("g5", "t2", "unresolved", "agent"),
        g("g6", "t2", "unresolved", "infrastructure"),
        // t3: 2 of 2.
        g("g7", "t3", "resolved", "none"),
        g("g8", "t3", "resolved", "none"),
    ];
    let files = publish(&input);
    let s = json(&files, "summary.json");
    let b = &s["agents"]["gamma/model-g"]["leaderboard"];
    let pass1 = (2.0 / 3.0 + 0.0 + 1.0) / 3.0;
    // pass@2: t1 1 − C(1,2)/C(3,2) = 1, t2 0, t3 1.
    let pass2 = (1.0 + 0.0 + 1.0) / 3.0;
    insta::assert_json_snapshot!(b, @r#"
    {
      "attempted": 3,
      "attempts": 7,
      "complete": 2,
      "coverage": 1.0,
      "left_out": [
        {
          "grade": "grade-g6-exclude",
          "instance_id": "t2",
          "session": "g6",
          "why": "unresolved (infrastructure): "
        }
      ],
      "pass_at_k": {
        "1": 0.555556,
        "2": 0.666667
      },
      "resolved": 4,
      "score": 0.555556,
      "score_complete": 0.833333,
      "score_hi": 0.898011,
      "score_lo": 0.150711,
      "tasks": 3
    }
    "#);
    assert_eq!(b["score"], round6(pass1));
    assert_eq!(b["pass_at_k"]["2"], round6(pass2));
    let (lo, hi) = wilson_share(pass1, 3).expect("interval");
    assert_eq!(
        (b["score_lo"].clone(), b["score_hi"].clone()),
        (round6(lo).into(), round6(hi).into())
    );
    let manifest = json(&files, "manifest.json");
    let score = manifest["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["path"] == "summary.agents[gamma/model-g].leaderboard.score")
        .expect("the score's sources");
    assert_eq!(score["grades"].as_array().unwrap().len(), 7);
    assert_eq!(score["tasks"].as_array().unwrap().len(), 3);
    assert_eq!(score["left_out"], serde_json::json!(["grade-g6-exclude"]));
    let html = String::from_utf8(files["report.html"].clone()).expect("utf8");
    assert!(html.contains("@2 66.7%"), "pass@2 in the leaderboard");
    assert!(
        html.contains(&format!(
            "<code>{}</code> on t2",
            section_link(("t2", "basic"), "g6")
        )),
        "the left-out attempt listed"
    );
}

#[test]
fn pass_at_k_is_the_unbiased_estimator() {
    use super::summary::pass_at_k;
    assert_eq!(pass_at_k(3, 0, 1), 0.0);
    assert_eq!(pass_at_k(3, 3, 2), 1.0);
    assert!((pass_at_k(3, 1, 1) - 1.0 / 3.0).abs() < 1e-12);
    // 1 − C(3,2)/C(4,2) = 1 − 3/6.
    assert!((pass_at_k(4, 1, 2) - 0.5).abs() < 1e-12);
    assert_eq!(pass_at_k(1, 1, 2), 0.0, "fewer attempts than k");
}

#[test]
fn run_facts_are_published_per_session_and_per_agent() {
    let mut input = sample();
    for s in &mut input.sessions {
        if s.id == "s1" {
            s.facts.ended = Some("success".to_owned());
            s.facts.is_error = Some(false);
            s.facts.permission_denials = Some(2);
            s.facts.duration_ms = Some(1000);
            s.facts.reported_cost_usd = Some(0.01);
        }
        if s.id == "s2" {
            s.facts.ended = Some("error_during_execution".to_owned());
            s.facts.is_error = Some(true);
            s.facts.duration_ms = Some(3000);
        }
    }
    let files = publish(&input);
    let csv = String::from_utf8(files["results.csv"].clone()).expect("utf8");
    let s1 = csv
        .split("\r\n")
        .find(|r| r.starts_with("s1,") && r.contains(",exclude,"))
        .expect("s1");
    // (1000 * 3 + 200 * 15) / 1e6 = 0.006 by model-a's prices.
    assert!(
        s1.ends_with(",bwrap,success,false,2,1000,0.006,0.01"),
        "{s1}"
    );
    let run = &json(&files, "summary.json")["agents"]["alpha/model-a"]["run"];
    assert_eq!(run["ended"]["success"], 1);
    assert_eq!(run["ended"]["error_during_execution"], 1);
    assert_eq!(run["is_error_sessions"], 2);
    assert_eq!(run["is_error"], 1);
    assert_eq!(run["permission_denials"]["sessions"], 1);
    assert_eq!(run["permission_denials"]["total"], 2);
    assert_eq!(run["duration_ms"]["mean"], 2000.0);
    let html = String::from_utf8(files["report.html"].clone()).expect("utf8");
    assert!(html.contains("<h2>How the runs ended</h2>"));
    assert!(
        html.contains("error_during_execution 1; success 1"),
        "the ended counts"
    );
}

/// The hrefs of the matrix's cells.
fn cell_links(html: &str) -> Vec<String> {
    let matrix = &html[html.find("<h2>Tasks × agents").expect("a matrix")..];
    let matrix = &matrix[..matrix.find("</table>").expect("its table")];
    matrix
        .split("<a class=\"v ")
        .skip(1)
        .map(|s| {
            let s = &s[s.find("href=\"").expect("a link") + 6..];
            s[..s.find('"').expect("closed")].to_owned()
        })
        .collect()
}

/// A session's id linked, from report.html, to its section on the page of
/// task (`instance_id`, track).
fn section_link((id, track): (&str, &str), session: &str) -> String {
    format!(
        "<a href=\"{}#{}\">{session}</a>",
        pages::task(id, track),
        pages::anchor(session)
    )
}

/// Every HTML file of a release, report.html first: where a session's
/// section is, whichever page holds it.
fn all_html(files: &BTreeMap<String, Vec<u8>>) -> String {
    let mut names: Vec<&String> = files.keys().filter(|n| n.ends_with(".html")).collect();
    names.sort_by_key(|n| *n != "report.html");
    names
        .into_iter()
        .map(|n| String::from_utf8_lossy(&files[n]).into_owned())
        .collect()
}

#[test]
fn every_matrix_cell_links_to_its_sessions_section_on_its_task_page() {
    let files = publish(&sample());
    let html = String::from_utf8(files["report.html"].clone()).expect("utf8");
    assert!(
        !html.contains("<section"),
        "no session's section is on report.html"
    );
    let hrefs = cell_links(&html);
    // s1..s4 (alpha) and s5 (beta) are scored; s6 is on an uncertified task.
    assert_eq!(hrefs.len(), 5, "{hrefs:?}");
    let t1 = pages::task("t1", "basic");
    assert!(
        hrefs.contains(&format!("{t1}#{}", pages::anchor("s3"))),
        "{hrefs:?}"
    );
    assert!(hrefs.contains(&format!(
        "{}#{}",
        pages::task("t2", "spec"),
        pages::anchor("s4")
    )));
    // Each reaches a file and an id on it, as does every other link.
    assert_eq!(links::dangling(&files), Vec::<String>::new());
    // Every graded session has its section, on its task's page, named by
    // its id; the one on an uncertified task too (saying it was not scored).
    let sections = all_html(&files);
    assert_eq!(sections.matches("<section class=\"session\"").count(), 6);
    let page = String::from_utf8(files[&t1].clone()).expect("utf8");
    let s3 = &page[page
        .find(&format!("id=\"{}\"", pages::anchor("s3")))
        .expect("s3")..];
    let s3 = &s3[..s3.find("</section>").expect("closed")];
    assert!(s3.contains("<h3>s3</h3>"), "{s3}");
    // Its arms disagree: both are told, the scored one first.
    let exclude = s3.find("exclude (scored)").expect("the scored arm");
    assert!(
        exclude < s3.find("<td>keep").expect("the other arm"),
        "{s3}"
    );
    assert!(s3.contains("<code>t::b</code>"), "its failing tests: {s3}");
    let t3 = String::from_utf8(files[&pages::task("t3", "basic")].clone()).expect("utf8");
    let s6 = &t3[t3
        .find(&format!("id=\"{}\"", pages::anchor("s6")))
        .expect("s6")..];
    assert!(s6.contains("<strong>Not scored</strong>: task uncertified"));
}

/// A grade on a task the release does not hold still has a page, and
/// every session a list of report.html names links to its section.
#[test]
fn a_grade_without_its_task_and_every_listed_session_lead_somewhere() {
    let mut input = sample();
    input.grades.push(on(
        grade("s7", "beta", "model-b", "exclude", "resolved", "none"),
        "gone",
        "basic",
    ));
    input
        .not_graded
        .push(("s5".to_owned(), "a reason".to_owned()));
    let files = publish(&input);
    assert_eq!(links::dangling(&files), Vec::<String>::new());
    let page = String::from_utf8(files[&pages::task("gone", "basic")].clone()).expect("a page");
    assert!(page.contains("not a task of this release"), "{page}");
    assert!(page.contains(&format!("id=\"{}\"", pages::anchor("s7"))));
    let html = String::from_utf8(files["report.html"].clone()).expect("utf8");
    let suspects = &html[html.find("<h2>Verifier suspects").expect("suspects")..];
    let suspects = &suspects[..suspects.find("</table>").expect("a table")];
    assert!(
        suspects.contains(&section_link(("t1", "basic"), "s3")),
        "{suspects}"
    );
}

/// The release at a bench's shape, small (`tests_scale`'s input at 8
/// tasks: 240 sessions, each with a transcript): no link leads nowhere,
/// and no page holds another task's sessions.
#[test]
fn no_link_of_a_release_at_the_benchs_shape_leads_nowhere() {
    let files = publish(&super::tests_scale::input(8));
    assert_eq!(links::dangling(&files), Vec::<String>::new());
    let page = String::from_utf8(files[&pages::task("repo-3", "basic")].clone()).expect("utf8");
    assert_eq!(page.matches("<section class=\"session\"").count(), 30);
}

#[test]
fn a_patch_or_log_that_closes_the_pre_cannot_open_a_script() {
    const ATTACK: &str = "</pre><script>alert(1)</script><pre>";
    let mut input = sample();
    let patch = format!("diff --git a/x b/x\n+{ATTACK}\n");
    input.patches.insert("patch".to_owned(), patch.into_bytes());
    let s3 = input
        .grades
        .iter_mut()
        .find(|g| g.0.session == "s3" && g.0.arm == crate::pipeline::Arm::Exclude)
        .expect("s3");
    s3.0.log_tail = Some(crate::model::records::LogTail {
        of: "log".to_owned(),
        lines_omitted: 3,
        text: format!("FAILED {ATTACK}"),
    });
    s3.0.detail = ATTACK.to_owned();
    let html = all_html(&publish(&input));
    let html = html.replace(&pages::script_tag(), "");
    assert!(!html.contains("<script"), "a script got through");
    assert!(!html.contains(ATTACK));
    let escaped = "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;pre&gt;";
    // In the patch of s1..s3, the log of s3 and its reason.
    assert_eq!(html.matches(escaped).count(), 5, "{html}");
    assert!(html.contains("after 3 lines left out"));
}

#[test]
fn a_long_patch_is_cut_and_says_how_much_is_left_out() {
    let mut input = sample();
    let long: String = (0..1000).map(|i| format!("+line {i}\n")).collect();
    input.patches.insert(
        "patch".to_owned(),
        format!("diff --git a/x b/x\n{long}").into_bytes(),
    );
    let html = all_html(&publish(&input));
    assert!(
        html.contains("+line 298</pre>"),
        "the first lines are shown"
    );
    assert!(!html.contains("+line 299"));
    assert!(html.contains("… 701 more lines"));
}

#[test]
fn the_header_counts_prs_and_tasks_apart_and_names_its_provenance() {
    let mut input = sample();
    input.about = About {
        funnel: Funnel {
            candidates: 5,
            eligible: 4,
            screened: 4,
            certified: 2,
            tasks_released: 3,
            uncertified: 1,
            ..Default::default()
        },
        provenance: Some(crate::run::provenance::Provenance {
            pipeline: "p1p1".to_owned(),
            assay_version: "9.9.9".to_owned(),
            assay_commit: "c0ffee".to_owned(),
        }),
        release_node: "r00t".to_owned(),
        harbor_changed: None,
    };
    input.tasks[1].0.created_at = "2026-02-03T04:05:06Z".to_owned();
    input.tasks[0].0.created_at = "2026-01-01T00:00:00Z".to_owned();
    let html = String::from_utf8(publish(&input)["report.html"].clone()).expect("utf8");
    for (what, text) in [
        ("node", "<code>r00t</code>"),
        ("version and commit", "9.9.9, commit <code>c0ffee</code>"),
        ("pipeline", "<code>p1p1</code>"),
        ("the newest merge", "2026-02-03T04:05:06Z, the newest merge"),
        ("where the digest is", "in <code>manifest.json</code>"),
        (
            "PRs",
            "<th>PRs certified</th><td class=\"n\" title=\"funnel.certified\">2</td>",
        ),
        (
            "tasks",
            "<th>tasks released</th><td class=\"n\" title=\"funnel.tasks_released\">3</td><td>2 certified, 1 uncertified",
        ),
    ] {
        assert!(html.contains(text), "{what}: {text}");
    }
}

/// The assembly records each number's source by a path it writes by hand
/// beside the model's field: a path that names no number of summary.json
/// would leave that number without its grades in the manifest.
pub(super) fn assert_sources_name_numbers(input: &PublishInput) {
    let index = index::Index::new(input);
    let (summary, sources) = summary::summary(&index);
    let tree = serde_json::to_value(&summary).expect("a tree");
    let mut paths = BTreeSet::new();
    walk(&tree, "summary".to_owned(), &mut |path, _| {
        paths.insert(path);
    });
    for path in sources.keys() {
        assert!(paths.contains(path), "source of {path}, which is no number");
    }
    assert!(sources.len() > 10, "{} sources", sources.len());
}

#[test]
fn every_recorded_source_names_a_published_number() {
    assert_sources_name_numbers(&sample());
}

/// summary.json and manifest.json read back into the model and written
/// again give the same bytes: `verify`, `explain` and the provenance seal
/// read them as types and lose nothing.
#[test]
fn summary_and_manifest_read_back_into_the_model_unchanged() {
    let files = publish(&sample());
    let summary: Summary = serde_json::from_slice(&files["summary.json"]).expect("a summary");
    assert_eq!(pretty(&summary), files["summary.json"]);
    let manifest: Manifest = serde_json::from_slice(&files["manifest.json"]).expect("a manifest");
    assert_eq!(manifest.to_bytes(), files["manifest.json"]);
}

/// The model's fields are declared in the byte order of their JSON names:
/// a `Value` (which sorts its keys) of the same data prints the same bytes,
/// as summary.json and manifest.json did when they were built as `Value`s.
pub(super) fn assert_keys_sorted(input: &PublishInput) {
    let files = publish(input);
    for name in ["summary.json", "manifest.json"] {
        let tree: Value = serde_json::from_slice(&files[name]).expect("json");
        assert_eq!(
            String::from_utf8_lossy(&files[name]),
            format!("{tree:#}\n"),
            "{name}"
        );
    }
}

#[test]
fn the_model_writes_its_keys_sorted() {
    let mut input = sample();
    // Every optional part present: tamper suspects, unchecked grades, images.
    let g = &mut input.grades[0].0;
    g.tamper = vec!["conftest.py".to_owned()];
    g.unchecked = Some("no canary".to_owned());
    g.executor = Some(crate::model::config::ExecutorKind::Docker);
    g.image = Some("sha256:abc".to_owned());
    input.about.provenance = Some(crate::run::provenance::Provenance::of("x"));
    let files = publish(&input);
    let summary: Summary = serde_json::from_slice(&files["summary.json"]).expect("a summary");
    assert!(summary.environments.is_some() && summary.not_forgery_checked.is_some());
    assert!(!summary.tamper_suspects.is_empty() && !summary.verifier_suspects.is_empty());
    assert!(summary.agents.values().any(|a| a.cost_usd.is_some()));
    assert_keys_sorted(&input);
}

/// An attempt assay skipped (its task uncertified, or awaiting a
/// statement) never ran: not started, not completed (issue 35).
#[test]
fn a_skipped_attempt_is_not_started() {
    let mut input = sample();
    input.grades.push(grade(
        "agent/a/t1/0",
        "a",
        "model-a",
        "exclude",
        "resolved",
        "none",
    ));
    input
        .sessions
        .push(session("agent/a/t1/0", "a", "model-a", None, &[]));
    input.not_graded.push((
        "agent/a/t3/0".to_owned(),
        "task awaits a statement".to_owned(),
    ));
    let s = json(&publish(&input), "summary.json");
    let t = &s["trials"]["attempts"];
    assert_eq!(
        (
            &t["planned"],
            &t["started"],
            &t["not_started"],
            &t["completed"]
        ),
        (
            &serde_json::json!(2),
            &serde_json::json!(1),
            &serde_json::json!(1),
            &serde_json::json!(1)
        ),
        "{t:#}"
    );
    // The session files' origin is unchanged: a session not graded ran.
    assert_eq!(s["trials"]["sessions"]["not_started"], 0);
}

/// `[[metric]]` records of metric `lint`: the gold trees of t1 and t2,
/// and the alpha sessions (s2's node failed).
fn with_quality() -> PublishInput {
    let record = |task: &str, session: Option<&str>, by_path: &[(&str, u64)]| {
        let by_path: BTreeMap<String, u64> =
            by_path.iter().map(|(p, n)| ((*p).to_owned(), *n)).collect();
        let r = QualityRecord {
            metric: "lint".to_owned(),
            task: task.to_owned(),
            session: session.map(str::to_owned),
            findings: by_path.values().sum(),
            by_path,
            ..QualityRecord::default()
        };
        (r, format!("quality-{task}-{}", session.unwrap_or("gold")))
    };
    let mut failed = record("t1", Some("s2"), &[]);
    failed.0.failed = Some("the output is not the JSON the metric counts".to_owned());
    PublishInput {
        quality: vec![
            record("t1", None, &[("a.py", 1)]),
            record("t2", None, &[]),
            // 2 more in a.py than gold, 1 in a file gold has none in.
            record("t1", Some("s1"), &[("a.py", 3), ("b.py", 1)]),
            failed,
            record("t1", Some("s3"), &[("a.py", 1)]),
            record("t2", Some("s4"), &[]),
        ],
        ..sample()
    }
}

#[test]
fn quality_figures_are_introduced_against_gold_and_sourced() {
    let input = with_quality();
    let files = publish(&input);
    let s = json(&files, "summary.json");
    let q = &s["agents"]["alpha/model-a"]["quality"]["lint"];
    // Figures: s1 3, s3 0, s4 0; s2 failed. Resolved: s1 and s4.
    assert_eq!(q["measured"], 3, "{q}");
    assert_eq!(q["failed"], 1, "{q}");
    assert_eq!(q["median_introduced"], 0.0, "{q}");
    assert_eq!(q["resolved"], 2, "{q}");
    assert_eq!(q["resolved_introducing"], 1, "{q}");
    assert_eq!(q["resolved_introducing_share"], 0.5, "{q}");
    let csv = String::from_utf8(files["results.csv"].clone()).expect("utf-8");
    let header: Vec<&str> = csv.lines().next().expect("a header").split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "quality.lint")
        .expect("a quality column");
    let cells: BTreeMap<&str, &str> = csv
        .lines()
        .skip(1)
        .filter(|l| l.contains(",exclude,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0], f[col])
        })
        .collect();
    assert_eq!(cells["s1"], "3");
    assert_eq!(cells["s2"], "");
    assert_eq!(cells["s3"], "0");
    let html = String::from_utf8(files["report.html"].clone()).expect("utf-8");
    assert!(html.contains("the output is not the JSON the metric counts"));
    assert_sources_name_numbers(&input);
    assert_keys_sorted(&input);
    let mut shuffled = with_quality();
    shuffled.quality.reverse();
    assert_eq!(files, publish(&shuffled));
    // Without metrics, no trace of them.
    let plain = publish(&sample());
    for name in ["summary.json", "results.csv", "report.html"] {
        let text = String::from_utf8(plain[name].clone()).expect("utf-8");
        assert!(!text.contains("quality"), "{name} names quality");
    }
}

#[test]
fn deep_swe_tasks_count_in_the_harbor_funnel_once_each_under_their_first_reason() {
    use super::model::{HarborFunnel, SweFunnel};
    let mut swe = SweFunnel::default();
    let (certified, _) = task("ds/calc-1", "basic", true);
    let (uncertified, _) = task("ds/calc-2", "basic", false);
    let (mut declined, _) = task("ds/calc-3", "basic", false);
    declined.status = TaskStatus::Declined;
    declined.uncertified_because = vec![
        "harbor_uncertified: oracle_fails: reading 1 scored 0".into(),
        "no_test_runner: none".into(),
    ];
    let released: Vec<bool> = [&certified, &uncertified, &declined]
        .into_iter()
        .map(|t| swe.count(t))
        .collect();
    assert_eq!(released, [true, true, false]);
    assert_eq!(
        (swe.tasks, swe.screened, swe.certified),
        (3, 2, 1),
        "{swe:?}"
    );
    assert_eq!(swe.certified_tasks, ["ds/calc-1"]);
    assert_eq!(
        swe.declined,
        BTreeMap::from([("harbor_uncertified".to_owned(), 1)])
    );
    assert_eq!(
        swe.uncertified_because,
        BTreeMap::from([("gold_resolves".to_owned(), 1)])
    );
    let harbor = HarborFunnel {
        tasks: 3,
        certified: 2,
        assay_tasks: Some(swe),
        ..HarborFunnel::default()
    };
    assert_eq!(
        harbor.line(),
        "harbor: 3 tasks screened -> 2 certified\n  as assay tasks: 3 -> 2 screened -> 1 certified by assay's controls (ds/calc-1); declined: harbor_uncertified 1; uncertified: gold_resolves 1"
    );
}

/// A regression that fails 2,000 tests: the session's section leads with
/// the groups of what they said and the first failure in full, the list of
/// failing tests is folded, and the task page shows its sessions before its
/// (folded) FAIL_TO_PASS / PASS_TO_PASS lists.
#[test]
fn two_thousand_failures_lead_with_their_groups_and_fold_the_lists() {
    let failing: Vec<String> = (0..2000)
        .map(|i| format!("test/a.spec.js > a > t{i:04}"))
        .collect();
    let texts: Vec<String> = (0..2000)
        .map(|i| match i {
            0..1870 => format!(
                "TypeError: match is not a function\n    at t{i} (test/a.spec.js:{}:9)",
                i + 3
            ),
            _ => format!("AssertionError: expected {i} to equal {}", i + 1),
        })
        .collect();
    let mut g = grade("s1", "alpha", "model-a", "exclude", "unresolved", "agent");
    g.0.failing = failing.clone();
    g.0.said = crate::model::why::Said::of(
        failing
            .iter()
            .zip(&texts)
            .map(|(t, m)| (t.as_str(), m.as_str())),
    );
    let mut t = task("t1", "basic", true);
    t.0.pass_to_pass = failing.clone();
    let input = PublishInput {
        tasks: vec![t],
        grades: vec![g],
        sessions: vec![session("s1", "alpha", "model-a", None, &[])],
        ..PublishInput::default()
    };
    let files = publish(&input);
    let page = String::from_utf8(files[&pages::task("t1", "basic")].clone()).expect("utf8");
    let why = page
        .find("<strong>Why</strong> (2,000 failing tests)")
        .expect(&page[..2000]);
    let groups = [
        "<li><strong>1,870 tests</strong>: <code>TypeError: match is not a function</code></li>",
        "<li><strong>130 tests</strong>: <code>AssertionError: expected N to equal N</code></li>",
    ];
    let at: Vec<usize> = groups.iter().map(|g| page.find(g).expect(g)).collect();
    assert!(why < at[0] && at[0] < at[1]);
    let first = page
        .find("<p><strong>First failure</strong>: <code>test/a.spec.js &gt; a &gt; t0000</code></p>\n<pre class=\"log said\">TypeError: match is not a function\n    at t0 (test/a.spec.js:3:9)</pre>")
        .expect("the first failure in full");
    let list = page
        .find("<details class=\"tests\"><summary><strong>Failing tests</strong> (2,000)</summary>")
        .expect("the failing tests folded");
    assert!(at[1] < first && first < list);
    // Every failing test is still listed, in the fold.
    assert!(page.contains("<li><code>test/a.spec.js &gt; a &gt; t1999</code></li></ul></details>"));
    // The task's own lists come after its sessions, folded.
    let sessions = page.find("<h2 id=\"sessions\">").expect("sessions");
    let p2p = page.find("<h2>PASS_TO_PASS (2000)</h2>\n<details class=\"tests\"><summary>2000 test ids</summary>").expect("p2p folded");
    assert!(sessions < p2p && list < p2p);
}
