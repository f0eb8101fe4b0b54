//! `attempt`: one run of an agent assay runs itself on one task, made into
//! a session that is graded as a session file's would be. An observation
//! (an agent is not a function), keyed by the task (its record's digest),
//! the agent's settings (not how many attempts or lanes there are: adding
//! one runs only it) and the attempt's index, so a second build reuses
//! every finished attempt and an interrupted one reruns only the missing.
//!
//! The job: a workspace of the base commit ([`workspace`]), the agent's
//! command run in the sandbox with its tools read-only at `/assay/agent`,
//! the task's environment at `/assay/env`, the prompt at `/assay/in`, its
//! transcript written to `/assay/out`, and no network but the proxy to the
//! configured endpoint ([`egress`]); then the patch collected, the
//! transcript and log redacted and stored, the run facts read.
//!
//! A reward-only Harbor task (Terminal-Bench's shape) is attempted the same
//! way ([`Attempted::Harbor`]): its base is its screened image's working
//! directory (`WORKDIR`) as `git add -A` stages it, committed into assay's
//! tree store; its statement is its `instruction.md` (in the key, since its
//! screened record does not hold it); its environment is its `swe_env`
//! image, where the working directory is a link to the bound workspace.
//! Its answer is graded by the task's own verifier in a fresh container
//! (`harbor_grade`), never in the one the agent ran in.
//!
//! Whose fault a failed run is comes only from the proxy's own records
//! ([`infrastructure`]), never from the agent's files: the agent writes its
//! transcript and can write any ending into it, or none. An attempt is the
//! infrastructure's when the request it ended on got a 429/5xx or a failed
//! connection to the endpoint, or when it never had a way out (the
//! forwarder did not reach the proxy, or it sent nothing while a probe
//! found the endpoint down). Such an attempt is tried again up to `retries`
//! times; if it still fails its session says so (`is_error`), its grade is
//! the infrastructure's, and the next build tries it again (it is never a
//! cache hit). A run with no transcript, or one that ends in an API error
//! the proxy never saw, is the agent's, counted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assay_engine::JobCtx;
use assay_exec::sandbox;
use serde::{Deserialize, Serialize};

use super::adapter::{Kind, Made, NodeKind};
use super::harbor_task::HarborTaskRecord;
use crate::model::config::RunLimits;
use crate::model::config::{Confinement, ExecutorSetting, SandboxMode};
use crate::model::records::{EnvRecord, SessionRecord, TaskRecord};
use crate::pipeline::{AgentSettings, TranscriptFormat};
use crate::run::attempt::egress::{self, Endpoint, KeyHeader};
use crate::run::attempt::workspace::{self, Workspace};
use crate::run::attempt::{self as a};
use crate::run::error::{ErrorKind, Kinded, NodeError};
use crate::run::executor::{Agent, EnvHandle, Launch, agent};
use crate::run::redact::{RedactConfig, Redactor};
use crate::sessions::RunFacts;

mod reading;

use reading::{infrastructure, label_models, transcript};

pub(crate) const ATTEMPT_VERSION: u32 = 2;

/// Bytes of the agent's own output kept as the attempt's log.
const LOG_CAP: u64 = 8 << 20;

/// An attempt's key: what changes what the agent sees or does.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct AttemptParams {
    pub(crate) label: String,
    pub(crate) model: String,
    pub(crate) model_id: String,
    pub(crate) command: String,
    pub(crate) transcript: TranscriptFormat,
    pub(crate) base_url: Option<String>,
    /// The name of the variable holding the key; never its value.
    pub(crate) key_env: Option<String>,
    pub(crate) key_header: Option<KeyHeader>,
    pub(crate) time_limit: u64,
    pub(crate) turns: u32,
    pub(crate) cost_limit: f64,
    pub(crate) index: u32,
    pub(crate) preamble: &'static str,
    pub(crate) sandbox: SandboxMode,
    pub(crate) limits: RunLimits,
    pub(crate) redact: RedactConfig,
    /// A reward-only Harbor task's `instruction.md`: its statement, which
    /// its screened record (the attempt's input) does not hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instruction: Option<String>,
    /// Where it runs: left out of the key when its runs are keyed as local
    /// (local, and slurm, whose attempts run in the local sandbox on a
    /// node and see what a local attempt sees).
    #[serde(skip_serializing_if = "ExecutorSetting::keyed_as_local")]
    pub(crate) executor: ExecutorSetting,
}

