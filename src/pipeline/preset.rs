//! `[env] preset`: a language's environment recipe, written once here so a
//! maintainer does not rediscover it. A preset's setup runs before the
//! table's own commands; the key files, test command, report and warm
//! caches it gives are used where the table leaves them out (key files and
//! warm caches are merged). docs/languages.md explains each recipe.

use toml::Spanned;

use super::file::{EnvConfig, PipelineFile};
use super::{ConfigError, Origin};

/// One recipe.
struct Preset {
    name: &'static str,
    /// The dependency install, run first; left out with `[env]
    /// preset_install = false` (empty: the recipe cannot do without it).
    install: &'static [&'static str],
    setup: &'static [&'static str],
    key_files: &'static [&'static str],
    test_command: &'static str,
    report: &'static str,
    /// Where the test command writes its report, relative to the tree.
    report_file: Option<&'static str>,
    warm: &'static [(&'static str, &'static str)],
}

/// Rust with cargo. Setup (the only step with the network): stub targets
/// for the manifests (setup sees only the key files), vendor every
/// dependency into the environment with the source replacement cargo
/// prints for it, drop the registry it downloaded, then build the
/// dependencies and dev-dependencies once into the warm target directory
/// (best effort: a stub crate may not build; runs then compile from cold).
/// Each run compiles offline against the vendored sources, in its own copy
/// of the warm target directory, without incremental state, every test
/// target even when one fails (`--no-fail-fast`), with the environment's
/// lock file where the tree has none (so the run resolves what setup
/// built).
const CARGO: Preset = Preset {
    name: "cargo",
    install: &[],
    setup: &[
        "for m in $(find . -name Cargo.toml -not -path './vendor/*' -not -path './target/*' -not -path './.home/*'); do d=$(dirname \"$m\"); [ -e \"$d/src/lib.rs\" ] || [ -e \"$d/src/main.rs\" ] || { mkdir -p \"$d/src\" && : > \"$d/src/lib.rs\"; }; done",
        "cargo vendor --versioned-dirs \"$ASSAY_ENV/vendor\" > cargo-config.toml",
        "mkdir -p vendor && rm -rf \"$HOME/.cargo/registry\" \"$HOME/.cargo/git\"",
        "CARGO_INCREMENTAL=0 cargo test --no-run --offline --config \"$ASSAY_ENV/cargo-config.toml\" || echo 'assay: the prebuild of the dependencies failed; runs compile them from cold'",
        "chmod -R a+rX .",
    ],
    key_files: &["Cargo.toml", "Cargo.lock"],
    test_command: "[ -e Cargo.lock ] || cp \"$ASSAY_ENV/Cargo.lock\" . ; CARGO_INCREMENTAL=0 cargo test --offline --no-fail-fast --config \"$ASSAY_ENV/cargo-config.toml\"",
    report: "libtest",
    report_file: None,
    warm: &[("CARGO_TARGET_DIR", "target")],
};

/// JavaScript and TypeScript with node. Setup (the only step with the
/// network) installs the dependencies with the lockfile's own manager,
/// frozen (`npm ci`, `pnpm install --frozen-lockfile`, `yarn install
/// --frozen-lockfile`), picks the runner from package.json (vitest, jest,
/// mocha, else `node --test`) and writes assay's reporters for mocha and
/// `node --test` into the environment. Each run links the environment's
/// `node_modules` into its tree (read-only; a warm copy with `warm = {
/// ASSAY_NODE_MODULES = "node_modules" }`) and runs the runner with a
/// reporter that writes `assay-report.json` in jest's shape.
/// The node preset's key files: the manifest and every lockfile it reads.
pub(crate) const NODE_KEY_FILES: &[&str] = &[
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "yarn.lock",
];

/// The node preset's test command: the script its setup writes.
pub(crate) const NODE_TEST_COMMAND: &str = "sh \"$ASSAY_ENV/assay-test.sh\"";

/// The node preset's name: with it, `[env] rebuild` left out is read from
/// the workspace manifest (`rules::rebuild::detect`).
pub(crate) const NODE_NAME: &str = "node";

const NODE: Preset = Preset {
    name: NODE_NAME,
    install: &[include_str!("presets/node-install.sh")],
    setup: &[
        concat!(
            "cat > assay-node-reporter.mjs <<'ASSAY_EOF'\n",
            include_str!("presets/node-reporter.mjs"),
            "ASSAY_EOF"
        ),
        concat!(
            "cat > assay-mocha-reporter.js <<'ASSAY_EOF'\n",
            include_str!("presets/mocha-reporter.js"),
            "ASSAY_EOF"
        ),
        concat!(
            "cat > assay-test.sh <<'ASSAY_EOF'\n",
            include_str!("presets/node-test.sh"),
            "ASSAY_EOF"
        ),
        include_str!("presets/node-setup.sh"),
        "chmod -R a+rX .",
    ],
    key_files: NODE_KEY_FILES,
    test_command: NODE_TEST_COMMAND,
    report: "jest-json",
    report_file: Some("assay-report.json"),
    warm: &[],
};

