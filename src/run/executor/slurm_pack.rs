//! What crosses from the coordinator to a node: a directory packed into one
//! tar file by the coordinator (a run's staged tree, an environment) and
//! unpacked by the worker after checking its digest. One file on the shared
//! filesystem per tree instead of thousands, and a worker never reads a
//! directory the coordinator is writing.
//!
//! Packing keeps modes and times (`HeaderMode::Complete`, not ownership)
//! and never follows a symlink; unpacking is `tar`'s, which refuses entries
//! that would land outside the destination, through a symlink or by `..`.
//! The digest is checked first, so what is unpacked is exactly what the
//! coordinator packed.

use std::fs::File;
use std::io::BufWriter;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use assay_engine::Digest;

use crate::run::error::LaunchError;

/// Packs `dir` into the tar file `out` (written whole, then renamed) and
/// returns its digest.
pub(super) fn pack(dir: &Path, out: &Path) -> Result<Digest, LaunchError> {
    let tmp = out.with_extension("tar.part");
    let write = || -> std::io::Result<()> {
        let file = File::create(&tmp)?;
        let mut tar = tar::Builder::new(BufWriter::new(file));
        tar.mode(tar::HeaderMode::Complete);
        tar.follow_symlinks(false);
        tar.append_dir_all(".", dir)?;
        let file = tar.into_inner()?.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    };
    write().map_err(LaunchError::io(format_args!("packing {}", dir.display())))?;
    let digest = Digest::of_file(&tmp).map_err(LaunchError::io(tmp.display()))?;
    std::fs::rename(&tmp, out).map_err(LaunchError::io(out.display()))?;
    Ok(digest)
}

/// Unpacks the tar file `pack` into `dest` (which must not exist), after
/// checking that its digest is `want`.
pub(super) fn unpack(pack: &Path, want: &Digest, dest: &Path) -> Result<(), LaunchError> {
    let got = Digest::of_file(pack).map_err(LaunchError::io(pack.display()))?;
    if got != *want {
        return Err(LaunchError::Corrupt(format!(
            "{} is not what the coordinator packed (digest {}, expected {})",
            pack.display(),
            got.short(),
            want.short()
        )));
    }
    std::fs::create_dir(dest).map_err(LaunchError::io(dest.display()))?;
    let file = File::open(pack).map_err(LaunchError::io(pack.display()))?;
    let mut archive = tar::Archive::new(std::io::BufReader::new(file));
    archive.set_preserve_permissions(true);
    archive.set_preserve_mtime(true);
    archive.set_overwrite(false);
    archive.unpack(dest).map_err(LaunchError::io(format_args!(
        "unpacking {}",
        pack.display()
    )))
}

/// This node's directory of the node-local cache, `ROOT/NODE`: created
/// private (0700) or, when it exists, checked to be this user's and
/// writable by no one else, so no other user of the node can plant an
/// environment in it.
pub(super) fn node_dir(root: &Path, node: &str) -> Result<PathBuf, LaunchError> {
    let dir = root.join(node);
    for d in [root, dir.as_path()] {
        match std::fs::create_dir(d) {
            Ok(()) => std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))
                .map_err(LaunchError::io(d.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(LaunchError::io(d.display())(e)),
        }
        let meta = std::fs::symlink_metadata(d).map_err(LaunchError::io(d.display()))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o022 != 0 {
            return Err(LaunchError::Refused(format!(
                "the node cache {} is not a private directory of this user (owner {}, mode {:o}); \
                 remove it or set `[env] slurm.node_cache` elsewhere",
                d.display(),
                meta.uid(),
                meta.mode() & 0o7777
            )));
        }
    }
    Ok(dir)
}

