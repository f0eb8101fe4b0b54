//! `manifest.json` of a large release: an index and its shards.
//!
//! A manifest whose bytes would exceed `Limits::RELEASE.shard_above` (32 MiB) is written as an
//! index (`manifest.json`, the same fields with `files` and `numbers`
//! empty and a `shards` list) and shards under `manifest/`
//! (`manifest/0000.json`, …), each `{"files": {…}, "numbers": […]}` in
//! the same pretty printing, about `shard_bytes` (16 MiB) or less. The index names
//! every shard with its blake3, so the release digest (which covers the
//! index) covers every shard. The shards, in their order, hold `files`
//! then `numbers` in the order of the whole manifest; a number whose
//! sources alone exceed a shard continues in the next one under the same
//! path (its value repeated, its lists cut), and reading concatenates it.
//! A smaller manifest is one file, with no `shards` field.

use std::collections::BTreeMap;

use super::model::{Manifest, ManifestShard, Name, Number, Printed, Shard, pretty};

/// Where the shards live, beside manifest.json.
pub(crate) const DIR: &str = "manifest";

/// manifest.json and its shards, each handed to `put` (file name, bytes;
/// it returns their blake3 hex): the manifest alone while its bytes are
/// `above` or fewer. A large one is measured as it is printed, never held
/// whole.
pub(super) fn split<E>(
    mut manifest: Manifest,
    above: usize,
    per: usize,
    put: &mut dyn FnMut(String, Vec<u8>) -> Result<String, E>,
) -> Result<(), E> {
    // Measured and hashed in one printing: the whole manifest is printed
    // again only when it is small enough to be written whole.
    manifest.release_digest = String::new();
    let printed = Printed::of(&manifest);
    if printed.len <= above {
        manifest.release_digest = printed.hex();
        return put("manifest.json".to_owned(), manifest.to_bytes()).map(drop);
    }
    let Manifest {
        files,
        judges,
        numbers,
        provenance,
        tasks,
        ..
    } = manifest;
    let mut cut = Cutter::new(per);
    for (name, digest) in files {
        let size = name.len() + digest.len() + 10;
        cut.make_room(size);
        cut.current.files.insert(name, digest);
    }
    for number in numbers {
        for piece in pieces(number, per) {
            cut.make_room(weight(&piece));
            cut.current.numbers.push(piece);
        }
    }
    cut.flush();
    let mut shards = Vec::with_capacity(cut.done.len());
    for (i, shard) in cut.done.into_iter().enumerate() {
        let file = format!("{DIR}/{i:04}.json");
        let blake3 = put(file.clone(), pretty(&shard))?;
        shards.push(Shard {
            blake3,
            file,
            files: shard.files.len(),
            numbers: shard.numbers.len(),
        });
    }
    let mut index = Manifest {
        files: BTreeMap::new(),
        judges,
        numbers: Vec::new(),
        provenance,
        release_digest: String::new(),
        shards,
        tasks,
    };
    index.seal_digest();
    put("manifest.json".to_owned(), index.to_bytes()).map(drop)
}

/// Fills shards of about `per` bytes each.
struct Cutter {
    per: usize,
    used: usize,
    current: ManifestShard,
    done: Vec<ManifestShard>,
}

impl Cutter {
    fn new(per: usize) -> Self {
        Cutter {
            per,
            used: 0,
            current: ManifestShard::default(),
            done: Vec::new(),
        }
    }

    /// Starts a new shard where `size` more bytes would overfill this one.
    fn make_room(&mut self, size: usize) {
        if self.used > 0 && self.used + size > self.per {
            self.flush();
        }
        self.used += size;
    }

    fn flush(&mut self) {
        if self.used > 0 {
            self.done.push(std::mem::take(&mut self.current));
            self.used = 0;
        }
    }
}

/// About the bytes a number takes in a shard.
fn weight(n: &Number) -> usize {
    let lists = [&n.grades, &n.readings, &n.sessions, &n.tasks, &n.left_out];
    200 + n.path.len()
        + lists
            .iter()
            .flat_map(|l| l.iter())
            .map(|k| k.len() + 8)
            .sum::<usize>()
}

