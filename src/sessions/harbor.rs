//! Harbor jobs in (docs/harbor.md): a Harbor job directory anywhere under
//! the sessions directory (`harbor run … -o JOBS --job-name J` wrote
//! `JOBS/J/{config.json,result.json}` and one folder per trial) is read as
//! sessions, one per trial:
//!
//! - **task**: the instance id in the trial's `verifier/assay-verdict.json`
//!   (an exported task's verifier writes it, with the task's digest), else
//!   the task's Harbor name (`assay/<instance id>`, as `assay export
//!   --harbor` names it); a trial graded against a task whose digest is not
//!   the one it ran is listed in the release (`task_changed`);
//! - **agent / model**: `agent_info.name`, `agent_info.model_info` (or the
//!   job's `model_name`; `none` for agents without a model, like `oracle`);
//! - **patch**: `verifier/agent.patch`, the diff the exported verifier
//!   read from the workspace, else `artifacts/model.patch`, the diff a
//!   Deep-SWE task's `pre_artifacts.sh` collected from the agent's
//!   container (its commits since the base): assay grades it itself, in its
//!   own sandbox; nothing else of the trial's verifier (its reward, its
//!   reports) is read for a verdict;
//! - **run facts**: tokens and cost from `agent_result`, the agent's time
//!   from its phase timings, how it ended from `exception_info`.
//!
//! Whose fault an errored trial is: its exception type, by [`blame`]'s
//! table, names a party, but a trial's `result.json` is written where the
//! agent ran (an agent can raise `RateLimitError` at will, and a trial
//! submitted with no files and a `CancelledError` looks like one Harbor
//! stopped before the agent ran). So every exception is the agent's
//! failure, counted, unless the job's controls of the same task (its
//! `oracle`/`nop` trials) failed the same way, the same party's exception
//! by the table (the same type, for one the table does not know); the
//! record names those controls ([`judge_exception`]). A trial that lost its patch or its reward is judged
//! against its controls ([`lost`]): the agent was root in the container
//! the verifier ran in, so a missing file is the agent's failure, graded
//! as an empty patch and counted, unless the job's own controls of the
//! same task lost theirs the same way, or its exception stood — then
//! it is not the agent's, not graded. With no control trial in the job the
//! control is assay's own screening, which certified every task it grades.
//! Harbor's reward is a reading only, listed beside assay's regrade when
//! they disagree. The job's plan (`n_total_trials`) and every trial's
//! outcome go to the release's trial accounting ([`JobTrials`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::read::{Failure, ParsedSession, SessionError};
use super::{RunFacts, Session};
pub(crate) use crate::model::session::{Lost, Trial};

/// The agents Harbor runs as a task's controls.
const CONTROLS: &[&str] = &["oracle", "nop"];

/// Exceptions raised before the agent ran or by Harbor stopping its own
/// job (`CancelledError`: ctrl-c, a crash), all the harness's by the table,
/// when a control of the task witnesses them ([`judge_exception`]).
const BEFORE_THE_AGENT: &[&str] = &[
    "CancelledError",
    "EnvironmentStartTimeoutError",
    "AgentSetupTimeoutError",
    "SandboxBuildFailedError",
    "ComposeLoadError",
    "UnsupportedDockerfileError",
    "HealthcheckError",
    "ImageMirrorError",
    "ImageRegistryUnavailableError",
];

/// A job as planned and as it went, for the release's trial accounting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct JobTrials {
    /// The job's path under the sessions directory.
    pub(crate) job: String,
    /// `n_total_trials` of the job's result.json: trials on paper.
    pub(crate) planned: u64,
    /// `stats.n_cancelled_trials`, `n_pending_trials`, `n_running_trials`,
    /// as Harbor counts them: kept as read, never added to the accounting
    /// (a cancelled trial that left a folder is in it and among the trials).
    pub(crate) not_ended: u64,
    /// Every trial folder that has a result, by session id.
    pub(crate) trials: BTreeMap<String, Trial>,
}

/// Whether `dir` is a Harbor job: a `result.json` with `n_total_trials`
/// beside a `config.json`.
pub(super) fn is_job(dir: &Path) -> bool {
    if !dir.join("config.json").is_file() {
        return false;
    }
    read_json(dir, &dir.join("result.json"))
        .is_some_and(|v| v.get("n_total_trials").is_some_and(Value::is_u64))
}

