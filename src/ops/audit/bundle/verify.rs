//! `assay verify --bundle DIR [NUMBER]`: checks a bundle without the cache
//! it came from (docs/audit.md): the release files against their manifest
//! and statement, every node's key record against its key, every blob
//! against its name, every link, and every release file against its
//! recomputation from the release node's inputs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use assay_engine::Digest;
use serde::Deserialize;

use super::format::{Bundle, BundleNode, read_blob, read_bundle};
use super::hashing::hash_blobs;
use super::intoto::check_statement;
use crate::ops::audit::diff::compare_files;
use crate::ops::audit::finding::{Finding, finding};
use crate::ops::audit::recompute::recompute_into;
use crate::ops::audit::release::{Against, Present as _, listed_problem, release_digest};
use crate::release::{Manifest, Number};
use crate::run::error::NodeError;

/// Why `verify --bundle` could not check anything.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BundleError {
    #[error("{0} is not a bundle (no bundle.json)")]
    NotABundle(String),
    #[error("no published number `{0}` in release/manifest.json")]
    NoSuchNumber(String),
    #[error("no count `{0}` in release/funnel.json")]
    NoSuchCount(String),
    /// A bundle whose own files cannot be read as one (a mismatch).
    #[error("{0}")]
    Unreadable(String),
}

/// What `verify --bundle` checked.
#[derive(Debug, Default)]
pub(crate) struct BundleChecked {
    pub(crate) nodes: usize,
    pub(crate) blobs: usize,
    pub(crate) omitted_blobs: usize,
    pub(crate) files: usize,
    pub(crate) numbers: usize,
    pub(crate) release_digest: String,
    /// With a number: the nodes its manifest entry lists, with what each
    /// says (a grade's verdict, a reading's outcome).
    pub(crate) sources: Vec<(String, String)>,
}

/// The word a source node's record says of itself: a grade's verdict, a
/// judge reading's outcome, a task's status.
#[derive(Deserialize)]
struct Says {
    verdict: Option<String>,
    outcome: Option<String>,
    status: Option<String>,
}

impl Says {
    fn word(self) -> Option<String> {
        self.verdict.or(self.outcome).or(self.status)
    }
}

/// `verify --bundle DIR [NUMBER]`: every check, or those one number rests on.
pub(crate) fn verify_bundle(
    dir: &Path,
    number: Option<&str>,
    expected_digest: Option<&str>,
) -> Result<(Vec<Finding>, BundleChecked), BundleError> {
    if !dir.join("bundle.json").is_file() {
        return Err(BundleError::NotABundle(dir.display().to_string()));
    }
    let b = read_bundle(dir).map_err(BundleError::Unreadable)?;
    let mut findings = Vec::new();
    let mut checked = BundleChecked::default();

    // The release files: the manifest's own digest, the digests it lists,
    // the statement's sha256 subjects.
    let manifest_bytes = b
        .files
        .read("manifest.json")
        .ok_or_else(|| BundleError::Unreadable("no release/manifest.json".to_owned()))?;
    check_release_digest(
        &b,
        &manifest_bytes,
        expected_digest,
        &mut findings,
        &mut checked,
    );
    let read = |name: &str| b.files.read(name);
    let (manifest, shards) = Manifest::read(&manifest_bytes, &read).unwrap_or_default();
    drop(manifest_bytes);
    // The files' own digests are reported after the nodes and the
    // recomputation, which name the field that differs.
    let mut late: Vec<Finding> = shards
        .into_iter()
        .map(|s| finding(format!("release/{}", s.file), s.problem))
        .collect();
    check_listed_files(&b, &manifest, &mut late);
    check_statement(&b, &mut late);
    checked.files = b.files.len();

    // The nodes to check: all, or the closure of one number's sources.
    let by_name: BTreeMap<&str, &BundleNode> =
        b.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let by_key: BTreeMap<&str, &BundleNode> = b.nodes.iter().map(|n| (n.key.as_str(), n)).collect();
    let release = by_key
        .get(b.head.release_node.as_str())
        .copied()
        .filter(|n| n.kind.as_str() == crate::model::kind::NodeKind::Release);
    // The release digest covers the release node's key, and so, through the
    // key records, every input the release was computed from.
    if let Some(node) = manifest.provenance.as_ref().map(|p| &p.release_node)
        && *node != b.head.release_node
    {
        findings.push(finding(
            "release/manifest.json provenance.release_node",
            format!(
                "says {node}, bundle.json names release node {}",
                b.head.release_node
            ),
        ));
    }
    let nodes = Nodes {
        by_name: &by_name,
        by_key: &by_key,
        release,
    };
    let wanted = wanted(&b, &manifest, number, &nodes, &mut findings, &mut checked)?;
    let in_scope = |n: &BundleNode| {
        wanted
            .as_ref()
            .is_none_or(|(_, set)| set.contains(n.name.as_str()))
    };
    check_nodes(&b, &by_name, in_scope, &mut findings, &mut checked);

    // Every release file, recomputed from the release node's inputs.
    let Some(release) = release else {
        findings.push(finding(
            "bundle.json release_node",
            format!("no release node {} in nodes.jsonl", b.head.release_node),
        ));
        findings.extend(late);
        return Ok((findings, checked));
    };
    let recomputed = recompute(&b, release, &by_name, wanted.is_some(), &mut findings);
    let Some(again) = recomputed else {
        findings.extend(late);
        return Ok((findings, checked));
    };
    check_recomputed(
        &b,
        again,
        (&manifest, &wanted, number),
        &mut findings,
        &mut checked,
    );
    findings.extend(late);
    Ok((findings, checked))
}

