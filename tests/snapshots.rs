//! Snapshots of what users read (insta): the bundled example's
//! `release/summary.json` and `release/results.csv`, the funnel the build
//! prints, what `explain` says of a report label, and diagnostics with
//! their exit code; and the names the report gives its figures, each one
//! `explain` answers to. A change to any of them
//! shows up as a diff to review (`docs/testing.md`), not as a silent drift.
//!
//! Redacted, because they legitimately vary: the grade digests (a grade
//! record holds the test log, and unittest prints its own wall time: `Ran 19
//! tests in 0.009s`) and the project's temp directory. Nothing else: every
//! other byte of the release is the same on every machine.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeSet;
use std::sync::OnceLock;

use util::fixture::Fixture;
use util::{Project, Run, csv_records};

/// The bundled example, built once for every snapshot of it.
struct Example {
    project: Project,
    stderr: String,
    /// The stderr of a second build (everything cached).
    rebuild_stderr: String,
    /// Every grade digest of results.csv (each varies with the test log).
    grade_digests: BTreeSet<String>,
    /// Every task digest of the release: a task's record holds its
    /// timeout, drawn from its screening readings' times, which a loaded
    /// machine can move across a step (docs/verdicts.md, timeouts).
    task_digests: BTreeSet<String>,
}

fn example() -> &'static Example {
    static EXAMPLE: OnceLock<Example> = OnceLock::new();
    EXAMPLE.get_or_init(|| {
        let project = util::example::example_project();
        let run = project.run(&["build"]).code(0);
        let rebuild = project.run(&["build"]).code(0);
        let results = std::fs::read_to_string(project.path().join("release/results.csv")).unwrap();
        let rows = csv_records(&results);
        let grade_digests = rows.iter().map(|r| r["grade_digest"].clone()).collect();
        let mut task_digests: BTreeSet<String> =
            rows.iter().map(|r| r["task_digest"].clone()).collect();
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(project.path().join("release/summary.json")).unwrap(),
        )
        .unwrap();
        for task in summary["tasks"]["uncertified_tasks"].as_array().unwrap() {
            task_digests.insert(task["digest"].as_str().unwrap().to_owned());
        }
        Example {
            project,
            stderr: run.stderr,
            rebuild_stderr: rebuild.stderr,
            grade_digests,
            task_digests,
        }
    })
}

impl Example {
    /// A release file with its grade and task digests redacted.
    fn release_file(&self, name: &str) -> String {
        let path = self.project.path().join("release").join(name);
        let mut text = std::fs::read_to_string(&path).unwrap();
        for (digests, label) in [
            (&self.grade_digests, "[grade digest]"),
            (&self.task_digests, "[task digest]"),
        ] {
            for digest in digests {
                assert_eq!(digest.len(), 64, "not a digest: {digest:?}");
                text = text.replace(digest.as_str(), label);
            }
        }
        text
    }
}

/// Exit code and stderr together, the project's directory redacted.
fn diagnostic(project: &Project, run: &Run) -> String {
    let dir = project.path().display().to_string();
    format!(
        "exit code: {}\n--- stderr\n{}",
        run.code,
        run.stderr.replace(&dir, "[project]")
    )
}

#[test]
fn example_summary_json() {
    insta::assert_snapshot!(example().release_file("summary.json"));
}

#[test]
fn example_results_csv() {
    insta::assert_snapshot!(example().release_file("results.csv"));
}

#[test]
fn example_funnel_as_printed() {
    let stderr = &example().stderr;
    let at = stderr
        .find("funnel:")
        .unwrap_or_else(|| panic!("no funnel line:\n{stderr}"));
    insta::assert_snapshot!(&stderr[at..]);
}

#[test]
fn pipeline_unknown_key_points_at_it_with_a_hint() {
    let project = Project::new()
        .file("a.txt", "a")
        .pipeline("[[step]]\nname = \"a\"\nrun = \"true\"\ncomand = \"x\"\n");
    let run = project.run(&["build"]);
    insta::assert_snapshot!(diagnostic(&project, &run));
}

