//! The report as a reader meets it: the grading fixture (`util::fixture`)
//! with a session whose transcript is hostile (markup meant to run, a
//! secret value), built by the real binary; its pages checked as files,
//! by `assay verify`, and in headless Chromium (`tests/browser/drive.py`
//! drives it over the DevTools pipe: a matrix cell to the session's section
//! on its task's page, its transcript, the task page, a sort and a filter;
//! any console message, exception or blocked resource fails the test).
//! The bundled example's report is walked the same way, and every link of
//! every page of both releases is followed to its file and id.

#![allow(clippy::unwrap_used)]

mod util;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use util::fixture::*;

const SECRET: &str = "transcript-secret-7f3a9c";
const HOSTILE: &str = "</script><img src=x onerror=alert(1)><script>alert(2)</script>";

/// A Claude Code stream-json transcript that says hostile things.
fn transcript() -> String {
    [
        json!({"type": "system", "subtype": "init", "model": "model-x"}),
        json!({"type": "assistant", "message": {"model": "model-x", "content": [
            {"type": "text", "text": format!("Reading the code. {HOSTILE} key={SECRET}")},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": format!("cat pkg/ops.py {HOSTILE}")}}
        ], "usage": {"input_tokens": 120, "output_tokens": 30}}}),
        json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": format!("def sub(a, b):\n    return a + b\n{SECRET}"), "is_error": false}
        ]}}),
        json!({"type": "assistant", "message": {"model": "model-x", "content": [
            {"type": "tool_use", "id": "toolu_2", "name": "Write", "input": {"file_path": "/etc/passwd"}}
        ], "usage": {"input_tokens": 200, "output_tokens": 12}}}),
        json!({"type": "result", "subtype": "success", "is_error": false, "num_turns": 2,
               "result": "fixed sub", "duration_ms": 1000,
               "usage": {"input_tokens": 320, "output_tokens": 42},
               "permission_denials": [{"tool_name": "Write", "tool_use_id": "toolu_2", "tool_input": {"file_path": "/etc/passwd"}}]}),
    ]
    .map(|v| v.to_string())
    .join("\n")
}

/// The fixture with two sessions on p-1: `a/fix.json` (the fix, with the
/// transcript) and `b/none.json` (an empty patch, none), built with the
/// secret in the environment `[redact] env` names.
fn built() -> Fixture {
    let f = Fixture::new();
    f.pipeline("", 1 << 20, "[redact]\nenv = [\"REPORT_SECRET\"]\n");
    let v = json!({
        "task": "p-1",
        "agent": "a",
        "model": "model-x",
        "patch": f.fix1(),
        "transcript": "fix.stream.jsonl",
    });
    f.project.write(
        "sessions/a/fix.json",
        serde_json::to_string_pretty(&v).unwrap(),
    );
    f.project.write("sessions/a/fix.stream.jsonl", transcript());
    f.session("b/none.json", "p-1", "");
    let b = f.build_env(&[("REPORT_SECRET", SECRET)]);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    f
}

fn pages(f: &Fixture) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(f.path().join("release/pages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    pages
}

fn transcript_page(f: &Fixture) -> (PathBuf, String) {
    let path = pages(f)
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with("-transcript.html"))
        .expect("a transcript page");
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
}

#[test]
fn a_transcript_page_is_redacted_escaped_listed_and_verified() {
    let f = built();
    let (path, page) = transcript_page(&f);
    assert!(!page.contains(SECRET), "the secret reached the page");
    assert!(page.contains("[REDACTED]"), "{page}");
    assert!(
        !page.contains("<img") && !page.contains("alert(2)</script>"),
        "{page}"
    );
    assert!(
        page.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{page}"
    );
    assert!(
        page.contains("<strong>permission denied</strong>: Write"),
        "{page}"
    );
    assert!(
        page.contains("2 model steps, 2 tool calls, 0 failed, 1 denied"),
        "{page}"
    );
    // Only the session with a transcript has a page.
    let transcripts = pages(&f)
        .iter()
        .filter(|p| p.to_string_lossy().ends_with("-transcript.html"))
        .count();
    assert_eq!(transcripts, 1);
    // Every page is in the manifest, and verify checks it.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(f.path().join("release/manifest.json")).unwrap())
            .unwrap();
    for p in pages(&f) {
        let name = format!("pages/{}", p.file_name().unwrap().to_string_lossy());
        assert!(manifest["files"][&name].is_string(), "{name} not listed");
    }
    f.project.run(&["verify"]).code(0);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::write(&path, page.replace("permission denied", "all fine")).unwrap();
    f.project
        .run(&["verify"])
        .code(4)
        .stderr_has(&format!("pages/{name}"));
}

/// Runs the driver: its JSON answer.
fn drive(args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/drive.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args(args)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

fn step<'a>(walk: &'a Value, what: &str) -> &'a Value {
    walk["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s[0] == what)
        .map(|s| &s[1])
        .unwrap_or_else(|| panic!("no step {what}: {walk:#}"))
}

