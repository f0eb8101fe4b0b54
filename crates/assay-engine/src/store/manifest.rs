//! What each build did: its row in `builds` and its manifest blob (every
//! node's key, output and status), for `explain`, `plan` and `gc`.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::{Store, StoreError, now_ms};
use crate::key::Digest;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub name: String,
    pub kind: String,
    pub key: Option<Digest>,
    pub output: Option<Digest>,
    /// executed | reused | failed | skipped
    pub status: String,
}

/// A [`ManifestEntry`] of borrowed parts, encoding to the same bytes.
#[derive(Serialize)]
pub(crate) struct ManifestEntryRef<'a> {
    pub(crate) name: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) key: Option<Digest>,
    pub(crate) output: Option<Digest>,
    pub(crate) status: &'a str,
}

/// A [`BuildManifest`] of borrowed entries, encoding to the same bytes.
#[derive(Serialize)]
pub(crate) struct BuildManifestRef<'a> {
    pub(crate) entries: Vec<ManifestEntryRef<'a>>,
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