impl AttemptParams {
    /// The params of attempt `index` of `agent` on a task of `env`.
    pub(crate) fn of(
        agent: &AgentSettings,
        index: u32,
        confine: &Confinement,
        redact: &RedactConfig,
    ) -> AttemptParams {
        let endpoint = agent.endpoint.as_ref();
        AttemptParams {
            label: agent.label.clone(),
            model: agent.model.clone(),
            model_id: agent.model_id.clone(),
            command: agent.command.clone(),
            transcript: agent.transcript,
            base_url: endpoint.map(|e| e.base_url.clone()),
            key_env: endpoint.and_then(|e| e.key_env.clone()),
            key_header: endpoint.map(|e| e.header),
            time_limit: agent.time_limit,
            turns: agent.turns,
            cost_limit: agent.cost_limit,
            index,
            preamble: a::PREAMBLE,
            sandbox: confine.sandbox,
            limits: confine.limits,
            redact: redact.clone(),
            instruction: None,
            executor: confine.executor.clone(),
        }
    }

    /// The confinement the attempt runs under.
    fn confinement(&self) -> Confinement {
        Confinement {
            sandbox: self.sandbox,
            limits: self.limits,
            executor: self.executor.clone(),
        }
    }
}

/// What an attempt works on: a task of assay's own (mined, or a
/// Deep-SWE-shaped Harbor task), or a reward-only Harbor task as its
/// screening recorded it.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Attempted {
    Task(Box<TaskRecord>),
    Harbor(Box<HarborTaskRecord>),
}

impl Attempted {
    /// The task's id in the release: a Harbor task's `<dataset>/<folder>`.
    fn instance_id(&self) -> String {
        match self {
            Attempted::Task(t) => t.instance_id.clone(),
            Attempted::Harbor(h) => format!("{}/{}", h.dataset, h.folder),
        }
    }

    /// Why the agent is not run on it: a task not released and certified,
    /// a Harbor task its controls did not certify.
    fn not_attempted(&self) -> Option<String> {
        match self {
            Attempted::Task(t) => {
                crate::model::rules::staging::not_graded(t).map(|why| why.to_string())
            }
            Attempted::Harbor(h) if h.certified && h.environment.image.is_some() => None,
            Attempted::Harbor(h) => Some(format!(
                "the Harbor task {} is not certified: {}",
                self.instance_id(),
                h.uncertified_because.join("; ")
            )),
        }
    }
}

super::adapter::inputs! {
    pub(crate) struct AttemptInputs / AttemptNames {
        // The task, or a reward-only Harbor task's screened record.
        task: Attempted,
        // The task's environment, read-only at /assay/env.
        env: EnvRecord,
        // The agent's own tools, read-only at /assay/agent.
        tools: EnvRecord,
    }
}

/// What an attempt made: the session (read downstream as any session's
/// record), and how the agent's run went.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct AttemptRecord {
    #[serde(flatten)]
    pub(crate) session: SessionRecord,
    /// Why the agent was not run (a task not released and certified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) skipped: Option<String>,
    pub(crate) exit_code: Option<i32>,
    pub(crate) timed_out: bool,
    pub(crate) limit: Option<String>,
    /// The agent's output (redacted), a blob.
    pub(crate) log: String,
    /// Why there is no usable transcript (the session's `transcript`, a
    /// redacted blob, when there is one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) transcript_error: Option<String>,
    /// Why the workspace could not be read back, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) collect_error: Option<String>,
    /// Every request the agent sent through the proxy.
    pub(crate) requests: Vec<egress::Request>,
    /// The proxy's record of its own health over the run: the evidence,
    /// with `requests`, of whose fault a failure is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) proxy: Option<egress::Health>,
    /// Why the infrastructure failed the attempt, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) infrastructure: Option<String>,
    /// Why each earlier try was the infrastructure's, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) retried: Vec<String>,
}