/// A build of the fixture with one more session file, `sessions/NAME`
/// holding `text`.
fn build_with_session(name: &str, text: &str) -> (Fixture, Run) {
    let f = Fixture::new();
    f.default_pipeline();
    f.project.write(&format!("sessions/{name}"), text);
    let run = f.project.run(&["build"]);
    (f, run)
}

#[test]
fn session_file_missing_a_comma_points_at_it_with_a_hint() {
    // The comma after the agent is missing.
    let (f, run) = build_with_session(
        "alpha/no-comma.json",
        "{\n  \"task\": \"p-1\",\n  \"agent\": \"alpha\"\n  \"model\": \"model-x\",\n  \"patch\": \"\"\n}\n",
    );
    insta::assert_snapshot!(diagnostic(&f.project, &run));
}

/// Every figure of report.html carries its name (the cell's `title`), and
/// `assay explain` answers to that name with the figure's value.
#[test]
fn every_figure_of_the_report_resolves_through_explain_by_the_name_it_shows() {
    // The leaderboard, verdict, track, funnel, trial and usage tables and
    // the chart of four agents.
    let project = &example().project;
    util::figures::explained(
        project,
        &[],
        &project.path().join("release"),
        100,
        &[
            "summary.agents[alpha/model-a].resolved_rate",
            "funnel.certified",
        ],
    );
}

/// The report's column labels are names `explain` takes: alone (every
/// agent's number) or in place of a path's tail.
#[test]
fn explain_takes_the_reports_labels() {
    let p = &example().project;
    let alone = p.run(&["explain", "pass@1"]).code(0);
    insta::assert_snapshot!(alone.stdout);
    p.run(&["explain", "summary.agents[alpha/model-a].pass@1"])
        .code(0)
        .stdout_has("number   summary.agents[alpha/model-a].leaderboard.score = 0.833333");
}

/// `verify NUMBER` checks a number of the cache's last release with no
/// bundle at hand; a number that is not published is a clear not-found.
#[test]
fn verify_checks_one_number_against_the_cache_without_a_bundle() {
    let p = &example().project;
    p.run(&["verify", "summary.agents[alpha/model-a].resolved_rate"])
        .code(0)
        .stdout_has("ok (the last release of the cache ")
        .stdout_has(": number summary.agents[alpha/model-a].resolved_rate: checked ");
    p.run(&["verify", "summary.agents[alpha/model-a].nothing"])
        .code(6)
        .stderr_has("no published number");
    p.run(&["verify", "funnel.certified"])
        .code(0)
        .stdout_has(": count funnel.certified: checked ");
    p.run(&["verify", "funnel.nothing"])
        .code(6)
        .stderr_has("no count `funnel.nothing` in release/funnel.json");
}

/// A session naming an unknown task is pointed only to tasks the release
/// holds certified, never to a declined or uncertified candidate.
#[test]
fn an_unknown_task_is_suggested_only_released_tasks() {
    let e = example();
    let line = e
        .rebuild_stderr
        .lines()
        .find(|l| l.contains("names task `calc-99`"))
        .unwrap_or_else(|| panic!("{}", e.rebuild_stderr));
    let released = std::fs::read_to_string(e.project.path().join("release/tasks.jsonl")).unwrap();
    let released: BTreeSet<String> = released
        .lines()
        .map(|l| {
            let t: serde_json::Value = serde_json::from_str(l).unwrap();
            t["task"].as_str().unwrap().to_owned()
        })
        .collect();
    let hint = line
        .split("did you mean ")
        .nth(1)
        .unwrap_or_else(|| panic!("no suggestion: {line}"));
    for named in hint.split('`').skip(1).step_by(2) {
        assert!(released.contains(named), "{named} is not released: {line}");
    }
}

/// `build -v` prints a line per node it runs and per node that fails,
/// also when stderr is not a terminal (a pipe, as here; a CI log).
#[test]
fn build_verbose_prints_each_node_it_runs_when_stderr_is_not_a_terminal() {
    let project = Project::new().file("a.txt", "a").pipeline(
        "[[step]]\nname = \"a\"\nrun = \"echo a\"\n\n[[step]]\nname = \"b\"\nrun = \"exit 3\"\n",
    );
    let run = project.run(&["build", "-v"]);
    for line in [
        "  run    step:a  key ",
        "  done   step:a  ",
        "  FAILED step:b (input): ",
    ] {
        assert!(run.stderr.contains(line), "{line}\n{}", run.stderr);
    }
}

