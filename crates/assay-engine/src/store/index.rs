//! The index rows: a success per key (output digest, inline bytes,
//! attachments, the key record) and the failures, with the build's one
//! writing connection.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde::Serialize;

use super::{Store, StoreError};
use crate::key::{Digest, DigestMap, KeyRecord};

pub(crate) const INDEX_SCHEMA: i64 = 2;

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
    /// The job's class of the failure ([`crate::JobError::class`]), if it
    /// gave one.
    pub class: Option<String>,
    pub build: i64,
    pub at_ms: i64,
}

/// The index as a build reads it: every success row's output, inline bytes
/// and attachments by key, packed (no allocation per row: the inline bytes
/// and attachments of a part share one buffer each), so loading 100,000
/// rows and looking them up in a walk of the graph stays cheap. A large
/// index is loaded in parts, one per range of keys, on their own threads.
pub(crate) struct Hits {
    parts: Vec<HitPart>,
}

#[derive(Default)]
struct HitPart {
    map: DigestMap<Hit>,
    bytes: Vec<u8>,
    attachments: Vec<Digest>,
}

#[derive(Clone, Copy)]
struct Hit {
    output: Digest,
    /// Where the inline output is in `HitPart::bytes`; `len` is
    /// `NOT_INLINE` when the output is a blob.
    at: usize,
    len: u32,
    /// Where the attachments are in `HitPart::attachments`.
    attachments_at: u32,
    attachments_len: u32,
    /// The inline bytes hash to `output` (checked as the row was loaded).
    sound: bool,
}

const NOT_INLINE: u32 = u32::MAX;

/// The writer's page cache, in KiB (sqlite's negative `cache_size`): big
/// enough that a large transaction's pages are not spilled in its middle,
/// small because every commit walks all of it while the database is under
/// 1 GiB. A B-tree balance that swaps two pages' numbers parks one at the
/// lock-byte page for a moment (page 262,145 at 4 KiB; sqlite's
/// `balance_nonroot`), which lifts the cache's highest page number
/// (`pcache1`'s `iMaxKey`) far past the database's end, so the commit's
/// truncation of the cache to that end (`pager_end_transaction`) scans
/// every slot instead of the few past it: a commit's cost grows with the
/// cache, and a build commits about ten rows at a time
/// (docs/performance.md, "The index writer's page cache").
const WRITER_CACHE_KIB: i64 = -32 * 1024;

/// Below this many rows expected, the index is loaded on one thread.
const SPLIT_MIN: usize = 20_000;

/// One row of [`Hits`]: what a build needs to decide a hit and feed dependents.
#[derive(Clone, Copy)]
pub(crate) struct HitRow<'a> {
    pub(crate) output: Digest,
    /// The output bytes when stored in the row, else `None` (a blob).
    pub(crate) inline: Option<&'a [u8]>,
    pub(crate) attachments: &'a [Digest],
    sound: bool,
}

impl Hits {
    pub(crate) fn get(&self, key: &Digest) -> Option<HitRow<'_>> {
        let part = &self.parts[usize::from(key.0[0]) * self.parts.len() / 256];
        let hit = part.map.get(key)?;
        let inline =
            (hit.len != NOT_INLINE).then(|| &part.bytes[hit.at..hit.at + hit.len as usize]);
        let at = hit.attachments_at as usize;
        Some(HitRow {
            output: hit.output,
            inline,
            attachments: &part.attachments[at..at + hit.attachments_len as usize],
            sound: hit.sound,
        })
    }
}

impl HitPart {
    fn add(&mut self, key: Digest, output: Digest, inline: Option<&[u8]>, attachments: &[u8]) {
        let (at, len, sound) = match inline {
            Some(b) => {
                self.bytes.extend_from_slice(b);
                let at = self.bytes.len() - b.len();
                (at, b.len() as u32, Digest::of(b) == output)
            }
            None => (0, NOT_INLINE, true),
        };
        let attachments_at = self.attachments.len() as u32;
        self.attachments
            .extend(attachments.chunks_exact(32).filter_map(Digest::from_slice));
        let attachments_len = self.attachments.len() as u32 - attachments_at;
        self.map.insert(
            key,
            Hit {
                output,
                at,
                len,
                attachments_at,
                attachments_len,
                sound,
            },
        );
    }
}

