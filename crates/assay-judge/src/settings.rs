//! One `[[judge]]` table as typed settings, and the part of it that belongs in
//! a node key.
//!
//! The split follows one question: *could this field change what the judge
//! says?* The API, base URL, model, temperature, rubric text, prompt version
//! and sample index can, so they are in [`JudgeKey`]. The judge's name, the
//! key's variable (and the key itself), concurrency, timeout, retries and
//! `max_tokens` cannot: they decide whether and how fast an answer arrives,
//! never which complete answer it is (a truncated answer is not a reading, it
//! is retried and then reported as an error).
//!
//! **Base URL rule.** `base_url` is everything before the endpoint: the client
//! appends `/chat/completions` (`api = "openai"`) or `/messages`
//! (`api = "anthropic"`). So `https://api.openai.com/v1`,
//! `https://api.anthropic.com/v1`, `http://127.0.0.1:8000/v1` (vLLM),
//! `http://127.0.0.1:8080/v1` (llama.cpp), `http://127.0.0.1:11434/v1`
//! (Ollama). One trailing slash is tolerated; a URL that already ends in the
//! endpoint is refused by [`Settings::validate`] rather than doubled.

use std::num::{NonZeroU32, NonZeroUsize};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::prompt::PROMPT_VERSION;

/// Which wire format the server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// OpenAI-compatible `POST {base_url}/chat/completions` with a strict
    /// `json_schema` response format (OpenAI, vLLM, llama.cpp, Ollama).
    Openai,
    /// `POST {base_url}/messages` with a forced `submit_review` tool call.
    Anthropic,
}

impl Api {
    /// The path appended to `base_url`.
    pub fn endpoint(self) -> &'static str {
        match self {
            Api::Openai => "/chat/completions",
            Api::Anthropic => "/messages",
        }
    }
}

/// One judge, as written in a `[[judge]]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// A name for reports and diagnostics; not part of the key.
    pub name: String,
    pub api: Api,
    /// Everything before `/chat/completions` or `/messages` (see the module docs).
    pub base_url: String,
    pub model: String,
    /// The NAME of the environment variable that holds the API key, read at
    /// call time. `None` sends no key (a local server that wants none).
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub temperature: f64,
    /// Independent readings per review (sample indices `0..samples`).
    #[serde(default = "defaults::samples")]
    pub samples: NonZeroU32,
    /// Rubric TEXT (a pipeline that names a file reads it and puts the text
    /// here). `None` uses the built-in rubric, which [`PROMPT_VERSION`] covers.
    #[serde(default)]
    pub rubric: Option<String>,
    /// Also review patches two at a time, each pair in both orders.
    #[serde(default)]
    pub pairwise: bool,
    /// Requests in flight at once, shared by every clone of one `Judge`.
    #[serde(default = "defaults::concurrency")]
    pub concurrency: NonZeroUsize,
    /// Per-request timeout (connect + answer), seconds.
    #[serde(default = "defaults::timeout_s")]
    pub timeout_s: f64,
    /// Attempts per review, the first included: transport failures, 429, 5xx
    /// and unusable answers all count.
    #[serde(default = "defaults::max_attempts")]
    pub max_attempts: NonZeroU32,
    /// Backoff before retry `k` (k = 1, 2, …) is drawn from
    /// `[b·2^(k-1) / 2, b·2^(k-1)]` with `b = backoff_s`, capped at
    /// `backoff_max_s`; a server's `retry-after` replaces it (capped too).
    #[serde(default = "defaults::backoff_s")]
    pub backoff_s: f64,
    #[serde(default = "defaults::backoff_max_s")]
    pub backoff_max_s: f64,
    /// Anthropic's required `max_tokens`; not sent to OpenAI-compatible servers
    /// (whose parameter name differs between models).
    #[serde(default = "defaults::max_tokens")]
    pub max_tokens: NonZeroU32,
}

mod defaults {
    use std::num::{NonZeroU32, NonZeroUsize};

    pub(super) fn samples() -> NonZeroU32 {
        NonZeroU32::MIN
    }
    pub(super) fn concurrency() -> NonZeroUsize {
        NonZeroUsize::new(4).unwrap_or(NonZeroUsize::MIN)
    }
    pub(super) fn timeout_s() -> f64 {
        120.0
    }
    pub(super) fn max_attempts() -> NonZeroU32 {
        NonZeroU32::new(4).unwrap_or(NonZeroU32::MIN)
    }
    pub(super) fn backoff_s() -> f64 {
        1.0
    }
    pub(super) fn backoff_max_s() -> f64 {
        60.0
    }
    pub(super) fn max_tokens() -> NonZeroU32 {
        NonZeroU32::new(4096).unwrap_or(NonZeroU32::MIN)
    }
}

