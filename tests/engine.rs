//! The engine through the real binary: reuse, early cutoff, failure isolation,
//! crash safety under `kill -9`, cache repair, a damaged index, concurrent
//! builds, config diagnostics and the `explain` / `plan` / `gc` commands.
//!
//! Every project is a `pipeline.toml` of generic `[[step]]`s in a temp dir.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use util::{Project, XorShift, parse_events, steps};

/// Two independent branches that meet in `join`:
/// a.txt → a1 → a2 → a3 ┐
/// b.txt → b1 → b2 ─────┴→ join
const SIX_STEPS: &str = r#"
[[step]]
name = "a1"
run = "cat inputs/a.txt"
inputs = ["a.txt"]

[[step]]
name = "a2"
run = "tr a-z A-Z < deps/a1"
deps = ["a1"]

[[step]]
name = "a3"
run = "wc -c < deps/a2"
deps = ["a2"]

[[step]]
name = "b1"
run = "cat inputs/b.txt"
inputs = ["b.txt"]

[[step]]
name = "b2"
run = "rev < deps/b1"
deps = ["b1"]

[[step]]
name = "join"
run = "cat deps/a3 deps/b2"
deps = ["a3", "b2"]
"#;

fn six_steps() -> Project {
    Project::new()
        .file("a.txt", "alpha\n")
        .file("b.txt", "beta\n")
        .pipeline(SIX_STEPS)
}

#[test]
fn second_build_executes_nothing_and_an_input_change_reruns_only_its_dependents() {
    let p = six_steps();
    let first = p.build_json(&[]).code(0);
    assert_eq!(first.step().executed, 6);
    assert_eq!(first.summary.by_kind.len(), 1, "only `step` nodes");

    let second = p.build_json(&[]).code(0);
    assert_eq!(second.summary.total.executed, 0);
    assert_eq!(second.step().reused, 6);

    p.write("a.txt", "alphabet soup\n");
    let third = p.build_json(&[]).code(0);
    assert_eq!(third.step().executed, 4);
    assert_eq!(third.step().reused, 2);
    assert_eq!(
        third.names("node_finished"),
        steps(&["a1", "a2", "a3", "join"])
    );
    assert_eq!(third.names("node_reused"), steps(&["b1", "b2"]));
}

#[test]
fn early_cutoff_an_upstream_rerun_with_identical_output_leaves_dependents_cached() {
    let p = Project::new().file("a.txt", "x\ny\n").pipeline(
        r#"
[[step]]
name = "lines"
run = "wc -l < inputs/a.txt"
inputs = ["a.txt"]

[[step]]
name = "report"
run = "echo lines: $(cat deps/lines)"
deps = ["lines"]
"#,
    );
    p.build_json(&[]).code(0);
    // Same line count, different bytes: `lines` must rerun, `report` must not.
    p.write("a.txt", "p\nq\n");
    let b = p.build_json(&[]).code(0);
    assert_eq!(b.names("node_finished"), steps(&["lines"]));
    assert_eq!(b.names("node_reused"), steps(&["report"]));
}

#[test]
fn a_failing_step_skips_only_its_dependents_and_is_not_cached() {
    let p = Project::new().pipeline(
        r#"
[[step]]
name = "ok1"
run = "echo one"

[[step]]
name = "ok2"
run = "cat deps/ok1; echo two"
deps = ["ok1"]

[[step]]
name = "bad"
run = "echo oops >&2; exit 3"

[[step]]
name = "child"
run = "cat deps/bad"
deps = ["bad"]

[[step]]
name = "grandchild"
run = "cat deps/child deps/ok2"
deps = ["child", "ok2"]
"#,
    );
    let first = p.build_json(&[]).code(1);
    assert_eq!(first.names("node_finished"), steps(&["ok1", "ok2"]));
    assert_eq!(first.names("node_failed"), steps(&["bad"]));
    assert_eq!(first.names("node_skipped"), steps(&["child", "grandchild"]));
    let reason = first
        .events
        .iter()
        .find(|e| e["event"] == "node_failed")
        .unwrap()["reason"]
        .to_string();
    assert!(reason.contains("exited with 3"), "{reason}");
    let failed = first
        .events
        .iter()
        .find(|e| e["event"] == "node_failed")
        .unwrap();
    assert_eq!(
        failed["class"], "input",
        "a step's command is the maintainer's: its failure is its input's"
    );
    assert!(
        first.run.stderr.contains("error: 1 node failed: 1 input"),
        "{}",
        first.run.stderr
    );

    let second = p.build_json(&[]).code(1);
    assert_eq!(second.names("node_reused"), steps(&["ok1", "ok2"]));
    assert_eq!(
        second.names("node_started"),
        steps(&["bad"]),
        "a failure is never reused"
    );
    assert_eq!(second.names("node_failed"), steps(&["bad"]));
}

