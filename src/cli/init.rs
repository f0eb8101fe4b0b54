//! `assay init [REPO]`: a commented `pipeline.toml` for the repository at
//! hand — its source (name, branch, SWE-bench `repo` from the origin
//! remote), the environment its language needs (test command, report
//! format, key files, warm caches), a statements directory — so the first
//! `assay build` screens its merged pull requests.

use std::path::{Path, PathBuf};

use clap::Args;

use super::shared::Failure;
use crate::exit;

/// Write a commented pipeline.toml for a git repository.
///
/// Detects the language from the files at the repository's HEAD (go.mod:
/// Go; Cargo.toml: Rust; package.json: JavaScript/TypeScript; pyproject.toml, setup.py, setup.cfg, requirements
/// or test_*.py files: Python, pytest when it is configured, else unittest)
/// and writes `pipeline.toml` and empty `statements/` and `sessions/` beside it.
#[derive(Args, Debug)]
pub(crate) struct InitArgs {
    /// The repository (default: the current directory).
    #[arg(default_value = ".")]
    repo: PathBuf,
}

/// A language's environment, as the pipeline file says it.
struct Lang {
    name: &'static str,
    setup: &'static [&'static str],
    key_files: &'static [&'static str],
    warm: Option<&'static str>,
    test_command: &'static str,
    /// `[env] touched_command`, written commented out: the test command
    /// over the touched test files, for `[screen] scope = "touched-files"`.
    touched: Option<&'static str>,
    report: &'static str,
    note: &'static str,
    /// `[env] preset`: the recipe that stands for the rest.
    preset: Option<&'static str>,
}

const GO: Lang = Lang {
    name: "Go",
    setup: &[
        "go version > go-version.txt",
        "GOPATH=$HOME/go GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local go test -run '^$' unicode/utf8 > /dev/null",
    ],
    key_files: &["go.mod", "go.sum"],
    warm: Some("GOCACHE = \"go-cache\""),
    test_command: "env GOPATH=$HOME/go GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local go test -json ./...",
    touched: Some(
        "env GOPATH=$HOME/go GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local go test -json {packages}",
    ),
    report: "go-test-json",
    note: "Runs are offline: vendor third-party modules, or download them in the setup (`assay docs languages`, Go).",
    preset: None,
};

const RUST: Lang = Lang {
    name: "Rust",
    setup: &[],
    key_files: &["Cargo.toml", "Cargo.lock"],
    warm: Some("CARGO_TARGET_DIR = \"target\""),
    test_command: "cargo test --offline --no-fail-fast",
    // libtest names no test's file: no scope of touched files.
    touched: None,
    report: "libtest",
    note: "The cargo preset vendors the dependencies at setup (the only step with the network), prebuilds them into a warm target directory each run copies, and runs `cargo test --offline --no-fail-fast` (`assay docs languages`, Rust). A workspace: add its members' Cargo.toml to key_files.",
    preset: Some("cargo"),
};

const NODE: Lang = Lang {
    name: "JavaScript/TypeScript",
    setup: &[],
    key_files: crate::pipeline::preset::NODE_KEY_FILES,
    warm: None,
    test_command: crate::pipeline::preset::NODE_TEST_COMMAND,
    // The runners' files are paths, but their selection is the runner's own.
    touched: None,
    report: "jest-json",
    note: "The node preset installs the dependencies with the lockfile's own manager at setup (the only step with the network), picks the runner from package.json (vitest, jest, mocha, else `node --test`) and runs it offline with a reporter assay reads, node_modules read-only from the environment (`assay docs languages`, JavaScript).",
    preset: Some("node"),
};

/// Python with either runner: the setup, key files and note they share.
const fn python(
    name: &'static str,
    test_command: &'static str,
    touched: &'static str,
    report: &'static str,
) -> Lang {
    Lang {
        name,
        setup: &["python3 --version > python-version.txt"],
        key_files: &[
            "requirements.txt",
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
        ],
        warm: None,
        test_command,
        touched: Some(touched),
        report,
        note: "Third-party packages: install them in the setup into a venv in $ASSAY_ENV and call its python (`assay docs languages`, Python).",
        preset: None,
    }
}

const PYTEST: Lang = python(
    "Python (pytest)",
    "python3 -m pytest -rA -p no:cacheprovider",
    "python3 -m pytest -rA -p no:cacheprovider {files}",
    "pytest",
);
const UNITTEST: Lang = python(
    "Python (unittest)",
    "python3 -m unittest -v",
    "python3 -m unittest -v {files}",
    "unittest",
);

