//! `assay explain`: a node's key record, and what changed in its inputs
//! between the last two builds.

use assay_engine::{BuildManifest, Digest, KeyRecord, Store};
use clap::Args;

use super::{Failure, Global};
use crate::exit;
use crate::pipeline::Pipeline;

/// Say why a node ran or was reused, or what a published number was computed from.
///
/// For a node: its key record and which input changed between the last two
/// builds. Given a published number's path (`summary.agents[alpha/model-a].resolved_rate`,
/// as listed in release/manifest.json), list the grades it was computed from.
#[derive(Args, Debug)]
pub(crate) struct ExplainArgs {
    /// A node name from the last build (e.g. `step:words`), a key digest (a
    /// prefix will do), or the path of a published number (`summary.…`).
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
    if args.node.starts_with("summary") {
        let dir = args
            .release
            .clone()
            .or_else(|| pipeline.as_ref().map(Pipeline::release_dir))
            .unwrap_or_else(|| "release".into());
        return explain_number(&store, &dir, &args.node, args.json);
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
    let display: serde_json::Value = serde_json::from_str(&display).unwrap_or_default();
    if args.json {
        let v = serde_json::json!({
            "name": name, "key": key.to_hex(), "kind": record.kind, "kind_version": record.kind_version,
            "schema": record.schema, "params": display["params"], "deps": dep_list(&record, &display),
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
        println!("params   {}", display["params"]);
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
                    let old_display: serde_json::Value =
                        serde_json::from_str(&old_display).unwrap_or_default();
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

fn dep_list(record: &KeyRecord, display: &serde_json::Value) -> Vec<(String, String)> {
    record
        .deps
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let n = display["deps"][i].as_str().unwrap_or("?").to_owned();
            (n, d.to_hex())
        })
        .collect()
}

fn diff(
    old: &KeyRecord,
    old_display: &serde_json::Value,
    new: &KeyRecord,
    new_display: &serde_json::Value,
) -> Vec<String> {
    let mut out = Vec::new();
    if old.kind_version != new.kind_version {
        out.push(format!(
            "kind_version {} -> {}",
            old.kind_version, new.kind_version
        ));
    }
    if old.params != new.params {
        let (o, n) = (&old_display["params"], &new_display["params"]);
        match (o.as_object(), n.as_object()) {
            (Some(o), Some(n)) => {
                let keys: std::collections::BTreeSet<&String> = o.keys().chain(n.keys()).collect();
                for k in keys {
                    if o.get(k) != n.get(k) {
                        out.push(format!(
                            "param `{k}`: {} -> {}",
                            o.get(k).map(|v| v.to_string()).unwrap_or("(absent)".into()),
                            n.get(k).map(|v| v.to_string()).unwrap_or("(absent)".into())
                        ));
                    }
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

fn print_failures(store: &Store, key: &Digest) -> Result<(), Failure> {
    for f in store.failures(None).map_err(Failure::cache)? {
        if f.key == key.to_hex() {
            println!("failed   build {}: {}", f.build, f.reason);
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
/// hashes to that key; None when the cache does not hold it.
fn read_back(store: &Store, hex: &str) -> Option<(bool, serde_json::Value)> {
    let key = hex.parse::<Digest>().ok()?;
    let (record, _, row) = store.key_record(&key).ok().flatten()?;
    let value = store
        .output_bytes(&row)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    Some((record.key() == key, value))
}

/// A published number: its value and the grades it aggregates, each read back
/// from the cache (and checked against its key).
fn explain_number(
    store: &Store,
    release: &std::path::Path,
    path: &str,
    json: bool,
) -> Result<i32, Failure> {
    let file = release.join("manifest.json");
    let text = std::fs::read_to_string(&file).map_err(|e| {
        Failure::new(
            exit::NOT_FOUND,
            miette::miette!(
                help = "build first, or pass --release DIR",
                "cannot read {}: {e}",
                file.display()
            ),
        )
    })?;
    let manifest: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            exit::VERIFY_MISMATCH,
            miette::miette!("{}: {e}", file.display()),
        )
    })?;
    let numbers = manifest["numbers"].as_array().cloned().unwrap_or_default();
    let Some(number) = numbers.iter().find(|n| n["path"] == path) else {
        let near: Vec<&str> = numbers
            .iter()
            .filter_map(|n| n["path"].as_str())
            .filter(|p| p.contains(path.trim_start_matches("summary")))
            .take(10)
            .collect();
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
    let mut rows = Vec::new();
    let mut missing = 0;
    for g in number["grades"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g.as_str())
    {
        match read_back(store, g) {
            Some((key_ok, grade)) => {
                rows.push(serde_json::json!({
                    "grade": g,
                    "key_ok": key_ok,
                    "session": grade["session"], "arm": grade["arm"], "instance_id": grade["instance_id"],
                    "verdict": grade["verdict"], "fault": grade["fault"],
                }));
            }
            None => {
                missing += 1;
                rows.push(serde_json::json!({ "grade": g, "missing": true }));
            }
        }
    }
    // Judge numbers aggregate readings (judge node keys) instead of grades.
    let mut readings = Vec::new();
    for r in number["readings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str())
    {
        let Some((key_ok, reading)) = read_back(store, r) else {
            missing += 1;
            readings.push(serde_json::json!({ "reading": r, "missing": true }));
            continue;
        };
        readings.push(serde_json::json!({
            "reading": r,
            "key_ok": key_ok,
            "sessions": reading["sessions"], "instance_id": reading["instance_id"],
            "mode": reading["mode"], "sample": reading["sample"], "outcome": reading["outcome"],
        }));
    }
    if !readings.is_empty() && !json {
        println!("number   {path} = {}", number["value"]);
        println!("from     {} judge readings", readings.len());
        for r in &readings {
            let sessions: Vec<&str> = r["sessions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str())
                .collect();
            println!(
                "  {}  {:40} {:8} s{} {}",
                r["reading"].as_str().unwrap_or("").get(..12).unwrap_or(""),
                sessions.join(" + "),
                r["mode"].as_str().unwrap_or(""),
                r["sample"],
                if r["missing"] == true {
                    "NOT IN THIS CACHE"
                } else if r["key_ok"] == true {
                    ""
                } else {
                    "KEY MISMATCH"
                }
            );
        }
    } else if json {
        let v = serde_json::json!({
            "path": path, "value": number["value"], "grades": rows, "readings": readings,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        println!("number   {path} = {}", number["value"]);
        println!(
            "from     {} grades (release digest {})",
            rows.len(),
            manifest["release_digest"].as_str().unwrap_or("?")
        );
        for r in &rows {
            if r["missing"] == true {
                println!("  {}  NOT IN THIS CACHE", r["grade"].as_str().unwrap_or(""));
            } else {
                println!(
                    "  {}  {:28} {:8} {:22} {}",
                    &r["grade"].as_str().unwrap_or("")[..12],
                    r["session"].as_str().unwrap_or(""),
                    r["arm"].as_str().unwrap_or(""),
                    r["verdict"].as_str().unwrap_or(""),
                    if r["key_ok"] == true {
                        ""
                    } else {
                        "KEY MISMATCH"
                    }
                );
            }
        }
    }
    Ok(if missing > 0 {
        exit::VERIFY_MISMATCH
    } else {
        exit::OK
    })
}
