//! A Rust crate as a maintainer meets one, through the real binary: a
//! repository of merged pull requests built here (a crates.io dependency,
//! doctests above and below the fixed function, unit tests and integration
//! tests under `tests/`), screened and graded with `[env] preset =
//! "cargo"` alone. Needs cargo on `PATH` (rustup's proxy on this machine:
//! the sandbox must reach the toolchain through it) and crates.io, which the
//! preset's setup vendors from.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeMap;

use serde_json::Value;
use util::{Project, Repo};

const MANIFEST: &str = r#"[package]
name = "tally"
version = "0.1.0"
edition = "2021"

[dependencies]
cfg-if = "1"
"#;

/// The base: `clamp` always answers `max`. Its doctest (above the fix's
/// lines) passes anyway; `add`'s two doctests sit below, so the fix moves
/// them.
const LIB_BASE: &str = r#"//! Tally: small counting helpers.
//!
//! ```
//! assert_eq!(tally::add(1, 1), 2);
//! ```

cfg_if::cfg_if! {
    if #[cfg(unix)] {
        /// Where it was built.
        pub const OS: &str = "unix";
    } else {
        /// Where it was built.
        pub const OS: &str = "other";
    }
}

/// Clamps `x` to at most `max`.
///
/// ```
/// assert_eq!(tally::clamp(20, 10), 10);
/// ```
pub fn clamp(x: u32, max: u32) -> u32 {
    let _ = x;
    max
}

/// Adds two numbers.
///
/// ```
/// assert_eq!(tally::add(2, 3), 5);
/// ```
///
/// ```
/// assert_eq!(tally::add(0, 0), 0);
/// ```
pub fn add(a: u32, b: u32) -> u32 {
    a + b
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(2, 2), 4);
    }
}
"#;

const FIXED_CLAMP: &str = "pub fn clamp(x: u32, max: u32) -> u32 {\n    if x > max {\n        max\n    } else {\n        x\n    }\n}\n";
const BUGGY_CLAMP: &str = "pub fn clamp(x: u32, max: u32) -> u32 {\n    let _ = x;\n    max\n}\n";

const IT_BASE: &str = "#[test]\nfn it_adds() {\n    assert_eq!(tally::add(190, 2), 192);\n}\n";
/// `it_clamps` expects a value none of its inputs is (a clamp returns
/// one of them: a window around it would name its original), so its
/// graded runs carry a window (issue 47).
const IT_PR: &str = "#[test]\nfn it_adds() {\n    assert_eq!(tally::add(190, 2), 192);\n}\n\n#[test]\nfn it_clamps() {\n    assert_eq!(tally::clamp(3, 10), 3);\n    assert_eq!(tally::clamp(192, 10), 10);\n    assert_eq!(tally::clamp(250, 10) * 3 + 1, 31);\n}\n";

fn lib_with(clamp: &str) -> String {
    LIB_BASE.replace(BUGGY_CLAMP, clamp)
}

const PIPELINE: &str = r#"cache = "cache"
release = "release"
statements = "statements"
sessions = "sessions"

[[source]]
name = "tally"
path = "repo"
branch = "main"

[env]
preset = "cargo"

[screen]
repeats = 1

[grade]
reruns = 1
"#;