/// The job `dir` (session ids `<id>/<trial>`): its trials as sessions, in
/// folder order, and its accounting.
pub(super) fn load(
    id: &str,
    dir: &Path,
    out: &mut Vec<(String, usize, Result<ParsedSession, Failure>)>,
) -> JobTrials {
    let start = out.len();
    let mut job = JobTrials {
        job: id.to_owned(),
        ..JobTrials::default()
    };
    let result: Value = read_json(dir, &dir.join("result.json")).unwrap_or_default();
    job.planned = result["n_total_trials"].as_u64().unwrap_or_default();
    let stats = &result["stats"];
    job.not_ended = ["n_cancelled_trials", "n_pending_trials", "n_running_trials"]
        .iter()
        .filter_map(|k| stats[k].as_u64())
        .sum();
    let config: Value = read_json(dir, &dir.join("config.json")).unwrap_or_default();
    let mut folders: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    folders.sort();
    for folder in folders
        .into_iter()
        .filter(|p| p.join("result.json").is_file())
    {
        let name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let session_id = format!("{id}/{name}");
        let session = trial(dir, &session_id, id, &folder, &config);
        out.push((session_id, 0, session));
    }
    judge_losses(&mut out[start..]);
    for (session_id, _, session) in &out[start..] {
        if let Ok(s) = session
            && let Some(t) = &s.session.facts.trial
        {
            job.trials.insert(session_id.clone(), t.clone());
        }
    }
    job
}

/// Each trial's [`Lost`], against the job's control trials of its task.
fn judge_losses(trials: &mut [(String, usize, Result<ParsedSession, Failure>)]) {
    let controls: Vec<(String, String, Trial)> = trials
        .iter()
        .filter_map(|(_, _, s)| s.as_ref().ok())
        .filter(|s| CONTROLS.contains(&s.session.agent.as_str()))
        .filter_map(|s| {
            let t = s.session.facts.trial.clone()?;
            Some((s.session.task.clone(), s.session.agent.clone(), t))
        })
        .collect();
    for (_, _, s) in trials.iter_mut() {
        let Ok(s) = s else { continue };
        if CONTROLS.contains(&s.session.agent.as_str()) {
            // No agent ran in a control trial to raise its exception: the
            // table's word stands.
            s.session.facts.is_error = Some(s.session.facts.claimed_error == Some(true));
            continue;
        }
        let task = s.session.task.clone();
        let Some(t) = s.session.facts.trial.as_mut() else {
            continue;
        };
        let theirs: Vec<(&str, &Trial)> = controls
            .iter()
            .filter(|(k, _, _)| *k == task)
            .map(|(_, a, t)| (a.as_str(), t))
            .collect();
        let witnessed = judge_exception(t, &theirs);
        t.lost = lost(t, &theirs);
        s.session.facts.is_error = Some(witnessed);
    }
}

/// Whether the exception `t` raised stands as its table's party's
/// ([`blame`]), and that party is the infrastructure. A trial's exception
/// is the trial's own claim, written where the agent ran: it stands only
/// when the job's control trials of the same task (`controls`) failed the
/// same way (an exception of the same party; of the same type, for one
/// the table does not know). Else it is the agent's failure, counted.
/// `t.blame` and `t.blame_why` say which, naming the controls.
fn judge_exception(t: &mut Trial, controls: &[(&str, &Trial)]) -> bool {
    let Some(e) = t.exception.clone() else {
        return false;
    };
    let party = blame(&e);
    if party == AGENT {
        return false;
    }
    let same = |c: &Trial| {
        let theirs = c.exception.as_deref();
        if party == AMBIGUOUS {
            theirs == Some(e.as_str())
        } else {
            theirs.is_some_and(|x| blame(x) == party)
        }
    };
    let failed: Vec<String> = controls
        .iter()
        .filter(|(_, c)| same(c))
        .map(|(a, c)| {
            format!(
                "{a} ({}, {})",
                c.name,
                c.exception.as_deref().unwrap_or("?")
            )
        })
        .collect();
    if !failed.is_empty() {
        t.blame = Some(party.to_owned());
        t.blame_why = Some(format!(
            "{e}: the {party}'s, as the job's control trials of this task failed the same way: {}",
            failed.join(", ")
        ));
        return party == INFRASTRUCTURE;
    }
    let witness = if controls.is_empty() {
        "the job has no control trial of this task".to_owned()
    } else {
        format!(
            "the job's {} trials of this task raised none",
            control_names(controls)
        )
    };
    t.blame = Some(AGENT.to_owned());
    t.blame_why = Some(format!(
        "{e}: no control failed the same way ({witness}): the agent's failure, counted"
    ));
    false
}

