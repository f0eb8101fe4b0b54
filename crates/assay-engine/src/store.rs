//! The cache: `index.sqlite` (key → output digest and the key record) plus
//! content-addressed blobs under `blobs/ab/cdef…`.
//!
//! Invariants, so that a crash at any instant leaves a usable cache:
//! - a blob is written to `tmp/`, fsynced, then renamed to its digest path, so a
//!   blob path either does not exist or holds complete bytes (a later flipped
//!   byte is caught by re-hashing on read);
//! - an index row is committed only after every blob it names exists;
//! - only successes enter `nodes`; failures go to `failures` with their reason.
//!
//! Outputs of at most [`INLINE_MAX`] bytes live inline in the row: a no-op build
//! then verifies them from one table scan instead of one file read per node.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::key::{Digest, DigestMap, KeyRecord};

/// Outputs up to this size are stored inline in the index row.
pub(crate) const INLINE_MAX: usize = 4096;

const INDEX_SCHEMA: i64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot use the cache index {path}: {detail}")]
    Index { path: PathBuf, detail: String },
    #[error("cache I/O on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("blob {digest} is missing from the cache")]
    MissingBlob { digest: Digest },
    #[error("blob {digest} is corrupt (its bytes hash to {actual})")]
    CorruptBlob { digest: Digest, actual: Digest },
    #[error(
        "the cache index was written by a newer assay (index schema {found}, this build reads {INDEX_SCHEMA})"
    )]
    NewerSchema { found: i64 },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Content-addressed blob files. Cheap to clone; safe to share between jobs.
#[derive(Clone, Debug)]
pub struct Blobs {
    dir: PathBuf,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Blobs {
    pub fn path(&self, digest: &Digest) -> PathBuf {
        let hex = digest.to_hex();
        self.dir.join("blobs").join(&hex[..2]).join(&hex[2..])
    }

    /// Stores bytes under their digest (idempotent; repairs a corrupt copy).
    pub fn put(&self, bytes: &[u8]) -> Result<Digest, StoreError> {
        let digest = Digest::of(bytes);
        let path = self.path(&digest);
        if let Ok(existing) = fs::read(&path)
            && Digest::of(&existing) == digest
        {
            return Ok(digest);
        }
        let tmp_dir = self.dir.join("tmp");
        fs::create_dir_all(&tmp_dir).map_err(io_err(&tmp_dir))?;
        let tmp = tmp_dir.join(format!(
            "blob-{}-{}",
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        {
            let mut f = fs::File::create(&tmp).map_err(io_err(&tmp))?;
            f.write_all(bytes).map_err(io_err(&tmp))?;
            f.sync_all().map_err(io_err(&tmp))?;
        }
        let parent = path.parent().unwrap_or(&self.dir);
        fs::create_dir_all(parent).map_err(io_err(parent))?;
        fs::rename(&tmp, &path).map_err(io_err(&path))?;
        Ok(digest)
    }

    /// Reads a blob and checks it against its digest.
    pub fn get(&self, digest: &Digest) -> Result<Vec<u8>, StoreError> {
        let path = self.path(digest);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::MissingBlob { digest: *digest });
            }
            Err(e) => return Err(io_err(&path)(e)),
        };
        let actual = Digest::of(&bytes);
        if actual != *digest {
            return Err(StoreError::CorruptBlob {
                digest: *digest,
                actual,
            });
        }
        Ok(bytes)
    }

    pub fn exists(&self, digest: &Digest) -> bool {
        self.path(digest).is_file()
    }
}

/// What a no-op build needs of a row: enough to decide a hit and feed dependents.
#[derive(Clone, Debug)]
pub struct IndexRow {
    pub output: Digest,
    pub inline: Option<Vec<u8>>,
    pub attachments: Vec<Digest>,
}

/// A committed success, as written by the scheduler.
#[derive(Clone, Debug)]
pub(crate) struct NewRow {
    pub key: Digest,
    pub record: KeyRecord,
    pub params_json: String,
    pub name: String,
    pub output: Digest,
    pub inline: Option<Vec<u8>>,
    pub attachments: Vec<Digest>,
    pub started_ms: i64,
    pub duration_ms: i64,
    pub build: i64,
}

#[derive(Clone, Debug, Serialize)]
pub struct FailureRow {
    pub key: String,
    pub name: String,
    pub kind: String,
    pub reason: String,
    pub build: i64,
    pub at_ms: i64,
}

