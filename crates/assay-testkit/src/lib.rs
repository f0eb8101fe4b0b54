//! Helpers shared by the workspace's tests and benches. Only ever a
//! dev-dependency, never published: nothing of the product may depend on it.
//!
//! [`git`] runs git hermetically, so that a repository a test builds is the
//! same on every machine, commit ids included: no user, system or
//! environment configuration reaches it (the environment is cleared but for
//! `PATH`), author and committer are fixed, and so are the dates, which the
//! caller chooses.

use std::path::Path;
use std::process::Command;

/// The author and committer of every commit a test makes.
pub const NAME: &str = "Ada";
pub const EMAIL: &str = "ada@example.com";

/// `git ARGS` in `dir`, hermetic, with author and committer dates at `time`
/// (seconds since the epoch, UTC). Returns stdout as printed; panics with
/// git's stderr when git fails.
pub fn git(dir: &Path, time: i64, args: &[&str]) -> String {
    let date = format!("@{time} +0000");
    let out = Command::new("git")
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_AUTHOR_NAME", NAME)
        .env("GIT_AUTHOR_EMAIL", EMAIL)
        .env("GIT_COMMITTER_NAME", NAME)
        .env("GIT_COMMITTER_EMAIL", EMAIL)
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .env("TZ", "UTC")
        .args(["-c", "commit.gpgsign=false"])
        .args(["-c", "core.autocrlf=false"])
        .args(["-c", "core.quotepath=off"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?} in {}: {e}", dir.display()));
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Busy loops pinned to CPU 0, each a session of its own (with the
/// kernel's autogroups, sessions share a CPU equally), killed when
/// dropped: other work of the machine that a run pinned there waits
/// behind. They write nothing. Needs `python3` on `PATH`.
pub struct Hogs(Vec<std::process::Child>);

impl Hogs {
    pub fn on_cpu0(n: usize) -> Hogs {
        let busy = "import os\nos.setsid()\nos.sched_setaffinity(0, {0})\nwhile True:\n    pass\n";
        Hogs(
            (0..n)
                .map(|_| {
                    Command::new("python3")
                        .args(["-c", busy])
                        .spawn()
                        .expect("python3 runs")
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// From now on, a panic in this test binary is also written straight to the
/// process's stderr as it happens, beside the `test … FAILED` line, as well
/// as in libtest's `failures:` section at the binary's end (which a CI
/// log's excerpt of a long run may leave out). The message is cut to its
/// first 4,000 characters; the hook before this one still runs. Called more
/// than once, it installs once.
pub fn echo_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            use std::io::Write as _;
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied())
                .unwrap_or("(not a string)");
            let cut: String = message.chars().take(4000).collect();
            let thread = std::thread::current();
            let place = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            // libtest captures `eprintln!`, not writes to the handle.
            let _ = writeln!(
                std::io::stderr(),
                "  PANIC in {} at {place}: {cut}",
                thread.name().unwrap_or("a thread")
            );
            before(info);
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing of this machine's configuration gets in: the commit id is the
    /// one every machine gets (a user config, a template or a signing key
    /// would change it).
    #[test]
    fn a_commit_has_the_same_id_on_every_machine() {
        let dir = std::env::temp_dir().join(format!("assay-testkit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        git(&dir, 0, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a.txt"), "a\n").expect("write");
        git(&dir, 0, &["add", "-A"]);
        git(&dir, 1_700_000_000, &["commit", "-q", "-m", "one"]);
        let id = git(&dir, 0, &["rev-parse", "HEAD"]);
        let author = git(
            &dir,
            0,
            &["log", "-1", "--format=%an <%ae> %ad", "--date=raw"],
        );
        std::fs::remove_dir_all(&dir).expect("rm");
        assert_eq!(author.trim(), "Ada <ada@example.com> 1700000000 +0000");
        assert_eq!(id.trim(), "196a4b37ee9d44f1c2689ee7c49e520a2b14c7de");
    }
}