/// The crate with one merged PR fixing `clamp`, its statement, and three
/// sessions: the fix with a comment line on top of the file (every doctest
/// moves by a line), a wrong fix, and a right fix that breaks `add`.
fn project() -> Project {
    let cargo = std::process::Command::new("cargo")
        .arg("--version")
        .output();
    assert!(
        cargo.as_ref().is_ok_and(|o| o.status.success()),
        "this test needs cargo on PATH: {cargo:?}"
    );
    let project = Project::new().pipeline(PIPELINE);
    let mut repo = Repo::new(&project, "repo");
    repo.put("Cargo.toml", MANIFEST)
        .put("src/lib.rs", LIB_BASE)
        .put("tests/it.rs", IT_BASE)
        .put(".gitignore", "/target\n");
    repo.commit("tally 0.1.0");
    let base = repo.head();
    repo.pr(
        1,
        "Fix clamp below the maximum",
        &[
            ("src/lib.rs", &lib_with(FIXED_CLAMP)),
            ("tests/it.rs", IT_PR),
        ],
    );
    project.write(
        "statements/tally-1.md",
        "`tally::clamp(x, max)` returns `max` even when `x` is smaller. It should return `x` then.\n",
    );
    let checkout = repo.checkout(&project, "work");
    let sessions = [
        (
            "shift",
            format!(
                "// A comment line: every doctest below moves.\n{}",
                lib_with(FIXED_CLAMP)
            ),
        ),
        (
            "wrong",
            lib_with(
                "pub fn clamp(x: u32, max: u32) -> u32 {\n    if x > max {\n        max\n    } else {\n        x + 1\n    }\n}\n",
            ),
        ),
        (
            "breaks-add",
            lib_with(FIXED_CLAMP).replace("    a + b\n", "    a + b + 1\n"),
        ),
    ];
    for (agent, lib) in sessions {
        let patch = checkout.diff(&base, &[], &[("src/lib.rs", Some(&lib))]);
        let session = serde_json::json!({
            "task": "tally-1", "agent": agent, "model": "m", "patch": patch,
        });
        project.write(
            &format!("sessions/{agent}/tally-1.json"),
            session.to_string(),
        );
    }
    project
}

fn read(project: &Project, rel: &str) -> String {
    std::fs::read_to_string(project.path().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn tasks(project: &Project, file: &str) -> BTreeMap<String, Value> {
    read(project, file)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["instance_id"].as_str().unwrap().to_owned(), v)
        })
        .collect()
}

