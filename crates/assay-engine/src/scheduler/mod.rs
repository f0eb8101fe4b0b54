//! Runs a [`Graph`] against a [`Store`]: keys are computed in dependency order,
//! hits are verified and reused, misses execute on tokio with bounded
//! concurrency, and every success is committed before it is reported.
//!
//! A failed node fails only its dependents (they are *skipped*, naming the
//! failure); everything independent finishes and is cached. Failures are
//! recorded with their reason and never enter the success table.
//!
//! [`build`] is a loop of named steps on one `Build`: key what is ready
//! (reusing valid hits, letting a node follow another of the same key),
//! launch queued jobs, receive the next to end, then queue its row for the
//! writer (its dependents may go on at once) or propagate its failure, and
//! report the nodes whose rows a transaction committed. Committing is
//! `writer`'s. The types a build reports are in `outcome`, the key walk in
//! `keying`, the first pass over every node in `sweep`.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};

use tokio::task::JoinSet;

use crate::events::{Event, Summary, Tally};
use crate::exclusive::Held;
use crate::graph::{Graph, NodeId};
use crate::job::{JobCtx, JobError, Note, Noted, Notes};
use crate::key::{Digest, DigestMap, KeyRecord};
use crate::store::{
    FailureRow, Hits, ManifestEntryRef, ManifestWriter, NewRow, Store, StoreError, now_ms,
};
use crate::writer::{Committed, Executed, WriterMsg, execute, spawn_writer, write_failure};

mod keying;
mod outcome;
mod sweep;

use keying::{dep_outputs, load_input, record_ref};
pub(crate) use keying::{node_key, verify_hit};
use outcome::State;
pub use outcome::{BuildOptions, BuildOutcome, NodeOutcome, NodeStatus};

pub async fn build(
    store: &Store,
    graph: &Graph,
    opts: &BuildOptions,
    sink: &mut dyn FnMut(&Event),
) -> Result<BuildOutcome, StoreError> {
    let mut b = Build::start(store, graph, opts, sink)?;
    b.sweep();
    loop {
        b.key_ready();
        b.launch();
        match b.receive().await {
            None => break,
            Some(Received::Nothing) => {}
            Some(Received::Job(id, Ok(executed))) => b.stored(id, executed),
            Some(Received::Job(id, Err(e))) => b.fail(id, e).await,
            Some(Received::Committed((nodes, result))) => b.committed(nodes, result),
        }
    }
    b.finish()
}

/// What [`Build::receive`] waited for.
enum Received {
    /// A note passed on, or a task that was no job's.
    Nothing,
    /// A job ended, with what it made (its output stored) or why it failed.
    Job(NodeId, Result<Executed, JobError>),
    /// A transaction of the writer committed (or failed) these nodes' rows.
    Committed(Committed),
}

/// One build in progress: what each node has become, the queue of work and
/// the jobs in flight. [`build`] drives it in named steps — key what is
/// ready (reusing what is cached), launch queued jobs, receive a finished
/// one, then commit it or propagate its failure — until nothing is left.
struct Build<'a, 's> {
    store: &'a Store,
    graph: &'a Graph,
    opts: &'a BuildOptions,
    sink: &'s mut dyn FnMut(&Event),
    index: Hits,
    build_id: i64,
    writer: mpsc::Sender<WriterMsg>,
    writer_handle: std::thread::JoinHandle<()>,
    /// The writer's word on each transaction of rows.
    committed: tokio::sync::mpsc::UnboundedReceiver<Committed>,
    /// Executed nodes whose rows are queued but not yet committed, with
    /// how long their job ran: done for their dependents, not yet reported.
    uncommitted: HashMap<NodeId, u64>,
    /// Per node: how many dependencies are not done yet.
    waiting: Vec<usize>,
    state: Vec<State>,
    outcomes: Vec<NodeOutcome>,
    /// Nodes whose dependencies are all done, to key.
    ready: VecDeque<NodeId>,
    /// Keyed nodes that must execute, with their key record.
    to_run: VecDeque<(NodeId, KeyRecord, Digest)>,
    inflight: JoinSet<Result<Executed, JobError>>,
    /// Trivial jobs ([`Job::trivial`]) that ended as they were launched, on
    /// the build's thread: received before anything in flight.
    ended_here: VecDeque<(NodeId, Result<Executed, JobError>)>,
    /// The running jobs' notes ([`crate::Notes`]), passed on as events.
    notes: (
        tokio::sync::mpsc::UnboundedSender<Note>,
        tokio::sync::mpsc::UnboundedReceiver<Note>,
    ),
    task_node: HashMap<tokio::task::Id, NodeId>,
    summary: Summary,
    /// Identical keys in one build execute once: the first node of a key
    /// leads, the others follow it and take its result.
    leaders: DigestMap<NodeId>,
    followers: HashMap<NodeId, Vec<NodeId>>,
    held: Held,
    // Reused for every key: the hot loop of a no-op build allocates nothing.
    deps: Vec<Digest>,
    encoded: Vec<u8>,
    /// The manifest of the nodes the sweep settled, written meanwhile.
    manifest: Option<ManifestWriter>,
}

