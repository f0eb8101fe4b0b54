//! Tar archives to and from the daemon: the staged tree (streamed, owned by
//! the run's user), the environment skeleton with its key files, one file
//! read back out, and the fingerprints of watched files of the tree after a
//! run (streamed too: the tree's size is not bounded).
//!
//! The tree is walked without following symlinks: a symlink is archived as a
//! symlink, so no entry path ever passes through one and the daemon cannot be
//! made to write outside the tree. Sockets, fifos and devices are skipped.
//! Protected files and the directories above them are root's (see
//! [`crate::ContainerRun::protect`]); everything else is the run user's.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::DockerError;
use crate::spec::RunUser;

const CHUNK: usize = 256 << 10;

/// Streams a tar of the directory `root` (its content, entries relative to
/// it), every entry owned by `owner` but the `protect`ed files and the
/// directories above them (root's: see [`Protected`]). The walk runs on a
/// blocking thread; its handle reports a read error, which the stream itself
/// can only cut short.
pub(crate) fn tree(
    root: &Path,
    owner: RunUser,
    protect: &[PathBuf],
) -> (
    impl Stream<Item = Result<Bytes, io::Error>> + Send + 'static,
    JoinHandle<io::Result<()>>,
) {
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let root = root.to_owned();
    let protect = protect.to_vec();
    let producer = tokio::task::spawn_blocking(move || {
        let protected = Protected::find(&root, &protect);
        let sink = io::BufWriter::with_capacity(CHUNK, ChannelWriter(tx));
        let mut builder = tar::Builder::new(sink);
        let walk = Walk { owner, protected };
        walk.append_dir(&mut builder, &root, Path::new(""))?;
        builder.into_inner()?.flush()
    });
    (receiver_stream(rx), producer)
}

/// Writes [`tree`]'s archive of `root` beneath `dest`, a directory on this
/// machine (a fresh tree volume of a container that never started), as
/// the daemon would extract it: the same entries with the same owners,
/// modes and times, each created beneath `dest` (the tar reader refuses an
/// entry whose parent resolves outside it; the walk puts none through a
/// symlink). The walk runs on a thread of its own, the archive streamed
/// through a pipe.
pub(crate) fn unpack_tree(
    root: &Path,
    owner: RunUser,
    protect: &[PathBuf],
    dest: &Path,
) -> io::Result<()> {
    let (reader, writer) = io::pipe()?;
    let (root, protect) = (root.to_owned(), protect.to_vec());
    let producer = std::thread::spawn(move || {
        let protected = Protected::find(&root, &protect);
        let mut builder = tar::Builder::new(io::BufWriter::with_capacity(CHUNK, writer));
        Walk { owner, protected }.append_dir(&mut builder, &root, Path::new(""))?;
        builder.into_inner()?.flush()
    });
    let mut archive = tar::Archive::new(io::BufReader::with_capacity(CHUNK, reader));
    archive.set_preserve_permissions(true);
    archive.set_preserve_ownerships(true);
    archive.set_overwrite(false);
    let unpacked = archive.unpack(dest);
    // The reader closed: a walk still writing stops with a broken pipe.
    drop(archive);
    let produced = producer
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the tree's walk panicked")));
    match (unpacked, produced) {
        (Err(error), Err(walk)) if walk.kind() == io::ErrorKind::BrokenPipe => Err(error),
        (_, Err(walk)) => Err(walk),
        (unpacked, Ok(())) => unpacked,
    }
}