/// A pipeline of `n` steps, each sleeping 2–30 ms, step i depending on up to
/// two earlier steps; every step reads `seed.txt`, so changing it invalidates all.
fn random_dag(rng: &mut XorShift, n: usize) -> String {
    let mut toml = String::new();
    for i in 0..n {
        let mut deps = BTreeSet::new();
        if i > 0 {
            for _ in 0..rng.below(3) {
                deps.insert(rng.below(i as u64));
            }
        }
        let sleep = 2 + rng.below(29);
        let dep_files: Vec<String> = deps.iter().map(|d| format!("deps/s{d}")).collect();
        let dep_names: Vec<String> = deps.iter().map(|d| format!("\"s{d}\"")).collect();
        toml.push_str(&format!(
            "[[step]]\nname = \"s{i}\"\nrun = \"sleep 0.{sleep:03}; cat inputs/seed.txt {} | cksum\"\ninputs = [\"seed.txt\"]\ndeps = [{}]\n\n",
            dep_files.join(" "),
            dep_names.join(", ")
        ));
    }
    toml
}

#[test]
fn kill_9_at_random_instants_leaves_a_cache_that_verifies_and_resumes() {
    const NODES: usize = 40;
    const KILLS: usize = 50;
    let mut rng = XorShift::new(util::seed());
    let p = Project::new()
        .file("seed.txt", "0\n")
        .pipeline(&random_dag(&mut rng, NODES));
    // Only to spread the kill instants over a build: nothing is asserted on it.
    let started = Instant::now();
    p.build_json(&["--jobs", "2"]).code(0);
    let full = started.elapsed();
    eprintln!("a full build takes {full:?}");

    // Kills that landed mid-build with some nodes already reported: without
    // enough of them the test proves nothing (e.g. if events were not streamed).
    let mut mid_build = 0;
    for round in 1..=KILLS {
        p.write("seed.txt", format!("{round}\n"));
        let delay = Duration::from_micros(rng.below(full.as_micros() as u64));
        let mut child = p
            .command(&["build", "--json", "--jobs", "2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Read what it prints as it prints it: a killed process leaves no buffer to drain.
        let printed = Arc::new(Mutex::new(String::new()));
        let reader = {
            let printed = printed.clone();
            let stdout = child.stdout.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    let mut p = printed.lock().unwrap();
                    p.push_str(&line);
                    p.push('\n');
                }
            })
        };
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        reader.join().unwrap();
        let finished = util::names(&parse_events(&printed.lock().unwrap()), "node_finished");

        if (1..NODES).contains(&finished.len()) {
            mid_build += 1;
        }

        let verify = p.run(&["verify"]);
        assert_eq!(
            verify.code, 0,
            "round {round}: verify after kill at {delay:?} ({status}):\n{}{}",
            verify.stdout, verify.stderr
        );
        let next = p.build_json(&["--jobs", "2"]);
        assert_eq!(
            next.run.code, 0,
            "round {round}: the build after a kill at {delay:?}:\n{}",
            next.run.stderr
        );
        let reused: BTreeSet<String> = next.names("node_reused").into_iter().collect();
        for name in &finished {
            assert!(
                reused.contains(name),
                "round {round}: {name} was reported finished before the kill at {delay:?} but was not reused"
            );
        }
        assert_eq!(
            next.summary.total.executed + next.summary.total.reused,
            NODES as u64
        );
    }
    eprintln!("{mid_build} of {KILLS} kills landed after some nodes had finished");
    assert!(
        mid_build >= KILLS / 4,
        "only {mid_build} of {KILLS} kills landed mid-build"
    );
    p.run(&["verify"]).code(0);
}

