//! What grading leaves out of a session patch (docs/verdicts.md, "The
//! exclusion policy"): the sections the arm's [`Policy`] names, and on top of
//! them, in every arm, the sections that give way to the hidden test patch
//! ([`Reset`], SWE-bench's reset widened to every way of reaching its files).
//!
//! Paths are read as `git apply` reads them ([`assay_git::patch_paths`]); a
//! section counts as an edit of every path it writes, so a rename of a test
//! file is an edit of that test file. The session patch and the test patch
//! are each read once per node ([`session_paths`], [`TestPatch::read`]) and
//! the [`Exclusion`] computed once from them: the stage applies it, the
//! grade records it and reads the tamper suspects against it.

use std::collections::{BTreeMap, BTreeSet};

use assay_git::{PatchPath, patch_paths};
use globset::{Glob, GlobSet, GlobSetBuilder};

pub(crate) use crate::model::config::{PatchCaps, Policy};

/// One set of globs (test files, docs, watched files), compiled.
pub(crate) fn globset(globs: &[String]) -> Result<GlobSet, globset::Error> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        b.add(Glob::new(g)?);
    }
    b.build()
}

/// Files that configure or hook into a test run rather than hold tests:
/// interpreter start-up hooks, path files and runner configuration. Agent
/// edits to them are neutralised by the default policy and always flagged.
pub(crate) const INFRA_GLOBS: &[&str] = &[
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    "**/conftest.py",
    "pytest.ini",
    "**/pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    ".coveragerc",
    "**/jest.config.*",
    "**/vitest.config.*",
    "**/.mocharc*",
    "**/karma.conf.*",
    // JavaScript: a module the tree puts under node_modules shadows the
    // environment's (the runner, its assertion library); set-up files and
    // transpiler configuration run before every test file.
    "**/node_modules/**",
    "**/jest.setup.*",
    "**/vitest.setup.*",
    "**/setupTests.*",
    "**/babel.config.*",
    "**/.babelrc*",
    "**/phpunit.xml*",
    "**/.cargo/config",
    "**/.cargo/config.toml",
    // Rust's build scripts run arbitrary code before the tests compile and
    // can write the code they include; the toolchain files pick the
    // compiler. Go's workspace file swaps modules under the build.
    "**/build.rs",
    "rust-toolchain",
    "rust-toolchain.toml",
    "**/go.work",
];

/// [`INFRA_GLOBS`], compiled once per process (every stage and grade asks).
pub(crate) fn infra_globset() -> &'static GlobSet {
    static SET: std::sync::LazyLock<GlobSet> = std::sync::LazyLock::new(|| {
        let globs: Vec<String> = INFRA_GLOBS.iter().map(|g| (*g).to_owned()).collect();
        globset(&globs).unwrap_or_else(|_| GlobSet::empty())
    });
    &SET
}

/// Whether `path` is test infrastructure: an infra file, or a test
/// package's `__init__.py`.
pub(crate) fn is_infra(path: &str, tests: &GlobSet, infra: &GlobSet) -> bool {
    infra.is_match(path) || (path.ends_with("__init__.py") && tests.is_match(path))
}

/// What the patch says it changes, or why it is not a patch at all (binary
/// junk, an `*** Begin Patch` envelope): never graded as the empty patch.
/// Read as `git apply` reads it ([`assay_git::parse_patch`]); the stage
/// refuses a patch git reads otherwise before applying it.
pub(crate) fn session_paths(patch: &[u8]) -> Result<Vec<PatchPath>, String> {
    if patch.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let paths = patch_paths(patch).map_err(|e| e.to_string())?;
    if paths.is_empty() {
        return Err("it is not a unified diff (no file headers found)".into());
    }
    Ok(paths)
}

/// The session patch's paths, or why it is refused before anything is
/// staged: over a cap (bytes first, so a huge patch is not even read), or
/// not a patch.
pub(crate) fn session_paths_within(
    patch: &[u8],
    caps: PatchCaps,
) -> Result<Vec<PatchPath>, String> {
    if let Some(why) = caps.over_bytes(patch.len() as u64) {
        return Err(why);
    }
    let paths = session_paths(patch).map_err(|e| format!("the patch cannot be read: {e}"))?;
    match caps.over_files(paths.len() as u64) {
        Some(why) => Err(why),
        None => Ok(paths),
    }
}

/// The task's hidden test patch, read once: its sections as `git apply`
/// reads them. A test patch git cannot read has none (the stage's compose
/// then fails on it, no session's doing).
#[derive(Clone, Debug, Default)]
pub(crate) struct TestPatch(Vec<PatchPath>);

