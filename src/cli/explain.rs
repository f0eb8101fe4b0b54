//! `assay explain`: a node's key record, and what changed in its inputs
//! between the last two builds.

use std::collections::{BTreeMap, BTreeSet};

use assay_engine::{BuildManifest, Digest, KeyRecord, Store};
use clap::Args;

use super::explain_number::{explain_label, explain_number};
use super::labels::Named;
use super::shared::{Failure, Global};
use crate::exit;
use crate::ops::audit::NodeDisplay;
use crate::pipeline::Pipeline;

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
        let found = crate::ops::audit::Entries::of(m).inputs(&display.deps, &record.deps);
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
            let reason = crate::model::shown::clean(&f.reason);
            match &f.class {
                Some(class) => println!("failed   build {} ({class}): {reason}", f.build),
                None => println!("failed   build {}: {reason}", f.build),
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
