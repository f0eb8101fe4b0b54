//! An agent's model endpoint: where its requests may go and how its key is
//! sent, as `[[agent]]` declares it and the egress proxy enforces it.

use serde::{Deserialize, Serialize};

/// Where an attempt's requests may go and how its key is sent.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    /// `scheme://host[:port]`.
    pub(crate) origin: String,
    /// The path every request must be under (`/v1`), without a final `/`.
    pub(crate) prefix: String,
    /// The key, read from assay's environment; `None`: none is sent.
    pub(crate) key: Option<String>,
    pub(crate) header: KeyHeader,
    /// Other secret values (`[redact] env`) taken out of every answer, as
    /// the key is (`run::attempt::egress::scrub`).
    pub(crate) secrets: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer KEY` (OpenAI-compatible endpoints).
    Authorization,
    /// `x-api-key: KEY` (Anthropic's API).
    XApiKey,
}

impl Endpoint {
    /// `base_url` split into origin and path prefix; `Err` when it is not an
    /// `http(s)://` URL.
    pub(crate) fn parse(
        base_url: &str,
        key: Option<String>,
        header: KeyHeader,
    ) -> Result<Endpoint, String> {
        let (scheme, rest) = base_url
            .split_once("://")
            .filter(|(s, _)| *s == "http" || *s == "https")
            .ok_or_else(|| format!("`{base_url}` is not an http:// or https:// URL"))?;
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if host.is_empty() {
            return Err(format!("`{base_url}` names no host"));
        }
        Ok(Endpoint {
            origin: format!("{scheme}://{host}"),
            prefix: path.trim_end_matches('/').to_owned(),
            key,
            header,
            secrets: Vec::new(),
        })
    }
}