impl<'a, 's> Build<'a, 's> {
    fn start(
        store: &'a Store,
        graph: &'a Graph,
        opts: &'a BuildOptions,
        sink: &'s mut dyn FnMut(&Event),
    ) -> Result<Build<'a, 's>, StoreError> {
        let index = store.load_hits(graph.len())?;
        let build_id = store.begin_build(&opts.label)?;
        sink(&Event::BuildStarted {
            build: build_id,
            nodes: graph.len(),
        });
        let (committed_tx, committed) = tokio::sync::mpsc::unbounded_channel();
        let (writer, writer_handle) = spawn_writer(store.writer()?, committed_tx);
        let n = graph.len();
        Ok(Build {
            store,
            graph,
            opts,
            sink,
            index,
            build_id,
            writer,
            writer_handle,
            committed,
            uncommitted: HashMap::new(),
            waiting: vec![0; n],
            state: (0..n).map(|_| State::Waiting).collect(),
            outcomes: (0..n)
                .map(|_| NodeOutcome {
                    // Every node is reached (run, reused, failed or skipped)
                    // before the build ends; an empty reason keeps this
                    // placeholder free.
                    status: NodeStatus::Skipped(String::new()),
                    key: None,
                    output: None,
                    bytes: None,
                    class: None,
                })
                .collect(),
            ready: VecDeque::new(),
            to_run: VecDeque::new(),
            inflight: JoinSet::new(),
            ended_here: VecDeque::new(),
            notes: tokio::sync::mpsc::unbounded_channel(),
            task_node: HashMap::new(),
            summary: Summary::default(),
            leaders: DigestMap::default(),
            followers: HashMap::new(),
            held: Held::default(),
            deps: Vec::new(),
            encoded: Vec::new(),
            manifest: None,
        })
    }

    /// Keys every node that became ready since [`Build::sweep`].
    fn key_ready(&mut self) {
        while let Some(id) = self.ready.pop_front() {
            self.key(id, true);
        }
    }

    /// Keys node `id` if every dependency is done: a valid cache hit is
    /// reused (and its dependents released if `release`), a key another
    /// node of this build already has follows that node, the rest is queued
    /// to execute.
    fn key(&mut self, id: NodeId, release: bool) {
        if !matches!(self.state[id], State::Waiting) || self.outcomes[id].key.is_some() {
            return;
        }
        if let Some(key) = self.key_of_ready(id) {
            self.decide(id, key, release);
        }
    }

    /// Node `id`'s key if every dependency is done.
    fn key_of_ready(&mut self, id: NodeId) -> Option<Digest> {
        let state = &self.state;
        node_key(
            self.graph,
            id,
            |d| state[d].output(),
            &mut self.deps,
            &mut self.encoded,
        )
        .ok()
    }