/// Rows of results.csv by agent.
fn results(project: &Project, release: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    util::csv_records(&read(project, &format!("{release}/results.csv")))
        .into_iter()
        .map(|r| (r["agent"].clone(), r))
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_crate_screened_and_graded_with_the_cargo_preset() {
    let project = project();
    let b = project.build_json(&[]);
    assert_eq!(
        b.run.code, 0,
        "build failed\n--- stderr\n{}\n--- summary\n{:?}",
        b.run.stderr, b.summary
    );
    let t = tasks(&project, "release/tasks.jsonl");
    let task = t.get("tally-1").unwrap_or_else(|| {
        panic!(
            "tally-1 is not certified: {}",
            read(&project, "release/tasks.uncertified.jsonl")
        )
    });
    // The doctests the fix moved keep their ids; no number of the test
    // patch (192) made anything FAIL_TO_PASS.
    assert_eq!(strings(&task["FAIL_TO_PASS"]), ["it_clamps"], "{task:#}");
    let p2p = strings(&task["PASS_TO_PASS"]);
    for id in [
        "it_adds",
        "tests::adds",
        "src/lib.rs - (docs)",
        "src/lib.rs - clamp",
        "src/lib.rs - add",
        "src/lib.rs - add #2",
    ] {
        assert!(p2p.iter().any(|t| t == id), "{id} not in {p2p:?}");
    }
    assert!(
        !task.to_string().contains("(line "),
        "a test id with a line: {task:#}"
    );
    // Its graded runs carry canaries made of its own tests: mutants of
    // `it_clamps`, certified to fail at gold.
    assert!(task["weakly_checked"].is_null(), "{task:#}");
    assert!(
        task["canaries"]["fail_to_pass_mutants"].as_u64() >= Some(15),
        "{task:#}"
    );

    let r = results(&project, "release");
    let verdict = |agent: &str| (r[agent]["verdict"].as_str(), r[agent]["fault"].as_str());
    // Every doctest moved by a line: still resolved.
    assert_eq!(verdict("shift"), ("resolved", "none"), "{:?}", r["shift"]);
    assert_eq!(
        verdict("wrong"),
        ("unresolved", "agent"),
        "{:?}",
        r["wrong"]
    );
    assert_eq!(r["wrong"]["failing"], "it_clamps");
    assert_eq!(r["wrong"]["not_run"], "");
    // --no-fail-fast: every test binary ran; the broken `add` fails its
    // unit test, integration test and doctests, and nothing is "not run".
    assert_eq!(verdict("breaks-add"), ("unresolved", "agent"));
    assert_eq!(
        r["breaks-add"]["failing"],
        "it_adds;src/lib.rs - (docs);src/lib.rs - add;src/lib.rs - add #2;tests::adds"
    );
    assert_eq!(r["breaks-add"]["not_run"], "");

    // The same crate graded with plain `cargo test` (it stops at the first
    // failing test binary): the tests after the unit tests did not run,
    // and the grade says so apart from the one that failed.
    let plain = PIPELINE
        .replace("release = \"release\"", "release = \"release-plain\"")
        .replace(
            "preset = \"cargo\"",
            "preset = \"cargo\"\ntest_command = \"CARGO_INCREMENTAL=0 cargo test --offline --config \\\"$ASSAY_ENV/cargo-config.toml\\\"\"",
        );
    project.write("plain.toml", plain);
    let b = project.build_json(&["-p", "plain.toml"]);
    assert_eq!(b.run.code, 0, "{}", b.run.stderr);
    let r = results(&project, "release-plain");
    let broken = &r["breaks-add"];
    assert_eq!(broken["verdict"], "unresolved");
    let not_run: Vec<&str> = broken["not_run"].split(';').collect();
    for id in [
        "it_adds",
        "it_clamps",
        "src/lib.rs - add",
        "src/lib.rs - clamp",
    ] {
        assert!(not_run.contains(&id), "{id} not in {not_run:?}");
    }
    assert!(!not_run.contains(&"tests::adds"), "{not_run:?}");
    let grade = project.output_record("grade:breaks-add/tally-1.json:exclude");
    let detail = grade["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("1 tests still fail after 1 reruns; ")
            && detail.contains(&format!("{} tests did not run", not_run.len())),
        "{detail}"
    );
}

/// A toolchain the environment cannot reach: the setup's command is not
/// found. Every task is uncertified with the shell's own message, and the
/// build exits 8 saying so.
#[test]
fn a_toolchain_that_is_not_there_fails_the_build_with_the_shells_message() {
    let project = project();
    let run = util::Run::from(
        project
            .command(&["build"])
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap(),
    );
    run.environment_broken("cargo: not found");
    let t = tasks(&project, "release/tasks.uncertified.jsonl");
    let why = strings(&t["tally-1"]["uncertified_because"]).join(" | ");
    assert!(
        why.starts_with("environment_broken: ")
            && why.contains("the environment's setup failed: `cargo vendor")
            && why.contains("exited with 127")
            && why.contains("cargo: not found"),
        "{why}"
    );
}

/// Issue 34's Rust attacks run against a crate whose tests are in-crate
/// unit tests (`src/tests/mod.rs`, a test file): `halve` is wrong at base,
/// the merged PR fixes it and adds `halves`, whose 45 gets a canary window
/// (a value under 15 of an unsigned type gets one a sixteenth of the
/// time at best: docs/security.md, "Windows that give nothing away").
const ABACUS_MANIFEST: &str =
    "[package]\nname = \"abacus\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
const ABACUS_LIB: &str = "//! Abacus.\n\npub fn double(x: u32) -> u32 {\n    x + x\n}\n\npub fn halve(x: u32) -> u32 {\n    x\n}\n\n#[cfg(test)]\nmod tests;\n";
const ABACUS_TESTS: &str =
    "use super::*;\n\n#[test]\nfn doubles() {\n    assert_eq!(double(2), 4);\n}\n";

/// Attack: a `#[macro_use]` module whose `assert_eq!` is real only for
/// the canaries' shape (`literal + literal, literal`) and a no-op
/// otherwise. It shadows std's in every module declared after it.
const SHIM: &str = r#"macro_rules! assert_eq {
    ($a:literal + $b:literal, $c:literal) => {
        ::core::assert_eq!($a + $b, $c)
    };
    ($($t:tt)*) => {};
}
"#;

/// Attack: a constructor in `.init_array` forks before `main`; the child
/// runs the tests with its stdout on a pipe, the parent relays it with
/// every `FAILED` turned into `ok` (and the counts to match), except the
/// canaries that must fail, which it finds in the crate's sources.
const RELAY: &str = r#"use std::io::{Read, Write};
use std::os::fd::FromRawFd;

extern "C" {
    fn fork() -> i32;
    fn pipe(fds: *mut i32) -> i32;
    fn dup2(old: i32, new: i32) -> i32;
    fn close(fd: i32) -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn _exit(code: i32) -> !;
}

