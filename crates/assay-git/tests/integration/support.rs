//! A small builder for throwaway repositories with fixed identities/dates.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

pub(crate) struct Repo {
    pub(crate) dir: TempDir,
    time: i64,
}

/// Hermetic `git` (see `assay_testkit::git`), its output trimmed.
pub(crate) fn git_in(dir: &Path, args: &[&str], time: i64) -> String {
    assay_testkit::git(dir, time, args).trim().to_string()
}

impl Repo {
    pub(crate) fn new() -> Repo {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repo {
            dir,
            time: 1_700_000_000,
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        git_in(self.path(), args, self.time)
    }

    /// `git` here, its output as it is (a patch keeps its last line end).
    pub(crate) fn git_bytes(&self, args: &[&str]) -> Vec<u8> {
        assay_testkit::git(self.path(), self.time, args).into_bytes()
    }

    pub(crate) fn write(&self, path: &str, content: impl AsRef<[u8]>) -> &Repo {
        let p = self.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, content).expect("write");
        self
    }

    pub(crate) fn exec(&self, path: &str) -> &Repo {
        use std::os::unix::fs::PermissionsExt;
        let p = self.path().join(path);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        self
    }

    pub(crate) fn symlink(&self, path: &str, target: &str) -> &Repo {
        let p = self.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, &p).expect("symlink");
        self
    }

    /// Commits everything at a time one hour after the previous commit.
    pub(crate) fn commit(&mut self, message: &str) -> String {
        self.time += 3600;
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// `git merge --no-ff` of `branch` into the current branch.
    pub(crate) fn merge(&mut self, branch: &str, message: &str) -> String {
        self.time += 3600;
        self.git(&["merge", "-q", "--no-ff", "-m", message, branch]);
        self.git(&["rev-parse", "HEAD"])
    }

    pub(crate) fn tree_of(&self, rev: &str) -> String {
        self.git(&["rev-parse", &format!("{rev}^{{tree}}")])
    }
}

/// Every file below `dir`, relative, sorted (to compare before/after).
pub(crate) fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let e = e.expect("entry");
            let p = e.path();
            out.push(p.strip_prefix(dir).expect("prefix").to_path_buf());
            if e.file_type().expect("type").is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}
