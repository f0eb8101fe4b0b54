//! `assay explain`: a node's key record, and what changed in its inputs
//! between the last two builds.

use std::collections::{BTreeMap, BTreeSet};

use assay_engine::{BuildManifest, Digest, KeyRecord, Store};
use assay_judge::Mode;
use clap::Args;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::labels::Named;
use super::shared::{Failure, Global};
use crate::exit;
use crate::model::records::{Fault, GradeRecord, JudgeOutcome, JudgeRecord, Verdict};
use crate::ops::audit::NodeDisplay;
use crate::pipeline::{Arm, Pipeline};
use crate::release::Manifest;

/// Say why a node ran or was reused, or what a published number was computed from.
///
/// For a node: its key record and which input changed between the last two
/// builds. Given a published number's path (`summary.agents[alpha/model-a].resolved_rate`,
/// as listed in release/manifest.json and shown when the pointer rests on a
/// figure of report.html), list the grades it was computed from. A column
/// label of the report (`pass@1`, `per attempt`) lists that number of every
/// agent/model, and stands for the tail of a path
/// (`summary.agents[alpha/model-a].pass@1`); `funnel.…` names a count of
/// release/funnel.json.
#[derive(Args, Debug)]
pub(crate) struct ExplainArgs {
    /// A node name from the last build (e.g. `grade:alpha/calc-1.json:exclude`, `task:calc-1`), a key digest (a
    /// prefix will do), the path of a published number (`summary.…`,
    /// `funnel.…`), or a report column's label (`pass@1`).
    node: String,
    /// The release whose numbers to explain (default: the pipeline's).
    #[arg(long)]
    release: Option<std::path::PathBuf>,
    /// Print the key record as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(global: &Global, args: ExplainArgs) -> Result<i32, Failure> {
    let pipeline = Pipeline::load(&global.pipeline).ok();
    let store = global.open_store(pipeline.as_ref())?;
    let dir = args
        .release
        .clone()
        .or_else(|| pipeline.as_ref().map(Pipeline::release_dir))
        .unwrap_or_else(|| "release".into());
    match super::labels::read(&args.node) {
        Named::Path(path) => return explain_number(&store, &dir, &path, args.json),
        Named::Label { label, rest } => return explain_label(&dir, &label, &rest),
        Named::Other => {}
    }
    let builds = store.builds(2).map_err(Failure::cache)?;
    let manifests: Vec<BuildManifest> = builds
        .iter()
        .filter_map(|b| store.manifest(b).ok().flatten())
        .collect();
    let (name, key) = match manifests.first().and_then(|m| m.find(&args.node)) {
        Some(e) => (Some(e.name.clone()), e.key),
        None => (None, find_key(&store, &args.node)?),
    };
    let Some(key) = key else {
        return Err(not_found(&args.node));
    };
    let Some((record, display, row)) = store.key_record(&key).map_err(Failure::cache)? else {
        let status = name
            .as_deref()
            .and_then(|n| manifests.first()?.find(n))
            .map(|e| e.status.clone())
            .unwrap_or_default();
        println!("node   {}", name.unwrap_or_default());
        println!("key    {key}");
        println!("status {status} in the last build: no cached result under this key");
        print_failures(&store, &key)?;
        return Ok(exit::OK);
    };
    let mut display = NodeDisplay::parse(&display);
    // Inputs under their names in the last build (a node reused under
    // another name records the names of the build that made it).
    if let Some(m) = manifests.first() {
        let found = crate::ops::audit::inputs_in(&display.deps, &record.deps, m);
        for (dep, entry) in display.deps.iter_mut().zip(found) {
            if let Some(e) = entry {
                dep.clone_from(&e.name);
            }
        }
    }
    if args.json {
        let v = serde_json::json!({
            "name": name, "key": key.to_hex(), "kind": record.kind, "kind_version": record.kind_version,
            "schema": record.schema, "params": display.params, "deps": dep_list(&record, &display),
            "output": row.output.to_hex(),
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        if let Some(n) = &name {
            println!("node     {n}");
        }
        println!("key      {key}");
        println!(
            "kind     {} (version {}, key schema {})",
            record.kind, record.kind_version, record.schema
        );
        println!("params   {}", display.params);
        for (dep, digest) in dep_list(&record, &display) {
            println!("dep      {dep} -> output {digest}");
        }
        println!("output   {}", row.output);
    }
    // Which input changed between the previous build and the last one.
    if let (false, Some(name), Some(prev)) = (args.json, &name, manifests.get(1)) {
        match prev.find(name).and_then(|e| e.key) {
            None => println!("change   new in the last build"),
            Some(pk) if pk == key => {
                let status = manifests[0]
                    .find(name)
                    .map(|e| e.status.as_str())
                    .unwrap_or("");
                println!(
                    "change   none: same key as the previous build ({status} in the last build)"
                );
            }
            Some(pk) => match store.key_record(&pk).map_err(Failure::cache)? {
                Some((old, old_display, _)) => {
                    let old_display = NodeDisplay::parse(&old_display);
                    for line in diff(&old, &old_display, &record, &display) {
                        println!("change   {line}");
                    }
                }
                None => {
                    println!("change   key changed from {pk} (that record is no longer cached)")
                }
            },
        }
    }
    Ok(exit::OK)
}

fn dep_list(record: &KeyRecord, display: &NodeDisplay) -> Vec<(String, String)> {
    record
        .deps
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let n = display.deps.get(i).map_or("?", String::as_str).to_owned();
            (n, d.to_hex())
        })
        .collect()
}