const PRESETS: [Preset; 2] = [CARGO, NODE];

/// Expands every environment's preset in place, before the file's checks.
pub(super) fn expand(pipeline: &Origin<'_>, file: &mut PipelineFile) -> Result<(), ConfigError> {
    for env in file.envs_mut() {
        let Some(name) = env.preset.clone() else {
            if let Some(install) = &env.preset_install {
                return Err(pipeline.error_at(
                    install.span(),
                    "`preset_install` without a `preset`",
                    "here",
                    "it leaves out a preset's install: add `preset = \"node\"` or remove it",
                ));
            }
            continue;
        };
        let Some(preset) = PRESETS.iter().find(|p| p.name == name.get_ref()) else {
            let known: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
            return Err(pipeline.error_at(
                name.span(),
                format!("unknown preset `{}`", name.get_ref()),
                "here",
                format!("presets: {} (docs/languages.md)", known.join(", ")),
            ));
        };
        if let Some(install) = &env.preset_install
            && !install.get_ref()
            && preset.install.is_empty()
        {
            return Err(pipeline.error_at(
                install.span(),
                format!("the `{}` preset cannot leave out its install", preset.name),
                "here",
                "its test command reads what its setup puts in the environment; only the node preset's install can be left out (docs/languages.md)",
            ));
        }
        apply(preset, env, &name);
    }
    Ok(())
}