/// The bundle's nodes by name and by key, and its release node.
struct Nodes<'a> {
    by_name: &'a BTreeMap<&'a str, &'a BundleNode>,
    by_key: &'a BTreeMap<&'a str, &'a BundleNode>,
    release: Option<&'a BundleNode>,
}

/// What one number rests on: its manifest entry (none for a count of
/// funnel.json) and the names of the nodes under it; None for every node.
type Wanted<'a> = Option<(Option<&'a Number>, BTreeSet<&'a str>)>;

/// The manifest's release digest against its own bytes, bundle.json's and
/// the one the caller expects.
fn check_release_digest(
    b: &Bundle,
    manifest_bytes: &[u8],
    expected_digest: Option<&str>,
    findings: &mut Vec<Finding>,
    checked: &mut BundleChecked,
) {
    match release_digest(manifest_bytes) {
        None => findings.push(finding(
            "release/manifest.json",
            "no readable release_digest",
        )),
        Some((claimed, actual)) => {
            checked.release_digest = claimed.clone();
            if claimed != actual {
                findings.push(finding(
                    "release/manifest.json release_digest",
                    format!("says {claimed}, the manifest hashes to {actual}"),
                ));
            }
            if claimed != b.head.release_digest {
                findings.push(finding(
                    "bundle.json release_digest",
                    format!(
                        "says {}, release/manifest.json says {claimed}",
                        b.head.release_digest
                    ),
                ));
            }
            if let Some(want) = expected_digest
                && want != claimed
            {
                findings.push(finding(
                    "release digest",
                    format!("expected {want}, the bundle's release is {claimed}"),
                ));
            }
        }
    }
}

/// Every file the manifest lists against its digest.
fn check_listed_files(b: &Bundle, manifest: &Manifest, late: &mut Vec<Finding>) {
    for (name, want) in &manifest.files {
        if let Some(problem) = listed_problem(want, b.files.digest(name)) {
            late.push(finding(format!("release/{name}"), problem));
        }
    }
}

