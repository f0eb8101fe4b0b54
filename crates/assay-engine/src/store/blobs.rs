//! Content-addressed blob files: written whole or not at all, re-hashed on
//! every read.

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{StoreError, io_err};
use crate::key::Digest;

/// Content-addressed blob files. Cheap to clone; safe to share between jobs.
#[derive(Clone, Debug)]
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    pub(super) fn new(dir: PathBuf) -> Blobs {
        Blobs { dir }
    }
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Blobs {
    /// The cache directory the blobs are in.
    pub fn cache_dir(&self) -> &std::path::Path {
        &self.dir
    }

    pub fn path(&self, digest: &Digest) -> PathBuf {
        let hex = digest.to_hex();
        self.dir.join("blobs").join(&hex[..2]).join(&hex[2..])
    }

    /// Stores bytes under their digest (idempotent; repairs a corrupt copy).
    pub fn put(&self, bytes: &[u8]) -> Result<Digest, StoreError> {
        let digest = Digest::of(bytes);
        self.put_hashed(bytes, digest)?;
        Ok(digest)
    }

    /// [`Blobs::put`] of bytes whose digest the caller has just computed.
    pub(crate) fn put_hashed(&self, bytes: &[u8], digest: Digest) -> Result<(), StoreError> {
        let path = self.path(&digest);
        // The same bytes are already there (compared, not hashed again: a
        // no-op build's manifest is megabytes, and the same as last time's).
        if fs::read(&path).is_ok_and(|existing| existing == bytes) {
            return Ok(());
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
        Ok(())
    }

    /// Moves the file at `path` (on the cache's filesystem, written whole)
    /// into the store under its digest, for blobs too big to hold in
    /// memory; a sound existing copy is kept and the file removed, a
    /// corrupt one replaced.
    pub fn put_file(&self, path: &std::path::Path) -> Result<Digest, StoreError> {
        let digest = Digest::of_file(path).map_err(io_err(path))?;
        let dest = self.path(&digest);
        if Digest::of_file(&dest).is_ok_and(|d| d == digest) {
            let _ = fs::remove_file(path);
            return Ok(digest);
        }
        let parent = dest.parent().unwrap_or(&self.dir);
        fs::create_dir_all(parent).map_err(io_err(parent))?;
        fs::rename(path, &dest).map_err(io_err(&dest))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_moves_in_under_its_digest_and_a_corrupt_copy_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(dir.path().to_owned());
        let file = dir.path().join("pack");
        fs::write(&file, b"packed").unwrap();
        let digest = blobs.put_file(&file).unwrap();
        assert_eq!(digest, Digest::of(b"packed"));
        assert!(!file.exists());
        assert_eq!(blobs.get(&digest).unwrap(), b"packed");
        fs::write(blobs.path(&digest), b"rotten").unwrap();
        fs::write(&file, b"packed").unwrap();
        assert_eq!(blobs.put_file(&file).unwrap(), digest);
        assert_eq!(blobs.get(&digest).unwrap(), b"packed");
    }
}
