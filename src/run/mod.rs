//! The run: what executes a command and reads what it left — the
//! executors (local, docker, slurm) behind one service, agent attempts and
//! their relay, apps, the import guard, redaction, SWE-bench's files and the
//! container side of Harbor and Deep-SWE tasks. Below the node kinds: a kind
//! asks this layer to run, and this layer knows no kind.

pub(crate) mod app;
pub(crate) mod attempt;
pub(crate) mod error;
pub(crate) mod executor;
pub(crate) mod guard;
pub(crate) mod harbor;
pub(crate) mod phase;
pub(crate) mod provenance;
pub(crate) mod redact;
pub(crate) mod swebench;

use assay_engine::Digest;

/// What a run of a kind made: its record and the blobs the record names.
pub(crate) struct Made<R> {
    pub(crate) record: R,
    pub(crate) attachments: Vec<Digest>,
}

impl<R> Made<R> {
    pub(crate) fn record(record: R) -> Made<R> {
        Made {
            record,
            attachments: Vec::new(),
        }
    }
}

/// 32 bytes from the kernel's random source: canary names no patch can
/// know in advance.
pub(crate) fn fresh_seed() -> [u8; 32] {
    use std::io::Read;
    let mut seed = [0u8; 32];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut seed));
    if read.is_err() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        seed = *blake3::hash(format!("{now}:{}", std::process::id()).as_bytes()).as_bytes();
    }
    seed
}
