//! The judge through the real binary, against a real HTTP server on loopback
//! (wiremock, speaking both wire formats, from assay-judge's own test
//! support). Each test builds a small Python repository with one merged PR
//! (`p-1`, fixing `sub`), writes sessions, and runs `assay build`.

#![allow(clippy::unwrap_used)]

mod util;

#[allow(dead_code, unreachable_pub)]
#[path = "../crates/assay-judge/tests/judge/support.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;

use assay_judge::Api;
use serde_json::{Value, json};
use util::{Build, Checkout, Project, Repo};
use wiremock::{MockServer, ResponseTemplate};

const OPS_BASE: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n";
const OPS_FIXED: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
const TEST_BASE: &str = "import unittest\n\nfrom pkg import ops\n\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(ops.add(2, 3), 5)\n";
const TEST_SUB: &str = "\n    def test_sub(self):\n        self.assertEqual(ops.sub(5, 3), 2)\n";

/// The key's variable and a value distinctive enough to grep for.
const KEY_VAR: &str = "ASSAY_TEST_JUDGE_KEY";
const KEY: &str = "sk-assay-judge-test-7f3c9e1d5b";

/// Authorship that must never reach a request body.
const AGENTS: [(&str, &str, &str); 2] = [
    ("zorkagent/fix.json", "zorkagent", "quuxmodel-one"),
    ("blorpagent/wrong.json", "blorpagent", "quuxmodel-two"),
];

struct Fixture {
    project: Project,
    checkout: Checkout,
    base: String,
    rt: tokio::runtime::Runtime,
    server: MockServer,
}

impl Fixture {
    /// The repository, the two sessions of [`AGENTS`], and a judge server.
    fn new() -> Fixture {
        let project = Project::new();
        let mut r = Repo::new(&project, "repo");
        r.put(".gitignore", "__pycache__/\n")
            .put("pkg/__init__.py", "")
            .put("pkg/ops.py", OPS_BASE)
            .put("tests/__init__.py", "")
            .put("tests/test_ops.py", TEST_BASE);
        r.commit("Initial commit");
        let base = r.head();
        r.pr(
            1,
            "Fix sub",
            &[
                ("pkg/ops.py", OPS_FIXED),
                ("tests/test_ops.py", &format!("{TEST_BASE}{TEST_SUB}")),
            ],
        );
        project.write("statements/p-1.md", "sub(5, 3) returns 8.\n");
        let checkout = r.checkout(&project, "work");
        let rt = tokio::runtime::Runtime::new().unwrap();
        let server = rt.block_on(MockServer::start());
        let f = Fixture {
            project,
            checkout,
            base,
            rt,
            server,
        };
        let wrong = OPS_BASE.replace("return a + b\n", "return b - a\n");
        for ((id, agent, model), ops) in AGENTS.iter().zip([OPS_FIXED, wrong.as_str()]) {
            let patch = f.checkout.diff(&f.base, &[], &[("pkg/ops.py", Some(ops))]);
            let v = json!({"task": "p-1", "agent": agent, "model": model, "patch": patch});
            f.project.write(
                &format!("sessions/{id}"),
                serde_json::to_string(&v).unwrap(),
            );
        }
        f
    }

    fn path(&self) -> &Path {
        self.project.path()
    }

    /// The judge server answers `api` requests with `responder` from now on.
    fn answer(&self, api: Api, responder: impl wiremock::Respond + 'static) {
        self.rt
            .block_on(support::mount(&self.server, api, responder));
    }

    fn reset(&self) {
        self.rt.block_on(self.server.reset());
    }

    /// `pipeline.toml` with these `[[judge]]` tables (`{url}` = the server's base URL).
    fn pipeline(&self, judges: &str) {
        let judges = judges.replace("{url}", &format!("{}/v1", self.server.uri()));
        self.project.write(
            "pipeline.toml",
            format!(
                r#"statements = "statements"
sessions = "sessions"

[[source]]
name = "p"
path = "repo"

[env]
test_command = "python3 -m unittest -v"
report = "unittest"
timeout = 60

[grade]
reruns = 1

{judges}"#
            ),
        );
    }

    /// `assay build --json ARGS` with the key's variable set.
    fn build(&self, args: &[&str]) -> Build {
        let mut all = vec!["build", "--json"];
        all.extend_from_slice(args);
        let mut cmd = self.project.command(&all);
        cmd.env(KEY_VAR, KEY);
        let b = Build::from(util::Run::from(cmd.output().unwrap()));
        assert!(!b.run.stderr.contains("panicked"), "{}", b.run.stderr);
        b
    }

