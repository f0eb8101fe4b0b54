//! What a try left, read: the transcript's facts (the model under test
//! named by its label) and whose fault a failed run is, on the proxy's
//! word only.

use crate::pipeline::TranscriptFormat;
use crate::run::attempt::egress;
use crate::run::attempt::workspace::Workspace;
use crate::run::attempt::{self as a};
use crate::run::error::{Kinded, NodeError};
use crate::run::redact::Redactor;
use crate::sessions::RunFacts;

/// The facts with the model under test named by its label: a transcript
/// names the real id (`gpt-4.1-mini`, `openai/gpt-4.1-mini`, a dated
/// `gpt-4.1-mini-2025-04-14`), and everything graded, judged and priced
/// names the label. Other models a transcript names (an agent's helper
/// model) keep their ids.
pub(super) fn label_models(facts: &mut RunFacts, model_id: &str, label: &str) {
    let bare = |m: &str| m.rsplit_once('/').map_or(m, |(_, tail)| tail).to_owned();
    let id = bare(model_id);
    let ours = |m: &str| !id.is_empty() && bare(m).starts_with(&id);
    for (model, kinds) in std::mem::take(&mut facts.by_model) {
        let key = if ours(&model) {
            label.to_owned()
        } else {
            model
        };
        let mine = facts.by_model.entry(key).or_default();
        for (kind, n) in kinds {
            *mine.entry(kind).or_default() += n;
        }
    }
    let mut models: Vec<String> = Vec::new();
    for m in std::mem::take(&mut facts.models) {
        let m = if ours(&m) { label.to_owned() } else { m };
        if !models.contains(&m) {
            models.push(m);
        }
    }
    facts.models = models;
}

/// The transcript's facts, its stored digest, or why it is not usable.
pub(super) fn transcript(
    format: TranscriptFormat,
    ws: &Workspace,
    redactor: &Redactor,
    put: &mut impl FnMut(&[u8]) -> Result<String, NodeError>,
) -> Result<(RunFacts, Option<String>, Option<String>), NodeError> {
    if format == TranscriptFormat::None {
        return Ok((RunFacts::default(), None, None));
    }
    let path = ws.output().join("transcript");
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => m,
        Ok(_) => {
            return Ok((
                RunFacts::default(),
                None,
                Some("the transcript is not a regular file".into()),
            ));
        }
        Err(_) => {
            return Ok((
                RunFacts::default(),
                None,
                Some("the agent wrote no transcript".into()),
            ));
        }
    };
    if meta.len() > a::TRANSCRIPT_CAP {
        return Ok((
            RunFacts::default(),
            None,
            Some(format!(
                "the transcript is over {} bytes",
                a::TRANSCRIPT_CAP
            )),
        ));
    }
    let (bytes, _) = redactor.redact(&std::fs::read(&path).infra()?);
    let digest = put(&bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    match crate::sessions::transcript_facts(format, &path, &text) {
        Ok(facts) => Ok((facts, Some(digest), None)),
        Err(why) => Ok((RunFacts::default(), Some(digest), Some(why))),
    }
}

/// Why the infrastructure failed the attempt, on the proxy's word only:
/// the request the run ended on (the last answered) got a 429/5xx or a
/// failed connection to the endpoint; or the run had no way out — the
/// forwarder never reached the proxy (the agent's command did not run), or
/// it sent no request and the proxy's probe at its end found the endpoint
/// down. A run that sent nothing while everything was up, or whose last
/// request was answered, is the agent's whatever its transcript says.
pub(super) fn infrastructure(
    requests: &[egress::Request],
    health: &egress::Health,
) -> Option<String> {
    if !health.forwarder_up {
        return Some(
            "the proxy was not reachable from the sandbox: the agent's command never ran".into(),
        );
    }
    if let Some(last) = requests.last() {
        if !last.failed() {
            return None;
        }
        let how = match (last.status, last.upstream) {
            (Some(s), _) => format!("status {s}"),
            (None, Some(u)) => format!(
                "{}: {}",
                u.as_str(),
                last.error.as_deref().unwrap_or("no answer")
            ),
            (None, None) => "no answer".into(),
        };
        return Some(format!(
            "the endpoint failed the agent's last request ({how})"
        ));
    }
    match &health.probe {
        Some(p) if !p.up => Some(format!(
            "the agent sent no request and the endpoint was down at the run's end ({})",
            match (p.status, p.upstream) {
                (Some(s), _) => format!("status {s}"),
                (None, Some(u)) => u.as_str().to_owned(),
                (None, None) => "no answer".into(),
            }
        )),
        _ => None,
    }
}
