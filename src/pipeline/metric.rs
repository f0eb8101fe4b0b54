//! `[[metric]]`: quality measured by the project's own tools. A metric is a
//! command run over a tree and a way to count what it found (lines matching
//! a pattern, the elements at a JSON place, or a non-zero exit), or a
//! pattern counted in a patch's added lines. Presets write the usual tools'
//! recipes once; any key the table gives replaces the preset's. Checked here
//! once: every pattern compiles, every glob parses, names are unique.

use serde::Serialize;
use toml::Spanned;

use super::file::MetricConfig;
use super::{ConfigError, Origin};
pub(crate) use crate::model::config::Count;

/// One metric, valid.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Metric {
    /// Its node names are `quality:<name>:…`; its release columns
    /// `quality.<name>`.
    pub(crate) name: String,
    pub(crate) measure: Measure,
    /// Seconds before a command is killed.
    pub(crate) timeout_s: u64,
}

/// What a metric counts.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub(crate) enum Measure {
    /// A command run over the tree, its findings counted.
    Command {
        command: String,
        count: Count,
        /// The findings are in this file of the tree (else the command's
        /// output, stdout and stderr).
        file: Option<String>,
    },
    /// Matches of `pattern` in the added lines of the patch's files that
    /// match `files` (none: every file).
    Added { pattern: String, files: Vec<String> },
}

/// A built-in recipe.
struct Preset {
    name: &'static str,
    command: &'static str,
    count: &'static str,
    pattern: &'static str,
    json: &'static str,
    path_key: &'static str,
    file: &'static str,
    files: &'static [&'static str],
}

const NONE: Preset = Preset {
    name: "",
    command: "",
    count: "",
    pattern: "",
    json: "",
    path_key: "",
    file: "",
    files: &[],
};

/// The recipes (docs/pipeline.md, "Metrics"). Go's keeps the module cache
/// and toolchain offline, as the test command of docs/languages.md does.
const PRESETS: [Preset; 8] = [
    Preset {
        name: "tsc",
        command: "tsc --noEmit --pretty false",
        count: "lines",
        pattern: r"^(?P<path>[^\s(][^(]*)\(\d+,\d+\): error TS\d+",
        ..NONE
    },
    Preset {
        name: "eslint",
        command: "eslint --format json --output-file .assay-eslint.json .",
        count: "json",
        json: "*.messages.*",
        path_key: "filePath",
        file: ".assay-eslint.json",
        ..NONE
    },
    Preset {
        name: "prettier",
        command: "prettier --list-different .",
        count: "lines",
        pattern: r"^(?P<path>[^\[\s]\S*)$",
        ..NONE
    },
    Preset {
        name: "ruff",
        command: "ruff check --exit-zero --output-format json --output-file .assay-ruff.json .",
        count: "json",
        json: "*",
        path_key: "filename",
        file: ".assay-ruff.json",
        ..NONE
    },
    Preset {
        name: "mypy",
        command: "mypy --no-error-summary --no-pretty .",
        count: "lines",
        pattern: r"^(?P<path>[^:\s]+\.pyi?):\d+(:\d+)?: error:",
        ..NONE
    },
    Preset {
        name: "clippy",
        command: "cargo clippy --offline --all-targets --message-format=short",
        count: "lines",
        pattern: r"^(?P<path>[^:\s]+\.rs):\d+:\d+: (warning|error)",
        ..NONE
    },
    Preset {
        name: "go-vet",
        command: "env GOPATH=$HOME/go GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local go vet ./...",
        count: "lines",
        pattern: r"^(?P<path>[^:\s#]+\.go):\d+:\d+: ",
        ..NONE
    },
    Preset {
        name: "ts-any",
        count: "added",
        pattern: r":\s*any\b|\bas\s+any\b|<any>|\bany\[\]",
        files: &["**/*.ts", "**/*.tsx", "**/*.mts", "**/*.cts"],
        ..NONE
    },
];

/// Every `[[metric]]`, checked.
pub(super) fn metrics(
    pipeline: &Origin<'_>,
    tables: &[MetricConfig],
) -> Result<Vec<Metric>, ConfigError> {
    let mut out: Vec<Metric> = Vec::new();
    for m in tables {
        let metric = metric(pipeline, m)?;
        if out.iter().any(|o| o.name == metric.name) {
            return Err(pipeline.error_at(
                m.name.span(),
                format!("two [[metric]] tables are named `{}`", metric.name),
                "the second",
                "give each metric its own name",
            ));
        }
        out.push(metric);
    }
    Ok(out)
}

