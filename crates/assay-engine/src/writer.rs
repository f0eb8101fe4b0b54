//! Where a build's results are committed: one thread owns the index's
//! writing connection and commits whatever rows have queued up as one
//! transaction (group commit).
//!
//! A job's output is stored (a blob written, fsynced and renamed into
//! place) before its row is queued, so a crash at any instant leaves no row
//! whose blobs are missing. The scheduler does not wait for the commit to go
//! on: the node's dependents may be keyed and run while the row waits in the
//! queue, so a build of many small jobs commits thousands of rows a
//! transaction instead of one or two. The node is *reported* finished only
//! once the writer says its transaction committed ([`Committed`]), so every
//! node a killed build reported is in the index. Rows are committed in the
//! order they were queued, and a row is queued only after the rows of the
//! nodes it depends on: the index never holds a node whose executed
//! dependencies it lacks.

use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::graph::NodeId;
use crate::job::{JobError, JobFuture};
use crate::key::Digest;
use crate::store::{Blobs, FailureRow, INLINE_MAX, IndexWriter, NewRow};

/// A job's result, its output stored: output digest, bytes, duration in ms,
/// and the row to commit.
pub(crate) type Executed = (Digest, Arc<Vec<u8>>, u64, Box<NewRow>);

/// Most rows in one transaction: bounds the time a commit holds the
/// writer. Keys are random, so a transaction of thousands of rows rewrites
/// most of the table's pages (into the WAL, then the database): the more
/// rows a transaction, the fewer times each page is written. A writer that
/// falls behind therefore takes everything queued, up to this.
const BATCH_MAX: usize = 65_536;

/// How long a transaction waits for more rows after its first, when they
/// come one at a time (a build of nodes taking milliseconds each). sqlite's
/// commit walks the writer's whole page cache, which grows with the index:
/// committed a row at a time, a cold build of 30,000 sessions spends a
/// quarter of assay's own CPU there. Nothing waits on a commit but the
/// node's report (and a failure's acknowledgement).
const LINGER: Duration = Duration::from_millis(10);

pub(crate) enum WriterMsg {
    /// A node's success, acknowledged through [`Committed`].
    Row(NodeId, Box<NewRow>),
    /// A failure, acknowledged once committed.
    Failure(FailureRow, oneshot::Sender<Result<(), String>>),
}

/// The nodes whose rows one transaction committed, or why it failed.
pub(crate) type Committed = (Vec<NodeId>, Result<(), String>);

/// Owns the one writing connection; commits whatever has queued up as one
/// transaction (group commit), then acknowledges each message: rows on
/// `committed`, failures on their own channel.
pub(crate) fn spawn_writer(
    mut writer: IndexWriter,
    committed: tokio::sync::mpsc::UnboundedSender<Committed>,
) -> (mpsc::Sender<WriterMsg>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<WriterMsg>();
    let handle = std::thread::spawn(move || {
        let (mut commits, mut committed_rows) = (0u64, 0u64);
        while let Ok(first) = rx.recv() {
            let until = Instant::now() + LINGER;
            let mut batch = vec![first];
            while batch.len() < BATCH_MAX {
                // A queued row comes at once, past the deadline too.
                match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    Ok(m) => batch.push(m),
                    Err(_) => break,
                }
            }
            commits += 1;
            committed_rows += batch.len() as u64;
            let mut nodes = Vec::new();
            let mut rows = Vec::new();
            let mut fails = Vec::new();
            let mut acks = Vec::new();
            for m in batch {
                match m {
                    WriterMsg::Row(id, row) => {
                        nodes.push(id);
                        rows.push(*row);
                    }
                    WriterMsg::Failure(f, ack) => {
                        fails.push(f);
                        acks.push(ack);
                    }
                }
            }
            let result = writer.commit(&rows, &fails).map_err(|e| e.to_string());
            for ack in acks {
                let _ = ack.send(result.clone());
            }
            if !nodes.is_empty() {
                let _ = committed.send((nodes, result));
            }
        }
        if std::env::var_os("ASSAY_PHASES").is_some() && commits > 0 {
            eprintln!(
                "phase index commits: {commits} transactions, {committed_rows} rows, \
                 {:.2} s cpu",
                crate::thread_cpu_secs()
            );
        }
    });
    (tx, handle)
}

/// Runs one job and stores what it made: its output kept inline in the row
/// when small, else written as a blob; its attachments checked to exist.
/// The row is returned for the scheduler to queue for the writer.
pub(crate) async fn execute(
    fut: JobFuture,
    row: NewRow,
    blobs: Blobs,
) -> Result<Executed, JobError> {
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
            .map_err(|e| JobError::classed(JobError::CACHE, format!("storing the output: {e}")))?
            .map_err(|e| JobError::classed(JobError::CACHE, format!("storing the output: {e}")))?;
        None
    };
    for a in &out.attachments {
        if !blobs.exists(a) {
            return Err(JobError::classed(
                JobError::INTERNAL,
                format!("the job names attachment {a}, which it never stored"),
            ));
        }
    }
    let row = Box::new(NewRow {
        output,
        inline,
        attachments: out.attachments,
        duration_ms: duration_ms as i64,
        ..row
    });
    Ok((output, Arc::new(out.bytes), duration_ms, row))
}

/// Sends a failure to the writer and waits until it is committed.
pub(crate) async fn write_failure(
    writer: &mpsc::Sender<WriterMsg>,
    failure: FailureRow,
) -> Result<(), JobError> {
    let (ack, done) = oneshot::channel();
    writer
        .send(WriterMsg::Failure(failure, ack))
        .map_err(|_| JobError::classed(JobError::CACHE, "the index writer stopped"))?;
    match done.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(JobError::classed(
            JobError::CACHE,
            format!("committing to the index: {e}"),
        )),
        Err(_) => Err(JobError::classed(
            JobError::CACHE,
            "the index writer stopped",
        )),
    }
}