#[used]
#[link_section = ".init_array"]
static RELAY: extern "C" fn() = relay;

fn must_fail() -> Vec<String> {
    let mut keep = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from("src")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let src = std::fs::read_to_string(&p).unwrap_or_default();
            for part in src.split("fn ").skip(1) {
                let name: String = part
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let body = part.splitn(2, '{').nth(1).unwrap_or("").trim_start();
                if let Some(args) = body.strip_prefix("assert_eq!(") {
                    let args = args.split(')').next().unwrap_or("");
                    let n: Vec<i64> = args
                        .split(|c| c == '+' || c == ',')
                        .filter_map(|s| s.trim().parse().ok())
                        .collect();
                    if n.len() == 3 && n[0] + n[1] != n[2] {
                        keep.push(name);
                    }
                }
            }
        }
    }
    keep
}

extern "C" fn relay() {
    unsafe {
        let mut fds = [0i32; 2];
        if pipe(fds.as_mut_ptr()) != 0 {
            return;
        }
        let pid = fork();
        if pid == 0 {
            dup2(fds[1], 1);
            close(fds[0]);
            close(fds[1]);
            return;
        }
        close(fds[1]);
        let mut out = Vec::new();
        let _ = std::fs::File::from_raw_fd(fds[0]).read_to_end(&mut out);
        let mut status = 0;
        waitpid(pid, &mut status, 0);
        let keep = must_fail();
        let mut fixed = 0usize;
        let mut text = String::new();
        for line in String::from_utf8_lossy(&out).split_inclusive('\n') {
            if line.starts_with("running ") {
                fixed = 0;
            }
            if let Some(name) = line
                .strip_prefix("test ")
                .and_then(|l| l.strip_suffix(" ... FAILED\n"))
            {
                let short = name.rsplit("::").next().unwrap_or(name);
                if !keep.iter().any(|k| k == short) {
                    text.push_str(&format!("test {name} ... ok\n"));
                    fixed += 1;
                    continue;
                }
            }
            if let Some(rest) = line.strip_prefix("test result: FAILED. ") {
                let n: Vec<usize> = rest
                    .split(';')
                    .filter_map(|s| s.split_whitespace().next()?.parse().ok())
                    .collect();
                if n.len() >= 2 {
                    let failed = n[1] - fixed;
                    let word = if failed == 0 { "ok" } else { "FAILED" };
                    let tail = rest.splitn(3, ';').nth(2).unwrap_or("\n");
                    text.push_str(&format!(
                        "test result: {word}. {} passed; {failed} failed;{tail}",
                        n[0] + fixed
                    ));
                    continue;
                }
            }
            text.push_str(line);
        }
        let mut stdout = std::fs::File::from_raw_fd(1);
        let _ = stdout.write_all(text.as_bytes());
        std::mem::forget(stdout);
        _exit((status >> 8) & 0xff);
    }
}
"#;

