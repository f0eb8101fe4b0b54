//! What each build did: its row in `builds` and its manifest blob (every
//! node's key, output and status), for `explain`, `plan` and `gc`.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::{Store, StoreError, now_ms};
use crate::key::{Digest, varint};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub name: String,
    pub kind: String,
    pub key: Option<Digest>,
    pub output: Option<Digest>,
    /// executed | reused | failed | skipped
    pub status: String,
}

/// A [`ManifestEntry`] of borrowed parts, for [`encode_manifest`].
pub(crate) struct ManifestEntryRef<'a> {
    pub(crate) name: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) key: Option<Digest>,
    pub(crate) output: Option<Digest>,
    pub(crate) status: &'a str,
}

/// The bytes of a [`BuildManifest`] of these entries, as
/// [`BuildManifest::encode`] gives them (bincode's standard configuration:
/// varint lengths, a digest as its 32 bytes, an option as a 0/1 tag), written
/// directly: serde's encoder hands a digest over one byte at a time, which
/// at 100,000 entries costs more than the rest of a no-op build's manifest.
#[cfg(test)]
pub(crate) fn encode_manifest<'a>(
    entries: impl ExactSizeIterator<Item = ManifestEntryRef<'a>>,
) -> Vec<u8> {
    let mut buf = Vec::with_capacity(8 + entries.len() * 96);
    varint(&mut buf, entries.len() as u64);
    encode_entries(&mut buf, entries);
    buf
}

/// The entries' part of [`encode_manifest`], appended to `buf`.
fn encode_entries<'a>(buf: &mut Vec<u8>, entries: impl Iterator<Item = ManifestEntryRef<'a>>) {
    fn string(buf: &mut Vec<u8>, s: &str) {
        varint(buf, s.len() as u64);
        buf.extend_from_slice(s.as_bytes());
    }
    fn digest(buf: &mut Vec<u8>, d: Option<Digest>) {
        match d {
            None => buf.push(0),
            Some(d) => {
                buf.push(1);
                buf.extend_from_slice(&d.0);
            }
        }
    }
    for e in entries {
        string(buf, e.name);
        string(buf, e.kind);
        digest(buf, e.key);
        digest(buf, e.output);
        string(buf, e.status);
    }
}

/// A build's manifest written as the build goes: the entries of a prefix
/// of the nodes are encoded, hashed and compared with the previous build's
/// manifest while the rest of the build runs (a no-op build's sweep decides
/// every node, on one core: this runs on the other), and
/// [`ManifestWriter::finish`] adds the rest. Its bytes are
/// [`encode_manifest`]'s.
pub(crate) struct ManifestWriter {
    bytes: Vec<u8>,
    entries: usize,
    len: usize,
    /// Hashed up to here.
    hashed: usize,
    hasher: blake3::Hasher,
    /// The previous build's manifest, its digest and bytes, while this one
    /// is the same so far.
    previous: Option<(Digest, Vec<u8>)>,
}

impl ManifestWriter {
    /// A manifest of `len` entries; `previous` is where the manifest this
    /// one is likely to equal is (its digest and blob file), read here.
    pub(crate) fn new(
        len: usize,
        previous: Option<(Digest, std::path::PathBuf)>,
    ) -> ManifestWriter {
        let mut bytes = Vec::with_capacity(8 + len * 96);
        varint(&mut bytes, len as u64);
        let previous =
            previous.and_then(|(digest, path)| std::fs::read(path).ok().map(|b| (digest, b)));
        let mut w = ManifestWriter {
            bytes,
            entries: 0,
            len,
            hashed: 0,
            hasher: blake3::Hasher::new(),
            previous,
        };
        w.settle();
        w
    }