    fn build_ok(&self, args: &[&str]) -> Build {
        let b = self.build(args);
        assert_eq!(b.run.code, 0, "{}\n{:?}", b.run.stderr, b.summary);
        b
    }

    /// The request bodies the server got for `api`, in arrival order.
    fn bodies(&self, api: Api) -> Vec<Value> {
        self.rt
            .block_on(support::requests(&self.server))
            .iter()
            .filter(|r| r.url.path() == support::endpoint(api))
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect()
    }

    fn summary(&self) -> Value {
        let text = std::fs::read_to_string(self.path().join("release/summary.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// results.csv rows by session (one arm).
    fn results(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let text = std::fs::read_to_string(self.path().join("release/results.csv")).unwrap();
        util::csv_records(&text)
            .into_iter()
            .map(|r| (r["session"].clone(), r))
            .collect()
    }
}

/// Kinds executed by a build, with counts.
fn executed(b: &Build) -> BTreeMap<String, u64> {
    b.summary
        .by_kind
        .iter()
        .filter(|(_, c)| c.executed > 0)
        .map(|(k, c)| (k.clone(), c.executed))
        .collect()
}

fn judge_table(name: &str, api: &str, model: &str, extra: &str) -> String {
    format!(
        r#"
[[judge]]
name = "{name}"
api = "{api}"
base_url = "{{url}}"
model = "{model}"
api_key_env = "{KEY_VAR}"
max_attempts = 2
backoff_s = 0.0
backoff_max_s = 0.0
{extra}
"#
    )
}

/// Every file below `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &[u8], hits: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_holding(&p, needle, hits);
        } else if let Ok(bytes) = std::fs::read(&p)
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            hits.push(p.display().to_string());
        }
    }
}