/// The agents of `controls`, once each, sorted: `nop and oracle`.
fn control_names(controls: &[(&str, &Trial)]) -> String {
    let mut names: Vec<&str> = controls.iter().map(|(a, _)| *a).collect();
    names.sort_unstable();
    names.dedup();
    names.join(" and ")
}

/// Whose doing it is that `t` kept no patch or no reward, judged against
/// `controls` (the job's control trials of the same task, by agent name)
/// once its exception is judged ([`judge_exception`]): the party of an
/// exception that stood, or the harness's when a control lost the same
/// file; else the agent's.
pub(crate) fn lost(t: &Trial, controls: &[(&str, &Trial)]) -> Option<Lost> {
    let what = if !t.patch_kept {
        "no patch"
    } else if t.reward.is_none() {
        "no reward"
    } else {
        return None;
    };
    let how = t
        .exception
        .as_deref()
        .map(|e| format!(" ({e})"))
        .unwrap_or_default();
    if let Some(party) = t.blame.as_deref().filter(|b| *b != AGENT)
        && t.exception.is_some()
    {
        return Some(Lost {
            to: party.to_owned(),
            why: format!(
                "{what} kept{how}: the trial ended outside the agent's run ({})",
                t.blame_why.as_deref().unwrap_or("by its exception")
            ),
        });
    }
    let same = |c: &Trial| {
        if what == "no patch" {
            !c.patch_kept
        } else {
            c.reward.is_none()
        }
    };
    let failed: Vec<String> = controls
        .iter()
        .filter(|(_, c)| same(c))
        .map(|(a, c)| format!("{a} ({})", c.name))
        .collect();
    if !failed.is_empty() {
        return Some(Lost {
            to: HARNESS.to_owned(),
            why: format!(
                "{what} kept{how}; the job's control trials of this task lost theirs too: {}",
                failed.join(", ")
            ),
        });
    }
    let graded = if what == "no patch" {
        "graded as an empty patch"
    } else {
        "graded by assay's regrade"
    };
    let witness = if controls.is_empty() {
        "the job has no control trial of this task; assay's own screening certified it".to_owned()
    } else {
        format!(
            "the job's {} trials of this task kept theirs",
            control_names(controls)
        )
    };
    Some(Lost {
        to: AGENT.to_owned(),
        why: format!("{what} kept{how}: the agent's failure, {graded} ({witness})"),
    })
}

/// The bytes of `path` when it is a regular file beneath the job `root`
/// reached through no symbolic link: a job directory is someone else's
/// (the agent, root in its container, writes `agent/` and `verifier/`),
/// and a link anywhere in it must not read this machine's files into the
/// cache and the release.
fn regular(root: &Path, path: &Path) -> Option<Vec<u8>> {
    super::read::read_beneath(root, path).ok()
}

fn read_json(root: &Path, path: &Path) -> Option<Value> {
    serde_json::from_slice(&regular(root, path)?).ok()
}