/// `show` takes what its own not-found hint offers: a node name printed
/// by `assay plan --all` or `assay build --json`.
#[test]
fn show_takes_the_node_names_its_hint_suggests() {
    let p = &example().project;
    let refused = p.run(&["show", "no-such-node"]).code(6);
    // As printed, wrapped to the width of the console.
    let said = refused
        .stderr
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let hint = "use a node name printed by `assay plan --all` or `assay build --json`, or a digest";
    assert!(said.contains(hint), "{}", refused.stderr);
    let plan = p.run(&["plan", "--all"]).code(0);
    let names: Vec<&str> = plan
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("cached   "))
        .collect();
    let task = names
        .iter()
        .find(|n| n.starts_with("task:"))
        .unwrap_or_else(|| panic!("{}", plan.stdout));
    let shown = p.run(&["show", task]).code(0);
    let record: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert!(record["instance_id"].is_string(), "{record:#}");
    let events = p.run(&["build", "--json"]).code(0);
    let release = events
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|e| {
            e["name"]
                .as_str()
                .filter(|n| *n == "release")
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("{}", events.stdout));
    p.run(&["show", &release]).code(0).stdout_has("\"files\"");
}

/// An agent's patch that writes terminal escapes (the window's title, a
/// line erased) is shown on a terminal without them, and as stored into a
/// pipe. The terminal is `script`'s pseudo-terminal, whose output is this
/// test's: nothing reaches the real one.
#[test]
fn show_on_a_terminal_prints_no_escape_an_agent_wrote() {
    let f = Fixture::new();
    f.default_pipeline();
    let hostile = "note \u{1b}]0;pwned\u{7}\u{1b}[2K\u{9b}1A done\n";
    let patch = f.diff2(&[("pkg/notes.txt", Some(hostile))]);
    f.session("alpha/notes.json", "p-2", &patch);
    f.build_ok();
    let blobs = f.project.cache().join("blobs");
    let mut found = None;
    for shard in std::fs::read_dir(&blobs).unwrap().flatten() {
        for blob in std::fs::read_dir(shard.path()).unwrap().flatten() {
            let bytes = std::fs::read(blob.path()).unwrap();
            if bytes.windows(4).any(|w| w == "]0;p".as_bytes())
                && std::str::from_utf8(&bytes).is_ok()
                && serde_json::from_slice::<serde_json::Value>(&bytes).is_err()
            {
                found = Some(format!(
                    "{}{}",
                    shard.file_name().to_string_lossy(),
                    blob.file_name().to_string_lossy()
                ));
            }
        }
    }
    let hex = found.expect("the patch is a text blob of the cache");
    // Into a pipe: as stored.
    let piped = f.project.run(&["show", &hex]).code(0);
    assert!(
        piped.stdout.contains(hostile.trim_end()),
        "{:?}",
        piped.stdout
    );
    // On a terminal: the text, without the escapes.
    let command = format!("{} show {hex}", util::BIN);
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(f.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("note  done"), "{shown:?}");
    assert!(!shown.contains(['\u{1b}', '\u{7}', '\u{9b}']), "{shown:?}");
}

/// A session file that fails to read, its bytes holding terminal escapes:
/// the diagnostic that shows the file and the build's FAILED line name it
/// and say why, with no escape left of what they quote.
#[test]
fn a_failed_nodes_line_holds_no_escape_of_what_it_quotes() {
    let (_f, run) = build_with_session(
        "alpha/evil.json",
        "{\"task\": \"p-1\", \"agent\": \"alpha\u{1b}]0;pwned\u{7}\u{1b}[2K\", \"patch\": 3}\n",
    );
    let named = |l: &str| l.contains("FAILED") && l.contains("evil.json");
    assert!(run.stderr.lines().any(named), "{}", run.stderr);
    assert!(
        !run.stderr.contains(['\u{1b}', '\u{7}']),
        "{:?}",
        run.stderr
    );
}