/// The nodes one number rests on (a count of funnel.json: the release
/// node's inputs), each source's word noted; with no number, every node
/// the manifest names must be in the bundle.
fn wanted<'a>(
    b: &'a Bundle,
    manifest: &'a Manifest,
    number: Option<&str>,
    nodes: &Nodes<'a>,
    findings: &mut Vec<Finding>,
    checked: &mut BundleChecked,
) -> Result<Wanted<'a>, BundleError> {
    let Nodes {
        by_name,
        by_key,
        release,
    } = *nodes;
    Ok(match number {
        None => {
            // Every node the manifest names must be in the bundle.
            let mut named: BTreeSet<&str> = BTreeSet::new();
            for n in &manifest.numbers {
                named.extend(n.grades.iter().chain(&n.readings).map(|k| &**k));
            }
            named.extend(manifest.tasks.values().map(String::as_str));
            for k in named {
                if !by_key.contains_key(k) {
                    findings.push(finding(
                        "release/manifest.json",
                        format!("names node {k}, which is not in the bundle"),
                    ));
                }
            }
            None
        }
        Some(path) if path.starts_with("funnel") => {
            // A count rests on the release node's inputs: every triage and
            // screening it counts.
            let published = b.files.read("funnel.json");
            if published.and_then(|f| count_at(&f, path)).is_none() {
                return Err(BundleError::NoSuchCount(path.to_owned()));
            }
            let roots = release.map(|r| r.name.as_str()).into_iter().collect();
            Some((None, closure(by_name, roots)))
        }
        Some(path) => {
            let entry = manifest
                .number(path)
                .ok_or_else(|| BundleError::NoSuchNumber(path.to_owned()))?;
            let mut roots = BTreeSet::new();
            for (field, k) in entry.node_keys() {
                match by_key.get(k) {
                    Some(n) => {
                        roots.insert(n.name.as_str());
                        let says = read_blob(&b.dir, &n.output)
                            .ok()
                            .and_then(|b| serde_json::from_slice::<Says>(&b).ok())
                            .and_then(Says::word)
                            .unwrap_or_default();
                        checked.sources.push((n.name.clone(), says));
                    }
                    None => findings.push(finding(
                        format!("{path} {field}"),
                        format!("node {k} is not in the bundle"),
                    )),
                }
            }
            if let Some(r) = release {
                // Shallow: the release's own inputs are read for the
                // recomputation; their digests are checked below.
                roots.insert(r.name.as_str());
            }
            Some((Some(entry), closure(by_name, roots)))
        }
    })
}

/// Every node in scope: its key record against its key, its output and
/// attachments against their names (an omitted kind's attachments may be
/// absent), its inputs against the bundle's nodes.
fn check_nodes(
    b: &Bundle,
    by_name: &BTreeMap<&str, &BundleNode>,
    in_scope: impl Fn(&BundleNode) -> bool,
    findings: &mut Vec<Finding>,
    checked: &mut BundleChecked,
) {
    let blob_state = hash_blobs(&b.dir);
    // Attachments of the kinds left out may be absent, wherever attached.
    let omittable: BTreeSet<&str> = b
        .nodes
        .iter()
        .filter(|n| b.head.omitted.contains(&n.kind))
        .flat_map(|n| n.attachments.iter().map(String::as_str))
        .collect();
    let mut blobs_checked: BTreeSet<&str> = BTreeSet::new();
    let mut omitted_blobs: BTreeSet<String> = BTreeSet::new();
    let mut check_blob =
        |hex: &str, what: String, may_be_absent: bool, out: &mut Vec<Finding>| -> bool {
            match blob_state.get_key_value(hex) {
                Some((k, Ok(()))) => {
                    blobs_checked.insert(k.as_str());
                    true
                }
                Some((_, Err(why))) => {
                    out.push(finding(format!("blob {hex} ({what})"), why.clone()));
                    false
                }
                None if may_be_absent => {
                    omitted_blobs.insert(hex.to_owned());
                    false
                }
                None => {
                    out.push(finding(
                        format!("blob {hex} ({what})"),
                        "missing from the bundle",
                    ));
                    false
                }
            }
        };
    for n in b.nodes.iter().filter(|n| in_scope(n)) {
        checked.nodes += 1;
        let what = format!("node {}", n.name);
        match n.record() {
            Err(e) => findings.push(finding(what.clone(), format!("key record unreadable: {e}"))),
            Ok(r) if r.key().to_hex() != n.key => findings.push(finding(
                what.clone(),
                format!(
                    "its key record hashes to {}, not to its key {}",
                    r.key(),
                    n.key
                ),
            )),
            Ok(_) => {}
        }
        check_blob(&n.output, format!("output of {}", n.name), false, findings);
        for a in &n.attachments {
            let absent_ok = omittable.contains(a.as_str());
            check_blob(a, format!("attachment of {}", n.name), absent_ok, findings);
        }
        if n.inputs.len() != n.deps.len() {
            findings.push(finding(
                what.clone(),
                format!(
                    "{} dependencies but {} input names",
                    n.deps.len(),
                    n.inputs.len()
                ),
            ));
        }
        for (i, (dep, name)) in n.deps.iter().zip(&n.inputs).enumerate() {
            match by_name.get(name.as_str()) {
                None => findings.push(finding(
                    what.clone(),
                    format!("input {i} ({name}) is not in the bundle"),
                )),
                Some(d) if d.output != *dep => findings.push(finding(
                    what.clone(),
                    format!(
                        "input {i} ({name}): the key record reads output {dep}, the bundle's {name} outputs {}",
                        d.output
                    ),
                )),
                Some(_) => {}
            }
        }
    }
    checked.blobs = blobs_checked.len();
    checked.omitted_blobs = omitted_blobs.len();
}