/// One trial folder as a session.
fn trial(
    root: &Path,
    session_id: &str,
    job: &str,
    folder: &Path,
    config: &Value,
) -> Result<ParsedSession, Failure> {
    let result_path = folder.join("result.json");
    let text = super::read::read_text(root, session_id, &result_path, "Harbor trial result")?;
    let r: Value = serde_json::from_str(&text)
        .map_err(|e| SessionError::from_json(session_id, &result_path, &text, 0, &text, &e))?;
    let Some(trial_name) = r["trial_name"].as_str() else {
        return Err(SessionError::plain(
            session_id,
            format!("{} has no `trial_name`", result_path.display()),
            "a Harbor trial's result.json names its trial; is this folder a trial of the job?",
        ));
    };
    let verifier = folder.join("verifier");
    if std::fs::symlink_metadata(&verifier).is_ok_and(|m| m.is_symlink()) {
        // Harbor makes this directory on the host; only whoever wrote the
        // job could have linked it. (A link inside it may be the agent's:
        // that file is not read, as if not kept.)
        return Err(SessionError::plain(
            session_id,
            format!(
                "{} is a symbolic link; the trial is not read",
                verifier.display()
            ),
            "a trial's files are read only beneath the job directory, never through a symbolic link",
        ));
    }
    let verdict = read_json(root, &verifier.join("assay-verdict.json"));
    let patch = regular(root, &verifier.join("agent.patch"))
        .or_else(|| regular(root, &model_patch(folder)));
    // The agent's ATIF trajectory, where the agent wrote one: shown on the
    // report's transcript page, never read for a fact (read beneath the job
    // directory, through no link, like every trial file).
    let trajectory = regular(root, &folder.join("agent").join("trajectory.json"));
    let workspace = match patch {
        Some(_) => None,
        None => workspace_digest(root, &workspace_dir(folder)),
    };
    let task_name = r["task_name"].as_str().unwrap_or_default();
    // The exported verifier names the released task (its instance id) and
    // its digest; a trial without it names the task by its Harbor name.
    let task = verdict
        .as_ref()
        .and_then(|v| v["task_id"].as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| {
            task_name
                .strip_prefix("assay/")
                .unwrap_or(task_name)
                .to_owned()
        });
    let task_digest = verdict
        .as_ref()
        .and_then(|v| v["digest"].as_str())
        .map(str::to_owned);
    let info = &r["agent_info"];
    let agent = info["name"].as_str().unwrap_or("unknown").to_owned();
    let model = match &info["model_info"] {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("name").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
    .or_else(|| {
        config["agents"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["name"].as_str() == Some(&agent))
            .and_then(|a| a["model_name"].as_str())
            .map(str::to_owned)
    })
    .unwrap_or_else(|| "none".to_owned());
    let exception = r["exception_info"]["exception_type"]
        .as_str()
        .map(str::to_owned);
    let blame = exception.as_deref().map(|e| blame(e).to_owned());
    let reward = r["verifier_result"]["rewards"]["reward"].as_f64();
    let facts = facts(&r, exception.clone(), blame.as_deref());
    let trial = Trial {
        job: job.to_owned(),
        name: trial_name.to_owned(),
        task_digest,
        task_content: None,
        exception,
        blame,
        reward,
        patch_kept: patch.is_some() || workspace.is_some(),
        workspace,
        lost: None,
        blame_why: None,
    };
    Ok(ParsedSession {
        session: Session {
            id: session_id.to_owned(),
            task,
            track: None,
            agent,
            model,
            patch: patch.unwrap_or_default(),
            facts: RunFacts {
                trial: Some(trial),
                ..facts
            },
            transcript: trajectory,
        },
        file: result_path,
    })
}

/// Where a trial of a Deep-SWE task keeps the agent's diff: its
/// `pre_artifacts.sh` writes `/logs/artifacts/model.patch` in the agent's
/// container, which Harbor copies to the trial's `artifacts/`.
fn model_patch(trial: &Path) -> std::path::PathBuf {
    trial.join("artifacts").join("model.patch")
}

/// Where a trial keeps the agent's working directory when its job
/// collected it: the artifact `workspace` (`artifacts: [{source: "/app",
/// destination: "workspace"}]` in the job's config), `<trial>/artifacts/workspace`.
pub(crate) fn workspace_dir(trial: &Path) -> std::path::PathBuf {
    trial.join("artifacts").join("workspace")
}

/// The most a collected working directory may hold: its files are read to
/// be hashed, and copied into the verifier's container.
const MAX_WORKSPACE: u64 = 1 << 30;

/// The blake3 of the working directory `dir` beneath the job `root`
/// (every entry's path, mode and blake3; a symbolic link by its target),
/// when it is a directory reached through no symbolic link and holds at
/// most [`MAX_WORKSPACE`] bytes of regular files; else None (not kept).
fn workspace_digest(root: &Path, dir: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let rel = dir.strip_prefix(root).ok()?;
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        if !std::fs::symlink_metadata(&at).ok()?.is_dir() {
            return None;
        }
    }
    let mut entries = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let path = e.path();
            let meta = std::fs::symlink_metadata(&path).ok()?;
            let name = path.strip_prefix(dir).ok()?.to_string_lossy().into_owned();
            let mode = meta.permissions().mode();
            let hash = if meta.is_dir() {
                stack.push(path);
                String::new()
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).ok()?;
                blake3::hash(target.as_os_str().as_encoded_bytes())
                    .to_hex()
                    .to_string()
            } else if meta.is_file() {
                total += meta.len();
                if total > MAX_WORKSPACE {
                    return None;
                }
                let mut h = blake3::Hasher::new();
                h.update_reader(std::fs::File::open(&path).ok()?).ok()?;
                h.finalize().to_hex().to_string()
            } else {
                continue;
            };
            entries.push(format!("{name}\0{mode:o}\0{hash}"));
        }
    }
    entries.sort();
    Some(
        blake3::hash(entries.join("\n").as_bytes())
            .to_hex()
            .to_string(),
    )
}