impl HitRow<'_> {
    /// The inline output checked against the output digest (when the row
    /// was loaded); a blob's bytes are checked as they are read.
    pub(crate) fn check_inline(&self) -> Result<Option<&[u8]>, StoreError> {
        match self.inline {
            Some(bytes) if !self.sound => Err(StoreError::CorruptBlob {
                digest: self.output,
                actual: Digest::of(bytes),
            }),
            inline => Ok(inline),
        }
    }

    /// The output bytes, verified against the output digest.
    pub(crate) fn bytes(&self, store: &Store) -> Result<Vec<u8>, StoreError> {
        match self.check_inline()? {
            Some(bytes) => Ok(bytes.to_vec()),
            None => store.blobs.get(&self.output),
        }
    }
}

impl Store {
    /// Every success row, for hit decisions: one table scan.
    pub fn load_index(&self) -> Result<DigestMap<IndexRow>, StoreError> {
        let mut map = DigestMap::default();
        let path = self.dir.join("index.sqlite");
        scan_index(
            &self.conn,
            &path,
            (0, 256),
            |key, output, inline, attachments| {
                map.insert(
                    key,
                    IndexRow {
                        output,
                        inline: inline.map(<[u8]>::to_vec),
                        attachments: split_digests(attachments),
                    },
                );
            },
        )?;
        Ok(map)
    }

    /// The index packed for a build ([`Hits`]), sized up front for about
    /// `expected` rows (the node count of the build about to run). From
    /// [`SPLIT_MIN`] rows on, the upper half of the keys is loaded on a
    /// second thread, through a read-only connection of its own.
    pub(crate) fn load_hits(&self, expected: usize) -> Result<Hits, StoreError> {
        let parts = if expected >= SPLIT_MIN { 2 } else { 1 };
        let path = self.dir.join("index.sqlite");
        let path = path.as_path();
        let part = |conn: &Connection, i: usize| -> Result<HitPart, StoreError> {
            let mut part = HitPart {
                map: DigestMap::with_capacity_and_hasher(
                    expected.div_ceil(parts),
                    Default::default(),
                ),
                ..HitPart::default()
            };
            let range = (i * 256 / parts, (i + 1) * 256 / parts);
            scan_index(conn, path, range, |key, output, inline, attachments| {
                part.add(key, output, inline, attachments);
            })?;
            Ok(part)
        };
        if parts == 1 {
            return Ok(Hits {
                parts: vec![part(&self.conn, 0)?],
            });
        }
        let (low, high) = std::thread::scope(|s| {
            let high = s.spawn(|| {
                let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
                let conn = Connection::open_with_flags(path, flags).map_err(index_err(path))?;
                part(&conn, 1)
            });
            let low = part(&self.conn, 0);
            (low, high.join())
        });
        let high = high.map_err(|_| StoreError::Index {
            path: path.to_owned(),
            detail: "the thread loading the index panicked".into(),
        })?;
        Ok(Hits {
            parts: vec![low?, high?],
        })
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
        let sql = "SELECT key, name, kind, reason, build, at_ms, class FROM failures WHERE (?1 IS NULL OR build = ?1) ORDER BY at_ms";
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.index_err(e))?;
        let rows = stmt
            .query_map(params![build], |r| {
                let key: Vec<u8> = r.get(0)?;
                Ok(FailureRow {
                    key: hex::encode(key),
                    name: r.get(1)?,
                    kind: r.get(2)?,
                    reason: r.get(3)?,
                    class: r.get(6)?,
                    build: r.get(4)?,
                    at_ms: r.get(5)?,
                })
            })
            .map_err(|e| self.index_err(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.index_err(e))
    }

