//! The tree store: a bare object store in assay's cache where staged trees
//! are composed.
//!
//! It owns no history: it borrows the source repositories' objects through
//! `objects/info/alternates` (read-only for git) and receives only the
//! blobs and trees that patches create, so the user's repository is never
//! written to. A composed tree's id is a content digest: identical file
//! trees have identical ids whatever patches produced them.
//!
//! Patches are untrusted. `compose` refuses a patch that `git apply` reads
//! differently from assay ([`crate::check_with_git`]), and escaping paths
//! twice: from the patch headers before `git apply` runs (a clear error
//! naming the path), and from the resulting tree after `git write-tree`
//! (whatever the parser may have missed, including symlinks that point
//! outside the tree).

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::command::Git;
use crate::error::{ComposeError, GitError};
use crate::materialize::{self, MaterializeStats};
use crate::patch::{check_with_git, patch_paths};
use crate::safety::{LinkResolver, path_violation};
use crate::tree_walk::{parse_id, walk};

/// A bare object store borrowing objects from source repositories.
#[derive(Debug, Clone)]
pub struct TreeStore {
    path: PathBuf,
}

/// One patch to apply while composing a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchStep {
    /// Names the step in errors (e.g. `session`, `test_patch`).
    pub label: String,
    pub patch: Vec<u8>,
    /// Paths of this patch to leave out (matched literally against the
    /// patch's new path, as `git apply --exclude` does).
    pub exclude: Vec<String>,
}

/// One blob entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TreeEntry {
    pub path: String,
    /// Git mode: 0o100644, 0o100755 or 0o120000.
    pub mode: u32,
    /// Blob id, full hex.
    pub id: String,
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// A name no other process or thread uses at the same time.
fn unique_name(stem: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{stem}-{}-{nanos}-{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

fn is_store(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir()
}

/// Removes a temporary file (and git's lock beside it) when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let mut lock = self.0.clone().into_os_string();
        lock.push(".lock");
        let _ = std::fs::remove_file(lock);
    }
}

