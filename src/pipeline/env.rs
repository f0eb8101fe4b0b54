//! `[env]` and `[env.NAME]`, with what the file alone decides checked: the
//! report format is one assay parses, the canary's globs and template are
//! sound, the run budgets are filled in. How an environment is confined and
//! on which executor is checked by `plan::envs`, which also probes the
//! machine (bubblewrap, the Docker daemon); it reads those keys from
//! [`EnvSpec::written`].

use assay_report::{Format, TestFile};
use toml::Spanned;

use super::file::{CanaryTemplate, EnvConfig, PipelineFile};
use super::{ConfigError, Origin};
use crate::model::rebuild::{RebuildRule, RebuildSpec};

/// Seconds before a run's whole process group is killed, unless written.
const DEFAULT_TIMEOUT_S: u64 = 300;
/// Bytes of a run's log kept as evidence, unless written.
const DEFAULT_LOG_CAP: u64 = 64 << 20;

/// One environment, checked.
#[derive(Clone, Debug)]
pub(crate) struct EnvSpec {
    /// `None` for the unnamed `[env]`.
    pub(crate) name: Option<Spanned<String>>,
    pub(crate) format: Format,
    pub(crate) timeout_s: u64,
    pub(crate) log_cap: u64,
    /// `touched_command`, checked: it selects the touched test files in
    /// the report's terms (`rules::touched`).
    pub(crate) touched_command: Option<String>,
    /// `rebuild`, checked: the workspace packages a run rebuilds before its
    /// tests when its tree changes them (`rules::rebuild`); detected from
    /// the workspace manifest under the node preset when not written.
    pub(crate) rebuild: RebuildSpec,
    /// The table as written: its commands, key files, and the keys of its
    /// confinement and executor.
    pub(crate) written: EnvConfig,
}

impl EnvSpec {
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_ref().map(|n| n.get_ref().as_str())
    }
}

pub(super) fn envs(
    pipeline: &Origin<'_>,
    file: &PipelineFile,
) -> Result<Vec<EnvSpec>, ConfigError> {
    file.envs()
        .into_iter()
        .map(|(name, cfg)| env(pipeline, name, cfg))
        .collect()
}

fn env(
    pipeline: &Origin<'_>,
    name: Option<&Spanned<String>>,
    cfg: &EnvConfig,
) -> Result<EnvSpec, ConfigError> {
    let Some(report) = &cfg.report else {
        return Err(ConfigError::plain(
            "[env]: `report` is missing".to_owned(),
            "the test command's report format, e.g. report = \"pytest\"",
        ));
    };
    let format: Format = report.get_ref().parse().map_err(|_| {
        pipeline.error_at(
            report.span(),
            format!("unknown report format `{}`", report.get_ref()),
            "here",
            format!("use one of: {}", formats().join(", ")),
        )
    })?;
    if let Some(canary) = &cfg.canary
        && let Some(why) = canary_problem(canary.get_ref())
    {
        return Err(pipeline.error_at(
            canary.span(),
            format!("[env] canary: {why}"),
            "this canary",
            "e.g. canary = { files = [\"**/*.test.js\"], template = \"test('{name}', () => expect({a} + {b}).toBe({sum}))\" } (docs/security.md)",
        ));
    }
    if let Some(warm) = &cfg.warm
        && let Some(why) = warm_problem(warm.get_ref())
    {
        return Err(pipeline.error_at(
            warm.span(),
            format!("[env] warm: {why}"),
            "here",
            "e.g. warm = { GOCACHE = \"go-cache\" }: a variable the toolchain reads, and a directory inside the environment (docs/languages.md)",
        ));
    }
    if let Some(touched) = &cfg.touched_command
        && let Some(why) = crate::model::rules::touched::command_problem(touched.get_ref())
    {
        return Err(pipeline.error_at(
            touched.span(),
            format!("[env] touched_command: {why}"),
            "this command",
            match format.capabilities().test_file {
                TestFile::GoPackage => "e.g. touched_command = \"go test -json {packages}\": `{packages}` becomes the directory of each touched _test.go file (docs/stages.md, \"Scope\")",
                TestFile::Path | TestFile::None => "e.g. touched_command = \"python -m pytest -rA {files}\": `{files}` becomes the test files the test patch touches (docs/stages.md, \"Scope\")",
            },
        ));
    }
    let mut rebuild = RebuildSpec {
        rules: Vec::new(),
        detect: cfg.rebuild.is_none()
            && cfg
                .preset
                .as_ref()
                .is_some_and(|p| p.get_ref() == crate::pipeline::preset::NODE_NAME),
    };
    for rule in cfg.rebuild.iter().flatten() {
        let (paths, command) = (rule.get_ref().paths.to_vec(), &rule.get_ref().command);
        if let Some(why) = crate::model::rules::rebuild::problem(&paths, command) {
            return Err(pipeline.error_at(
                rule.span(),
                format!("[env] rebuild: {why}"),
                "this rule",
                "e.g. rebuild = [{ paths = \"packages/core/**\", command = \"tsc -p packages/core\" }]: globs over repo-relative paths, one line of sh run at the tree's root (`assay docs pipeline`)",
            ));
        }
        rebuild.rules.push(RebuildRule {
            paths,
            command: command.clone(),
        });
    }
    Ok(EnvSpec {
        name: name.cloned(),
        rebuild,
        touched_command: cfg.touched_command.as_ref().map(|c| c.get_ref().clone()),
        format,
        timeout_s: cfg.timeout.unwrap_or(DEFAULT_TIMEOUT_S),
        log_cap: cfg.log_cap.unwrap_or(DEFAULT_LOG_CAP),
        written: cfg.clone(),
    })
}

