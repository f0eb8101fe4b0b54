//! `[env] rebuild`, through the real binary on `examples/jsworkspace`: a
//! workspace whose `packages/app` tests read `packages/core`'s build
//! (`dist/`, compiled by Debian's `tsc`). A fix in core's source certifies
//! only when core is rebuilt before the tests; a patch that breaks core's
//! compile is a build failure of the agent's, named by its rule; a patch
//! that writes the fix into `dist/` alone is undone by the rebuild; a patch
//! that changes nothing of core rebuilds nothing; a rebuild writes nowhere
//! outside its run's tree. Editing a rule reruns only the runs of the trees
//! that need it.
//!
//! Needs `node` (Node 20) and `tsc` (Debian's node-typescript).

#![allow(clippy::unwrap_used)]

mod util;

use std::path::Path;
use std::process::Command;

use util::{Project, strs};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/jsworkspace");
const PINNED: &str = "c050cb01b572c2ef9018d6591189c059d0214338";
const RULE: &str =
    "rebuild = [{ paths = \"packages/core/**\", command = \"tsc -p packages/core\" }]";

/// A session's patch pointing core's `outDir` at `dir` (outside the tree):
/// the rebuild's compiler would write core's build there.
fn out_dir_patch(dir: &Path) -> String {
    format!(
        "diff --git a/packages/core/tsconfig.json b/packages/core/tsconfig.json
--- a/packages/core/tsconfig.json
+++ b/packages/core/tsconfig.json
@@ -6,6 +6,6 @@
     \"declaration\": true,
     \"rootDir\": \"src\",
-    \"outDir\": \"dist\"
+    \"outDir\": \"{}\"
   }},
   \"include\": [\"src\"]
 }}
",
        dir.display()
    )
}

/// The excerpt feature (`alpha/jsws-2`'s patch) plus a file no rule names.
fn with_notes(excerpt: &str) -> String {
    format!(
        "{excerpt}diff --git a/docs/notes.md b/docs/notes.md
new file mode 100644
--- /dev/null
+++ b/docs/notes.md
@@ -0,0 +1 @@
+Excerpts cut at words.
"
    )
}

fn tools_present() {
    for tool in ["node", "tsc"] {
        let out = Command::new(tool).arg("--version").output();
        assert!(
            out.as_ref().is_ok_and(|o| o.status.success()),
            "this test needs `{tool}` on PATH (apt-get install nodejs node-typescript): {out:?}"
        );
    }
}

/// The example in a temp project, its repository made, with the extra
/// sessions: `escape` (core's outDir outside the tree) and `notes` (a
/// change no rule covers).
fn project() -> Project {
    tools_present();
    let project = Project::new();
    let example = Path::new(EXAMPLE);
    let pipeline = std::fs::read_to_string(example.join("pipeline.toml")).unwrap();
    assert!(pipeline.contains(RULE), "{pipeline}");
    project.write("pipeline.toml", pipeline);
    for dir in ["statements", "sessions"] {
        util::example::copy_tree(&example.join(dir), &project.path().join(dir));
    }
    let escaped = project.path().join("escaped");
    let excerpt = std::fs::read_to_string(example.join("sessions/alpha/jsws-2.diff")).unwrap();
    for (agent, task, patch) in [
        ("escape", "jsws-1", out_dir_patch(&escaped)),
        ("notes", "jsws-2", with_notes(&excerpt)),
    ] {
        let session = serde_json::json!({
            "task": task, "agent": agent, "model": "model-a", "patch": patch,
        });
        project.write(
            &format!("sessions/{agent}/{task}.json"),
            session.to_string(),
        );
    }
    util::example::make_repo(&project, example, PINNED);
    project
}

/// [`project`] with its pipeline edited by `edit`, built; panics if the
/// build fails. Gives the project and its released tasks.
fn built_with(
    edit: impl Fn(String) -> String,
) -> (
    Project,
    std::collections::BTreeMap<String, serde_json::Value>,
) {
    let p = project();
    let pipeline = std::fs::read_to_string(p.path().join("pipeline.toml")).unwrap();
    p.write("pipeline.toml", edit(pipeline));
    let b = p.build_json(&[]);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    let tasks = util::example::released_tasks(&p);
    assert_eq!(tasks["jsws-2"]["certified"], true, "{:#}", tasks["jsws-2"]);
    (p, tasks)
}

const F2P: &str =
    "packages/app/test/permalink.test.js > permalink > cleans punctuation out of the slug";

