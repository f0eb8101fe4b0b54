//! A release file hashed in one read. A file read only to be hashed, none
//! of it in the page cache, is read around the cache (`O_DIRECT`): at a
//! million sessions a cold `verify` reads twelve gigabytes once, and
//! through the cache the kernel would take every page of them fresh, fill
//! it and copy it out, to be dropped unread. A file already cached (a
//! release verified where it was just published) is read from the cache.

use std::fs::File;
use std::io::Read as _;
use std::os::fd::AsRawFd as _;
use std::path::Path;

/// A file's blake3 hex, and its sha256 hex where it was asked for.
pub(super) type Hashed = (String, Option<String>);

/// What a read around the page cache asks of its buffer, offsets and
/// lengths: a multiple of the disk's block, which is at most a page.
const ALIGN: usize = 4096;
const CHUNK: usize = 1 << 16;

/// The one buffer every file of a release is read through: 64 KiB at an
/// address a read around the page cache accepts.
pub(super) struct Chunk(Vec<u8>);

impl Chunk {
    pub(super) fn new() -> Chunk {
        Chunk(vec![0; CHUNK + ALIGN])
    }

    fn bytes(&mut self) -> &mut [u8] {
        let start = self.0.as_ptr().align_offset(ALIGN);
        &mut self.0[start..start + CHUNK]
    }
}

/// How a file will be read after it is hashed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Again {
    /// Read whole again (manifest.json and its shards): through the page
    /// cache, so the second read finds it there.
    Yes,
    /// Never again but for a finding: around the cache when none of it is
    /// there.
    No,
}

/// The blake3 (hex) of the file at `path`, and its sha256 (hex) when
/// `sha256`, read once through `chunk`: no mapping and no thread for a
/// file of a few kilobytes, of which a release has a million.
pub(super) fn hash_file(
    path: &Path,
    chunk: &mut Chunk,
    sha256: bool,
    again: Again,
) -> std::io::Result<Hashed> {
    use sha2::Digest as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    // Listed as a regular file; one swapped since for a link is not
    // followed, and one swapped for a pipe is not waited on.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    // Swapped since for a pipe, it would read as empty; for a device, as
    // whatever the device gives.
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    let mut direct = again == Again::No && !cached(&file) && set_direct(&file, true);
    let chunk = chunk.bytes();
    let mut b3 = blake3::Hasher::new();
    let mut sha = sha256.then(sha2::Sha256::new);
    loop {
        let n = match file.read(chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            // A read around the cache the file system refuses (a block
            // larger than a page, an offset left unaligned by a short
            // read): the rest through the cache.
            Err(err) if direct && err.raw_os_error() == Some(libc::EINVAL) => {
                if !set_direct(&file, false) {
                    return Err(err);
                }
                direct = false;
                continue;
            }
            Err(err) => return Err(err),
        };
        b3.update(&chunk[..n]);
        if let Some(sha) = &mut sha {
            sha.update(&chunk[..n]);
        }
    }
    let sha = sha.map(|sha| hex::encode(sha.finalize()));
    Ok((b3.finalize().to_hex().to_string(), sha))
}

/// Whether any of `file` is in the page cache (`cachestat`, Linux 6.5);
/// where that cannot be told, as if it were: the file is read through
/// the cache, as any program reads it.
fn cached(file: &File) -> bool {
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    /// `cachestat`'s number on every architecture (the common table).
    const SYS_CACHESTAT: libc::c_long = 451;
    // The whole file (a length of 0 runs to its end).
    let range = Range { off: 0, len: 0 };
    let mut stat = Stat::default();
    // SAFETY: the descriptor is open for the call; both structs are the
    // kernel's layout, one read and one written, and live across it.
    let done = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const Range,
            &mut stat as *mut Stat,
            0,
        )
    };
    done != 0 || stat.nr_cache > 0
}

/// Turns reading around the page cache on or off for `file`, opened by
/// [`hash_file`]; whether it was done (a file system that cannot read
/// around it refuses). Of the flags `F_SETFL` sets, the file was opened
/// with `O_NONBLOCK` alone, so no `F_GETFL` is needed to keep the rest.
fn set_direct(file: &File, on: bool) -> bool {
    let flags = libc::O_NONBLOCK | if on { libc::O_DIRECT } else { 0 };
    // SAFETY: fcntl on a descriptor open for the call, with no pointer.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of a file, the file written and dropped from the page
    /// cache, so it is read around the cache where the file system can.
    fn cold(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        let file = File::open(&path).expect("open");
        file.sync_all().expect("sync");
        // SAFETY: a descriptor open for the call, no pointer.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        path
    }

    #[test]
    fn a_file_hashes_the_same_cold_or_cached_read_again_or_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Not a multiple of the buffer nor of a block; one byte; none.
        let sizes = [CHUNK * 2 + 1234, 1, 0, ALIGN, CHUNK];
        let mut chunk = Chunk::new();
        for (i, size) in sizes.into_iter().enumerate() {
            let bytes: Vec<u8> = (0..size).map(|k| (k * 7 + i) as u8).collect();
            let want = (
                blake3::hash(&bytes).to_hex().to_string(),
                Some(hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes))),
            );
            for again in [Again::No, Again::Yes] {
                let path = cold(dir.path(), &format!("f{i}"), &bytes);
                let got = hash_file(&path, &mut chunk, true, again).expect("hashed");
                assert_eq!(got, want, "{size} bytes, {again:?}, cold");
                let got = hash_file(&path, &mut chunk, true, again).expect("hashed");
                assert_eq!(got, want, "{size} bytes, {again:?}, read before");
            }
        }
    }

    #[test]
    fn a_file_read_around_the_cache_is_not_left_in_it_and_one_read_again_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bytes = vec![5u8; CHUNK * 3];
        let mut chunk = Chunk::new();
        let once = cold(dir.path(), "once", &bytes);
        let twice = cold(dir.path(), "twice", &bytes);
        let open = |p: &Path| File::open(p).expect("open");
        if cached(&open(&once)) {
            // No cachestat here (a kernel before 6.5, or a filter): every
            // file is read through the cache, as any program reads it;
            // nothing to tell.
            eprintln!("cachestat unavailable or the file stayed cached: not checked");
            return;
        }
        hash_file(&once, &mut chunk, false, Again::No).expect("hashed");
        hash_file(&twice, &mut chunk, false, Again::Yes).expect("hashed");
        assert!(
            cached(&open(&twice)),
            "a manifest shard is read again: cached"
        );
        // A file system that cannot read around the cache (tmpfs before
        // 6.6) reads through it; only where the flag took is it checked.
        let probe = open(&once);
        if set_direct(&probe, true) {
            assert!(
                !cached(&probe),
                "a page read only to be hashed stays out of the cache"
            );
        }
    }

    /// A release file swapped for a pipe after it was listed: the read
    /// fails at once, cold path or not, never waits for a writer and never
    /// passes for an empty file.
    #[test]
    fn a_pipe_in_a_file_s_place_is_not_waited_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("page.html");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("a path");
        // SAFETY: a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        let mut chunk = Chunk::new();
        for again in [Again::No, Again::Yes] {
            let got = hash_file(&path, &mut chunk, false, again);
            assert!(got.is_err(), "{again:?}: {got:?}");
        }
    }
}