/// Streams a tar of several directories, each `(host directory, relative
/// path in the tar)`: the path and the directories above it, then the host
/// directory's content below it, every entry root's (as `docker cp` makes
/// them). Walked as [`tree`] walks.
pub(crate) fn dirs(
    dirs: Vec<(PathBuf, PathBuf)>,
) -> (
    impl Stream<Item = Result<Bytes, io::Error>> + Send + 'static,
    JoinHandle<io::Result<()>>,
) {
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let producer = tokio::task::spawn_blocking(move || {
        let sink = io::BufWriter::with_capacity(CHUNK, ChannelWriter(tx));
        let mut builder = tar::Builder::new(sink);
        let walk = Walk {
            owner: ROOT,
            protected: Protected::default(),
        };
        for (from, to) in &dirs {
            let mut above = PathBuf::new();
            for part in to.components() {
                above.push(part);
                let mut header = if above == *to {
                    header(&fs::metadata(from)?, ROOT)
                } else {
                    let mut header = tar::Header::new_gnu();
                    header.set_mode(0o755);
                    header.set_uid(0);
                    header.set_gid(0);
                    header.set_size(0);
                    header
                };
                header.set_entry_type(tar::EntryType::Directory);
                builder.append_data(&mut header, &above, io::empty())?;
            }
            walk.append_dir(&mut builder, from, to)?;
        }
        builder.into_inner()?.flush()
    });
    (receiver_stream(rx), producer)
}

fn receiver_stream(
    rx: mpsc::Receiver<Bytes>,
) -> impl Stream<Item = Result<Bytes, io::Error>> + Send + 'static {
    futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (Ok(chunk), rx))
    })
}

/// Sends each write as one chunk; a closed channel (the upload gave up) is a
/// broken pipe, which ends the walk.
struct ChannelWriter(mpsc::Sender<Bytes>);

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .blocking_send(Bytes::copy_from_slice(buf))
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The protected files of a tree and the directories above them (below the
/// tree's root): every path of `protect` that is a plain relative path
/// reaching a regular file through directories only, no symlink anywhere.
/// The others are left as they are: nothing is ever followed.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Protected {
    dirs: BTreeSet<PathBuf>,
    files: BTreeSet<PathBuf>,
}

impl Protected {
    fn find(root: &Path, protect: &[PathBuf]) -> Protected {
        let (dirs, files) = assay_exec::sandbox::protected(root, protect);
        Protected { dirs, files }
    }
}

/// Root, for what the run may not change.
const ROOT: RunUser = RunUser { uid: 0, gid: 0 };

struct Walk {
    owner: RunUser,
    protected: Protected,
}

impl Walk {
    /// Who owns the entry `name`, and its mode (`None`: as on disk).
    fn owner(&self, name: &Path) -> (RunUser, Option<u32>) {
        if self.protected.dirs.contains(name) {
            (ROOT, Some(0o1777))
        } else if self.protected.files.contains(name) {
            (ROOT, Some(0o444))
        } else {
            (self.owner, None)
        }
    }

    fn append_dir<W: Write>(
        &self,
        builder: &mut tar::Builder<W>,
        dir: &Path,
        rel: &Path,
    ) -> io::Result<()> {
        let mut entries = fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
        entries.sort_by_key(|entry| entry.file_name());
        for entry in entries {
            let path = entry.path();
            let name = rel.join(entry.file_name());
            let meta = fs::symlink_metadata(&path)?;
            let kind = meta.file_type();
            let (owner, mode) = self.owner(&name);
            let mut header = header(&meta, owner);
            if let Some(mode) = mode {
                header.set_mode(mode);
            }
            if kind.is_dir() {
                header.set_entry_type(tar::EntryType::Directory);
                builder.append_data(&mut header, &name, io::empty())?;
                self.append_dir(builder, &path, &name)?;
            } else if kind.is_file() {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(meta.len());
                builder.append_data(&mut header, &name, fs::File::open(&path)?)?;
            } else if kind.is_symlink() {
                header.set_entry_type(tar::EntryType::Symlink);
                builder.append_link(&mut header, &name, fs::read_link(&path)?)?;
            } else if kind.is_fifo()
                || kind.is_socket()
                || kind.is_block_device()
                || kind.is_char_device()
            {
                continue;
            }
        }
        Ok(())
    }
}

