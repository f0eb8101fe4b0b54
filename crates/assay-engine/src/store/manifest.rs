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
pub(crate) fn encode_manifest<'a>(
    entries: impl ExactSizeIterator<Item = ManifestEntryRef<'a>>,
) -> Vec<u8> {
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
    let mut buf = Vec::with_capacity(8 + entries.len() * 96);
    varint(&mut buf, entries.len() as u64);
    for e in entries {
        string(&mut buf, e.name);
        string(&mut buf, e.kind);
        digest(&mut buf, e.key);
        digest(&mut buf, e.output);
        string(&mut buf, e.status);
    }
    buf
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

    /// Records the end of a build with its encoded [`BuildManifest`].
    pub(crate) fn finish_build(
        &self,
        id: i64,
        manifest: &[u8],
        summary: &str,
    ) -> Result<Digest, StoreError> {
        let digest = self.blobs.put(manifest)?;
        self.conn
            .execute(
                "UPDATE builds SET finished_ms = ?1, manifest = ?2, summary = ?3 WHERE id = ?4",
                params![now_ms(), digest.0.to_vec(), summary, id],
            )
            .map_err(|e| self.index_err(e))?;
        Ok(digest)
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
}
