//! Tamper suspects (docs/verdicts.md, "Tamper suspects"): what in a graded
//! patch or its runs looks like an attempt on the verifier rather than on
//! the task. Each suspect is listed on the grade; one *in effect* in the
//! graded arm keeps the grade from passing ([`verdict`](super::verdict)).
//!
//! The patch is walked as `git apply` reads it, each hunk by its counts
//! ([`assay_git::parse_patch`]): an added line shaped like a diff header is
//! content, never the start of another file. Compiled languages get static
//! flags of their own ([`native`]): constructs that let a Rust or Go patch
//! rewrite what the test runner reports, in effect unless the pipeline
//! allows the rule for the task with a reason.

mod native;

use std::collections::BTreeSet;

use assay_git::parse_patch;
use globset::GlobSet;

use super::policy::{infra_globset, is_infra};
pub(crate) use crate::model::config::Allowance;

/// Lines a patch adds outside test files that reach into the test
/// framework: importing it, subclassing or patching its classes, defining
/// its hooks, or ending the process at import time.
const FRAMEWORK_REACH: &[&str] = &[
    r"^\s*(import|from)\s+(unittest|pytest|_pytest|nose2?|doctest)\b",
    r"\b(TestCase|TestResult|TextTestRunner|TestLoader|_callTestMethod|addSuccess|addFailure|addError)\b",
    r"^\s*def\s+pytest_\w+",
    r"^(os\._exit|sys\.exit|exit|quit)\s*\(",
];

/// The tamper suspects of a graded patch, and whether any of them was in
/// effect in this arm (then the grade is never `resolved`):
/// - it touches test infrastructure (in effect unless this arm excluded it);
/// - its non-test code reaches into the test framework (always in effect);
/// - its Rust or Go code (test files the arm kept too) holds a construct a
///   static flag names (in effect unless `allowed` names the flag's rule:
///   then listed with the pipeline's reason);
/// - test files changed during the run (always in effect).
pub(crate) fn tamper_suspects(
    patch: &[u8],
    excluded: &[String],
    tests: &GlobSet,
    changed_test_files: &[String],
    allowed: &[Allowance],
) -> (Vec<String>, bool) {
    let infra = infra_globset();
    static REACH: std::sync::LazyLock<Vec<regex::Regex>> = std::sync::LazyLock::new(|| {
        FRAMEWORK_REACH
            .iter()
            .filter_map(|r| regex::Regex::new(r).ok())
            .collect()
    });
    let reach = &*REACH;
    let excluded: BTreeSet<&str> = excluded.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    let mut in_effect = false;
    // The sections as git applies them; the added lines of each, walked by
    // its hunks' counts (a line shaped like a header is content).
    let files = if patch.iter().all(u8::is_ascii_whitespace) {
        Vec::new()
    } else {
        parse_patch(patch).unwrap_or_default()
    };
    for f in &files {
        let neutralised = excluded.contains(f.path.path.as_str());
        for written in f.path.written().filter(|w| is_infra(w, tests, infra)) {
            in_effect |= !neutralised;
            out.push(format!(
                "touches test infrastructure: {written}{}",
                if neutralised { " (neutralised)" } else { "" }
            ));
        }
    }
    for f in &files {
        let path = &f.path.path;
        if tests.is_match(path) || excluded.contains(path.as_str()) || is_infra(path, tests, infra)
        {
            continue;
        }
        for added in f
            .added
            .iter()
            .filter(|a| reach.iter().any(|r| r.is_match(&a.text)))
        {
            in_effect = true;
            out.push(format!(
                "reaches into the test framework: {path}: `{}`",
                added.text.trim()
            ));
        }
    }
    let read = |path: &str| {
        if excluded.contains(path) || is_infra(path, tests, infra) {
            native::Read::Not
        } else if tests.is_match(path) {
            native::Read::Tests
        } else {
            native::Read::Code
        }
    };
    let mut flags = native::flags(&files, read);
    native::locate(patch, &mut flags);
    for flag in flags {
        match allowed.iter().find(|a| a.rule == flag.rule) {
            Some(a) => out.push(format!("{flag} (allowed: {})", a.reason)),
            None => {
                in_effect = true;
                out.push(flag.to_string());
            }
        }
    }
    if !changed_test_files.is_empty() {
        in_effect = true;
        out.push(format!(
            "test files changed during the run: {}",
            changed_test_files.join(", ")
        ));
    }
    (out, in_effect)
}

#[cfg(test)]
mod tests {
    use super::super::policy::globset;
    use super::*;

    fn test_globs() -> GlobSet {
        globset(&["tests/**".to_owned()]).expect("globs")
    }

