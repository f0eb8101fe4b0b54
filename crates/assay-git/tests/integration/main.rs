//! Integration tests on real repositories built with the git CLI.

mod agree;
mod candidates;
mod compose;
mod diff;
mod escape;
mod materialize;
mod support;