/// What `agent_result` and the phase timings say of the agent's run.
fn facts(r: &Value, exception: Option<String>, blame: Option<&str>) -> RunFacts {
    let a = &r["agent_result"];
    let mut tokens = BTreeMap::new();
    for (kind, key) in [
        ("input", "n_input_tokens"),
        ("output", "n_output_tokens"),
        ("cache_read", "n_cache_tokens"),
    ] {
        if let Some(n) = a[key].as_u64() {
            tokens.insert(kind.to_owned(), n);
        }
    }
    let phase = &r["agent_execution"];
    let duration_ms = match (
        phase["started_at"].as_str().and_then(millis),
        phase["finished_at"].as_str().and_then(millis),
    ) {
        (Some(s), Some(f)) if f >= s => Some((f - s) as u64),
        _ => None,
    };
    RunFacts {
        tokens,
        ended: Some(exception.unwrap_or_else(|| "completed".to_owned())),
        // An infrastructure exception is the run's claim; it becomes an
        // error of the infrastructure (`is_error`) only when the job's
        // controls witness it ([`judge_exception`]).
        is_error: Some(false),
        claimed_error: (blame == Some(INFRASTRUCTURE)).then_some(true),
        duration_ms,
        reported_cost_usd: a["cost_usd"].as_f64(),
        ..RunFacts::default()
    }
}

/// Milliseconds since the epoch of an ISO 8601 UTC time (`…T01:38:41.656Z`,
/// or without a zone: Harbor writes both).
fn millis(text: &str) -> Option<i64> {
    let t = text.trim_end_matches('Z');
    let (date, time) = t.split_once('T')?;
    let mut d = date.split('-').map(str::parse::<i64>);
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut h = hms.split(':').map(str::parse::<i64>);
    let (hh, mm, ss) = (h.next()?.ok()?, h.next()?.ok()?, h.next()?.ok()?);
    let ms: i64 = format!("{frac:0<3}")[..3].parse().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + ms)
}

const AGENT: &str = "agent";
const HARNESS: &str = "harness";
const INFRASTRUCTURE: &str = "infrastructure";
const AMBIGUOUS: &str = "ambiguous";

/// Whose doing a Harbor exception is (docs/harbor.md has the table): the
/// agent's own limits and exits; the harness's environment, verifier and
/// reward file; the model API's and the network's failures; anything else
/// is ambiguous, never guessed.
pub(crate) fn blame(exception_type: &str) -> &'static str {
    const BY_AGENT: &[&str] = &[
        "AgentTimeoutError",
        "NonZeroAgentExitCodeError",
        "ContextLengthExceededError",
        "ContextWindowExceededError",
        "OutputLengthExceededError",
        "OutputTokenExceededError",
        "BudgetExceededError",
        "AgentSafetyRefusalError",
    ];
    // And every exception of [`BEFORE_THE_AGENT`].
    const BY_HARNESS: &[&str] = &[
        "RewardFileNotFoundError",
        "RewardFileEmptyError",
        "VerifierOutputParseError",
        "VerifierTimeoutError",
        "AddTestsDirError",
        "DownloadVerifierDirError",
    ];
    const BY_INFRASTRUCTURE: &[&str] = &[
        "APIError",
        "ApiError",
        "UnknownApiError",
        "APIConnectionError",
        "ApiConnectionError",
        "ApiConnectionClosedError",
        "ApiInternalServerError",
        "InternalServerError",
        "ApiOverloadedError",
        "ServiceUnavailableError",
        "RateLimitError",
        "ApiRateLimitError",
        "ApiResponseStalledError",
        "ApiUsageLimitError",
        "NetworkConnectionError",
        "AuthenticationError",
        "AgentAuthenticationError",
        "ApiKeyRejectedError",
        "MissingModelCredentialError",
        "ModelNotFoundError",
        "ApiProviderResourceNotFoundError",
        "Timeout",
    ];
    if BY_AGENT.contains(&exception_type) {
        AGENT
    } else if BY_HARNESS.contains(&exception_type) || BEFORE_THE_AGENT.contains(&exception_type) {
        HARNESS
    } else if BY_INFRASTRUCTURE.contains(&exception_type) {
        INFRASTRUCTURE
    } else {
        AMBIGUOUS
    }
}