    /// An added line `++ b/tests/...` (the diff line `+++ b/tests/...`)
    /// in the package is content, not a header: read as one, every later
    /// added line would count as test-file content and hide the framework
    /// reach below it.
    #[test]
    fn a_framework_reach_after_an_added_line_shaped_like_a_header_is_flagged() {
        let patch = "diff --git a/pkg/__init__.py b/pkg/__init__.py\n--- a/pkg/__init__.py\n+++ b/pkg/__init__.py\n@@ -0,0 +1,5 @@\n+_DOC = \"\"\"\n+++ b/tests/test_ops.py\n+\"\"\"\n+import unittest\n+unittest.TestCase.run = lambda self, result=None: None\n";
        let (suspects, in_effect) = tamper_suspects(patch.as_bytes(), &[], &test_globs(), &[], &[]);
        assert!(in_effect, "{suspects:?}");
        assert_eq!(
            suspects,
            [
                "reaches into the test framework: pkg/__init__.py: `import unittest`",
                "reaches into the test framework: pkg/__init__.py: `unittest.TestCase.run = lambda self, result=None: None`",
            ]
        );
    }

    /// Renaming test infrastructure away is touching it.
    #[test]
    fn renaming_infrastructure_away_touches_it() {
        let patch = "diff --git a/tests/conftest.py b/pkg/helpers.py\nsimilarity index 100%\nrename from tests/conftest.py\nrename to pkg/helpers.py\n";
        let (suspects, in_effect) = tamper_suspects(patch.as_bytes(), &[], &test_globs(), &[], &[]);
        assert!(in_effect);
        assert_eq!(suspects, ["touches test infrastructure: tests/conftest.py"]);
    }

    /// What the arm left out is listed as neutralised and not in effect;
    /// a test file changed during the run is in effect whatever the patch.
    #[test]
    fn neutralised_infrastructure_is_not_in_effect_but_a_changed_test_file_is() {
        let patch = "--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+import os\n";
        let excluded = ["conftest.py".to_owned()];
        let (suspects, in_effect) =
            tamper_suspects(patch.as_bytes(), &excluded, &test_globs(), &[], &[]);
        assert!(!in_effect);
        assert_eq!(
            suspects,
            ["touches test infrastructure: conftest.py (neutralised)"]
        );
        let changed = ["tests/test_ops.py".to_owned()];
        let (suspects, in_effect) = tamper_suspects(b"", &[], &test_globs(), &changed, &[]);
        assert!(in_effect);
        assert_eq!(
            suspects,
            ["test files changed during the run: tests/test_ops.py"]
        );
    }

    /// A static flag is in effect, and keeps the grade from passing,
    /// unless the pipeline allows its rule for the task: then it is still
    /// listed, with the maintainer's reason.
    #[test]
    fn a_static_flag_is_in_effect_unless_its_rule_is_allowed() {
        let patch = "--- /dev/null\n+++ b/src/ffi.rs\n@@ -0,0 +1,2 @@\n+#[no_mangle]\n+pub extern \"C\" fn tally_add() {}\n";
        let (suspects, in_effect) = tamper_suspects(patch.as_bytes(), &[], &test_globs(), &[], &[]);
        assert!(in_effect);
        assert_eq!(
            suspects,
            [
                "static flag rust-symbol-override: src/ffi.rs:1 (patch line 4): exports a symbol by name, which overrides libc's in the test binary: `#[no_mangle]`"
            ]
        );
        let allowed = [Allowance {
            rule: crate::model::config::TamperRule::RustSymbolOverride,
            reason: "the task adds a C export".into(),
        }];
        let (suspects, in_effect) =
            tamper_suspects(patch.as_bytes(), &[], &test_globs(), &[], &allowed);
        assert!(!in_effect, "{suspects:?}");
        assert!(
            suspects[0].ends_with("(allowed: the task adds a C export)"),
            "{suspects:?}"
        );
        // Another rule's allowance spares nothing; a test file the arm
        // kept is read too, one it left out is not.
        let other = [Allowance {
            rule: crate::model::config::TamperRule::GoLinkname,
            reason: "r".into(),
        }];
        assert!(tamper_suspects(patch.as_bytes(), &[], &test_globs(), &[], &other).1);
        let in_tests = patch.replace("src/ffi.rs", "tests/ffi.rs");
        assert!(tamper_suspects(in_tests.as_bytes(), &[], &test_globs(), &[], &[]).1);
        let left_out = ["tests/ffi.rs".to_owned()];
        assert_eq!(
            tamper_suspects(in_tests.as_bytes(), &left_out, &test_globs(), &[], &[]),
            (vec![], false)
        );
        // A kept Go test capturing stdout, as honest tests do, is no flag.
        let capture = "--- /dev/null\n+++ b/calc_test.go\n@@ -0,0 +1,3 @@\n+package calc\n+import \"os\"\n+func TestMain(m *testing.M) { r, w, _ := os.Pipe(); os.Stdout = w; _ = r; os.Exit(m.Run()) }\n";
        let go_tests = globset(&["**/*_test.go".to_owned()]).expect("globs");
        assert_eq!(
            tamper_suspects(capture.as_bytes(), &[], &go_tests, &[], &[]),
            (vec![], false)
        );
    }
}
