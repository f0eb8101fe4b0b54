//! `assay verify --release DIR`: see the module header of `audit`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use assay_engine::{BuildManifest, Digest, KeyRecord, Store};
use serde::Deserialize;

use super::diff::{difference, first_difference};
use super::display::NodeDisplay;
use super::finding::{Finding, finding};
use super::hashing::{Again, Chunk, hash_file};
use crate::nodes::release::ReleaseRecord;
use crate::release::{Manifest, Sink};

/// What was checked, for the closing line.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub(crate) files: usize,
    pub(crate) inputs: usize,
    pub(crate) release_digest: Option<String>,
    pub(crate) recomputed: bool,
}

/// The blake3 of `manifest.json` with the value of `release_digest` replaced by `""`.
pub(crate) fn release_digest(manifest: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(manifest).ok()?;
    /// Only the claim: a manifest that is no longer a valid one still says it.
    #[derive(Deserialize)]
    struct Claim {
        release_digest: String,
    }
    let claimed = serde_json::from_str::<Claim>(text).ok()?.release_digest;
    let needle = format!("\"release_digest\": \"{claimed}\"");
    let blanked = text.replacen(&needle, "\"release_digest\": \"\"", 1);
    if blanked == text && !claimed.is_empty() {
        return None;
    }
    Some((claimed, Digest::of(blanked.as_bytes()).to_hex()))
}

/// The release files under `dir`, each named by its path below the release
/// directory (`pages/…` for the report's pages) and handed to `found` with
/// its path; hidden files and symbolic links are not release files. Each
/// directory's files come in the order of their inodes, not of its listing
/// (a hash order): a release is written file by file, so its inodes and
/// their data lie on the disk in about that order, and a million files read
/// cold are read front to back rather than at random.
fn walk_files(
    dir: &Path,
    prefix: &str,
    found: &mut dyn FnMut(String, PathBuf) -> Result<(), String>,
) -> Result<(), String> {
    use std::os::unix::fs::DirEntryExt as _;
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .flatten()
        .collect();
    entries.sort_unstable_by_key(|e| e.ino());
    for e in entries {
        let name = format!("{prefix}{}", e.file_name().to_string_lossy());
        let Ok(kind) = e.file_type() else {
            continue;
        };
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if kind.is_dir() && prefix.is_empty() {
            walk_files(&e.path(), &format!("{name}/"), found)?;
        } else if kind.is_file() {
            found(name, e.path())?;
        }
    }
    Ok(())
}

/// A release's files as `verify` checks them: by name, each one's digest,
/// its bytes read only where needed.
pub(crate) trait Present {
    fn read(&self, name: &str) -> Option<Vec<u8>>;
    /// blake3 (hex) of the file's bytes.
    fn digest(&self, name: &str) -> Option<String>;
    /// The files' names, in no particular order.
    fn names(&self) -> Vec<&String>;
}

impl Present for BTreeMap<String, Vec<u8>> {
    fn read(&self, name: &str) -> Option<Vec<u8>> {
        self.get(name).cloned()
    }

    fn names(&self) -> Vec<&String> {
        self.keys().collect()
    }

    fn digest(&self, name: &str) -> Option<String> {
        self.get(name).map(|b| Digest::of(b).to_hex())
    }
}

/// The files of a release directory, each hashed once as it is found and
/// never held: a release of a million sessions is gigabytes.
pub(crate) struct OnDisk {
    /// Name -> (path, blake3 hex, sha256 hex when asked for). Looked up by
    /// name once a listed file, a million times at a million sessions: a
    /// hash map, whose lookup does not grow with the release as an ordered
    /// map's string comparisons do.
    files: HashMap<String, (PathBuf, String, Option<String>)>,
}

impl OnDisk {
    pub(crate) fn read(dir: &Path) -> Result<OnDisk, String> {
        OnDisk::list(dir, false)
    }

    /// [`OnDisk::read`], each file's sha256 taken in the same read (a
    /// bundle's statement names its files by both).
    pub(crate) fn read_with_sha256(dir: &Path) -> Result<OnDisk, String> {
        OnDisk::list(dir, true)
    }

    /// Every file under `dir`, hashed as it is found (its sha256 too when
    /// `sha256`), all through one buffer: manifest.json and its shards
    /// through the page cache (the check reads them again), every other
    /// file around it when none of it is there ([`hash_file`]).
    fn list(dir: &Path, sha256: bool) -> Result<OnDisk, String> {
        let mut files = HashMap::new();
        let mut chunk = Chunk::new();
        walk_files(dir, "", &mut |name, path| {
            let again = if Manifest::is_own_file(&name) {
                Again::Yes
            } else {
                Again::No
            };
            let (blake3, sha256) = hash_file(&path, &mut chunk, sha256, again)
                .map_err(|err| format!("{name}: {err}"))?;
            files.insert(name, (path, blake3, sha256));
            Ok(())
        })?;
        Ok(OnDisk { files })
    }