pub(crate) struct Attempt {
    pub(crate) params: AttemptParams,
    pub(crate) store_dir: PathBuf,
    /// The lane it runs in (`agent-lane:LABEL:N`): a resource held alone,
    /// so an agent's attempts run `lanes` at a time.
    pub(crate) lane: String,
    /// Tries after one the infrastructure failed.
    pub(crate) retries: u32,
    /// `agent/LABEL/TASK/N`.
    pub(crate) id: String,
    pub(crate) track: String,
    pub(crate) executors: Arc<crate::run::executor::Executors>,
}

impl Kind for Attempt {
    const NAME: &'static str = NodeKind::Attempt.as_str();
    const VERSION: u32 = ATTEMPT_VERSION;
    const OBSERVATION: bool = true;
    type Params = AttemptParams;
    type Inputs = AttemptInputs;
    type Record = AttemptRecord;

    fn params(&self) -> &AttemptParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: AttemptInputs,
        ctx: JobCtx,
    ) -> Result<Made<AttemptRecord>, NodeError> {
        attempt(&self, &i, &ctx).await
    }

    fn exclusive(&self) -> Option<&str> {
        Some(&self.lane)
    }

    /// An attempt the infrastructure failed is made again, never reused.
    fn refuse_hit(&self, output: &[u8]) -> Option<String> {
        match serde_json::from_slice::<AttemptRecord>(output) {
            Ok(r) => r.infrastructure.map(|why| {
                format!("the infrastructure failed its last try ({why}); it is tried again")
            }),
            Err(e) => Some(format!("its stored record does not read ({e})")),
        }
    }
}

/// What one try made, before it is a record.
struct Try {
    record: AttemptRecord,
    attachments: Vec<assay_engine::Digest>,
}

async fn attempt(
    node: &Attempt,
    i: &AttemptInputs,
    ctx: &JobCtx,
) -> Result<Made<AttemptRecord>, NodeError> {
    let p = &node.params;
    let session = SessionRecord {
        id: node.id.clone(),
        task: i.task.instance_id(),
        track: node.track.clone(),
        agent: p.label.clone(),
        model: p.model.clone(),
        patch: String::new(),
        facts: RunFacts::default(),
        transcript: None,
    };
    let skipped = |why: String| AttemptRecord {
        session: session.clone(),
        skipped: Some(why),
        exit_code: None,
        timed_out: false,
        limit: None,
        log: String::new(),
        transcript_error: None,
        collect_error: None,
        requests: Vec::new(),
        proxy: None,
        infrastructure: None,
        retried: Vec::new(),
    };
    if let Some(why) = i.task.not_attempted() {
        return Ok(Made::record(skipped(why)));
    }
    if !i.env.ok {
        return Ok(Made::record(skipped(
            "the task's environment did not set up".into(),
        )));
    }
    if !i.tools.ok {
        return Err(NodeError::infra(format!(
            "the tools of agent `{}` did not set up (its setup log is env:agent/{}'s)",
            p.label, p.label
        )));
    }
    if node.executors.of(&p.confinement()).sandbox() == crate::model::config::Sandbox::None {
        return Err(NodeError::new(
            ErrorKind::Config,
            "an agent never runs unsandboxed: attempts need `sandbox = \"bwrap\"`",
        ));
    }
    let env = EnvHandle::of(&i.env, &ctx.cache_dir);
    let tools_dir = EnvHandle::of(&i.tools, &ctx.cache_dir)
        .host_dir()?
        .to_owned();
    let start = start(node, &i.task, ctx).await?;
    let mut retried = Vec::new();
    loop {
        let mut one = once(node, &start, &env, &tools_dir, &session, ctx).await?;
        match &one.record.infrastructure {
            Some(why) if (retried.len() as u32) < node.retries => retried.push(why.clone()),
            _ => {
                one.record.retried = retried;
                return Ok(Made {
                    record: one.record,
                    attachments: one.attachments,
                });
            }
        }
    }
}