/// The published files against their recomputation: all of them, or the
/// one number (or count) asked for.
fn check_recomputed(
    b: &Bundle,
    again: Again,
    (manifest, wanted, number): (&Manifest, &Wanted<'_>, Option<&str>),
    findings: &mut Vec<Finding>,
    checked: &mut BundleChecked,
) {
    let files = &again.kept;
    match wanted {
        None => {
            let before = findings.len();
            findings.extend(again.findings);
            for name in b.files.sorted_names() {
                if !again.files.contains_key(name) {
                    findings.push(finding(
                        format!("release/{name}"),
                        "in the bundle, but not a file of the release",
                    ));
                }
            }
            // The numbers count as checked when both files that hold them recompute.
            let holds_numbers = |f: &Finding| {
                f.what == "release/summary.json"
                    || f.what == "release/manifest.json"
                    || f.what.starts_with("release/manifest/")
            };
            if !findings[before..].iter().any(holds_numbers) {
                checked.numbers = manifest.numbers.len();
            }
        }
        Some((None, _)) => {
            let path = number.unwrap_or_default();
            let published = b.files.read("funnel.json").and_then(|f| count_at(&f, path));
            let again = files.get("funnel.json").and_then(|f| count_at(f, path));
            if published == again {
                checked.numbers = 1;
            } else {
                let show = |v: Option<serde_json::Value>| {
                    v.map_or("nothing".to_owned(), |v| v.to_string())
                };
                findings.push(finding(
                    path,
                    format!("published {}, recomputed {}", show(published), show(again)),
                ));
            }
        }
        Some((Some(entry), _)) => {
            let read = |name: &str| files.get(name).cloned();
            let again = files
                .get("manifest.json")
                .and_then(|m| Manifest::read(m, &read).ok())
                .map(|(m, _)| m)
                .unwrap_or_default();
            let path = entry.path.as_str();
            match again.number(path) {
                None => findings.push(finding(path, "not in the recomputed release")),
                Some(r) if r != *entry => {
                    let json = |n: &Number| serde_json::to_string(n).unwrap_or_default();
                    findings.push(finding(
                        path,
                        format!("published {}, recomputed {}", json(entry), json(r)),
                    ))
                }
                Some(_) => checked.numbers = 1,
            }
            // The published value in summary.json must be the manifest's too.
            if let Some(s) = b.files.read("summary.json")
                && files.get("summary.json") != Some(&s)
            {
                compare_files(
                    &BTreeMap::from([("summary.json".to_owned(), s)]),
                    &BTreeMap::from([(
                        "summary.json".to_owned(),
                        files.get("summary.json").cloned().unwrap_or_default(),
                    )]),
                    findings,
                );
            }
        }
    }
}

/// The value at a count's path (`funnel.certified`) in funnel.json's bytes.
fn count_at(funnel: &[u8], path: &str) -> Option<serde_json::Value> {
    let tree: serde_json::Value = serde_json::from_slice(funnel).ok()?;
    crate::release::value_at(&tree, "funnel", path).cloned()
}

/// The names reachable from `roots` through inputs.
fn closure<'a>(
    by_name: &BTreeMap<&'a str, &'a BundleNode>,
    roots: BTreeSet<&'a str>,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&str> = roots.into_iter().collect();
    while let Some(name) = stack.pop() {
        let Some(n) = by_name.get(name) else { continue };
        if !seen.insert(n.name.as_str()) {
            continue;
        }
        // The release's inputs are read, not descended into.
        if n.kind.as_str() == crate::model::kind::NodeKind::Release {
            for i in &n.inputs {
                if let Some(d) = by_name.get(i.as_str()) {
                    seen.insert(d.name.as_str());
                }
            }
            continue;
        }
        stack.extend(n.inputs.iter().map(String::as_str));
    }
    seen
}