/// Variables a warm cache may not take: the run's own.
const RESERVED: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "LANG",
    "ASSAY_ENV",
    "ASSAY_ATTEMPT",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "PYTHONDONTWRITEBYTECODE",
];

/// Why a `warm` table cannot be used, if it cannot.
fn warm_problem(warm: &std::collections::BTreeMap<String, String>) -> Option<String> {
    let mut dirs = std::collections::BTreeSet::new();
    for (var, dir) in warm {
        let plain = var
            .chars()
            .enumerate()
            .all(|(i, c)| c == '_' || c.is_ascii_uppercase() || (i > 0 && c.is_ascii_digit()));
        if var.is_empty() || !plain {
            return Some(format!(
                "`{var}` is not an environment variable's name (A-Z, 0-9, _)"
            ));
        }
        if RESERVED.contains(&var.as_str()) {
            return Some(format!("`{var}` is the run's own variable"));
        }
        let path = std::path::Path::new(dir);
        let inside = !dir.is_empty()
            && path
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            return Some(format!(
                "`{dir}` is not a directory inside the environment (a relative path, no `..`)"
            ));
        }
        if !dirs.insert(dir.as_str()) {
            return Some(format!("`{dir}` is named twice"));
        }
    }
    None
}

/// Why a canary template cannot plant canaries, if it cannot.
fn canary_problem(c: &CanaryTemplate) -> Option<&'static str> {
    if c.files.iter().any(|g| globset::Glob::new(g).is_err()) {
        Some("a glob of `files` does not parse")
    } else if !c.template.contains("{name}") || !c.template.contains("{sum}") {
        Some("the template needs `{name}` (the test's name) and `{sum}` (its expected value)")
    } else {
        None
    }
}

/// Every report format's word, in `assay_report`'s order.
pub(crate) fn formats() -> Vec<&'static str> {
    Format::ALL.iter().map(|f| f.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canary(files: &[&str], template: &str) -> CanaryTemplate {
        CanaryTemplate {
            files: files.iter().map(|f| f.to_string()).collect(),
            template: template.into(),
        }
    }

    #[test]
    fn a_canary_needs_valid_globs_a_name_and_a_sum() {
        let good = "test('{name}', () => expect({a} + {b}).toBe({sum}))";
        assert_eq!(canary_problem(&canary(&["**/*.test.js"], good)), None);
        assert!(canary_problem(&canary(&["a/[b"], good)).is_some_and(|w| w.contains("glob")));
        assert!(canary_problem(&canary(&["*.js"], "test('{name}')")).is_some());
        assert!(canary_problem(&canary(&["*.js"], "expect({sum})")).is_some());
    }
}