/// Where an attempt starts: the base commit its workspace is made of, in
/// assay's tree store, and the statement its prompt carries.
struct Start {
    base_commit: String,
    statement: String,
}

/// A task's base commit and statement; a reward-only Harbor task's base is
/// its image's working directory as `git add -A` stages it (its `.git`
/// and ignored files left out), read from a container created from the
/// image and never started, and committed into the tree store.
async fn start(node: &Attempt, task: &Attempted, ctx: &JobCtx) -> Result<Start, NodeError> {
    let harbor = match task {
        Attempted::Task(t) => {
            return Ok(Start {
                base_commit: t.base_commit.clone(),
                statement: t.problem_statement.clone(),
            });
        }
        Attempted::Harbor(h) => h,
    };
    let image = harbor
        .environment
        .image
        .as_deref()
        .ok_or_else(|| NodeError::internal("a certified Harbor task without an image"))?;
    let base_commit = crate::run::harbor::workspace::commit_working_directory(
        node.executors.daemon(),
        image,
        &ctx.cache_dir.join("tmp"),
        &node.store_dir,
    )
    .await?;
    Ok(Start {
        base_commit,
        statement: node.params.instruction.clone().unwrap_or_default(),
    })
}

/// One try: workspace, proxy, the agent's run, what it left.
async fn once(
    node: &Attempt,
    task: &Start,
    env: &EnvHandle,
    tools_dir: &Path,
    session: &SessionRecord,
    ctx: &JobCtx,
) -> Result<Try, NodeError> {
    let p = &node.params;
    let ws = {
        let (store, base, tmp) = (
            node.store_dir.clone(),
            task.base_commit.clone(),
            ctx.cache_dir.join("tmp"),
        );
        tokio::task::spawn_blocking(move || workspace::prepare(&store, &base, &tmp))
            .await
            .internal()??
    };
    std::fs::write(ws.input().join("prompt.md"), a::prompt(&task.statement)).infra()?;
    let endpoint = endpoint(p)?;
    let inside_url = endpoint
        .as_ref()
        .map(|e| format!("http://127.0.0.1:{}{}", a::PORT, e.prefix))
        .unwrap_or_default();
    let command = agent_command(p, &inside_url);
    std::fs::write(ws.input().join("command.sh"), &command).infra()?;
    let log = Arc::new(Mutex::new(egress::Log::default()));
    let endpoint = endpoint.map(Arc::new);
    let server = match &endpoint {
        None => None,
        Some(endpoint) => {
            let listener = tokio::net::UnixListener::bind(ws.socket()).infra()?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(ws.socket(), std::fs::Permissions::from_mode(0o777))
                .infra()?;
            Some(tokio::spawn(egress::serve(
                listener,
                endpoint.clone(),
                log.clone(),
            )))
        }
    };
    let confine = p.confinement();
    let dir = ws.dir();
    let launch = launch(p, &ws, &dir, env, tools_dir, server.is_some(), &inside_url)?;
    let ran = node.executors.of(&confine).attempt(launch, ctx).await;
    if let Some(server) = server {
        server.abort();
    }
    let ran = ran?;
    let (requests, proxy) = {
        let log = log.lock().unwrap_or_else(|p| p.into_inner());
        (log.requests.clone(), log.health.clone())
    };
    let proxy = match &endpoint {
        None => None,
        // A run that sent nothing: was there anything to reach?
        Some(e) if requests.is_empty() => Some(egress::Health {
            probe: Some(egress::probe(e).await),
            ..proxy
        }),
        Some(_) => Some(proxy),
    };
    let (ws, patch, collect_error, patch_refused) =
        collect(node, ws, ran.workspace_refused.clone()).await?;
    let mut redact = p.redact.clone();
    redact.env.extend(p.key_env.clone());
    let redactor = Redactor::new(&redact);
    // A secret that reached the agent is no part of its answer: the stored
    // patch, and its digest, are of the redacted bytes.
    let (patch, patch_redacted) = Redactor::values(&redact).redact(&patch);
    // The agent chose the paths it asked for: redacted like its log.
    let requests: Vec<egress::Request> = requests
        .into_iter()
        .map(|mut r| {
            r.path = String::from_utf8_lossy(&redactor.redact(r.path.as_bytes()).0).into_owned();
            r
        })
        .collect();
    let mut attachments = Vec::new();
    let mut put = |bytes: &[u8]| -> Result<String, NodeError> {
        let d = ctx.blobs.put(bytes).cache()?;
        attachments.push(d);
        Ok(d.to_hex())
    };
    let patch_digest = if patch.is_empty() {
        String::new()
    } else {
        put(&patch)?
    };
    let (log, _) = redactor.redact(&std::fs::read(ws.log()).unwrap_or_default());
    let log = put(&log)?;
    let (mut facts, transcript, transcript_error) =
        transcript(p.transcript, &ws, &redactor, &mut put)?;
    label_models(&mut facts, &p.model_id, &p.model);
    facts.patch_refused = patch_refused;
    facts.patch_redacted = (patch_redacted > 0).then_some(patch_redacted);
    if facts.duration_ms.is_none() {
        facts.duration_ms = Some(ran.duration.as_millis() as u64);
    }
    let limit = ran.limit.map(|l| l.as_str().to_owned());
    if ran.timed_out {
        facts.ended = Some("time_limit".into());
    } else if let Some(l) = &limit {
        facts.ended = Some(format!("limit:{l}"));
    }
    // An executor that lost the run (its cluster node died) is the
    // infrastructure's word too: assay's own observation, not the agent's.
    let infrastructure = ran
        .lost
        .clone()
        .or_else(|| proxy.as_ref().and_then(|h| infrastructure(&requests, h)));
    // What the transcript claims stays in `ended` and `claimed_error`;
    // only the proxy's word makes the run an error of the infrastructure.
    facts.is_error = Some(infrastructure.is_some());
    if ran.exit_code == Some(127) && infrastructure.is_none() && facts.turns.is_none() {
        return Err(NodeError::new(
            ErrorKind::Config,
            format!(
                "the agent's command was not found (exit 127): is it installed in its tools (`setup`) or on PATH? Its output: {}",
                String::from_utf8_lossy(&std::fs::read(ws.log()).unwrap_or_default()).trim()
            ),
        ));
    }
    Ok(Try {
        record: AttemptRecord {
            session: SessionRecord {
                patch: patch_digest,
                facts,
                transcript,
                ..session.clone()
            },
            skipped: None,
            exit_code: ran.exit_code,
            timed_out: ran.timed_out,
            limit,
            log,
            transcript_error,
            collect_error,
            requests,
            proxy,
            infrastructure,
            retried: Vec::new(),
        },
        attachments,
    })
}

