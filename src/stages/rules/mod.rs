//! The benchmark's rules, apart from its I/O: what grading leaves out of a
//! session patch and resets to the test patch's version ([`policy`]), what
//! makes a patch a tamper suspect ([`tamper`]), the verdict ([`verdict`]),
//! what a grade keeps of its logs and how it reruns ([`grading`]), the
//! screening reduction ([`screening`]), what a tree is composed of
//! ([`staging`]), the shape of a graded patch ([`shape`]), a quality metric's findings
//! ([`quality`]), why a run hit a
//! limit ([`limits`]), the released task ([`task`]), the reasons a task
//! is lost along the funnel ([`funnel`]), the test files a test patch
//! touches ([`touched`]), the workspace packages a tree rebuilds before
//! its tests ([`rebuild`]) and words quoted for `sh` ([`shell`]).
//!
//! **Invariant: nothing here does I/O.** No tokio, no filesystem, no process,
//! no engine (`assay_engine`), no blob store: every function takes the
//! bytes and records it decides on and returns what it decided, so each rule
//! is unit-tested in memory. The node kinds in `nodes/` are the adapters:
//! they decode their inputs, fetch blobs or run processes, call a rule and
//! store what it returns. The rules may read the records (`records`) and the
//! canaries (`canary`, pure too), and parse patches (`assay_git`'s pure
//! patch reader) and reports (`assay_report`).
//!
//! Whatever a rule returns that a record stores keeps the record's bytes:
//! enums here serialize as the words the records always held.

// No node lays out app tasks: their rules are exercised by their tests.
#[allow(dead_code)]
pub(crate) mod app;
pub(crate) mod funnel;
pub(crate) mod grading;
pub(crate) mod limits;
pub(crate) mod policy;
pub(crate) mod quality;
pub(crate) mod rebuild;
pub(crate) mod screening;
pub(crate) mod shape;
pub(crate) mod shell;
pub(crate) mod staging;
pub(crate) mod tamper;
pub(crate) mod task;
pub(crate) mod timeout;
pub(crate) mod touched;
pub(crate) mod verdict;

use super::{canary, records};

#[cfg(test)]
mod tests {
    /// Every rule's source, before its tests.
    const RULES: &[(&str, &str)] = &[
        ("app.rs", include_str!("app.rs")),
        ("funnel.rs", include_str!("funnel.rs")),
        ("grading.rs", include_str!("grading.rs")),
        ("limits.rs", include_str!("limits.rs")),
        ("policy.rs", include_str!("policy.rs")),
        ("quality.rs", include_str!("quality.rs")),
        ("rebuild.rs", include_str!("rebuild.rs")),
        ("screening.rs", include_str!("screening.rs")),
        ("shape.rs", include_str!("shape.rs")),
        ("staging.rs", include_str!("staging.rs")),
        ("tamper.rs", include_str!("tamper.rs")),
        ("tamper/native.rs", include_str!("tamper/native.rs")),
        ("task.rs", include_str!("task.rs")),
        ("verdict.rs", include_str!("verdict.rs")),
        ("mod.rs", include_str!("mod.rs")),
    ];

    /// The module's invariant, checked where it is written: no rule names
    /// an I/O crate, module or type (the adapters in `nodes/` do the I/O).
    #[test]
    fn no_rule_does_io() {
        let forbidden = [
            "tokio",
            "std::fs",
            "std::process",
            "std::net",
            "assay_engine",
            "assay_exec::",
            "assay_docker",
            "JobCtx",
            "TreeStore",
            "Source::open",
            "super::nodes",
            "super::confine",
            "super::executor",
        ];
        for (file, source) in RULES {
            let code = source.split("#[cfg(test)]").next().unwrap_or(source);
            let code: String = code
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            for word in forbidden {
                assert!(!code.contains(word), "rules/{file} names `{word}`");
            }
        }
    }
}
