//! The canaries a run plants among a tree's hidden test files before it
//! starts (docs/security.md, "Canaries"): the shaped ones, a task's
//! certified ones, certification's candidates or its sealed reading, and
//! the seed they are drawn with.

use std::path::Path;

use assay_report::Format;

use crate::model::canary::{self, Certified, Hidden, Planted};
use crate::run::error::{Kinded, NodeError};

/// What a run plants among the test files (docs/security.md, "Canaries").
#[derive(Clone, Copy, Debug)]
pub(crate) enum Plant<'a> {
    /// Over a graded tree (one with hidden test files): its task's
    /// certified canaries, or, with none, the shaped ones. A screening
    /// tree has no hidden files and gets nothing.
    Graded(Option<&'a Certified>),
    /// Certification: every candidate canary of these files.
    Certify(&'a [String]),
    /// Certification's sealed reading: every sealable assertion of these
    /// files sealed, nothing else planted.
    Seal(&'a [String]),
}

/// Plants `plant`'s canaries among `files` of the tree at `work` (its id
/// `tree_id`, run with `command`), off the async runtime: what was planted
/// or why nothing was, and whether the draws were predictable
/// (`ASSAY_CANARY_SEED`).
pub(super) async fn plant_before_run(
    work: &Path,
    tree_id: &str,
    files: &[String],
    (format, custom): (Format, Option<&crate::pipeline::CanaryTemplate>),
    plant: Plant<'_>,
    command: &str,
) -> Result<(Result<Planted, String>, bool), NodeError> {
    let (work, hidden, given) = (work.to_owned(), files.to_vec(), command.to_owned());
    let custom = custom.cloned();
    let real = match plant {
        Plant::Certify(_) => Some(None),
        Plant::Graded(Some(c)) => Some(Some(c.clone())),
        Plant::Graded(None) | Plant::Seal(_) => None,
    };
    let sealing = matches!(plant, Plant::Seal(_));
    let mut seed = canary_seed(tree_id, &given);
    if let (Plant::Certify(_) | Plant::Seal(_), false) = (plant, seed.1) {
        // Certification's windows are the task's, so the same on every
        // machine: seeded by the gold tree, which no agent can name (it
        // holds the gold patch). A graded run's draws stay fresh.
        let mut h = blake3::Hasher::new_derive_key("assay certify v1");
        h.update(tree_id.as_bytes())
            .update(&[0])
            .update(given.as_bytes());
        seed.0 = *h.finalize().as_bytes();
    }
    let planted = tokio::task::spawn_blocking(move || match real {
        _ if sealing => plant_sealed(&work, &hidden, format, &given, seed.0),
        Some(certified) => {
            plant_real(&work, &hidden, format, &given, seed.0, certified.as_ref()).or_else(|why| {
                match certified {
                    // A graded run whose certified canaries find no file
                    // of theirs: the shaped ones, weakly checked.
                    Some(_) => plant_canaries(&work, &hidden, format, &given, seed.0, None)
                        .map_err(|shaped| format!("{why}; {shaped}")),
                    None => Err(why),
                }
            })
        }
        None => plant_canaries(&work, &hidden, format, &given, seed.0, custom.as_ref()),
    })
    .await
    .internal()?;
    Ok((planted, seed.1))
}

/// Plants this run's canaries among the hidden test files of the tree at
/// `work` (docs/security.md): fresh random names per run, the files
/// rewritten in place before the run starts. `Err` says why the run carries
/// none (it is then not forgery-checked).
pub(crate) fn plant_canaries(
    work: &std::path::Path,
    hidden: &[String],
    format: Format,
    command: &str,
    seed: [u8; 32],
    custom: Option<&crate::pipeline::CanaryTemplate>,
) -> Result<Planted, String> {
    // For measuring what the canaries cost (benches/canary-overhead.sh):
    // the grade then says it is not forgery-checked, and so does the release.
    if std::env::var_os("ASSAY_CANARIES").is_some_and(|v| v == "off") {
        return Err("canaries turned off (ASSAY_CANARIES=off in assay's environment)".into());
    }
    let files = hidden_files(work, hidden);
    let hidden: Vec<Hidden<'_>> = files
        .iter()
        .map(|(path, text, beside)| Hidden { path, text, beside })
        .collect();
    let globs = match custom {
        Some(c) => Some(
            crate::nodes::triage::globset(&c.files)
                .map_err(|e| format!("[env] canary files: {e}"))?,
        ),
        None => None,
    };
    let custom = custom.zip(globs.as_ref()).map(|(c, files)| canary::Custom {
        files,
        template: &c.template,
    });
    let planted = canary::plant(format, command, &hidden, seed, custom.as_ref())?;
    write_planted(work, &planted)?;
    Ok(planted)
}

/// Certification's sealed reading: seals every sealable assertion of the
/// hidden files (docs/security.md, "Sealed expectations").
pub(crate) fn plant_sealed(
    work: &std::path::Path,
    hidden: &[String],
    format: Format,
    command: &str,
    seed: [u8; 32],
) -> Result<Planted, String> {
    if seals_off() {
        return Err("seals turned off (ASSAY_SEALS=off in assay's environment)".into());
    }
    let files = hidden_files(work, hidden);
    let hidden: Vec<Hidden<'_>> = files
        .iter()
        .map(|(path, text, beside)| Hidden { path, text, beside })
        .collect();
    let planted = canary::plant_sealed(format, command, &hidden, seed)?;
    write_planted(work, &planted)?;
    Ok(planted)
}

/// `ASSAY_SEALS=off` in assay's environment: no run is sealed (for
/// measuring what seals cost and catch: the attack tests show a forger
/// passing without them); nor with `ASSAY_CANARIES=shaped` or `off`, which
/// plant no seal either.
fn seals_off() -> bool {
    std::env::var("ASSAY_SEALS").as_deref() == Ok("off")
        || matches!(
            std::env::var("ASSAY_CANARIES").as_deref(),
            Ok("off" | "shaped")
        )
}

/// Plants canaries made of the hidden files' own tests: `certified` the
/// task's (a graded run), `None` every candidate (certification).
pub(crate) fn plant_real(
    work: &std::path::Path,
    hidden: &[String],
    format: Format,
    command: &str,
    seed: [u8; 32],
    certified: Option<&Certified>,
) -> Result<Planted, String> {
    match std::env::var("ASSAY_CANARIES").as_deref() {
        Ok("off") => {
            return Err("canaries turned off (ASSAY_CANARIES=off in assay's environment)".into());
        }
        // For measuring what these canaries cost and catch against the
        // shaped ones (benches/canary-overhead.sh, the attack tests).
        Ok("shaped") => return Err("shaped canaries only (ASSAY_CANARIES=shaped)".into()),
        // The seals alone beside the shaped canaries: no copy, mutant or
        // rename (the attack tests of docs/security.md, "Sealed
        // expectations").
        Ok("sealed") if certified.is_none_or(|c| c.seals.is_empty() || seals_off()) => {
            return Err("shaped canaries and seals only (ASSAY_CANARIES=sealed)".into());
        }
        _ => {}
    }
    let seals_only = certified
        .filter(|_| std::env::var("ASSAY_CANARIES").as_deref() == Ok("sealed"))
        .map(|c| Certified {
            seals: c.seals.clone(),
            ..Certified::default()
        });
    let certified = seals_only.as_ref().or(certified);
    let files = hidden_files(work, hidden);
    let hidden: Vec<Hidden<'_>> = files
        .iter()
        .map(|(path, text, beside)| Hidden { path, text, beside })
        .collect();
    let unsealed = certified.filter(|_| seals_off()).map(|c| Certified {
        seals: Vec::new(),
        ..c.clone()
    });
    let certified = unsealed.as_ref().or(certified);
    let planted = canary::plant_real(format, command, &hidden, seed, certified)?;
    write_planted(work, &planted)?;
    Ok(planted)
}

fn write_planted(work: &std::path::Path, planted: &Planted) -> Result<(), String> {
    for (rel, bytes) in &planted.files {
        std::fs::write(work.join(rel), bytes)
            .map_err(|e| format!("planting canaries in {rel}: {e}"))?;
    }
    Ok(())
}

/// The hidden test files of the tree at `work` that are regular files:
/// their paths, bytes, and the text of the other files of their directory
/// with their extension (a canary's name must not clash with those).
fn hidden_files(work: &std::path::Path, hidden: &[String]) -> Vec<(String, Vec<u8>, String)> {
    /// The most of a directory's other test files read to keep names apart.
    const BESIDE_CAP: u64 = 4 << 20;
    let mut files = Vec::new();
    for rel in hidden {
        let path = work.join(rel);
        let is_file = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        let Ok(text) = std::fs::read(&path)
            .map_err(|_| ())
            .and_then(|t| is_file.then_some(t).ok_or(()))
        else {
            continue;
        };
        let ext = path.extension().map(|e| e.to_owned());
        let mut beside = String::new();
        if let Some(dir) = path.parent()
            && let Ok(entries) = std::fs::read_dir(dir)
        {
            for e in entries.flatten() {
                let other = e.path();
                let small = e
                    .metadata()
                    .is_ok_and(|m| m.is_file() && m.len() < BESIDE_CAP);
                if other != path && small && other.extension().map(|e| e.to_owned()) == ext {
                    beside.push_str(&String::from_utf8_lossy(
                        &std::fs::read(&other).unwrap_or_default(),
                    ));
                }
            }
        }
        files.push((rel.clone(), text, beside));
    }
    files
}

/// The seed of a run's canaries, and whether it is predictable: fresh
/// randomness, unless `ASSAY_CANARY_SEED` in assay's own environment fixes
/// it for reproducible tests (per tree and command; the grade then says its
/// canaries were predictable).
fn canary_seed(tree_id: &str, command: &str) -> ([u8; 32], bool) {
    match std::env::var("ASSAY_CANARY_SEED") {
        Ok(fixed) if !fixed.is_empty() => {
            let mut h = blake3::Hasher::new();
            for part in [fixed.as_str(), tree_id, command] {
                h.update(part.as_bytes()).update(&[0]);
            }
            (*h.finalize().as_bytes(), true)
        }
        _ => (crate::run::fresh_seed(), false),
    }
}