/// The release files from the release node's params and input outputs, and
/// its output record checked against what the job stored.
fn recompute(
    b: &Bundle,
    release: &BundleNode,
    by_name: &BTreeMap<&str, &BundleNode>,
    one_number: bool,
    findings: &mut Vec<Finding>,
) -> Option<Again> {
    let what = format!("node {}", release.name);
    let Some(params_json) = &release.params_json else {
        findings.push(finding(what, "no params_json"));
        return None;
    };
    let params = match hex::decode(&release.params) {
        Ok(p) => p,
        Err(e) => {
            findings.push(finding(what, format!("params: {e}")));
            return None;
        }
    };
    let mut inputs = Vec::with_capacity(release.inputs.len());
    for name in &release.inputs {
        let read = by_name.get(name.as_str()).and_then(|n| {
            let bytes = read_blob(&b.dir, &n.output).ok()?;
            let key = n.key.parse::<Digest>().ok()?;
            (Digest::of(&bytes).to_hex() == n.output).then_some((bytes, key))
        });
        match read {
            Some(input) => inputs.push(input),
            None => {
                findings.push(finding(
                    what,
                    format!("input {name}: its output is not in the bundle, or corrupt: nothing recomputed"),
                ));
                return None;
            }
        }
    }
    // A blob is believed only if it hashes to its name.
    let read = |hex: &str| -> Result<Vec<u8>, NodeError> {
        let d: Digest = hex.parse().map_err(NodeError::input)?;
        let bytes = read_blob(&b.dir, &d.to_hex())
            .map_err(|e| NodeError::input(format!("blob {hex}: {e}")))?;
        if Digest::of(&bytes) == d {
            Ok(bytes)
        } else {
            Err(NodeError::input(format!(
                "blob {hex} does not hash to its name"
            )))
        }
    };
    let keep = if one_number {
        holds_a_number
    } else {
        |_: &str| false
    };
    let mut against = Against::bundle(&b.files, keep);
    let record = match recompute_into(params_json, &params, &inputs, &read, &mut against) {
        Ok(r) => r,
        Err(e) => {
            findings.push(finding(what, format!("cannot recompute the release: {e}")));
            return None;
        }
    };
    // The release job itself, re-executed: its output record names the files.
    let stored = read_blob(&b.dir, &release.output).unwrap_or_default();
    if serde_json::to_vec(&record).unwrap_or_default() != stored {
        findings.push(finding(
            what,
            "its output record differs from the release recomputed from its inputs",
        ));
    }
    let (findings, kept) = against.end();
    Some(Again {
        findings,
        kept,
        files: record.files,
    })
}

/// The release as recomputed, held against the bundle's files as it was
/// made (a release of a million sessions is never whole in memory).
struct Again {
    /// What differs, in the files' order.
    findings: Vec<Finding>,
    /// For one number's check, the few files that hold it.
    kept: BTreeMap<String, Vec<u8>>,
    /// Every file the release is made of (name -> digest).
    files: BTreeMap<String, String>,
}

/// The files one number is read from: the manifest and its shards, the
/// summary, the funnel.
fn holds_a_number(name: &str) -> bool {
    matches!(name, "funnel.json" | "summary.json" | "manifest.json")
        || name.starts_with("manifest/")
}
