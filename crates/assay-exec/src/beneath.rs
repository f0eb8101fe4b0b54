//! Reading back what a run left in its tree, without trusting its shape.
//!
//! After a run, its tree is the graded code's work: any directory on the way
//! to a report may have become a symlink to a host path (`reports/` → `/`),
//! and assay may be root. So a file of the tree is opened from the tree's
//! directory with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)`: the kernel refuses any symlink on the whole path
//! (the last component included) and any step out of the tree, in one call,
//! so nothing can be swapped between a check and the open. It is opened
//! `O_NONBLOCK` (a FIFO the run left cannot block the grader) and must be a
//! regular file (checked on the open descriptor). Where `openat2` is missing
//! (Linux before 5.6, or a seccomp filter that hides it) the path is walked
//! one component at a time with `O_NOFOLLOW`, which gives the same answer.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{Mode, OFlags, ResolveFlags};

/// Why a file of a run's tree was not read.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    #[error("not found")]
    NotFound,
    /// A symlink at the path or on the way to it.
    #[error("is a symbolic link (or lies beyond one); not read")]
    Symlink,
    /// Not a plain relative path below the tree (`..`, absolute, empty).
    #[error("is not a path below the tree; not read")]
    Outside,
    /// A directory, FIFO, socket or device.
    #[error("is not a regular file; not read")]
    NotAFile,
    #[error("is {size} bytes, over the evidence cap ({cap} bytes); not read")]
    TooLarge { size: u64, cap: u64 },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Opens `rel` below the directory `root` as a regular file, following no
/// symlink anywhere on the way (see the module header).
pub fn open(root: &Path, rel: &Path) -> Result<File, BeneathError> {
    let plain = rel.components().next().is_some()
        && rel.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(BeneathError::Outside);
    }
    let dir = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)?;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let fd = match rustix::fs::openat2(&dir, rel, flags | OFlags::NOFOLLOW, Mode::empty(), resolve)
    {
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => walk(dir, rel, flags)?,
        opened => opened.map_err(refusal)?,
    };
    let file = File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(BeneathError::NotAFile);
    }
    Ok(file)
}

/// [`open`] without `openat2`: one `openat(O_NOFOLLOW)` per component.
fn walk(mut dir: OwnedFd, rel: &Path, flags: OFlags) -> Result<OwnedFd, BeneathError> {
    let mut components = rel.components().peekable();
    while let Some(component) = components.next() {
        if components.peek().is_none() {
            return rustix::fs::openat(
                &dir,
                component.as_os_str(),
                flags | OFlags::NOFOLLOW,
                Mode::empty(),
            )
            .map_err(refusal);
        }
        // O_PATH|O_NOFOLLOW opens a symlink itself: its type says what it is.
        let step = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        dir = rustix::fs::openat(&dir, component.as_os_str(), step, Mode::empty())
            .map_err(refusal)?;
        match rustix::fs::FileType::from_raw_mode(
            rustix::fs::fstat(&dir).map_err(io::Error::from)?.st_mode,
        ) {
            rustix::fs::FileType::Directory => {}
            rustix::fs::FileType::Symlink => return Err(BeneathError::Symlink),
            _ => return Err(BeneathError::NotAFile),
        }
    }
    Err(BeneathError::Outside)
}

fn refusal(errno: rustix::io::Errno) -> BeneathError {
    use rustix::io::Errno;
    match errno {
        Errno::NOENT => BeneathError::NotFound,
        // ELOOP: a symlink under RESOLVE_NO_SYMLINKS or O_NOFOLLOW; EXDEV:
        // a step out of the tree.
        Errno::LOOP | Errno::XDEV => BeneathError::Symlink,
        // ENOTDIR: a file where a directory was needed; ENXIO: a socket.
        Errno::NOTDIR | Errno::NXIO => BeneathError::NotAFile,
        other => BeneathError::Io(other.into()),
    }
}

/// The bytes of the regular file `rel` below `root`, if it holds at most
/// `cap` bytes (see [`open`]).
pub fn read(root: &Path, rel: &Path, cap: u64) -> Result<Vec<u8>, BeneathError> {
    let file = open(root, rel)?;
    let size = file.metadata()?.len();
    if size > cap {
        return Err(BeneathError::TooLarge { size, cap });
    }
    let mut out = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        // It grew after the check: whatever is still writing it is not
        // to be believed either.
        return Err(BeneathError::TooLarge {
            size: out.len() as u64,
            cap,
        });
    }
    Ok(out)
}

/// blake3 of the regular file `rel` below `root`, streamed (no cap: a
/// watched file is hashed whole, never held).
pub fn hash(root: &Path, rel: &Path) -> Result<[u8; 32], BeneathError> {
    let mut file = open(root, rel)?;
    let mut hasher = blake3::Hasher::new();
    io::copy(&mut file, &mut hasher)?;
    Ok(*hasher.finalize().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tree/reports")).unwrap();
        std::fs::write(dir.path().join("tree/reports/r.txt"), "ok").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "HOST").unwrap();
        dir
    }

    #[test]
    fn a_plain_file_below_the_tree_is_read() {
        let d = tree();
        let root = d.path().join("tree");
        assert_eq!(read(&root, Path::new("reports/r.txt"), 10).unwrap(), b"ok");
        assert!(matches!(
            read(&root, Path::new("reports/r.txt"), 1),
            Err(BeneathError::TooLarge { size: 2, cap: 1 })
        ));
        assert!(matches!(
            read(&root, Path::new("reports/none.txt"), 10),
            Err(BeneathError::NotFound)
        ));
        assert!(matches!(
            read(&root, Path::new("reports"), 10),
            Err(BeneathError::NotAFile)
        ));
    }

    #[test]
    fn a_symlinked_directory_on_the_way_is_never_followed() {
        let d = tree();
        let root = d.path().join("tree");
        std::fs::create_dir(root.join("out")).unwrap();
        std::os::unix::fs::symlink(d.path(), root.join("out/link")).unwrap();
        std::os::unix::fs::symlink(d.path().join("outside.txt"), root.join("file-link")).unwrap();
        std::os::unix::fs::symlink("reports", root.join("inside-link")).unwrap();
        for rel in ["out/link/outside.txt", "file-link", "inside-link/r.txt"] {
            let got = read(&root, Path::new(rel), 10);
            assert!(matches!(got, Err(BeneathError::Symlink)), "{rel}: {got:?}");
        }
        for rel in ["../outside.txt", "/etc/passwd", "", "./reports/r.txt"] {
            let got = read(&root, Path::new(rel), 10);
            assert!(matches!(got, Err(BeneathError::Outside)), "{rel}: {got:?}");
        }
        // The same refusals one component at a time (no openat2).
        let dir = rustix::fs::open(&root, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let got = walk(dir, Path::new("out/link/outside.txt"), OFlags::RDONLY);
        assert!(matches!(got, Err(BeneathError::Symlink)), "{got:?}");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tree();
        let root = d.path().join("tree");
        let fifo = root.join("reports/fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let got = read(&root, Path::new("reports/fifo"), 10);
        assert!(matches!(got, Err(BeneathError::NotAFile)), "{got:?}");
    }
}