/// Both attacks fix nothing; the static flags make them `unresolved`/agent
/// and name their rules. Allowed for the task (`[[grade.allow_tamper]]`),
/// the flags are listed with the reason and not in effect: with the shaped
/// canaries alone both come out `resolved` (the shaped canaries honest),
/// and with the canaries made of the task's own tests both are caught as
/// forged (issue 34): each defence alone holds.
#[test]
fn rust_attacks_on_the_runner_are_static_tamper_flags() {
    let cargo = std::process::Command::new("cargo")
        .arg("--version")
        .output();
    assert!(
        cargo.as_ref().is_ok_and(|o| o.status.success()),
        "this test needs cargo on PATH: {cargo:?}"
    );
    let pipeline = PIPELINE.replace("name = \"tally\"", "name = \"abacus\"");
    let project = Project::new().pipeline(&pipeline);
    let mut repo = Repo::new(&project, "repo");
    repo.put("Cargo.toml", ABACUS_MANIFEST)
        .put("src/lib.rs", ABACUS_LIB)
        .put("src/tests/mod.rs", ABACUS_TESTS)
        .put(".gitignore", "/target\n");
    repo.commit("abacus 0.1.0");
    let base = repo.head();
    repo.pr(
        1,
        "Fix halve",
        &[
            (
                "src/lib.rs",
                &ABACUS_LIB.replace("    x\n}", "    x / 2\n}"),
            ),
            (
                "src/tests/mod.rs",
                &format!(
                    "{ABACUS_TESTS}\n#[test]\nfn halves() {{\n    assert_eq!(halve(90), 45);\n}}\n"
                ),
            ),
        ],
    );
    project.write(
        "statements/abacus-1.md",
        "`abacus::halve(90)` is 90; it should be 45.\n",
    );
    let checkout = repo.checkout(&project, "work");
    let with_mod = |m: &str| ABACUS_LIB.replace("//! Abacus.\n", &format!("//! Abacus.\n\n{m}\n"));
    let sessions = [
        (
            "shim",
            with_mod("#[macro_use]\nmod shim;"),
            "src/shim.rs",
            SHIM,
        ),
        ("relay", with_mod("mod relay;"), "src/relay.rs", RELAY),
    ];
    for (agent, lib, file, text) in sessions {
        let patch = checkout.diff(
            &base,
            &[],
            &[("src/lib.rs", Some(&lib)), (file, Some(text))],
        );
        let session = serde_json::json!({
            "task": "abacus-1", "agent": agent, "model": "m", "patch": patch,
        });
        project.write(
            &format!("sessions/{agent}/abacus-1.json"),
            session.to_string(),
        );
    }
    let allow = |rule: &str| {
        format!(
            "\n[[grade.allow_tamper]]\ntask = \"abacus-*\"\nrule = \"{rule}\"\nreason = \"attack test: shows the attack beats the rest\"\n"
        )
    };
    let allowed =
        allow("rust-macro-shadowing") + &allow("rust-constructor") + &allow("rust-fd-rewrite");
    for (file, release) in [
        ("allowed.toml", "release-allowed"),
        ("allowed-own.toml", "release-own"),
    ] {
        project.write(
            file,
            // The shaped build gets a cache of its own: runs are reused
            // by key, and the key does not name the canaries' kind.
            pipeline
                .replace("release = \"release\"", &format!("release = \"{release}\""))
                .replace("cache = \"cache\"", &format!("cache = \"cache-{release}\""))
                + &allowed,
        );
    }
    // Every defence; the flags allowed, with the shaped canaries alone
    // (the attacks were written against those); the flags allowed, with
    // the canaries made of the task's own tests (docs/security.md).
    for (file, release, shaped) in [
        ("pipeline.toml", "release", false),
        ("allowed.toml", "release-allowed", true),
        ("allowed-own.toml", "release-own", false),
    ] {
        let mut cmd = project.command(&["build", "--json", "-p", file]);
        if shaped {
            cmd.env("ASSAY_CANARIES", "shaped");
        } else if release == "release-own" {
            // The canaries made of the task's own tests, alone: `halves`'s
            // value is sealed otherwise, and a sealed site gets no window.
            cmd.env("ASSAY_SEALS", "off");
        }
        let b = util::Build::from(util::Run::from(cmd.output().unwrap()));
        assert_eq!(b.run.code, 0, "{file}: {}", b.run.stderr);
        let t = tasks(&project, &format!("{release}/tasks.jsonl"));
        assert_eq!(strings(&t["abacus-1"]["FAIL_TO_PASS"]), ["tests::halves"]);
        let r = results(&project, release);
        for (agent, rule) in [
            ("shim", "rust-macro-shadowing"),
            ("relay", "rust-constructor"),
        ] {
            let row = &r[agent];
            let grade = project.show_json_in(file, &row["grade_digest"]);
            let tamper = grade["tamper"].to_string();
            assert!(
                tamper.contains(&format!("static flag {rule}: src/")),
                "{release} {agent}: {grade:#}"
            );
            let verdict = (row["verdict"].as_str(), row["fault"].as_str());
            let detail = grade["detail"].as_str().unwrap();
            match release {
                "release" => {
                    assert_eq!(verdict, ("unresolved", "agent"), "{agent}: {grade:#}");
                    // A sealed test the attack passed without its value
                    // (the seals' catch) or the flag in effect.
                    let sealed = grade["said"].to_string().contains("sealed assertion");
                    assert!(
                        detail.starts_with("tamper suspect, never scored resolved: ")
                            || detail.starts_with("report forged: ")
                            || sealed,
                        "{agent}: {grade:#}"
                    );
                }
                "release-allowed" => {
                    // Only the flag stands between the attack and a pass:
                    // the shaped canaries that must fail still fail.
                    assert_eq!(verdict, ("resolved", "none"), "{agent} allowed: {grade:#}");
                    for t in strings(&grade["tamper"]) {
                        assert!(
                            t.ends_with("(allowed: attack test: shows the attack beats the rest)"),
                            "{t}"
                        );
                    }
                }
                _ => {
                    // The canaries made of the task's own tests catch it
                    // without the flag: a mutant of `halves` passed.
                    assert_eq!(verdict, ("unresolved", "agent"), "{agent} own: {grade:#}");
                    assert!(tamper.contains("report forged"), "{agent} own: {grade:#}");
                }
            }
        }
    }
}