pub(crate) fn run(global: &super::shared::Global, args: InitArgs) -> Result<i32, Failure> {
    let target = &global.pipeline;
    if target.exists() {
        return Err(Failure::new(
            exit::USAGE,
            miette::miette!(
                help = "edit it, or name another file with --pipeline",
                "{} exists: init writes a new pipeline file",
                target.display()
            ),
        ));
    }
    let source = assay_git::Source::open(&args.repo).map_err(|e| {
        Failure::new(
            exit::CONFIG,
            miette::miette!(
                help = "run it in a git repository, or name one: assay init path/to/repo",
                "{}: not a git repository ({e})",
                args.repo.display()
            ),
        )
    })?;
    let base = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_owned);
    let repo_abs = std::path::absolute(source.path()).unwrap_or_else(|_| source.path().to_owned());
    let base_abs = std::path::absolute(&base).unwrap_or(base.clone());
    let path = relative(&repo_abs, &base_abs);
    let name = sanitize(
        &repo_abs
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repo".into()),
    );
    let branch = head_branch(source.path()).unwrap_or_else(|| "main".into());
    let has = |rel: &str| {
        source
            .read_file("HEAD", rel)
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let files = tracked(source.path());
    let lang = if has("go.mod").is_some() {
        Some(&GO)
    } else if has("Cargo.toml").is_some() {
        Some(&RUST)
    } else if has("package.json").is_some() {
        Some(&NODE)
    } else {
        let pytest = has("pytest.ini").is_some()
            || files.iter().any(|f| f.ends_with("conftest.py"))
            || has("pyproject.toml").is_some_and(|t| t.contains("[tool.pytest"))
            || has("setup.cfg").is_some_and(|t| t.contains("[tool:pytest]"));
        let python = [
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
        ]
        .iter()
        .any(|f| has(f).is_some())
            || files.iter().any(|f| {
                let leaf = f.rsplit('/').next().unwrap_or(f);
                leaf.ends_with(".py") && (leaf.starts_with("test_") || leaf.ends_with("_test.py"))
            });
        match (python, pytest) {
            (_, true) => Some(&PYTEST),
            (true, false) => Some(&UNITTEST),
            _ => None,
        }
    };
    let text = pipeline_text(&name, &path, &branch, lang);
    std::fs::write(target, &text).map_err(|e| {
        Failure::new(
            exit::CONFIG,
            miette::miette!("cannot write {}: {e}", target.display()),
        )
    })?;
    for dir in ["statements", "sessions"] {
        let dir = base.join(dir);
        std::fs::create_dir_all(&dir).map_err(|e| {
            Failure::new(
                exit::CONFIG,
                miette::miette!("cannot make {}: {e}", dir.display()),
            )
        })?;
    }
    match lang {
        Some(l) => println!(
            "wrote {} for {} ({}, branch {branch}): {} with {}",
            target.display(),
            path,
            l.name,
            l.report,
            l.test_command
        ),
        None => println!(
            "wrote {} for {path} (branch {branch}); no language recognised: fill in [env] test_command and report",
            target.display()
        ),
    }
    println!(
        "next: `assay plan` lists the merged pull requests; `assay build` screens them, and a task is released once `statements/<task id>.md` says what to fix; then a session file under `sessions/` (`assay docs sessions`) is graded on the next build"
    );
    Ok(exit::OK)
}