    /// A file's sha256 (hex), when it was listed by [`OnDisk::read_with_sha256`].
    pub(crate) fn sha256(&self, name: &str) -> Option<&str> {
        self.files.get(name)?.2.as_deref()
    }

    /// The files' names, in order.
    pub(crate) fn sorted_names(&self) -> Vec<&String> {
        let mut names = self.names();
        names.sort_unstable();
        names
    }

    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

impl Present for OnDisk {
    fn read(&self, name: &str) -> Option<Vec<u8>> {
        std::fs::read(&self.files.get(name)?.0).ok()
    }

    fn digest(&self, name: &str) -> Option<String> {
        self.files.get(name).map(|(_, d, _)| d.clone())
    }

    fn names(&self) -> Vec<&String> {
        self.files.keys().collect()
    }
}

/// The recomputed release held against the files present, file by file as
/// it is made: what differs, what is missing; and, whole, the few files
/// `keep` names (one number's check reads them).
pub(super) struct Against<'p> {
    present: &'p OnDisk,
    /// What a finding names a file by: `release/<name>` in a bundle.
    prefix: &'static str,
    /// Where a file recomputed but not present was looked for.
    place: &'static str,
    /// How a file that differs differs.
    describe: fn(&str, &[u8], &[u8]) -> String,
    keep: fn(&str) -> bool,
    findings: Vec<Finding>,
    kept: BTreeMap<String, Vec<u8>>,
    /// The release node's files beside the manifest that it made again.
    beside: Vec<String>,
}

impl<'p> Against<'p> {
    /// `verify --release`: a file by its name, a difference by its line.
    fn release(present: &'p OnDisk) -> Self {
        Against {
            present,
            prefix: "",
            place: "the release",
            describe: |_, have, again| first_difference(have, again),
            keep: |_| false,
            findings: Vec::new(),
            kept: BTreeMap::new(),
            beside: Vec::new(),
        }
    }

    /// `verify --bundle`: a file as `release/<name>`, a difference by its
    /// field where it has one ([`difference`]); the files `keep` names kept.
    pub(super) fn bundle(present: &'p OnDisk, keep: fn(&str) -> bool) -> Self {
        Against {
            prefix: "release/",
            place: "the bundle",
            describe: difference,
            keep,
            ..Against::release(present)
        }
    }

    /// A file of the release node's beside the manifest that is present
    /// but that the node did not make: step 1 lets those four names by
    /// (the manifest does not list them), so only the recomputation can
    /// tell one planted, as a `harbor-tasks.jsonl` in a release that has
    /// no Harbor dataset.
    fn not_made_beside(&self) -> Vec<Finding> {
        crate::nodes::release::BESIDE_MANIFEST
            .into_iter()
            .filter(|name| self.present.files.contains_key(*name))
            .filter(|name| !self.beside.iter().any(|made| made == name))
            .map(|name| {
                finding(
                    format!("{}{name}", self.prefix),
                    "present in the release, but its release node did not make it",
                )
            })
            .collect()
    }

    /// The findings, in the files' order, and the files kept.
    pub(super) fn end(mut self) -> (Vec<Finding>, BTreeMap<String, Vec<u8>>) {
        self.findings.sort_by(|a, b| a.what.cmp(&b.what));
        (self.findings, self.kept)
    }
}

impl Sink for Against<'_> {
    type Error = std::convert::Infallible;

    fn put(&mut self, name: &str, bytes: Vec<u8>) -> Result<String, Self::Error> {
        let hex = Digest::of(&bytes).to_hex();
        let problem = match self.present.files.get(name) {
            None => Some(format!("recomputed, but missing from {}", self.place)),
            Some((path, have, _)) if *have != hex => {
                let have = std::fs::read(path).unwrap_or_default();
                Some((self.describe)(name, &have, &bytes))
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            self.findings
                .push(finding(format!("{}{name}", self.prefix), problem));
        }
        if crate::nodes::release::BESIDE_MANIFEST.contains(&name) {
            self.beside.push(name.to_owned());
        }
        if (self.keep)(name) {
            self.kept.insert(name.to_owned(), bytes);
        }
        Ok(hex)
    }
}

/// What is wrong with a file the manifest lists with the digest `want`,
/// present with the digest `got` (`None`: not present).
pub(super) fn listed_problem(want: &str, got: Option<String>) -> Option<String> {
    match got {
        None => Some("listed in manifest.json but missing".to_owned()),
        Some(got) if got != want => Some(format!(
            "manifest.json says {want}, the file hashes to {got}"
        )),
        Some(_) => None,
    }
}

