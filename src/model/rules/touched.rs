//! The test files a test patch touches (`[screen] scope = "touched-files"`,
//! SWE-bench's convention): what screening draws FAIL_TO_PASS and
//! PASS_TO_PASS from, and what a scoped graded run runs (`[env]
//! touched_command`). One matching serves both, so a scoped run runs
//! exactly the files whose tests the lists can hold:
//!
//! - a test file is a path the test patch leaves in the tree that is not a
//!   data file (SWE-bench's `NON_TEST_EXTS`: no report names a `.json` as a
//!   test's file, and no runner takes one as a test to run);
//! - for Go, a test is in a touched file when its package is the directory
//!   of a touched `_test.go` file, and the command runs those packages.
//!
//! `{files}` becomes the touched test files, `{packages}` the `./dir` of
//! each directory holding a touched `_test.go` file (`.` for the root),
//! each once and sorted, quoted for `sh` where they need to be.

use std::collections::BTreeSet;

/// Extensions of the data files a test patch may carry (fixtures, golden
/// files, configuration): SWE-bench's `NON_TEST_EXTS`.
const DATA_EXTS: &[&str] = &[
    ".json", ".png", ".csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml",
];

/// The placeholder of the touched test files.
pub(crate) const FILES: &str = "{files}";
/// The placeholder of the touched Go packages.
pub(crate) const PACKAGES: &str = "{packages}";

/// The touched test files of a test patch (module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct TouchedFiles<'a> {
    files: BTreeSet<&'a str>,
    /// Directories of touched `_test.go` files ("" for the root).
    go_dirs: BTreeSet<&'a str>,
}

impl<'a> TouchedFiles<'a> {
    /// From the paths the test patch writes (a graded tree's `hidden`, or
    /// the triage's `test_files`).
    pub(crate) fn of(paths: impl IntoIterator<Item = &'a str>) -> TouchedFiles<'a> {
        let files: BTreeSet<&str> = paths
            .into_iter()
            .filter(|p| !DATA_EXTS.iter().any(|ext| p.ends_with(ext)))
            .collect();
        let go_dirs = files
            .iter()
            .filter(|f| f.ends_with("_test.go"))
            .map(|f| f.rsplit_once('/').map_or("", |(dir, _)| dir))
            .collect();
        TouchedFiles { files, go_dirs }
    }

    /// Whether `file` (as a report names a test's file) is a touched test file.
    pub(crate) fn contains(&self, file: &str) -> bool {
        self.files.contains(file)
    }

    /// The directories of touched `_test.go` files ("" for the root).
    pub(crate) fn go_dirs(&self) -> &BTreeSet<&'a str> {
        &self.go_dirs
    }

    /// What `placeholder` becomes: `sh` words, or None when it selects
    /// nothing.
    fn words(&self, placeholder: &str) -> Option<String> {
        let words: Vec<String> = match placeholder {
            FILES => self
                .files
                .iter()
                .map(|f| crate::model::shell::word(f))
                .collect(),
            _ => self
                .go_dirs
                .iter()
                .map(|d| match *d {
                    "" => ".".to_owned(),
                    d => crate::model::shell::word(&format!("./{d}")),
                })
                .collect(),
        };
        (!words.is_empty()).then(|| words.join(" "))
    }

    /// `template` over these files (`{files}`, `{packages}`), or None when
    /// a placeholder it holds selects nothing: the run then runs the whole
    /// test command rather than a runner's idea of "no argument".
    pub(crate) fn command(&self, template: &str) -> Option<String> {
        let mut command = template.to_owned();
        for placeholder in [FILES, PACKAGES] {
            if template.contains(placeholder) {
                command = command.replace(placeholder, &self.words(placeholder)?);
            }
        }
        Some(command)
    }
}

/// What a run over a tree whose hidden test patch leaves `hidden` runs:
/// the `touched` command over the touched test files where there is one
/// and a test file to run, else `command`. Screening trees have no hidden
/// files: they run the whole suite. The graded runs and the published eval
/// script both run this.
pub(crate) fn command_over(touched: Option<&str>, command: &str, hidden: &[String]) -> String {
    touched
        .filter(|_| !hidden.is_empty())
        .and_then(|t| TouchedFiles::of(hidden.iter().map(String::as_str)).command(t))
        .unwrap_or_else(|| command.to_owned())
}

/// Why `template` cannot be a `touched_command`, if it cannot: it must
/// select the touched files (`{files}`, or `{packages}` for `go test`;
/// whether the environment's reports name Go packages is the pipeline's
/// capability check).
pub(crate) fn command_problem(template: &str) -> Option<String> {
    let (files, packages) = (template.contains(FILES), template.contains(PACKAGES));
    (!files && !packages).then(|| {
        format!(
            "the command names no touched test file: it holds neither `{FILES}` nor `{PACKAGES}`"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touched(paths: &[&'static str]) -> TouchedFiles<'static> {
        TouchedFiles::of(paths.iter().copied())
    }

    #[test]
    fn files_are_the_touched_test_files_quoted_and_without_data() {
        let t = touched(&[
            "tests/test_ops.py",
            "tests/fixtures/data.json",
            "tests/test it's.py",
            "tests/__init__.py",
        ]);
        assert_eq!(
            t.command("python3 -m unittest -v {files}").as_deref(),
            Some(
                "python3 -m unittest -v tests/__init__.py 'tests/test it'\\''s.py' tests/test_ops.py"
            )
        );
        assert!(t.contains("tests/test_ops.py"));
        assert!(!t.contains("tests/fixtures/data.json"));
        // Only data: nothing to select, the whole command runs.
        assert_eq!(
            touched(&["tests/golden.txt"]).command("pytest {files}"),
            None
        );
    }

    #[test]
    fn packages_are_the_directories_of_touched_go_test_files_once_each() {
        let t = touched(&[
            "calc_test.go",
            "sub/a_test.go",
            "sub/b_test.go",
            "sub/testdata/x.golden",
            "deep/er/c_test.go",
        ]);
        assert_eq!(
            t.command("go test -json {packages}").as_deref(),
            Some("go test -json . ./deep/er ./sub")
        );
        assert_eq!(
            touched(&["sub/testdata/in.json"]).command("go test -json {packages}"),
            None
        );
    }

    #[test]
    fn a_touched_command_must_name_what_it_runs() {
        assert_eq!(command_problem("pytest -rA {files}"), None);
        assert_eq!(command_problem("go test -json {packages}"), None);
        assert!(command_problem("pytest -rA").is_some_and(|w| w.contains("neither")));
    }
}
