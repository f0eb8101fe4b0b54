//! One build at a time per cache: an exclusive `flock` on `cache/lock`.
//!
//! The lock is released by the kernel when the process dies, so a `kill -9`
//! never leaves a stale lock behind. A second build waits (after saying so).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot open the cache lock {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot lock {path}: {source}")]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub struct CacheLock {
    _file: File,
}

impl CacheLock {
    /// Takes the lock; if another process holds it, calls `on_wait` with that
    /// process's pid (as written in the file) and blocks until it is free.
    pub fn acquire(dir: &Path, on_wait: impl FnOnce(Option<u32>)) -> Result<CacheLock, LockError> {
        std::fs::create_dir_all(dir).map_err(|source| LockError::Open {
            path: dir.to_owned(),
            source,
        })?;
        let path = dir.join("lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|source| LockError::Open {
                path: path.clone(),
                source,
            })?;
        let fd = file.as_raw_fd();
        // SAFETY: flock on a file descriptor we own; no memory is involved.
        if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            on_wait(holder.trim().parse().ok());
            // SAFETY: as above.
            if unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
                return Err(LockError::Lock {
                    path,
                    source: std::io::Error::last_os_error(),
                });
            }
        }
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = write!(file, "{}", std::process::id());
        Ok(CacheLock { _file: file })
    }
}
