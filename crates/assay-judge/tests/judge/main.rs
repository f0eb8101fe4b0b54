//! The judge against real HTTP servers on loopback: wiremock speaking both
//! wire formats, and (for the concurrency limit) a tiny server that counts
//! requests in flight. Nothing of the crate is mocked; only the sleeper is
//! injected, so backoff waits are observed instead of spent.

mod answers;
mod failures;
mod limits;
mod secrets;
mod support;
mod wire;