fn pipeline_text(name: &str, path: &str, branch: &str, lang: Option<&Lang>) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut t = format!(
        "# Written by `assay init`; `assay docs pipeline` documents every key.\n\
         # Paths are relative to this file.\n\n\
         cache = \"cache\"\nrelease = \"release\"\n\
         # `<task id>.md` per task (and `<task id>.spec.md` for the spec track):\n\
         # a task is held back until its statement is written.\n\
         statements = \"statements\"\n\
         # Agent session files to grade (`assay docs sessions`): drop one in and build.\n\
         sessions = \"sessions\"\n\n\
         [[source]]\nname = {}\npath = {}\nbranch = {}\n\
         # SWE-bench's `repo` of the tasks: the origin remote's owner/name when it has one.\n\
         # repo = \"owner/name\"\n\n",
        q(name),
        q(path),
        q(branch)
    );
    t.push_str("[env]\n");
    match lang {
        Some(l) if l.preset.is_some() => {
            t.push_str(&format!("# {}. {}\n", l.name, l.note));
            let warm = l
                .warm
                .map(|w| format!("# warm = {{ {w} }}\n"))
                .unwrap_or_default();
            t.push_str(&format!(
                "preset = {}\n# What it stands for; any of these written here wins:\n\
                 # key_files = [{}]\n{warm}# test_command = {}\n# report = {}\n",
                q(l.preset.unwrap_or_default()),
                l.key_files
                    .iter()
                    .map(|s| q(s))
                    .collect::<Vec<_>>()
                    .join(", "),
                q(l.test_command),
                q(l.report)
            ));
        }
        Some(l) => {
            t.push_str(&format!("# {}. {}\n", l.name, l.note));
            let setup: Vec<String> = l.setup.iter().map(|s| format!("  {},", q(s))).collect();
            t.push_str(&format!("setup = [\n{}\n]\n", setup.join("\n")));
            let keys: Vec<String> = l.key_files.iter().map(|s| q(s)).collect();
            t.push_str(&format!(
                "# A pull request changing one of these gets its own environment.\nkey_files = [{}]\n",
                keys.join(", ")
            ));
            if let Some(w) = l.warm {
                t.push_str(&format!(
                    "# The setup warms this cache; each run starts from its own copy.\nwarm = {{ {w} }}\n"
                ));
            }
            t.push_str(&format!(
                "test_command = {}\nreport = {}\n",
                q(l.test_command),
                q(l.report)
            ));
            if let Some(c) = l.touched {
                t.push_str(&format!(
                    "# SWE-bench's convention, fewer regressions caught (`assay docs stages`, \"Scope\"):\n\
                     # with [screen] scope = \"touched-files\", graded runs run only the test\n\
                     # files the test patch touches.\n# touched_command = {}\n",
                    q(c)
                ));
            }
        }
        None => t.push_str(&format!(
            "# No language recognised: the command that runs the tests at the tree's root,\n\
             # and its report format ({}; `assay docs languages`).\n\
             test_command = \"\"\nreport = \"junit\"\n",
            crate::pipeline::report_formats().join(", ")
        )),
    }
    t.push_str(
        "timeout = 600\n\n[screen]\n# Readings of each state (base, test patch, test + gold): flaky tests show.\nrepeats = 2\n\n\
         [grade]\n# Grade both arms: where they disagree, the verifier is the suspect.\narms = [\"exclude\", \"keep\"]\n",
    );
    t
}

/// `to` relative to `from` (both absolute), with `/` separators.
fn relative(to: &Path, from: &Path) -> String {
    let (to, from): (Vec<_>, Vec<_>) = (to.components().collect(), from.components().collect());
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// A source name: letters, digits and `-`.
fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let out = out.trim_matches('-').to_owned();
    if out.is_empty() { "repo".into() } else { out }
}

/// The branch HEAD is on.
fn head_branch(repo: &Path) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["symbolic-ref", "--short", "-q", "HEAD"])
        .current_dir(repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .ok()?;
    let b = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !b.is_empty()).then_some(b)
}

/// The files tracked at HEAD.
fn tracked(repo: &Path) -> Vec<String> {
    std::process::Command::new("git")
        .args(["ls-tree", "-r", "--name-only", "HEAD"])
        .current_dir(repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commented `touched_command` init writes loads once uncommented
    /// with the scope it needs, and is refused without it.
    #[test]
    fn the_touched_command_init_suggests_loads_with_its_scope() {
        for lang in [&GO, &PYTEST, &UNITTEST] {
            let dir = tempfile::tempdir().unwrap();
            let git = std::process::Command::new("git")
                .args(["init", "-q"])
                .current_dir(dir.path())
                .status()
                .unwrap();
            assert!(git.success());
            std::fs::create_dir(dir.path().join("statements")).unwrap();
            std::fs::create_dir(dir.path().join("sessions")).unwrap();
            let text = pipeline_text("x", ".", "main", Some(lang));
            let uncommented = text.replace("# touched_command = ", "touched_command = ");
            assert_ne!(uncommented, text, "{}", lang.name);
            let path = dir.path().join("pipeline.toml");
            std::fs::write(&path, &uncommented).unwrap();
            let e = crate::pipeline::Pipeline::load(&path).err();
            assert!(
                e.is_some_and(|e| format!("{e:?}").contains("touched_command runs only")),
                "{}: loads without the scope",
                lang.name
            );
            let scoped = uncommented.replace("[screen]\n", "[screen]\nscope = \"touched-files\"\n");
            std::fs::write(&path, &scoped).unwrap();
            if let Err(e) = crate::pipeline::Pipeline::load(&path) {
                panic!("{}: {e:?}\n{scoped}", lang.name);
            }
        }
        let rust = pipeline_text("x", ".", "main", Some(&RUST));
        assert!(!rust.contains("touched_command"), "{rust}");
    }

    #[test]
    fn paths_are_written_relative_to_the_pipeline_file() {
        assert_eq!(relative(Path::new("/a/b/repo"), Path::new("/a/b")), "repo");
        assert_eq!(relative(Path::new("/a/repo"), Path::new("/a/b")), "../repo");
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/b")), ".");
        assert_eq!(sanitize("My_Repo.git"), "my-repo-git");
    }
}