fn header(meta: &fs::Metadata, owner: RunUser) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_mode(meta.mode() & 0o7777);
    header.set_mtime(u64::try_from(meta.mtime()).unwrap_or(0));
    header.set_uid(owner.uid.into());
    header.set_gid(owner.gid.into());
    header.set_size(0);
    header
}

/// The environment skeleton, extracted at `/`: [`ENV_DIR`](crate::ENV_DIR)
/// with the key files (root's, read-only for the run), the `guard` files in
/// [`GUARD_DIR`](crate::GUARD_DIR) (root's, 0444), an empty
/// [`TREE_DIR`](crate::TREE_DIR) that is root's with mode 1777, and
/// [`HOME_DIR`](crate::HOME_DIR) owned by `owner`. A run's tree volume
/// copies the tree directory's owner and mode from the image: the run user
/// may create entries at the tree's root, but not rename or remove root's
/// (the protected ones).
pub(crate) fn skeleton<'a>(
    key_files: impl IntoIterator<Item = (&'a String, &'a Vec<u8>)>,
    guard: impl IntoIterator<Item = (&'a String, &'a Vec<u8>)>,
    owner: RunUser,
) -> Result<Vec<u8>, DockerError> {
    let root = ROOT;
    let mut builder = tar::Builder::new(Vec::new());
    let io_error = |source| DockerError::Archive {
        what: "the environment skeleton",
        source,
    };
    let mut dirs = std::collections::BTreeSet::new();
    let mut dir = |builder: &mut tar::Builder<Vec<u8>>, path: &Path, owner: RunUser, mode: u32| {
        if !dirs.insert(path.to_owned()) {
            return Ok(());
        }
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(mode);
        header.set_uid(owner.uid.into());
        header.set_gid(owner.gid.into());
        header.set_size(0);
        builder.append_data(&mut header, path, io::empty())
    };
    for path in ["assay", "assay/env"] {
        dir(&mut builder, Path::new(path), root, 0o755).map_err(io_error)?;
    }
    dir(&mut builder, Path::new("assay/tree"), root, 0o1777).map_err(io_error)?;
    dir(&mut builder, Path::new("assay/home"), owner, 0o700).map_err(io_error)?;
    dir(&mut builder, Path::new("assay/guard"), root, 0o755).map_err(io_error)?;
    for (name, bytes) in guard {
        let rel = relative(name, "guard file")?;
        if rel.components().count() != 1 {
            return Err(DockerError::InvalidSpec {
                what: "guard file",
                value: name.clone(),
                why: "it must be a plain file name",
            });
        }
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o444);
        header.set_uid(0);
        header.set_gid(0);
        header.set_size(bytes.len() as u64);
        builder
            .append_data(
                &mut header,
                Path::new("assay/guard").join(rel),
                bytes.as_slice(),
            )
            .map_err(io_error)?;
    }
    for (name, bytes) in key_files {
        let rel = relative(name, "key file")?;
        let path = Path::new("assay/env").join(rel);
        let mut parent = Path::new("assay/env").to_owned();
        for component in rel.parent().into_iter().flat_map(Path::components) {
            parent.push(component);
            dir(&mut builder, &parent, root, 0o755).map_err(io_error)?;
        }
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(bytes.len() as u64);
        builder
            .append_data(&mut header, path, bytes.as_slice())
            .map_err(io_error)?;
    }
    builder.into_inner().map_err(io_error)
}

/// `path` as a relative path of plain components (no `..`, `.`, root).
pub(crate) fn relative<'p>(path: &'p str, what: &'static str) -> Result<&'p Path, DockerError> {
    let rel = Path::new(path);
    let plain = rel.components().next().is_some()
        && rel.components().all(|c| matches!(c, Component::Normal(_)));
    if plain {
        Ok(rel)
    } else {
        Err(DockerError::InvalidSpec {
            what,
            value: path.to_owned(),
            why: "it must be a relative path without `..` or `.`",
        })
    }
}

