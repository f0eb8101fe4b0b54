//! Audit: check a published release against the cache it came from, or
//! against a bundle of its closure exported from that cache (`bundle`).
//!
//! A release directory is verified in three layers, each naming the first
//! thing that disagrees:
//! 1. `manifest.json` itself: its `release_digest` is blake3 of the manifest
//!    with that value replaced by `""`, and every file it lists hashes to its
//!    digest;
//! 2. the release node: a release node of a recent build whose output names
//!    exactly these files' digests; its key record must hash to its key;
//! 3. every number: the release files are recomputed from the release node's
//!    inputs (tasks, sessions, grades, metrics, each read back from the cache
//!    and checked against its digest) and compared byte for byte.

pub(crate) mod bundle;
mod diff;
mod display;
mod finding;
mod hashing;
mod recompute;
mod release;

pub(crate) use display::{Entries, NodeDisplay};

pub(crate) use finding::Finding;
#[cfg(test)]
pub(crate) use release::{OnDisk, check_listed};
pub(crate) use release::{release_digest, verify_release};