impl TestPatch {
    pub(crate) fn read(test_patch: &[u8]) -> TestPatch {
        TestPatch(patch_paths(test_patch).unwrap_or_default())
    }

    /// Every path the test patch writes (a rename's source too).
    fn written(&self) -> BTreeSet<&str> {
        self.0.iter().flat_map(PatchPath::written).collect()
    }

    /// Every path the test patch writes (as [`reset`] reads it), sorted,
    /// and whether the base commit has it: not when the test patch creates
    /// it, or a rename or copy makes it. What the published eval script
    /// resets.
    pub(crate) fn written_at_base(&self) -> Vec<(String, bool)> {
        let mut out: BTreeMap<String, bool> = BTreeMap::new();
        for p in &self.0 {
            let made = p.is_new || p.old_path.as_ref().is_some_and(|o| *o != p.path);
            *out.entry(p.path.clone()).or_default() |= !made;
            for removed in p.written().skip(1) {
                out.insert(removed.to_owned(), true);
            }
        }
        out.into_iter().collect()
    }

    /// The paths the test patch leaves in the graded tree (not those it
    /// deletes), sorted: the hidden test files a run may not change.
    pub(crate) fn hidden(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .0
            .iter()
            .filter(|p| !p.is_deleted)
            .map(|p| p.path.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// Whether `path` lies below the directory `dir`.
fn is_under(path: &str, dir: &str) -> bool {
    path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/'
}

/// Whether writing `a` keeps `b` from being written: one path, or one a
/// directory above the other.
fn collides(a: &str, b: &str) -> bool {
    a == b || is_under(a, b) || is_under(b, a)
}

/// What of a session patch gives way to the hidden test patch, in every
/// arm (SWE-bench's reset, widened to every way of reaching its files).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reset {
    /// The test patch's files the session wrote, renamed or deleted, or
    /// put a file or directory in the way of, sorted: they get the test
    /// patch's version (the grade's `reset_paths`).
    pub(crate) restored: Vec<String>,
    /// The session's file sections left out for them, sorted, by the path
    /// `git apply --exclude` matches: a rename of a hidden file is left out
    /// whole, so the file stays and the new name never appears.
    pub(crate) left_out: Vec<String>,
}

/// The [`Reset`] of a session patch's sections (its [`session_paths`])
/// against the task's test patch.
pub(crate) fn reset(session: &[PatchPath], test: &TestPatch) -> Reset {
    let hidden = test.written();
    let mut restored = BTreeSet::new();
    let mut left_out = BTreeSet::new();
    for section in session {
        for written in section.written() {
            for h in hidden.iter().filter(|h| collides(written, h)) {
                restored.insert((*h).to_owned());
                left_out.insert(section.path.clone());
            }
        }
    }
    Reset {
        restored: restored.into_iter().collect(),
        left_out: left_out.into_iter().collect(),
    }
}

/// The sections of a session patch (its [`session_paths`]) that `policy`
/// leaves out, sorted, by the path `git apply --exclude` matches (the
/// [`Reset`] comes on top). A section counts as an edit of every path it
/// writes: a rename of a test file to `pkg/x.py` is an edit of that test
/// file.
pub(crate) fn excluded_paths(
    session: &[PatchPath],
    test: &TestPatch,
    policy: Policy,
    tests: &GlobSet,
) -> Vec<String> {
    let infra = infra_globset();
    let hidden = match policy {
        Policy::ResetTestPatchFiles => test.written(),
        _ => BTreeSet::new(),
    };
    let mut out: Vec<String> = session
        .iter()
        .filter(|p| match policy {
            Policy::TestsAndInfra => p
                .written()
                .any(|w| tests.is_match(w) || is_infra(w, tests, infra)),
            // A rename's or copy's target is new at base too.
            Policy::NewTestFiles => (p.is_new || p.old_path.is_some()) && tests.is_match(&p.path),
            Policy::AllTestFiles => p.written().any(|w| tests.is_match(w)),
            Policy::ResetTestPatchFiles => p.written().any(|w| hidden.contains(w)),
            Policy::None => false,
        })
        .map(|p| p.path.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What one arm leaves out of one session patch: computed once per node,
/// from the patch's sections and the task's test patch, by the stage (which
/// applies it) and the grade (which records it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Exclusion {
    /// Every section left out, by the policy or the reset, sorted: the
    /// stage's `git apply --exclude`, the grade's `excluded_paths`.
    pub(crate) left_out: Vec<String>,
    /// The rule that left each of `left_out` out, in words naming the glob
    /// that matched (the grade's `excluded_by`).
    pub(crate) rules: BTreeMap<String, String>,
    /// The test patch's files the session reached: the grade's
    /// `reset_paths`.
    pub(crate) restored: Vec<String>,
}

impl Exclusion {
    /// `test_globs` are the patterns `tests` was compiled from, in order:
    /// the rule recorded for a test file names the one that matched.
    pub(crate) fn of(
        session: &[PatchPath],
        test: &TestPatch,
        policy: Policy,
        tests: &GlobSet,
        test_globs: &[String],
    ) -> Exclusion {
        let reset = reset(session, test);
        let by_policy = excluded_paths(session, test, policy, tests);
        let mut rules = BTreeMap::new();
        for section in session {
            let rule = if by_policy.contains(&section.path) {
                rule_of(section, policy, tests, test_globs)
            } else if reset.left_out.contains(&section.path) {
                "reset: it writes a file of the hidden test patch".to_owned()
            } else {
                continue;
            };
            rules.entry(section.path.clone()).or_insert(rule);
        }
        let mut left_out = by_policy;
        left_out.extend(reset.left_out);
        left_out.sort();
        left_out.dedup();
        Exclusion {
            left_out,
            rules,
            restored: reset.restored,
        }
    }

    /// Whether nothing of the session's sections is left to apply.
    pub(crate) fn leaves_nothing_of(&self, session: &[PatchPath]) -> bool {
        let left_out: BTreeSet<&String> = self.left_out.iter().collect();
        session.iter().all(|p| left_out.contains(&p.path))
    }
}

/// Why `policy` left `section` out, naming the glob that matched the
/// path it writes.
fn rule_of(section: &PatchPath, policy: Policy, tests: &GlobSet, test_globs: &[String]) -> String {
    if policy == Policy::ResetTestPatchFiles {
        return format!("{}: a file of the hidden test patch", policy.as_str());
    }
    let infra = infra_globset();
    for w in section.written() {
        if let Some(glob) = tests.matches(w).first().and_then(|&i| test_globs.get(i)) {
            let is_infra = policy == Policy::TestsAndInfra && is_infra(w, tests, infra);
            let what = if is_infra {
                "test infrastructure"
            } else {
                "test file"
            };
            return format!("{}: {what} `{w}` matches `{glob}`", policy.as_str());
        }
        if let Some(glob) = infra.matches(w).first().and_then(|&i| INFRA_GLOBS.get(i)) {
            return format!(
                "{}: test infrastructure `{w}` matches `{glob}`",
                policy.as_str()
            );
        }
    }
    policy.as_str().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hidden test patch of the tests below: it edits
    /// `tests/test_ops.py` and creates `tests/test_mul.py`.
    pub(crate) const TEST_PATCH: &str = "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -1 +1,2 @@\n a\n+b\ndiff --git a/tests/test_mul.py b/tests/test_mul.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_mul.py\n@@ -0,0 +1 @@\n+m\n";

    pub(crate) fn test_globs() -> GlobSet {
        globset(&["tests/**".to_owned()]).expect("globs")
    }

    fn test_patch() -> TestPatch {
        TestPatch::read(TEST_PATCH.as_bytes())
    }

    /// Renamed away, deleted, or a file or directory put in its way: every
    /// way of keeping a hidden test file from the test patch's version
    /// gives way to it (it was `test_patch_conflict`, ambiguous).
    #[test]
    fn a_hidden_test_file_renamed_away_deleted_or_in_the_way_is_reset() {
        let cases = [
            (
                "diff --git a/tests/test_ops.py b/pkg/moved.py\nsimilarity index 100%\nrename from tests/test_ops.py\nrename to pkg/moved.py\n",
                "tests/test_ops.py",
                "pkg/moved.py",
            ),
            (
                "diff --git a/tests/test_ops.py b/tests/test_ops.py\ndeleted file mode 100644\n--- a/tests/test_ops.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n",
                "tests/test_ops.py",
                "tests/test_ops.py",
            ),
            (
                "diff --git a/tests/test_mul.py/x.py b/tests/test_mul.py/x.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_mul.py/x.py\n@@ -0,0 +1 @@\n+x\n",
                "tests/test_mul.py",
                "tests/test_mul.py/x.py",
            ),
            // A traditional diff git writes to the hidden file itself.
            (
                "--- a/tests/test_ops.py\n+++ b/tests/test_ops.py.orig\n@@ -1 +1,2 @@\n a\n+z\n",
                "tests/test_ops.py",
                "tests/test_ops.py",
            ),
        ];
        for (patch, restored, left_out) in cases {
            let paths = session_paths(patch.as_bytes()).expect("a patch");
            assert_eq!(
                reset(&paths, &test_patch()),
                Reset {
                    restored: vec![restored.to_owned()],
                    left_out: vec![left_out.to_owned()],
                },
                "{patch}"
            );
        }
        // A copy of a hidden file only reads it; a file beside one is free.
        let copy = "diff --git a/tests/test_ops.py b/pkg/copy.py\nsimilarity index 100%\ncopy from tests/test_ops.py\ncopy to pkg/copy.py\ndiff --git a/tests/test_ops.pyc b/tests/test_ops.pyc\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_ops.pyc\n@@ -0,0 +1 @@\n+c\n";
        let paths = session_paths(copy.as_bytes()).expect("a patch");
        assert_eq!(reset(&paths, &test_patch()), Reset::default());
    }

    /// A rename of a test file to a name that is not one is an edit of
    /// that test file: the policy leaves it out.
    #[test]
    fn the_policy_leaves_out_a_test_file_renamed_to_a_plain_name() {
        let patch = "diff --git a/tests/test_x.py b/pkg/x.py\nsimilarity index 100%\nrename from tests/test_x.py\nrename to pkg/x.py\n";
        let paths = session_paths(patch.as_bytes()).expect("a patch");
        let out = excluded_paths(&paths, &test_patch(), Policy::TestsAndInfra, &test_globs());
        assert_eq!(out, ["pkg/x.py"]);
    }

    /// The exclusion the stage applies and the grade records is the
    /// policy's sections and the reset's, once each, and the reset's
    /// restored files.
    #[test]
    fn an_exclusion_joins_the_policy_and_the_reset() {
        let patch = "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -1 +1,2 @@\n a\n+x\ndiff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+import os\ndiff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1,2 @@\n a\n+y\n";
        let paths = session_paths(patch.as_bytes()).expect("a patch");
        let tests = test_globs();
        let globs = ["tests/**".to_owned()];
        let of = |policy| Exclusion::of(&paths, &test_patch(), policy, &tests, &globs);
        assert_eq!(
            of(Policy::TestsAndInfra),
            Exclusion {
                left_out: vec!["conftest.py".into(), "tests/test_ops.py".into()],
                rules: [
                    (
                        "conftest.py".to_owned(),
                        "tests-and-infra: test infrastructure `conftest.py` matches `**/conftest.py`"
                            .to_owned()
                    ),
                    (
                        "tests/test_ops.py".to_owned(),
                        "tests-and-infra: test file `tests/test_ops.py` matches `tests/**`".to_owned()
                    ),
                ]
                .into(),
                restored: vec!["tests/test_ops.py".into()],
            }
        );
        assert_eq!(
            of(Policy::None).rules["tests/test_ops.py"],
            "reset: it writes a file of the hidden test patch"
        );
        // No policy: the reset alone, in every arm.
        assert_eq!(of(Policy::None).left_out, ["tests/test_ops.py"]);
        assert!(!of(Policy::TestsAndInfra).leaves_nothing_of(&paths));
        let only_tests = &paths[..1];
        assert!(of(Policy::None).leaves_nothing_of(only_tests));
    }

    #[test]
    fn the_hidden_files_are_what_the_test_patch_leaves_in_the_tree() {
        let deletes = "diff --git a/tests/old.py b/tests/old.py\ndeleted file mode 100644\n--- a/tests/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n";
        let both = format!("{TEST_PATCH}{deletes}");
        assert_eq!(
            TestPatch::read(both.as_bytes()).hidden(),
            ["tests/test_mul.py", "tests/test_ops.py"]
        );
        assert!(TestPatch::read(b"not a patch").hidden().is_empty());
    }

    #[test]
    fn a_patch_over_a_cap_or_not_a_patch_is_refused_before_it_is_read() {
        let caps = PatchCaps {
            bytes: 10,
            ..PatchCaps::default()
        };
        let e = session_paths_within(TEST_PATCH.as_bytes(), caps).expect_err("over");
        assert!(e.contains("10"), "{e}");
        let e = session_paths_within(b"*** Begin Patch\n", PatchCaps::default()).expect_err("junk");
        assert!(e.starts_with("the patch cannot be read: "), "{e}");
        assert_eq!(
            session_paths_within(b"\n", PatchCaps::default()),
            Ok(Vec::new())
        );
    }
}