/// The content of the archive's first entry if it is a regular file; `None`
/// for anything else (a symlink above all).
pub(crate) fn single_file(archive: &[u8]) -> Result<Option<Vec<u8>>, DockerError> {
    let io_error = |source| DockerError::Archive {
        what: "a downloaded file",
        source,
    };
    let mut archive = tar::Archive::new(archive);
    let mut entries = archive.entries().map_err(io_error)?;
    let Some(entry) = entries.next() else {
        return Ok(None);
    };
    let mut entry = entry.map_err(io_error)?;
    if entry.header().entry_type() != tar::EntryType::Regular {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    entry.read_to_end(&mut bytes).map_err(io_error)?;
    Ok(Some(bytes))
}

/// Reads the tar of a run's tree (as the daemon sends a directory: every
/// entry below one top component) from `chunks` and fingerprints the
/// `watch`ed paths (relative to the tree): blake3 of a regular file, `None`
/// for anything else or for a path the archive does not hold. Never
/// extracted: nothing the run left on disk is followed or written.
pub(crate) fn fingerprints(
    chunks: mpsc::Receiver<Bytes>,
    watch: &[std::path::PathBuf],
) -> io::Result<std::collections::BTreeMap<std::path::PathBuf, Option<[u8; 32]>>> {
    let mut found: std::collections::BTreeMap<_, _> =
        watch.iter().map(|path| (path.clone(), None)).collect();
    let mut archive = tar::Archive::new(ChannelReader {
        rx: chunks,
        chunk: Bytes::new(),
    });
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path: std::path::PathBuf = entry.path()?.components().skip(1).collect();
        let Some(slot) = found.get_mut(&path) else {
            continue;
        };
        *slot = if entry.header().entry_type() == tar::EntryType::Regular {
            let mut hasher = blake3::Hasher::new();
            io::copy(&mut entry, &mut hasher)?;
            Some(*hasher.finalize().as_bytes())
        } else {
            None
        };
    }
    Ok(found)
}

/// Reads the tar of a directory (every entry below one top component)
/// from `chunks`: its regular files by their path below the top, each cut
/// at `file_cap` bytes, and none more once `total_cap` bytes are kept (the
/// rest of the archive is read and dropped). Never extracted.
pub(crate) fn files(
    chunks: mpsc::Receiver<Bytes>,
    file_cap: u64,
    total_cap: u64,
) -> io::Result<std::collections::BTreeMap<String, Vec<u8>>> {
    let mut out = std::collections::BTreeMap::new();
    let mut kept = 0u64;
    let mut archive = tar::Archive::new(ChannelReader {
        rx: chunks,
        chunk: Bytes::new(),
    });
    for entry in archive.entries()? {
        let mut entry = entry?;
        if entry.header().entry_type() != tar::EntryType::Regular || kept >= total_cap {
            continue;
        }
        let name = entry
            .path()?
            .components()
            .skip(1)
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let mut data = Vec::new();
        entry
            .by_ref()
            .take(file_cap.min(total_cap - kept))
            .read_to_end(&mut data)?;
        kept += data.len() as u64;
        out.insert(name, data);
    }
    Ok(out)
}