/// Issue 47: `clamp` is `#[track_caller]`: it finds the test that called
/// it with `Location::caller()`, reads that line of the test file and
/// returns the integer its `assert_eq!` ends with. Nothing is fixed.
/// Harmless: it only reads files.
const TRACK_CALLER_CLAMP: &str = "#[track_caller]\npub fn clamp(x: u32, max: u32) -> u32 {\n    let at = std::panic::Location::caller();\n    let src = std::fs::read_to_string(at.file()).unwrap_or_default();\n    let line = src.lines().nth(at.line() as usize - 1).unwrap_or_default();\n    // `clamp(a, b), N);`: the literal right after the call.\n    let after = line.split_once(\"clamp(\").and_then(|(_, r)| r.split_once(\"),\")).map(|(_, r)| r);\n    let value = after.and_then(|r| r.trim().trim_end_matches(';').trim_end_matches(')').trim().parse::<u32>().ok());\n    if let Some(v) = value {\n        return v;\n    }\n    let _ = x;\n    max\n}\n";

/// Issue 47: a Rust call-site reader passes when nothing but the shaped
/// canaries stands in its way and seals are off (the attack is real);
/// sealed, the expected value is not in the tree and it is `unresolved`,
/// the agent's.
#[test]
fn a_rust_track_caller_reader_finds_no_expected_value_in_a_sealed_tree() {
    let build = |vars: &[(&str, &str)]| {
        let project = project();
        let work = project.path().join("work");
        let base = String::from_utf8(
            std::process::Command::new("git")
                .args(["rev-list", "--max-parents=0", "HEAD"])
                .current_dir(&work)
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        let checkout = util::Checkout { dir: work.clone() };
        let patch = checkout.diff(
            base.trim(),
            &[],
            &[("src/lib.rs", Some(&lib_with(TRACK_CALLER_CLAMP)))],
        );
        let session = serde_json::json!({
            "task": "tally-1", "agent": "reader", "model": "m", "patch": patch,
        });
        project.write("sessions/reader/tally-1.json", session.to_string());
        let mut cmd = project.command(&["build", "--json"]);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let b = util::Build::from(util::Run::from(cmd.output().unwrap()));
        assert_eq!(b.run.code, 0, "{vars:?}: {}", b.run.stderr);
        let mut rows = results(&project, "release");
        (
            rows.remove("reader").unwrap(),
            tasks(&project, "release/tasks.jsonl"),
        )
    };
    let (row, _) = build(&[("ASSAY_SEALS", "off"), ("ASSAY_CANARIES", "shaped")]);
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("resolved", "none"),
        "unsealed: {row:#?}"
    );
    let (row, tasks) = build(&[("ASSAY_CANARIES", "sealed")]);
    let task = &tasks["tally-1"];
    assert!(
        task["canaries"]["fail_to_pass_seals"].as_u64() >= Some(2),
        "{task:#}"
    );
    // 3 and 10 sealed at least: 1/16 and 1/64 by the prior.
    assert!(
        task["forger_odds_log2"]
            .as_f64()
            .is_some_and(|b| b <= -10.0),
        "{task:#}"
    );
    assert_eq!(
        (row["verdict"].as_str(), row["fault"].as_str()),
        ("unresolved", "agent"),
        "sealed: {row:#?}"
    );
}
