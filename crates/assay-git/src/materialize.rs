//! Writing a tree's files into a fresh directory: a checkout without `.git`.
//!
//! Directories are created first, one plain `mkdir` each, parents before
//! children (never `create_dir_all`, which would follow a symlink planted
//! by a hostile tree). Files are then written in parallel: each worker has
//! its own thread-local gix handle (which honours alternates) and a reused
//! buffer, and takes the next entry from a shared counter. Files are created
//! with `O_CREAT|O_EXCL`, so an existing entry, symlink or not, is never
//! written through (POSIX: `O_EXCL` fails on a symlink, dangling or not). Symlinks are created as symlinks; their targets are not
//! interpreted here (`compose` vetted them).

use std::ffi::OsStr;
use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use gix::objs::FindExt;

use crate::error::GitError;
use crate::tree_walk::{WalkEntry, parse_id, walk};

/// What [`crate::TreeStore::materialize`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaterializeStats {
    pub files: usize,
    pub symlinks: usize,
    /// Directories created below the destination (including empty ones
    /// standing for submodules).
    pub dirs: usize,
    /// Bytes of regular file content written.
    pub bytes: u64,
    /// Threads that wrote the entries: 1 below the parallel threshold.
    pub workers: usize,
}

/// Below this many files a single thread is faster than spawning workers.
const PARALLEL_THRESHOLD: usize = 64;
const MAX_WORKERS: usize = 4;

fn dest_path(dest: &Path, rel: &[u8]) -> PathBuf {
    dest.join(OsStr::from_bytes(rel))
}

fn prepare_dest(dest: &Path) -> Result<(), GitError> {
    match std::fs::symlink_metadata(dest) {
        Ok(meta) if meta.is_dir() => {
            let mut items = std::fs::read_dir(dest).map_err(|e| GitError::io(dest, e))?;
            if items.next().is_some() {
                return Err(GitError::UnsafePath {
                    path: dest.display().to_string(),
                    reason: "destination is not empty".into(),
                });
            }
            Ok(())
        }
        Ok(_) => Err(GitError::UnsafePath {
            path: dest.display().to_string(),
            reason: "destination exists and is not a directory".into(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dest).map_err(|e| GitError::io(dest, e))
        }
        Err(e) => Err(GitError::io(dest, e)),
    }
}

/// Creates one directory; an existing real directory is accepted, anything
/// else (notably a symlink) is refused.
fn make_dir(path: &Path) -> Result<(), GitError> {
    match DirBuilder::new().mode(0o777).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(path).map_err(|e| GitError::io(path, e))?;
            if meta.is_dir() {
                Ok(())
            } else {
                Err(GitError::UnsafePath {
                    path: path.display().to_string(),
                    reason: "a directory of the tree collides with another entry".into(),
                })
            }
        }
        Err(e) => Err(GitError::io(path, e)),
    }
}

struct Shared<'a> {
    repo: &'a gix::ThreadSafeRepository,
    dest: &'a Path,
    entries: &'a [WalkEntry],
    next: AtomicUsize,
    failed: AtomicBool,
    error: Mutex<Option<GitError>>,
}

#[derive(Default)]
struct Counts {
    files: usize,
    symlinks: usize,
    dirs: usize,
    bytes: u64,
}

fn write_entry(
    repo: &gix::Repository,
    dest: &Path,
    entry: &WalkEntry,
    buf: &mut Vec<u8>,
    counts: &mut Counts,
) -> Result<(), GitError> {
    let path = dest_path(dest, &entry.path);
    if entry.mode.is_commit() {
        // A submodule: git checks out an empty directory in its place.
        make_dir(&path)?;
        counts.dirs += 1;
        return Ok(());
    }
    let blob = repo.objects.find_blob(&entry.id, buf).map_err(|e| {
        GitError::object(
            entry.id,
            format!("blob of {}", String::from_utf8_lossy(&entry.path)),
            e,
        )
    })?;
    if entry.mode.is_link() {
        std::os::unix::fs::symlink(OsStr::from_bytes(blob.data), &path)
            .map_err(|e| GitError::io(&path, e))?;
        counts.symlinks += 1;
        return Ok(());
    }
    let mode = if entry.mode.is_executable() {
        0o777
    } else {
        0o666
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&path)
        .map_err(|e| GitError::io(&path, e))?;
    file.write_all(blob.data)
        .map_err(|e| GitError::io(&path, e))?;
    counts.files += 1;
    counts.bytes += blob.data.len() as u64;
    Ok(())
}

fn worker(shared: &Shared<'_>) -> Counts {
    let repo = shared.repo.to_thread_local();
    let mut buf = Vec::new();
    let mut counts = Counts::default();
    while !shared.failed.load(Ordering::Relaxed) {
        let i = shared.next.fetch_add(1, Ordering::Relaxed);
        let Some(entry) = shared.entries.get(i) else {
            break;
        };
        if let Err(e) = write_entry(&repo, shared.dest, entry, &mut buf, &mut counts) {
            shared.failed.store(true, Ordering::Relaxed);
            if let Ok(mut slot) = shared.error.lock() {
                slot.get_or_insert(e);
            }
            break;
        }
    }
    counts
}

pub(crate) fn materialize(
    repo: &gix::ThreadSafeRepository,
    tree: &str,
    dest: &Path,
) -> Result<MaterializeStats, GitError> {
    let local = repo.to_thread_local();
    let root = parse_id(tree)?;
    let listing = walk(&local, root)?;
    prepare_dest(dest)?;
    for dir in &listing.dirs {
        make_dir(&dest_path(dest, dir))?;
    }

    let workers = if listing.entries.len() < PARALLEL_THRESHOLD {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, MAX_WORKERS)
    };
    let shared = Shared {
        repo,
        dest,
        entries: &listing.entries,
        next: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        error: Mutex::new(None),
    };
    let totals: Vec<Counts> = if workers == 1 {
        vec![worker(&shared)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| scope.spawn(|| worker(&shared)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    };
    if let Some(e) = shared.error.into_inner().ok().flatten() {
        return Err(e);
    }
    let mut stats = MaterializeStats {
        dirs: listing.dirs.len(),
        workers,
        ..MaterializeStats::default()
    };
    for c in totals {
        stats.files += c.files;
        stats.symlinks += c.symlinks;
        stats.dirs += c.dirs;
        stats.bytes += c.bytes;
    }
    Ok(stats)
}
