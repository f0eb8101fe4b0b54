//! `assay export` and `assay verify --bundle`: a graded release's closure,
//! checked in a directory that holds nothing else (no cache, no source
//! repository, no pipeline.toml); a corpus of tampered bundles, each caught
//! and named; one number checked alone; two exports byte-identical.

#![allow(clippy::unwrap_used)]

mod util;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;
use util::fixture::*;
use util::{BIN, Run};

/// A graded release: two agents, three sessions over both tasks.
fn graded() -> Fixture {
    let f = Fixture::new();
    f.default_pipeline();
    f.session("alpha/fix1.json", "p-1", &f.fix1());
    f.session("alpha/fix2.json", "p-2", &f.fix2());
    let wrong = f.diff2(&[("pkg/ops.py", Some(OPS_BASE))]);
    f.session("beta/wrong2.json", "p-2", &wrong);
    f.build_ok();
    f
}

/// The release built once and exported twice, shared by the tests that only read it.
struct Shared {
    f: Fixture,
    bundle: PathBuf,
    again: PathBuf,
    _dir: tempfile::TempDir,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let f = graded();
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("one");
        let again = dir.path().join("two");
        export(&f, &bundle, &[]).code(0);
        export(&f, &again, &[]).code(0);
        Shared {
            f,
            bundle,
            again,
            _dir: dir,
        }
    })
}

fn export(f: &Fixture, to: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["export", "--to", to.to_str().unwrap()];
    args.extend_from_slice(extra);
    f.project.run(&args).no_panic()
}

/// `assay ARGS` run in `cwd`.
fn assay_in(cwd: &Path, args: &[&str]) -> Run {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    Run::from(out).no_panic()
}

