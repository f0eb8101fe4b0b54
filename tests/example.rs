//! The bundled example, built from a copy of the repository's own
//! `pipeline.toml` and `examples/`, checked against what the README and
//! `examples/calc/sessions/README.md` say it produces: the funnel, the table
//! of pull requests, the verdict of every session in both arms, the task
//! facts, and the audit commands. A change of behaviour that the documents do
//! not follow (or the reverse) fails here.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use util::Project;
use util::example::{ROOT, example_project};

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap()
}

/// The text between the first `start` after `heading` and the next `end`.
fn section<'a>(text: &'a str, heading: &str, start: &str, end: &str) -> &'a str {
    let at = text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let rest = &text[at..];
    let from = rest.find(start).unwrap() + start.len();
    let len = rest[from..].find(end).unwrap();
    &rest[from..from + len]
}

/// The body rows of the first Markdown table after `heading`, as cells.
fn table(text: &str, heading: &str) -> Vec<Vec<String>> {
    let at = text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    text[at..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

/// Every `backticked` word of a cell.
fn ticks(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

struct Example {
    project: Project,
    stderr: String,
    /// Grade nodes the first build executed.
    grades: u64,
    tasks: BTreeMap<(String, String), Value>,
    rows: BTreeMap<(String, String), BTreeMap<String, String>>,
    summary: Value,
}

fn build_example() -> Example {
    let project = example_project();
    // Canary names fixed per tree, so the report's log tails (which show the
    // canaries' lines) are the same in every run of this test.
    let mut cmd = project.command(&["build", "--json"]);
    cmd.env("ASSAY_CANARY_SEED", "example-report-snapshot");
    let b = util::run::Build::from(util::run::Run::from(cmd.output().unwrap())).code(0);
    let release = project.path().join("release");
    // Certified tasks in tasks.jsonl, uncertified ones in a file of their
    // own; keyed by assay's task id (`task`) and track.
    let mut tasks = BTreeMap::new();
    for (file, certified) in [("tasks.jsonl", true), ("tasks.uncertified.jsonl", false)] {
        for l in std::fs::read_to_string(release.join(file)).unwrap().lines() {
            let t: Value = serde_json::from_str(l).unwrap();
            assert_eq!(t["certified"], certified, "{file}: {t:#}");
            let id = (
                t["task"].as_str().unwrap().to_owned(),
                t["track"].as_str().unwrap().to_owned(),
            );
            tasks.insert(id, t);
        }
    }
    let rows = util::csv_records(&std::fs::read_to_string(release.join("results.csv")).unwrap())
        .into_iter()
        .map(|r| ((r["session"].clone(), r["arm"].clone()), r))
        .collect();
    let summary =
        serde_json::from_str(&std::fs::read_to_string(release.join("summary.json")).unwrap())
            .unwrap();
    Example {
        project,
        grades: b.summary.by_kind["grade"].executed,
        stderr: b.run.stderr,
        tasks,
        rows,
        summary,
    }
}

impl Example {
    fn task(&self, id: &str, track: &str) -> &Value {
        self.tasks
            .get(&(id.to_owned(), track.to_owned()))
            .unwrap_or_else(|| panic!("no task {id} ({track}) in {:?}", self.tasks.keys()))
    }

    fn not_graded(&self) -> BTreeMap<String, String> {
        self.summary["not_graded"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["session"].as_str().unwrap().to_owned(),
                    e["reason"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// What one README row of the pull-request table claims, checked.
    fn check_pr_row(&self, pr: &str, claim: &str) {
        let n = pr
            .strip_prefix('#')
            .and_then(|r| r.split(' ').next())
            .unwrap();
        let id = format!("calc-{n}");
        let at = format!("README row {pr}: {claim}");
        let ticked = ticks(claim);
        let released: Vec<&(String, String)> = self
            .tasks
            .keys()
            .filter(|(t, _)| *t == id || t.starts_with(&format!("{id}-")))
            .collect();
        let first = claim.split([' ', ';', ':', ',']).next().unwrap();
        match first {
            "certified" => {
                let named = ticked.first().copied().unwrap_or(&id);
                let task = self.task(named, "basic");
                assert_eq!(task["certified"], true, "{at}: {task:#}");
                if claim.contains("spec-track twin") {
                    assert_eq!(self.task(named, "spec")["certified"], true, "{at}");
                }
                if claim.contains("flaky test is listed") {
                    let flaky: BTreeSet<&str> = strs(&task["flaky"]);
                    assert!(!flaky.is_empty(), "{at}: {task:#}");
                    for list in ["FAIL_TO_PASS", "PASS_TO_PASS"] {
                        assert!(strs(&task[list]).is_disjoint(&flaky), "{at}: {list}");
                    }
                }
            }
            "declined" => {
                let decision =
                    self.project.output_record(&format!("triage:{id}"))["decision"].clone();
                assert_eq!(decision, ticked[0], "{at}");
                assert!(released.is_empty(), "{at}: {released:?}");
            }
            "split" => {
                let topics: BTreeSet<&str> = released.iter().map(|(t, _)| t.as_str()).collect();
                assert_eq!(topics, ticked.iter().copied().collect(), "{at}");
                for t in &ticked {
                    assert!(self.task(t, "basic")["topic"].is_string(), "{at}: {t}");
                }
            }
            "uncertified" => {
                let task = self.task(&id, "basic");
                assert_eq!(task["certified"], false, "{at}");
                let why = strs(&task["uncertified_because"]);
                assert!(
                    why.iter()
                        .any(|w| w.starts_with(&format!("{}:", ticked[0]))),
                    "{at}: {why:?}"
                );
            }
            "screened" => {
                // Screened, but held back: not in tasks.jsonl.
                assert!(released.is_empty(), "{at}: {released:?}");
                let screen = self.project.output_record(&format!("screen:{id}"));
                assert!(screen["skipped"].is_null(), "{at}: {screen:#}");
                let task = self.project.output_record(&format!("task:{id}"));
                assert_eq!(task["status"], ticked[0], "{at}");
            }
            other => panic!("{at}: a claim this test cannot check ({other:?})"),
        }
    }
}

/// The report as text, for a snapshot: tables as `|` rows, sections and
/// links named, and what varies from run to run (digests, which name logs,
/// and the assay commit; the test runner's timings and the log sizes they
/// change) replaced by a placeholder.
fn report_text(html: &str) -> String {
    let body = &html[html.find("<body>").unwrap()..];
    let svg = regex::Regex::new(r"(?s)<svg.*?</svg>").unwrap();
    let body = svg.replace_all(body, "[chart]\n");
    // The pages' one script (its bytes are pinned by its hash in the policy).
    let script = regex::Regex::new(r"(?s)<script>.*?</script>").unwrap();
    let body = script.replace_all(&body, "[script]\n");
    let anchor = regex::Regex::new(r#"<(?:section|h2)[^>]* id="([^"]+)"[^>]*>"#).unwrap();
    let body = anchor.replace_all(&body, "\n[#$1] ");
    let link = regex::Regex::new(r##"<a [^>]*href="[^"#]*#([^"]+)"[^>]*>"##).unwrap();
    let body = link.replace_all(&body, "[→$1] ");
    let mut text = body.into_owned();
    for (tag, with) in [
        ("<tr>", "\n| "),
        ("</td>", " | "),
        ("</th>", " | "),
        ("<br>", "\n"),
        ("<li>", "\n- "),
        ("<p>", "\n"),
        ("<h1>", "\n# "),
        ("<h2>", "\n## "),
        ("<h3>", "\n### "),
        ("<summary>", "\n"),
        ("</pre>", "\n```"),
    ] {
        text = text.replace(tag, with);
    }
    let pre = regex::Regex::new(r"<pre[^>]*>").unwrap();
    let text = pre.replace_all(&text, "\n```\n");
    let tags = regex::Regex::new(r"<[^>]+>").unwrap();
    let text = tags.replace_all(&text, "");
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let hex = regex::Regex::new(r"\b[0-9a-f]{12,64}\b").unwrap();
    let text = hex.replace_all(&text, "[hex]");
    let timing = regex::Regex::new(r"\b\d+\.\d+s\b").unwrap();
    let text = timing.replace_all(&text, "[time]");
    let bytes = regex::Regex::new(r"\b\d+ bytes\)").unwrap();
    let text = bytes.replace_all(&text, "[n] bytes)");
    // One line a row or paragraph, a blank line before each heading.
    let mut out = String::new();
    for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        if line.starts_with('#') || line.starts_with("[#") {
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn strs(v: &Value) -> BTreeSet<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// `` `alpha/calc-1.json` `` or `` `swebench/predictions.jsonl` line 2 ``, as
/// results.csv names the session.
fn session_id(cell: &str) -> String {
    let path = ticks(cell)[0];
    match cell.split_once(" line ") {
        Some((_, line)) => format!("{path}#{}", line.trim()),
        None => path.to_owned(),
    }
}

#[test]
fn the_bundled_example_builds_what_its_documents_say() {
    let readme = read("README.md");
    let sessions_readme = read("examples/calc/sessions/README.md");
    let ex = build_example();

    // The node names `explain --help` gives as examples are nodes of it.
    let help = ex.project.run(&["explain", "--help"]).code(0).stdout;
    for name in ["grade:alpha/calc-1.json:exclude", "task:calc-1"] {
        assert!(help.contains(name), "{help}");
        ex.project.run(&["explain", name]).code(0);
    }

    // The funnel, as printed.
    let funnel = section(&readme, "## What the example shows", "```\n", "\n```");
    let printed: Vec<&str> = ex
        .stderr
        .lines()
        .skip_while(|l| !l.starts_with("funnel:"))
        .take(3)
        .collect();
    assert_eq!(printed, funnel.lines().collect::<Vec<_>>(), "{}", ex.stderr);

    // The introduction's numbers.
    let intro = regex::Regex::new(
        r"\(`examples/calc/repo`, (\d+) merged PRs, deterministic commit ids\), screens every candidate in three states (\w+), reads (\d+) session files of (\w+) fictional agents, grades (\d+) of them in (\w+) arms and scores (\d+) \(the report lists (\d+) as not graded",
    )
    .unwrap();
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let c = intro
        .captures(&flat)
        .unwrap_or_else(|| panic!("the introduction changed shape"));
    let word = |w: &str| {
        ["one", "two", "three", "four", "five"]
            .iter()
            .position(|x| *x == w)
            .map(|i| i + 1)
    };
    let funnel_json: Value = serde_json::from_str(
        &std::fs::read_to_string(ex.project.path().join("release/funnel.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(funnel_json["candidates"], c[1].parse::<u64>().unwrap());
    // Three states, each read as often as the README says, for every
    // screened candidate.
    let times = ["once", "twice"]
        .iter()
        .position(|x| *x == &c[2])
        .map(|i| i + 1);
    for n in 1..=8 {
        let screen = ex.project.output_record(&format!("screen:calc-{n}"));
        if screen["skipped"].is_string() {
            continue;
        }
        let readings = screen["readings"].as_object().unwrap();
        let states: Vec<&str> = readings.keys().map(String::as_str).collect();
        assert_eq!(states, ["base", "gold", "test"], "calc-{n}");
        for outcomes in readings
            .values()
            .flat_map(|t| t.as_object().unwrap().values())
        {
            assert_eq!(
                outcomes.as_array().map(Vec::len),
                times,
                "calc-{n} is read {}: {screen:#}",
                &c[2]
            );
        }
    }
    let graded: BTreeSet<&str> = ex.rows.keys().map(|(s, _)| s.as_str()).collect();
    let not_graded = ex.not_graded();
    let agents: BTreeSet<&str> = ex.rows.values().map(|r| r["agent"].as_str()).collect();
    assert_eq!(Some(agents.len()), word(&c[4]), "{agents:?}");
    let arms: BTreeSet<&str> = ex.rows.keys().map(|(_, a)| a.as_str()).collect();
    assert_eq!(Some(arms.len()), word(&c[6]), "{arms:?}");
    // Graded: one grade node per session and arm (a session on the
    // uncertified task is graded, then reported as not graded).
    assert_eq!(
        ex.grades,
        c[5].parse::<u64>().unwrap() * arms.len() as u64,
        "sessions graded"
    );
    // The files read, the sessions scored and those not graded, as the
    // report counts them.
    let trials = &ex.summary["trials"]["sessions"];
    assert_eq!(
        trials["planned"],
        c[3].parse::<u64>().unwrap(),
        "{trials:#}"
    );
    assert_eq!(trials["scored"], c[7].parse::<u64>().unwrap(), "{trials:#}");
    assert_eq!(
        ex.summary["not_graded"]["total"],
        c[8].parse::<u64>().unwrap()
    );

    // The table of pull requests: one row per candidate, each claim true.
    let prs = table(&readme, "| PR | what assay does |");
    assert_eq!(
        prs.len() as u64,
        funnel_json["candidates"].as_u64().unwrap()
    );
    for row in &prs {
        ex.check_pr_row(&row[0], &row[1]);
    }

    // "The sessions between them produce the verdicts" (all but
    // test_patch_conflict, which the reset of the test patch's files leaves
    // no room for), the collision reset in both arms, a tamper suspect, and
    // the two kinds of sessions not graded.
    let verdicts: BTreeSet<&str> = ex.rows.values().map(|r| r["verdict"].as_str()).collect();
    assert_eq!(
        verdicts,
        BTreeSet::from([
            "resolved",
            "resolved_after_rerun",
            "unresolved",
            "patch_apply_failed",
            "no_report",
            "ineligible",
        ]),
        "the README's list of verdicts"
    );
    assert!(readme.contains("`test_patch_conflict` does not arise in the"));
    assert_eq!(ex.summary["verifier_suspects"].as_array().unwrap().len(), 0);
    let collision = &ex.rows[&("alpha/calc-5.json".to_owned(), "keep".to_owned())];
    assert_eq!(
        collision["reset_paths"], "tests/test_history.py",
        "{collision:#?}"
    );
    let tamper = ex.summary["tamper_suspects"].as_array().unwrap();
    assert!(
        tamper
            .iter()
            .any(|t| t["session"] == "gamma/calc-4-eval.json"),
        "{tamper:?}"
    );
    let reasons: Vec<&String> = not_graded.values().collect();
    assert!(
        reasons.iter().any(|r| r.contains("unknown task")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("uncertified")),
        "{reasons:?}"
    );

    // The sessions README: every session's verdict in both arms.
    let intended = table(&sessions_readme, "## Intended verdicts");
    let mut listed = BTreeSet::new();
    for row in &intended {
        let session = session_id(&row[0]);
        for (arm, cell) in [("exclude", &row[3]), ("keep", &row[4])] {
            let at = format!("{session} {arm}: documented {cell}");
            if cell == "not graded" {
                assert!(not_graded.contains_key(&session), "{at}: {not_graded:?}");
                assert!(
                    !ex.rows.contains_key(&(session.clone(), arm.to_owned())),
                    "{at}"
                );
            } else {
                let got = &ex.rows[&(session.clone(), arm.to_owned())]["verdict"];
                assert_eq!(got, ticks(cell)[0], "{at}");
            }
        }
        listed.insert(session);
    }
    let built: BTreeSet<String> = graded
        .iter()
        .map(|s| (*s).to_owned())
        .chain(not_graded.keys().cloned())
        .collect();
    assert_eq!(listed, built, "the table lists every session");

    // The task facts the verdicts rest on.
    for row in table(&sessions_readme, "Task facts the verdicts rest on") {
        let task = ex.task(&row[0], "basic");
        // assay's own test ids (tasks.jsonl's lists are in SWE-bench's form).
        let f2p = strs(&task["test_ids"]["FAIL_TO_PASS"]);
        assert_eq!(
            f2p,
            BTreeSet::from([format!("tests.{}", ticks(&row[1])[0]).as_str()]),
            "{}",
            row[0]
        );
        assert_eq!(
            strs(&task["test_ids"]["PASS_TO_PASS"]).len(),
            row[2].parse::<usize>().unwrap(),
            "{}",
            row[0]
        );
        let flaky: Vec<&str> = strs(&task["flaky"])
            .into_iter()
            .map(|t| t.rsplit('.').next().unwrap())
            .collect();
        let documented: Vec<&str> = ticks(&row[3]);
        assert_eq!(flaky, documented, "{}", row[0]);
    }

    // alpha/calc-1's tokens are its transcript's, each kind once (its `run`
    // once summed the cached input kinds into `input` too: 154515).
    let calc1 = &ex.rows[&("alpha/calc-1.json".to_owned(), "exclude".to_owned())];
    assert_eq!(calc1["tokens_total"], "78215", "{calc1:?}");

    // The report: every matrix cell reaches its session's section on its
    // task's page (as every link of every page reaches its file and id),
    // and what the pages say, as text.
    let release = util::links::read(&ex.project.path().join("release"));
    let html = String::from_utf8(release["report.html"].clone()).unwrap();
    let matrix = section(&html, "<h2>Tasks × agents", "<table", "</table>");
    let cells: Vec<&str> = matrix.split("<a class=\"v ").skip(1).collect();
    assert_eq!(cells.len(), 17, "one per scored session");
    for cell in cells {
        let href = &cell[cell.find("href=\"").unwrap() + 6..];
        let href = &href[..href.find('"').unwrap()];
        let (page, id) = href.split_once('#').unwrap();
        let page = String::from_utf8_lossy(&release[page]);
        assert!(
            page.contains(&format!("<section class=\"session\" id=\"{id}\">")),
            "{href} names no section"
        );
    }
    assert_eq!(util::links::dangling(&release), Vec::<String>::new());
    insta::assert_snapshot!("report", report_text(&html));
    let tasks: String = release
        .iter()
        .filter(|(name, _)| name.starts_with("pages/task-"))
        .map(|(_, page)| report_text(&String::from_utf8_lossy(page)))
        .collect();
    insta::assert_snapshot!("task_pages", tasks);
    // A log on a page reports the canaries too, planted failures included:
    // none is shown without the note that says so and gives the session's
    // own count, and no title is shared by two pages.
    let mut titles = BTreeSet::new();
    for (name, page) in release.iter().filter(|(n, _)| n.starts_with("pages/")) {
        let page = String::from_utf8_lossy(page);
        let parts: Vec<&str> = page.split("<pre class=\"log\">").collect();
        for before in &parts[..parts.len() - 1] {
            let note = before.rsplit("<p class=\"muted\">").next().unwrap();
            assert!(
                note.starts_with("The raw log of the graded run")
                    && note.contains("For this session, "),
                "{name}: a log without its note: {note}"
            );
        }
        let title = section(&page, "<head>", "<title>", "</title>").to_owned();
        assert!(titles.insert(title.clone()), "two pages titled {title:?}");
    }

    // "Run it again: it executes nothing."
    let again = ex.project.build_json(&[]).code(0);
    assert_eq!(again.summary.total.executed, 0, "{:?}", again.summary);

    // The audit commands the README shows, as it shows them.
    let audit = section(&readme, "To audit what was published:", "```sh\n", "\n```");
    let commands: Vec<Vec<String>> = audit
        .lines()
        .map(|l| {
            let cmd = l.split('#').next().unwrap().trim();
            let args = cmd.strip_prefix("cargo run --release -- ").unwrap();
            args.split(' ')
                .map(|a| a.trim_matches('\'').to_owned())
                .collect()
        })
        .collect();
    assert_eq!(commands.len(), 3, "{audit}");
    for args in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ex.project.run(&args).code(0);
        if args.contains(&"--reexecute") {
            assert!(out.stdout.contains(" 0 differ, "), "{}", out.stdout);
        }
    }
}

/// The released tasks load in SWE-bench's harness (its own loader) and its
/// own `get_eval_report` resolves each with the gold patch, and none with
/// the empty patch; and every session of the example, graded by the
/// harness's functions on the published eval script, gets assay's verdict
/// but for the differences docs/verdicts.md lists ("SWE-bench's harness").
/// Makes the virtualenv it needs itself, once (`scripts/check-swebench.sh
/// --setup`: swebench from PyPI under `target/`, reused after); without
/// PyPI or python3's venv module it fails saying so, it does not skip.
#[test]
fn the_released_tasks_load_and_resolve_in_swebench() {
    let setup = std::process::Command::new(Path::new(ROOT).join("scripts/check-swebench.sh"))
        .arg("--setup")
        .output()
        .unwrap();
    assert!(
        setup.status.success(),
        "scripts/check-swebench.sh --setup failed (it installs swebench from PyPI into target/swebench-venv; needs python3 with venv):\n{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let ex = build_example();
    let release = ex.project.path().join("release");
    let spec = ex.task("calc-1", "spec");
    assert_eq!(spec["instance_id"], "calc-1__spec", "{spec:#}");
    let calc6 = ex.task("calc-6", "basic");
    assert_eq!(calc6["status"], "uncertified", "{calc6:#}");
    let basic = ex.task("calc-1", "basic");
    assert_eq!(basic["repo"], "example/calc");
    assert_eq!(basic["environment_setup_commit"], basic["base_commit"]);
    assert!(
        strs(&basic["FAIL_TO_PASS"]).contains(
            "test_divide_by_zero_raises_value_error (tests.test_ops.TestOps.test_divide_by_zero_raises_value_error)"
        ),
        "{basic:#}"
    );
    let out = std::process::Command::new(Path::new(ROOT).join("scripts/check-swebench.sh"))
        .arg(&release)
        .arg(ex.project.path().join("examples/calc/repo"))
        .arg(ex.project.path().join("examples/calc/sessions"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/check-swebench.sh failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `assay completions SHELL` prints a script the shell accepts, naming the
/// commands a user types and none of the hidden ones.
#[test]
fn completions_are_a_script_the_shell_reads() {
    let p = Project::new();
    let bash = p.run(&["completions", "bash"]).code(0).stdout;
    for command in ["build", "export", "verify", "explain", "--harbor"] {
        assert!(bash.contains(command), "{command} missing");
    }
    for hidden in ["harbor-verify", "bench-dag", "forward"] {
        assert!(!bash.contains(hidden), "{hidden} offered");
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("assay.bash");
    std::fs::write(&script, &bash).unwrap();
    let checked = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    p.run(&["completions", "tcsh"]).code(2);
}