/// A setting that cannot work, named by its field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("judge `{judge}`: `{field}` {problem}")]
pub struct SettingsError {
    pub judge: String,
    pub field: &'static str,
    pub problem: String,
}

/// Everything in [`Settings`] that can change what the judge says, in a fixed
/// field order, for the node key. Encode it (bincode, as the engine does) and
/// hash it together with the review's inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgeKey {
    pub prompt_version: u32,
    pub api: Api,
    /// Normalised: without the tolerated trailing slash.
    pub base_url: String,
    pub model: String,
    /// `-0.0` is written as `0.0` so equal settings give equal bytes.
    pub temperature: f64,
    pub rubric: Option<String>,
    pub sample: u32,
}

impl Settings {
    /// A judge with every optional field at its default.
    pub fn new(name: &str, api: Api, base_url: &str, model: &str) -> Settings {
        Settings {
            name: name.to_owned(),
            api,
            base_url: base_url.to_owned(),
            model: model.to_owned(),
            api_key_env: None,
            temperature: 0.0,
            samples: defaults::samples(),
            rubric: None,
            pairwise: false,
            concurrency: defaults::concurrency(),
            timeout_s: defaults::timeout_s(),
            max_attempts: defaults::max_attempts(),
            backoff_s: defaults::backoff_s(),
            backoff_max_s: defaults::backoff_max_s(),
            max_tokens: defaults::max_tokens(),
        }
    }