    pub(crate) fn writer(&self) -> Result<IndexWriter, StoreError> {
        let path = self.dir.join("index.sqlite");
        let conn = open_conn(&path)?;
        // Keys are random, so a transaction of thousands of rows touches
        // most of the table's pages: with sqlite's default cache (2 MB)
        // they are read back from the file and spilled to the WAL in the
        // middle of the transaction, again and again. The cache only grows
        // as pages are used.
        conn.pragma_update(None, "cache_size", WRITER_CACHE_KIB)
            .map_err(index_err(&path))?;
        Ok(IndexWriter { conn, path })
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
            // In key order: consecutive inserts land on the same pages.
            let mut order: Vec<&NewRow> = rows.iter().collect();
            order.sort_unstable_by_key(|r| r.key);
            for r in order {
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
                    "INSERT INTO failures(key, name, kind, reason, build, at_ms, class) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(err)?;
            for f in failures {
                fail.execute(params![
                    hex::decode(&f.key).unwrap_or_default(),
                    f.name,
                    f.kind,
                    f.reason,
                    f.build,
                    f.at_ms,
                    f.class
                ])
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }
}

/// Hands every success row of the index `conn` (at `path`) to `each` as
/// (key, output, inline bytes, attachment digests joined), borrowed from
/// sqlite's row buffer: one table scan that copies nothing. Only the rows
/// whose key's first byte is in `first.0..first.1` (of 256).
fn scan_index(
    conn: &Connection,
    path: &Path,
    first: (usize, usize),
    mut each: impl FnMut(Digest, Digest, Option<&[u8]>, &[u8]),
) -> Result<(), StoreError> {
    // Two statements, so that sqlite seeks both bounds of the range.
    let sql = if first.1 < 256 {
        "SELECT key, output, inline, attachments FROM nodes WHERE key >= ?1 AND key < ?2"
    } else {
        "SELECT key, output, inline, attachments FROM nodes WHERE key >= ?1 AND ?2 IS NULL"
    };
    let mut stmt = conn.prepare_cached(sql).map_err(index_err(path))?;
    let low = vec![first.0 as u8];
    let high = (first.1 < 256).then(|| vec![first.1 as u8]);
    let mut rows = stmt.query(params![low, high]).map_err(index_err(path))?;
    let bad = |detail: &str| StoreError::Index {
        path: path.to_owned(),
        detail: detail.to_owned(),
    };
    while let Some(row) = rows.next().map_err(index_err(path))? {
        let blob = |i: usize| -> Result<Option<&[u8]>, StoreError> {
            row.get_ref(i)
                .and_then(|v| v.as_blob_or_null().map_err(Into::into))
                .map_err(index_err(path))
        };
        let (Some(key), Some(output)) = (
            blob(0)?.and_then(Digest::from_slice),
            blob(1)?.and_then(Digest::from_slice),
        ) else {
            return Err(bad("a row holds a key or digest that is not 32 bytes"));
        };
        each(key, output, blob(2)?, blob(3)?.unwrap_or_default());
    }
    Ok(())
}

fn index_err(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError::Index {
        path: path.to_owned(),
        detail: e.to_string(),
    }
}

pub(super) fn open_conn(path: &Path) -> Result<Connection, StoreError> {
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
        upgrade(&conn).map_err(err)?;
    }
    Ok(conn)
}

/// Makes the tables of [`INDEX_SCHEMA`], in one write transaction that
/// reads the version again, so two processes opening an older index at once
/// upgrade it once. Schema 1 had no `failures.class`: its rows keep a NULL.
fn upgrade(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let made = (|| {
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version >= INDEX_SCHEMA {
            return Ok(());
        }
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS nodes(
                key BLOB PRIMARY KEY, schema INTEGER NOT NULL, kind TEXT NOT NULL,
                kind_version INTEGER NOT NULL, params BLOB NOT NULL, params_json TEXT NOT NULL,
                deps BLOB NOT NULL, name TEXT NOT NULL, output BLOB NOT NULL, inline BLOB,
                attachments BLOB NOT NULL, started_ms INTEGER NOT NULL,
                duration_ms INTEGER NOT NULL, build INTEGER NOT NULL) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS failures(
                key BLOB NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, reason TEXT NOT NULL,
                build INTEGER NOT NULL, at_ms INTEGER NOT NULL, class TEXT);
             CREATE TABLE IF NOT EXISTS builds(
                id INTEGER PRIMARY KEY, started_ms INTEGER NOT NULL, finished_ms INTEGER,
                label TEXT NOT NULL, manifest BLOB, summary TEXT);",
        )?;
        if version == 1 {
            conn.execute_batch("ALTER TABLE failures ADD COLUMN class TEXT")?;
        }
        conn.pragma_update(None, "user_version", INDEX_SCHEMA)
    })();
    match made {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

pub(super) fn split_digests(bytes: &[u8]) -> Vec<Digest> {
    bytes
        .chunks_exact(32)
        .filter_map(Digest::from_slice)
        .collect()
}

fn join_digests(digests: &[Digest]) -> Vec<u8> {
    digests.iter().flat_map(|d| d.0).collect()
}
