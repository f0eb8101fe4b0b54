//! A small fluent builder for running the real `assay` binary on a project in
//! a temp dir (after just's `tests/test.rs`): write files, write a pipeline,
//! run a command, and read back the exit code, stderr and `--json` events.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

pub mod example;
pub mod fixture;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_assay");

/// A project directory: `pipeline.toml`, its input files and `cache/`.
pub struct Project {
    dir: tempfile::TempDir,
}

impl Default for Project {
    fn default() -> Self {
        Self::new()
    }
}

impl Project {
    pub fn new() -> Project {
        Project {
            dir: tempfile::Builder::new()
                .prefix("assay-test-")
                .tempdir()
                .unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn cache(&self) -> PathBuf {
        self.path().join("cache")
    }

    /// Writes (or overwrites) a file relative to the project root.
    pub fn file(self, rel: &str, contents: &str) -> Project {
        self.write(rel, contents);
        self
    }

    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let path = self.path().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, contents).unwrap();
    }

    pub fn pipeline(self, toml: &str) -> Project {
        self.file("pipeline.toml", toml)
    }

    /// `assay ARGS` in the project directory, not yet run.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().unwrap())
    }

    /// The output record of node `name` (`explain --json`, then `show`).
    pub fn output_record(&self, name: &str) -> Value {
        let explained = self.run(&["explain", name, "--json"]).code(0);
        let explained: Value = serde_json::from_str(&explained.stdout).unwrap();
        let output = explained["output"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} has no output: {explained}"));
        self.shown(output)
    }

    /// A record in the cache, decoded by `assay show DIGEST`.
    pub fn shown(&self, digest: &str) -> Value {
        let shown = self.run(&["show", digest]).code(0);
        serde_json::from_str(&shown.stdout)
            .unwrap_or_else(|e| panic!("show {digest}: {e}\n{}", shown.stdout))
    }

    /// The bytes of blob `digest` as the cache stores them.
    pub fn blob(&self, digest: &str) -> Vec<u8> {
        let path = self
            .cache()
            .join("blobs")
            .join(&digest[..2])
            .join(&digest[2..]);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// `assay show DIGEST`: the record it prints, parsed.
    pub fn show_json(&self, digest: &str) -> Value {
        let run = self.run(&["show", digest]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let text = &run.stdout;
        let start = text
            .find('{')
            .unwrap_or_else(|| panic!("no record in {text}"));
        let end = text.rfind('}').unwrap();
        serde_json::from_str(&text[start..=end]).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// `assay build --json ARGS`, parsed.
    pub fn build_json(&self, args: &[&str]) -> Build {
        let mut all = vec!["build", "--json"];
        all.extend_from_slice(args);
        Build::from(self.run(&all))
    }
}

/// A finished `assay` process.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Asserts the exit code, showing both streams when it differs.
    pub fn code(self, expected: i32) -> Run {
        assert_eq!(
            self.code, expected,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    pub fn stderr_has(self, needle: &str) -> Run {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.stderr
        );
        self
    }

    pub fn stdout_has(self, needle: &str) -> Run {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}:\n{}",
            self.stdout
        );
        self
    }

    /// Exit code not 101 and no panic message: whatever went wrong was handled.
    pub fn no_panic(self) -> Run {
        assert_ne!(self.code, 101, "internal error:\n{}", self.stderr);
        assert!(
            !self.stderr.contains("panicked"),
            "panicked:\n{}",
            self.stderr
        );
        self
    }
}

/// Per-kind counts from the summary line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub executed: u64,
    pub reused: u64,
    pub failed: u64,
    pub skipped: u64,
}

impl Counts {
    fn from_json(v: &Value) -> Counts {
        let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no `{k}` in {v}"));
        Counts {
            executed: n("executed"),
            reused: n("reused"),
            failed: n("failed"),
            skipped: n("skipped"),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub total: Counts,
    pub by_kind: BTreeMap<String, Counts>,
}

/// A `build --json` run: its events in order and the closing summary.
pub struct Build {
    pub run: Run,
    pub events: Vec<Value>,
    pub summary: Summary,
}

impl From<Run> for Build {
    fn from(run: Run) -> Build {
        let events = parse_events(&run.stdout);
        let summary = events
            .last()
            .filter(|e| e["event"] == "summary")
            .map(|s| Summary {
                total: Counts::from_json(s),
                by_kind: s["by_kind"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), Counts::from_json(v)))
                    .collect(),
            })
            .unwrap_or_else(|| {
                panic!(
                    "no summary line (exit {})\n--- stdout\n{}\n--- stderr\n{}",
                    run.code, run.stdout, run.stderr
                )
            });
        Build {
            run,
            events,
            summary,
        }
    }
}

