//! Git repositories built by tests: a source [`Repo`] of merged pull
//! requests and a [`Checkout`] of it where sessions' diffs are made.

use std::path::{Path, PathBuf};

use super::Project;

/// A deterministic git repository of merged pull requests, built under a
/// project (the same shape as `tests/tasks.rs` builds).
pub struct Repo {
    pub dir: PathBuf,
    tick: u64,
}

/// Hermetic `git` in `dir` (see `assay_testkit::git`), its dates `tick`
/// hours after a fixed moment.
pub fn git_in(dir: &Path, tick: u64, args: &[&str]) -> String {
    let time = 1_767_607_200 + tick as i64 * 3600;
    assay_testkit::git(dir, time, args)
}

impl Repo {
    /// `git init` of `<project>/<name>`.
    pub fn new(project: &Project, name: &str) -> Repo {
        let dir = project.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let r = Repo { dir, tick: 0 };
        r.git(&["init", "-q", "-b", "main"]);
        r
    }

    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.dir, self.tick, args)
    }

    pub fn put(&self, rel: &str, contents: &str) -> &Repo {
        let p = self.dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
        self
    }

    pub fn commit(&mut self, msg: &str) {
        self.git(&["add", "-A"]);
        self.tick += 1;
        self.git(&["commit", "-q", "--no-verify", "-m", msg]);
    }

    /// The commit id `main` points at.
    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"]).trim().to_owned()
    }

    /// Commits `files` on a new branch and merges it as PR #n (`--no-ff`).
    pub fn pr(&mut self, n: u32, title: &str, files: &[(&str, &str)]) {
        let b = format!("b{n}");
        self.git(&["checkout", "-q", "-b", &b, "main"]);
        for (p, c) in files {
            self.put(p, c);
        }
        self.commit(title);
        self.git(&["checkout", "-q", "main"]);
        self.tick += 1;
        self.git(&[
            "merge",
            "-q",
            "--no-ff",
            "--no-edit",
            "-m",
            &format!("Merge pull request #{n} from o/{b}"),
            "-m",
            title,
            &b,
        ]);
        self.git(&["branch", "-q", "-D", &b]);
    }

    /// A clone at `<project>/<name>` for making session diffs with real git.
    pub fn checkout(&self, project: &Project, name: &str) -> Checkout {
        let dir = project.path().join(name);
        git_in(
            project.path(),
            0,
            &[
                "clone",
                "-q",
                &self.dir.display().to_string(),
                &dir.display().to_string(),
            ],
        );
        Checkout { dir }
    }
}

/// A clone of a [`Repo`] where an "agent" edits files and `git diff` is taken.
pub struct Checkout {
    pub dir: PathBuf,
}

impl Checkout {
    fn git(&self, args: &[&str]) -> String {
        git_in(&self.dir, 100, args)
    }

    /// `git diff` of `files` (path, new contents; `None` deletes) written over
    /// `base`, new files included. `wip` is first committed locally over base
    /// (the agent's own commit, not in the source): a diff against it has
    /// context that is not in base (stale context).
    pub fn diff(&self, base: &str, wip: &[(&str, &str)], files: &[(&str, Option<&str>)]) -> String {
        self.git(&["checkout", "-q", "--detach", base]);
        self.git(&["reset", "-q", "--hard", base]);
        self.git(&["clean", "-qfdx"]);
        let write = |rel: &str, c: Option<&str>| {
            let p = self.dir.join(rel);
            match c {
                Some(c) => {
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(p, c).unwrap();
                }
                None => std::fs::remove_file(p).unwrap(),
            }
        };
        if !wip.is_empty() {
            for (rel, c) in wip {
                write(rel, Some(c));
            }
            self.git(&["add", "-A"]);
            self.git(&["commit", "-q", "--no-verify", "-m", "wip"]);
        }
        for (rel, c) in files {
            write(rel, *c);
        }
        self.git(&["add", "-A"]);
        let d = self.git(&["diff", "--cached", "--no-color", "--no-ext-diff", "HEAD"]);
        self.git(&["reset", "-q", "--hard", base]);
        self.git(&["clean", "-qfdx"]);
        d
    }
}
