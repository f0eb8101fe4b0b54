//! `assay show`: decode any record or blob in the cache by digest.

use assay_engine::{BuildManifest, Digest};
use clap::Args;

use super::explain::{find_key, node_key, not_found};
use super::shared::{Failure, Global};
use crate::exit;
use crate::pipeline::Pipeline;

/// Print a cached node's output, or any blob, decoded (JSON pretty-printed, text as is; on a
/// terminal without its escape sequences and control characters).
#[derive(Args, Debug)]
pub(crate) struct ShowArgs {
    /// A node name from the last build (as `assay plan --all` or `assay build --json` print it), a
    /// node key, an output digest or a blob digest (64 hex digits; a unique key prefix will do).
    digest: String,
    /// Print the raw bytes.
    #[arg(long)]
    raw: bool,
}

pub(crate) fn run(global: &Global, args: ShowArgs) -> Result<i32, Failure> {
    let pipeline = Pipeline::load(&global.pipeline).ok();
    let store = global.open_store(pipeline.as_ref())?;
    let key = match node_key(&store, &args.digest)? {
        Some(key) => Some(key),
        None => find_key(&store, &args.digest)?,
    };
    let bytes = if let Some(key) = key {
        match store.key_record(&key).map_err(Failure::cache)? {
            Some((_, _, row)) => store.output_bytes(&row).map_err(Failure::cache)?,
            None => return Err(not_found(&args.digest)),
        }
    } else {
        let digest: Digest = args.digest.parse().map_err(|_| not_found(&args.digest))?;
        match store.blobs().get(&digest) {
            Ok(b) => b,
            Err(assay_engine::StoreError::MissingBlob { .. }) => store
                .inline_output(&digest)
                .map_err(Failure::cache)?
                .ok_or_else(|| not_found(&args.digest))?,
            Err(other) => return Err(Failure::cache(other)),
        }
    };
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if args.raw {
        let _ = out.write_all(&bytes);
    } else if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&v).unwrap_or_default()
        );
    } else if let Some(m) = BuildManifest::decode(&bytes).filter(|m| !m.entries.is_empty()) {
        for e in m.entries {
            let _ = writeln!(
                out,
                "{:9} {:40} key {}",
                e.status,
                e.name,
                e.key.map(|k| k.to_hex()).unwrap_or_default()
            );
        }
    } else if let Ok(text) = std::str::from_utf8(&bytes) {
        // A log or a patch holds what graded code or an agent wrote: on a
        // terminal, its escapes (a title, the clipboard, a line erased)
        // and control characters are taken out; into a pipe or a file it
        // goes as stored.
        if std::io::IsTerminal::is_terminal(&out) {
            let _ = out.write_all(crate::model::shown::clean(text).as_bytes());
        } else {
            let _ = out.write_all(text.as_bytes());
        }
    } else {
        let _ = writeln!(out, "{} bytes of binary data (use --raw)", bytes.len());
    }
    Ok(exit::OK)
}