#[test]
fn a_workspace_package_is_rebuilt_before_the_tests_that_read_its_build() {
    let p = project();
    let b = p.build_json(&[]);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);

    // Screening: the fix is core's source, its test app's; with core
    // rebuilt in the gold tree, jsws-1 certifies.
    let tasks = util::example::released_tasks(&p);
    let t = &tasks["jsws-1"];
    assert_eq!(t["certified"], true, "{t:#}");
    assert_eq!(strs(&t["test_ids"]["FAIL_TO_PASS"]), [F2P]);
    assert_eq!(tasks["jsws-2"]["certified"], true, "{:#}", tasks["jsws-2"]);
    // The gold tree needed the rule and ran it; the base and test-only
    // trees change nothing of core and ran none.
    let gold = p.output_record("run:jsws-1:gold:r0");
    assert_eq!(
        gold["rebuild"][0]["command"], "tsc -p packages/core",
        "{gold:#}"
    );
    assert_eq!(gold["rebuild"][0]["exit_code"], 0, "{gold:#}");
    for state in ["base", "test"] {
        let r = p.output_record(&format!("run:jsws-1:{state}:r0"));
        assert!(r["rebuild"].is_null(), "{state}: {r:#}");
    }

    // Grading: (session, verdict in both arms, fault).
    let results = util::example::released_results(&p);
    for (session, verdict, fault) in [
        ("alpha/jsws-1.json", "resolved", "none"),
        ("beta/jsws-1.json", "unresolved", "agent"),
        ("gamma/jsws-1.json", "unresolved", "agent"),
        ("escape/jsws-1.json", "unresolved", "agent"),
        ("alpha/jsws-2.json", "resolved", "none"),
        ("notes/jsws-2.json", "resolved", "none"),
    ] {
        for arm in ["exclude", "keep"] {
            let row = &results[&(session.to_owned(), arm.to_owned())];
            assert_eq!(
                (row["verdict"].as_str(), row["fault"].as_str()),
                (verdict, fault),
                "{session} {arm}: {row:#?}"
            );
        }
    }
    let grade = |s: &str| {
        let row = &results[&(s.to_owned(), "exclude".to_owned())];
        p.show_json(&row["grade_digest"])
    };
    // The broken compile: a build failure of the agent's, named by its
    // rule, with the compiler's message; its test is not rerun.
    let broken = grade("beta/jsws-1.json");
    let detail = broken["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(
            "rebuild `tsc -p packages/core` (packages/core/**) does not build: exited with 2"
        ),
        "{broken:#}"
    );
    assert!(detail.contains("error TS2322"), "{broken:#}");
    let run = p.output_record("run:beta/jsws-1.json:exclude");
    assert_eq!(run["rebuild"][0]["exit_code"], 2, "{run:#}");
    assert!(run["tests"].as_object().unwrap().is_empty(), "{run:#}");
    // The session's section is on its task's page.
    let named = std::fs::read_dir(p.path().join("release/pages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|f| {
            f.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("task-")
        })
        .any(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .contains("rebuild `tsc -p packages/core`")
        });
    assert!(named, "the report's task page names the rule");
    // The fix written into dist alone: the rule covers dist, the rebuild
    // compiles core's unchanged source over it, the new test fails.
    let faked = grade("gamma/jsws-1.json");
    assert_eq!(strs(&faked["failing"]), [F2P], "{faked:#}");
    let run = p.output_record("run:gamma/jsws-1.json:exclude");
    assert_eq!(run["rebuild"][0]["exit_code"], 0, "{run:#}");
    // Core's build pointed outside the tree (at a directory of this
    // test's): the compiler writes into the run's private /tmp at most,
    // never the host's; core's dist stays stale and the new test fails.
    let escape = grade("escape/jsws-1.json");
    assert_eq!(strs(&escape["failing"]), [F2P], "{escape:#}");
    assert!(
        !p.path().join("escaped").exists(),
        "the rebuild wrote outside its tree"
    );
    // A change no rule covers rebuilds nothing.
    for s in ["notes/jsws-2.json", "alpha/jsws-2.json"] {
        let stage = p.output_record(&format!("stage:{s}:exclude"));
        assert!(stage["rebuild"].is_null(), "{s}: {stage:#}");
        let run = p.output_record(&format!("run:{s}:exclude"));
        assert!(run["rebuild"].is_null(), "{s}: {run:#}");
    }

    // A second build executes nothing.
    let again = p.build_json(&[]);
    assert_eq!(again.run.code, 0, "{}", again.run.stderr);
    assert_eq!(again.names("node_finished"), Vec::<String>::new());

    // An edited rule command reruns the runs of the trees that need it,
    // and none other.
    let pipeline = std::fs::read_to_string(p.path().join("pipeline.toml")).unwrap();
    p.write(
        "pipeline.toml",
        pipeline.replace(
            "command = \"tsc -p packages/core\"",
            "command = \"tsc -p packages/core --pretty false\"",
        ),
    );
    let edited = p.build_json(&[]);
    assert_eq!(edited.run.code, 0, "{}", edited.run.stderr);
    let runs: Vec<String> = edited
        .names("node_finished")
        .into_iter()
        .filter(|n| n.starts_with("run:") || n.starts_with("certify:"))
        .collect();
    let mut want: Vec<String> = ["run:jsws-1:gold:r0", "run:jsws-1:gold:r1", "certify:jsws-1"]
        .iter()
        .map(|s| (*s).to_owned())
        .chain(
            ["alpha", "beta", "gamma", "escape"]
                .iter()
                .flat_map(|a| ["exclude", "keep"].map(|arm| format!("run:{a}/jsws-1.json:{arm}"))),
        )
        .collect();
    want.sort();
    // Runs over equal trees share a key: one of them executes, the others
    // reuse it (alpha's tree is the gold tree; an arm that leaves nothing
    // out stages the other arm's tree).
    assert!(runs.iter().all(|r| want.contains(r)), "{runs:#?}");
    for name in ["run:jsws-1:gold:r0", "run:jsws-1:gold:r1", "certify:jsws-1"] {
        assert!(runs.iter().any(|r| r == name), "{name}: {runs:#?}");
    }
    for name in want.iter().filter(|n| n.starts_with("run:")) {
        let r = p.output_record(name);
        assert_eq!(
            r["rebuild"][0]["command"], "tsc -p packages/core --pretty false",
            "{name}: {r:#}"
        );
    }
}

