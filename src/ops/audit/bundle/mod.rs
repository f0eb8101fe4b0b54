//! Bundles: the closure of a release, checkable without the cache it came from.
//!
//! `assay export --to DIR` writes every node the last build's release node
//! depends on (transitively, by name in that build's manifest): its key
//! record, its output bytes and its attachments, plus the release files and
//! their provenance. `assay verify --bundle DIR` recomputes every key from its
//! record, every blob digest from its bytes, every link (a node's dependency
//! digest must be the output digest of the node it names) and every release
//! file from the release node's inputs, with the same pure function the
//! release job runs (`nodes::release::assemble`). Layout and checks: docs/audit.md.
//!
//! A bundle is deterministic: nodes sorted by name, JSON in one fixed
//! formatting, no timestamps, so one release exported twice, anywhere, gives
//! the same bytes.
//!
//! Modules, one concern each: `format` (`bundle.json`, `nodes.jsonl`,
//! `blobs/`, `release/`, and reading them back); `export` writes a bundle;
//! `intoto` the in-toto statement beside it; `hashing` checks the blobs;
//! `verify` checks a bundle (its difference reporting is `audit::diff`).

mod export;
mod format;
mod hashing;
mod intoto;
mod verify;

pub(crate) use export::{export, last_release};
pub(crate) use format::LOG_KINDS;
pub(crate) use verify::{BundleError, verify_bundle};
