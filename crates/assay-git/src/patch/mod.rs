//! Reading a patch the way `git apply` reads it: its file sections, the
//! paths each one writes, and the lines its hunks add.
//!
//! Every decision assay takes about a session patch (which paths the policy
//! leaves out, which hidden test files it must give way to, whether it
//! touches test infrastructure or reaches into the test framework) rests on
//! this reading, while `git apply` is what writes the tree. The two must not
//! differ, or a patch could be judged by one path and written to another
//! (`--- a/t.py` / `+++ b/t.py.orig` is written to `t.py`: git takes the
//! shorter name). So this module is a port of the parser of git's
//! `apply.c` (`find_header`, `parse_git_diff_header`,
//! `parse_traditional_patch`, `parse_fragment`, the binary hunks), down to
//! its quirks: the `-p` value guessed from the first traditional section
//! and kept for the rest, names ending at the first tab or carriage
//! return, epoch timestamps marking creations, hunks read strictly by
//! their line counts (a hunk line `+++ b/x` is content, never a header).
//!
//! And then it does not trust itself: [`check_with_git`] asks git for its
//! own reading (`git apply --numstat -z --summary`: per section the path
//! written and the lines added and removed, then creations, deletions,
//! renames, copies and mode changes) and compares it, byte for byte, with
//! the same output rendered from this reading. Any difference refuses the
//! patch, with the first section that differs. Names must be UTF-8 (others
//! are refused with that reason).
//!
//! The reading is split by concern: [`parser`] walks the patch section by
//! section, [`names`] (with [`timestamp`]) reads the names of traditional
//! `---`/`+++` lines and guesses `-p`, [`headers`] reads `diff --git`
//! headers, [`hunks`] the text and binary hunks, and [`git`] compares the
//! result with git's. [`cstr`] holds the C string helpers they share.

mod cstr;
mod git;
mod headers;
mod hunks;
mod names;
mod parser;
#[cfg(test)]
mod tests;
mod timestamp;

pub use git::check_with_git;

use crate::error::GitError;
use parser::{Parser, Raw};

/// One file section of a patch: the paths it touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchPath {
    /// The path written (the path removed, for a deletion): the one
    /// `git apply --exclude` matches.
    pub path: String,
    /// The path read when it differs (a rename's or a copy's source).
    pub old_path: Option<String>,
    /// `old_path` stays (a copy); otherwise a differing `old_path` is
    /// removed (a rename).
    pub is_copy: bool,
    /// The section creates `path` (or may: a traditional hunk with no old
    /// lines creates the file when it does not exist).
    pub is_new: bool,
    pub is_deleted: bool,
    /// The resulting entry is a symlink (mode 120000).
    pub is_symlink: bool,
}

impl PatchPath {
    /// The paths this section changes: `path`, and a rename's source.
    pub fn written(&self) -> impl Iterator<Item = &str> {
        let removed = self.old_path.as_deref().filter(|_| !self.is_copy);
        std::iter::once(self.path.as_str()).chain(removed)
    }
}

/// A line a hunk adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedLine {
    /// 1-based line number in the patch.
    pub line: usize,
    /// The content, without the `+` and the line end (lossy UTF-8).
    pub text: String,
}

/// One file section of a patch, with what its hunks add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    pub path: PatchPath,
    /// Lines added by the text hunks, in order (none for a binary patch).
    pub added: Vec<AddedLine>,
    pub lines_added: u64,
    pub lines_removed: u64,
    pub is_binary: bool,
}

/// Parses the file sections of `patch`; see the module documentation.
pub fn parse_patch(patch: &[u8]) -> Result<Vec<PatchFile>, GitError> {
    parse_patch_with(patch, AddedLines::Keep)
}

/// Whether [`parse_patch_with`] keeps the added lines or only counts them
/// (a patch of millions of lines then costs no allocation per line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddedLines {
    Keep,
    Count,
}

/// [`parse_patch`], keeping the added lines or only counting them.
pub fn parse_patch_with(patch: &[u8], lines: AddedLines) -> Result<Vec<PatchFile>, GitError> {
    let mut parser = Parser::new(patch);
    parser.keep_added = lines == AddedLines::Keep;
    parser.parse()?.into_iter().map(Raw::into_file).collect()
}

/// The paths of each file section of `patch` ([`parse_patch`] without the
/// added lines).
pub fn patch_paths(patch: &[u8]) -> Result<Vec<PatchPath>, GitError> {
    Ok(parse_patch_with(patch, AddedLines::Count)?
        .into_iter()
        .map(|f| f.path)
        .collect())
}