/// One of a number's lists, by the number.
type ListOf = fn(&mut Number) -> &mut Vec<Name>;

/// `number` cut into pieces of about `per` bytes each (itself when it fits):
/// each piece the same path and value, and the next part of its lists.
fn pieces(number: Number, per: usize) -> Vec<Number> {
    if weight(&number) <= per {
        return vec![number];
    }
    let empty = || Number {
        grades: Vec::new(),
        path: number.path.clone(),
        readings: Vec::new(),
        sessions: Vec::new(),
        tasks: Vec::new(),
        left_out: Vec::new(),
        value: number.value.clone(),
    };
    let mut out = vec![empty()];
    let mut used = 200 + number.path.len();
    let lists: [(ListOf, &Vec<Name>); 5] = [
        (|n| &mut n.grades, &number.grades),
        (|n| &mut n.readings, &number.readings),
        (|n| &mut n.sessions, &number.sessions),
        (|n| &mut n.tasks, &number.tasks),
        (|n| &mut n.left_out, &number.left_out),
    ];
    for (field, list) in lists {
        for key in list {
            if used + key.len() + 8 > per && used > 200 + number.path.len() {
                out.push(empty());
                used = 200 + number.path.len();
            }
            used += key.len() + 8;
            if let Some(last) = out.last_mut() {
                field(last).push(key.clone());
            }
        }
    }
    out
}

/// What reading a shard found wrong, named by the shard's file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShardProblem {
    pub(crate) file: String,
    pub(crate) problem: String,
}

impl Manifest {
    /// manifest.json read through its index: a sharded manifest's `files`
    /// and `numbers` gathered from its shards (each read by `read` and
    /// checked against the digest the index gives it), as if it were one
    /// file. A shard missing, altered or unreadable is a problem named by
    /// its file, and adds nothing.
    pub(crate) fn read(
        bytes: &[u8],
        read: &dyn Fn(&str) -> Option<Vec<u8>>,
    ) -> Result<(Manifest, Vec<ShardProblem>), serde_json::Error> {
        let mut manifest: Manifest = serde_json::from_slice(bytes)?;
        let shards = std::mem::take(&mut manifest.shards);
        let problems = each_shard(&shards, read, &mut |bytes| {
            serde_json::from_slice::<ManifestShard>(bytes).map(|part| manifest.join(part))
        });
        manifest.shards = shards;
        Ok((manifest, problems))
    }

    /// Every file manifest.json lists (name, blake3 hex), the index's then
    /// each shard's in order, handed to `each` as read; the shards checked
    /// and named as [`Manifest::read`] does. The numbers are scanned past
    /// and never built: at a million sessions they are gigabytes, and
    /// checking the files needs none of them.
    pub(crate) fn each_file(
        bytes: &[u8],
        read: &dyn Fn(&str) -> Option<Vec<u8>>,
        each: &mut dyn FnMut(String, String),
    ) -> Result<Vec<ShardProblem>, serde_json::Error> {
        let index: FilesOnly = serde_json::from_slice(bytes)?;
        index.files.into_iter().for_each(|(n, d)| each(n, d));
        Ok(each_shard(&index.shards, read, &mut |bytes| {
            let part: FilesOnly = serde_json::from_slice(bytes)?;
            part.files.into_iter().for_each(|(n, d)| each(n, d));
            Ok(())
        }))
    }

    /// Whether the release file `name` is manifest.json or one of its
    /// shards: the files a check of the release reads whole again after
    /// it has hashed every file.
    pub(crate) fn is_own_file(name: &str) -> bool {
        name == "manifest.json"
            || name
                .strip_prefix(DIR)
                .is_some_and(|rest| rest.starts_with('/'))
    }

