//! The sandbox around every process that runs task or graded code: a
//! bubblewrap (`bwrap`) command line built from a [`Sandbox`] spec.
//!
//! Inside, the command sees:
//!
//! - `/assay/tree`: the staged tree (read-write, its working directory), a
//!   fresh copy made for this run only;
//! - `/assay/env`: the environment directory, read-only at test time and
//!   read-write only for the environment's own setup;
//! - `/tmp` and `/assay/home` (`HOME`): private, size-limited tmpfs;
//! - the system (`/usr`, `/etc`, the toolchain directories the spec names)
//!   read-only; its own `/proc` (a new pid namespace: no host process is
//!   visible) and a minimal `/dev`;
//! - `/assay/guard` ([`GUARD`]): assay's own read-only files for the run
//!   (Python's import guard), when the spec has them;
//! - nothing else: not the cache, its index, blobs or object store, not the
//!   source repositories, not the user's home.
//!
//! **Protected files.** The tree is writable, but the files the spec names
//! in [`Sandbox::protect`] (a graded tree's hidden tests) are not: each is
//! bound read-only onto itself, and each directory above it, up to the tree,
//! is bound onto itself. A mount point cannot be renamed, unlinked or
//! replaced by a rename (`EBUSY`), and a read-only one cannot be written,
//! truncated or chmod-ed (`EROFS`); the directories stay writable, so the
//! tests still write beside their files (`__pycache__`, temporary files).
//! The run has no capability to unmount them (and, nested as root, the inner
//! user namespace sees them as locked mounts of its parent). Paths that are
//! missing, or that pass through or end in a symlink or anything but a
//! regular file, are left out: nothing is ever followed.
//!
//! New user, pid, ipc, uts and cgroup namespaces always; a new network
//! namespace (loopback only, nothing routed) unless the spec allows the
//! network (environment setup only).
//!
//! **The uid inside.** Run as an ordinary user, bwrap maps that user to uid
//! 1000 inside a new user namespace. Run as root, mapping root into the
//! namespace would leave the run the owner of every root-owned file it can
//! see, and `RLIMIT_NPROC` does not apply to root. So as root the sandbox
//! nests: an outer, privileged bwrap builds the mounts and namespaces;
//! `setpriv` drops to an unprivileged host uid from [`RUN_UID_BASE`] with
//! every capability and the bounding set cleared and `no_new_privs`; an inner
//! bwrap then enters a new user namespace as uid 1000 and forbids further
//! user namespaces. The tree is chowned to that uid before the run.
//!
//! **Nothing survives.** Both bwraps use `--die-with-parent`, and the pid
//! namespace's init takes every process of the run with it when the command
//! ends or assay dies, even by `kill -9`: a daemon that called `setsid` is
//! still in the namespace.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where a sandboxed run keeps its tree.
pub const TREE: &str = "/assay/tree";
/// Where a sandboxed run sees its environment directory (`$ASSAY_ENV`).
pub const ENV: &str = "/assay/env";
/// The run's private `HOME`.
pub const HOME: &str = "/assay/home";
/// Where a run sees its own copies of the environment's warm caches
/// (`/assay/warm/<VARIABLE>`, binds of the caller's).
pub const WARM: &str = "/assay/warm";
/// Where [`Sandbox::guard`] is bound read-only.
pub const GUARD: &str = "/assay/guard";

/// First host uid a root-run sandbox drops to; runs take uids from
/// `RUN_UID_BASE .. RUN_UID_BASE + RUN_UID_COUNT` in turn, so that
/// concurrent runs do not share a per-user process count.
pub const RUN_UID_BASE: u32 = 3_700_000;
const RUN_UID_COUNT: u32 = 4096;

