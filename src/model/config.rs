//! The words of a pipeline's configuration that records, rules and node
//! params carry: arms, the exclusion policy, executors, patch caps, tamper
//! rules and their allowances, metric counts. `pipeline` reads them from the file and
//! checks them; everything above names them from here.

use serde::Serialize;

crate::words::words! {
    unit_variant;
    /// Which of a session's paths the grader leaves out (`[grade] exclusion`).
    /// In node params as serde's unit variant (its variant index).
    #[derive(Default)]
    pub(crate) enum Policy {
        /// Every test file the session touches, new or existing, and test
        /// infrastructure (`rules::policy::INFRA_GLOBS`): the default.
        #[default]
        TestsAndInfra = "tests-and-infra",
        NewTestFiles = "new-test-files",
        AllTestFiles = "all-test-files",
        ResetTestPatchFiles = "reset-test-patch-files",
        None = "none",
    }
}

crate::words::words! {
    /// A grading arm: `exclude` applies the exclusion policy, `keep` leaves
    /// out nothing (it only exposes the verifier). In node params and
    /// records as its word.
    pub(crate) enum Arm {
        Exclude = "exclude",
        Keep = "keep",
    }
}

impl Arm {
    /// The arm that scores.
    pub(crate) const SCORED: Arm = Arm::Exclude;
    /// The arm scored only when a session has no scored one.
    pub(crate) const CONTRAST: Arm = Arm::Keep;
}

crate::words::words! {
    /// An executor, by its word in `[env] executor` and `--executor`.
    pub(crate) enum ExecutorKind {
        /// bubblewrap on this machine: the default.
        Local = "local",
        Docker = "docker",
        Slurm = "slurm",
    }
}

/// How large a session patch may be (`[grade] max_patch_bytes`,
/// `max_patch_files`), each at least 1. A larger one is refused before
/// anything is staged: staging, materialising and removing its tree for
/// every run, rerun and check is what a patch of 100,000 files costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct PatchCaps {
    pub(crate) bytes: u64,
    pub(crate) files: u64,
}

impl Default for PatchCaps {
    fn default() -> PatchCaps {
        PatchCaps {
            bytes: 10 << 20,
            files: 5000,
        }
    }
}

impl PatchCaps {
    /// Why a patch of `bytes` is over the cap, if it is.
    pub(crate) fn over_bytes(&self, bytes: u64) -> Option<String> {
        (bytes > self.bytes).then(|| {
            format!(
                "over the patch cap ({} bytes > {})",
                thousands(bytes),
                thousands(self.bytes)
            )
        })
    }

    /// Why a patch of `files` file sections is over the cap, if it is.
    pub(crate) fn over_files(&self, files: u64) -> Option<String> {
        (files > self.files).then(|| {
            format!(
                "over the patch cap ({} files > {})",
                thousands(files),
                thousands(self.files)
            )
        })
    }
}

/// `n` with its thousands separated by commas: 100,000.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How a command's findings are counted.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub(crate) enum Count {
    /// Each line matching the pattern is a finding; its `path` group, if
    /// any, names the file.
    Lines { pattern: String },
    /// Each element at `at` (keys, `*` for every element of an array) is a
    /// finding; `path_key` names its file, on it or the nearest object
    /// above it.
    Json {
        at: Vec<String>,
        path_key: Option<String>,
    },
    /// One finding, with no file, when the command exits non-zero.
    Exit,
}

crate::words::words! {
    /// A family of constructs the static flags find in a compiled patch
    /// (docs/security.md, "Static flags for Rust and Go").
    pub(crate) enum TamperRule {
        RustMacroShadowing = "rust-macro-shadowing",
        RustConstructor = "rust-constructor",
        RustAsm = "rust-asm",
        RustSymbolOverride = "rust-symbol-override",
        RustFdRewrite = "rust-fd-rewrite",
        RustInclude = "rust-include",
        RustManifest = "rust-manifest",
        GoLinkname = "go-linkname",
        GoNativeCode = "go-native-code",
        GoFdRewrite = "go-fd-rewrite",
        GoTestingReach = "go-testing-reach",
        BinaryCode = "binary-code",
    }
}

/// What a grade is told: a rule it does not hold against the patch, and
/// why. Part of the grade's key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct Allowance {
    pub(crate) rule: TamperRule,
    pub(crate) reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_over_its_cap_says_by_how_much() {
        let caps = PatchCaps::default();
        assert_eq!(
            caps.over_files(100_000).as_deref(),
            Some("over the patch cap (100,000 files > 5,000)")
        );
        assert_eq!(caps.over_files(5000), None);
        assert_eq!(
            caps.over_bytes(16 << 20).as_deref(),
            Some("over the patch cap (16,777,216 bytes > 10,485,760)")
        );
        assert_eq!(caps.over_bytes(10 << 20), None);
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }
}
