//! Listing every entry of a tree, with untrusted names validated.
//!
//! Trees staged from agent patches are hostile input: each entry name is
//! checked (no `..`, `.`, empty, `.git`, `/` or NUL) before it becomes part
//! of a path, so later consumers can join names onto a destination safely.
//! The walk uses an explicit stack: a deep tree cannot overflow ours.

use gix::ObjectId;
use gix::objs::tree::EntryMode;

use crate::error::GitError;
use crate::safety::component_violation;

/// One non-tree entry found by [`walk`].
pub(crate) struct WalkEntry {
    /// Slash-separated path relative to the root, as stored (bytes).
    pub(crate) path: Vec<u8>,
    pub(crate) mode: EntryMode,
    pub(crate) id: ObjectId,
}

/// Everything below a tree: directories (parents before children) and
/// non-tree entries.
#[derive(Default)]
pub(crate) struct Walk {
    pub(crate) dirs: Vec<Vec<u8>>,
    pub(crate) entries: Vec<WalkEntry>,
}

pub(crate) fn walk(repo: &gix::Repository, root: ObjectId) -> Result<Walk, GitError> {
    let mut out = Walk::default();
    let mut stack: Vec<(Vec<u8>, ObjectId)> = vec![(Vec::new(), root)];
    while let Some((prefix, id)) = stack.pop() {
        let tree = repo
            .find_tree(id)
            .map_err(|e| GitError::object(id, "tree", e))?;
        let decoded = tree
            .decode()
            .map_err(|e| GitError::object(id, "decoding tree", e))?;
        for entry in &decoded.entries {
            let name: &[u8] = entry.filename.as_ref();
            let mut path = prefix.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(name);
            if let Some(reason) = component_violation(&String::from_utf8_lossy(name)) {
                return Err(GitError::UnsafePath {
                    path: String::from_utf8_lossy(&path).into_owned(),
                    reason,
                });
            }
            if entry.mode.is_tree() {
                out.dirs.push(path.clone());
                stack.push((path, entry.oid.to_owned()));
            } else {
                out.entries.push(WalkEntry {
                    path,
                    mode: entry.mode,
                    id: entry.oid.to_owned(),
                });
            }
        }
    }
    Ok(out)
}

/// Parses a full hex object id.
pub(crate) fn parse_id(hex: &str) -> Result<ObjectId, GitError> {
    ObjectId::from_hex(hex.as_bytes()).map_err(|e| GitError::Object {
        id: hex.to_string(),
        what: format!("not a full hex object id: {e}"),
        source: None,
    })
}
