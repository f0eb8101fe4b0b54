//! Drain the child's merged stdout/stderr pipe into the log file, keeping at
//! most `cap` bytes and counting everything.

use std::io;
use std::time::Duration;

use tokio::fs::File;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdout;
use tokio::sync::oneshot;

/// How long to keep reading after the group is gone. Data still buffered in
/// the pipe is read at once; only a process that escaped the group (and kept
/// the pipe open) makes us wait this long for an end of file.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

pub(crate) struct Captured {
    /// Bytes read from the pipe, kept in the log or not.
    pub(crate) total: u64,
    pub(crate) read_error: Option<io::Error>,
    pub(crate) write_error: Option<io::Error>,
}

/// Read `pipe` to its end, or until [`DRAIN_GRACE`] after `supervision_ended`
/// resolves (sent or dropped). Writes the first `cap` bytes to `log`.
///
/// A failing log write stops writing but not reading: the child must never
/// block on a full pipe because of us.
pub(crate) async fn capture(
    mut pipe: ChildStdout,
    mut log: File,
    cap: u64,
    supervision_ended: oneshot::Receiver<()>,
) -> Captured {
    let give_up = async {
        // Ok or Err (sender dropped): either way supervision is over.
        let _ = supervision_ended.await;
        tokio::time::sleep(DRAIN_GRACE).await;
    };
    tokio::pin!(give_up);

    let mut buf = vec![0_u8; 64 * 1024];
    let mut captured = Captured {
        total: 0,
        read_error: None,
        write_error: None,
    };
    let mut written: u64 = 0;
    loop {
        let read = tokio::select! {
            // An escapee that writes without pause would keep the read branch
            // ready forever: the deadline must win.
            biased;
            () = &mut give_up => break,
            read = pipe.read(&mut buf) => read,
        };
        let n = match read {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                captured.read_error = Some(e);
                break;
            }
        };
        captured.total += n as u64;
        if captured.write_error.is_none() && written < cap {
            let keep = usize::try_from(cap - written).map_or(n, |room| room.min(n));
            match log.write_all(&buf[..keep]).await {
                Ok(()) => written += keep as u64,
                Err(e) => captured.write_error = Some(e),
            }
        }
    }
    // tokio's File completes writes in the background: flush to know they
    // landed before the caller reads the log.
    if captured.write_error.is_none()
        && let Err(e) = log.flush().await
    {
        captured.write_error = Some(e);
    }
    captured
}
