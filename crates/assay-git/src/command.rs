//! Running the git CLI in a controlled environment.
//!
//! The process environment is cleared, so no `GIT_*` variable of the caller
//! (GIT_DIR, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY, ...) can redirect a command,
//! and the user's global/system config is never read. Only `PATH` (to find
//! git) and `TMPDIR` are kept. Every invocation names its repository
//! explicitly with `GIT_DIR`.
//!
//! git is run by its absolute path, found on `PATH` once: the standard
//! library starts a bare program name under a changed environment with
//! `fork` (it must search the new `PATH` itself), and a fork copies the page
//! tables of the whole process, whose memory grows with the build's graph.
//! A stage node runs git three times, so a build's system time grew with the
//! square of its sessions (7,500 sessions: 347 s of it, 13.6x the 1,860
//! sessions' 25.5 s). With a path, it is `posix_spawn`, whose cost does not
//! depend on the parent's size.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::error::GitError;

/// `git` on `PATH` as an absolute path (the name itself when none is found,
/// which then fails or forks as a bare name does).
fn git_program() -> &'static Path {
    static GIT: OnceLock<PathBuf> = OnceLock::new();
    GIT.get_or_init(|| {
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("git"))
            .find(|path| is_executable(path))
            .unwrap_or_else(|| PathBuf::from("git"))
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A git invocation against one repository (`GIT_DIR`).
pub(crate) struct Git {
    cmd: Command,
    args: Vec<String>,
}

impl Git {
    pub(crate) fn new(git_dir: &Path) -> Git {
        let mut cmd = Command::new(git_program());
        cmd.env_clear();
        for keep in ["PATH", "TMPDIR"] {
            if let Some(v) = std::env::var_os(keep) {
                cmd.env(keep, v);
            }
        }
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_SYSTEM", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("LC_ALL", "C")
            .env("GIT_DIR", git_dir)
            .args(["-c", "core.quotepath=off"]);
        Git {
            cmd,
            args: Vec::new(),
        }
    }

    /// A git invocation outside any repository (`GIT_DIR` names none), for
    /// commands that only read their input, like `apply --numstat`.
    pub(crate) fn detached() -> Git {
        Git::new(Path::new("/dev/null"))
    }

    pub(crate) fn arg(mut self, arg: impl AsRef<OsStr>) -> Git {
        self.args.push(arg.as_ref().to_string_lossy().into_owned());
        self.cmd.arg(arg);
        self
    }

    pub(crate) fn args<I, S>(mut self, args: I) -> Git
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    pub(crate) fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Git {
        self.cmd.env(key, value);
        self
    }

    fn describe(&self) -> String {
        self.args.join(" ")
    }

    /// Runs the command, feeding `stdin`; returns stdout on success.
    pub(crate) fn output(self, stdin: &[u8]) -> Result<Vec<u8>, GitError> {
        self.try_output(stdin)?
    }

    /// Like [`Git::output`] with no input, but killed once it has run for
    /// `limit` ([`GitError::TimedOut`]): for reading back a tree whose
    /// files someone else made.
    pub(crate) fn output_within(mut self, limit: std::time::Duration) -> Result<Vec<u8>, GitError> {
        let args = self.describe();
        let spawn = |source| GitError::Spawn {
            args: args.clone(),
            source,
        };
        let mut child = self
            .cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn)?;
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut buf);
                }
                buf
            })
        };
        let stdout = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().map_err(spawn)? {
                break status;
            }
            if started.elapsed() >= limit {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GitError::TimedOut {
                    args,
                    seconds: limit.as_secs(),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let (stdout, stderr) = (
            stdout.join().unwrap_or_default(),
            stderr.join().unwrap_or_default(),
        );
        if status.success() {
            Ok(stdout)
        } else {
            Err(GitError::Command {
                args,
                status: status.to_string(),
                stderr: String::from_utf8_lossy(&stderr).trim().to_string(),
            })
        }
    }

    /// Like [`Git::output`], but a non-zero exit is returned as the inner
    /// `Err` so callers can map it to their own outcome.
    pub(crate) fn try_output(
        mut self,
        stdin: &[u8],
    ) -> Result<Result<Vec<u8>, GitError>, GitError> {
        let args = self.describe();
        let mut child = self
            .cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| GitError::Spawn {
                args: args.clone(),
                source,
            })?;
        // Feed stdin from a thread so a large patch cannot deadlock against a
        // full stdout pipe.
        let output = std::thread::scope(|scope| {
            let writer = child.stdin.take().map(|mut pipe| {
                scope.spawn(move || {
                    // A command may exit before reading all input; its exit
                    // status reports the real problem.
                    let _ = pipe.write_all(stdin);
                })
            });
            let output = child.wait_with_output();
            if let Some(w) = writer {
                let _ = w.join();
            }
            output
        })
        .map_err(|source| GitError::Spawn {
            args: args.clone(),
            source,
        })?;
        if output.status.success() {
            Ok(Ok(output.stdout))
        } else {
            Ok(Err(GitError::Command {
                args,
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    /// git found by name would make every invocation a fork of the whole
    /// process (the module header): the path must be absolute.
    #[test]
    fn git_is_started_by_its_absolute_path() {
        let git = super::git_program();
        assert!(git.is_absolute(), "{}", git.display());
        assert_eq!(git.file_name().and_then(|n| n.to_str()), Some("git"));
    }
}