/// The agent's command with its placeholders filled: where the prompt,
/// transcript and workspace are inside the sandbox, the model, the proxy's
/// URL and the limits.
fn agent_command(p: &AttemptParams, inside_url: &str) -> String {
    a::fill(
        &p.command,
        &[
            ("prompt_file", format!("{}/prompt.md", a::IN)),
            ("transcript", format!("{}/transcript", a::OUT)),
            ("workspace", sandbox::TREE.to_owned()),
            ("model_id", p.model_id.clone()),
            ("base_url", inside_url.to_owned()),
            ("turns", p.turns.to_string()),
            ("time_limit", p.time_limit.to_string()),
            ("cost_limit", p.cost_limit.to_string()),
            ("agent_env", a::AGENT_AT.to_owned()),
        ],
    )
}

/// The endpoint the attempt's proxy forwards to, with its key from
/// assay's environment and the secrets to redact; none without a
/// `base_url`. A key variable that is not set is a config error.
fn endpoint(p: &AttemptParams) -> Result<Option<Endpoint>, NodeError> {
    Ok(match &p.base_url {
        None => None,
        Some(url) => {
            let key = match p.key_env.as_deref() {
                None => None,
                Some(var) => match std::env::var(var) {
                    Ok(k) if !k.is_empty() => Some(k),
                    // Not the agent's doing, and not worth an attempt: the
                    // endpoint would refuse every request.
                    _ => {
                        return Err(NodeError::new(
                            ErrorKind::Config,
                            format!(
                                "`{var}` (key_env of agent `{}`) is not set in assay's environment: export the endpoint's key there (the agent never sees it)",
                                p.label
                            ),
                        ));
                    }
                },
            };
            let mut endpoint =
                Endpoint::parse(url, key, p.key_header.unwrap_or(KeyHeader::Authorization))
                    .kind(ErrorKind::Config)?;
            endpoint.secrets = p
                .redact
                .env
                .iter()
                .filter_map(|name| std::env::var(name).ok())
                .filter(|v| v.len() >= 4)
                .collect();
            Some(endpoint)
        }
    })
}