/// The receiving end of a download as a blocking reader; the end of the
/// channel is the end of the archive.
struct ChannelReader {
    rx: mpsc::Receiver<Bytes>,
    chunk: Bytes,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.rx.blocking_recv() {
                Some(chunk) => self.chunk = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(archive: &[u8]) -> Vec<(String, tar::EntryType, u64, String)> {
        tar::Archive::new(archive)
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let header = entry.header();
                (
                    entry.path().unwrap().display().to_string(),
                    header.entry_type(),
                    header.uid().unwrap(),
                    header
                        .link_name()
                        .unwrap()
                        .map(|link| link.display().to_string())
                        .unwrap_or_default(),
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn the_tree_keeps_symlinks_as_symlinks_and_is_owned_by_the_run_user() {
        use futures_util::StreamExt;
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("pkg")).unwrap();
        fs::write(dir.path().join("pkg/a.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("escape")).unwrap();
        let user = RunUser { uid: 1234, gid: 99 };
        let (stream, producer) = tree(dir.path(), user, &[]);
        let chunks: Vec<_> = stream.collect().await;
        producer.await.unwrap().unwrap();
        let bytes: Vec<u8> = chunks.into_iter().flat_map(|c| c.unwrap()).collect();
        assert_eq!(
            entries(&bytes),
            [
                (
                    "escape".into(),
                    tar::EntryType::Symlink,
                    1234,
                    "/etc".into()
                ),
                ("pkg".into(), tar::EntryType::Directory, 1234, String::new()),
                (
                    "pkg/a.py".into(),
                    tar::EntryType::Regular,
                    1234,
                    String::new()
                ),
            ]
        );
    }

    #[tokio::test]
    async fn protected_files_and_the_directories_above_them_are_roots() {
        use futures_util::StreamExt;
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("tests/unit")).unwrap();
        fs::write(dir.path().join("tests/unit/test_a.py"), "a").unwrap();
        fs::write(dir.path().join("tests/unit/helper.py"), "h").unwrap();
        fs::write(dir.path().join("test_top.py"), "t").unwrap();
        std::os::unix::fs::symlink("tests", dir.path().join("link")).unwrap();
        let user = RunUser {
            uid: 1000,
            gid: 1000,
        };
        let protect = [
            "tests/unit/test_a.py",
            "test_top.py",
            "link/unit/test_a.py",
            "missing/test_b.py",
            "../escape.py",
            "tests/unit",
        ]
        .map(PathBuf::from);
        let (stream, producer) = tree(dir.path(), user, &protect);
        let chunks: Vec<_> = stream.collect().await;
        producer.await.unwrap().unwrap();
        let bytes: Vec<u8> = chunks.into_iter().flat_map(|c| c.unwrap()).collect();
        let mut archive = tar::Archive::new(bytes.as_slice());
        let got: Vec<(String, u64, u32)> = archive
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let header = entry.header();
                (
                    entry.path().unwrap().display().to_string(),
                    header.uid().unwrap(),
                    header.mode().unwrap() & 0o7777,
                )
            })
            .collect();
        let mode = |p: &str| fs::symlink_metadata(dir.path().join(p)).unwrap().mode() & 0o7777;
        assert_eq!(
            got,
            [
                ("link".to_owned(), 1000, mode("link")),
                ("test_top.py".to_owned(), 0, 0o444),
                ("tests".to_owned(), 0, 0o1777),
                ("tests/unit".to_owned(), 0, 0o1777),
                (
                    "tests/unit/helper.py".to_owned(),
                    1000,
                    mode("tests/unit/helper.py")
                ),
                ("tests/unit/test_a.py".to_owned(), 0, 0o444),
            ]
        );
    }

    #[tokio::test]
    async fn dirs_go_in_under_their_paths_as_roots_with_symlinks_as_symlinks() {
        use futures_util::StreamExt;
        let host = tempfile::tempdir().unwrap();
        let tests = host.path().join("tests");
        fs::create_dir_all(tests.join("unit")).unwrap();
        fs::write(tests.join("unit/test.sh"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", tests.join("escape")).unwrap();
        let (stream, producer) = dirs(vec![(tests, PathBuf::from("srv/tests"))]);
        let chunks: Vec<_> = stream.collect().await;
        producer.await.unwrap().unwrap();
        let bytes: Vec<u8> = chunks.into_iter().flat_map(|c| c.unwrap()).collect();
        assert_eq!(
            entries(&bytes),
            [
                ("srv".into(), tar::EntryType::Directory, 0, String::new()),
                (
                    "srv/tests".into(),
                    tar::EntryType::Directory,
                    0,
                    String::new()
                ),
                (
                    "srv/tests/escape".into(),
                    tar::EntryType::Symlink,
                    0,
                    "/etc".into()
                ),
                (
                    "srv/tests/unit".into(),
                    tar::EntryType::Directory,
                    0,
                    String::new()
                ),
                (
                    "srv/tests/unit/test.sh".into(),
                    tar::EntryType::Regular,
                    0,
                    String::new()
                ),
            ]
        );
    }

    #[test]
    fn files_are_read_up_to_each_cap_and_never_extracted() {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, size) in [
            ("verifier/big.txt", 10),
            ("verifier/a/small.txt", 3),
            ("verifier/late.txt", 5),
        ] {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(size);
            builder
                .append_data(&mut header, name, &vec![b'x'; size as usize][..])
                .unwrap();
        }
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        builder
            .append_link(&mut link, "verifier/reward.txt", "/etc/passwd")
            .unwrap();
        let bytes = builder.into_inner().unwrap();
        let read = |file_cap, total_cap| {
            let (tx, rx) = mpsc::channel(4);
            let chunks = bytes.clone();
            let feeder = std::thread::spawn(move || {
                for chunk in chunks.chunks(100) {
                    if tx.blocking_send(Bytes::copy_from_slice(chunk)).is_err() {
                        break;
                    }
                }
            });
            let found = files(rx, file_cap, total_cap).unwrap();
            feeder.join().unwrap();
            found
                .into_iter()
                .map(|(name, data)| (name, data.len()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            read(4, 100),
            [
                ("a/small.txt".into(), 3),
                ("big.txt".into(), 4),
                ("late.txt".into(), 4)
            ],
            "each cut at the file cap; the symlink is no file"
        );
        assert_eq!(
            read(100, 12),
            [("a/small.txt".into(), 2), ("big.txt".into(), 10)],
            "none past the total cap"
        );
    }

    #[test]
    fn key_files_must_stay_below_the_env_dir() {
        for bad in ["../etc/passwd", "/etc/passwd", "a/../../b", "", "./a"] {
            let files = std::collections::BTreeMap::from([(bad.to_owned(), vec![])]);
            let none = std::collections::BTreeMap::new();
            assert!(
                skeleton(&files, &none, RunUser::default()).is_err(),
                "{bad}"
            );
            assert!(
                skeleton(&none, &files, RunUser::default()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn fingerprints_hash_regular_files_only_and_name_the_missing() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(3);
        builder
            .append_data(&mut header, "tree/tests/a.py", &b"abc"[..])
            .unwrap();
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        builder
            .append_link(&mut link, "tree/tests/b.py", "/etc/passwd")
            .unwrap();
        let bytes = builder.into_inner().unwrap();
        // Small chunks through a small channel, fed from another thread.
        let (tx, rx) = mpsc::channel(4);
        let feeder = std::thread::spawn(move || {
            // The reader stops at the archive's end marker: the padding
            // after it may find the channel closed.
            for chunk in bytes.chunks(100) {
                if tx.blocking_send(Bytes::copy_from_slice(chunk)).is_err() {
                    break;
                }
            }
        });
        let watch = ["tests/a.py", "tests/b.py", "tests/c.py"].map(std::path::PathBuf::from);
        let found = fingerprints(rx, &watch).unwrap();
        feeder.join().unwrap();
        assert_eq!(
            found[Path::new("tests/a.py")],
            Some(*blake3::hash(b"abc").as_bytes())
        );
        assert_eq!(found[Path::new("tests/b.py")], None);
        assert_eq!(found[Path::new("tests/c.py")], None);
    }

    #[test]
    fn a_symlink_is_not_a_single_file() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        builder
            .append_link(&mut header, "report.xml", "/etc/shadow")
            .unwrap();
        assert_eq!(single_file(&builder.into_inner().unwrap()).unwrap(), None);
    }
}
