//! Configuration errors as miette diagnostics: the file, the span, and a hint
//! that says what to do.

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceSpan};

/// Boxed so `Result<_, ConfigError>` stays small.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error(transparent)]
#[diagnostic(transparent)]
pub(crate) struct ConfigError(Box<ConfigDiagnostic>);

#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{message}")]
#[diagnostic(code(assay::config))]
pub(crate) struct ConfigDiagnostic {
    message: String,
    #[source_code]
    src: Option<NamedSource<String>>,
    #[label("{label}")]
    span: Option<SourceSpan>,
    label: String,
    /// Other places the message is about (the setting that asks for what
    /// `span` cannot give).
    #[label(collection)]
    also: Vec<LabeledSpan>,
    #[help]
    help: Option<String>,
}

impl ConfigError {
    /// An error with no file position (e.g. the pipeline file itself is missing).
    pub(crate) fn plain(message: impl Into<String>, help: impl Into<String>) -> ConfigError {
        ConfigError(Box::new(ConfigDiagnostic {
            message: message.into(),
            src: None,
            span: None,
            label: String::new(),
            also: Vec::new(),
            help: Some(help.into()),
        }))
    }

    /// An error pointing at `span` of the file `name` whose text is `text`.
    pub(crate) fn at(
        name: &str,
        text: &str,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) -> ConfigError {
        ConfigError(Box::new(ConfigDiagnostic {
            message: message.into(),
            src: Some(NamedSource::new(name, text.to_owned())),
            span: Some(SourceSpan::from(span)),
            label: label.into(),
            also: Vec::new(),
            help: Some(help.into()).filter(|h: &String| !h.is_empty()),
        }))
    }

    /// This error with one more labelled place of its file.
    pub(crate) fn also(
        mut self,
        span: std::ops::Range<usize>,
        label: impl Into<String>,
    ) -> ConfigError {
        let span = SourceSpan::from(span);
        self.0
            .also
            .push(LabeledSpan::new_with_span(Some(label.into()), span));
        self
    }

    /// Translates a TOML/serde error into a diagnostic with a hint by error shape.
    pub(crate) fn from_toml(name: &str, text: &str, e: &toml::de::Error) -> ConfigError {
        let message = e.message().trim().to_owned();
        let help = if message.contains("expected a key of [env]") {
            "a misspelt key of [env]? Fix its spelling; named environments are tables of their own: [env.NAME] (`assay docs pipeline`)"
        } else if message.starts_with("unknown field") {
            "remove the key or fix its spelling; the keys this table accepts are listed above (`assay docs pipeline` has them all)"
        } else if message.starts_with("invalid type") || message.starts_with("invalid value") {
            "this key takes another type of value; `assay docs pipeline` gives each key's type and an example"
        } else if message.starts_with("missing field") {
            "add the required key to this table"
        } else {
            "this is not valid TOML; see https://toml.io for the syntax"
        };
        let span = e.span().unwrap_or(0..0);
        ConfigError::at(
            name,
            text,
            span,
            format!("invalid pipeline: {message}"),
            "here",
            help,
        )
    }
}
