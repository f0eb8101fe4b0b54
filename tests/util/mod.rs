//! A small fluent builder for running the real `assay` binary on a project in
//! a temp dir (after just's `tests/test.rs`): write files, write a pipeline,
//! run a command, and read back the exit code, stderr and `--json` events.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

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
