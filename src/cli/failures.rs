//! What a build's failed nodes were, by kind ([`ErrorKind`]), and the exit
//! code that says so: a build whose failures are all of one kind exits with
//! that kind's code (input: 1, infrastructure: 9, config: 3, cache: 5,
//! internal: 101); failures of several kinds, or unclassified ones, exit 1.
//! Each kind is named with its count and its hint.

use std::collections::BTreeMap;

use crate::exit;
use crate::run::error::ErrorKind;

/// The failed nodes of a build, counted by kind; `unclassified` counts
/// failures whose job gave no kind.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Failures {
    by_kind: BTreeMap<ErrorKind, usize>,
    unclassified: usize,
}

/// The exit code of a failure of `kind` alone.
pub(crate) fn code_of(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::Input => exit::BUILD_FAILED,
        ErrorKind::Infrastructure => exit::INFRASTRUCTURE,
        ErrorKind::Config => exit::CONFIG,
        ErrorKind::Cache => exit::CACHE,
        ErrorKind::Internal => exit::INTERNAL,
    }
}

impl Failures {
    /// From the engine's count of failed nodes by class.
    pub(crate) fn of(by_class: &BTreeMap<String, usize>) -> Failures {
        let mut f = Failures::default();
        for (class, &n) in by_class {
            match ErrorKind::parse(class) {
                Some(kind) => *f.by_kind.entry(kind).or_default() += n,
                None => f.unclassified += n,
            }
        }
        f
    }

    /// The build's exit code: its one kind's, else [`exit::BUILD_FAILED`].
    pub(crate) fn code(&self) -> i32 {
        match (self.by_kind.len(), self.unclassified) {
            (1, 0) => self
                .by_kind
                .keys()
                .next()
                .map_or(exit::BUILD_FAILED, |&k| code_of(k)),
            _ => exit::BUILD_FAILED,
        }
    }
}

impl std::fmt::Display for Failures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let total: usize = self.by_kind.values().sum::<usize>() + self.unclassified;
        let mut parts: Vec<String> = self
            .by_kind
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        if self.unclassified > 0 {
            parts.push(format!("{} unclassified", self.unclassified));
        }
        let nodes = if total == 1 { "node" } else { "nodes" };
        write!(f, "error: {total} {nodes} failed: {}", parts.join(", "))?;
        for kind in self.by_kind.keys() {
            write!(f, "\n  {kind}: {}", kind.hint())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(pairs: &[(&str, usize)]) -> Failures {
        Failures::of(&pairs.iter().map(|(c, n)| (c.to_string(), *n)).collect())
    }

    #[test]
    fn failures_all_of_one_kind_exit_with_its_code() {
        assert_eq!(of(&[("input", 2)]).code(), exit::BUILD_FAILED);
        assert_eq!(of(&[("infrastructure", 3)]).code(), exit::INFRASTRUCTURE);
        assert_eq!(of(&[("config", 1)]).code(), exit::CONFIG);
        assert_eq!(of(&[("cache", 1)]).code(), exit::CACHE);
        assert_eq!(of(&[("internal", 1)]).code(), exit::INTERNAL);
    }

    #[test]
    fn failures_of_several_kinds_or_unclassified_exit_1() {
        assert_eq!(
            of(&[("infrastructure", 3), ("input", 1)]).code(),
            exit::BUILD_FAILED
        );
        assert_eq!(
            of(&[("infrastructure", 3), ("unclassified", 1)]).code(),
            exit::BUILD_FAILED
        );
        assert_eq!(of(&[("something new", 1)]).code(), exit::BUILD_FAILED);
    }

    #[test]
    fn the_message_names_each_kind_with_its_count_and_hint() {
        let text = of(&[("infrastructure", 2), ("input", 1)]).to_string();
        assert!(
            text.starts_with("error: 3 nodes failed: 1 input, 2 infrastructure"),
            "{text}"
        );
        assert!(text.contains(ErrorKind::Input.hint()), "{text}");
        assert!(text.contains(ErrorKind::Infrastructure.hint()), "{text}");
    }
}
