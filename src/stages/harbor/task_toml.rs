//! What a Harbor task folder's `task.toml` says that assay uses, read
//! once. A file that does not read is that task's problem alone: its
//! [`TaskTomlError`] uncertifies the task (`task_toml_invalid`, with the
//! key and the value) and is printed by the build as a diagnostic pointing
//! into the file; the other tasks and the release go on.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use miette::{NamedSource, SourceSpan};
use serde::Deserialize;

/// The word a task whose `task.toml` does not read is uncertified by.
pub(crate) const INVALID: &str = "task_toml_invalid";

/// What a task folder's `task.toml` says that screening uses.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskToml {
    pub(crate) name: Option<String>,
    pub(crate) agent_timeout: Duration,
    pub(crate) verifier_timeout: Duration,
    pub(crate) build_timeout: Duration,
    pub(crate) docker_image: Option<String>,
    /// Whether the environment's build steps may reach the network:
    /// `[environment] network_mode` (`public`, `allowlist`: yes;
    /// `no-network`: no), else the deprecated `allow_internet`, else
    /// Harbor's default, `public`.
    pub(crate) build_network: bool,
}

/// A `task.toml` that does not read: the file, what is wrong, and where.
/// Boxed so `Result<_, TaskTomlError>` stays small.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(transparent)]
#[diagnostic(transparent)]
pub(crate) struct TaskTomlError(Box<Unread>);

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{file}: {message}")]
#[diagnostic(
    code(assay::harbor_task),
    severity(Warning),
    help(
        "this task is uncertified (`task_toml_invalid`); the other tasks and the release go on: fix the file and build again"
    )
)]
struct Unread {
    /// The file as the console names it.
    file: String,
    /// What is wrong, naming the key and its value.
    message: String,
    #[source_code]
    src: Option<NamedSource<String>>,
    #[label("{label}")]
    span: Option<SourceSpan>,
    label: String,
}

impl TaskTomlError {
    /// Named `file` on the console (a path relative to the pipeline reads
    /// best).
    pub(crate) fn named(mut self, file: &str) -> TaskTomlError {
        let e = &mut self.0;
        e.file = file.to_owned();
        if let Some(src) = e.src.take() {
            e.src = Some(NamedSource::new(file, src.inner().clone()));
        }
        self
    }

    /// The reason the task is uncertified by.
    pub(crate) fn reason(&self) -> String {
        format!("{INVALID}: task.toml: {}", self.0.message)
    }
}

/// `[environment]`'s keys that decide the build's network, with where
/// they are in the file.
#[derive(Deserialize, Default)]
struct Spans {
    #[serde(default)]
    environment: Option<EnvironmentSpans>,
}

#[derive(Deserialize, Default)]
struct EnvironmentSpans {
    network_mode: Option<toml::Spanned<toml::Value>>,
    allow_internet: Option<toml::Spanned<toml::Value>>,
}

impl TaskToml {
    /// The `task.toml` of `folder`.
    pub(crate) fn read(folder: &Path) -> Result<TaskToml, TaskTomlError> {
        let path = folder.join("task.toml");
        let file = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| {
            TaskTomlError(Box::new(Unread {
                file: file.clone(),
                message: e.to_string(),
                src: None,
                span: None,
                label: String::new(),
            }))
        })?;
        let at = |span: Option<Range<usize>>, message: String, label: &str| {
            TaskTomlError(Box::new(Unread {
                file: file.clone(),
                message,
                src: Some(NamedSource::new(&file, text.clone())),
                span: span.map(SourceSpan::from),
                label: label.to_owned(),
            }))
        };
        let v: toml::Value = toml::from_str(&text)
            .map_err(|e| at(e.span(), e.message().trim().to_owned(), "not TOML"))?;
        let spans: Spans = toml::from_str(&text).unwrap_or_default();
        let environment = spans.environment.unwrap_or_default();
        let build_network = build_network(&environment)
            .map_err(|(span, message)| at(Some(span), message, "this value"))?;
        let secs = |table: &str, key: &str| {
            v.get(table)
                .and_then(|t| t.get(key))
                .and_then(|x| x.as_float().or_else(|| x.as_integer().map(|i| i as f64)))
                .filter(|s| s.is_finite() && *s > 0.0)
                .map_or(Duration::from_secs(600), Duration::from_secs_f64)
        };
        let string = |table: &str, key: &str| {
            v.get(table)
                .and_then(|t| t.get(key))
                .and_then(|n| n.as_str())
                .map(str::to_owned)
        };
        Ok(TaskToml {
            name: string("task", "name"),
            agent_timeout: secs("agent", "timeout_sec"),
            verifier_timeout: secs("verifier", "timeout_sec"),
            build_timeout: secs("environment", "build_timeout_sec"),
            docker_image: string("environment", "docker_image"),
            build_network,
        })
    }
}

/// Whether `[environment]` lets the build reach the network; else where
/// the value that does not say is, and why.
fn build_network(environment: &EnvironmentSpans) -> Result<bool, (Range<usize>, String)> {
    if let Some(mode) = &environment.network_mode {
        return match mode.get_ref().as_str() {
            Some("public" | "allowlist") => Ok(true),
            Some("no-network") => Ok(false),
            _ => Err((
                mode.span(),
                format!(
                    "[environment] network_mode = {} is none of \"public\", \"no-network\", \"allowlist\"",
                    mode.get_ref()
                ),
            )),
        };
    }
    match &environment.allow_internet {
        None => Ok(true),
        Some(v) => v.get_ref().as_bool().ok_or_else(|| {
            (
                v.span(),
                format!(
                    "[environment] allow_internet = {} is not true or false",
                    v.get_ref()
                ),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("task.toml"), text).unwrap();
        dir
    }

    #[test]
    fn an_unsupported_network_mode_names_the_key_and_the_value_and_points_at_it() {
        let text = "[task]\nname = \"t\"\n\n[environment]\nnetwork_mode = \"bridge\"\n";
        let dir = folder(text);
        let e = TaskToml::read(dir.path())
            .unwrap_err()
            .named("tb/t/task.toml");
        assert_eq!(
            e.reason(),
            "task_toml_invalid: task.toml: [environment] network_mode = \"bridge\" is none of \"public\", \"no-network\", \"allowlist\""
        );
        let span = e.0.span.unwrap();
        assert_eq!(
            &text[span.offset()..span.offset() + span.len()],
            "\"bridge\""
        );
        assert!(e.to_string().starts_with("tb/t/task.toml: "), "{e}");
    }

    #[test]
    fn the_declared_network_decides_the_build_and_public_is_the_default() {
        let read = |text: &str| TaskToml::read(folder(text).path()).unwrap().build_network;
        assert!(read("[environment]\nnetwork_mode = \"public\"\n"));
        assert!(read("[environment]\nnetwork_mode = \"allowlist\"\n"));
        assert!(!read("[environment]\nnetwork_mode = \"no-network\"\n"));
        assert!(!read("[environment]\nallow_internet = false\n"));
        assert!(read("[task]\nname = \"t\"\n"));
    }
}