#[test]
fn json_events_stream_while_the_build_runs() {
    // `slow` cannot finish before the test opens its gate, and the test opens
    // it only once it has read `quick`'s event: so that event was printed
    // while the build ran. Both waits are bounded hang detectors.
    let p = Project::new();
    let gate = p.path().join("gate");
    let slow =
        gated_step("slow", &gate).replace("done\"", "done; cat deps/quick\"\ndeps = [\"quick\"]");
    assert!(slow.ends_with("deps = [\"quick\"]\n\n"), "{slow}");
    p.write(
        "pipeline.toml",
        format!("[[step]]\nname = \"quick\"\nrun = \"echo hi\"\n\n{slow}"),
    );
    let mut child = p
        .command(&["build", "--json", "--jobs", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(child.stdout.take().unwrap());
    let mut before_gate = Vec::new();
    let quick = wait_for_line(&lines, &mut before_gate, |l| {
        l.contains("\"node_finished\"") && l.contains("step:quick")
    });
    std::fs::write(&gate, "").unwrap();
    let after_gate: Vec<String> = lines.iter().collect();
    let out = child.wait_with_output().unwrap();
    assert!(
        quick,
        "`quick`'s event was not printed while `slow` waited: {before_gate:#?}"
    );
    assert!(
        !before_gate
            .iter()
            .any(|l| l.contains("step:slow") && l.contains("node_finished")),
        "{before_gate:#?}"
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = parse_events(&after_gate.join("\n"));
    assert_eq!(util::names(&events, "node_finished"), steps(&["slow"]));
}

#[test]
fn a_flipped_byte_in_a_blob_is_repaired_by_re_executing_its_node() {
    let p = Project::new().pipeline(
        r#"
[[step]]
name = "big"
run = "seq 1 3000"

[[step]]
name = "count"
run = "wc -l < deps/big"
deps = ["big"]
"#,
    );
    let first = p.build_json(&[]).code(0);
    let output = first
        .events
        .iter()
        .find(|e| e["event"] == "node_finished" && e["name"] == "step:big")
        .unwrap()["output"]
        .as_str()
        .unwrap()
        .to_owned();
    let blob = p
        .cache()
        .join("blobs")
        .join(&output[..2])
        .join(&output[2..]);
    let mut bytes = std::fs::read(&blob).unwrap();
    assert!(bytes.len() > 4096, "the output must live in a blob");
    bytes[1234] ^= 0x01;
    std::fs::write(&blob, &bytes).unwrap();

    p.run(&["verify"]).code(4).stderr_has(&output[..16]);
    let second = p.build_json(&[]).code(0);
    assert_eq!(second.names("cache_repaired"), steps(&["big"]));
    assert_eq!(second.names("node_finished"), steps(&["big"]));
    assert_eq!(second.names("node_reused"), steps(&["count"]));
    let repaired = std::fs::read(&blob).unwrap();
    assert_eq!(blake3_hex(&repaired), output);
    p.run(&["verify"]).code(0);
}

fn blake3_hex(bytes: &[u8]) -> String {
    let out = std::process::Command::new(util::BIN)
        .arg("hash")
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(bytes)?;
            c.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn damaged_index_is_reported_not_panicked_on(mut damage: impl FnMut(&[u8]) -> Vec<u8>) {
    let p = six_steps();
    p.build_json(&[]).code(0);
    let index = p.cache().join("index.sqlite");
    let bytes = std::fs::read(&index).unwrap();
    assert!(bytes.len() > 1000);
    std::fs::write(&index, damage(&bytes)).unwrap();
    for args in [&["build"][..], &["verify"], &["plan"]] {
        p.run(args).no_panic().code(5).stderr_has("index.sqlite");
    }
}

#[test]
fn a_garbage_index_exits_5_naming_the_file() {
    let mut rng = XorShift::new(7);
    damaged_index_is_reported_not_panicked_on(|b| {
        (0..b.len()).map(|_| rng.next_u64() as u8).collect()
    });
}

#[test]
fn a_truncated_index_exits_5_naming_the_file() {
    damaged_index_is_reported_not_panicked_on(|b| b[..1000].to_vec());
}

/// A step that waits for `gate` to exist (at most 60 s, then fails).
fn gated_step(name: &str, gate: &std::path::Path) -> String {
    format!(
        "[[step]]\nname = \"{name}\"\nrun = \"i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 1200 ] && exit 9; sleep 0.05; done\"\n\n",
        gate.display()
    )
}

/// Lines of `stream`, as they come, on a channel.
fn lines_of(stream: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Reads `rx` until a line satisfies `want` (true) or nothing more comes for
/// 60 s (false, a hang detector); every line read is kept in `seen`.
fn wait_for_line(
    rx: &std::sync::mpsc::Receiver<String>,
    seen: &mut Vec<String>,
    want: impl Fn(&str) -> bool,
) -> bool {
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) {
        let hit = want(&line);
        seen.push(line);
        if hit {
            return true;
        }
    }
    false
}

#[test]
fn two_builds_at_once_on_one_cache_execute_each_node_once() {
    // The first build holds the cache while its `held` step waits for the
    // gate; the second is started only then, and the gate opens only once
    // the second has said it waits. So its waiting comes before the first
    // build's end by construction, with no clock involved.
    let p = Project::new();
    let gate = p.path().join("gate");
    let mut toml: String = (0..8)
        .map(|i| format!("[[step]]\nname = \"s{i}\"\nrun = \"echo {i}\"\n\n"))
        .collect();
    toml.push_str(&gated_step("held", &gate));
    p.write("pipeline.toml", toml);
    let spawn = || {
        p.command(&["build", "--json", "--jobs", "2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut a = spawn();
    let a_out = lines_of(a.stdout.take().unwrap());
    let mut a_seen = Vec::new();
    let holding = wait_for_line(&a_out, &mut a_seen, |l| {
        l.contains("\"node_started\"") && l.contains("step:held")
    });
    let mut b = spawn();
    let b_err = lines_of(b.stderr.take().unwrap());
    let mut b_said = Vec::new();
    let waiting = holding
        && wait_for_line(&b_err, &mut b_said, |l| {
            l.contains("waiting for another build")
        });
    std::fs::write(&gate, "").unwrap();
    a_seen.extend(a_out.iter());
    let a_done = a.wait_with_output().unwrap();
    let b_done = b.wait_with_output().unwrap();
    assert!(holding, "the first build never started `held`: {a_seen:#?}");
    assert!(
        waiting,
        "the second build did not say it waits: {b_said:#?}"
    );
    let a = util::Build::from(util::Run {
        code: a_done.status.code().unwrap_or(-1),
        signal: std::os::unix::process::ExitStatusExt::signal(&a_done.status),
        stdout: a_seen.join("\n"),
        stderr: String::from_utf8_lossy(&a_done.stderr).into_owned(),
    })
    .code(0);
    let b = util::Build::from(util::Run::from(b_done)).code(0);
    assert_eq!(a.summary.total.executed, 9, "{:?}", a.summary);
    assert_eq!(b.summary.total.executed, 0, "{:?}", b.summary);
    assert_eq!(b.summary.total.reused, 9, "{:?}", b.summary);
}

fn config_error(toml: &str) -> util::Run {
    Project::new()
        .file("a.txt", "a")
        .pipeline(toml)
        .run(&["build"])
        .no_panic()
        .code(3)
}

#[test]
fn config_unknown_key_exits_3_naming_the_key_with_its_line() {
    config_error("[[step]]\nname = \"a\"\nrun = \"true\"\ncomand = \"x\"\n")
        .stderr_has("comand")
        .stderr_has("comand = \"x\"");
}

#[test]
fn config_wrong_type_exits_3_with_a_span() {
    config_error("[[step]]\nname = \"a\"\nrun = \"true\"\ntimeout = \"ten\"\n")
        .stderr_has("invalid type")
        .stderr_has("timeout = \"ten\"");
}

#[test]
fn config_missing_input_exits_3_pointing_at_it() {
    config_error("[[step]]\nname = \"a\"\nrun = \"true\"\ninputs = [\"nope.txt\"]\n")
        .stderr_has("cannot be read")
        .stderr_has("inputs = [\"nope.txt\"]");
}

#[test]
fn config_dependency_cycle_exits_3_naming_the_steps() {
    let r = config_error(
        "[[step]]\nname = \"a\"\nrun = \"true\"\ndeps = [\"c\"]\n\n[[step]]\nname = \"b\"\nrun = \"true\"\ndeps = [\"a\"]\n\n[[step]]\nname = \"c\"\nrun = \"true\"\ndeps = [\"b\"]\n",
    )
    .stderr_has("cycle");
    for s in ["step:a", "step:b", "step:c"] {
        assert!(r.stderr.contains(s), "{s} missing from:\n{}", r.stderr);
    }
}

#[test]
fn config_dangling_dep_exits_3_naming_it() {
    config_error("[[step]]\nname = \"a\"\nrun = \"true\"\ndeps = [\"ghost\"]\n")
        .stderr_has("ghost")
        .stderr_has("name = \"a\"");
}

#[test]
fn explain_names_the_changed_param_and_plan_says_maybe_for_dependents() {
    let p = six_steps();
    p.build_json(&[]).code(0);

    p.write("b.txt", "bravo\n");
    p.run(&["plan"])
        .code(0)
        .stdout_has("run      step:b1")
        .stdout_has("maybe    step:b2")
        .stdout_has("maybe    step:join");
    let plan = p.run(&["plan", "--all"]).code(0);
    assert!(plan.stdout.contains("cached   step:a3"), "{}", plan.stdout);
    assert!(!plan.stdout.contains("step:a1  ("), "{}", plan.stdout);

    p.build_json(&[]).code(0);
    p.run(&["explain", "step:b1"])
        .code(0)
        .stdout_has("change   param `inputs`");
    p.run(&["explain", "step:b2"])
        .code(0)
        .stdout_has("change   input `step:b1` output");
    p.run(&["explain", "step:a1"])
        .code(0)
        .stdout_has("change   none");
    p.run(&["explain", "step:nope"]).code(6);
}

#[test]
fn gc_reports_bytes_then_apply_keeps_what_the_last_build_reached() {
    let p = Project::new().file("a.txt", "1\n").pipeline(
        r#"
[[step]]
name = "big"
run = "seq $(cat inputs/a.txt) 5000"
inputs = ["a.txt"]

[[step]]
name = "tail"
run = "tail -n 1 deps/big"
deps = ["big"]

[[step]]
name = "steady"
run = "seq 1 4000"
"#,
    );
    p.build_json(&[]).code(0);
    p.write("a.txt", "2\n");
    p.build_json(&[]).code(0);

    let blobs = || count_files(&p.cache().join("blobs"));
    let before = blobs();
    let dry = p.run(&["gc", "--keep", "1"]).code(0);
    let bytes: u64 = dry
        .stdout
        .split_once("directories (")
        .and_then(|(_, r)| r.split_once(" bytes"))
        .map(|(n, _)| n.parse().unwrap())
        .unwrap_or_else(|| panic!("no byte count in {}", dry.stdout));
    assert!(
        bytes > 4096,
        "the old `big` blob is garbage: {}",
        dry.stdout
    );
    assert!(
        dry.stdout
            .contains("would free 2 index rows, 2 blobs and 0 environment directories"),
        "{}",
        dry.stdout
    );
    assert_eq!(blobs(), before, "a dry run deletes nothing");

    p.run(&["gc", "--keep", "1", "--apply"])
        .code(0)
        .stdout_has("freed 2 index rows");
    assert!(blobs() < before);
    p.run(&["verify"]).code(0);
    let after = p.build_json(&[]).code(0);
    assert_eq!(after.summary.total.executed, 0);
    assert_eq!(after.step().reused, 3);
    // Older builds whose records were collected do not break later commands.
    p.run(&["gc", "--keep", "5"]).code(0);
    p.run(&["explain", "step:big"]).code(0);

    // The collected node really is gone: going back re-executes it.
    p.write("a.txt", "1\n");
    let back = p.build_json(&[]).code(0);
    assert_eq!(back.names("node_finished"), steps(&["big", "tail"]));
}

fn count_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            if e.path().is_dir() {
                count_files(&e.path())
            } else {
                1
            }
        })
        .sum()
}

#[test]
fn reexecute_catches_a_forged_but_self_consistent_cache_entry() {
    let p = Project::new().file("a.txt", "one two three\n").pipeline(
        r#"
[[step]]
name = "words"
run = "wc -w < inputs/a.txt"
inputs = ["a.txt"]

[[step]]
name = "double"
run = "echo $(( $(cat deps/words) * 2 ))"
deps = ["words"]
"#,
    );
    p.build_json(&[]).code(0);
    p.run(&["verify", "--reexecute", "step"])
        .code(0)
        .stdout_has("re-executed 2 nodes of kinds step: 2 identical, 0 differ");

    // Forge `words`: new bytes with a matching digest, so the cache's own
    // integrity check has nothing to object to.
    let conn = rusqlite::Connection::open(p.cache().join("index.sqlite")).unwrap();
    let forged = b"4\n".to_vec();
    let digest = blake3::hash(&forged).as_bytes().to_vec();
    let changed = conn
        .execute(
            "UPDATE nodes SET inline = ?1, output = ?2 WHERE name = 'step:words'",
            rusqlite::params![forged, digest],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    p.run(&["verify", "--cache-only"]).code(0);
    let out = p
        .run(&["verify", "--cache-only", "--reexecute", "step"])
        .code(4);
    assert!(out.stderr.contains("DIFFERS  step:words"), "{}", out.stderr);
    // `double` hangs off the forged output, so its key has no row: not checked.
    assert!(out.stdout.contains("1 nodes not cached"), "{}", out.stdout);
}