/// How a command is confined. See the module header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Host directory bound read-write at [`TREE`]; the command's working
    /// directory. `None` for environment setup, which works in [`ENV`].
    pub tree: Option<PathBuf>,
    /// Host environment directory bound at [`ENV`] (or `env_at`).
    pub env_dir: Option<PathBuf>,
    /// Where the environment is bound when not at [`ENV`] (an agent's own
    /// tools, set up and used at `/assay/agent` beside a task's).
    pub env_at: Option<PathBuf>,
    /// Only environment setup writes its environment.
    pub env_writable: bool,
    /// Only environment setup may reach the network (to install packages).
    pub network: bool,
    /// Host paths bound read-only at the same place (toolchains outside
    /// `/usr`, e.g. a pyenv or rustup root).
    pub read_only: Vec<PathBuf>,
    /// Size of the private `/tmp`, in bytes.
    pub tmp_bytes: u64,
    /// Size of the private `HOME`, in bytes.
    pub home_bytes: u64,
    /// Files of the tree (relative paths) the run may read but not change:
    /// not written, replaced, renamed or unlinked, nor the directories above
    /// them renamed or removed. See the module header.
    pub protect: Vec<PathBuf>,
    /// A host directory bound read-only at [`GUARD`].
    pub guard: Option<PathBuf>,
    /// More host paths, each bound at its place under `/assay` (an agent's
    /// prompt, its own environment, its transcript's directory, the socket
    /// of its egress proxy). A writable one is the run's, chowned to it.
    pub binds: Vec<Bind>,
}

/// A host path bound into the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    pub host: PathBuf,
    /// Where the run sees it: a path under `/assay`.
    pub at: PathBuf,
    pub writable: bool,
}

/// The program that confines runs, found once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bwrap {
    path: PathBuf,
    setpriv: Option<PathBuf>,
}

/// Why runs cannot be sandboxed here.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "bubblewrap (`bwrap`) is not installed; graded code must not run unconfined. Install it (`apt-get install bubblewrap`), or set `sandbox = \"none\"` in [env] to grade unsandboxed (the release will say so)"
    )]
    NoBwrap,
    #[error(
        "running as root, the sandbox drops to an unprivileged uid with `setpriv` (util-linux), which is not installed"
    )]
    NoSetpriv,
    #[error("bubblewrap cannot create a sandbox here: {0}")]
    Broken(String),
}