    /// Checks what serde's types cannot; the pipeline calls it once and then
    /// trusts the settings. [`crate::Judge::new`] calls it too.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let fail = |field, problem: &str| {
            Err(SettingsError {
                judge: self.name.clone(),
                field,
                problem: problem.to_owned(),
            })
        };
        if self.name.trim().is_empty() {
            return fail("name", "is empty");
        }
        let url = self.normalised_base_url();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return fail("base_url", "must start with http:// or https://");
        }
        if let Some(endpoint) = [Api::Openai, Api::Anthropic]
            .into_iter()
            .map(Api::endpoint)
            .find(|e| url.ends_with(e))
        {
            return fail(
                "base_url",
                &format!(
                    "must end before `{endpoint}`: the client appends `{}` itself",
                    self.api.endpoint()
                ),
            );
        }
        if self.model.trim().is_empty() {
            return fail("model", "is empty");
        }
        if let Some(var) = &self.api_key_env
            && (var.is_empty() || var.contains('=') || var.contains('\0'))
        {
            return fail("api_key_env", "is not a variable name");
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return fail("temperature", "must be between 0 and 2");
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return fail("timeout_s", "must be a positive number of seconds");
        }
        if !(self.backoff_s.is_finite() && self.backoff_s >= 0.0) {
            return fail("backoff_s", "must be zero or a positive number of seconds");
        }
        if !(self.backoff_max_s.is_finite() && self.backoff_max_s >= self.backoff_s) {
            return fail("backoff_max_s", "must be a number of seconds >= backoff_s");
        }
        Ok(())
    }

    /// `base_url` without the tolerated trailing slash.
    pub fn normalised_base_url(&self) -> &str {
        self.base_url.strip_suffix('/').unwrap_or(&self.base_url)
    }

    /// The full endpoint URL.
    pub fn endpoint_url(&self) -> String {
        format!("{}{}", self.normalised_base_url(), self.api.endpoint())
    }

    /// The key-relevant part for one sample index.
    pub fn key(&self, sample: u32) -> JudgeKey {
        JudgeKey {
            prompt_version: PROMPT_VERSION,
            api: self.api,
            base_url: self.normalised_base_url().to_owned(),
            model: self.model.clone(),
            // Adding 0.0 turns -0.0 into 0.0 and leaves every other value alone.
            temperature: self.temperature + 0.0,
            rubric: self.rubric.clone(),
            sample,
        }
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Settings, toml::de::Error> {
        toml::from_str(text)
    }

    fn key_bytes(s: &Settings, sample: u32) -> Vec<u8> {
        bincode::serde::encode_to_vec(s.key(sample), bincode::config::standard())
            .unwrap_or_default()
    }

    const MINIMAL: &str = r#"
        name = "local"
        api = "openai"
        base_url = "http://127.0.0.1:8000/v1"
        model = "qwen"
    "#;

    #[test]
    fn a_minimal_table_gets_the_defaults() {
        let s = parse(MINIMAL).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            s,
            Settings::new("local", Api::Openai, "http://127.0.0.1:8000/v1", "qwen")
        );
        assert_eq!(s.validate(), Ok(()));
        assert_eq!(
            s.endpoint_url(),
            "http://127.0.0.1:8000/v1/chat/completions"
        );
    }

    #[test]
    fn a_full_table_parses_and_typos_are_refused() {
        let full = r#"
            name = "claude"
            api = "anthropic"
            base_url = "https://api.anthropic.com/v1/"
            model = "claude-x"
            api_key_env = "ANTHROPIC_API_KEY"
            temperature = 1
            samples = 3
            rubric = "Be strict."
            pairwise = true
            concurrency = 16
            timeout_s = 300
            max_attempts = 6
            backoff_s = 2
            backoff_max_s = 120
            max_tokens = 8000
        "#;
        let s = parse(full).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.validate(), Ok(()));
        assert_eq!(s.endpoint_url(), "https://api.anthropic.com/v1/messages");
        assert_eq!((s.samples.get(), s.concurrency.get()), (3, 16));
        assert!(parse(&format!("{MINIMAL}\ntemprature = 0.5")).is_err());
        assert!(parse(&format!("{MINIMAL}\nsamples = 0")).is_err());
        assert!(parse(&MINIMAL.replace("openai", "gemini")).is_err());
    }

    #[test]
    fn validation_names_the_field() {
        let base = || Settings::new("j", Api::Openai, "http://h/v1", "m");
        let field = |s: Settings| s.validate().err().map(|e| e.field);
        let mut s = base();
        s.base_url = "http://h/v1/chat/completions".into();
        assert_eq!(field(s), Some("base_url"));
        let mut s = base();
        s.base_url = "h/v1".into();
        assert_eq!(field(s), Some("base_url"));
        let mut s = base();
        s.temperature = f64::NAN;
        assert_eq!(field(s), Some("temperature"));
        let mut s = base();
        s.timeout_s = 0.0;
        assert_eq!(field(s), Some("timeout_s"));
        let mut s = base();
        s.backoff_max_s = 0.5;
        assert_eq!(field(s), Some("backoff_max_s"));
        let mut s = base();
        s.api_key_env = Some(String::new());
        assert_eq!(field(s), Some("api_key_env"));
    }

    #[test]
    fn the_key_ignores_what_cannot_change_an_answer() {
        let a = Settings::new("a", Api::Openai, "http://h/v1", "m");
        let mut b = a.clone();
        b.name = "renamed".into();
        b.api_key_env = Some("OTHER_KEY".into());
        b.samples = NonZeroU32::new(9).unwrap_or(NonZeroU32::MIN);
        b.pairwise = true;
        b.concurrency = NonZeroUsize::new(64).unwrap_or(NonZeroUsize::MIN);
        b.timeout_s = 5.0;
        b.max_attempts = NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN);
        b.backoff_s = 3.0;
        b.backoff_max_s = 30.0;
        b.max_tokens = NonZeroU32::new(100).unwrap_or(NonZeroU32::MIN);
        b.base_url.push('/');
        b.temperature = -0.0;
        assert_eq!(key_bytes(&a, 0), key_bytes(&b, 0));
    }

    #[test]
    fn the_key_changes_with_everything_that_can() {
        let a = Settings::new("a", Api::Openai, "http://h/v1", "m");
        let variants: [fn(&mut Settings); 5] = [
            |s| s.api = Api::Anthropic,
            |s| s.base_url = "http://other/v1".into(),
            |s| s.model = "m2".into(),
            |s| s.temperature = 0.7,
            |s| s.rubric = Some("Be strict.".into()),
        ];
        for change in variants {
            let mut b = a.clone();
            change(&mut b);
            assert_ne!(key_bytes(&a, 0), key_bytes(&b, 0), "{b:?}");
        }
        assert_ne!(key_bytes(&a, 0), key_bytes(&a, 1), "the sample index");
        assert_eq!(a.key(0).prompt_version, PROMPT_VERSION);
    }
}