/// Escapes glob metacharacters: `git apply --exclude` takes fnmatch patterns.
fn literal_pattern(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl TreeStore {
    /// Opens the store at `dir`, creating it (`git init --bare`) if missing.
    ///
    /// Creation happens in a sibling temp directory renamed into place, so
    /// two processes racing both end up with one complete store.
    pub fn open_or_init(dir: &Path) -> Result<TreeStore, GitError> {
        if is_store(dir) {
            return Ok(TreeStore {
                path: dir.to_path_buf(),
            });
        }
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(|e| GitError::io(&parent, e))?;
        let name = dir
            .file_name()
            .map_or_else(|| "store".into(), |n| n.to_string_lossy().into_owned());
        let tmp = parent.join(unique_name(&format!(".{name}.init")));
        let result = Git::new(&tmp)
            .args(["init", "--bare", "--quiet", "--template="])
            .output(&[])
            .and_then(|_| Git::new(&tmp).args(["config", "gc.auto", "0"]).output(&[]))
            .and_then(|_| {
                Git::new(&tmp)
                    .args(["config", "core.logAllRefUpdates", "false"])
                    .output(&[])
            });
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
        // Renaming onto an empty directory succeeds; onto a store created
        // meanwhile by someone else fails, and theirs is as good as ours.
        if let Err(e) = std::fs::rename(&tmp, dir) {
            let _ = std::fs::remove_dir_all(&tmp);
            if !is_store(dir) {
                return Err(GitError::io(dir, e));
            }
        }
        Ok(TreeStore {
            path: dir.to_path_buf(),
        })
    }

    /// The store's directory (a bare git dir).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn objects_dir(&self) -> PathBuf {
        self.path.join("objects")
    }

    /// Lets the store read the objects of a source repository. Accepts the
    /// objects directory itself, or a git dir containing one. Idempotent;
    /// each line is appended with a single `O_APPEND` write, so concurrent
    /// callers cannot interleave (a duplicate line is harmless to git).
    pub fn add_alternate(&self, source_objects_dir: &Path) -> Result<(), GitError> {
        let mut objects = source_objects_dir.to_path_buf();
        if objects.join("HEAD").is_file() && objects.join("objects").is_dir() {
            objects = objects.join("objects");
        }
        let objects = objects
            .canonicalize()
            .map_err(|e| GitError::io(&objects, e))?;
        if !objects.is_dir() {
            return Err(GitError::UnsafePath {
                path: objects.display().to_string(),
                reason: "not an objects directory".into(),
            });
        }
        let own = self
            .objects_dir()
            .canonicalize()
            .map_err(|e| GitError::io(self.objects_dir(), e))?;
        if objects == own {
            return Ok(());
        }
        let line = objects.to_str().ok_or_else(|| GitError::UnsafePath {
            path: objects.display().to_string(),
            reason: "alternate path is not UTF-8".into(),
        })?;
        if line.contains('\n') {
            return Err(GitError::UnsafePath {
                path: line.to_string(),
                reason: "alternate path contains a newline".into(),
            });
        }
        let info = self.objects_dir().join("info");
        std::fs::create_dir_all(&info).map_err(|e| GitError::io(&info, e))?;
        let file = info.join("alternates");
        let existing = match std::fs::read_to_string(&file) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(GitError::io(&file, e)),
        };
        if existing.lines().any(|l| l == line) {
            return Ok(());
        }
        let mut record = String::new();
        if !existing.is_empty() && !existing.ends_with('\n') {
            record.push('\n');
        }
        record.push_str(line);
        record.push('\n');
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .map_err(|e| GitError::io(&file, e))?;
        f.write_all(record.as_bytes())
            .map_err(|e| GitError::io(&file, e))
    }

    /// A gix handle on the store, opened afresh so alternates added since
    /// (by this or another process) are seen.
    fn repo(&self) -> Result<gix::Repository, GitError> {
        gix::open_opts(&self.path, gix::open::Options::isolated()).map_err(|e| GitError::Open {
            path: self.path.clone(),
            source: Box::new(e),
        })
    }

    /// Composes `base_commit`'s tree with `patches` applied in order and
    /// returns the resulting tree id (hex). See the module documentation
    /// for the safety checks.
    pub fn compose(
        &self,
        base_commit: &str,
        patches: &[PatchStep],
    ) -> Result<String, ComposeError> {
        let base = parse_id(base_commit)?;
        let tmp_dir = self.path.join("assay-tmp");
        std::fs::create_dir_all(&tmp_dir).map_err(|e| GitError::io(&tmp_dir, e))?;
        let index = TempFile(tmp_dir.join(unique_name("index")));
        let git = || Git::new(&self.path).env("GIT_INDEX_FILE", &index.0);

        git()
            .arg("read-tree")
            .arg(format!("{base}^{{tree}}"))
            .output(&[])?;
        for step in patches {
            if step.patch.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            check_patch(step)?;
            let mut cmd = git().args(["apply", "--cached", "--binary", "--whitespace=nowarn"]);
            for p in &step.exclude {
                cmd = cmd.arg(format!("--exclude={}", literal_pattern(p)));
            }
            if let Err(failure) = cmd.try_output(&step.patch)? {
                let stderr = match failure {
                    GitError::Command { stderr, .. } => stderr,
                    other => other.to_string(),
                };
                return Err(ComposeError::Apply {
                    label: step.label.clone(),
                    stderr,
                });
            }
        }
        let out = git().arg("write-tree").output(&[])?;
        let tree = String::from_utf8_lossy(&out).trim().to_string();
        self.check_tree(base, &tree, patches)?;
        Ok(tree)
    }

    /// Refuses a composed tree with an unsafe path or a symlink that newly
    /// escapes the root.
    fn check_tree(
        &self,
        base: gix::ObjectId,
        tree: &str,
        patches: &[PatchStep],
    ) -> Result<(), ComposeError> {
        let repo = self.repo()?;
        let blame = |path: &str| -> String {
            patches
                .iter()
                .rev()
                .find(|s| {
                    patch_paths(&s.patch)
                        .map(|ps| {
                            ps.iter()
                                .any(|p| p.path == path || p.old_path.as_deref() == Some(path))
                        })
                        .unwrap_or(false)
                })
                .or(patches.last())
                .map_or_else(String::new, |s| s.label.clone())
        };
        let links_of = |root: gix::ObjectId| -> Result<HashMap<String, String>, ComposeError> {
            let listing = match walk(&repo, root) {
                Ok(l) => l,
                Err(GitError::UnsafePath { path, reason }) => {
                    return Err(ComposeError::PathEscape {
                        label: blame(&path),
                        path,
                        reason,
                    });
                }
                Err(e) => return Err(e.into()),
            };
            let mut links = HashMap::new();
            for e in listing.entries.iter().filter(|e| e.mode.is_link()) {
                let blob = repo
                    .find_blob(e.id)
                    .map_err(|err| GitError::object(e.id, "symlink target", err))?;
                links.insert(
                    String::from_utf8_lossy(&e.path).into_owned(),
                    String::from_utf8_lossy(&blob.data).into_owned(),
                );
            }
            Ok(links)
        };
        let new_links = links_of(parse_id(tree)?)?;
        if new_links.is_empty() {
            return Ok(());
        }
        let base_tree = repo
            .find_commit(base)
            .and_then(|c| c.tree_id())
            .map_err(|e| GitError::object(base, "tree of base commit", e))?
            .detach();
        let old_links = links_of(base_tree)?;
        let now = LinkResolver::new(&new_links);
        let before = LinkResolver::new(&old_links);
        let mut paths: Vec<&String> = new_links.keys().collect();
        paths.sort();
        for path in paths {
            let target = &new_links[path];
            let Some(reason) = now.escape(path, target) else {
                continue;
            };
            let unchanged = old_links.get(path) == Some(target);
            if unchanged && before.escape(path, target).is_some() {
                // Escaped already at base: inherited from the repository.
                continue;
            }
            return Err(ComposeError::PathEscape {
                label: blame(path),
                path: path.clone(),
                reason,
            });
        }
        Ok(())
    }

    /// The tree of the files under `dir` as `git add -A` there would stage
    /// them (`.git` left out, `.gitignore` honoured, symlinks as links),
    /// written into this store; returns its id. Nothing of `dir`'s own git
    /// directory is read — not its config, hooks, index or history — and no
    /// filter runs (their config would be this store's, which has none): a
    /// workspace an agent left behind is read as files, whatever its
    /// `.git` says.
    pub fn write_tree_of(&self, dir: &Path) -> Result<String, GitError> {
        self.write_tree_of_within(dir, None)
    }

    /// [`TreeStore::write_tree_of`], stopped once reading `dir` has taken
    /// `limit` ([`GitError::TimedOut`]): its files may be someone else's,
    /// made to cost the reader (sparse files of no blocks read as zeros).
    pub fn write_tree_of_within(
        &self,
        dir: &Path,
        limit: Option<std::time::Duration>,
    ) -> Result<String, GitError> {
        let tmp_dir = self.path.join("assay-tmp");
        std::fs::create_dir_all(&tmp_dir).map_err(|e| GitError::io(&tmp_dir, e))?;
        let index = TempFile(tmp_dir.join(unique_name("index")));
        let git = || {
            Git::new(&self.path)
                .env("GIT_INDEX_FILE", &index.0)
                .env("GIT_WORK_TREE", dir)
        };
        let add = git()
            .args([
                "-c",
                "core.fsmonitor=false",
                "-c",
                "core.hooksPath=/dev/null",
            ])
            .args(["add", "-A", "--", "."]);
        match limit {
            Some(limit) => add.output_within(limit)?,
            None => add.output(&[])?,
        };
        let out = git().arg("write-tree").output(&[])?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// A commit of `tree` with no parent and fixed metadata (the same tree
    /// gives the same id), for composing over a tree that is no source's
    /// commit: a workspace's base read from files.
    pub fn commit_of_tree(&self, tree: &str) -> Result<String, GitError> {
        let tree = parse_id(tree)?;
        let out = Git::new(&self.path)
            .env("GIT_AUTHOR_NAME", "assay")
            .env("GIT_AUTHOR_EMAIL", "assay@localhost")
            .env("GIT_AUTHOR_DATE", "@0 +0000")
            .env("GIT_COMMITTER_NAME", "assay")
            .env("GIT_COMMITTER_EMAIL", "assay@localhost")
            .env("GIT_COMMITTER_DATE", "@0 +0000")
            .args(["commit-tree", "-m", "base"])
            .arg(tree.to_string())
            .output(&[])?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// The binary diff from tree `from` to tree `to` (`git diff --binary`
    /// as `git apply` takes it); empty when they are the same.
    pub fn diff(&self, from: &str, to: &str) -> Result<Vec<u8>, GitError> {
        let (from, to) = (parse_id(from)?, parse_id(to)?);
        Git::new(&self.path)
            .args([
                "diff-tree",
                "-p",
                "--binary",
                "--full-index",
                "--no-renames",
                "--no-color",
            ])
            .arg(from.to_string())
            .arg(to.to_string())
            .output(&[])
    }

    /// The tree id of `base_commit` (a commit of a source, or a tree).
    pub fn tree_of(&self, base_commit: &str) -> Result<String, GitError> {
        let id = parse_id(base_commit)?;
        let out = Git::new(&self.path)
            .arg("rev-parse")
            .arg(format!("{id}^{{tree}}"))
            .output(&[])?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// Writes the files of `tree` into `dest` (empty or absent): no `.git`,
    /// no history. See [`crate::materialize`] for how it stays inside `dest`.
    pub fn materialize(&self, tree: &str, dest: &Path) -> Result<MaterializeStats, GitError> {
        let repo = self.repo()?.into_sync();
        materialize::materialize(&repo, tree, dest)
    }

    /// All blob and symlink entries of `tree`, recursively, sorted by path.
    pub fn entries(&self, tree: &str) -> Result<Vec<TreeEntry>, GitError> {
        let repo = self.repo()?;
        let listing = walk(&repo, parse_id(tree)?)?;
        let mut out = Vec::with_capacity(listing.entries.len());
        for e in listing
            .entries
            .into_iter()
            .filter(|e| e.mode.is_blob_or_symlink())
        {
            let path = String::from_utf8(e.path).map_err(|err| GitError::UnsafePath {
                path: String::from_utf8_lossy(err.as_bytes()).into_owned(),
                reason: "path is not valid UTF-8".into(),
            })?;
            out.push(TreeEntry {
                path,
                mode: u32::from(e.mode.value()),
                id: e.id.to_string(),
            });
        }
        out.sort();
        Ok(out)
    }

    /// Deletes (with `apply`) or counts the objects of this store that no tree
    /// in `keep` reaches: staged trees of sessions and states that no kept
    /// node names. The source repositories' objects (alternates) are
    /// never touched. Returns the number of objects pruned (or prunable).
    pub fn prune(&self, keep: &[String], apply: bool) -> Result<usize, GitError> {
        let git = || Git::new(&self.path);
        // Forget the previous collection's pins, then pin every kept tree.
        let old = git()
            .args([
                "for-each-ref",
                "--format=delete %(refname)",
                "refs/assay/keep/",
            ])
            .output(b"")?;
        if !old.is_empty() {
            git().args(["update-ref", "--stdin"]).output(&old)?;
        }
        let mut pins = Vec::new();
        for id in keep {
            parse_id(id)?;
            // A pin must name an object that exists (here or in a source).
            let present = git().args(["cat-file", "-e", id]).try_output(b"")?.is_ok();
            if present {
                pins.extend_from_slice(format!("create refs/assay/keep/{id} {id}\n").as_bytes());
            }
        }
        if !pins.is_empty() {
            git().args(["update-ref", "--stdin"]).output(&pins)?;
        }
        let listed = git()
            .args(["prune", "--expire=now", "--dry-run"])
            .output(b"")?;
        let count = listed
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count();
        if apply && count > 0 {
            git().args(["prune", "--expire=now"]).output(b"")?;
        }
        Ok(count)
    }

    /// The content of blob `id` (full hex).
    pub fn read_blob(&self, id: &str) -> Result<Vec<u8>, GitError> {
        self.blob_reader()?.read(id)
    }

    /// One handle of the repository for reading many blobs: opening it
    /// costs more than reading a small blob (a run that fingerprints a few
    /// hundred test files paid it a few hundred times).
    pub fn blob_reader(&self) -> Result<BlobReader, GitError> {
        Ok(BlobReader { repo: self.repo()? })
    }
}

/// Reads blobs of a [`TreeStore`] through one open handle.
pub struct BlobReader {
    repo: gix::Repository,
}

impl BlobReader {
    pub fn read(&self, id: &str) -> Result<Vec<u8>, GitError> {
        let oid = parse_id(id)?;
        let mut blob = self
            .repo
            .find_blob(oid)
            .map_err(|e| GitError::object(oid, "blob", e))?;
        // The bytes themselves, not a copy of them.
        Ok(blob.take_data())
    }
}

/// Refuses a patch naming a path outside the tree or inside `.git`, or one
/// that `git apply` reads differently from assay (whose reading decided
/// what to leave out of it), before anything is applied.
fn check_patch(step: &PatchStep) -> Result<(), ComposeError> {
    let paths = patch_paths(&step.patch).map_err(|e| ComposeError::Apply {
        label: step.label.clone(),
        stderr: e.to_string(),
    })?;
    for p in &paths {
        for path in std::iter::once(&p.path).chain(p.old_path.as_ref()) {
            if let Some(reason) = path_violation(path) {
                return Err(ComposeError::PathEscape {
                    label: step.label.clone(),
                    path: path.clone(),
                    reason,
                });
            }
        }
    }
    match check_with_git(&step.patch) {
        Ok(()) => Ok(()),
        Err(GitError::Misread { reason }) => Err(ComposeError::Misread {
            label: step.label.clone(),
            reason,
        }),
        Err(GitError::Command { stderr, .. }) => Err(ComposeError::Apply {
            label: step.label.clone(),
            stderr,
        }),
        Err(e) => Err(e.into()),
    }
}