fn find_program(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

static NEXT_UID: AtomicU32 = AtomicU32::new(0);

impl Bwrap {
    /// Finds `bwrap` (and, as root, `setpriv`) and checks that a sandbox can
    /// really be made, so that a broken setup fails the build once, clearly,
    /// instead of every run.
    ///
    /// `ASSAY_BWRAP` names another bubblewrap binary (a distribution that
    /// installs it elsewhere; tests use it to show the missing-bwrap error).
    pub fn detect() -> Result<Bwrap, SandboxError> {
        let path = match std::env::var_os("ASSAY_BWRAP") {
            Some(p) => Some(PathBuf::from(p)).filter(|p| p.is_file()),
            None => find_program("bwrap"),
        }
        .ok_or(SandboxError::NoBwrap)?;
        let setpriv = if is_root() {
            Some(find_program("setpriv").ok_or(SandboxError::NoSetpriv)?)
        } else {
            None
        };
        let bwrap = Bwrap { path, setpriv };
        let probe = Sandbox {
            tree: None,
            env_dir: None,
            env_writable: false,
            network: false,
            read_only: Vec::new(),
            tmp_bytes: 1 << 20,
            home_bytes: 1 << 20,
            protect: Vec::new(),
            guard: None,
            binds: Vec::new(),
            env_at: None,
        };
        let uid = bwrap.next_uid().unwrap_or(0);
        let (program, args) = bwrap.command_line(&probe, uid, "true");
        let out = std::process::Command::new(program)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| SandboxError::Broken(e.to_string()))?;
        if !out.status.success() {
            return Err(SandboxError::Broken(
                String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            ));
        }
        Ok(bwrap)
    }

    /// The host uid the next run drops to (root only; `None` otherwise).
    pub fn next_uid(&self) -> Option<u32> {
        self.setpriv.as_ref()?;
        let n = NEXT_UID.fetch_add(1, Ordering::Relaxed);
        // Mix in the pid so two assay processes rarely pick the same uid.
        Some(RUN_UID_BASE + (std::process::id().wrapping_mul(97).wrapping_add(n)) % RUN_UID_COUNT)
    }

    /// The program and arguments that run `/bin/sh -c command` in `sandbox`
    /// as host uid `uid` (ignored unless root).
    pub fn command_line(
        &self,
        sandbox: &Sandbox,
        uid: u32,
        command: &str,
    ) -> (PathBuf, Vec<OsString>) {
        let mut a = Args::default();
        let env_at = sandbox.env_at.as_deref().unwrap_or(Path::new(ENV));
        let cwd = if sandbox.tree.is_some() {
            TREE
        } else {
            env_at.to_str().unwrap_or(ENV)
        };
        a.flags(&[
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--hostname",
            "assay",
        ]);
        if !sandbox.network {
            a.flag("--unshare-net");
        }
        if self.setpriv.is_none() {
            a.flags(USER_NAMESPACE);
        } else {
            a.flags(&["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]);
        }
        // The system, read-only. Merged-/usr systems have /bin etc. as links.
        a.ro_bind(Path::new("/usr"), Path::new("/usr"));
        for top in ["bin", "sbin", "lib", "lib32", "lib64", "libx32"] {
            let host = Path::new("/").join(top);
            match std::fs::read_link(&host) {
                Ok(target) => {
                    a.flag("--symlink");
                    a.path(&target);
                    a.path(&host);
                }
                Err(_) if host.is_dir() => a.ro_bind(&host, &host),
                Err(_) => {}
            }
        }
        a.ro_bind(Path::new("/etc"), Path::new("/etc"));
        a.flags(&["--proc", "/proc", "--dev", "/dev"]);
        a.flags(&["--perms", "1777", "--size"]);
        a.flag(&sandbox.tmp_bytes.to_string());
        a.flags(&["--tmpfs", "/tmp", "--perms", "0755", "--dir", "/assay"]);
        a.flags(&["--perms", "0777", "--size"]);
        a.flag(&sandbox.home_bytes.to_string());
        a.flags(&["--tmpfs", HOME]);
        let mut made = vec![PathBuf::from("/assay")];
        for p in &sandbox.read_only {
            if p.exists() && !p.starts_with("/usr") && !p.starts_with("/etc") {
                a.parents(p, &mut made);
                a.ro_bind(p, p);
            }
        }
        if let Some(env) = &sandbox.env_dir {
            if sandbox.env_writable {
                a.bind(env, env_at);
            } else {
                a.ro_bind(env, env_at);
            }
        } else {
            a.flags(&["--perms", "0755", "--dir", ENV]);
        }
        if let Some(guard) = &sandbox.guard {
            a.ro_bind(guard, Path::new(GUARD));
        }
        for b in &sandbox.binds {
            a.parents(&b.at, &mut made);
            if b.writable {
                a.bind(&b.host, &b.at);
            } else {
                a.ro_bind(&b.host, &b.at);
            }
        }
        if let Some(tree) = &sandbox.tree {
            a.bind(tree, Path::new(TREE));
            let (dirs, files) = protected(tree, &sandbox.protect);
            // Parents first (the set is ordered by component), files last:
            // a later bind of a directory would cover a file's.
            for dir in &dirs {
                a.bind(&tree.join(dir), &Path::new(TREE).join(dir));
            }
            for file in &files {
                a.ro_bind(&tree.join(file), &Path::new(TREE).join(file));
            }
        }
        a.flags(&["--chdir", cwd, "--"]);
        if let Some(setpriv) = &self.setpriv {
            a.path(setpriv);
            a.flag("--reuid");
            a.flag(&uid.to_string());
            a.flag("--regid");
            a.flag(&uid.to_string());
            a.flags(&[
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                "--",
            ]);
            a.path(&self.path);
            a.flags(USER_NAMESPACE);
            a.flags(&[
                "--die-with-parent",
                "--bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--chdir",
                cwd,
                "--",
            ]);
        }
        a.flags(&["/bin/sh", "-c", command]);
        (self.path.clone(), a.0)
    }
}

/// The run's own user namespace: uid and gid 1000 inside, and no further
/// user namespaces (which would let it mount its way around the binds).
const USER_NAMESPACE: &[&str] = &[
    "--unshare-user",
    "--uid",
    "1000",
    "--gid",
    "1000",
    "--disable-userns",
];

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    /// The parents of `p` not `made` yet, as 0755 directories: those bwrap
    /// would create as 0700 would hide `p` from the run's unprivileged uid.
    fn parents(&mut self, p: &Path, made: &mut Vec<PathBuf>) {
        let mut parents: Vec<&Path> = p.ancestors().skip(1).collect();
        parents.reverse();
        for parent in parents {
            if parent == Path::new("/") || made.iter().any(|m| m == parent) {
                continue;
            }
            self.flags(&["--perms", "0755", "--dir"]);
            self.path(parent);
            made.push(parent.to_owned());
        }
    }

    fn flag(&mut self, s: &str) {
        self.0.push(s.into());
    }
    fn flags(&mut self, s: &[&str]) {
        self.0.extend(s.iter().map(OsString::from));
    }
    fn path(&mut self, p: &Path) {
        self.0.push(p.as_os_str().to_owned());
    }
    fn ro_bind(&mut self, host: &Path, inside: &Path) {
        self.flag("--ro-bind");
        self.path(host);
        self.path(inside);
    }
    fn bind(&mut self, host: &Path, inside: &Path) {
        self.flag("--bind");
        self.path(host);
        self.path(inside);
    }
}

/// The directories (each below `tree`, ordered parents first) and the files
/// to bind so that `protect` cannot be changed: every path of `protect` that
/// is a plain relative path reaching a regular file through directories
/// only, with no symlink anywhere (checked on the host before the run, when
/// nothing of the run exists yet to race it). Both executors protect
/// what this finds (the docker executor in its upload).
pub fn protected(
    tree: &Path,
    protect: &[PathBuf],
) -> (
    std::collections::BTreeSet<PathBuf>,
    std::collections::BTreeSet<PathBuf>,
) {
    let mut dirs = std::collections::BTreeSet::new();
    let mut files = std::collections::BTreeSet::new();
    'paths: for rel in protect {
        let plain = rel.components().next().is_some()
            && rel
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain {
            continue;
        }
        let mut above = Vec::new();
        let mut here = PathBuf::new();
        let mut components = rel.components().peekable();
        while let Some(component) = components.next() {
            here.push(component);
            let Ok(meta) = std::fs::symlink_metadata(tree.join(&here)) else {
                continue 'paths;
            };
            let last = components.peek().is_none();
            if (last && !meta.is_file()) || (!last && !meta.is_dir()) {
                continue 'paths;
            }
            if !last {
                above.push(here.clone());
            }
        }
        dirs.extend(above);
        files.insert(here);
    }
    (dirs, files)
}