/// Why a trial is not graded, when it is not: it kept no patch, and that
/// is not the agent's doing ([`lost`]).
pub(crate) fn not_graded_because(t: &Trial) -> Option<String> {
    if t.patch_kept {
        return None;
    }
    if let Some(lost) = &t.lost {
        return (lost.to != AGENT).then(|| format!("harbor trial {}", lost.why));
    }
    let reward = t
        .reward
        .map(|r| format!("; Harbor's reward {r} is a reading only"))
        .unwrap_or_default();
    Some(match (&t.exception, &t.blame) {
        (Some(e), Some(b)) => format!("harbor trial errored ({e}, {b}): no patch was kept{reward}"),
        _ => format!(
            "harbor trial kept no patch and no working directory (assay's exported verifier did not run, no `artifacts/model.patch` was collected, and the job collected no `artifacts/workspace`){reward}"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/sessions/fixtures/harbor-job/harbor-0.26-job"
    );

    #[test]
    fn a_real_job_is_read_trial_by_trial_with_its_plan_and_blame() {
        let dir = Path::new(JOB);
        assert!(is_job(dir));
        assert!(!is_job(dir.parent().unwrap()));
        let mut out = Vec::new();
        let job = load("jobs/j", dir, &mut out);
        assert_eq!(job.planned, 6);
        assert_eq!(job.not_ended, 0);
        assert_eq!(out.len(), 6, "one session per trial folder");
        let by_name: BTreeMap<&str, &Trial> =
            job.trials.values().map(|t| (t.name.as_str(), t)).collect();
        let good = by_name["good__kqeRkDS"];
        assert_eq!((good.exception.as_deref(), good.reward), (None, Some(1.0)));
        let noreward = by_name["noreward__Nt3sdmk"];
        assert_eq!(
            noreward.exception.as_deref(),
            Some("RewardFileNotFoundError")
        );
        assert_eq!(noreward.blame.as_deref(), Some("harness"));
        assert_eq!(noreward.reward, None);
        let slow = by_name["slow__U7fQLxT"];
        assert_eq!(slow.blame.as_deref(), Some("agent"));
        assert_eq!(slow.reward, Some(0.0), "the verifier ran after the timeout");
        for (id, _, s) in &out {
            let s = s.as_ref().unwrap();
            assert_eq!(&s.session.id, id);
            assert!(id.starts_with("jobs/j/"));
            // No assay verifier ran in this job: the task is the Harbor name.
            assert!(["good", "noreward", "slow"].contains(&s.session.task.as_str()));
            assert!(["oracle", "nop"].contains(&s.session.agent.as_str()));
            assert_eq!(s.session.model, "none");
            assert!(s.session.patch.is_empty());
            assert_eq!(s.session.facts.is_error, Some(false));
            let why = not_graded_because(s.session.facts.trial.as_ref().unwrap()).unwrap();
            assert!(why.contains("no patch"), "{why}");
        }
        let why = not_graded_because(noreward).unwrap();
        assert!(why.contains("RewardFileNotFoundError, harness"), "{why}");
    }

    /// A copy of the fixture job in a temp dir.
    fn job_copy() -> tempfile::TempDir {
        fn copy(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for e in std::fs::read_dir(from).unwrap().flatten() {
                let dest = to.join(e.file_name());
                if e.file_type().unwrap().is_dir() {
                    copy(&e.path(), &dest);
                } else {
                    std::fs::copy(e.path(), &dest).unwrap();
                }
            }
        }
        let dir = tempfile::tempdir().unwrap();
        copy(Path::new(JOB), &dir.path().join("job"));
        dir
    }

    /// A shared job directory is someone else's: a link in it to a file of
    /// this machine is never read (its bytes would reach the cache and the
    /// published report as a "patch"), and a broken trial is that trial's
    /// error alone.
    #[test]
    fn links_and_broken_trials_in_a_job_are_refused_one_by_one() {
        let dir = job_copy();
        let job = dir.path().join("job");
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "host secret\n").unwrap();
        std::os::unix::fs::symlink(&secret, job.join("good__kqeRkDS/verifier/agent.patch"))
            .unwrap();
        let linked = job.join("good__xyfiiNM/result.json");
        std::fs::remove_file(&linked).unwrap();
        std::os::unix::fs::symlink(&secret, &linked).unwrap();
        std::fs::write(job.join("slow__PGFC9Wn/result.json"), "{ not json").unwrap();
        let mut out = Vec::new();
        let plan = load("j", &job, &mut out);
        assert_eq!(out.len(), 6);
        let by_id: BTreeMap<&str, &Result<ParsedSession, Failure>> =
            out.iter().map(|(id, _, s)| (id.as_str(), s)).collect();
        let good = by_id["j/good__kqeRkDS"].as_ref().unwrap();
        assert!(good.session.patch.is_empty(), "the linked patch was read");
        assert!(!good.session.facts.trial.as_ref().unwrap().patch_kept);
        let err = by_id["j/good__xyfiiNM"].as_ref().unwrap_err();
        assert!(
            err.message.contains("is a symbolic link"),
            "{}",
            err.message
        );
        assert!(!format!("{err:?}").contains("host secret"));
        assert!(by_id["j/slow__PGFC9Wn"].is_err());
        assert_eq!(
            plan.trials.len(),
            4,
            "the readable trials are accounted for"
        );
        assert!(by_id["j/noreward__Nt3sdmk"].is_ok());
    }

    /// `t`'s lost file, judged as [`judge_losses`] does: its exception
    /// first, then the file.
    fn judged(t: &Trial, controls: &[(&str, &Trial)]) -> Option<Lost> {
        let mut t = t.clone();
        judge_exception(&mut t, controls);
        lost(&t, controls)
    }

    /// A trial that lost its patch or reward is the agent's unless the
    /// job's controls of the same task lost theirs the same way, or failed
    /// as the trial's exception says.
    #[test]
    fn a_lost_patch_or_reward_is_the_agents_unless_the_controls_lost_theirs() {
        let kept = Trial {
            name: "c".into(),
            reward: Some(1.0),
            patch_kept: true,
            ..Trial::default()
        };
        assert_eq!(judged(&kept, &[]), None);
        // `rm /usr/bin/git`: no patch, no reward, the harness's exception.
        let broken = Trial {
            name: "t".into(),
            exception: Some("RewardFileNotFoundError".into()),
            blame: Some(HARNESS.into()),
            ..Trial::default()
        };
        let l = judged(&broken, &[("oracle", &kept), ("nop", &kept)]).unwrap();
        assert_eq!(l.to, AGENT);
        assert!(
            l.why.contains("empty patch") && l.why.contains("nop and oracle"),
            "{}",
            l.why
        );
        assert_eq!(
            not_graded_because(&Trial {
                lost: Some(l),
                ..broken.clone()
            }),
            None
        );
        // No controls in the job: assay's own screening is the control.
        let l = judged(&broken, &[]).unwrap();
        assert!(l.why.contains("assay's own screening"), "{}", l.why);
        // The oracle lost its patch too: the harness's, not graded.
        let control = Trial {
            name: "o".into(),
            ..Trial::default()
        };
        let l = judged(&broken, &[("oracle", &control)]).unwrap();
        assert_eq!(l.to, HARNESS);
        assert!(l.why.contains("oracle (o)"), "{}", l.why);
        let why = not_graded_because(&Trial {
            lost: Some(l),
            ..broken.clone()
        })
        .unwrap();
        assert!(why.contains("lost theirs too"), "{why}");
        // The oracle raised the harness's exception too: it stands.
        let raised = Trial {
            name: "o".into(),
            ..broken.clone()
        };
        let l = judged(&broken, &[("oracle", &raised)]).unwrap();
        assert_eq!(l.to, HARNESS);
        assert!(
            l.why.contains("oracle (o, RewardFileNotFoundError)"),
            "{}",
            l.why
        );
        // A patch kept, the reward rewritten away: the regrade decides.
        let no_reward = Trial {
            reward: None,
            ..kept.clone()
        };
        let l = judged(&no_reward, &[("nop", &kept)]).unwrap();
        assert_eq!(l.to, AGENT);
        assert!(l.why.contains("no reward"), "{}", l.why);
        // Harbor's own `CancelledError`, raised before an agent runs, is a
        // claim like any other: the agent's beside controls that ran...
        let cancelled = Trial {
            exception: Some("CancelledError".into()),
            blame: Some(blame("CancelledError").into()),
            ..Trial::default()
        };
        let l = judged(&cancelled, &[("nop", &kept)]).unwrap();
        assert_eq!(l.to, AGENT, "{l:?}");
        assert!(l.why.contains("the job's nop trials of this task"), "{l:?}");
        // ...the harness's when a control of the task was cancelled too.
        let stopped = Trial {
            name: "n".into(),
            ..cancelled.clone()
        };
        let l = judged(&cancelled, &[("nop", &stopped)]).unwrap();
        assert_eq!(l.to, HARNESS, "{l:?}");
        assert!(l.why.contains("nop (n, CancelledError)"), "{l:?}");
    }

    /// A trial submitted with no files and Harbor's `CancelledError` beside
    /// controls of its task that ran and kept their patches was excluded
    /// as the harness's: read from a real job directory, it is the agent's
    /// failure, graded as an empty patch, and its record names the control.
    #[test]
    fn a_cancelled_trial_beside_a_control_that_ran_is_the_agents() {
        let dir = job_copy();
        let job = dir.path().join("job");
        // The controls of task `good` ran and kept their patches (the
        // no-op's empty).
        std::fs::write(job.join("good__xyfiiNM/verifier/agent.patch"), "").unwrap();
        std::fs::write(
            job.join("good__kqeRkDS/verifier/agent.patch"),
            "diff --git a/f b/f\n",
        )
        .unwrap();
        // An agent's trial of the same task: a result and nothing else.
        let mut r: Value =
            serde_json::from_slice(&std::fs::read(job.join("good__xyfiiNM/result.json")).unwrap())
                .unwrap();
        r["trial_name"] = "good__CaNcEl1".into();
        r["agent_info"]["name"] = "claude-code".into();
        r["verifier_result"] = Value::Null;
        r["exception_info"] = serde_json::json!({
            "exception_type": "CancelledError",
            "exception_message": "",
            "exception_traceback": "asyncio.exceptions.CancelledError",
        });
        let trial = job.join("good__CaNcEl1");
        std::fs::create_dir(&trial).unwrap();
        std::fs::write(trial.join("result.json"), r.to_string()).unwrap();
        let mut out = Vec::new();
        let plan = load("j", &job, &mut out);
        let t = &plan.trials["j/good__CaNcEl1"];
        assert!(!t.patch_kept, "{t:?}");
        let lost = t.lost.as_ref().unwrap();
        assert_eq!(lost.to, AGENT, "{t:#?}");
        assert_eq!(t.blame.as_deref(), Some(AGENT), "{t:#?}");
        assert!(
            t.blame_why
                .as_deref()
                .unwrap()
                .contains("the job's nop and oracle trials of this task raised none"),
            "{t:#?}"
        );
        assert_eq!(not_graded_because(t), None, "graded, as an empty patch");
        let (_, _, s) = out
            .iter()
            .find(|(id, _, _)| id == "j/good__CaNcEl1")
            .unwrap();
        assert_eq!(s.as_ref().unwrap().session.facts.is_error, Some(false));
    }

    #[test]
    fn blame_follows_the_table_and_never_guesses() {
        assert_eq!(blame("AgentTimeoutError"), "agent");
        assert_eq!(blame("RewardFileNotFoundError"), "harness");
        assert_eq!(blame("EnvironmentStartTimeoutError"), "harness");
        assert_eq!(blame("ApiRateLimitError"), "infrastructure");
        // Harbor aborting its own job is the harness's, not the endpoint's.
        assert_eq!(blame("CancelledError"), "harness");
        assert_eq!(blame("SomethingNew"), "ambiguous");
    }

    #[test]
    fn times_with_and_without_a_zone_are_read() {
        let a = millis("2026-12-02T01:38:41.656083").unwrap();
        let b = millis("2026-12-02T01:38:42.156Z").unwrap();
        assert_eq!(b - a, 500);
        assert_eq!(millis("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(millis("garbage"), None);
    }

    /// An agent's `RateLimitError` that also lost its patch: with clean
    /// controls both are the agent's (the lost patch too, graded empty);
    /// when a control of the task raised an infrastructure exception, the
    /// infrastructure's, and the lost patch is not charged.
    #[test]
    fn an_infrastructure_exception_is_the_agents_unless_a_control_raised_one() {
        let limited = Trial {
            name: "t".into(),
            exception: Some("RateLimitError".into()),
            blame: Some(blame("RateLimitError").to_owned()),
            ..Trial::default()
        };
        let clean = Trial {
            name: "o".into(),
            reward: Some(1.0),
            patch_kept: true,
            ..Trial::default()
        };
        let mut t = limited.clone();
        assert!(!judge_exception(&mut t, &[("oracle", &clean)]));
        assert_eq!(t.blame.as_deref(), Some(AGENT));
        assert_eq!(
            t.blame_why.as_deref(),
            Some(
                "RateLimitError: no control failed the same way (the job's oracle trials of \
                 this task raised none): the agent's failure, counted"
            )
        );
        assert_eq!(lost(&t, &[("oracle", &clean)]).unwrap().to, AGENT);
        let mut t = limited.clone();
        assert!(!judge_exception(&mut t, &[]));
        assert!(
            t.blame_why.as_deref().unwrap().contains("no control trial"),
            "{t:?}"
        );
        let down = Trial {
            exception: Some("ApiConnectionError".into()),
            blame: Some(INFRASTRUCTURE.into()),
            ..clean.clone()
        };
        let mut t = limited.clone();
        assert!(judge_exception(&mut t, &[("oracle", &down)]));
        assert_eq!(t.blame.as_deref(), Some(INFRASTRUCTURE));
        assert!(
            t.blame_why
                .as_deref()
                .unwrap()
                .ends_with("failed the same way: oracle (o, ApiConnectionError)"),
            "{t:?}"
        );
        assert_eq!(lost(&t, &[("oracle", &down)]).unwrap().to, INFRASTRUCTURE);
    }
}