/// Without rules (`rebuild = []`: none, not even detected) the gold tree
/// reads core's stale build: the task is not certified, and says why.
#[test]
fn without_rebuild_rules_the_fix_in_core_does_not_certify() {
    let (_p, tasks) = built_with(|p| p.replace(RULE, "rebuild = []"));
    let t = &tasks["jsws-1"];
    assert_eq!(t["certified"], false, "{t:#}");
    assert!(
        t["uncertified_because"]
            .to_string()
            .contains("with the gold patch these still fail"),
        "{t:#}"
    );
}

/// A rebuild that fails in the gold tree fails the gold control: the task
/// is not certified, and its reason names the rule (the harness's
/// recipe, never an agent's fault: no session of it is graded).
#[test]
fn a_rebuild_failing_at_gold_leaves_the_task_uncertified_naming_the_rule() {
    let (p, tasks) =
        built_with(|p| p.replace("tsc -p packages/core\"", "tsc -p packages/core && exit 4\""));
    let t = &tasks["jsws-1"];
    assert_eq!(t["certified"], false, "{t:#}");
    assert!(
        t["uncertified_because"].to_string().contains(
            "with the gold patch rebuild `tsc -p packages/core && exit 4` (packages/core/**) does not build: exited with 4"
        ),
        "{t:#}"
    );
    // jsws-2 changes nothing of core: certified (`built_with`), graded.
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join("release/summary.json")).unwrap(),
    )
    .unwrap();
    assert!(
        summary["not_graded"].to_string().contains("jsws-1"),
        "{summary:#}"
    );
}

/// With no `rebuild` written, the node preset reads the rules from the
/// base commit's workspace manifest: core's `scripts.build`, run in its
/// directory, for any change under core.
#[test]
fn the_node_preset_reads_the_rules_from_the_workspace_manifest() {
    let (p, tasks) = built_with(|p| p.replace(RULE, ""));
    assert_eq!(tasks["jsws-1"]["certified"], true, "{:#}", tasks["jsws-1"]);
    let gold = p.output_record("run:jsws-1:gold:r0");
    assert_eq!(
        gold["rebuild"][0]["command"],
        "cd packages/core && PATH=\"$ASSAY_ENV/node_modules/.bin:$PATH\" sh -c 'tsc -p .'",
        "{gold:#}"
    );
    assert_eq!(strs(&gold["rebuild"][0]["paths"]), ["packages/core/**"]);
    let results = util::example::released_results(&p);
    for (session, verdict) in [
        ("alpha/jsws-1.json", "resolved"),
        ("beta/jsws-1.json", "unresolved"),
        ("gamma/jsws-1.json", "unresolved"),
        ("notes/jsws-2.json", "resolved"),
    ] {
        let row = &results[&(session.to_owned(), "exclude".to_owned())];
        assert_eq!(row["verdict"], verdict, "{session}: {row:#?}");
    }
    let stage = p.output_record("stage:notes/jsws-2.json:exclude");
    assert!(stage["rebuild"].is_null(), "{stage:#}");
}

/// A rule whose glob does not parse, or whose command is empty, is a
/// diagnostic pointing into pipeline.toml.
#[test]
fn a_bad_rebuild_rule_is_a_config_error_pointing_at_it() {
    for (rule, says) in [
        (
            "rebuild = [{ paths = \"packages/[core\", command = \"tsc\" }]",
            "the glob `packages/[core` does not parse",
        ),
        (
            "rebuild = [{ paths = [\"packages/core/**\"], command = \" \" }]",
            "`command` is empty",
        ),
    ] {
        let p = Project::new();
        std::fs::create_dir_all(p.path().join("repo")).unwrap();
        p.write(
            "pipeline.toml",
            format!(
                "[[source]]\nname = \"r\"\npath = \"repo\"\n\n[env]\npreset = \"node\"\n{rule}\n"
            ),
        );
        let run = p.run(&["build"]);
        assert_ne!(run.code, 0);
        assert!(run.stderr.contains(says), "{}", run.stderr);
        assert!(run.stderr.contains("pipeline.toml"), "{}", run.stderr);
        assert!(run.stderr.contains("this rule"), "{}", run.stderr);
    }
}