/// Hands `dir` and everything below it to host uid `uid` (never following a
/// link), so the unprivileged run can write its own tree.
pub fn chown_tree(dir: &Path, uid: u32) -> io::Result<()> {
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid))?;
    if !std::fs::symlink_metadata(dir)?.is_dir() {
        // A bound file (a socket): itself only.
        return Ok(());
    }
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let path = entry.path();
            std::os::unix::fs::lchown(&path, Some(uid), Some(uid))?;
            if entry.file_type()?.is_dir() {
                stack.push(path);
            }
        }
    }
    Ok(())
}

/// The directories of the toolchain managers whose proxies are on `path`,
/// with the variable that tells a proxy where its manager keeps the real
/// tools: rustup's `RUSTUP_HOME` (the host's, else `~/.rustup`) when a
/// `rustup` is on the path; pyenv's `PYENV_ROOT` (the host's, else the
/// parent of its `shims`) when pyenv's shims are. A run has a `HOME` of its
/// own, so without the variable a proxy looks in the wrong place (rustup:
/// "could not choose a version of cargo to run"). `var` reads the host's
/// environment. A run gets each variable and the directory, read-only.
pub fn toolchain_homes(
    path: &str,
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Vec<(&'static str, PathBuf)> {
    let entries: Vec<&Path> = path
        .split(':')
        .filter(|e| e.starts_with('/'))
        .map(Path::new)
        .collect();
    let home = |name: &str, default: Option<PathBuf>| {
        var(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or(default)
            .filter(|p| p.is_dir())
    };
    let mut out = Vec::new();
    if entries.iter().any(|e| e.join("rustup").is_file()) {
        let default = var("HOME").map(|h| PathBuf::from(h).join(".rustup"));
        if let Some(dir) = home("RUSTUP_HOME", default) {
            out.push(("RUSTUP_HOME", dir));
        }
    }
    let pyenv = entries.iter().find_map(|e| {
        let root = e.parent().filter(|_| e.ends_with("shims"))?;
        (root.join("bin/pyenv").exists() || root.join("libexec/pyenv").exists())
            .then(|| root.to_owned())
    });
    if let Some(root) = pyenv
        && let Some(dir) = home("PYENV_ROOT", Some(root))
    {
        out.push(("PYENV_ROOT", dir));
    }
    out
}

/// The read-only toolchain roots a run needs to find the programs on `path`
/// (a `PATH` value): for each entry outside the system directories, the entry
/// itself, or its parent when it is a `bin`/`shims` directory (pyenv and go
/// keep their libraries beside it). A cargo home's `bin` (it holds `cargo`
/// or `rustup`) is bound alone: the rest of a cargo home is the host's
/// registry cache, config and `credentials.toml` (a crates.io token), which
/// no run needs (its cargo has a home of its own) and graded code must not
/// read.
pub fn toolchain_roots(path: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for entry in path.split(':').filter(|e| e.starts_with('/')) {
        let p = Path::new(entry);
        if p.starts_with("/usr") || p.starts_with("/bin") || p.starts_with("/sbin") || !p.is_dir() {
            continue;
        }
        let cargo_home_bin = p.join("cargo").is_file() || p.join("rustup").is_file();
        let root = match p.file_name().and_then(|n| n.to_str()) {
            Some("bin") if cargo_home_bin => p,
            Some("bin" | "shims") => p.parent().unwrap_or(p),
            _ => p,
        };
        if root != Path::new("/") && !out.iter().any(|o| root.starts_with(o)) {
            out.retain(|o| !o.starts_with(root));
            out.push(root.to_owned());
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
    }

    #[test]
    fn rustup_and_pyenv_proxies_bring_their_homes() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        touch(&home.join(".cargo/bin/rustup"));
        std::fs::create_dir_all(home.join(".rustup/toolchains")).unwrap();
        touch(&home.join(".pyenv/bin/pyenv"));
        std::fs::create_dir_all(home.join(".pyenv/shims")).unwrap();
        let path = format!(
            "{}:{}:/usr/bin",
            home.join(".cargo/bin").display(),
            home.join(".pyenv/shims").display()
        );
        let host = |h: &Path| {
            let h = h.to_owned();
            move |v: &str| (v == "HOME").then(|| OsString::from(&h))
        };
        assert_eq!(
            toolchain_homes(&path, host(&home)),
            [
                ("RUSTUP_HOME", home.join(".rustup")),
                ("PYENV_ROOT", home.join(".pyenv"))
            ]
        );
        // The host's own RUSTUP_HOME wins; a home that does not exist is
        // not bound.
        let elsewhere = d.path().join("rustup");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let var = |v: &str| match v {
            "RUSTUP_HOME" => Some(OsString::from(&elsewhere)),
            _ => None,
        };
        assert_eq!(
            toolchain_homes(&path, var),
            [
                ("RUSTUP_HOME", elsewhere.clone()),
                ("PYENV_ROOT", home.join(".pyenv"))
            ]
        );
        assert_eq!(
            toolchain_homes(&path, host(&d.path().join("none"))).len(),
            1
        );
        // No proxy on the path: nothing.
        assert!(toolchain_homes("/usr/bin:/bin", host(&home)).is_empty());
    }

    /// A cargo home's `bin` is bound alone (not its credentials); pyenv's
    /// and go's roots whole.
    #[test]
    fn a_cargo_home_lends_its_bin_alone() {
        let d = tempfile::tempdir().unwrap();
        let cargo = d.path().join(".cargo");
        touch(&cargo.join("bin/cargo"));
        touch(&cargo.join("credentials.toml"));
        let go = d.path().join("go");
        touch(&go.join("bin/go"));
        let path = format!(
            "{}:{}:/usr/bin",
            cargo.join("bin").display(),
            go.join("bin").display()
        );
        let mut want = vec![cargo.join("bin"), go.clone()];
        want.sort();
        assert_eq!(toolchain_roots(&path), want);
    }
}
