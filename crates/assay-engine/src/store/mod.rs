//! The cache: `index.sqlite` (key → output digest and the key record) plus
//! content-addressed blobs under `blobs/ab/cdef…`. One concern per file:
//! [`blobs`] (the files), [`index`] (the success and failure rows, and the
//! build's one writer), [`manifest`] (what each build did), [`gc`] (integrity
//! checks and collection).
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

mod blobs;
mod gc;
mod index;
mod manifest;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::Connection;

use crate::key::Digest;

pub use blobs::Blobs;
pub use gc::VerifyProblem;
pub use index::{FailureRow, IndexRow};
pub(crate) use index::{HitRow, Hits, IndexWriter, NewRow};
use index::{INDEX_SCHEMA, open_conn};
pub use manifest::{BuildManifest, BuildRecord, ManifestEntry};
pub(crate) use manifest::{ManifestEntryRef, ManifestWriter};

/// Outputs up to this size are stored inline in the index row.
pub(crate) const INLINE_MAX: usize = 4096;

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
            blobs: Blobs::new(dir.to_owned()),
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
