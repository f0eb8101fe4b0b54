//! Paths changed between two commits.
//!
//! A gix tree-to-tree diff with rename tracking (50% similarity, git's `-M`
//! default, no copies). Directory entries are dropped: a [`Change`] is always
//! about one blob, symlink or submodule path. The result is sorted by path so
//! it can enter a cache key as is.

use gix::object::tree::diff::ChangeDetached;
use gix::objs::tree::EntryMode;

use crate::error::GitError;
use crate::source::Source;

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
    /// The kind of entry changed (file <-> symlink <-> submodule); a change of
    /// the executable bit alone is `Modified`.
    TypeChanged,
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Change {
    /// The path in the head tree (in the base tree for deletions).
    pub path: String,
    /// The path in the base tree, for renames.
    pub old_path: Option<String>,
    pub status: ChangeStatus,
    /// Either side looks binary to git (a NUL byte in the first 8000 bytes).
    pub binary: bool,
}

/// The same heuristic git uses to decide whether a blob is binary.
pub(crate) fn looks_binary(data: &[u8]) -> bool {
    data.iter().take(8000).any(|b| *b == 0)
}

fn kind_class(mode: EntryMode) -> u8 {
    if mode.is_link() {
        1
    } else if mode.is_commit() {
        2
    } else if mode.is_tree() {
        3
    } else {
        0
    }
}

pub(crate) fn changed_paths(
    source: &Source,
    base: &str,
    head: &str,
) -> Result<Vec<Change>, GitError> {
    let repo = source.repo();
    let diff_err = |e| GitError::Diff {
        base: base.to_string(),
        head: head.to_string(),
        source: Box::new(e),
    };
    let base_commit = source.commit(base)?;
    let head_commit = source.commit(head)?;
    let base_tree = base_commit
        .tree()
        .map_err(|e| GitError::object(base_commit.id, "tree of commit", e))?;
    let head_tree = head_commit
        .tree()
        .map_err(|e| GitError::object(head_commit.id, "tree of commit", e))?;
    let options = gix::diff::Options::default().with_rewrites(Some(gix::diff::Rewrites::default()));
    let raw = repo
        .diff_tree_to_tree(&base_tree, &head_tree, options)
        .map_err(diff_err)?;

    let is_binary = |id: gix::ObjectId, mode: EntryMode, path: &str| -> Result<bool, GitError> {
        if !mode.is_blob() {
            return Ok(false);
        }
        let blob = repo
            .find_blob(id)
            .map_err(|e| GitError::object(id, format!("blob of {path}"), e))?;
        Ok(looks_binary(&blob.data))
    };

    let mut out = Vec::new();
    for change in raw {
        let added = matches!(change, ChangeDetached::Addition { .. });
        let c = match change {
            ChangeDetached::Addition {
                location,
                entry_mode,
                id,
                ..
            }
            | ChangeDetached::Deletion {
                location,
                entry_mode,
                id,
                ..
            } => {
                if entry_mode.is_tree() {
                    continue;
                }
                let path = location.to_string();
                Change {
                    binary: is_binary(id, entry_mode, &path)?,
                    path,
                    old_path: None,
                    status: if added {
                        ChangeStatus::Added
                    } else {
                        ChangeStatus::Deleted
                    },
                }
            }
            ChangeDetached::Modification {
                location,
                previous_entry_mode,
                previous_id,
                entry_mode,
                id,
            } => {
                if entry_mode.is_tree() && previous_entry_mode.is_tree() {
                    continue;
                }
                let path = location.to_string();
                let status = if kind_class(entry_mode) == kind_class(previous_entry_mode) {
                    ChangeStatus::Modified
                } else {
                    ChangeStatus::TypeChanged
                };
                Change {
                    binary: is_binary(previous_id, previous_entry_mode, &path)?
                        || is_binary(id, entry_mode, &path)?,
                    path,
                    old_path: None,
                    status,
                }
            }
            ChangeDetached::Rewrite {
                source_location,
                source_entry_mode,
                source_id,
                entry_mode,
                id,
                location,
                copy,
                ..
            } => {
                let path = location.to_string();
                let binary = is_binary(source_id, source_entry_mode, &path)?
                    || is_binary(id, entry_mode, &path)?;
                if copy {
                    // Copies are not tracked; kept for completeness as an addition.
                    Change {
                        path,
                        old_path: None,
                        status: ChangeStatus::Added,
                        binary,
                    }
                } else {
                    Change {
                        path,
                        old_path: Some(source_location.to_string()),
                        status: ChangeStatus::Renamed,
                        binary,
                    }
                }
            }
        };
        out.push(c);
    }
    out.sort();
    Ok(out)
}