impl Build {
    pub fn code(self, expected: i32) -> Build {
        Build {
            run: self.run.code(expected),
            ..self
        }
    }

    pub fn step(&self) -> Counts {
        self.summary
            .by_kind
            .get("step")
            .cloned()
            .unwrap_or_default()
    }

    /// Names of the nodes with an event of this type (`node_finished`, …), sorted.
    pub fn names(&self, event: &str) -> Vec<String> {
        names(&self.events, event)
    }
}

/// A JSON array of strings.
pub fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// Every complete JSON line; a line cut off by a kill is ignored.
pub fn parse_events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub fn names(events: &[Value], event: &str) -> Vec<String> {
    let mut v: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == event)
        .filter_map(|e| e["name"].as_str().map(str::to_owned))
        .collect();
    v.sort();
    v
}

/// Sorted `step:NAME`s, for comparing with [`Build::names`].
pub fn steps(names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|n| format!("step:{n}")).collect();
    v.sort();
    v
}

/// A string no other test (or test process) uses: for paths, markers and
/// setups that must be a test's own.
pub fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{tag}-{}-{nanos}", std::process::id())
}

/// A tiny seeded xorshift64*: reproducible randomness without a crate.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0), near enough for tests.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `ASSAY_TEST_SEED` if set, else the clock; printed so a failure can be replayed.
pub fn seed() -> u64 {
    let seed = std::env::var("ASSAY_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("seed {seed} (replay with ASSAY_TEST_SEED={seed})");
    seed
}

/// A deterministic git repository of merged pull requests, built under a
/// project (the same shape as `tests/tasks.rs` builds).
pub struct Repo {
    pub dir: PathBuf,
    tick: u64,
}

/// `git` with no user or system config and fixed identities and dates.
pub fn git_in(dir: &Path, tick: u64, args: &[&str]) -> String {
    let t = 1_767_607_200 + tick * 3600;
    let date = format!("{t} +0000");
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.autocrlf=false",
            "-c",
            "merge.ff=true",
        ])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Octo Cat")
        .env("GIT_AUTHOR_EMAIL", "octo@example.com")
        .env("GIT_COMMITTER_NAME", "Octo Cat")
        .env("GIT_COMMITTER_EMAIL", "octo@example.com")
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
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
        let out = Command::new("git")
            .args(["clone", "-q"])
            .arg(&self.dir)
            .arg(&dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
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

/// RFC 4180: fields separated by commas, optionally quoted (`""` inside a
/// quoted field is one quote; quoted fields may hold commas, CR and LF),
/// records ended by CRLF or LF.
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                assert!(
                    field.is_empty(),
                    "a quote inside an unquoted field: {field:?}"
                );
                quoted = true;
            }
            ',' => row.push(std::mem::take(&mut field)),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                any = false;
            }
            c => field.push(c),
        }
    }
    assert!(!quoted, "unterminated quoted field");
    if any {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// A CSV with a header row as maps from column name to value.
pub fn csv_records(text: &str) -> Vec<BTreeMap<String, String>> {
    let rows = parse_csv(text);
    let Some((header, body)) = rows.split_first() else {
        return Vec::new();
    };
    body.iter()
        .map(|r| {
            assert_eq!(r.len(), header.len(), "row width: {r:?}");
            header.iter().cloned().zip(r.iter().cloned()).collect()
        })
        .collect()
}

/// Pids of the live processes whose initial environment holds `var=value`.
/// Every descendant of a process inherits its environment, so this finds a
/// whole process tree on the host whatever pid namespace it ran in.
pub fn processes_with_env(var: &str, value: &str) -> Vec<u32> {
    let needle = format!("{var}={value}");
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(environ) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        let marked = environ.split(|b| *b == 0).any(|kv| kv == needle.as_bytes());
        if marked && process_alive(pid) {
            pids.push(pid);
        }
    }
    pids
}

/// A zombie is dead: only its parent has not reaped it yet.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => false,
    }
}

/// Waits (a bounded moment: SIGKILL is asynchronous) for every process
/// marked with `var=value` to be gone; kills and returns the survivors.
pub fn survivors(var: &str, value: &str) -> Vec<u32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let alive = processes_with_env(var, value);
        if alive.is_empty() || std::time::Instant::now() > deadline {
            for p in &alive {
                let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
            }
            return alive;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