fn diff(
    old: &KeyRecord,
    old_display: &NodeDisplay,
    new: &KeyRecord,
    new_display: &NodeDisplay,
) -> Vec<String> {
    let mut out = Vec::new();
    if old.kind_version != new.kind_version {
        out.push(format!(
            "kind_version {} -> {}",
            old.kind_version, new.kind_version
        ));
    }
    if old.params != new.params {
        // Each kind's params have their own shape: compared as generic trees.
        let (o, n) = (&old_display.params, &new_display.params);
        match (o.as_object(), n.as_object()) {
            (Some(o), Some(n)) => {
                let keys: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
                for k in keys {
                    if o.get(k) == n.get(k) {
                        continue;
                    }
                    if let (Some(o), Some(n)) = (
                        o.get(k).and_then(|v| v.as_array()),
                        n.get(k).and_then(|v| v.as_array()),
                    ) && let Some(lines) = list_diff(o, n)
                    {
                        out.extend(lines.into_iter().map(|l| format!("param `{k}`: {l}")));
                        continue;
                    }
                    out.push(format!(
                        "param `{k}`: {} -> {}",
                        o.get(k).map(|v| v.to_string()).unwrap_or("(absent)".into()),
                        n.get(k).map(|v| v.to_string()).unwrap_or("(absent)".into())
                    ));
                }
            }
            _ => out.push(format!("params {o} -> {n}")),
        }
    }
    let old_deps = dep_list(old, old_display);
    for (i, (name, digest)) in dep_list(new, new_display).iter().enumerate() {
        match old_deps.get(i) {
            Some((_, od)) if od == digest => {}
            Some((_, od)) => out.push(format!(
                "input `{name}` output {} -> {}",
                &od[..12],
                &digest[..12]
            )),
            None => out.push(format!("new input `{name}`")),
        }
    }
    if out.is_empty() {
        out.push("key schema changed".into());
    }
    out
}

/// What changed between two lists whose items are named by their first
/// string (a `harbor_task`'s `files`: path, mode, blake3): each item added,
/// removed or changed, by name. None for other lists.
fn list_diff(old: &[serde_json::Value], new: &[serde_json::Value]) -> Option<Vec<String>> {
    let named = |list: &[serde_json::Value]| -> Option<BTreeMap<String, serde_json::Value>> {
        list.iter()
            .map(|item| {
                let name = item.as_array()?.first()?.as_str()?.to_owned();
                Some((name, item.clone()))
            })
            .collect()
    };
    let (old, new) = (named(old)?, named(new)?);
    let names: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    Some(
        names
            .into_iter()
            .filter_map(|name| match (old.get(name), new.get(name)) {
                (Some(o), Some(n)) if o == n => None,
                (Some(_), Some(_)) => Some(format!("`{name}` changed")),
                (None, Some(_)) => Some(format!("`{name}` added")),
                (Some(_), None) => Some(format!("`{name}` removed")),
                (None, None) => None,
            })
            .collect(),
    )
}

fn print_failures(store: &Store, key: &Digest) -> Result<(), Failure> {
    for f in store.failures(None).map_err(Failure::cache)? {
        if f.key == key.to_hex() {
            match &f.class {
                Some(class) => println!("failed   build {} ({class}): {}", f.build, f.reason),
                None => println!("failed   build {}: {}", f.build, f.reason),
            }
        }
    }
    Ok(())
}