    /// What node `id` of key `key` becomes: see [`Build::key`].
    fn decide(&mut self, id: NodeId, key: Digest, release: bool) {
        let graph = self.graph;
        let spec = graph.node(id);
        self.outcomes[id].key = Some(key);
        let reread = spec.observation && self.opts.reread.contains(&spec.kind);
        if let (false, Some(row)) = (reread, self.index.get(&key)) {
            match verify_hit(self.store, row, spec.job.as_ref()) {
                Ok(()) => {
                    self.reuse(id, row.output, None);
                    if release {
                        self.release(id);
                    }
                    return;
                }
                Err(problem) => (self.sink)(&Event::CacheRepaired {
                    name: &spec.name,
                    kind: &spec.kind,
                    key,
                    problem: &problem,
                }),
            }
        }
        if let Some(&leader) = self.leaders.get(&key) {
            match &self.state[leader] {
                // A leader's result is taken once its row is committed.
                State::Done(out, bytes) if !self.uncommitted.contains_key(&leader) => {
                    let (out, bytes) = (*out, bytes.clone());
                    self.reuse(id, out, bytes);
                    if release {
                        self.release(id);
                    }
                }
                _ => self.followers.entry(leader).or_default().push(id),
            }
            return;
        }
        self.leaders.insert(key, id);
        // The dependencies' outputs again: a sweep keys a chunk of nodes
        // before it decides any.
        let state = &self.state;
        let _ = dep_outputs(graph, id, |d| state[d].output(), &mut self.deps);
        let record = record_ref(graph, id, &self.deps).to_owned();
        self.to_run.push_back((id, record, key));
    }

    /// Starts queued jobs while `--jobs` allows and their resources are free.
    fn launch(&mut self) {
        while self.inflight.len() < self.opts.jobs.max(1) {
            let graph = self.graph;
            let Some((id, record, key)) =
                self.held
                    .take_free(graph, &mut self.to_run, |(id, _, _)| *id)
            else {
                break;
            };
            self.spawn(id, record, key);
        }
    }

    fn spawn(&mut self, id: NodeId, record: KeyRecord, key: Digest) {
        let (store, spec) = (self.store, self.graph.node(id));
        (self.sink)(&Event::NodeStarted {
            name: &spec.name,
            kind: &spec.kind,
            key,
        });
        let (ctx, input_error) = JobCtx::assemble(store, self.graph, id, key, |d| {
            let bytes = load_input(store, &self.index, &self.state, &self.outcomes, d);
            (
                self.outcomes[d].key.unwrap_or(Digest([0; 32])),
                bytes.map_err(|e| e.to_string()),
            )
        });
        let ctx = JobCtx {
            notes: Notes::of(id, self.notes.0.clone()),
            ..ctx
        };
        let fut = spec.job.run(ctx);
        let row = NewRow {
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
            build: self.build_id,
        };
        let blobs = store.blobs().clone();
        let mut task = Box::pin(async move {
            if let Some(e) = input_error {
                return Err(JobError::classed(
                    JobError::CACHE,
                    format!("cannot read an input: {e}"),
                ));
            }
            execute(fut, row, blobs).await
        });
        if spec.job.trivial() {
            // Polled here, once: a trivial job is done at its first poll.
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(result) = task.as_mut().poll(&mut cx) {
                self.ended_here.push_back((id, result));
                return;
            }
        }
        let handle = self.inflight.spawn(task);
        self.task_node.insert(handle.id(), id);
    }

    /// The next job to end and its node, with what it made, or the next
    /// transaction of the writer; `None` when nothing is in flight or
    /// waiting to be committed.
    async fn receive(&mut self) -> Option<Received> {
        // Notes come before the end of the job that sent them.
        while let Ok(note) = self.notes.1.try_recv() {
            self.note(note);
        }
        if !self.ended_here.is_empty() {
            // What has committed is reported as it commits, not after every
            // job run here.
            if !self.uncommitted.is_empty()
                && let Ok(done) = self.committed.try_recv()
            {
                return Some(Received::Committed(done));
            }
            let (id, result) = self.ended_here.pop_front()?;
            return Some(self.ended(id, result));
        }
        if self.inflight.is_empty() && self.uncommitted.is_empty() {
            return None;
        }
        let joined = tokio::select! {
            biased;
            Some(note) = self.notes.1.recv() => {
                self.note(note);
                return Some(Received::Nothing);
            }
            done = self.committed.recv(), if !self.uncommitted.is_empty() => {
                // The writer never drops its end before the build does,
                // unless its thread died: then nothing more commits.
                let stopped = || {
                    let nodes = self.uncommitted.keys().copied().collect();
                    (nodes, Err("the index writer stopped".to_owned()))
                };
                return Some(Received::Committed(done.unwrap_or_else(stopped)));
            }
            Some(joined) = self.inflight.join_next_with_id() => joined,
        };
        let (id, result) = match joined {
            Ok((tid, r)) => (self.task_node.remove(&tid), r),
            Err(e) => (
                self.task_node.remove(&e.id()),
                Err(JobError::classed(
                    JobError::INTERNAL,
                    if e.is_panic() {
                        "the job panicked".to_owned()
                    } else {
                        format!("the job was cancelled: {e}")
                    },
                )),
            ),
        };
        let Some(id) = id else {
            return Some(Received::Nothing);
        };
        Some(self.ended(id, result))
    }

