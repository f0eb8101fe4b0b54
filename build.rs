//! Records the git commit assay is built from (`ASSAY_GIT_COMMIT`, for the
//! provenance of releases and bundles); `unknown` outside a git checkout.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=ASSAY_GIT_COMMIT");
    let commit = std::env::var("ASSAY_GIT_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| git(&["rev-parse", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    // A new commit moves HEAD's reflog (also in a worktree).
    if let Some(path) = git(&["rev-parse", "--git-path", "logs/HEAD"]) {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rustc-env=ASSAY_GIT_COMMIT={commit}");
}