pub(super) fn find_key(store: &Store, text: &str) -> Result<Option<Digest>, Failure> {
    let prefix = text.to_ascii_lowercase();
    if prefix.len() < 4 || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let keys = store.keys_with_prefix(&prefix).map_err(Failure::cache)?;
    match keys.as_slice() {
        [one] => Ok(Some(*one)),
        [] => Ok(None),
        many => Err(Failure::new(
            exit::NOT_FOUND,
            miette::miette!(
                help = "give more hex digits",
                "`{text}` matches {} keys",
                many.len()
            ),
        )),
    }
}

/// The key of the node named `name` in the last build, when it names one.
pub(super) fn node_key(store: &Store, name: &str) -> Result<Option<Digest>, Failure> {
    let builds = store.builds(1).map_err(Failure::cache)?;
    Ok(builds
        .first()
        .and_then(|b| store.manifest(b).ok().flatten())
        .and_then(|m| m.find(name).and_then(|e| e.key)))
}

pub(super) fn not_found(what: &str) -> Failure {
    Failure::new(
        exit::NOT_FOUND,
        miette::miette!(
            help = "use a node name printed by `assay plan --all` or `assay build --json`, or a digest",
            "no node or digest `{what}` in this cache"
        ),
    )
}

/// The output record of the node keyed `hex`, and whether its key record
/// hashes to that key; None when the cache does not hold it (the record
/// None when it does not read as a `T`).
fn read_back<T: DeserializeOwned>(store: &Store, hex: &str) -> Option<(bool, Option<T>)> {
    let key = hex.parse::<Digest>().ok()?;
    let (record, _, row) = store.key_record(&key).ok().flatten()?;
    let value = store
        .output_bytes(&row)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    Some((record.key() == key, value))
}

/// A grade a number was computed from, as `explain --json` lists it.
#[derive(Serialize)]
#[serde(untagged)]
enum GradeRow {
    Read {
        arm: Option<Arm>,
        fault: Option<Fault>,
        grade: String,
        instance_id: Option<String>,
        key_ok: bool,
        session: Option<String>,
        verdict: Option<Verdict>,
    },
    Missing {
        grade: String,
        missing: bool,
    },
}

/// A judge reading a number was computed from.
#[derive(Serialize)]
#[serde(untagged)]
enum ReadingRow {
    Read {
        instance_id: Option<String>,
        key_ok: bool,
        mode: Option<Mode>,
        outcome: Option<JudgeOutcome>,
        reading: String,
        sample: Option<u32>,
        sessions: Option<Vec<String>>,
    },
    Missing {
        missing: bool,
        reading: String,
    },
}

#[derive(Serialize)]
struct Explained<'a> {
    grades: Vec<GradeRow>,
    /// Grades the number leaves out on purpose (a leaderboard's
    /// infrastructure faults).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    left_out: Vec<GradeRow>,
    path: &'a str,
    readings: Vec<ReadingRow>,
    /// Sessions a count names (a trial count's).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    sessions: &'a [String],
    /// Tasks in the number's denominator (a leaderboard's).
    #[serde(skip_serializing_if = "is_zero")]
    tasks: usize,
    value: &'a serde_json::Number,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A published number: its value and the grades it aggregates, each read back