    /// Job `id` ended, wherever it ran.
    fn ended(&mut self, id: NodeId, result: Result<Executed, JobError>) -> Received {
        // A job that made an output keeps its resource until its row is
        // committed (`committed`): the next job on an environment
        // starts after the last one's result is durable and reported, so
        // the events keep saying the truth about what ran at once.
        if result.is_err() {
            self.held.release(self.graph, id);
        }
        Received::Job(id, result)
    }

    fn note(&mut self, note: Note) {
        let spec = self.graph.node(note.node);
        match &note.what {
            Noted::State { state, place } => (self.sink)(&Event::JobState {
                name: &spec.name,
                kind: &spec.kind,
                state,
                place: place.as_deref(),
            }),
            Noted::Warning(message) => (self.sink)(&Event::JobWarning {
                name: &spec.name,
                kind: &spec.kind,
                message,
            }),
        }
    }

    /// A job executed and its output is stored: its row is queued for the
    /// writer, and its dependents may be ready. It is reported (and the
    /// nodes of the same key take its result) once the row is committed.
    fn stored(&mut self, id: NodeId, (output, bytes, duration_ms, row): Executed) {
        self.state[id] = State::Done(output, Some(bytes.clone()));
        self.outcomes[id].output = Some(output);
        self.outcomes[id].bytes = Some(bytes);
        if self.writer.send(WriterMsg::Row(id, row)).is_err() {
            self.held.release(self.graph, id);
            self.mark_failed(
                id,
                JobError::classed(JobError::CACHE, "the index writer stopped"),
            );
            return;
        }
        self.uncommitted.insert(id, duration_ms);
        self.release(id);
    }

    /// A transaction of the writer ended: its nodes are reported finished
    /// and the nodes of their keys take their results, or, if it failed,
    /// they fail.
    fn committed(&mut self, nodes: Vec<NodeId>, result: Result<(), String>) {
        for id in nodes {
            let Some(duration_ms) = self.uncommitted.remove(&id) else {
                continue;
            };
            self.held.release(self.graph, id);
            let spec = self.graph.node(id);
            let (output, bytes) = match (&result, &self.state[id]) {
                (Ok(()), State::Done(output, bytes)) => (*output, bytes.clone()),
                (Err(e), _) => {
                    self.fail_with_followers(
                        id,
                        JobError::classed(JobError::CACHE, format!("committing to the index: {e}")),
                    );
                    continue;
                }
                _ => continue,
            };
            self.summary.count(&spec.kind, Tally::Executed);
            self.outcomes[id].status = NodeStatus::Executed;
            let key = self.key_of(id);
            (self.sink)(&Event::NodeFinished {
                name: &spec.name,
                kind: &spec.kind,
                key,
                output,
                duration_ms,
            });
            for f in self.followers.remove(&id).unwrap_or_default() {
                self.reuse(f, output, bytes.clone());
                self.release(f);
            }
        }
    }

    /// A job failed: the failure is recorded, and it fails the nodes of the
    /// same key and skips every dependent of them.
    async fn fail(&mut self, id: NodeId, e: JobError) {
        let spec = self.graph.node(id);
        let failure = FailureRow {
            key: self.key_of(id).to_hex(),
            name: spec.name.clone(),
            kind: spec.kind.clone(),
            reason: e.message.clone(),
            class: e.class.map(str::to_owned),
            build: self.build_id,
            at_ms: now_ms(),
        };
        // Recorded when the writer still runs; the node fails either way.
        let _ = write_failure(&self.writer, failure).await;
        self.fail_with_followers(id, e);
    }

    /// Node `id` failed, and with it the nodes of its key.
    fn fail_with_followers(&mut self, id: NodeId, e: JobError) {
        let graph = self.graph;
        let name = &graph.node(id).name;
        let class = e.class;
        self.mark_failed(id, e);
        for f in self.followers.remove(&id).unwrap_or_default() {
            let why = format!("same key as `{name}`, which failed");
            self.mark_failed(
                f,
                JobError {
                    message: why,
                    class,
                },
            );
        }
    }