/// One node of a build, as remembered for `explain`, `plan` and `gc`.
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

/// A problem found by [`Store::verify`].
#[derive(Clone, Debug, Serialize)]
pub struct VerifyProblem {
    pub key: String,
    pub kind: String,
    pub problem: String,
}

pub struct Store {
    dir: PathBuf,
    blobs: Blobs,
    conn: Connection,
}

impl Store {
    /// Opens (creating if needed) the cache at `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        // Absolute, so paths handed to child processes stay valid in any cwd.
        let dir = &std::path::absolute(dir).map_err(io_err(dir))?;
        fs::create_dir_all(dir.join("blobs")).map_err(io_err(dir))?;
        let conn = open_conn(&dir.join("index.sqlite"))?;
        Ok(Store {
            dir: dir.to_owned(),
            blobs: Blobs {
                dir: dir.to_owned(),
            },
            conn,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn blobs(&self) -> &Blobs {
        &self.blobs
    }

    fn index_err(&self, e: rusqlite::Error) -> StoreError {
        StoreError::Index {
            path: self.dir.join("index.sqlite"),
            detail: e.to_string(),
        }
    }

    /// Every success row, for hit decisions: one table scan.
    pub fn load_index(&self) -> Result<DigestMap<IndexRow>, StoreError> {
        self.load_index_sized(0)
    }

    /// [`Store::load_index`], sized up front for about `expected` rows (the
    /// node count of the build about to run) so the map does not regrow.
    pub fn load_index_sized(&self, expected: usize) -> Result<DigestMap<IndexRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, output, inline, attachments FROM nodes")
            .map_err(|e| self.index_err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.index_err(e))?;
        let mut map = DigestMap::with_capacity_and_hasher(expected, Default::default());
        let bad = |detail: &str| StoreError::Index {
            path: self.dir.join("index.sqlite"),
            detail: detail.to_owned(),
        };
        while let Some(row) = rows.next().map_err(|e| self.index_err(e))? {
            // Columns are borrowed from sqlite's row buffer: only `inline` is copied.
            let blob = |i: usize| -> Result<Option<&[u8]>, StoreError> {
                row.get_ref(i)
                    .and_then(|v| v.as_blob_or_null().map_err(Into::into))
                    .map_err(|e| self.index_err(e))
            };
            let (Some(key), Some(output)) = (
                blob(0)?.and_then(Digest::from_slice),
                blob(1)?.and_then(Digest::from_slice),
            ) else {
                return Err(bad("a row holds a key or digest that is not 32 bytes"));
            };
            let inline = blob(2)?.map(<[u8]>::to_vec);
            let attachments = blob(3)?.map(split_digests).unwrap_or_default();
            map.insert(
                key,
                IndexRow {
                    output,
                    inline,
                    attachments,
                },
            );
        }
        Ok(map)
    }

    /// The key record and metadata of one node, for `explain` and `show`.
    pub fn key_record(
        &self,
        key: &Digest,
    ) -> Result<Option<(KeyRecord, String, IndexRow)>, StoreError> {
        self.conn
            .query_row(
                "SELECT kind, kind_version, params, deps, params_json, output, inline, attachments, schema FROM nodes WHERE key = ?1",
                params![key.0.to_vec()],
                |r| {
                    let deps: Vec<u8> = r.get(3)?;
                    let output: Vec<u8> = r.get(5)?;
                    let attachments: Vec<u8> = r.get(7)?;
                    Ok((
                        KeyRecord {
                            schema: r.get(8)?,
                            kind: r.get(0)?,
                            kind_version: r.get(1)?,
                            params: r.get(2)?,
                            deps: split_digests(&deps),
                        },
                        r.get::<_, String>(4)?,
                        IndexRow {
                            output: Digest::from_slice(&output).unwrap_or(Digest([0; 32])),
                            inline: r.get(6)?,
                            attachments: split_digests(&attachments),
                        },
                    ))
                },
            )
            .optional()
            .map_err(|e| self.index_err(e))
    }

    /// The bytes of an output stored inline in some row (outputs are not all
    /// blob files), verified against the digest. A scan: for `assay show`.
    pub fn inline_output(&self, digest: &Digest) -> Result<Option<Vec<u8>>, StoreError> {
        let bytes: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT inline FROM nodes WHERE output = ?1 AND inline IS NOT NULL LIMIT 1",
                params![digest.0.to_vec()],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.index_err(e))?;
        match bytes {
            Some(b) if Digest::of(&b) == *digest => Ok(Some(b)),
            Some(b) => Err(StoreError::CorruptBlob {
                digest: *digest,
                actual: Digest::of(&b),
            }),
            None => Ok(None),
        }
    }

