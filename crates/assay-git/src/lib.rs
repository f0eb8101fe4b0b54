//! Git access for assay: mining candidates from a source repository and
//! staging exact file trees for test runs.
//!
//! Two halves. [`Source`] reads a user's repository (never writes to it):
//! candidates on a branch's first-parent line, changed paths, patches, file
//! contents. [`TreeStore`] is a bare object store in assay's cache that
//! borrows the sources' objects through alternates; it composes a base tree
//! with patches (`git apply --cached` on a temporary index), refusing any
//! patch that would leave the tree, and writes trees to fresh directories.
//! A staged tree is identified by its git tree id, a digest of its content.

mod candidates;
mod changes;
mod command;
mod error;
mod materialize;
mod patch;
mod safety;
mod source;
mod tree_store;
mod tree_walk;

pub use candidates::{Candidate, CandidateKind, CandidateQuery};
pub use changes::{Change, ChangeStatus};
pub use error::{ComposeError, GitError};
pub use materialize::MaterializeStats;
pub use patch::{
    AddedLine, AddedLines, PatchFile, PatchPath, check_with_git, parse_patch, parse_patch_with,
    patch_paths,
};
pub use source::Source;
pub use tree_store::{BlobReader, PatchStep, TreeEntry, TreeStore};
