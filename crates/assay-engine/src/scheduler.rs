//! Runs a [`Graph`] against a [`Store`]: keys are computed in dependency order,
//! hits are verified and reused, misses execute on tokio with bounded
//! concurrency, and every success is committed before it is reported.
//!
//! A failed node fails only its dependents (they are *skipped*, naming the
//! failure); everything independent finishes and is cached. Failures are
//! recorded with their reason and never enter the success table.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::events::{Event, Summary};
use crate::exclusive::Held;
use crate::graph::{Graph, NodeId};
use crate::key::{Digest, DigestMap, KeyRecord, KeyRecordRef, SCHEMA_VERSION};
use crate::store::{
    Blobs, BuildManifest, BuildManifestRef, FailureRow, INLINE_MAX, IndexRow, IndexWriter,
    ManifestEntryRef, NewRow, Store, StoreError, now_ms,
};

pub type JobFuture = Pin<Box<dyn Future<Output = Result<Output, JobError>> + Send>>;

/// One stage's work. Implementations must be pure functions of the key's
/// inputs, except nodes marked `observation` (test runs), which are reused
/// until explicitly re-read.
pub trait Job: Send + Sync {
    fn run(&self, ctx: JobCtx) -> JobFuture;

    /// Extra check of a cache hit, e.g. that a directory named by the output
    /// still exists. A `false` turns the hit into a miss.
    fn hit_valid(&self, _output: &[u8]) -> bool {
        true
    }

    /// A resource this job must hold alone (e.g. a shared mutable directory).
    /// The scheduler never runs two jobs holding the same resource at once,
    /// and a job waiting for one does not occupy a `--jobs` slot: other ready
    /// work runs instead.
    fn exclusive(&self) -> Option<&str> {
        None
    }
}

/// What a job gets: its key, its dependencies' outputs (declared order), and
/// the blob store for attachments (logs, reports).
pub struct JobCtx {
    pub name: String,
    pub key: Digest,
    pub inputs: Vec<Arc<Vec<u8>>>,
    /// The dependencies' node keys, same order (a released task's digest is its key).
    pub input_keys: Vec<Digest>,
    pub blobs: Blobs,
    pub cache_dir: PathBuf,
}

impl JobCtx {
    /// The context of node `id` under `key`: each dependency's key and output
    /// as `input_of` finds them (the one assembly of build and recheck),
    /// with why the first unreadable input could not be read.
    pub(crate) fn assemble(
        store: &Store,
        graph: &Graph,
        id: NodeId,
        key: Digest,
        mut input_of: impl FnMut(NodeId) -> (Digest, Result<Arc<Vec<u8>>, String>),
    ) -> (JobCtx, Option<String>) {
        let deps = &graph.deps[id];
        let mut inputs = Vec::with_capacity(deps.len());
        let mut input_keys = Vec::with_capacity(deps.len());
        let mut unreadable = None;
        for &d in deps {
            let (dkey, bytes) = input_of(d);
            input_keys.push(dkey);
            match bytes {
                Ok(b) => inputs.push(b),
                Err(e) => {
                    unreadable.get_or_insert(e);
                }
            }
        }
        let ctx = JobCtx {
            name: graph.node(id).name.clone(),
            key,
            inputs,
            input_keys,
            blobs: store.blobs().clone(),
            cache_dir: store.dir().to_owned(),
        };
        (ctx, unreadable)
    }
}

