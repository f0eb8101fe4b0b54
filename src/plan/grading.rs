//! The grading part of the layout: per session a session node, then per arm
//! stage → run → grade, and one metrics node; all feed the release.
//! `grading_names` resolves the task a session names, `grading_target`
//! lays out the nodes that grade a session on its task, and
//! `grading_attempts` the agents' attempts, graded the same way.

use std::collections::BTreeSet;
use std::path::Path;

use assay_engine::{NodeSpec, Store};

use super::grading_attempts::attempt_nodes;
use super::grading_names::{Unknown, named_task, previous_task_keys, released_tasks};
pub(crate) use super::grading_target::GradeLayout;
use super::grading_target::{Target, failed_session_node, grade_on};
use crate::model::names;
use crate::nodes::adapter::{self, NoNames, NodeKind};
use crate::nodes::judge;
use crate::nodes::release::Input;
use crate::nodes::release::ReleaseInputs;
use crate::nodes::session::{self, SessionParams};
use crate::pipeline::Pipeline;
use crate::run::error::StageError;
use crate::run::redact::{RedactConfig, Redactor};
use crate::sessions::Session;

/// What the grading layout leaves to the release besides its nodes.
#[derive(Default)]
pub(crate) struct Ungraded {
    /// The sessions that cannot be graded, with why.
    pub(crate) not_graded: Vec<(String, String)>,
    /// The Harbor jobs among the sessions, for the trial accounting.
    pub(crate) jobs: Vec<crate::sessions::harbor::JobTrials>,
}

/// Per session: a session node, then per arm stage → run → grade, and one
/// metrics node.
pub(crate) fn grade_nodes(
    pipeline: &Pipeline,
    store: &Store,
    g: &GradeLayout<'_>,
    out: &mut Vec<NodeSpec>,
    release: &mut ReleaseInputs,
    warnings: &mut Vec<String>,
) -> Result<Ungraded, StageError> {
    let previous_tasks = previous_task_keys(store);
    let mut released: Option<BTreeSet<String>> = None;
    let mut not_graded = Vec::new();
    let mut reviewable = Vec::new();
    let (sessions, mut jobs) = match &pipeline.settings.sessions {
        Some(dir) => crate::sessions::load_all(dir),
        None => {
            unread_sessions(pipeline, warnings);
            Default::default()
        }
    };
    for t in jobs.iter_mut().flat_map(|j| j.trials.values_mut()) {
        t.task_content = t
            .task_digest
            .as_deref()
            .and_then(|d| task_content(store, d));
    }
    let redactors = (
        Redactor::values(&RedactConfig {
            patterns: Vec::new(),
            env: secret_env(pipeline, g),
        }),
        Redactor::new(&RedactConfig {
            patterns: g.redact.patterns.clone(),
            env: secret_env(pipeline, g),
        }),
    );
    for loaded in sessions {
        let (s, file) = match loaded {
            Ok(parsed) => (parsed.session, parsed.file),
            Err(e) => {
                let id = e.id.clone();
                let why = e.message.clone();
                warnings.push(format!("{:?}", miette::Report::new(e)));
                not_graded.push((id.clone(), format!("unreadable session file: {why}")));
                out.push(failed_session_node(&id, why));
                continue;
            }
        };
        if let Some(models) = model_disagrees(&s.model, &s.facts.models) {
            warnings.push(format!(
                "warning: session {} ({}) is labelled model `{}`, but its transcript names {models}: reports group it under the label",
                s.id,
                file.display(),
                s.model
            ));
        }
        // A Harbor trial that kept no patch has nothing to grade: the
        // release accounts for it, with whose doing it is.
        if let Some(why) = s
            .facts
            .trial
            .as_ref()
            .and_then(crate::sessions::harbor::not_graded_because)
        {
            not_graded.push((s.id.clone(), why));
            continue;
        }
        let (mut task_id, track) = match named_task(g, &previous_tasks, &s) {
            Ok(named) => named,
            Err((short, why)) => {
                not_graded.push((s.id.clone(), short));
                out.push(failed_session_node(&s.id, why));
                continue;
            }
        };
        // A Deep-SWE-shaped Harbor task is an assay task too, whichever
        // name the session gives it: graded by assay, with the dataset's
        // own verifier's reading beside.
        let reading = g
            .harbor
            .get(&s.task)
            .filter(|h| g.task_nodes.contains_key(&(h.id.clone(), track.clone())));
        if let Some(h) = reading {
            task_id = h.id.clone();
        }
        let target = match g.task_nodes.get(&(task_id.clone(), track.clone())) {
            Some((task_node, env_node)) => Target::Task {
                id: &task_id,
                task_node,
                env_node,
                reading,
            },
            None => match (g.harbor.get(&s.task), g.apps.get(&s.task)) {
                (Some(h), _) => Target::RewardOnly(h),
                (None, Some(app)) => Target::App(app),
                (None, None) => {
                    let released = released.get_or_insert_with(|| released_tasks(store));
                    let unknown = Unknown {
                        session: &s.id,
                        file: &file,
                        task: &s.task,
                        track: &track,
                    };
                    let (why, failed) = unknown.refused(g, released, warnings);
                    not_graded.push((s.id.clone(), why));
                    out.extend(failed);
                    continue;
                }
            },
        };
        let workspace = trial_workspace(pipeline, &s);
        let id = s.id.clone();
        let session_node = session_node(s, target.task(), track, &redactors, out);
        release.push(session_node.clone(), Input::Session);
        grade_on(
            pipeline,
            g,
            &target,
            (&id, &session_node, workspace),
            out,
            release,
            &mut reviewable,
        );
    }
    attempt_nodes(pipeline, g, out, release, &mut reviewable);
    judge::nodes(pipeline, &reviewable, out, release)?;
    Ok(Ungraded { not_graded, jobs })
}

