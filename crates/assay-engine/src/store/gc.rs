//! Integrity checks of the cache and collection of what no kept build
//! reaches.

use std::collections::HashSet;
use std::fs;

use rusqlite::params;
use serde::Serialize;

use super::index::split_digests;
use super::{Store, StoreError, io_err};
use crate::key::{Digest, KeyRecord};

/// A problem found by [`Store::verify`].
#[derive(Clone, Debug, Serialize)]
pub struct VerifyProblem {
    pub key: String,
    pub kind: String,
    pub problem: String,
}

impl Store {
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

    /// Full integrity check: sqlite's own, then every row's output and attachments.
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
        keep: &HashSet<Digest>,
        keep_blobs: &HashSet<Digest>,
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
}