    /// Appends a shard's entries; a number continued from the last one
    /// (the same path) extends it.
    fn join(&mut self, part: ManifestShard) {
        self.files.extend(part.files);
        for n in part.numbers {
            match self.numbers.last_mut() {
                Some(last) if last.path == n.path => {
                    last.grades.extend(n.grades);
                    last.readings.extend(n.readings);
                    last.sessions.extend(n.sessions);
                    last.tasks.extend(n.tasks);
                    last.left_out.extend(n.left_out);
                }
                _ => self.numbers.push(n),
            }
        }
    }
}

/// A manifest or shard's `files` and `shards` alone; its numbers, which
/// serde skips as unknown fields, are never built.
#[derive(serde::Deserialize)]
struct FilesOnly {
    #[serde(default)]
    files: BTreeMap<String, String>,
    #[serde(default)]
    shards: Vec<Shard>,
}

/// Each shard's bytes, read by `read` and checked against the index's
/// digest, to `take`; what is wrong with a shard (missing, altered, not
/// taken) named by its file.
fn each_shard(
    shards: &[Shard],
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
    take: &mut dyn FnMut(&[u8]) -> Result<(), serde_json::Error>,
) -> Vec<ShardProblem> {
    let mut problems = Vec::new();
    for shard in shards {
        let problem = |p: String| ShardProblem {
            file: shard.file.clone(),
            problem: p,
        };
        let Some(bytes) = read(&shard.file) else {
            problems.push(problem("named in manifest.json but missing".to_owned()));
            continue;
        };
        let got = blake3::hash(&bytes).to_hex().to_string();
        if got != shard.blake3 {
            problems.push(problem(format!(
                "manifest.json says {}, the file hashes to {got}",
                shard.blake3
            )));
            continue;
        }
        if let Err(e) = take(&bytes) {
            problems.push(problem(format!("not a manifest shard: {e}")));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::super::publish;
    use super::super::tests_scale::input;
    use super::*;

    /// A release of 4 tasks (120 sessions) whose manifest is split with
    /// small limits: the release files with the shards in place of the one
    /// manifest.json, and that manifest.
    fn sharded(above: usize, per: usize) -> (BTreeMap<String, Vec<u8>>, Manifest) {
        let mut files = publish(&input(4));
        let whole: Manifest = serde_json::from_slice(&files["manifest.json"]).expect("a manifest");
        files.extend(split_map(whole.clone(), above, per));
        (files, whole)
    }

    fn split_map(manifest: Manifest, above: usize, per: usize) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        let Ok(()) = split::<std::convert::Infallible>(manifest, above, per, &mut |n, b| {
            let hex = blake3::hash(&b).to_hex().to_string();
            out.insert(n, b);
            Ok(hex)
        });
        out
    }

    #[test]
    fn a_manifest_hashed_as_it_is_printed_is_its_printed_bytes_hashed() {
        let (files, whole) = sharded(1000, 2000);
        for m in [
            whole,
            serde_json::from_slice(&files["manifest.json"]).expect("an index"),
            Manifest::default(),
        ] {
            let bytes = m.to_bytes();
            let printed = Printed::of(&m);
            assert_eq!(printed.len, bytes.len());
            assert_eq!(printed.hex(), blake3::hash(&bytes).to_hex().to_string());
        }
    }

    fn read(files: &BTreeMap<String, Vec<u8>>) -> (Manifest, Vec<ShardProblem>) {
        let get = |name: &str| files.get(name).cloned();
        Manifest::read(&files["manifest.json"], &get).expect("an index")
    }

    #[test]
    fn a_small_manifest_is_one_file_byte_for_byte() {
        let files = publish(&input(4));
        let whole: Manifest = serde_json::from_slice(&files["manifest.json"]).expect("a manifest");
        let out = split_map(whole, 32 << 20, 16 << 20);
        assert_eq!(out.len(), 1);
        assert_eq!(out["manifest.json"], files["manifest.json"]);
        assert!(!String::from_utf8_lossy(&out["manifest.json"]).contains("\"shards\""));
    }

    #[test]
    fn read_through_the_index_gives_the_whole_manifest() {
        // 2,000 bytes a shard: the numbers over all 120 sessions' grades
        // (about 80 bytes a key) are cut across shards.
        let (files, whole) = sharded(1000, 2000);
        let (again, problems) = read(&files);
        assert!(problems.is_empty(), "{problems:?}");
        assert!(again.shards.len() > 5, "{} shards", again.shards.len());
        assert!(again.numbers.iter().any(|n| n.grades.len() > 25));
        assert_eq!(again.files, whole.files);
        assert_eq!(again.numbers, whole.numbers);
        assert_eq!(again.tasks, whole.tasks);
        for shard in &again.shards {
            assert!(files[&shard.file].len() < 4 * 2000, "{}", shard.file);
        }
        let findings = crate::ops::audit::check_listed(&files).0;
        assert!(findings.is_empty(), "{findings:?}");
    }

    #[test]
    fn each_file_lists_what_read_gathers_and_skips_a_shard_it_cannot_trust() {
        let (mut files, whole) = sharded(1000, 2000);
        let listed = |files: &BTreeMap<String, Vec<u8>>| {
            let get = |name: &str| files.get(name).cloned();
            let mut listed = Vec::new();
            let problems = Manifest::each_file(&files["manifest.json"], &get, &mut |n, d| {
                listed.push((n, d))
            })
            .expect("an index");
            (listed, problems)
        };
        let (all, problems) = listed(&files);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(all, whole.files.clone().into_iter().collect::<Vec<_>>());
        // A shard gone: named, and none of its files listed.
        let gone = "manifest/0000.json";
        let held: ManifestShard = serde_json::from_slice(&files[gone]).expect("a shard");
        assert!(!held.files.is_empty(), "the first shard holds files");
        files.remove(gone);
        let (some, problems) = listed(&files);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].file, gone);
        assert_eq!(some.len(), all.len() - held.files.len());
        assert!(some.iter().all(|(n, _)| !held.files.contains_key(n)));
    }

    #[test]
    fn a_file_the_manifest_does_not_list_is_named() {
        let (mut files, _) = sharded(1000, 2000);
        assert!(crate::ops::audit::check_listed(&files).0.is_empty());
        // A page put beside the release, where a reader would open it as
        // one of its pages.
        let extra = "pages/extra.html";
        files.insert(extra.to_owned(), b"<p>resolved: 100%</p>".to_vec());
        let findings = crate::ops::audit::check_listed(&files).0;
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].what, extra);
        assert!(
            findings[0].problem.contains("does not list it"),
            "{findings:?}"
        );
    }

    #[test]
    fn an_edited_shard_is_named() {
        let (mut files, _) = sharded(1000, 2000);
        let shard = "manifest/0003.json";
        let bytes = files.get_mut(shard).expect("a fourth shard");
        let at = bytes
            .iter()
            .position(|b| b.is_ascii_hexdigit())
            .expect("a digit");
        bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
        let (_, problems) = read(&files);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].file, shard);
        let findings = crate::ops::audit::check_listed(&files).0;
        assert!(
            findings
                .iter()
                .any(|f| f.what == shard && f.problem.contains("the file hashes to")),
            "{findings:?}"
        );
    }

    #[test]
    fn the_release_digest_covers_the_shards() {
        let (files, _) = sharded(1000, 2000);
        let index: Manifest = serde_json::from_slice(&files["manifest.json"]).expect("an index");
        let mut other = index.clone();
        other.shards[0].blake3 = "0".repeat(64);
        other.seal_digest();
        assert_ne!(other.release_digest, index.release_digest);
        let (claimed, actual) =
            crate::ops::audit::release_digest(&files["manifest.json"]).expect("a digest");
        assert_eq!(claimed, actual);
    }

    #[test]
    fn the_manifest_s_own_files_are_it_and_its_shards_only() {
        for own in ["manifest.json", "manifest/0000.json", "manifest/0263.json"] {
            assert!(Manifest::is_own_file(own), "{own}");
        }
        for other in [
            "manifest",
            "manifests/0000.json",
            "pages/manifest/0000.json",
            "report.html",
        ] {
            assert!(!Manifest::is_own_file(other), "{other}");
        }
    }
}
