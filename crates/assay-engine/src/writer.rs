//! Where a build's results are committed: one thread owns the index's
//! writing connection and commits whatever has queued up as one transaction
//! (group commit); a job's output is stored before its row is sent, and the
//! job counts as done only once the writer acknowledges the commit. So a
//! crash at any instant leaves no row whose blobs are missing.

use std::sync::{Arc, mpsc};
use std::time::Instant;

use tokio::sync::oneshot;

use crate::job::{JobError, JobFuture};
use crate::key::Digest;
use crate::store::{Blobs, FailureRow, INLINE_MAX, IndexWriter, NewRow};

/// A job's committed result: output digest, bytes, duration in ms.
pub(crate) type Executed = (Digest, Arc<Vec<u8>>, u64);

pub(crate) struct WriterMsg {
    row: Option<NewRow>,
    failure: Option<FailureRow>,
    ack: oneshot::Sender<Result<(), String>>,
}

/// Owns the one writing connection; commits whatever has queued up as one
/// transaction (group commit), then acknowledges each message.
pub(crate) fn spawn_writer(
    mut writer: IndexWriter,
) -> (mpsc::Sender<WriterMsg>, std::thread::JoinHandle<()>) {
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

/// Runs one job and commits what it made: its output stored (inline in the
/// index when small), its attachments checked to exist, its row committed
/// by the writer. A job's success is reported only once it is committed.
pub(crate) async fn execute(
    fut: JobFuture,
    row: NewRow,
    writer: mpsc::Sender<WriterMsg>,
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
        ..row
    };
    write(&writer, Some(row), None).await?;
    Ok((output, Arc::new(out.bytes), duration_ms))
}

/// Sends a row (or a failure) to the writer and waits until it is committed.
pub(crate) async fn write(
    writer: &mpsc::Sender<WriterMsg>,
    row: Option<NewRow>,
    failure: Option<FailureRow>,
) -> Result<(), JobError> {
    let (ack, done) = oneshot::channel();
    writer
        .send(WriterMsg { row, failure, ack })
        .map_err(|_| JobError("the index writer stopped".into()))?;
    match done.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(JobError(format!("committing to the index: {e}"))),
        Err(_) => Err(JobError("the index writer stopped".into())),
    }
}