fn apply(preset: &Preset, env: &mut EnvConfig, name: &Spanned<String>) {
    let own = std::mem::take(&mut env.setup);
    let install = env.preset_install.as_ref().is_none_or(|i| *i.get_ref());
    env.setup = preset
        .install
        .iter()
        .filter(|_| install)
        .chain(preset.setup)
        .map(|s| (*s).to_owned())
        .collect();
    env.setup.extend(own);
    for f in preset.key_files {
        if !env.key_files.iter().any(|k| k == f) {
            env.key_files.push((*f).to_owned());
        }
    }
    if env.test_command.trim().is_empty() {
        env.test_command = preset.test_command.to_owned();
        if env.report_file.is_none() {
            env.report_file = preset.report_file.map(str::to_owned);
        }
    }
    if env.report.is_none() {
        // Spanned at the preset's name: an error about it points there.
        env.report = Some(Spanned::new(name.span(), preset.report.to_owned()));
    }
    if !preset.warm.is_empty() {
        let span = env.warm.as_ref().map_or(name.span(), |w| w.span());
        let mut warm = env.warm.take().map(Spanned::into_inner).unwrap_or_default();
        for (var, dir) in preset.warm {
            warm.entry((*var).to_owned())
                .or_insert_with(|| (*dir).to_owned());
        }
        env.warm = Some(Spanned::new(span, warm));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;

    /// The pipeline file `text` (with a source) loaded: its first
    /// environment as the checks and the layout see it, or the error shown.
    fn loaded(text: &str) -> Result<EnvConfig, String> {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("repo")).unwrap();
        let path = tmp.path().join("pipeline.toml");
        let text = format!("[[source]]\nname = \"r\"\npath = \"repo\"\n\n{text}");
        std::fs::write(&path, text).unwrap();
        match Pipeline::load(&path) {
            Ok(p) => Ok(p.settings.envs[0].written.clone()),
            Err(e) => Err(format!("{:?}", miette::Report::new(e))),
        }
    }

    #[test]
    fn the_cargo_preset_fills_in_what_the_table_leaves_out() {
        let env = loaded("[env]\npreset = \"cargo\"\nsetup = [\"echo mine\"]\n").unwrap();
        assert_eq!(env.setup.len(), CARGO.setup.len() + 1);
        assert!(env.setup[1].starts_with("cargo vendor"));
        assert_eq!(env.setup.last().unwrap(), "echo mine");
        assert_eq!(env.key_files, ["Cargo.toml", "Cargo.lock"]);
        assert!(
            env.test_command
                .contains("cargo test --offline --no-fail-fast")
        );
        assert_eq!(env.report.as_ref().unwrap().get_ref(), "libtest");
        let warm = env.warm.as_ref().unwrap().get_ref();
        assert_eq!(warm["CARGO_TARGET_DIR"], "target");
    }

    #[test]
    fn the_node_preset_installs_by_lockfile_and_reports_in_jests_shape() {
        let env = loaded("[env]\npreset = \"node\"\n").unwrap();
        assert_eq!(env.test_command, "sh \"$ASSAY_ENV/assay-test.sh\"");
        assert_eq!(env.report.as_ref().unwrap().get_ref(), "jest-json");
        assert_eq!(env.report_file.as_deref(), Some("assay-report.json"));
        assert!(env.key_files.iter().any(|k| k == "pnpm-lock.yaml"));
        let setup = env.setup.join("\n");
        for step in [
            "npm ci",
            "pnpm install --frozen-lockfile",
            "yarn install --frozen-lockfile",
            "> runner",
            "assay-node-reporter.mjs <<'ASSAY_EOF'",
        ] {
            assert!(setup.contains(step), "{step}");
        }
        // A table's own command keeps its own report file.
        let own = loaded("[env]\npreset = \"node\"\ntest_command = \"npx jest --json\"\n").unwrap();
        assert_eq!(own.report_file, None);
    }

    #[test]
    fn the_node_presets_install_can_be_left_out() {
        let env = loaded(
            "[env]\npreset = \"node\"\npreset_install = false\nsetup = [\"echo mocha > runner\"]\n",
        )
        .unwrap();
        let setup = env.setup.join("\n");
        for gone in ["npm ci", "npm install", "pnpm install", "yarn install"] {
            assert!(!setup.contains(gone), "{gone}");
        }
        assert!(setup.contains("> runner"));
        assert!(setup.contains("assay-mocha-reporter.js <<'ASSAY_EOF'"));
        assert_eq!(env.setup.last().unwrap(), "echo mocha > runner");
        // The default keeps it, first.
        let env = loaded("[env]\npreset = \"node\"\npreset_install = true\n").unwrap();
        assert!(env.setup[0].contains("npm ci"));
        // Cargo's runs read what its setup vendors: refused, at the key.
        let shown =
            loaded("[env]\npreset = \"cargo\"\npreset_install = false\n").expect_err("an error");
        assert!(
            shown.contains("the `cargo` preset cannot leave out its install"),
            "{shown}"
        );
        let shown =
            loaded("[env]\ntest_command = \"x\"\nreport = \"tap\"\npreset_install = false\n")
                .expect_err("an error");
        assert!(
            shown.contains("`preset_install` without a `preset`"),
            "{shown}"
        );
    }

    #[test]
    fn what_the_table_writes_wins() {
        let env = loaded(
            "[env]\npreset = \"cargo\"\ntest_command = \"cargo test --offline\"\nreport = \"libtest-json\"\nkey_files = [\"crates/a/Cargo.toml\"]\nwarm = { CARGO_TARGET_DIR = \"t\" }\n",
        )
        .unwrap();
        assert_eq!(env.test_command, "cargo test --offline");
        assert_eq!(env.report.as_ref().unwrap().get_ref(), "libtest-json");
        assert_eq!(
            env.key_files,
            ["crates/a/Cargo.toml", "Cargo.toml", "Cargo.lock"]
        );
        assert_eq!(
            env.warm.as_ref().unwrap().get_ref()["CARGO_TARGET_DIR"],
            "t"
        );
    }

    #[test]
    fn an_unknown_preset_points_at_its_name() {
        let shown = loaded("[env]\npreset = \"carg\"\n").expect_err("an error");
        assert!(shown.contains("unknown preset `carg`"), "{shown}");
        assert!(shown.contains("presets: cargo"), "{shown}");
        // Without a preset, the report and test command must be written.
        let shown = loaded("[env]\ntest_command = \"x\"\n").expect_err("an error");
        assert!(shown.contains("`report` is missing"), "{shown}");
        let shown = loaded("[env]\nreport = \"tap\"\n").expect_err("an error");
        assert!(shown.contains("`test_command` is empty"), "{shown}");
    }
}

/// assay's reporters run by the real runners: mocha's under Debian's mocha
/// (`NODE_PATH=/usr/share/nodejs`), `node --test`'s under node.
#[cfg(test)]
mod reporters {
    use std::process::Command;

    use assay_report::{Format, Outcome, parse_under};

