//! What assay can do with a report format beyond reading its outcomes: one
//! [`Capabilities`] row per format, written out in [`Format::capabilities`]
//! with no catch-all arm, so a new format does not compile until its row
//! says what it supports. Callers read the row and never match on formats:
//! selecting tests by the files a test patch touches, planting canaries,
//! naming a SWE-bench log parser, finding a test's build unit.
//!
//! Some capabilities a pipeline's settings ask for (`[screen] scope =
//! "touched-files"` needs [`TestFile`], a `touched_command` over
//! `{packages}` needs [`TestFile::GoPackage`]): the pipeline checks them when
//! it loads. The others are optional: a format without built-in
//! [`Canaries`] is not forgery-checked unless the pipeline writes its own
//! (`[env] canary`), one without a SWE-bench parser keeps assay's test ids
//! in `tasks.jsonl`.

use crate::Format;

/// One format's row: what its reports say and what assay does with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// How a test's id is built.
    pub ids: IdShape,
    /// What a report says of the file a test lives in.
    pub test_file: TestFile,
    /// The hidden test files assay plants its own canaries in; `None`: a
    /// run carries only the pipeline's `[env] canary`, if any.
    pub canaries: Option<Canaries>,
    /// The runner behind the format stops at its first failing test binary
    /// unless its command carries a flag: without it a canary that must
    /// fail would keep the real tests from running, so the run gets none.
    pub keep_going: Option<KeepGoing>,
    /// The SWE-bench log parser (a `PARSER_REGISTRY` name) that reads this
    /// format's log, whose keys the published test ids follow.
    pub swebench_parser: Option<&'static str>,
}

/// How a format builds a test's canonical id: what [`crate::unit_of`],
/// [`crate::selector`] and [`crate::doctest_item`] take apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdShape {
    /// `example.com/calc.TestDiv/by_zero`: the Go package, then the test
    /// and its subtests.
    GoPackage,
    /// `tests/test_x.py::T::test_a[1]`: a pytest node id.
    PytestNode,
    /// `tests.test_x.T.test_a`: the dotted module, class(es) and method.
    UnittestDotted,
    /// `test/a.test.js > group > title`: the file, then the titles.
    TitlePath,
    /// Whatever the producer wrote (JUnit, CTRF): a Go converter's
    /// `package.TestXxx` names its package; any other id no unit.
    Converted,
    /// `tests::adds`, and doctests `src/lib.rs - add (line 3)`, whose stable
    /// id drops the line annotation and whose selector ends before it.
    Libtest,
    /// The runner's description of a test point, no unit in it.
    Plain,
}

/// What a report says of the file a test lives in
/// ([`crate::TestResult::file`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestFile {
    /// Nothing: tests cannot be selected by the files a patch touches.
    None,
    /// The test file's path, relative to the tree.
    Path,
    /// The Go package of the test's `_test.go` file: its directory is what
    /// a touched file selects, and a command runs it as `{packages}`.
    GoPackage,
}

impl TestFile {
    /// Whether a test can be told to be in a given file (screening's
    /// `touched-files` scope).
    pub fn names_files(self) -> bool {
        match self {
            TestFile::None => false,
            TestFile::Path | TestFile::GoPackage => true,
        }
    }
}

/// The test files assay plants its own canaries in, by the framework their
/// tests are written for (docs/security.md, "Canaries").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Canaries {
    /// `unittest.TestCase` classes in `test*.py` and `*_test.py` files.
    Unittest,
    /// pytest tests in `test*.py` and `*_test.py` files.
    Pytest,
    /// `func TestXxx(t *testing.T)` in `_test.go` files.
    Go,
    /// `#[test]` functions in `.rs` files.
    Rust,
    /// `it` / `test` calls in JavaScript and TypeScript test files.
    Js,
}

/// A runner that stops at its first failing test binary unless its command
/// carries `flag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepGoing {
    /// The runner, as a user types it (`cargo test`).
    pub runner: &'static str,
    pub flag: &'static str,
}

impl Format {
    /// The formats whose row has `has` (for a hint naming the alternatives).
    pub fn with(has: impl Fn(&Capabilities) -> bool) -> Vec<Format> {
        Format::ALL
            .into_iter()
            .filter(|f| has(&f.capabilities()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_packages_are_both_the_file_and_the_head_of_the_id() {
        for format in Format::ALL {
            let row = format.capabilities();
            assert_eq!(
                row.test_file == TestFile::GoPackage,
                row.ids == IdShape::GoPackage,
                "{format}"
            );
        }
    }

    #[test]
    fn a_runner_told_to_keep_going_is_one_assay_plants_canaries_for() {
        for format in Format::ALL {
            let row = format.capabilities();
            if let Some(k) = row.keep_going {
                assert!(row.canaries.is_some(), "{format}");
                assert!(k.flag.starts_with("--"), "{format}");
            }
        }
    }

    #[test]
    fn the_rows_say_which_formats_lack_what() {
        let names = |fs: Vec<Format>| fs.iter().map(|f| f.as_str()).collect::<Vec<_>>();
        assert_eq!(
            names(Format::with(|c| !c.test_file.names_files())),
            ["libtest", "libtest-json", "tap"]
        );
        assert_eq!(
            names(Format::with(|c| c.canaries.is_none())),
            ["tap", "ctrf", "ctrf-suite"]
        );
        assert_eq!(
            names(Format::with(|c| c.swebench_parser.is_some())),
            ["pytest", "unittest"]
        );
        assert_eq!(
            names(Format::with(|c| c.test_file == TestFile::GoPackage)),
            ["go-test-json"]
        );
    }
}