/// A session's node, naming `task` and `track`; returns its name. A key in
/// a session's patch is no answer: the session node (its params, its blob)
/// holds the redacted bytes.
fn session_node(
    s: Session<Vec<u8>, Option<String>>,
    task: String,
    track: String,
    (patch_redactor, transcript_redactor): &(Redactor, Redactor),
    out: &mut Vec<NodeSpec>,
) -> String {
    // A key in a session's patch is no answer: the session node (its
    // params, its blob) holds the redacted bytes.
    let (patch, redacted) = patch_redactor.redact(&s.patch);
    // The transcript is shown in the report: every secret shape and value
    // out of it first.
    let transcript = s
        .transcript
        .as_deref()
        .map(|t| transcript_redactor.redact(t).0);
    let mut facts = s.facts;
    if redacted > 0 {
        facts.patch_redacted = Some(redacted);
    }
    let name = names::session(&s.id);
    let params = SessionParams {
        session: Session {
            id: s.id,
            task,
            track,
            agent: s.agent,
            model: s.model,
            patch,
            facts,
            transcript,
        },
        error: None,
    };
    out.push(adapter::spec(
        name.clone(),
        session::Session(params),
        NoNames {},
    ));
    name
}

/// The working directory an imported Harbor trial's job collected, when it
/// did (graded in place of a patch).
fn trial_workspace(
    pipeline: &Pipeline,
    s: &Session<Vec<u8>, Option<String>>,
) -> Option<std::path::PathBuf> {
    s.facts
        .trial
        .as_ref()
        .filter(|t| t.workspace.is_some())
        .zip(pipeline.settings.sessions.as_deref())
        .map(|(_, dir)| crate::sessions::harbor::workspace_dir(&dir.join(&s.id)))
}

/// The variables whose values are secrets in what a session brings: the
/// `[redact] env` names, and every agent's and judge's key variable.
fn secret_env(pipeline: &Pipeline, g: &GradeLayout<'_>) -> Vec<String> {
    g.redact
        .env
        .iter()
        .cloned()
        .chain(
            pipeline
                .settings
                .agents
                .iter()
                .filter_map(|a| a.endpoint.as_ref()?.key_env.clone()),
        )
        .chain(
            pipeline
                .judges
                .iter()
                .filter_map(|j| j.settings.api_key_env.clone()),
        )
        .collect()
}

/// The content (`TaskRecord::content_digest`) of the task node keyed
/// `hex`, when this cache holds it.
fn task_content(store: &Store, hex: &str) -> Option<String> {
    let key = hex.parse::<assay_engine::Digest>().ok()?;
    let (record, _, row) = store.key_record(&key).ok().flatten()?;
    if record.kind != NodeKind::Task {
        return None;
    }
    let bytes = store.output_bytes(&row).ok()?;
    let task: crate::model::records::TaskRecord = serde_json::from_slice(&bytes).ok()?;
    Some(task.content_digest())
}

/// The transcript's models, listed, when the session's model label names
/// none of them (a label agrees with an id it equals or begins: `claude-x`
/// with `claude-x-20250101`); None when they agree or the transcript names none.
fn model_disagrees(label: &str, models: &[String]) -> Option<String> {
    if models.is_empty() || models.iter().any(|m| m.starts_with(label)) {
        return None;
    }
    Some(
        models
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// A `sessions/` directory beside a pipeline that names no `sessions`
/// holds files no build reads: said, so they are not taken for graded.
fn unread_sessions(pipeline: &Pipeline, warnings: &mut Vec<String>) {
    let dir = pipeline.resolve("sessions");
    let files = walk_files(&dir);
    if files > 0 {
        warnings.push(format!(
            "warning: {} holds {files} file(s), but {} names no `sessions`: none is graded (add `sessions = \"sessions\"`)",
            dir.display(),
            pipeline.path.display()
        ));
    }
}

/// The files under `dir`, at any depth (0 when it does not read).
fn walk_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => walk_files(&e.path()),
                    Ok(_) => 1,
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::model_disagrees;

    #[test]
    fn a_model_label_agrees_with_the_ids_it_begins() {
        let ids = ["claude-sonnet-4-5-20250929".to_owned()];
        assert_eq!(model_disagrees("claude-sonnet-4-5", &ids), None);
        assert_eq!(model_disagrees("model-a", &[]), None);
        assert_eq!(
            model_disagrees("model-a", &ids).as_deref(),
            Some("`claude-sonnet-4-5-20250929`")
        );
    }
}