/// A job's result: the output record and the blobs it references.
#[derive(Debug, Default)]
pub struct Output {
    pub bytes: Vec<u8>,
    pub attachments: Vec<Digest>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct JobError(pub String);

impl JobError {
    pub fn new(msg: impl Into<String>) -> JobError {
        JobError(msg.into())
    }
}

pub struct BuildOptions {
    pub jobs: usize,
    /// Observation kinds to re-execute even when cached.
    pub reread: BTreeSet<String>,
    pub label: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeStatus {
    Executed,
    Reused,
    Failed(String),
    Skipped(String),
}

impl NodeStatus {
    fn word(&self) -> &'static str {
        match self {
            NodeStatus::Executed => "executed",
            NodeStatus::Reused => "reused",
            NodeStatus::Failed(_) => "failed",
            NodeStatus::Skipped(_) => "skipped",
        }
    }
}

#[derive(Clone, Debug)]
pub struct NodeOutcome {
    pub status: NodeStatus,
    pub key: Option<Digest>,
    pub output: Option<Digest>,
    bytes: Option<Arc<Vec<u8>>>,
}

pub struct BuildOutcome {
    pub build: i64,
    pub summary: Summary,
    pub nodes: Vec<NodeOutcome>,
    pub manifest: Digest,
}

impl BuildOutcome {
    /// The output bytes of a node that succeeded (executed or reused).
    pub fn output(&self, store: &Store, id: NodeId) -> Result<Option<Arc<Vec<u8>>>, StoreError> {
        let n = &self.nodes[id];
        if let Some(b) = &n.bytes {
            return Ok(Some(b.clone()));
        }
        match n.output {
            None => Ok(None),
            Some(out) => match &n.key {
                Some(key) => match store.key_record(key)? {
                    Some((_, _, row)) => Ok(Some(Arc::new(store.output_bytes(&row)?))),
                    None => Ok(Some(Arc::new(store.blobs().get(&out)?))),
                },
                None => Ok(None),
            },
        }
    }
}

struct WriterMsg {
    row: Option<NewRow>,
    failure: Option<FailureRow>,
    ack: oneshot::Sender<Result<(), String>>,
}

/// Owns the one writing connection; commits whatever has queued up as one
/// transaction (group commit), then acknowledges each message.
fn spawn_writer(mut writer: IndexWriter) -> (mpsc::Sender<WriterMsg>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<WriterMsg>();
    let handle = std::thread::spawn(move || {
        while let Ok(first) = rx.recv() {
            let mut batch = vec![first];
            while batch.len() < 4096 {
                match rx.try_recv() {
                    Ok(m) => batch.push(m),
                    Err(_) => break,
                }
            }
            let rows: Vec<NewRow> = batch.iter_mut().filter_map(|m| m.row.take()).collect();
            let fails: Vec<FailureRow> =
                batch.iter_mut().filter_map(|m| m.failure.take()).collect();
            let result = writer.commit(&rows, &fails).map_err(|e| e.to_string());
            for m in batch {
                let _ = m.ack.send(result.clone());
            }
        }
    });
    (tx, handle)
}

/// A job's committed result: output digest, bytes, duration in ms.
type Executed = (Digest, Arc<Vec<u8>>, u64);

enum State {
    Waiting,
    Done(Digest, Option<Arc<Vec<u8>>>),
    Failed,
    Skipped,
}

/// A node's key from its dependencies' outputs as `output_of` finds them, or
/// the first dependency that has none: the one key walk of build, plan and
/// recheck. `deps` is left holding the outputs; it and `buf` are reused from
/// node to node, so computing a key allocates nothing.
pub(crate) fn node_key(
    graph: &Graph,
    id: NodeId,
    output_of: impl Fn(NodeId) -> Option<Digest>,
    deps: &mut Vec<Digest>,
    buf: &mut Vec<u8>,
) -> Result<Digest, NodeId> {
    deps.clear();
    for &d in &graph.deps[id] {
        deps.push(output_of(d).ok_or(d)?);
    }
    Ok(record_ref(graph, id, deps).key_with(buf))
}

fn record_ref<'a>(graph: &'a Graph, id: NodeId, deps: &'a [Digest]) -> KeyRecordRef<'a> {
    let spec = graph.node(id);
    KeyRecordRef {
        schema: SCHEMA_VERSION,
        kind: &spec.kind,
        kind_version: spec.kind_version,
        params: &spec.params,
        deps,
    }
}

/// Checks a hit: output and attachments present and hashing to their digests.
fn verify_hit(store: &Store, row: &IndexRow, job: &dyn crate::Job) -> Result<(), String> {
    // Inline outputs (most of a no-op build) are checked in place, not copied.
    let blob;
    let bytes: &[u8] = match &row.inline {
        Some(inline) => {
            let actual = Digest::of(inline);
            if actual != row.output {
                return Err(StoreError::CorruptBlob {
                    digest: row.output,
                    actual,
                }
                .to_string());
            }
            inline
        }
        None => {
            blob = store.blobs().get(&row.output).map_err(|e| e.to_string())?;
            &blob
        }
    };
    for a in &row.attachments {
        store.blobs().get(a).map_err(|e| e.to_string())?;
    }
    if !job.hit_valid(bytes) {
        return Err("the stage rejected its cached output (an artifact it names is gone)".into());
    }
    Ok(())
}

pub async fn build(
    store: &Store,
    graph: &Graph,
    opts: &BuildOptions,
    sink: &mut dyn FnMut(&Event),
) -> Result<BuildOutcome, StoreError> {
    let index = store.load_index_sized(graph.len())?;
    let build_id = store.begin_build(&opts.label)?;
    sink(&Event::BuildStarted {
        build: build_id,
        nodes: graph.len(),
    });
    let (writer_tx, writer_handle) = spawn_writer(store.writer()?);

    let n = graph.len();
    let mut waiting: Vec<usize> = graph.deps.iter().map(Vec::len).collect();
    let mut state: Vec<State> = (0..n).map(|_| State::Waiting).collect();
    let mut outcomes: Vec<NodeOutcome> = (0..n)
        .map(|_| NodeOutcome {
            // Every node is reached (run, reused, failed or skipped) before
            // the build ends; an empty reason keeps this placeholder free.
            status: NodeStatus::Skipped(String::new()),
            key: None,
            output: None,
            bytes: None,
        })
        .collect();
    let mut ready: VecDeque<NodeId> = graph
        .order
        .iter()
        .copied()
        .filter(|&i| waiting[i] == 0)
        .collect();
    let mut to_run: VecDeque<(NodeId, KeyRecord, Digest)> = VecDeque::new();
    let mut inflight: JoinSet<Result<Executed, JobError>> = JoinSet::new();
    let mut task_node: HashMap<tokio::task::Id, NodeId> = HashMap::new();
    let mut summary = Summary::default();
    let jobs = opts.jobs.max(1);
    let mut leaders: DigestMap<NodeId> = DigestMap::default();
    // Reused for every key: the hot loop of a no-op build allocates nothing.
    let mut deps: Vec<Digest> = Vec::new();
    let mut encoded: Vec<u8> = Vec::new();
    let mut followers: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    let mut held = Held::default();

    loop {
        while let Some(id) = ready.pop_front() {
            if !matches!(state[id], State::Waiting) {
                continue;
            }
            let done = |d: NodeId| match &state[d] {
                State::Done(out, _) => Some(*out),
                _ => None,
            };
            // A node is ready only once every dependency is done.
            let Ok(key) = node_key(graph, id, done, &mut deps, &mut encoded) else {
                continue;
            };
            let spec = graph.node(id);
            outcomes[id].key = Some(key);
            let reread = spec.observation && opts.reread.contains(&spec.kind);
            if let (false, Some(row)) = (reread, index.get(&key)) {
                match verify_hit(store, row, spec.job.as_ref()) {
                    Ok(()) => {
                        state[id] = State::Done(row.output, None);
                        outcomes[id].status = NodeStatus::Reused;
                        outcomes[id].output = Some(row.output);
                        summary.count(&spec.kind, "reused");
                        sink(&Event::NodeReused {
                            name: &spec.name,
                            kind: &spec.kind,
                            key,
                            output: row.output,
                        });
                        release(graph, id, &mut waiting, &mut ready);
                        continue;
                    }
                    Err(problem) => sink(&Event::CacheRepaired {
                        name: &spec.name,
                        kind: &spec.kind,
                        key,
                        problem: &problem,
                    }),
                }
            }
            // Identical keys in one build (identical trees, say) execute once.
            if let Some(&leader) = leaders.get(&key) {
                match &state[leader] {
                    State::Done(out, bytes) => {
                        let (out, bytes) = (*out, bytes.clone());
                        follow(
                            graph,
                            id,
                            out,
                            bytes,
                            &mut state,
                            &mut outcomes,
                            &mut summary,
                            sink,
                        );
                        release(graph, id, &mut waiting, &mut ready);
                    }
                    _ => followers.entry(leader).or_default().push(id),
                }
                continue;
            }
            leaders.insert(key, id);
            to_run.push_back((id, record_ref(graph, id, &deps).to_owned(), key));
        }

        while inflight.len() < jobs {
            let Some((id, record, key)) = held.take_free(graph, &mut to_run, |(id, _, _)| *id)
            else {
                break;
            };
            let spec = graph.node(id);
            sink(&Event::NodeStarted {
                name: &spec.name,
                kind: &spec.kind,
                key,
            });
            let (ctx, input_error) = JobCtx::assemble(store, graph, id, key, |d| {
                let bytes = load_input(store, &index, &state, &outcomes, d);
                (
                    outcomes[d].key.unwrap_or(Digest([0; 32])),
                    bytes.map_err(|e| e.to_string()),
                )
            });
            let fut = spec.job.run(ctx);
            let row_base = NewRow {
                key,
                record,
                params_json: format!(
                    "{{\"params\":{},\"deps\":{}}}",
                    if spec.params_json.is_empty() {
                        "null"
                    } else {
                        &spec.params_json
                    },
                    serde_json::to_string(&spec.deps).unwrap_or_default()
                ),
                name: spec.name.clone(),
                output: Digest([0; 32]),
                inline: None,
                attachments: Vec::new(),
                started_ms: now_ms(),
                duration_ms: 0,
                build: build_id,
            };
            let writer = writer_tx.clone();
            let blobs = store.blobs().clone();
            let handle = inflight.spawn(async move {
                if let Some(e) = input_error {
                    return Err(JobError(format!("cannot read an input: {e}")));
                }
                let started = Instant::now();
                let out = fut.await?;
                let duration_ms = started.elapsed().as_millis() as u64;
                let output = Digest::of(&out.bytes);
                let inline = if out.bytes.len() <= INLINE_MAX {
                    Some(out.bytes.clone())
                } else {
                    let bytes = out.bytes.clone();
                    let blobs = blobs.clone();
                    tokio::task::spawn_blocking(move || blobs.put(&bytes))
                        .await
                        .map_err(|e| JobError(format!("storing the output: {e}")))?
                        .map_err(|e| JobError(format!("storing the output: {e}")))?;
                    None
                };
                for a in &out.attachments {
                    if !blobs.exists(a) {
                        return Err(JobError(format!(
                            "the job names attachment {a}, which it never stored"
                        )));
                    }
                }
                let row = NewRow {
                    output,
                    inline,
                    attachments: out.attachments,
                    duration_ms: duration_ms as i64,
                    ..row_base
                };
                let (ack, done) = oneshot::channel();
                writer
                    .send(WriterMsg {
                        row: Some(row),
                        failure: None,
                        ack,
                    })
                    .map_err(|_| JobError("the index writer stopped".into()))?;
                match done.await {
                    Ok(Ok(())) => Ok((output, Arc::new(out.bytes), duration_ms)),
                    Ok(Err(e)) => Err(JobError(format!("committing to the index: {e}"))),
                    Err(_) => Err(JobError("the index writer stopped".into())),
                }
            });
            task_node.insert(handle.id(), id);
        }

        let Some(joined) = inflight.join_next_with_id().await else {
            break;
        };
        let (id, result) = match joined {
            Ok((tid, r)) => (task_node.remove(&tid), r),
            Err(e) => (
                task_node.remove(&e.id()),
                Err(JobError(if e.is_panic() {
                    "the job panicked".to_owned()
                } else {
                    format!("the job was cancelled: {e}")
                })),
            ),
        };
        let Some(id) = id else { continue };
        held.release(graph, id);
        let spec = graph.node(id);
        let key = outcomes[id].key.unwrap_or(Digest([0; 32]));
        match result {
            Ok((output, bytes, duration_ms)) => {
                state[id] = State::Done(output, Some(bytes.clone()));
                outcomes[id].status = NodeStatus::Executed;
                outcomes[id].output = Some(output);
                outcomes[id].bytes = Some(bytes);
                summary.count(&spec.kind, "executed");
                sink(&Event::NodeFinished {
                    name: &spec.name,
                    kind: &spec.kind,
                    key,
                    output,
                    duration_ms,
                });
                release(graph, id, &mut waiting, &mut ready);
                for f in followers.remove(&id).unwrap_or_default() {
                    follow(
                        graph,
                        f,
                        output,
                        outcomes[id].bytes.clone(),
                        &mut state,
                        &mut outcomes,
                        &mut summary,
                        sink,
                    );
                    release(graph, f, &mut waiting, &mut ready);
                }
            }
            Err(JobError(reason)) => {
                let (ack, done) = oneshot::channel();
                let failure = FailureRow {
                    key: key.to_hex(),
                    name: spec.name.clone(),
                    kind: spec.kind.clone(),
                    reason: reason.clone(),
                    build: build_id,
                    at_ms: now_ms(),
                };
                if writer_tx
                    .send(WriterMsg {
                        row: None,
                        failure: Some(failure),
                        ack,
                    })
                    .is_ok()
                {
                    let _ = done.await;
                }
                state[id] = State::Failed;
                outcomes[id].status = NodeStatus::Failed(reason.clone());
                summary.count(&spec.kind, "failed");
                sink(&Event::NodeFailed {
                    name: &spec.name,
                    kind: &spec.kind,
                    key,
                    reason: &reason,
                });
                skip_descendants(graph, id, &mut state, &mut outcomes, &mut summary, sink);
                for f in followers.remove(&id).unwrap_or_default() {
                    let fspec = graph.node(f);
                    let reason = format!("same key as `{}`, which failed", spec.name);
                    state[f] = State::Failed;
                    summary.count(&fspec.kind, "failed");
                    sink(&Event::NodeFailed {
                        name: &fspec.name,
                        kind: &fspec.kind,
                        key,
                        reason: &reason,
                    });
                    outcomes[f].status = NodeStatus::Failed(reason);
                    skip_descendants(graph, f, &mut state, &mut outcomes, &mut summary, sink);
                }
            }
        }
    }
    drop(writer_tx);
    let _ = writer_handle.join();

    // The manifest is encoded from borrowed entries: same bytes as a
    // `BuildManifest`, without copying every node's name and kind.
    let entries: Vec<ManifestEntryRef<'_>> = (0..n)
        .map(|i| ManifestEntryRef {
            name: &graph.node(i).name,
            kind: &graph.node(i).kind,
            key: outcomes[i].key,
            output: outcomes[i].output,
            status: outcomes[i].status.word(),
        })
        .collect();
    let summary_json = serde_json::to_string(&summary).unwrap_or_default();
    let manifest = store.finish_build(
        build_id,
        &crate::key::encode_params(&BuildManifestRef { entries }),
        &summary_json,
    )?;
    sink(&Event::Summary(&summary));
    Ok(BuildOutcome {
        build: build_id,
        summary,
        nodes: outcomes,
        manifest,
    })
}

/// A node whose key another node of this build computed: it takes that result.
#[allow(clippy::too_many_arguments)]
fn follow(
    graph: &Graph,
    id: NodeId,
    output: Digest,
    bytes: Option<Arc<Vec<u8>>>,
    state: &mut [State],
    outcomes: &mut [NodeOutcome],
    summary: &mut Summary,
    sink: &mut dyn FnMut(&Event),
) {
    let spec = graph.node(id);
    state[id] = State::Done(output, bytes.clone());
    outcomes[id].status = NodeStatus::Reused;
    outcomes[id].output = Some(output);
    outcomes[id].bytes = bytes;
    summary.count(&spec.kind, "reused");
    sink(&Event::NodeReused {
        name: &spec.name,
        kind: &spec.kind,
        key: outcomes[id].key.unwrap_or(Digest([0; 32])),
        output,
    });
}

fn release(graph: &Graph, id: NodeId, waiting: &mut [usize], ready: &mut VecDeque<NodeId>) {
    for &dep in &graph.dependents[id] {
        waiting[dep] -= 1;
        if waiting[dep] == 0 {
            ready.push_back(dep);
        }
    }
}

fn skip_descendants(
    graph: &Graph,
    failed: NodeId,
    state: &mut [State],
    outcomes: &mut [NodeOutcome],
    summary: &mut Summary,
    sink: &mut dyn FnMut(&Event),
) {
    let because = format!("`{}` failed", graph.node(failed).name);
    let mut stack: Vec<NodeId> = graph.dependents[failed].clone();
    while let Some(id) = stack.pop() {
        if !matches!(state[id], State::Waiting) {
            continue;
        }
        state[id] = State::Skipped;
        outcomes[id].status = NodeStatus::Skipped(because.clone());
        let spec = graph.node(id);
        summary.count(&spec.kind, "skipped");
        sink(&Event::NodeSkipped {
            name: &spec.name,
            kind: &spec.kind,
            because: &because,
        });
        stack.extend(graph.dependents[id].iter().copied());
    }
}

fn load_input(
    store: &Store,
    index: &DigestMap<IndexRow>,
    state: &[State],
    outcomes: &[NodeOutcome],
    dep: NodeId,
) -> Result<Arc<Vec<u8>>, StoreError> {
    if let State::Done(_, Some(bytes)) = &state[dep] {
        return Ok(bytes.clone());
    }
    let key = outcomes[dep].key.unwrap_or(Digest([0; 32]));
    match index.get(&key) {
        Some(row) => Ok(Arc::new(store.output_bytes(row)?)),
        None => Err(StoreError::MissingBlob {
            digest: outcomes[dep].output.unwrap_or(Digest([0; 32])),
        }),
    }
}

/// What `assay plan` shows for one node.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlanEntry {
    pub name: String,
    pub kind: String,
    pub key: Option<String>,
    #[serde(flatten)]
    pub state: PlanState,
}