/// The patch the agent left in its workspace (collected off the async
/// runtime), or why none was: refused where it ran (`refused`), or not
/// collectable; the workspace back, and the refusal again for the facts.
async fn collect(
    node: &Attempt,
    ws: Workspace,
    refused: Option<String>,
) -> Result<(Workspace, Vec<u8>, Option<String>, Option<String>), NodeError> {
    let (ws, collected) = {
        let (store, write_limit) = (node.store_dir.clone(), node.params.limits.write);
        tokio::task::spawn_blocking(move || {
            let collected = match refused {
                // Refused where it ran: nothing of it came back.
                Some(why) => Err(workspace::Uncollected::Refused(why)),
                None => workspace::collect(&store, &ws, write_limit, workspace::READ_BACK_LIMIT),
            };
            (ws, collected)
        })
        .await
        .internal()?
    };
    Ok(match collected {
        Ok(patch) => (ws, patch, None, None),
        Err(workspace::Uncollected::Refused(why)) => (ws, Vec::new(), Some(why.clone()), Some(why)),
        Err(workspace::Uncollected::Failed(why)) => (ws, Vec::new(), Some(why), None),
    })
}

/// The sandboxed process of a try, as its executor is handed it: the
/// workspace as its tree, the task's environment, and the agent's binds
/// and variables.
fn launch<'a>(
    p: &AttemptParams,
    ws: &Workspace,
    dir: &'a Path,
    env: &'a EnvHandle,
    tools_dir: &Path,
    proxy: bool,
    inside_url: &str,
) -> Result<Launch<'a>, NodeError> {
    let mut vars = BTreeMap::new();
    vars.insert("ASSAY_AGENT".to_owned(), a::AGENT_AT.to_owned());
    if proxy {
        vars.insert("ASSAY_BASE_URL".to_owned(), inside_url.to_owned());
    }
    if let Some(var) = &p.key_env {
        vars.insert(var.clone(), a::PLACEHOLDER.to_owned());
    }
    let mounts = agent::Mounts {
        input: ws.input(),
        out: ws.output(),
        tools: tools_dir.to_owned(),
        socket: proxy.then(|| ws.socket()),
    };
    let agent = Agent {
        path_first: format!("{}/bin", a::AGENT_AT),
        env: vars,
        binds: mounts.binds().map_err(NodeError::infra)?,
    };
    Ok(agent::launch(
        agent::command(proxy),
        dir,
        env,
        (ws.log(), LOG_CAP),
        Duration::from_secs(p.time_limit),
        agent,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_attempt_is_keyed_without_its_executor_and_a_docker_one_with_it() {
        let agent = AgentSettings {
            label: "a".into(),
            model: "m".into(),
            model_id: "m".into(),
            command: "true".into(),
            setup: Vec::new(),
            transcript: TranscriptFormat::None,
            endpoint: None,
            attempts: 1,
            lanes: 1,
            time_limit: 60,
            turns: 10,
            cost_limit: 1.0,
            retries: 0,
            tracks: Vec::new(),
        };
        let on = |executor| {
            let confine = Confinement {
                executor,
                ..Confinement::default()
            };
            serde_json::to_value(AttemptParams::of(
                &agent,
                0,
                &confine,
                &RedactConfig::default(),
            ))
            .unwrap_or_default()
        };
        let local = on(ExecutorSetting::Local);
        assert!(local.get("executor").is_none(), "{local}");
        assert_eq!(local["sandbox"], "bwrap");
        let docker = on(ExecutorSetting::Docker(
            crate::model::config::DockerSettings {
                base_image: "assay-base:bookworm".into(),
                cpu_millis: None,
                on_cluster: None,
            },
        ));
        assert_eq!(
            docker["executor"]["docker"]["base_image"],
            "assay-base:bookworm"
        );
        let mut without = docker.clone();
        if let Some(o) = without.as_object_mut() {
            o.remove("executor");
        }
        assert_eq!(without, local);
    }

    #[test]
    fn the_model_under_test_is_named_by_its_label_in_the_facts() {
        let mut facts = RunFacts {
            models: vec![
                "openai/gpt-4.1-mini".into(),
                "gpt-4.1-mini-2025-04-14".into(),
                "claude-haiku".into(),
            ],
            ..RunFacts::default()
        };
        facts.by_model.insert(
            "gpt-4.1-mini-2025-04-14".into(),
            [("input".to_owned(), 5)].into(),
        );
        facts.by_model.insert(
            "openai/gpt-4.1-mini".into(),
            [("input".to_owned(), 2)].into(),
        );
        facts
            .by_model
            .insert("claude-haiku".into(), [("output".to_owned(), 1)].into());
        label_models(&mut facts, "gpt-4.1-mini", "model-a");
        assert_eq!(facts.models, ["model-a", "claude-haiku"]);
        assert_eq!(facts.by_model["model-a"]["input"], 7);
        assert_eq!(facts.by_model.len(), 2);
    }

    #[test]
    fn the_infrastructure_is_blamed_on_the_proxys_word_only() {
        let answered = |status: u16| egress::Request {
            status: Some(status),
            ..Default::default()
        };
        let up = egress::Health {
            forwarder_up: true,
            ..Default::default()
        };
        let probed = |p: bool| egress::Health {
            probe: Some(egress::Probe {
                up: p,
                status: None,
                upstream: (!p).then_some(egress::Upstream::Refused),
            }),
            ..up.clone()
        };
        // Clean records: the agent's, whatever its transcript says.
        assert_eq!(infrastructure(&[answered(200)], &up), None);
        assert_eq!(infrastructure(&[answered(400)], &up), None);
        // The run ended on a 429/5xx or a failed connection.
        let why = infrastructure(&[answered(200), answered(429)], &up).unwrap();
        assert!(why.contains("status 429"), "{why}");
        assert!(infrastructure(&[answered(500)], &up).is_some());
        let refused = egress::Request {
            upstream: Some(egress::Upstream::Refused),
            error: Some("the endpoint did not answer: connection refused".into()),
            ..Default::default()
        };
        let why = infrastructure(&[refused], &up).unwrap();
        assert!(
            why.contains("refused: the endpoint did not answer"),
            "{why}"
        );
        // A 429 the agent got past is not what ended it.
        assert_eq!(infrastructure(&[answered(429), answered(200)], &up), None);
        // A request the proxy refused is the agent's own.
        let denied = egress::Request {
            status: None,
            error: Some("refused: not the configured endpoint".into()),
            ..Default::default()
        };
        assert_eq!(infrastructure(&[answered(503), denied], &up), None);
        // Nothing sent: the agent's while everything was up...
        assert_eq!(infrastructure(&[], &probed(true)), None);
        // ...the infrastructure's when the endpoint was down or the
        // forwarder never reached the proxy.
        let why = infrastructure(&[], &probed(false)).unwrap();
        assert!(
            why.contains("endpoint was down") && why.contains("refused"),
            "{why}"
        );
        let why = infrastructure(&[], &egress::Health::default()).unwrap();
        assert!(why.contains("never ran"), "{why}");
    }
}