/// Step 1 of `verify --release`, which needs no cache: manifest.json's
/// `release_digest` against its bytes, every shard it names against its
/// digest, every file it lists (through its shards) against its digest,
/// and no file present that it does not list but the release node's own
/// files beside it (a page added beside the release would be read as part
/// of it). Returns the findings and the digest the manifest claims.
pub(crate) fn check_listed(present: &impl Present) -> (Vec<Finding>, Option<String>) {
    let mut findings = Vec::new();
    let Some(manifest) = present.read("manifest.json") else {
        return (findings, None);
    };
    let mut claim = None;
    match release_digest(&manifest) {
        None => findings.push(finding("manifest.json", "no readable release_digest")),
        Some((claimed, actual)) => {
            if claimed != actual {
                findings.push(finding(
                    "manifest.json release_digest",
                    format!("says {claimed}, the manifest hashes to {actual}"),
                ));
            }
            claim = Some(claimed);
        }
    }
    // Every name the manifest accounts for (itself, its shards, the files
    // they list, and the release node's files beside it), each by the
    // first 16 bytes of its blake3: a million names in 16 MB, and no name
    // can be made to stand for another.
    let named = |name: &str| -> [u8; 16] {
        let mut key = [0u8; 16];
        key.copy_from_slice(&blake3::hash(name.as_bytes()).as_bytes()[..16]);
        key
    };
    let beside = crate::nodes::release::BESIDE_MANIFEST;
    let accounted = std::iter::once("manifest.json").chain(beside).map(named);
    let accounted = std::cell::RefCell::new(accounted.collect::<HashSet<_>>());
    let read = |name: &str| {
        accounted.borrow_mut().insert(named(name));
        present.read(name)
    };
    // Each file as its shard is read: the listing is never gathered, nor
    // are the numbers built.
    let mut listed = Vec::new();
    let shards = Manifest::each_file(&manifest, &read, &mut |name, want| {
        accounted.borrow_mut().insert(named(&name));
        if let Some(problem) = listed_problem(&want, present.digest(&name)) {
            listed.push(finding(name, problem));
        }
    })
    .unwrap_or_default();
    for s in shards {
        findings.push(finding(s.file, s.problem));
    }
    findings.extend(listed);
    let accounted = accounted.into_inner();
    let mut unlisted: Vec<&String> = present
        .names()
        .into_iter()
        .filter(|name| !accounted.contains(&named(name)))
        .collect();
    unlisted.sort_unstable();
    for name in unlisted {
        findings.push(finding(
            name.as_str(),
            "present in the release, but manifest.json does not list it",
        ));
    }
    (findings, claim)
}

/// The release node of the last 50 builds whose output shares the most file
/// digests with `present`: its key, key record, display and build manifest.
fn find_release_node(
    store: &Store,
    present: &OnDisk,
) -> Result<Option<(Digest, KeyRecord, String, BuildManifest)>, String> {
    let mut found = None;
    let mut best = 0;
    for build in store.builds(50).map_err(|e| e.to_string())? {
        let Some(m) = store.manifest(&build).map_err(|e| e.to_string())? else {
            continue;
        };
        let Some(key) = m.find(crate::model::names::RELEASE).and_then(|e| e.key) else {
            continue;
        };
        let Some((record, display, row)) = store.key_record(&key).map_err(|e| e.to_string())?
        else {
            continue;
        };
        let Ok(out) = store.output_bytes(&row) else {
            continue;
        };
        let Ok(rel) = serde_json::from_slice::<ReleaseRecord>(&out) else {
            continue;
        };
        let shared = rel
            .files
            .iter()
            .filter(|(n, d)| present.files.get(*n).is_some_and(|(_, have, _)| have == *d))
            .count();
        if shared > best {
            best = shared;
            found = Some((key, record, display, m));
        }
    }
    Ok(found)
}