#[derive(Clone, Debug, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PlanState {
    /// Cached and valid: would be reused.
    Cached,
    /// Would execute, and why.
    Run { reason: String },
    /// Its key depends on an output that does not exist yet.
    Blocked { on: String },
}

/// Decides, without running anything, what a build would do.
pub fn plan(
    store: &Store,
    graph: &Graph,
    reread: &BTreeSet<String>,
    previous: Option<&BuildManifest>,
) -> Result<Vec<PlanEntry>, StoreError> {
    let index = store.load_index_sized(graph.len())?;
    let n = graph.len();
    let mut outputs: Vec<Option<Digest>> = vec![None; n];
    let mut blocked_on: Vec<Option<String>> = vec![None; n];
    let mut entries: Vec<Option<PlanEntry>> = (0..n).map(|_| None).collect();
    let mut deps = Vec::new();
    let mut encoded = Vec::new();
    let previous_by_name: HashMap<&str, &crate::store::ManifestEntry> = previous
        .map(|m| m.entries.iter().map(|e| (e.name.as_str(), e)).collect())
        .unwrap_or_default();
    for &id in &graph.order {
        let spec = graph.node(id);
        let entry = match node_key(graph, id, |d| outputs[d], &mut deps, &mut encoded) {
            Err(d) => {
                let on = blocked_on[d]
                    .clone()
                    .unwrap_or_else(|| graph.node(d).name.clone());
                blocked_on[id] = Some(on.clone());
                PlanEntry {
                    name: spec.name.clone(),
                    kind: spec.kind.clone(),
                    key: None,
                    state: PlanState::Blocked { on },
                }
            }
            Ok(key) => {
                let prev = previous_by_name.get(spec.name.as_str()).copied();
                let reread_it = spec.observation && reread.contains(&spec.kind);
                let state = match index.get(&key) {
                Some(row) if !reread_it => match verify_hit(store, row, spec.job.as_ref()) {
                    Ok(()) => {
                        outputs[id] = Some(row.output);
                        PlanState::Cached
                    }
                    Err(p) => PlanState::Run {
                        reason: format!("cached result unusable: {p}"),
                    },
                },
                Some(_) => PlanState::Run {
                    reason: "--reread asks to observe it again".into(),
                },
                None => PlanState::Run {
                    reason: match prev.and_then(|p| p.key) {
                        None => "new node".into(),
                        Some(k) if k == key => {
                            "same key as last build, but not cached (it failed or was collected)"
                                .into()
                        }
                        Some(_) => {
                            "its key changed since the last build (see `assay explain`)".into()
                        }
                    },
                },
            };
                PlanEntry {
                    name: spec.name.clone(),
                    kind: spec.kind.clone(),
                    key: Some(key.to_hex()),
                    state,
                }
            }
        };
        if !matches!(entry.state, PlanState::Cached) && blocked_on[id].is_none() {
            blocked_on[id] = Some(spec.name.clone());
        }
        entries[id] = Some(entry);
    }
    Ok(entries.into_iter().flatten().collect())
}