/// The labels a pair request shows, in the order shown (from its user text).
fn shown_order(api: Api, body: &Value) -> Vec<String> {
    let user = match api {
        Api::Openai => body["messages"][1]["content"].as_str(),
        Api::Anthropic => body["messages"][0]["content"].as_str(),
    }
    .unwrap_or_default();
    user.lines()
        .filter_map(|l| l.strip_prefix("## Patch "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_judged_build_reviews_blind_in_both_formats_and_flags_the_quotes() {
    let f = Fixture::new();
    f.project
        .write("rubric.md", "1: hopeless. 5: flawless (test rubric).\n");
    // `strict` gives 2s without a quote; `claude` 3s quoting nothing in the patch.
    f.answer(Api::Openai, support::EchoJudge::new(Api::Openai, 2, ""));
    f.answer(
        Api::Anthropic,
        support::EchoJudge::new(Api::Anthropic, 3, "this line is in no patch"),
    );
    let strict = judge_table(
        "strict",
        "openai",
        "judge-model-a",
        "samples = 2\npairwise = true",
    );
    let claude = judge_table(
        "claude",
        "anthropic",
        "judge-model-b",
        "rubric = \"rubric.md\"",
    );
    f.pipeline(&format!("{strict}{claude}"));
    let b = f.build_ok(&[]);
    // strict: 2 sessions × 2 samples, and 1 pair × 2 orders × 2 samples; claude: 2.
    assert_eq!(executed(&b).get("judge"), Some(&10), "{:?}", b.summary);

    let openai = f.bodies(Api::Openai);
    let anthropic = f.bodies(Api::Anthropic);
    assert_eq!((openai.len(), anthropic.len()), (8, 2));
    // Blind: no agent, model, session or file name in any request.
    for body in openai.iter().chain(&anthropic) {
        let text = body.to_string();
        for (id, agent, model) in AGENTS {
            for name in [id, agent, model, "fix.json", "wrong.json", "sessions/"] {
                assert!(!text.contains(name), "{name} reached the judge: {text}");
            }
        }
        assert!(
            text.contains("sub(5, 3) returns 8."),
            "the statement is shown"
        );
        assert!(text.contains("return a - b"), "the gold patch is shown");
    }
    assert!(
        anthropic[0]["system"]
            .as_str()
            .unwrap()
            .contains("(test rubric)")
    );
    // Both orders: per sample, the pair is shown once each way.
    let mut orders: BTreeMap<u64, Vec<Vec<String>>> = BTreeMap::new();
    for body in &openai {
        let shown = shown_order(Api::Openai, body);
        if shown.len() == 2 {
            orders
                .entry(body["seed"].as_u64().unwrap())
                .or_default()
                .push(shown);
        }
    }
    assert_eq!(orders.len(), 2, "{orders:?}");
    for pair in orders.values() {
        assert_eq!(pair.len(), 2);
        let mut flipped = pair[1].clone();
        flipped.reverse();
        assert_eq!(pair[0], flipped, "the second order reverses the first");
    }

    let rows = f.results();
    let fix = &rows["zorkagent/fix.json"];
    assert_eq!(fix["verdict"], "resolved", "{fix:#?}");
    assert_eq!(fix["judge_overall:strict"], "2", "{fix:#?}");
    assert_eq!(fix["judge_samples:strict"], "2");
    assert_eq!(fix["judge_overall:claude"], "3");
    assert_eq!(fix["judge_unverified_quotes:claude"], "6");
    assert_eq!(rows["blorpagent/wrong.json"]["verdict"], "unresolved");
    assert_ne!(
        rows["blorpagent/wrong.json"]["judge_missing_quotes:strict"],
        "0"
    );

    let s = f.summary();
    let strict = &s["judges"]["strict"];
    assert_eq!(strict["readings"], 8, "{strict:#}");
    // The echo server prefers whichever patch comes first.
    assert_eq!(strict["position_inconsistency"]["pairs"], 2);
    assert_eq!(strict["position_inconsistency"]["rate"], 1.0);
    assert_eq!(strict["sample_agreement"]["rate"], 1.0);
    assert_eq!(strict["quotes"]["missing"], strict["quotes"]["low_scores"]);
    assert_eq!(strict["quotes"]["missing_rate"], 1.0);
    let claude = &s["judges"]["claude"];
    assert_eq!(claude["quotes"]["unverified_rate"], 1.0, "{claude:#}");
    let flags: Vec<&str> = claude["flagged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["flag"].as_str().unwrap())
        .collect();
    assert_eq!(flags, ["unverified_quote"; 12]);
    assert_eq!(claude["tokens"]["input"], 2000);
    let a = &s["agents"]["zorkagent/quuxmodel-one"]["judge"];
    assert_eq!(a["strict"]["criteria"]["overall"]["mean"], 2.0, "{a:#}");
    assert_eq!(a["claude"]["criteria"]["correctness"]["mean"], 3.0);
    assert_eq!(a["strict"]["pairwise"]["appearances"], 4);

    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(f.path().join("release/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["judges"]["strict"], strict["settings_digest"]);

    // The key went out in the headers, and is nowhere in the cache, the
    // release or the event stream.
    let reqs = f.rt.block_on(support::requests(&f.server));
    assert!(
        reqs.iter()
            .any(|r| r.headers.get("x-api-key").is_some_and(|v| v == KEY))
    );
    let mut hits = Vec::new();
    files_holding(&f.path().join("cache"), KEY.as_bytes(), &mut hits);
    files_holding(&f.path().join("release"), KEY.as_bytes(), &mut hits);
    assert_eq!(hits, Vec::<String>::new());
    assert!(!b.run.stdout.contains(KEY) && !b.run.stderr.contains(KEY));

    // explain names the readings behind a judge number.
    let out = f
        .project
        .run(&[
            "explain",
            "summary.judges.strict.position_inconsistency.rate",
            "--json",
        ])
        .code(0);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let readings = v["readings"].as_array().unwrap();
    assert_eq!(readings.len(), 4, "{v:#}");
    assert!(
        readings
            .iter()
            .all(|r| r["key_ok"] == true && r["mode"] == "pairwise")
    );

    // Every judge figure on report.html shows its name, and explain
    // answers to it with the figure's value.
    util::figures::explained(
        &f.project,
        &[],
        &f.path().join("release"),
        30,
        &[
            "summary.judges.strict.position_inconsistency.rate",
            "summary.agents[zorkagent/quuxmodel-one].judge.claude.criteria.correctness.mean",
        ],
    );

    // verify recomputes the judge aggregates with everything else.
    f.project.run(&["verify"]).code(0).stdout_has("release ok");
}

#[test]
fn a_fork_changing_only_the_judge_reruns_only_the_judge_and_the_release() {
    let f = Fixture::new();
    f.answer(Api::Openai, support::EchoJudge::new(Api::Openai, 4, ""));
    let table = judge_table("j", "openai", "judge-model-a", "");
    f.pipeline(&table);
    let first = f.build_ok(&[]);
    assert_eq!(executed(&first).get("judge"), Some(&2));
    let tasks = std::fs::read(f.path().join("release/tasks.jsonl")).unwrap();
    assert_eq!(f.results()["zorkagent/fix.json"]["judge_overall"], "4");

    // The no-op rebuild reuses every reading.
    let again = f.build_ok(&[]);
    assert_eq!(again.summary.total.executed, 0, "{:?}", again.summary);
    assert_eq!(again.summary.by_kind["judge"].reused, 2);
    assert_eq!(f.bodies(Api::Openai).len(), 2);

    // A researcher's copy with another judge model, on the same cache.
    let text = std::fs::read_to_string(f.path().join("pipeline.toml")).unwrap();
    let forked = text.replace("judge-model-a", "judge-model-b");
    assert_ne!(forked, text);
    f.project.write("fork.toml", &forked);
    let fork = f.build_ok(&["-p", "fork.toml", "--cache", "cache"]);
    assert_eq!(
        executed(&fork),
        BTreeMap::from([("judge".to_owned(), 2), ("release".to_owned(), 1)]),
        "{:?}",
        fork.summary
    );
    assert_eq!(
        std::fs::read(f.path().join("release/tasks.jsonl")).unwrap(),
        tasks
    );
    let models: Vec<String> = f
        .bodies(Api::Openai)
        .iter()
        .map(|b| b["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(models[2..], ["judge-model-b", "judge-model-b"]);

    // Renaming the judge and changing how it is called changes no reading.
    let renamed = forked
        .replace("name = \"j\"", "name = \"renamed\"")
        .replace(
            "max_attempts = 2",
            "max_attempts = 5\nconcurrency = 16\ntimeout_s = 30",
        );
    f.project.write("fork.toml", &renamed);
    let renamed = f.build_ok(&["-p", "fork.toml", "--cache", "cache"]);
    assert_eq!(
        executed(&renamed),
        BTreeMap::from([("release".to_owned(), 1)]),
        "{:?}",
        renamed.summary
    );
    assert_eq!(f.results()["zorkagent/fix.json"]["judge_overall"], "4");
}

#[test]
fn an_infrastructure_error_is_not_cached_and_the_next_build_asks_again() {
    let f = Fixture::new();
    f.answer(
        Api::Anthropic,
        ResponseTemplate::new(500).set_body_string("overloaded"),
    );
    f.pipeline(&judge_table("j", "anthropic", "judge-model-a", ""));
    // Every failure is the API's: the build says so, with its own code.
    let down = f.build(&[]).code(9);
    let judge = &down.summary.by_kind["judge"];
    assert_eq!((judge.executed, judge.failed), (0, 2), "{:?}", down.summary);
    assert_eq!(down.summary.by_kind["grade"].executed, 2);
    assert_eq!(down.summary.by_kind["release"].skipped, 1);
    let reasons: Vec<&str> = down
        .events
        .iter()
        .filter(|e| e["event"] == "node_failed")
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 2);
    assert!(
        reasons
            .iter()
            .all(|r| r.contains("infrastructure failure after 2 attempt(s)")
                && r.contains("HTTP 500")),
        "{reasons:?}"
    );
    assert!(
        down.events
            .iter()
            .filter(|e| e["event"] == "node_failed")
            .all(|e| e["class"] == "infrastructure"),
        "{:?}",
        down.events
    );
    assert!(
        down.run
            .stderr
            .contains("error: 2 nodes failed: 2 infrastructure")
            && down.run.stderr.contains("fix it and build again"),
        "{}",
        down.run.stderr
    );
    assert_eq!(
        f.bodies(Api::Anthropic).len(),
        4,
        "two attempts per reading"
    );

    f.reset();
    f.answer(
        Api::Anthropic,
        support::EchoJudge::new(Api::Anthropic, 5, ""),
    );
    let up = f.build_ok(&[]);
    assert_eq!(
        executed(&up),
        BTreeMap::from([("judge".to_owned(), 2), ("release".to_owned(), 1)]),
        "{:?}",
        up.summary
    );
    assert_eq!(f.results()["blorpagent/wrong.json"]["judge_overall"], "5");
}

#[test]
fn a_judge_whose_key_variable_is_unset_is_skipped_with_the_reason() {
    let f = Fixture::new();
    f.answer(Api::Openai, support::EchoJudge::new(Api::Openai, 4, ""));
    let table = judge_table("j", "openai", "judge-model-a", "")
        .replace(KEY_VAR, "ASSAY_TEST_UNSET_JUDGE_KEY");
    f.pipeline(&table);
    let mut cmd = f.project.command(&["build", "--json"]);
    cmd.env_remove("ASSAY_TEST_UNSET_JUDGE_KEY");
    let b = Build::from(util::Run::from(cmd.output().unwrap())).code(0);
    let warning = "warning: judge `j`: the variable ASSAY_TEST_UNSET_JUDGE_KEY that should hold the API key is not set";
    assert_eq!(b.run.stderr.matches(warning).count(), 1, "{}", b.run.stderr);
    assert!(!b.summary.by_kind.contains_key("judge"), "{:?}", b.summary);
    assert_eq!(f.bodies(Api::Openai).len(), 0);
    let s = f.summary();
    assert!(
        s["judges"]["j"]["skipped"]
            .as_str()
            .unwrap()
            .contains("ASSAY_TEST_UNSET_JUDGE_KEY"),
        "{s:#}"
    );
    assert_eq!(s["judges"]["j"]["readings"], 0);
    assert_eq!(f.results()["zorkagent/fix.json"]["judge_overall"], "");
}

#[test]
fn judge_config_errors_point_into_the_file() {
    let p = Project::new();
    let base = |extra: &str| {
        format!(
            "[[judge]]\nname = \"j\"\napi = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n{extra}"
        )
    };
    for (extra, says) in [
        ("rubric = \"missing.md\"\n", "cannot read the rubric file"),
        ("temprature = 0.5\n", "unknown field `temprature`"),
        (
            "temperature = 3.0\n",
            "`temperature` must be between 0 and 2",
        ),
        ("samples = 0\n", "samples"),
    ] {
        p.write("pipeline.toml", base(extra));
        p.run(&["build"]).code(3).stderr_has(says);
    }
    p.write(
        "pipeline.toml",
        base("").replace("/v1\"", "/v1/chat/completions\""),
    );
    p.run(&["build"])
        .code(3)
        .stderr_has("must end before `/chat/completions`")
        .stderr_has("base_url = ");
    p.write("pipeline.toml", format!("{}\n{}", base(""), base("")));
    p.run(&["build"])
        .code(3)
        .stderr_has("two judges are named `j`");
}

#[test]
fn a_judged_release_exports_its_readings_and_a_judge_number_verifies_from_the_bundle() {
    let f = Fixture::new();
    f.answer(Api::Openai, support::EchoJudge::new(Api::Openai, 4, ""));
    f.pipeline(&judge_table("j", "openai", "judge-model-a", ""));
    f.build_ok(&[]);
    let out = tempfile::tempdir().unwrap();
    let bundle = out.path().join("bundle");
    f.project
        .run(&["export", "--to", bundle.to_str().unwrap()])
        .code(0);
    let nodes = std::fs::read_to_string(bundle.join("nodes.jsonl")).unwrap();
    let judges: Vec<Value> = nodes
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|n| n["kind"] == "judge")
        .collect();
    assert_eq!(judges.len(), 2, "{nodes}");
    let verify = |args: &[&str]| {
        let cwd = tempfile::tempdir().unwrap();
        let o = std::process::Command::new(util::BIN)
            .arg("verify")
            .args(args)
            .arg("--bundle")
            .arg(&bundle)
            .current_dir(cwd.path())
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    assert_eq!(verify(&[]).0, Some(0));
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(bundle.join("release/manifest.json")).unwrap())
            .unwrap();
    assert!(
        manifest["provenance"]["release_node"].is_string(),
        "{manifest:#}"
    );
    let number = manifest["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["readings"].as_array().is_some_and(|r| !r.is_empty()))
        .expect("a judge number");
    let path = number["path"].as_str().unwrap();
    assert_eq!(verify(&[path]).0, Some(0), "{path}");

    // A reading's output, changed in place, is named.
    let hex = judges[0]["output"].as_str().unwrap();
    let blob = bundle.join("blobs").join(&hex[..2]).join(&hex[2..]);
    let mut bytes = std::fs::read(&blob).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&blob, bytes).unwrap();
    let (code, stderr) = verify(&[path]);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "output of {}",
            judges[0]["name"].as_str().unwrap()
        )) || stderr.contains(judges[1]["name"].as_str().unwrap()),
        "{stderr}"
    );
}