/// from the cache (and checked against its key).
fn explain_number(
    store: &Store,
    release: &std::path::Path,
    path: &str,
    json: bool,
) -> Result<i32, Failure> {
    let (file, text) = release_text(release, "manifest.json")?;
    let read = |name: &str| std::fs::read(release.join(name)).ok();
    let (manifest, shards) = Manifest::read(text.as_bytes(), &read).map_err(|e| {
        Failure::new(
            exit::VERIFY_MISMATCH,
            miette::miette!("{}: {e}", file.display()),
        )
    })?;
    if let Some(s) = shards.first() {
        return Err(Failure::new(
            exit::VERIFY_MISMATCH,
            miette::miette!("{}: {}", release.join(&s.file).display(), s.problem),
        ));
    }
    if let Some(code) = explain_value(release, &manifest, path)? {
        return Ok(code);
    }
    let Some(number) = manifest.number(path) else {
        let paths = || manifest.numbers.iter().map(|n| n.path.as_str());
        let mut near = crate::words::nearest(path, paths(), 3);
        if near.is_empty() {
            near = paths()
                .filter(|p| p.contains(path.trim_start_matches("summary")))
                .take(10)
                .collect();
        }
        return Err(Failure::new(
            exit::NOT_FOUND,
            miette::miette!(
                help = if near.is_empty() {
                    "the paths are listed in manifest.json under `numbers`".to_owned()
                } else {
                    format!("did you mean one of: {}", near.join(", "))
                },
                "no published number `{path}` in {}",
                file.display()
            ),
        ));
    };
    let mut missing = 0;
    let mut read_grades = |keys: &[String]| -> Vec<GradeRow> {
        keys.iter()
            .map(|g| match read_back::<GradeRecord>(store, g) {
                Some((key_ok, grade)) => GradeRow::Read {
                    grade: g.clone(),
                    key_ok,
                    session: grade.as_ref().map(|r| r.session.clone()),
                    arm: grade.as_ref().map(|r| r.arm),
                    instance_id: grade.as_ref().map(|r| r.instance_id.clone()),
                    verdict: grade.as_ref().map(|r| r.verdict),
                    fault: grade.as_ref().map(|r| r.fault),
                },
                None => {
                    missing += 1;
                    GradeRow::Missing {
                        grade: g.clone(),
                        missing: true,
                    }
                }
            })
            .collect()
    };
    let rows = read_grades(&number.grades);
    let left_out = read_grades(&number.left_out);
    // Judge numbers aggregate readings (judge node keys) instead of grades.
    let mut readings = Vec::new();
    for r in &number.readings {
        let Some((key_ok, reading)) = read_back::<JudgeRecord>(store, r) else {
            missing += 1;
            readings.push(ReadingRow::Missing {
                reading: r.clone(),
                missing: true,
            });
            continue;
        };
        readings.push(ReadingRow::Read {
            reading: r.clone(),
            key_ok,
            sessions: reading.as_ref().map(|x| x.sessions.clone()),
            instance_id: reading.as_ref().map(|x| x.instance_id.clone()),
            mode: reading.as_ref().map(|x| x.mode),
            sample: reading.as_ref().map(|x| x.sample),
            outcome: reading.as_ref().map(|x| x.outcome),
        });
    }
    if !readings.is_empty() && !json {
        println!("number   {path} = {}", number.value);
        println!("from     {} judge readings", readings.len());
        for r in &readings {
            let (reading, sessions, mode, sample, note) = match r {
                ReadingRow::Missing { reading, .. } => (
                    reading,
                    Vec::new(),
                    "",
                    "null".to_owned(),
                    "NOT IN THIS CACHE",
                ),
                ReadingRow::Read {
                    reading,
                    key_ok,
                    sessions,
                    mode,
                    sample,
                    ..
                } => (
                    reading,
                    sessions.clone().unwrap_or_default(),
                    mode.map_or("", mode_word),
                    sample.map_or_else(|| "null".to_owned(), |s| s.to_string()),
                    if *key_ok { "" } else { "KEY MISMATCH" },
                ),
            };
            println!(
                "  {}  {:40} {:8} s{} {}",
                reading.get(..12).unwrap_or(""),
                sessions.join(" + "),
                mode,
                sample,
                note
            );
        }
    } else if json {
        let v = Explained {
            path,
            value: &number.value,
            grades: rows,
            readings,
            sessions: &number.sessions,
            tasks: number.tasks.len(),
            left_out,
        };
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        println!("number   {path} = {}", number.value);
        println!(
            "from     {} grades (release digest {})",
            rows.len(),
            manifest.release_digest
        );
        print_grades(&rows);
        if !number.sessions.is_empty() {
            println!("over     {} sessions", number.sessions.len());
            for s in &number.sessions {
                println!("  {s}");
            }
        }
        if !number.tasks.is_empty() {
            println!(
                "over     {} tasks (the denominator: a task without a grade above counts 0)",
                number.tasks.len()
            );
        }
        if !left_out.is_empty() {
            println!(
                "left out {} grades (their runs ended on an infrastructure fault: not the agent's doing)",
                left_out.len()
            );
            print_grades(&left_out);
        }
    }
    Ok(if missing > 0 {
        exit::VERIFY_MISMATCH
    } else {
        exit::OK
    })
}

fn print_grades(rows: &[GradeRow]) {
    for r in rows {
        match r {
            GradeRow::Missing { grade, .. } => println!("  {grade}  NOT IN THIS CACHE"),
            GradeRow::Read {
                grade,
                key_ok,
                session,
                arm,
                verdict,
                fault,
                ..
            } => println!(
                "  {}  {:28} {:8} {:22} {:14} {}",
                grade.get(..12).unwrap_or(""),
                session.as_deref().unwrap_or(""),
                arm.map_or("", Arm::as_str),
                verdict.map_or("", Verdict::as_str),
                fault.map_or("", Fault::as_str),
                if *key_ok { "" } else { "KEY MISMATCH" }
            ),
        }
    }
}

