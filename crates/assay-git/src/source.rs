//! A source repository, read-only.
//!
//! Objects are read with gix (opened isolated: no global/system config, no
//! environment overrides). The only writes-free shell-out is `git diff-tree`
//! to produce patches that `git apply` accepts byte for byte. Nothing here
//! ever writes into the repository.

use std::path::{Path, PathBuf};

use crate::candidates::{self, Candidate, CandidateQuery};
use crate::changes::{self, Change};
use crate::command::Git;
use crate::error::GitError;

/// A git repository whose history is mined for candidates.
pub struct Source {
    repo: gix::Repository,
    path: PathBuf,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source").field("path", &self.path).finish()
    }
}

impl Source {
    /// Opens the repository at `path` (work tree or git dir).
    pub fn open(path: &Path) -> Result<Source, GitError> {
        let repo =
            gix::open_opts(path, gix::open::Options::isolated()).map_err(|e| GitError::Open {
                path: path.to_path_buf(),
                source: Box::new(e),
            })?;
        Ok(Source {
            repo,
            path: path.to_path_buf(),
        })
    }

    pub(crate) fn repo(&self) -> &gix::Repository {
        &self.repo
    }

    /// The path the source was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The repository's git dir; its `objects` directory is what a
    /// [`crate::TreeStore`] borrows through alternates.
    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// The repository's object directory.
    pub fn objects_dir(&self) -> PathBuf {
        self.repo.common_dir().join("objects")
    }

    /// Resolves `rev` to the full hex id of the commit it names.
    pub fn resolve(&self, rev: &str) -> Result<String, GitError> {
        Ok(self.commit(rev)?.id.to_string())
    }

    /// The committer time of the commit `rev` names, unix seconds.
    pub fn commit_time(&self, rev: &str) -> Result<i64, GitError> {
        let commit = self.commit(rev)?;
        Ok(commit
            .time()
            .map_err(|e| GitError::object(commit.id, "commit time", e))?
            .seconds)
    }

    pub(crate) fn commit(&self, rev: &str) -> Result<gix::Commit<'_>, GitError> {
        let resolve_err = |e| GitError::Resolve {
            rev: rev.to_string(),
            source: Box::new(e),
        };
        let id = self.repo.rev_parse_single(rev).map_err(resolve_err)?;
        let object = id.object().map_err(resolve_err)?;
        object.peel_to_commit().map_err(resolve_err)
    }

    /// Bytes of the file at `path` in `commit`, `None` if there is no such
    /// file (or the path names a directory or submodule).
    pub fn read_file(&self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let commit = self.commit(commit)?;
        let tree = commit
            .tree()
            .map_err(|e| GitError::object(commit.id, "tree of commit", e))?;
        let entry = tree
            .lookup_entry(path.split('/'))
            .map_err(|e| GitError::object(commit.id, format!("looking up {path}"), e))?;
        let Some(entry) = entry else { return Ok(None) };
        if !entry.mode().is_blob_or_symlink() {
            return Ok(None);
        }
        let blob = self
            .repo
            .find_blob(entry.object_id())
            .map_err(|e| GitError::object(entry.object_id(), format!("blob of {path}"), e))?;
        Ok(Some(blob.data.clone()))
    }

    /// Candidates on `q.branch`'s first-parent history, newest first: merge
    /// commits (base = first parent) and, with a squash pattern, non-merge
    /// commits whose subject matches it. See [`CandidateQuery`].
    pub fn candidates(&self, q: &CandidateQuery) -> Result<Vec<Candidate>, GitError> {
        candidates::candidates(self, q)
    }

    /// Paths changed between the trees of `base` and `head`, renames
    /// detected (50% similarity, like `git diff -M`), sorted by path.
    pub fn changed_paths(&self, base: &str, head: &str) -> Result<Vec<Change>, GitError> {
        changes::changed_paths(self, base, head)
    }

    /// A `git apply`-compatible patch of `base..head` restricted to `paths`
    /// (binary-safe, full blob ids, renames kept). Empty when `paths` is.
    ///
    /// Uses the plumbing `git diff-tree`, which produces the same format as
    /// `git diff` but ignores the repository's porcelain diff settings
    /// (`diff.noprefix`, `diff.external`, textconv, orderFile, ...), so the
    /// bytes depend only on the two commits.
    pub fn diff_patch(
        &self,
        base: &str,
        head: &str,
        paths: &[String],
    ) -> Result<Vec<u8>, GitError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let base = self.resolve(base)?;
        let head = self.resolve(head)?;
        Git::new(self.git_dir())
            .args([
                "diff-tree",
                "-r",
                "-p",
                "--binary",
                "--full-index",
                "-M",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--no-relative",
                "--src-prefix=a/",
                "--dst-prefix=b/",
            ])
            .env("GIT_LITERAL_PATHSPECS", "1")
            .arg(&base)
            .arg(&head)
            .arg("--")
            .args(paths)
            .output(&[])
    }
}
