//! What a finished `assay` process left: its exit code and both streams
//! ([`Run`]), and for `build --json` its events and closing summary
//! ([`Build`]), with the assertions tests make on them.

use std::collections::BTreeMap;
use std::process::Output;

use serde_json::Value;

/// A finished `assay` process.
pub struct Run {
    /// The exit code; -1 when a signal ended it (`signal`).
    pub code: i32,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        use std::os::unix::process::ExitStatusExt;
        Run {
            code: o.status.code().unwrap_or(-1),
            signal: o.status.signal(),
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

    /// A build where every screened task found its environment broken:
    /// exit 8, saying so, with `what` (the command or message that broke).
    pub fn environment_broken(&self, what: &str) {
        assert_eq!(self.code, 8, "exit code\n--- stderr\n{}", self.stderr);
        for needle in ["every screened task found its environment broken", what] {
            assert!(
                self.stderr.contains(needle),
                "stderr lacks {needle:?}:\n{}",
                self.stderr
            );
        }
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
                // stderr first and stdout's end: a CI log keeps the
                // start of a long message.
                let lines: Vec<&str> = run.stdout.lines().collect();
                panic!(
                    "no summary line (exit {}, signal {:?})\n--- stderr\n{}\n--- stdout's last 40 lines\n{}",
                    run.code,
                    run.signal,
                    run.stderr,
                    lines[lines.len().saturating_sub(40)..].join("\n")
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