/// The environment packed as `pack` (digest `digest`), unpacked once in
/// this node's cache `node/envs/DIGEST`: by the first worker that needs
/// it, into a directory of its own renamed into place, so two workers
/// racing leave one complete copy and a killed one leaves none.
pub(super) fn node_env(node: &Path, pack: &Path, digest: &Digest) -> Result<PathBuf, LaunchError> {
    let envs = node.join("envs");
    let dest = envs.join(digest.to_hex());
    if dest.is_dir() {
        return Ok(dest);
    }
    std::fs::create_dir_all(&envs).map_err(LaunchError::io(envs.display()))?;
    let part = tempfile::Builder::new()
        .prefix(".unpacking-")
        .tempdir_in(&envs)
        .map_err(LaunchError::io(envs.display()))?;
    let staged = part.path().join("env");
    unpack(pack, digest, &staged)?;
    match std::fs::rename(&staged, &dest) {
        Ok(()) => Ok(dest),
        // Another worker's copy landed first: it is the same bytes.
        Err(_) if dest.is_dir() => Ok(dest),
        Err(e) => Err(LaunchError::io(dest.display())(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: &Path) -> PathBuf {
        let dir = root.join("tree");
        std::fs::create_dir_all(dir.join("pkg/sub")).unwrap();
        std::fs::write(dir.join("pkg/a.py"), b"print(1)\n").unwrap();
        std::fs::write(dir.join("pkg/sub/run.sh"), b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            dir.join("pkg/sub/run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).unwrap();
        dir
    }

    #[test]
    fn a_packed_tree_unpacks_to_the_same_files_modes_and_links() {
        let root = tempfile::tempdir().unwrap();
        let dir = tree(root.path());
        let pack_path = root.path().join("t.tar");
        let digest = pack(&dir, &pack_path).unwrap();
        let out = root.path().join("out");
        unpack(&pack_path, &digest, &out).unwrap();
        assert_eq!(std::fs::read(out.join("pkg/a.py")).unwrap(), b"print(1)\n");
        let mode = std::fs::metadata(out.join("pkg/sub/run.sh"))
            .unwrap()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        // The link is a link (to where it pointed), never the file it names.
        assert_eq!(
            std::fs::read_link(out.join("link")).unwrap(),
            Path::new("/etc/passwd")
        );
        assert_eq!(
            super::super::local::dir_digest(&dir).unwrap(),
            super::super::local::dir_digest(&out).unwrap()
        );
    }

    #[test]
    fn a_pack_changed_after_packing_is_refused_and_nothing_is_unpacked() {
        let root = tempfile::tempdir().unwrap();
        let dir = tree(root.path());
        let pack_path = root.path().join("t.tar");
        let digest = pack(&dir, &pack_path).unwrap();
        let mut bytes = std::fs::read(&pack_path).unwrap();
        let at = bytes.windows(8).position(|w| w == b"print(1)").unwrap();
        bytes[at + 6] = b'2';
        std::fs::write(&pack_path, bytes).unwrap();
        let out = root.path().join("out");
        let err = unpack(&pack_path, &digest, &out).unwrap_err();
        assert!(matches!(err, LaunchError::Corrupt(_)), "{err}");
        assert!(
            err.to_string().contains("not what the coordinator packed"),
            "{err}"
        );
        assert!(!out.exists());
    }

    /// A tar made by someone else that climbs out through a symlink it
    /// planted: the unpacker refuses it, and nothing lands outside.
    #[test]
    fn an_archive_that_writes_through_its_own_symlink_lands_nothing_outside() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        b.append_link(&mut h, "escape", &outside).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(5);
        h.set_mode(0o644);
        b.append_data(&mut h, "escape/owned", &b"owned"[..])
            .unwrap();
        let bytes = b.into_inner().unwrap();
        let pack_path = root.path().join("evil.tar");
        std::fs::write(&pack_path, &bytes).unwrap();
        let digest = Digest::of(&bytes);
        let out = root.path().join("out");
        assert!(unpack(&pack_path, &digest, &out).is_err());
        assert!(!outside.join("owned").exists());
    }

    #[test]
    fn an_environment_is_unpacked_once_per_node_and_a_race_leaves_one_copy() {
        let root = tempfile::tempdir().unwrap();
        let dir = tree(root.path());
        let pack_path = root.path().join("env.tar");
        let digest = pack(&dir, &pack_path).unwrap();
        let node = node_dir(&root.path().join("cache"), "n1").unwrap();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (node, pack_path) = (node.clone(), pack_path.clone());
                std::thread::spawn(move || node_env(&node, &pack_path, &digest))
            })
            .collect();
        let dirs: Vec<PathBuf> = threads
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .collect();
        assert!(
            dirs.iter()
                .all(|d| *d == node.join("envs").join(digest.to_hex()))
        );
        let listed: Vec<_> = std::fs::read_dir(node.join("envs"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(listed.len(), 1, "{listed:?}");
        // Later runs do not unpack again: the pack may be gone by then.
        std::fs::remove_file(&pack_path).unwrap();
        assert_eq!(node_env(&node, &pack_path, &digest).unwrap(), dirs[0]);
    }

    #[test]
    fn a_node_cache_others_can_write_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache");
        let node = node_dir(&cache, "n1").unwrap();
        let mode = std::fs::metadata(&node).unwrap().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = node_dir(&cache, "n1").unwrap_err();
        assert!(matches!(err, LaunchError::Refused(_)), "{err}");
        assert!(err.to_string().contains("slurm.node_cache"), "{err}");
    }
}