/// Walks the report of `release` in Chromium (`drive.py`), its screenshots
/// in `shots`, and checks what every walk must meet: no error, a matrix
/// cell to its section on its task's page, the section's transcript link,
/// the transcript, its task's page, whose table sorts both ways and
/// filters to the rows of one verdict, and an agent's page; and each
/// screenshot. The walk, for what a release's own test checks beside.
fn walked(release: &Path, shots: &Path) -> Value {
    std::fs::create_dir_all(shots).unwrap();
    let walk = drive(&[
        release.to_str().unwrap(),
        "--screenshots",
        shots.to_str().unwrap(),
    ]);
    assert_eq!(walk["errors"], json!([]), "{walk:#}");
    // The script ran under the policy: a filter box above each table.
    assert!(
        step(&walk, "report filter boxes").as_u64().unwrap() >= 1,
        "{walk:#}"
    );
    let page = step(&walk, "cell page").as_str().unwrap();
    assert!(page.starts_with("pages/task-"), "{walk:#}");
    assert_eq!(step(&walk, "cell target"), "session", "{walk:#}");
    assert_eq!(step(&walk, "transcript link"), true, "{walk:#}");
    let h1 = step(&walk, "transcript h1").as_str().unwrap();
    assert!(h1.starts_with("Transcript of "), "{walk:#}");
    assert!(
        step(&walk, "task h1")
            .as_str()
            .unwrap()
            .starts_with("Task "),
        "{walk:#}"
    );
    let rows = step(&walk, "rows").as_array().unwrap().len();
    assert!(step(&walk, "sorted ascending").is_array(), "{walk:#}");
    assert!(step(&walk, "sorted descending").is_array(), "{walk:#}");
    let filtered = step(&walk, "filtered");
    let word = filtered[0].as_str().unwrap();
    let kept = filtered[1].as_array().unwrap();
    assert!(!kept.is_empty() && kept.len() <= rows, "{walk:#}");
    assert!(kept.iter().all(|v| v == word), "{walk:#}");
    assert_eq!(step(&walk, "agent link"), true, "{walk:#}");
    for shot in [
        "top.png",
        "matrix.png",
        "session.png",
        "transcript.png",
        "task-page.png",
    ] {
        assert!(shots.join(shot).is_file(), "{shot}");
    }
    walk
}

#[test]
fn the_report_reads_in_headless_chromium_without_an_error() {
    let f = built();
    let release = f.path().join("release");
    assert_eq!(
        util::links::dangling(&util::links::read(&release)),
        Vec::<String>::new()
    );
    let walk = walked(&release, &f.path().join("shots"));
    assert!(
        step(&walk, "report filter boxes").as_u64().unwrap() >= 2,
        "{walk:#}"
    );
    assert_eq!(step(&walk, "transcript outputs"), 1, "{walk:#}");
    assert_eq!(step(&walk, "task h1"), "Task p-1", "{walk:#}");
    let rows = step(&walk, "rows").as_array().unwrap().len();
    assert_eq!(rows, 4, "two sessions on two arms: {walk:#}");
    let kept = step(&walk, "filtered")[1].as_array().unwrap().len();
    assert!(kept < rows, "{walk:#}");
    assert!(
        step(&walk, "agent h1")
            .as_str()
            .unwrap()
            .contains(" / model-x"),
        "{walk:#}"
    );

    // The driver sees what the policy blocks: the report with one remote
    // image in it is an error.
    let report = std::fs::read_to_string(release.join("report.html")).unwrap();
    let bad = f.path().join("bad.html");
    std::fs::write(
        &bad,
        report.replacen(
            "<h1>",
            "<img src=\"https://assay.invalid/pixel.png\"><h1>",
            1,
        ),
    )
    .unwrap();
    let walk = drive(&["--page", bad.to_str().unwrap()]);
    let errors = walk["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e.as_str().unwrap().contains("Content Security Policy")),
        "{walk:#}"
    );
}

/// The bundled example as the README builds it (the debug binary here):
/// every link of every page reaches its file and id, and a reader's walk
/// in Chromium (a matrix cell to its session's section on the task page,
/// the transcript, the task page's table sorted and filtered, an agent's
/// page) meets no console message, exception or blocked resource.
/// `ASSAY_SCREENSHOTS=DIR` keeps the walk's screenshots there (how
/// docs/screenshots were taken).
#[test]
fn the_examples_report_reads_in_headless_chromium_and_every_link_leads_somewhere() {
    let p = util::example::example_project();
    p.run(&["build"]).code(0);
    let release = p.path().join("release");
    let files = util::links::read(&release);
    assert_eq!(util::links::dangling(&files), Vec::<String>::new());
    // report.html holds no session's evidence: its sections are on the
    // task pages.
    let report = String::from_utf8_lossy(&files["report.html"]);
    assert!(!report.contains("<section class=\"session\""));
    let sections: usize = files
        .iter()
        .filter(|(n, _)| n.starts_with("pages/task-"))
        .map(|(_, b)| {
            String::from_utf8_lossy(b)
                .matches("<section class=\"session\"")
                .count()
        })
        .sum();
    assert_eq!(sections, 17, "every graded session of the example, once");
    let shots = std::env::var("ASSAY_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| p.path().join("shots"));
    let walk = walked(&release, &shots);
    assert!(
        step(&walk, "transcript outputs").as_u64().unwrap() >= 1,
        "{walk:#}"
    );
    assert!(
        step(&walk, "rows").as_array().unwrap().len() >= 2,
        "{walk:#}"
    );
}