    /// An agent's colliding test file with a `beforeEach` at its top level
    /// (a hook of the root suite, which belongs to no file) made the
    /// reporter write a result with an empty file name, and the reader
    /// refused the whole report (`no_report`: "test file `` names no
    /// file"), the hook's message lost. The hook's failure is a failure
    /// under the file of the test it stopped, said on stderr too.
    #[test]
    fn a_failing_root_hook_is_read_as_a_failure_with_its_message() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("test")).unwrap();
        std::fs::write(
            root.join("reporter.js"),
            include_str!("presets/mocha-reporter.js"),
        )
        .unwrap();
        std::fs::write(
            root.join("test/cart.spec.js"),
            "const assert = require('assert');\ndescribe('cart', function () {\n  it('adds', function () { assert.strictEqual(1 + 1, 2); });\n});\n",
        )
        .unwrap();
        for (hook, title) in [
            ("beforeEach", "\"before each\" hook for \"adds\""),
            ("before", "\"before all\" hook in \"{root}\""),
        ] {
            std::fs::write(
                root.join("test/zz-agent.spec.js"),
                format!(
                    "{hook}(function () {{ throw new TypeError('match is not a function'); }});\n"
                ),
            )
            .unwrap();
            let out = Command::new("mocha")
                .args(["--reporter", "./reporter.js", "--reporter-option"])
                .arg("output=report.json")
                .env("NODE_PATH", "/usr/share/nodejs")
                .current_dir(&root)
                .output()
                .expect("Debian's mocha (apt-get install mocha)");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{hook}: {stderr}");
            let report = std::fs::read(root.join("report.json")).unwrap();
            let read = parse_under(Format::JestJson, &report, &[&root])
                .unwrap_or_else(|e| panic!("{hook}: {e}: {}", String::from_utf8_lossy(&report)));
            let id = format!("test/cart.spec.js > {title}");
            assert_eq!(read.outcome(&id), Some(Outcome::Failed), "{hook}: {read:?}");
            // The test the hook stopped is not named: it counts as failed.
            assert_eq!(read.outcome("test/cart.spec.js > cart > adds"), None);
            assert!(
                stderr.contains(&format!(
                    "{title} failed: TypeError: match is not a function"
                )),
                "{hook}: {stderr}"
            );
        }
    }

    /// assay's `node --test` reporter keeps a failed test's words: the
    /// error's name and message (an assertion's expected and actual) and
    /// the test file's frames, none of node's own.
    #[test]
    fn the_node_test_reporter_keeps_the_failures_words_and_frames() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("test")).unwrap();
        std::fs::write(
            root.join("reporter.mjs"),
            include_str!("presets/node-reporter.mjs"),
        )
        .unwrap();
        std::fs::write(
            root.join("test/sum.test.js"),
            "const test = require('node:test');\nconst assert = require('node:assert');\n\
             const sum = (a, b) => a * b;\n\
             test('adds', () => { assert.strictEqual(sum(2, 3), 5); });\n\
             test('calls', () => { const m = undefined; m.match(/x/); });\n",
        )
        .unwrap();
        // Files whose own process fails: one does not load, one exits.
        std::fs::write(
            root.join("test/syntax.test.js"),
            "const test = require('node:test');\ntest('x', () => { let a = ; });\n",
        )
        .unwrap();
        std::fs::write(
            root.join("test/exits.test.js"),
            "const test = require('node:test');\ntest('y', () => { process.exit(3); });\n",
        )
        .unwrap();
        let out = Command::new("node")
            .args([
                "--test",
                "--test-reporter=./reporter.mjs",
                "--test-reporter-destination=report.json",
            ])
            .current_dir(root)
            .output()
            .expect("node (apt-get install nodejs)");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let report = std::fs::read(root.join("report.json")).unwrap();
        let read = parse_under(Format::JestJson, &report, &[root]).unwrap();
        let said = |id: &str| {
            let t = read.tests.iter().find(|t| t.name == id);
            assert_eq!(t.map(|t| t.outcome), Some(Outcome::Failed), "{read:?}");
            t.and_then(|t| t.message.clone()).unwrap_or_default()
        };
        let adds = said("test/sum.test.js > adds");
        for words in [
            "AssertionError: Expected values to be strictly equal:",
            "6 !== 5",
            "test/sum.test.js:4:",
        ] {
            assert!(adds.contains(words), "{words:?} in {adds}");
        }
        let calls = said("test/sum.test.js > calls");
        assert!(
            calls.starts_with("TypeError: Cannot read properties of undefined"),
            "{calls}"
        );
        assert!(calls.contains("test/sum.test.js:5:"), "{calls}");
        assert!(
            !format!("{adds}{calls}").contains("node:internal"),
            "{adds}{calls}"
        );
        // A file that fails as a whole is a build failure of the file,
        // with the process's words.
        let failed = |unit: &str| {
            read.build_failures
                .iter()
                .find(|b| b.unit == unit)
                .unwrap_or_else(|| panic!("{unit} in {read:?}"))
                .message
                .clone()
        };
        let syntax = failed("test/syntax.test.js");
        for words in [
            "the test file's process exited with code 1",
            "SyntaxError: Unexpected token ';'",
            "let a = ;",
        ] {
            assert!(syntax.contains(words), "{words:?} in {syntax}");
        }
        assert!(!syntax.contains("node:internal"), "{syntax}");
        assert!(
            failed("test/exits.test.js").contains("exited with code 3"),
            "{read:?}"
        );
    }
}