/// A judge mode's word, as its record writes it.
fn mode_word(mode: Mode) -> &'static str {
    match mode {
        Mode::Single => "single",
        Mode::Pairwise => "pairwise",
    }
}

/// A release file's path and text; not found (build first) when unreadable.
fn release_text(
    release: &std::path::Path,
    file: &str,
) -> Result<(std::path::PathBuf, String), Failure> {
    let path = release.join(file);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((path, text)),
        Err(e) => Err(Failure::new(
            exit::NOT_FOUND,
            miette::miette!(
                help = "build first, or pass --release DIR",
                "cannot read {}: {e}",
                path.display()
            ),
        )),
    }
}

/// Reads a release file's JSON tree (`summary.json`, `funnel.json`).
fn release_tree(release: &std::path::Path, file: &str) -> Result<serde_json::Value, Failure> {
    let (path, text) = release_text(release, file)?;
    serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            exit::VERIFY_MISMATCH,
            miette::miette!("{}: {e}", path.display()),
        )
    })
}

/// A path that names no number of the manifest but a node of a release
/// file: a funnel count (funnel.json, counted by the release node), or a
/// part of summary.json that is not a number (a list, a missing rate).
/// Printed with what it is; None when the path is a manifest number or
/// names nothing.
fn explain_value(
    release: &std::path::Path,
    manifest: &Manifest,
    path: &str,
) -> Result<Option<i32>, Failure> {
    if path.starts_with("funnel") {
        let tree = release_tree(release, "funnel.json")?;
        let Some(value) = crate::release::value_at(&tree, "funnel", path) else {
            return Err(Failure::new(
                exit::NOT_FOUND,
                miette::miette!(
                    help = "the counts are the keys of release/funnel.json",
                    "no count `{path}` in {}",
                    release.join("funnel.json").display()
                ),
            ));
        };
        println!("number   {path} = {value}");
        println!(
            "from     the release node's count of every candidate's triage and every task's screening \
             (release/funnel.json, release digest {}); `assay explain release` names its inputs",
            manifest.release_digest
        );
        return Ok(Some(exit::OK));
    }
    if manifest.number(path).is_some() {
        return Ok(None);
    }
    let tree = release_tree(release, "summary.json")?;
    let Some(value) = crate::release::value_at(&tree, "summary", path) else {
        return Ok(None);
    };
    println!("value    {path} = {value}");
    let under: Vec<&str> = manifest
        .numbers
        .iter()
        .map(|n| n.path.as_str())
        .filter(|p| {
            p.strip_prefix(path)
                .is_some_and(|r| r.starts_with(['.', '[']))
        })
        .collect();
    if value.is_null() {
        println!("         no figure: nothing it could be computed from (no session, no attempt)");
    } else if under.is_empty() {
        println!("         not a number: summary.json holds it as it is shown");
    } else {
        println!("         not one number: the numbers under it are");
        for p in under {
            println!("  {p}");
        }
    }
    Ok(Some(exit::OK))
}

/// A report label alone: that number for every agent/model, by path.
fn explain_label(release: &std::path::Path, label: &str, rest: &str) -> Result<i32, Failure> {
    let tree = release_tree(release, "summary.json")?;
    let agents: Vec<&String> = tree["agents"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    println!("label    `{label}` is `{rest}` under each agent/model in summary.json");
    for key in agents {
        let path = format!("summary.agents{}{rest}", crate::release::path_segment(key));
        let value = crate::release::value_at(&tree, "summary", &path)
            .map_or_else(|| "(none)".to_owned(), ToString::to_string);
        println!("  {path} = {value}");
    }
    println!("next     `assay explain PATH` for what one of them was computed from");
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::list_diff;

    #[test]
    fn a_changed_file_list_names_the_files_not_the_whole_list() {
        let files = |items: &[(&str, &str)]| -> Vec<serde_json::Value> {
            items
                .iter()
                .map(|(p, h)| serde_json::json!([p, 420, h]))
                .collect()
        };
        let old = files(&[
            ("solution/solve.sh", "a"),
            ("task.toml", "b"),
            ("tests/old.sh", "c"),
        ]);
        let new = files(&[
            ("solution/solve.sh", "z"),
            ("task.toml", "b"),
            ("tests/new.sh", "d"),
        ]);
        assert_eq!(
            list_diff(&old, &new).unwrap(),
            [
                "`solution/solve.sh` changed",
                "`tests/new.sh` added",
                "`tests/old.sh` removed"
            ]
        );
        assert_eq!(
            list_diff(&[serde_json::json!(1)], &[]),
            None,
            "not a named list"
        );
    }
}
