//! A project directory in a temp dir and the real `assay` binary run in it:
//! write files and a pipeline, run a command, read records back from the
//! cache through `assay explain` and `assay show`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::{Build, Run};

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
        assay_testkit::echo_panics();
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

    /// A session file `sessions/ID.json` on `task` by agent `alpha`
    /// (`model-a`), its patch beside it in `sessions/ID.diff`.
    pub fn session(&self, id: &str, task: &str, patch: &str) {
        self.write(&format!("sessions/{id}.diff"), patch);
        self.write(
            &format!("sessions/{id}.json"),
            serde_json::json!({
                "task": task,
                "agent": "alpha",
                "model": "model-a",
                "patch_file": format!("{id}.diff"),
            })
            .to_string(),
        );
    }

    pub fn pipeline(self, toml: &str) -> Project {
        self.file("pipeline.toml", toml)
    }

    /// `assay ARGS` in the project directory, not yet run.
    pub fn command(&self, args: &[&str]) -> Command {
        // In a long test binary, each assay command is a phase.
        if super::progress::on() {
            super::progress::phase(&format!("assay {}", args.join(" ")));
        }
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .envs(ENV.get().into_iter().flatten().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        cmd
    }

    /// `assay ARGS` started in the project directory, its output piped.
    pub fn spawn_piped(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().unwrap())
    }

    /// `assay ARGS` with `vars` added to its environment.
    pub fn run_with(&self, args: &[&str], vars: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(args);
        cmd.envs(vars.iter().copied());
        Run::from(cmd.output().unwrap())
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
        self.show_json_in("pipeline.toml", digest)
    }

    /// `assay show -p PIPELINE DIGEST` (its cache): the record, parsed.
    pub fn show_json_in(&self, pipeline: &str, digest: &str) -> Value {
        let run = self.run(&["show", "-p", pipeline, digest]);
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

/// Variables every `assay` of this test process gets (`set_env`).
static ENV: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// Puts `vars` into the environment of every `assay` this test process
/// runs (a cluster's `SLURM_CONF`), once: without touching the test
/// process's own environment.
pub fn set_env(vars: Vec<(String, String)>) {
    let set = ENV.get_or_init(|| vars.clone());
    assert_eq!(set, &vars, "set_env is set once per test process");
}