    /// Entries encoded so far (the manifest's first nodes).
    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    /// Encodes the next entries.
    pub(crate) fn push<'a>(
        &mut self,
        entries: impl ExactSizeIterator<Item = ManifestEntryRef<'a>>,
    ) {
        self.entries += entries.len();
        encode_entries(&mut self.bytes, entries);
        self.settle();
    }

    /// Hashes what is new, and keeps the previous manifest while it agrees.
    fn settle(&mut self) {
        let new = &self.bytes[self.hashed..];
        if new.len() >= crate::key::PARALLEL_HASH_MIN {
            self.hasher.update_rayon(new);
        } else {
            self.hasher.update(new);
        }
        if let Some((_, prev)) = &self.previous
            && prev.get(self.hashed..self.bytes.len()) != Some(new)
        {
            self.previous = None;
        }
        self.hashed = self.bytes.len();
    }

    /// The manifest's bytes and digest, and whether they are the previous
    /// build's (its blob holds exactly these bytes: nothing to write).
    pub(crate) fn finish(self) -> (Vec<u8>, Digest, bool) {
        debug_assert_eq!(self.entries, self.len);
        let digest = Digest(*self.hasher.finalize().as_bytes());
        let same = self
            .previous
            .is_some_and(|(d, prev)| d == digest && prev.len() == self.bytes.len());
        (self.bytes, digest, same)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildManifest {
    pub entries: Vec<ManifestEntry>,
}

impl BuildManifest {
    pub fn encode(&self) -> Vec<u8> {
        crate::key::encode_params(self)
    }

    pub fn decode(bytes: &[u8]) -> Option<BuildManifest> {
        bincode::serde::decode_from_slice(bytes, bincode::config::standard())
            .ok()
            .map(|(m, _)| m)
    }

    /// Entries are in the build graph's order (not sorted: a no-op build of a
    /// large DAG should not pay for sorting names), so this is a scan; callers
    /// that look up many names index the entries themselves.
    pub fn find(&self, name: &str) -> Option<&ManifestEntry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct BuildRecord {
    pub id: i64,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    pub label: String,
    pub manifest: Option<Digest>,
    pub summary: Option<String>,
}

impl Store {
    pub(crate) fn begin_build(&self, label: &str) -> Result<i64, StoreError> {
        self.conn
            .execute(
                "INSERT INTO builds(started_ms, label) VALUES (?1, ?2)",
                params![now_ms(), label],
            )
            .map_err(|e| self.index_err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records the end of a build with its [`BuildManifest`], stored
    /// unless it is the previous build's byte for byte.
    pub(crate) fn finish_build(
        &self,
        id: i64,
        manifest: ManifestWriter,
        summary: &str,
    ) -> Result<Digest, StoreError> {
        let (bytes, digest, same) = manifest.finish();
        if !same {
            self.blobs.put_hashed(&bytes, digest)?;
        }
        self.conn
            .execute(
                "UPDATE builds SET finished_ms = ?1, manifest = ?2, summary = ?3 WHERE id = ?4",
                params![now_ms(), digest.0.to_vec(), summary, id],
            )
            .map_err(|e| self.index_err(e))?;
        Ok(digest)
    }

    /// The newest finished build's manifest: its digest and blob file.
    pub(crate) fn last_manifest(&self) -> Option<(Digest, std::path::PathBuf)> {
        let digest: Vec<u8> = self
            .conn
            .query_row(
                "SELECT manifest FROM builds WHERE manifest IS NOT NULL ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .ok()?;
        let digest = Digest::from_slice(&digest)?;
        Some((digest, self.blobs.path(&digest)))
    }

    /// The most recent finished builds, newest first.
    pub fn builds(&self, limit: usize) -> Result<Vec<BuildRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, started_ms, finished_ms, label, manifest, summary FROM builds WHERE manifest IS NOT NULL ORDER BY id DESC LIMIT ?1")
            .map_err(|e| self.index_err(e))?;
        let rows = stmt
            .query_map(params![limit as i64], |r| {
                let manifest: Option<Vec<u8>> = r.get(4)?;
                Ok(BuildRecord {
                    id: r.get(0)?,
                    started_ms: r.get(1)?,
                    finished_ms: r.get(2)?,
                    label: r.get(3)?,
                    manifest: manifest.and_then(|m| Digest::from_slice(&m)),
                    summary: r.get(5)?,
                })
            })
            .map_err(|e| self.index_err(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.index_err(e))
    }

    pub fn manifest(&self, build: &BuildRecord) -> Result<Option<BuildManifest>, StoreError> {
        match build.manifest {
            None => Ok(None),
            Some(d) => Ok(BuildManifest::decode(&self.blobs.get(&d)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_direct_encoding_is_bincodes() {
        let long = "x".repeat(300);
        let huge = "y".repeat(70_000);
        for n in [0usize, 1, 3, 250, 251, 300] {
            let entries: Vec<ManifestEntry> = (0..n)
                .map(|i| ManifestEntry {
                    name: match i % 3 {
                        0 => format!("run:{i}"),
                        1 => long.clone(),
                        _ if i == 2 => huge.clone(),
                        _ => String::new(),
                    },
                    kind: "step".into(),
                    key: (i % 2 == 0).then(|| Digest::of(&i.to_le_bytes())),
                    output: (i % 5 != 0).then(|| Digest::of(format!("{i}").as_bytes())),
                    status: "reused".into(),
                })
                .collect();
            let m = BuildManifest { entries };
            let direct = encode_manifest(m.entries.iter().map(|e| ManifestEntryRef {
                name: &e.name,
                kind: &e.kind,
                key: e.key,
                output: e.output,
                status: &e.status,
            }));
            assert_eq!(direct, m.encode(), "{n} entries");
            assert_eq!(BuildManifest::decode(&direct), Some(m));
        }
    }

    fn refs(entries: &[ManifestEntry]) -> impl ExactSizeIterator<Item = ManifestEntryRef<'_>> {
        entries.iter().map(|e| ManifestEntryRef {
            name: &e.name,
            kind: &e.kind,
            key: e.key,
            output: e.output,
            status: &e.status,
        })
    }

    #[test]
    fn a_manifest_written_in_parts_is_the_same_bytes_and_knows_its_predecessor() {
        let dir = tempfile::tempdir().unwrap();
        let entries: Vec<ManifestEntry> = (0..5000u32)
            .map(|i| ManifestEntry {
                name: format!("node:{i}"),
                kind: "step".into(),
                key: Some(Digest::of(&i.to_le_bytes())),
                output: (i % 7 != 0).then(|| Digest::of(&[i as u8])),
                status: "reused".into(),
            })
            .collect();
        let whole = BuildManifest {
            entries: entries.clone(),
        }
        .encode();
        let written = |cuts: &[usize], previous: Option<(Digest, std::path::PathBuf)>| {
            let mut w = ManifestWriter::new(entries.len(), previous);
            let mut at = 0;
            for &cut in cuts.iter().chain([entries.len()].iter()) {
                w.push(refs(&entries[at..cut]));
                at = cut;
                assert_eq!(w.entries(), at);
            }
            w.finish()
        };
        // Split anywhere, the bytes and the digest are the whole's.
        for cuts in [&[][..], &[0, 1], &[4096], &[1, 2, 4999]] {
            let (bytes, digest, same) = written(cuts, None);
            assert_eq!(bytes, whole, "cut at {cuts:?}");
            assert_eq!(digest, Digest::of(&whole));
            assert!(!same, "no previous manifest: it is stored");
        }
        let file = dir.path().join("previous");
        std::fs::write(&file, &whole).unwrap();
        let previous = Some((Digest::of(&whole), file.clone()));
        assert!(
            written(&[100], previous.clone()).2,
            "the previous build's bytes: not stored again"
        );
        // A previous manifest that differs anywhere, or whose blob does not
        // hold its digest's bytes, is not this one.
        let mut other = whole.clone();
        *other.last_mut().unwrap() ^= 1;
        std::fs::write(&file, &other).unwrap();
        assert!(!written(&[100], previous.clone()).2);
        std::fs::write(&file, [&whole[..], b"x"].concat()).unwrap();
        assert!(!written(&[100], previous).2, "longer");
        std::fs::write(&file, &whole).unwrap();
        assert!(
            !written(&[100], Some((Digest::of(b"rotten"), file))).2,
            "named by another digest"
        );
        assert!(!written(&[], Some((Digest::of(&whole), dir.path().join("gone")))).2);
    }
}
