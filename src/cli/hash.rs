//! `assay hash`: the blake3 digest of files, as the cache names blobs.
//!
//! Handy to find a file's blob (`cache/blobs/ab/cdef…`) or check one by hand,
//! and the entry point of `benches/hash-vs-b3sum.sh`. Output matches `b3sum`.

use std::io::Write;
use std::path::PathBuf;

use assay_engine::Digest;
use clap::Args;

use super::shared::{Failure, Global};
use crate::exit;

/// Print the blake3 digest of each file (`-` is stdin), in `b3sum`'s format.
#[derive(Args, Debug)]
pub(crate) struct HashArgs {
    /// Files to hash; `-` reads stdin.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

pub(crate) fn run(_global: &Global, args: HashArgs) -> Result<i32, Failure> {
    let mut out = std::io::stdout().lock();
    for file in &args.files {
        let digest = if file.as_os_str() == "-" {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)
                .map(|_| Digest::of(&bytes))
        } else {
            Digest::of_file(file)
        }
        .map_err(|e| {
            Failure::new(
                exit::NOT_FOUND,
                miette::miette!("cannot read {}: {e}", file.display()),
            )
        })?;
        let _ = writeln!(out, "{digest}  {}", file.display());
    }
    Ok(exit::OK)
}