/// `assay verify --bundle DIR ARGS`, run from an empty directory.
fn verify(bundle: &Path, extra: &[&str]) -> Run {
    let cwd = tempfile::tempdir().unwrap();
    let mut args = vec!["verify"];
    args.extend_from_slice(extra);
    args.extend(["--bundle", bundle.to_str().unwrap()]);
    assay_in(cwd.path(), &args)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Relative path -> bytes of every file under `dir`.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.path().is_dir() {
                walk(root, &e.path(), out);
            } else {
                let rel = e.path().strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// A copy of the shared bundle to tamper with.
struct Copy {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Copy {
    fn new() -> Copy {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bundle");
        copy_tree(&shared().bundle, &path);
        Copy { _dir: dir, path }
    }

    fn nodes(&self) -> Vec<Value> {
        std::fs::read_to_string(self.path.join("nodes.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn node(&self, name: &str) -> Value {
        self.nodes()
            .into_iter()
            .find(|n| n["name"] == name)
            .unwrap_or_else(|| panic!("no node {name}"))
    }

    fn blob(&self, hex: &str) -> PathBuf {
        self.path.join("blobs").join(&hex[..2]).join(&hex[2..])
    }

    fn output(&self, name: &str) -> Value {
        let hex = self.node(name)["output"].as_str().unwrap().to_owned();
        serde_json::from_slice(&std::fs::read(self.blob(&hex)).unwrap()).unwrap()
    }

    fn flip(&self, hex: &str) {
        let path = self.blob(hex);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x01;
        std::fs::write(&path, bytes).unwrap();
    }

    /// A consistent forgery of one node's output: the new bytes stored under
    /// their own digest, and nodes.jsonl updated to name it.
    fn forge_output(&self, name: &str, value: &Value) {
        let bytes = serde_json::to_vec(value).unwrap();
        let hex = blake3::hash(&bytes).to_hex().to_string();
        let path = self.blob(&hex);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let lines: Vec<String> = self
            .nodes()
            .into_iter()
            .map(|mut n| {
                if n["name"] == name {
                    n["output"] = Value::from(hex.clone());
                }
                serde_json::to_string(&n).unwrap()
            })
            .collect();
        std::fs::write(self.path.join("nodes.jsonl"), lines.join("\n") + "\n").unwrap();
    }

    fn release_file(&self, name: &str) -> PathBuf {
        self.path.join("release").join(name)
    }

    fn names_of_kind(&self, kind: &str) -> Vec<String> {
        self.nodes()
            .iter()
            .filter(|n| n["kind"] == kind)
            .map(|n| n["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// Verify must fail with exit 4, and its first MISMATCH line must contain every needle.
fn caught(c: &Copy, needles: &[&str]) -> String {
    let run = verify(&c.path, &[]);
    assert_eq!(run.code, 4, "not caught:\n{}\n{}", run.stdout, run.stderr);
    let first = run
        .stderr
        .lines()
        .find(|l| l.starts_with("MISMATCH"))
        .unwrap_or_default()
        .to_owned();
    for n in needles {
        assert!(
            run.stderr.contains(n),
            "{n:?} not named in:\n{}",
            run.stderr
        );
    }
    first
}

#[test]
fn an_exported_bundle_verifies_alone_after_the_project_is_deleted() {
    let f = graded();
    let away = tempfile::tempdir().unwrap();
    let bundle = away.path().join("bundle");
    {
        let staging = tempfile::tempdir().unwrap();
        let first = staging.path().join("b");
        let out = export(&f, &first, &[]).code(0);
        assert!(out.stdout.contains("exported release"), "{}", out.stdout);
        copy_tree(&first, &bundle);
    }
    let project = f.path().to_owned();
    drop(f);
    assert!(!project.exists(), "the project dir is gone");
    let run = verify(&bundle, &[]).code(0);
    assert!(
        run.stdout.starts_with("bundle ok: release "),
        "{}",
        run.stdout
    );
    // It says what it checked.
    for what in ["nodes", "blobs", "release files", "numbers"] {
        assert!(run.stdout.contains(what), "{}", run.stdout);
    }
    let head: Value =
        serde_json::from_slice(&std::fs::read(bundle.join("bundle.json")).unwrap()).unwrap();
    let digest = head["release_digest"].as_str().unwrap();
    verify(&bundle, &["--digest", digest]).code(0);
    verify(&bundle, &["--digest", &"0".repeat(64)])
        .code(4)
        .stderr_has("release digest");
}

#[test]
fn two_exports_of_one_release_are_byte_identical() {
    let s = shared();
    let (a, b) = (tree(&s.bundle), tree(&s.again));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert!(b[name] == *bytes, "{name} differs between two exports");
    }
    // Another machine: the cache copied elsewhere, exported from a
    // directory without the project (no pipeline.toml, no sources).
    let elsewhere = tempfile::tempdir().unwrap();
    let cache = elsewhere.path().join("copied-cache");
    copy_tree(&s.f.project.cache(), &cache);
    let third = elsewhere.path().join("three");
    assay_in(
        elsewhere.path(),
        &[
            "export",
            "--cache",
            cache.to_str().unwrap(),
            "--to",
            third.to_str().unwrap(),
        ],
    )
    .code(0);
    assert!(
        tree(&third) == a,
        "an export from a copy of the cache differs"
    );
    // And the release files are those of the project's release directory.
    for name in [
        "manifest.json",
        "summary.json",
        "results.csv",
        "tasks.jsonl",
    ] {
        assert_eq!(
            a[&format!("release/{name}")],
            std::fs::read(s.f.path().join("release").join(name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn the_statement_names_every_release_file_by_sha256() {
    let s = shared();
    let v: Value =
        serde_json::from_slice(&std::fs::read(s.bundle.join("provenance.intoto.json")).unwrap())
            .unwrap();
    assert_eq!(v["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(v["predicateType"], "https://slsa.dev/provenance/v1");
    let subjects = v["subject"].as_array().unwrap();
    assert!(subjects.len() >= 5, "{v:#}");
    for subject in subjects {
        let name = subject["name"].as_str().unwrap();
        let out = Command::new("sha256sum")
            .arg(s.bundle.join(name))
            .output()
            .unwrap();
        let sum = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            subject["digest"]["sha256"].as_str().unwrap(),
            sum.split_whitespace().next().unwrap(),
            "{name}"
        );
    }
    let head: Value =
        serde_json::from_slice(&std::fs::read(s.bundle.join("bundle.json")).unwrap()).unwrap();
    let p = &head["provenance"];
    assert_eq!(p["release_digest"], head["release_digest"]);
    assert!(p["assay"]["version"].is_string(), "{p:#}");
    assert!(p["assay"]["commit"].is_string(), "{p:#}");
    assert!(!p["environments"].as_object().unwrap().is_empty(), "{p:#}");
}

#[test]
fn a_single_number_verifies_alone() {
    let s = shared();
    let path = "summary.agents[alpha/model-x].resolved_rate";
    let run = verify(&s.bundle, &[path]).code(0);
    assert!(
        run.stdout.contains(&format!("number {path}")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(" 1 numbers"), "{}", run.stdout);
    // Fewer nodes than the whole bundle: only what the number rests on.
    let nodes = |out: &str| -> usize {
        let at = out.find("checked ").unwrap() + "checked ".len();
        out[at..].split(' ').next().unwrap().parse().unwrap()
    };
    let all = verify(&s.bundle, &[]).code(0);
    assert!(
        nodes(&run.stdout) < nodes(&all.stdout),
        "{}{}",
        run.stdout,
        all.stdout
    );
    verify(&s.bundle, &["summary.agents[nobody/none].resolved_rate"])
        .code(6)
        .stderr_has("no published number");
    // Not a bundle at all: not found, not a mismatch.
    let empty = tempfile::tempdir().unwrap();
    verify(empty.path(), &[]).code(6).stderr_has("not a bundle");
    // What the number rests on, with what each grade says.
    assert!(
        run.stdout
            .contains("  rests on grade:alpha/fix1.json:exclude resolved"),
        "{}",
        run.stdout
    );

    // A grade it rests on, forged consistently, is caught from the number.
    let c = Copy::new();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(c.release_file("manifest.json")).unwrap()).unwrap();
    let entry = manifest["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["path"] == path)
        .unwrap()
        .clone();
    let grade_key = entry["grades"][0].as_str().unwrap();
    let grade = c
        .nodes()
        .into_iter()
        .find(|n| n["key"] == grade_key)
        .unwrap();
    let name = grade["name"].as_str().unwrap().to_owned();
    let mut record = c.output(&name);
    record["verdict"] = Value::from("unresolved");
    c.forge_output(&name, &record);
    let run = verify(&c.path, &[path]).code(4);
    assert!(run.stderr.contains(&name), "{}", run.stderr);
}

#[test]
fn a_flipped_byte_in_any_kind_of_blob_is_caught_and_named() {
    let base = Copy::new();
    let mut kinds: BTreeMap<String, String> = BTreeMap::new();
    for n in base.nodes() {
        kinds
            .entry(n["kind"].as_str().unwrap().to_owned())
            .or_insert_with(|| n["name"].as_str().unwrap().to_owned());
    }
    assert!(
        ["task", "run", "grade", "session", "release"]
            .iter()
            .all(|k| kinds.contains_key(*k)),
        "{kinds:?}"
    );
    for (kind, name) in &kinds {
        let c = Copy::new();
        let hex = c.node(name)["output"].as_str().unwrap().to_owned();
        c.flip(&hex);
        let first = caught(&c, &[&format!("blob {hex} (output of {name})")]);
        assert!(first.contains(&hex), "{kind}: first finding {first}");
    }
    // Attachments: a run's log, a session's patch.
    for kind in ["run", "session"] {
        let c = Copy::new();
        let name = c.names_of_kind(kind)[0].clone();
        let hex = c.node(&name)["attachments"][0].as_str().unwrap().to_owned();
        c.flip(&hex);
        caught(&c, &[&format!("blob {hex} (attachment of {name})")]);
    }
}

#[test]
fn an_edited_number_in_summary_json_is_caught_with_its_path() {
    let c = Copy::new();
    let path = c.release_file("summary.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let rate = &mut v["agents"]["alpha/model-x"]["resolved_rate"];
    assert!(rate.is_number(), "{text}");
    *rate = Value::from(0.25);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap() + "\n").unwrap();
    let first = caught(&c, &["release/summary.json"]);
    assert!(
        first.contains("release/summary.json: field summary.agents[alpha/model-x].resolved_rate: published 0.25"),
        "{first}"
    );
}

/// A count of funnel.json verifies alone, from the release node and the
/// triage and screening it counts; an edited count is caught by its path.
#[test]
fn a_funnel_count_verifies_alone_and_an_edited_one_is_caught() {
    let s = shared();
    let run = verify(&s.bundle, &["funnel.certified"]).code(0);
    assert!(
        run.stdout.contains(": count funnel.certified: checked "),
        "{}",
        run.stdout
    );
    verify(&s.bundle, &["funnel.nothing"])
        .code(6)
        .stderr_has("no count `funnel.nothing` in release/funnel.json");

    let c = Copy::new();
    let path = c.release_file("funnel.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let certified = v["certified"].as_u64().unwrap();
    v["certified"] = Value::from(certified + 1);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap() + "\n").unwrap();
    let run = verify(&c.path, &["funnel.certified"]).code(4);
    assert!(
        run.stderr.contains(&format!(
            "funnel.certified: published {}, recomputed {certified}",
            certified + 1
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn a_dropped_row_of_results_csv_is_caught() {
    let c = Copy::new();
    let path = c.release_file("results.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 2);
    lines.remove(2);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let first = caught(&c, &["release/results.csv"]);
    assert!(
        first.contains("release/results.csv: field row 2 ("),
        "{first}"
    );
    assert!(first.ends_with(") is missing"), "{first}");
}

#[test]
fn swapped_session_patches_are_caught() {
    // The patch blobs' bytes swapped: neither hashes to its name.
    let c = Copy::new();
    let sessions = c.names_of_kind("session");
    let (a, b) = (sessions[0].clone(), sessions[1].clone());
    let pa = c.output(&a)["patch"].as_str().unwrap().to_owned();
    let pb = c.output(&b)["patch"].as_str().unwrap().to_owned();
    let (ba, bb) = (
        std::fs::read(c.blob(&pa)).unwrap(),
        std::fs::read(c.blob(&pb)).unwrap(),
    );
    std::fs::write(c.blob(&pa), &bb).unwrap();
    std::fs::write(c.blob(&pb), &ba).unwrap();
    caught(
        &c,
        &[&format!("attachment of {a}"), &format!("attachment of {b}")],
    );

    // The records' patch digests swapped, stored consistently: the nodes
    // that read the sessions no longer link to them.
    let c = Copy::new();
    let (mut ra, mut rb) = (c.output(&a), c.output(&b));
    std::mem::swap(&mut ra["patch"], &mut rb["patch"]);
    c.forge_output(&a, &ra);
    c.forge_output(&b, &rb);
    caught(&c, &[&format!("({a})"), &format!("({b})")]);
}

#[test]
fn a_replaced_test_patch_is_caught() {
    let c = Copy::new();
    let task = c.names_of_kind("task")[0].clone();
    let mut record = c.output(&task);
    record["test_patch"] = Value::from("diff --git a/tests/x.py b/tests/x.py\n");
    c.forge_output(&task, &record);
    caught(&c, &[&format!("({task})"), "the bundle's"]);
}

#[test]
fn a_renamed_fail_to_pass_test_is_caught() {
    // In the task's output, in place.
    let c = Copy::new();
    let task = c.names_of_kind("task")[0].clone();
    let hex = c.node(&task)["output"].as_str().unwrap().to_owned();
    let bytes = std::fs::read(c.blob(&hex)).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let renamed = text.replacen("test_", "test_renamed_", 1);
    assert_ne!(renamed, text);
    std::fs::write(c.blob(&hex), renamed).unwrap();
    caught(&c, &[&format!("output of {task}")]);

    // And in tasks.jsonl alone.
    let c = Copy::new();
    let path = c.release_file("tasks.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text.find("\"FAIL_TO_PASS\":[\"").unwrap() + "\"FAIL_TO_PASS\":[\"".len();
    let renamed = format!("{}renamed_{}", &text[..at], &text[at..]);
    std::fs::write(&path, renamed).unwrap();
    let first = caught(&c, &["release/tasks.jsonl"]);
    assert!(first.contains("release/tasks.jsonl"), "{first}");
}

#[test]
fn a_bundle_without_logs_keeps_their_digests_and_verifies() {
    let s = shared();
    let dir = tempfile::tempdir().unwrap();
    let lean = dir.path().join("lean");
    let out = export(&s.f, &lean, &["--no-logs"]).code(0);
    assert!(out.stdout.contains("left out"), "{}", out.stdout);
    let run = verify(&lean, &[]).code(0);
    assert!(
        run.stdout.contains("left out, digests kept"),
        "{}",
        run.stdout
    );
    let size = |d: &Path| tree(d).values().map(|b| b.len()).sum::<usize>();
    assert!(size(&lean) < size(&s.bundle));
    // A kept blob is still checked.
    let nodes = std::fs::read_to_string(lean.join("nodes.jsonl")).unwrap();
    let grade: Value = nodes
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|n| n["kind"] == "grade")
        .unwrap();
    let hex = grade["output"].as_str().unwrap();
    let p = lean.join("blobs").join(&hex[..2]).join(&hex[2..]);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&p, bytes).unwrap();
    verify(&lean, &[]).code(4);
}

/// bincode 2's standard varint of an unsigned integer.
fn varint(n: u64, out: &mut Vec<u8>) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xffff => {
            out.push(251);
            out.extend((n as u16).to_le_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(252);
            out.extend((n as u32).to_le_bytes());
        }
        _ => {
            out.push(253);
            out.extend(n.to_le_bytes());
        }
    }
}

/// A node's key, recomputed as an auditor in any language would: blake3 of
/// the bincode of {schema, kind, kind_version, params, deps}.
fn key_of(node: &Value) -> String {
    let mut b = Vec::new();
    varint(node["schema"].as_u64().unwrap(), &mut b);
    let kind = node["kind"].as_str().unwrap();
    varint(kind.len() as u64, &mut b);
    b.extend(kind.as_bytes());
    varint(node["kind_version"].as_u64().unwrap(), &mut b);
    let params = hex::decode(node["params"].as_str().unwrap()).unwrap();
    varint(params.len() as u64, &mut b);
    b.extend(params);
    let deps = node["deps"].as_array().unwrap();
    varint(deps.len() as u64, &mut b);
    for d in deps {
        b.extend(hex::decode(d.as_str().unwrap()).unwrap());
    }
    blake3::hash(&b).to_hex().to_string()
}

#[test]
fn every_key_in_a_bundle_recomputes_from_its_record_outside_assay() {
    let c = Copy::new();
    let nodes = c.nodes();
    assert!(nodes.len() > 10);
    for n in &nodes {
        assert_eq!(key_of(n), n["key"].as_str().unwrap(), "{}", n["name"]);
    }
}

#[test]
fn evidence_forged_below_the_release_with_every_digest_rehashed_is_caught() {
    // A grade's record gains a field no release file shows; its blob, the
    // release node's dependency digest, the release node's key and
    // bundle.json are all rewritten to match. The release files recompute
    // the same, but the manifest (sealed by the release digest) names the
    // release node it was computed by.
    let c = Copy::new();
    let grade = c.names_of_kind("grade")[0].clone();
    let mut record = c.output(&grade);
    record["note"] = Value::from("forged");
    c.forge_output(&grade, &record);
    let new_output = c.node(&grade)["output"].clone();
    let mut release_key = String::new();
    let lines: Vec<String> = c
        .nodes()
        .into_iter()
        .map(|mut n| {
            if n["kind"] == "release" {
                let i = n["inputs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .position(|x| x == grade.as_str())
                    .unwrap();
                n["deps"][i] = new_output.clone();
                release_key = key_of(&n);
                n["key"] = Value::from(release_key.clone());
            }
            serde_json::to_string(&n).unwrap()
        })
        .collect();
    std::fs::write(c.path.join("nodes.jsonl"), lines.join("\n") + "\n").unwrap();
    let head_path = c.path.join("bundle.json");
    let mut head: Value = serde_json::from_slice(&std::fs::read(&head_path).unwrap()).unwrap();
    head["release_node"] = Value::from(release_key);
    std::fs::write(&head_path, serde_json::to_string_pretty(&head).unwrap()).unwrap();
    caught(&c, &["provenance.release_node"]);
}

/// A node reused under another name — a renamed session file, whose run is
/// a cache hit whose record names the old session's stage — still exports,
/// under the names of the last build, and the bundle verifies.
#[test]
fn a_renamed_session_file_still_exports_and_verifies() {
    let f = Fixture::new();
    f.default_pipeline();
    f.session("alpha/fix1.json", "p-1", &f.fix1());
    f.build_ok();
    let sessions = f.path().join("sessions/alpha");
    std::fs::rename(sessions.join("fix1.json"), sessions.join("renamed.json")).unwrap();
    f.build_ok();
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    let out = export(&f, &bundle, &[]).code(0);
    assert!(out.stdout.contains("exported release"), "{}", out.stdout);
    let nodes = std::fs::read_to_string(bundle.join("nodes.jsonl")).unwrap();
    assert!(nodes.contains("alpha/renamed.json"), "{nodes}");
    assert!(!nodes.contains("alpha/fix1.json"), "the old name survives");
    verify(&bundle, &[]).code(0);
    // explain names the run's input as the last build does.
    let explained = f
        .project
        .run(&["explain", "run:alpha/renamed.json:exclude"])
        .code(0)
        .stdout;
    assert!(
        explained.contains("dep      stage:alpha/renamed.json:exclude"),
        "{explained}"
    );
    assert!(!explained.contains("fix1.json"), "{explained}");
}

/// A file added to the bundle's release, and one taken out of it, are each
/// named: the added one is no file of the release (nor a subject of the
/// statement), the missing one is recomputed but absent (and a subject of
/// the statement that is no file).
#[test]
fn an_added_and_a_missing_release_file_are_named() {
    let c = Copy::new();
    std::fs::write(c.release_file("extra.txt"), "not of the release").unwrap();
    std::fs::remove_file(c.release_file("funnel.json")).unwrap();
    caught(
        &c,
        &[
            "release/extra.txt: in the bundle, but not a file of the release",
            "release/funnel.json: recomputed, but missing from the bundle",
            "provenance.intoto.json: release/extra.txt is not a subject",
            "provenance.intoto.json: subject release/funnel.json is not a file of the bundle",
        ],
    );
}

/// An export that fails part way (a release file's blob gone from the
/// cache, read after every node's blobs were written) leaves nothing of
/// the bundle: the empty directory it was given stays, empty.
#[test]
fn an_export_that_fails_part_way_leaves_no_bundle() {
    let f = graded();
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole");
    export(&f, &whole, &[]).code(0);
    let csv = std::fs::read(whole.join("release").join("results.csv")).unwrap();
    let blobs = f.project.cache().join("blobs");
    let gone = tree(&blobs)
        .into_iter()
        .find(|(_, bytes)| *bytes == csv)
        .map(|(rel, _)| blobs.join(rel))
        .expect("results.csv is a blob of the cache");
    std::fs::remove_file(&gone).unwrap();
    let target = dir.path().join("partial");
    std::fs::create_dir(&target).unwrap();
    let run = export(&f, &target, &[]);
    assert_ne!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(target.is_dir(), "the directory given is kept");
    let left: Vec<_> = std::fs::read_dir(&target).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A bundle made to fool the reader of `verify`'s output: a release file
/// whose name holds a terminal escape and a line break, and a report page
/// edited to hold escapes that would erase the line before and set the
/// window's title. Every finding is still printed, each on one line of
/// its own, with no escape or carriage return left; no line says the
/// bundle is sound; the JSON findings keep the names as they are.
#[test]
fn a_bundle_cannot_write_to_the_terminal_or_forge_a_line() {
    let c = Copy::new();
    let evil = "x\u{1b}[1A\u{1b}[2K\nbundle ok: release 00.txt";
    std::fs::write(c.release_file(evil), "added").unwrap();
    let report = c.release_file("report.html");
    let html = std::fs::read_to_string(&report).unwrap();
    let forged = html.replacen("<", "\u{1b}]0;pwned\u{7}\u{1b}[2K\r\u{9b}1Abundle ok <", 1);
    assert_ne!(forged, html);
    std::fs::write(&report, forged).unwrap();
    let run = verify(&c.path, &[]).code(4);
    for text in [&run.stdout, &run.stderr] {
        assert!(
            !text.contains(['\u{1b}', '\u{7}', '\r', '\u{9b}']),
            "{text:?}"
        );
        assert!(!text.lines().any(|l| l.starts_with("bundle ok")), "{text}");
    }
    let mismatches: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("MISMATCH"))
        .collect();
    assert!(
        mismatches.contains(
            &"MISMATCH release/x bundle ok: release 00.txt: in the bundle, but not a file of the release"
        ),
        "{mismatches:#?}"
    );
    assert!(
        mismatches
            .iter()
            .any(|l| l.starts_with("MISMATCH release/report.html: ")),
        "{mismatches:#?}"
    );
    // The machine-readable findings keep the name whole.
    let json = verify(&c.path, &["--json"]).code(4);
    let named = json
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|f| f["what"] == format!("release/{evil}"));
    assert!(named, "{}", json.stdout);
}

/// `verify --bundle` DIR ARGS, ended after 60 s (a read that blocks).
fn verify_within(bundle: &Path) -> Run {
    let cwd = tempfile::tempdir().unwrap();
    let out = Command::new("timeout")
        .args(["60", BIN, "verify", "--bundle"])
        .arg(bundle)
        .current_dir(cwd.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    Run::from(out).no_panic()
}

/// A bundle's files are read without following a link, and only regular
/// files are: a blob that is a link to a copy of its own bytes outside the
/// bundle, a blob that is a FIFO (reading it would block for ever), and a
/// `release/` that is a link to a copy of the release elsewhere are each
/// refused, not believed. Harmless when the defence fails: every target is
/// in this test's temp dir, and a blocked read is ended after 60 s.
#[test]
fn links_and_fifos_in_a_bundle_are_not_its_files() {
    let grades = |c: &Copy| c.names_of_kind("grade");
    // A blob linked to a copy of itself outside the bundle.
    let c = Copy::new();
    let outside = tempfile::tempdir().unwrap();
    let hex = c.node(&grades(&c)[0])["output"]
        .as_str()
        .unwrap()
        .to_owned();
    let copy = outside.path().join("copy");
    std::fs::copy(c.blob(&hex), &copy).unwrap();
    std::fs::remove_file(c.blob(&hex)).unwrap();
    std::os::unix::fs::symlink(&copy, c.blob(&hex)).unwrap();
    let run = verify_within(&c.path);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains(&hex), "{}", run.stderr);
    assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);

    // A blob that is a FIFO.
    let c = Copy::new();
    let hex = c.node(&grades(&c)[1])["output"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::remove_file(c.blob(&hex)).unwrap();
    let made = Command::new("mkfifo").arg(c.blob(&hex)).status().unwrap();
    assert!(made.success());
    let run = verify_within(&c.path);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains(&hex), "{}", run.stderr);

    // release/ a link to the same files elsewhere.
    let c = Copy::new();
    let elsewhere = outside.path().join("release");
    copy_tree(&c.path.join("release"), &elsewhere);
    std::fs::remove_dir_all(c.path.join("release")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, c.path.join("release")).unwrap();
    let run = verify_within(&c.path);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("bundle/release is not a"),
        "{}",
        run.stderr
    );
}
