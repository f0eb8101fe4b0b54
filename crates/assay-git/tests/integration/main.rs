//! Integration tests on real repositories built with the git CLI.

mod candidates;
mod compose;
mod diff;
mod escape;
mod materialize;
mod support;