    /// The build's end: the index writer drained, the manifest written.
    fn finish(self) -> Result<BuildOutcome, StoreError> {
        drop(self.writer);
        let _ = self.writer_handle.join();
        let (graph, outcomes) = (self.graph, &self.outcomes);
        let mut manifest = match self.manifest {
            Some(m) => m,
            None => ManifestWriter::new(graph.len(), self.store.last_manifest()),
        };
        // The entries the sweep did not settle, encoded from borrowed parts:
        // the same bytes as a `BuildManifest`'s.
        manifest.push((manifest.entries()..graph.len()).map(|i| ManifestEntryRef {
            name: &graph.node(i).name,
            kind: &graph.node(i).kind,
            key: outcomes[i].key,
            output: outcomes[i].output,
            status: outcomes[i].status.word(),
        }));
        let summary_json = serde_json::to_string(&self.summary).unwrap_or_default();
        let manifest = self
            .store
            .finish_build(self.build_id, manifest, &summary_json)?;
        (self.sink)(&Event::Summary(&self.summary));
        Ok(BuildOutcome {
            build: self.build_id,
            summary: self.summary,
            nodes: self.outcomes,
            manifest,
        })
    }

    fn key_of(&self, id: NodeId) -> Digest {
        self.outcomes[id].key.unwrap_or(Digest([0; 32]))
    }

    /// Node `id` reached its end `state`, counted as `status`.
    fn settle(&mut self, id: NodeId, state: State, status: NodeStatus) {
        self.summary
            .count(&self.graph.node(id).kind, status.tally());
        self.state[id] = state;
        self.outcomes[id].status = status;
    }

    /// Node `id` takes `output` without executing: a valid cache hit
    /// (`bytes` unknown) or the result of the node of its key in this build.
    /// Its dependents are the caller's to release.
    fn reuse(&mut self, id: NodeId, output: Digest, bytes: Option<Arc<Vec<u8>>>) {
        let spec = self.graph.node(id);
        self.settle(id, State::Done(output, bytes.clone()), NodeStatus::Reused);
        self.outcomes[id].output = Some(output);
        self.outcomes[id].bytes = bytes;
        let key = self.key_of(id);
        (self.sink)(&Event::NodeReused {
            name: &spec.name,
            kind: &spec.kind,
            key,
            output,
        });
    }

    fn mark_failed(&mut self, id: NodeId, e: JobError) {
        let (spec, key) = (self.graph.node(id), self.key_of(id));
        (self.sink)(&Event::NodeFailed {
            name: &spec.name,
            kind: &spec.kind,
            key,
            reason: &e.message,
            class: e.class,
        });
        self.settle(id, State::Failed, NodeStatus::Failed(e.message));
        self.summary.count_class(e.class);
        self.outcomes[id].class = e.class;
        // A node whose row failed to commit had an output: it has none now.
        self.outcomes[id].output = None;
        self.outcomes[id].bytes = None;
        self.skip_descendants(id);
    }

    /// Node `id` is done: each dependent waits for one dependency less.
    fn release(&mut self, id: NodeId) {
        for &dep in self.graph.dependents(id) {
            let dep = dep as usize;
            self.waiting[dep] -= 1;
            if self.waiting[dep] == 0 {
                self.ready.push_back(dep);
            }
        }
    }

    fn skip_descendants(&mut self, failed: NodeId) {
        let graph = self.graph;
        let because = format!("`{}` failed", graph.node(failed).name);
        let mut stack: Vec<NodeId> = Vec::new();
        stack.extend(graph.dependents(failed).iter().map(|&d| d as usize));
        while let Some(id) = stack.pop() {
            // A keyed node goes on to its own end: it runs (or waits to) on
            // an output that exists, whose row failed to commit.
            if !matches!(self.state[id], State::Waiting) || self.outcomes[id].key.is_some() {
                continue;
            }
            let spec = graph.node(id);
            self.settle(id, State::Skipped, NodeStatus::Skipped(because.clone()));
            (self.sink)(&Event::NodeSkipped {
                name: &spec.name,
                kind: &spec.kind,
                because: &because,
            });
            stack.extend(graph.dependents(id).iter().map(|&d| d as usize));
        }
    }
}