    /// Keys whose hex starts with `prefix` (nodes only).
    pub fn keys_with_prefix(&self, prefix: &str) -> Result<Vec<Digest>, StoreError> {
        let mut out = Vec::new();
        let mut stmt = self
            .conn
            .prepare("SELECT key FROM nodes")
            .map_err(|e| self.index_err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.index_err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.index_err(e))? {
            let key: Vec<u8> = row.get(0).map_err(|e| self.index_err(e))?;
            if let Some(d) = Digest::from_slice(&key)
                && d.to_hex().starts_with(prefix)
            {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// The keys of the rows of one node kind (for audits of a kind's outputs).
    pub fn keys_of_kind(&self, kind: &str) -> Result<Vec<Digest>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key FROM nodes WHERE kind = ?1")
            .map_err(|e| self.index_err(e))?;
        let mut rows = stmt.query([kind]).map_err(|e| self.index_err(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.index_err(e))? {
            let key: Vec<u8> = row.get(0).map_err(|e| self.index_err(e))?;
            out.extend(Digest::from_slice(&key));
        }
        Ok(out)
    }

    /// Output bytes of a row, verified against the output digest.
    pub fn output_bytes(&self, row: &IndexRow) -> Result<Vec<u8>, StoreError> {
        match &row.inline {
            Some(bytes) => {
                let actual = Digest::of(bytes);
                if actual != row.output {
                    return Err(StoreError::CorruptBlob {
                        digest: row.output,
                        actual,
                    });
                }
                Ok(bytes.clone())
            }
            None => self.blobs.get(&row.output),
        }
    }

    pub fn failures(&self, build: Option<i64>) -> Result<Vec<FailureRow>, StoreError> {
        let sql = "SELECT key, name, kind, reason, build, at_ms FROM failures WHERE (?1 IS NULL OR build = ?1) ORDER BY at_ms";
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.index_err(e))?;
        let rows = stmt
            .query_map(params![build], |r| {
                let key: Vec<u8> = r.get(0)?;
                Ok(FailureRow {
                    key: hex::encode(key),
                    name: r.get(1)?,
                    kind: r.get(2)?,
                    reason: r.get(3)?,
                    build: r.get(4)?,
                    at_ms: r.get(5)?,
                })
            })
            .map_err(|e| self.index_err(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.index_err(e))
    }

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

    /// Full integrity check: sqlite's own, then every row's output and attachments.
    /// `PRAGMA quick_check`: refuses an index with damaged pages before a
    /// build reuses rows from it. O(size of the index), without the index
    /// cross-checks of `integrity_check`.
    pub fn quick_check(&self) -> Result<(), StoreError> {
        let check: String = self
            .conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| self.index_err(e))?;
        if check == "ok" {
            Ok(())
        } else {
            Err(StoreError::Index {
                path: self.dir.join("index.sqlite"),
                detail: format!("the index is damaged (sqlite quick_check: {check})"),
            })
        }
    }

    pub fn verify(&self) -> Result<Vec<VerifyProblem>, StoreError> {
        let check: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.index_err(e))?;
        let mut problems = Vec::new();
        if check != "ok" {
            problems.push(VerifyProblem {
                key: String::new(),
                kind: "index".into(),
                problem: format!("sqlite integrity_check: {check}"),
            });
        }
        let mut stmt = self
            .conn
            .prepare("SELECT key, kind, kind_version, params, deps, schema FROM nodes")
            .map_err(|e| self.index_err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.index_err(e))?;
        let index = self.load_index()?;
        while let Some(r) = rows.next().map_err(|e| self.index_err(e))? {
            let key: Vec<u8> = r.get(0).map_err(|e| self.index_err(e))?;
            let kind: String = r.get(1).map_err(|e| self.index_err(e))?;
            let record = KeyRecord {
                kind: kind.clone(),
                kind_version: r.get(2).map_err(|e| self.index_err(e))?,
                params: r.get(3).map_err(|e| self.index_err(e))?,
                deps: split_digests(&r.get::<_, Vec<u8>>(4).map_err(|e| self.index_err(e))?),
                schema: r.get(5).map_err(|e| self.index_err(e))?,
            };
            let Some(key) = Digest::from_slice(&key) else {
                continue;
            };
            let problem = |p: String| VerifyProblem {
                key: key.to_hex(),
                kind: kind.clone(),
                problem: p,
            };
            if record.key() != key {
                problems.push(problem(format!(
                    "stored key record hashes to {}, not to its key",
                    record.key()
                )));
            }
            if let Some(row) = index.get(&key) {
                if let Err(e) = self.output_bytes(row) {
                    problems.push(problem(format!("output: {e}")));
                }
                for a in &row.attachments {
                    if let Err(e) = self.blobs.get(a) {
                        problems.push(problem(format!("attachment: {e}")));
                    }
                }
            }
        }
        Ok(problems)
    }

    /// Removes rows whose key is not in `keep` and blobs not referenced by kept
    /// rows or by `keep_blobs`; builds whose manifest blob is not kept are
    /// forgotten, with their failures. Returns (rows, blobs, bytes) that were
    /// or would be freed. Call only under the cache lock.
    pub fn gc(
        &self,
        keep: &std::collections::HashSet<Digest>,
        keep_blobs: &std::collections::HashSet<Digest>,
        apply: bool,
    ) -> Result<(usize, usize, u64), StoreError> {
        let index = self.load_index()?;
        let mut live_blobs = keep_blobs.clone();
        let mut dead_rows = Vec::new();
        for (key, row) in &index {
            if keep.contains(key) {
                live_blobs.insert(row.output);
                live_blobs.extend(row.attachments.iter().copied());
            } else {
                dead_rows.push(*key);
            }
        }
        let mut dead_blobs = Vec::new();
        let mut bytes = 0u64;
        let root = self.dir.join("blobs");
        for shard in fs::read_dir(&root).map_err(io_err(&root))?.flatten() {
            for entry in fs::read_dir(shard.path()).into_iter().flatten().flatten() {
                let name = format!(
                    "{}{}",
                    shard.file_name().to_string_lossy(),
                    entry.file_name().to_string_lossy()
                );
                let live = name
                    .parse::<Digest>()
                    .map(|d| live_blobs.contains(&d))
                    .unwrap_or(false);
                if !live {
                    bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
                    dead_blobs.push(entry.path());
                }
            }
        }
        if apply {
            let tx = self
                .conn
                .unchecked_transaction()
                .map_err(|e| self.index_err(e))?;
            for key in &dead_rows {
                tx.execute("DELETE FROM nodes WHERE key = ?1", params![key.0.to_vec()])
                    .map_err(|e| self.index_err(e))?;
            }
            // A build whose manifest goes is forgotten with it, so that later
            // commands never meet a build row naming a missing blob. Builds
            // without a manifest were killed (gc runs under the cache lock, so
            // none is running); their failures go with them.
            let builds: Vec<(i64, Option<Vec<u8>>)> = {
                let mut stmt = tx
                    .prepare("SELECT id, manifest FROM builds")
                    .map_err(|e| self.index_err(e))?;
                let rows = stmt
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(|e| self.index_err(e))?;
                rows.collect::<Result<_, _>>()
                    .map_err(|e| self.index_err(e))?
            };
            for (id, manifest) in builds {
                let live = manifest
                    .and_then(|m| Digest::from_slice(&m))
                    .is_some_and(|m| live_blobs.contains(&m));
                if !live {
                    tx.execute("DELETE FROM builds WHERE id = ?1", params![id])
                        .map_err(|e| self.index_err(e))?;
                }
            }
            tx.execute(
                "DELETE FROM failures WHERE build NOT IN (SELECT id FROM builds)",
                [],
            )
            .map_err(|e| self.index_err(e))?;
            tx.commit().map_err(|e| self.index_err(e))?;
            // Rows go first: a crash in between leaves orphan blobs, never rows without blobs.
            for path in &dead_blobs {
                let _ = fs::remove_file(path);
            }
        }
        Ok((dead_rows.len(), dead_blobs.len(), bytes))
    }

    /// Removes temp files left by a killed process. Call only under the cache lock.
    pub fn clean_tmp(&self) {
        let tmp = self.dir.join("tmp");
        if let Ok(entries) = fs::read_dir(&tmp) {
            for e in entries.flatten() {
                let _ = fs::remove_file(e.path()).or_else(|_| fs::remove_dir_all(e.path()));
            }
        }
    }

    pub(crate) fn writer(&self) -> Result<IndexWriter, StoreError> {
        Ok(IndexWriter {
            conn: open_conn(&self.dir.join("index.sqlite"))?,
            path: self.dir.join("index.sqlite"),
        })
    }

    pub fn stats(&self) -> Result<(i64, i64), StoreError> {
        let nodes = self
            .conn
            .query_row("SELECT count(*) FROM nodes", [], |r| r.get(0))
            .map_err(|e| self.index_err(e))?;
        let builds = self
            .conn
            .query_row("SELECT count(*) FROM builds", [], |r| r.get(0))
            .map_err(|e| self.index_err(e))?;
        Ok((nodes, builds))
    }
}

/// The single writing connection of a build; commits rows in batches.
pub(crate) struct IndexWriter {
    conn: Connection,
    path: PathBuf,
}

impl IndexWriter {
    pub(crate) fn commit(
        &mut self,
        rows: &[NewRow],
        failures: &[FailureRow],
    ) -> Result<(), StoreError> {
        let err = |e: rusqlite::Error| StoreError::Index {
            path: self.path.clone(),
            detail: e.to_string(),
        };
        let tx = self.conn.transaction().map_err(err)?;
        {
            let mut ins = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO nodes(key, schema, kind, kind_version, params, params_json, deps, name, output, inline, attachments, started_ms, duration_ms, build)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                )
                .map_err(err)?;
            for r in rows {
                ins.execute(params![
                    r.key.0.to_vec(),
                    r.record.schema,
                    r.record.kind,
                    r.record.kind_version,
                    r.record.params,
                    r.params_json,
                    join_digests(&r.record.deps),
                    r.name,
                    r.output.0.to_vec(),
                    r.inline,
                    join_digests(&r.attachments),
                    r.started_ms,
                    r.duration_ms,
                    r.build,
                ])
                .map_err(err)?;
            }
            let mut fail = tx
                .prepare_cached(
                    "INSERT INTO failures(key, name, kind, reason, build, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(err)?;
            for f in failures {
                fail.execute(params![
                    hex::decode(&f.key).unwrap_or_default(),
                    f.name,
                    f.kind,
                    f.reason,
                    f.build,
                    f.at_ms
                ])
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }
}

fn open_conn(path: &Path) -> Result<Connection, StoreError> {
    let err = |e: rusqlite::Error| StoreError::Index {
        path: path.to_owned(),
        detail: e.to_string(),
    };
    let conn = Connection::open(path).map_err(err)?;
    conn.busy_timeout(std::time::Duration::from_secs(60))
        .map_err(err)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(err)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(err)?;
    if version > INDEX_SCHEMA {
        return Err(StoreError::NewerSchema { found: version });
    }
    if version < INDEX_SCHEMA {
        conn.execute_batch(
            "BEGIN IMMEDIATE;
             CREATE TABLE IF NOT EXISTS nodes(
                key BLOB PRIMARY KEY, schema INTEGER NOT NULL, kind TEXT NOT NULL,
                kind_version INTEGER NOT NULL, params BLOB NOT NULL, params_json TEXT NOT NULL,
                deps BLOB NOT NULL, name TEXT NOT NULL, output BLOB NOT NULL, inline BLOB,
                attachments BLOB NOT NULL, started_ms INTEGER NOT NULL,
                duration_ms INTEGER NOT NULL, build INTEGER NOT NULL) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS failures(
                key BLOB NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, reason TEXT NOT NULL,
                build INTEGER NOT NULL, at_ms INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS builds(
                id INTEGER PRIMARY KEY, started_ms INTEGER NOT NULL, finished_ms INTEGER,
                label TEXT NOT NULL, manifest BLOB, summary TEXT);
             PRAGMA user_version = 1;
             COMMIT;",
        )
        .map_err(err)?;
    }
    Ok(conn)
}

fn split_digests(bytes: &[u8]) -> Vec<Digest> {
    bytes
        .chunks_exact(32)
        .filter_map(Digest::from_slice)
        .collect()
}

fn join_digests(digests: &[Digest]) -> Vec<u8> {
    digests.iter().flat_map(|d| d.0).collect()
}
