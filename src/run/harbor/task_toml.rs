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
    /// The network the task declares: `[environment] network_mode`, else
    /// the deprecated `allow_internet` (`false`: `no-network`), else
    /// Harbor's default, `public` (Harbor's `EnvironmentConfig.resolve_baseline`).
    pub(crate) network: NetworkMode,
}

/// A task's declared network policy, as Harbor names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum NetworkMode {
    #[default]
    Public,
    NoNetwork,
    Allowlist,
}

impl NetworkMode {
    /// The word `task.toml` writes.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Public => "public",
            NetworkMode::NoNetwork => "no-network",
            NetworkMode::Allowlist => "allowlist",
        }
    }

    /// Whether the environment's build steps reach the network: all but
    /// `no-network` (an allowlist's hosts are where its packages come from).
    pub(crate) fn builds_networked(self) -> bool {
        self != NetworkMode::NoNetwork
    }

    /// Whether a run that decides a verdict (a control's reading, a graded
    /// session or attempt) has the network: only `public`. An allowlist
    /// cannot be enforced without a proxy of its own: its runs have none
    /// ([`NetworkMode::unenforced`] says so).
    pub(crate) fn runs_networked(self) -> bool {
        self == NetworkMode::Public
    }

    /// Why a run has less network than the task declares, when it does.
    pub(crate) fn unenforced(self) -> Option<&'static str> {
        (self == NetworkMode::Allowlist).then_some(
            "the task declares `network_mode = \"allowlist\"`, which assay does not enforce: its runs have no network",
        )
    }
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
            e.src = Some(NamedSource::new(
                file,
                crate::model::shown::printable(src.inner()),
            ));
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
                src: Some(NamedSource::new(
                    &file,
                    crate::model::shown::printable(&text),
                )),
                span: span.map(SourceSpan::from),
                label: label.to_owned(),
            }))
        };
        let v: toml::Value = toml::from_str(&text)
            .map_err(|e| at(e.span(), e.message().trim().to_owned(), "not TOML"))?;
        let spans: Spans = toml::from_str(&text).unwrap_or_default();
        let environment = spans.environment.unwrap_or_default();
        let network = network_mode(&environment)
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
            network,
        })
    }
}

/// The network `[environment]` declares; else where the value that does
/// not say is, and why.
fn network_mode(environment: &EnvironmentSpans) -> Result<NetworkMode, (Range<usize>, String)> {
    if let Some(mode) = &environment.network_mode {
        return match mode.get_ref().as_str() {
            Some("public") => Ok(NetworkMode::Public),
            Some("allowlist") => Ok(NetworkMode::Allowlist),
            Some("no-network") => Ok(NetworkMode::NoNetwork),
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
        None => Ok(NetworkMode::Public),
        Some(v) => match v.get_ref().as_bool() {
            Some(true) => Ok(NetworkMode::Public),
            Some(false) => Ok(NetworkMode::NoNetwork),
            None => Err((
                v.span(),
                format!(
                    "[environment] allow_internet = {} is not true or false",
                    v.get_ref()
                ),
            )),
        },
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
    fn the_declared_network_decides_the_build_and_the_runs_and_public_is_the_default() {
        let read = |text: &str| TaskToml::read(folder(text).path()).unwrap().network;
        let build = |text: &str| read(text).builds_networked();
        let run = |text: &str| read(text).runs_networked();
        let public = "[environment]\nnetwork_mode = \"public\"\n";
        let allowlist = "[environment]\nnetwork_mode = \"allowlist\"\n";
        let none = "[environment]\nnetwork_mode = \"no-network\"\n";
        assert!(build(public) && run(public));
        assert!(build(allowlist) && !run(allowlist));
        assert!(read(allowlist).unenforced().is_some());
        assert!(!build(none) && !run(none));
        assert!(!run("[environment]\nallow_internet = false\n"));
        assert_eq!(read("[task]\nname = \"t\"\n"), NetworkMode::Public);
        // `network_mode` wins over the deprecated key.
        assert_eq!(
            read("[environment]\nallow_internet = false\nnetwork_mode = \"public\"\n"),
            NetworkMode::Public
        );
    }
}
