//! A container's attached stdout and stderr, in arrival order, into one sink
//! that keeps at most `cap` bytes. The stream is drained to its end whatever
//! the cap: the daemon stops reading from a container whose attached output
//! nobody reads, and that container would look like a hang and be killed as
//! a timeout, blaming the agent for our cap.

use std::io;

use bollard::container::LogOutput;
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncWrite, AsyncWriteExt};

pub(crate) struct Captured<W> {
    pub(crate) sink: W,
    /// Bytes the container wrote, kept or not.
    pub(crate) total: u64,
    pub(crate) read_error: Option<bollard::errors::Error>,
    pub(crate) write_error: Option<io::Error>,
}

pub(crate) async fn capture<W, S>(mut output: S, mut sink: W, cap: u64) -> Captured<W>
where
    W: AsyncWrite + Unpin,
    S: Stream<Item = Result<LogOutput, bollard::errors::Error>> + Unpin,
{
    let mut total = 0u64;
    let mut read_error = None;
    let mut write_error = None;
    while let Some(frame) = output.next().await {
        let message = match frame {
            Ok(LogOutput::StdOut { message } | LogOutput::StdErr { message })
            | Ok(LogOutput::Console { message }) => message,
            Ok(LogOutput::StdIn { .. }) => continue,
            Err(error) => {
                read_error = Some(error);
                break;
            }
        };
        let room = cap.saturating_sub(total);
        let keep = usize::try_from(room).map_or(message.len(), |room| room.min(message.len()));
        total += message.len() as u64;
        if keep > 0
            && write_error.is_none()
            && let Err(error) = sink.write_all(&message[..keep]).await
        {
            write_error = Some(error);
        }
    }
    if write_error.is_none()
        && let Err(error) = sink.flush().await
    {
        write_error = Some(error);
    }
    Captured {
        sink,
        total,
        read_error,
        write_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[tokio::test]
    async fn keeps_the_first_cap_bytes_and_counts_all() {
        let frames = ["ab", "cdef", "gh"].map(|s| {
            Ok(LogOutput::StdOut {
                message: Bytes::from(s),
            })
        });
        let captured = capture(futures_util::stream::iter(frames), Vec::new(), 3).await;
        assert_eq!(captured.sink, b"abc");
        assert_eq!(captured.total, 8);
        assert!(captured.read_error.is_none() && captured.write_error.is_none());
    }
}