pub(crate) fn verify_release(store: &Store, dir: &Path) -> Result<(Vec<Finding>, Checked), String> {
    let mut ph = crate::run::phase::Phases::new("verify release");
    let mut findings = Vec::new();
    let mut checked = Checked::default();
    let present = OnDisk::read(dir)?;
    if present.is_empty() {
        return Err(format!("{} holds no release files", dir.display()));
    }

    ph.mark("read files");
    // 1. The manifest and the files it lists.
    let (listed, claimed) = check_listed(&present);
    findings.extend(listed);
    checked.release_digest = claimed;

    ph.mark("manifest files");
    // 2. The release node whose output names these files: the one sharing the
    // most file digests (a tampered file still finds its release, and then
    // shows up in step 3 as a difference from its recomputation).
    let found = find_release_node(store, &present)?;
    let Some((key, record, display, build_manifest)) = found else {
        findings.push(finding(
            "release",
            "no release node of the last 50 builds in this cache produced any of these files: \
             the numbers cannot be recomputed here (built with another cache, or collected)",
        ));
        checked.files = present.len();
        return Ok((findings, checked));
    };
    ph.mark("find release node");
    if record.key() != key {
        findings.push(finding(
            format!("release node {key}"),
            "its key record does not hash to its key",
        ));
    }
    // The manifest names the release node that computed it (`provenance`).
    if let Some(node) = present
        .read("manifest.json")
        .and_then(|m| serde_json::from_slice::<Manifest>(&m).ok())
        .and_then(|m| m.provenance.map(|p| p.release_node))
        && node != key.to_hex()
    {
        findings.push(finding(
            "manifest.json provenance.release_node",
            format!("says {node}, the release node of these files is {key}"),
        ));
    }

    // 3. Recompute every file from the node's inputs, read back from the cache.
    let display = NodeDisplay::parse(&display);
    let names = &display.deps;
    let by_name: BTreeMap<&str, &assay_engine::ManifestEntry> = build_manifest
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e))
        .collect();
    let mut inputs: Vec<(Vec<u8>, Digest)> = Vec::with_capacity(record.deps.len());
    for (i, output) in record.deps.iter().enumerate() {
        let name = names.get(i).map(String::as_str).unwrap_or("?");
        let Some(dep_key) = by_name.get(name).and_then(|e| e.key) else {
            findings.push(finding(name, "input of the release, but not in its build"));
            continue;
        };
        let bytes = match store.key_record(&dep_key).map_err(|e| e.to_string())? {
            None => {
                findings.push(finding(name, format!("node {dep_key} is not in the cache")));
                continue;
            }
            Some((dep_record, _, row)) => {
                if dep_record.key() != dep_key {
                    findings.push(finding(name, "its key record does not hash to its key"));
                }
                if row.output != *output {
                    findings.push(finding(
                        name,
                        format!(
                            "the release read output {output}, the cache holds {}",
                            row.output
                        ),
                    ));
                }
                match store.output_bytes(&row) {
                    Ok(b) => b,
                    Err(e) => {
                        findings.push(finding(name, e.to_string()));
                        continue;
                    }
                }
            }
        };
        inputs.push((bytes, dep_key));
    }
    checked.inputs = inputs.len();
    ph.mark("read inputs");
    if inputs.len() == record.deps.len() {
        let read = crate::nodes::release::read_from(store.blobs());
        let mut against = Against::release(&present);
        super::recompute::recompute_into(
            &display.params,
            &record.params,
            &inputs,
            &read,
            &mut against,
        )?;
        checked.recomputed = true;
        findings.extend(against.not_made_beside());
        findings.extend(against.end().0);
    }
    ph.mark("compare");
    checked.files = present.len();
    Ok((findings, checked))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What verify lists of a release directory: every file at the top and
    /// one level down, hashed whole however many reads it takes; no hidden
    /// file, no symbolic link (not even to a file), nothing deeper.
    #[test]
    fn on_disk_hashes_each_release_file_whole_and_lists_nothing_else() {
        use sha2::Digest as _;
        let temp = tempfile::tempdir().expect("a temp dir");
        let dir = temp.path().join("release");
        std::fs::create_dir_all(dir.join("pages/deeper")).expect("dirs");
        // Longer than the read buffer, and not a multiple of it.
        let big: Vec<u8> = (0..200_003u32).map(|i| (i % 251) as u8).collect();
        let files: [(&str, &[u8]); 4] = [
            ("manifest.json", b"{}"),
            ("empty.csv", b""),
            ("pages/big.html", &big),
            ("pages/a.html", b"<p>a</p>"),
        ];
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).expect("a file");
        }
        let outside = temp.path().join("outside.txt");
        std::fs::write(&outside, b"not the release's").expect("a file");
        std::fs::write(dir.join(".hidden"), b"x").expect("a file");
        std::fs::write(dir.join("pages/deeper/c.html"), b"x").expect("a file");
        std::os::unix::fs::symlink(&outside, dir.join("pages/link.html")).expect("a link");

        let plain = OnDisk::read(&dir).expect("listed");
        let with_sha = OnDisk::read_with_sha256(&dir).expect("listed");
        let mut want: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
        want.sort_unstable();
        assert_eq!(plain.sorted_names(), want);
        assert_eq!(with_sha.sorted_names(), want);
        for (name, bytes) in files {
            let blake3 = Digest::of(bytes).to_hex();
            assert_eq!(
                plain.digest(name).as_deref(),
                Some(blake3.as_str()),
                "{name}"
            );
            assert_eq!(
                with_sha.digest(name).as_deref(),
                Some(blake3.as_str()),
                "{name}"
            );
            let sha256 = hex::encode(sha2::Sha256::digest(bytes));
            assert_eq!(with_sha.sha256(name), Some(sha256.as_str()), "{name}");
            assert_eq!(plain.sha256(name), None, "{name}");
        }
    }
}