fn metric(pipeline: &Origin<'_>, m: &MetricConfig) -> Result<Metric, ConfigError> {
    let name = m.name.get_ref();
    let named_well = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !named_well {
        return Err(pipeline.error_at(
            m.name.span(),
            format!("metric name `{name}` is not a plain word"),
            "this name",
            "use lowercase letters, digits, `_` and `-` (it names nodes and columns)",
        ));
    }
    let preset = match &m.preset {
        None => &NONE,
        Some(p) => PRESETS
            .iter()
            .find(|k| k.name == p.get_ref())
            .ok_or_else(|| {
                let known: Vec<&str> = PRESETS.iter().map(|k| k.name).collect();
                pipeline.error_at(
                    p.span(),
                    format!("unknown metric preset `{}`", p.get_ref()),
                    "this preset",
                    format!("the presets: {}", known.join(", ")),
                )
            })?,
    };
    // A key the table gives, else the preset's (empty: neither).
    let or = |given: &Option<Spanned<String>>, preset: &str| -> String {
        given
            .as_ref()
            .map_or_else(|| preset.to_owned(), |g| g.get_ref().clone())
    };
    let span = |given: &Option<Spanned<String>>| {
        given.as_ref().map_or_else(|| m.name.span(), |g| g.span())
    };
    let pattern = or(&m.pattern, preset.pattern);
    if let Err(e) = regex::Regex::new(&pattern) {
        return Err(pipeline.error_at(
            span(&m.pattern),
            format!("metric `{name}`: invalid pattern: {e}"),
            "this pattern",
            "patterns are regular expressions (a `path` group names the file)",
        ));
    }
    let count = or(&m.count, preset.count);
    let command = or(&m.command, preset.command);
    let needs_command = count != "added";
    if needs_command && command.trim().is_empty() {
        return Err(pipeline.error_at(
            span(&m.command),
            format!("metric `{name}` has no command"),
            "this metric",
            "add `command = \"…\"` (run at the tree's root), or a `preset`",
        ));
    }
    let measure = match count.as_str() {
        "lines" => Count::Lines {
            pattern: if pattern.is_empty() {
                r"\S".to_owned()
            } else {
                pattern
            },
        },
        "exit" => Count::Exit,
        "json" => {
            let at = or(&m.json, preset.json);
            if at.is_empty() {
                return Err(pipeline.error_at(
                    span(&m.count),
                    format!("metric `{name}` counts JSON but says not where"),
                    "here",
                    "add `json = \"*\"` (the findings' place: keys joined by `.`, `*` for an array's elements)",
                ));
            }
            Count::Json {
                at: at.split('.').map(str::to_owned).collect(),
                path_key: m
                    .path_key
                    .clone()
                    .or_else(|| (!preset.path_key.is_empty()).then(|| preset.path_key.to_owned())),
            }
        }
        "added" => {
            if pattern.is_empty() {
                return Err(pipeline.error_at(
                    span(&m.count),
                    format!("metric `{name}` counts added lines but has no pattern"),
                    "here",
                    "add `pattern = \"…\"`: what is counted in each added line",
                ));
            }
            let files: Vec<String> = match &m.files {
                Some(globs) => {
                    for g in globs {
                        if let Err(e) = globset::Glob::new(g.get_ref()) {
                            return Err(pipeline.error_at(
                                g.span(),
                                format!("metric `{name}`: invalid glob: {e}"),
                                "this glob",
                                "globs use `*`, `**`, `?` and `[...]`",
                            ));
                        }
                    }
                    globs.iter().map(|g| g.get_ref().clone()).collect()
                }
                None => preset.files.iter().map(|g| g.to_string()).collect(),
            };
            return Ok(Metric {
                name: name.clone(),
                measure: Measure::Added { pattern, files },
                timeout_s: m.timeout.unwrap_or(300),
            });
        }
        other => {
            return Err(pipeline.error_at(
                span(&m.count),
                format!("metric `{name}`: unknown count `{other}`"),
                "here",
                "count is `lines`, `json`, `exit` or `added` (or give a `preset`)",
            ));
        }
    };
    let file = or(&m.file, preset.file);
    Ok(Metric {
        name: name.clone(),
        measure: Measure::Command {
            command,
            count: measure,
            file: (!file.is_empty()).then_some(file),
        },
        timeout_s: m.timeout.unwrap_or(300),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;

    /// The metrics of a pipeline file holding `text`, or the error shown.
    fn loaded(text: &str) -> Result<Vec<Metric>, String> {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pipeline.toml");
        std::fs::write(&path, text).unwrap();
        match Pipeline::load(&path) {
            Ok(p) => Ok(p.settings.metrics),
            Err(e) => Err(format!("{:?}", miette::Report::new(e))),
        }
    }

    /// Each command preset counted on its tool's output as the tool
    /// prints it (recorded here: eslint, prettier, ruff, mypy and clippy do
    /// not run on this machine; tsc and go vet run in tests/metrics.rs).
    #[test]
    fn every_preset_counts_its_tools_output() {
        let tests = globset::GlobSetBuilder::new()
            .add(globset::Glob::new("tests/**").unwrap())
            .add(globset::Glob::new("**/*.test.*").unwrap())
            .build()
            .unwrap();
        let recorded: &[(&str, &str, u64)] = &[
            (
                "tsc",
                "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\nsrc/a.test.ts(1,1): error TS2304: Cannot find name 'x'.\n",
                1,
            ),
            (
                "eslint",
                r#"[{"filePath":"/assay/tree/src/a.js","messages":[{"ruleId":"no-unused-vars","severity":2,"message":"'x' is defined but never used.","line":1,"column":7},{"ruleId":"semi","severity":1,"message":"Missing semicolon.","line":2,"column":9}],"errorCount":1,"warningCount":1},{"filePath":"/assay/tree/src/b.js","messages":[],"errorCount":0,"warningCount":0}]"#,
                2,
            ),
            (
                "prettier",
                "src/a.ts\nsrc/b.test.ts\n[error] src/c.ts: SyntaxError: ';' expected. (1:5)\n",
                1,
            ),
            (
                "ruff",
                r#"[{"cell":null,"code":"F401","filename":"/assay/tree/pkg/a.py","location":{"column":8,"row":1},"message":"`os` imported but unused"},{"cell":null,"code":"E711","filename":"/assay/tree/tests/test_a.py","location":{"column":4,"row":3},"message":"Comparison to `None`"}]"#,
                1,
            ),
            (
                "mypy",
                "pkg/a.py:3: error: Incompatible types in assignment (expression has type \"str\", variable has type \"int\")  [assignment]\npkg/a.py:3: note: See https://mypy.rtfd.io\npkg/b.py:7:5: error: Name \"y\" is not defined  [name-defined]\n",
                2,
            ),
            (
                "clippy",
                "    Checking calc v0.1.0 (/assay/tree)\nsrc/lib.rs:3:5: warning: this `if` has identical blocks\nsrc/lib.rs:9:1: error: this loop never actually loops\nwarning: `calc` (lib) generated 1 warning\nerror: could not compile `calc` (lib) due to 1 previous error\n",
                2,
            ),
            (
                "go-vet",
                "# example.com/calc\n./show.go:5:34: fmt.Sprintf format %s has arg a of wrong type int\n",
                1,
            ),
        ];
        for (preset, output, want) in recorded {
            let text = format!("[[metric]]\nname = \"m\"\npreset = \"{preset}\"\n");
            let metrics = loaded(&text).unwrap();
            let Measure::Command { count, .. } = &metrics[0].measure else {
                panic!("{preset} runs no command");
            };
            let found =
                crate::model::rules::quality::count(count, output.as_bytes(), Some(1), &tests)
                    .unwrap_or_else(|e| panic!("{preset}: {e}"));
            assert_eq!(found.total(), *want, "{preset}: {found:?}");
        }
    }

    #[test]
    fn a_table_key_replaces_the_presets() {
        let m = loaded(
            "[[metric]]\nname = \"vet\"\npreset = \"go-vet\"\ncommand = \"go vet ./pkg/...\"\n",
        )
        .unwrap();
        match &m[0].measure {
            Measure::Command { command, .. } => assert_eq!(command, "go vet ./pkg/..."),
            other => panic!("{other:?}"),
        }
        let any = loaded("[[metric]]\nname = \"any\"\npreset = \"ts-any\"\n").unwrap();
        assert!(matches!(&any[0].measure, Measure::Added { files, .. } if files.len() == 4));
    }

    #[test]
    fn bad_tables_are_errors_pointing_into_the_file() {
        for (text, says) in [
            (
                "[[metric]]\nname = \"m\"\ncount = \"lines\"\n",
                "has no command",
            ),
            (
                "[[metric]]\nname = \"m\"\ncommand = \"x\"\ncount = \"json\"\n",
                "says not where",
            ),
            (
                "[[metric]]\nname = \"m\"\ncommand = \"x\"\ncount = \"words\"\n",
                "unknown count `words`",
            ),
            (
                "[[metric]]\nname = \"m\"\ncommand = \"x\"\ncount = \"lines\"\npattern = \"(\"\n",
                "invalid pattern",
            ),
            (
                "[[metric]]\nname = \"M x\"\ncommand = \"x\"\ncount = \"exit\"\n",
                "not a plain word",
            ),
            (
                "[[metric]]\nname = \"m\"\ncommand = \"x\"\ncount = \"exit\"\n\n[[metric]]\nname = \"m\"\ncommand = \"y\"\ncount = \"exit\"\n",
                "two [[metric]] tables are named `m`",
            ),
        ] {
            let e = loaded(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
