//! `assay explain PATH` for a published number: its value and the grades
//! (or judge readings) it aggregates, each read back from the cache and
//! checked against its key; a funnel count or a part of summary.json that
//! is not one number; a report label for every agent/model.

use std::path::{Path, PathBuf};

use assay_engine::{Digest, Store};
use assay_judge::Mode;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cli::shared::Failure;
use crate::exit;
use crate::model::records::{Fault, GradeRecord, JudgeOutcome, JudgeRecord, Verdict};
use crate::pipeline::Arm;
use crate::release::{Manifest, Name, Number};

/// The output record of the node keyed `hex`, and whether its key record
/// hashes to that key; None when the cache does not hold it (the record
/// None when it does not read as a `T`).
fn read_back<T: DeserializeOwned>(store: &Store, hex: &str) -> Option<(bool, Option<T>)> {
    let key = hex.parse::<Digest>().ok()?;
    let (record, _, row) = store.key_record(&key).ok().flatten()?;
    let value = store
        .output_bytes(&row)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    Some((record.key() == key, value))
}

/// A grade a number was computed from, as `explain --json` lists it.
#[derive(Serialize)]
#[serde(untagged)]
enum GradeRow {
    Read {
        arm: Option<Arm>,
        fault: Option<Fault>,
        grade: Name,
        instance_id: Option<String>,
        key_ok: bool,
        session: Option<String>,
        verdict: Option<Verdict>,
    },
    Missing {
        grade: Name,
        missing: bool,
    },
}

/// A judge reading a number was computed from.
#[derive(Serialize)]
#[serde(untagged)]
enum ReadingRow {
    Read {
        instance_id: Option<String>,
        key_ok: bool,
        mode: Option<Mode>,
        outcome: Option<JudgeOutcome>,
        reading: Name,
        sample: Option<u32>,
        sessions: Option<Vec<String>>,
    },
    Missing {
        missing: bool,
        reading: Name,
    },
}

#[derive(Serialize)]
struct Explained<'a> {
    grades: Vec<GradeRow>,
    /// Grades the number leaves out on purpose (a leaderboard's
    /// infrastructure faults).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    left_out: Vec<GradeRow>,
    path: &'a str,
    readings: Vec<ReadingRow>,
    /// Sessions a count names (a trial count's).
    #[serde(skip_serializing_if = "<[Name]>::is_empty")]
    sessions: &'a [Name],
    /// Tasks in the number's denominator (a leaderboard's).
    #[serde(skip_serializing_if = "is_zero")]
    tasks: usize,
    value: &'a serde_json::Number,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A published number: its value and the grades it aggregates, each read back
/// from the cache (and checked against its key).
pub(super) fn explain_number(
    store: &Store,
    release: &Path,
    path: &str,
    json: bool,
) -> Result<i32, Failure> {
    let (file, manifest) = read_manifest(release)?;
    if let Some(code) = explain_value(release, &manifest, path)? {
        return Ok(code);
    }
    let Some(number) = manifest.number(path) else {
        return Err(no_number(&manifest, path, &file));
    };
    let read = ReadBack::of(store, number);
    if !read.readings.is_empty() && !json {
        print_readings(path, number, &read.readings);
    } else if json {
        let v = Explained {
            path,
            value: &number.value,
            grades: read.grades,
            readings: read.readings,
            sessions: &number.sessions,
            tasks: number.tasks.len(),
            left_out: read.left_out,
        };
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        print_number(path, number, &manifest, &read);
    }
    Ok(if read.missing > 0 {
        exit::VERIFY_MISMATCH
    } else {
        exit::OK
    })
}

/// The release's manifest (and its file's path), its shards read whole.
fn read_manifest(release: &Path) -> Result<(PathBuf, Manifest), Failure> {
    let (file, text) = release_text(release, "manifest.json")?;
    let read = |name: &str| std::fs::read(release.join(name)).ok();
    let (manifest, shards) = Manifest::read(text.as_bytes(), &read).map_err(|e| {
        Failure::new(
            exit::VERIFY_MISMATCH,
            miette::miette!("{}: {e}", file.display()),
        )
    })?;
    if let Some(s) = shards.first() {
        return Err(Failure::new(
            exit::VERIFY_MISMATCH,
            miette::miette!("{}: {}", release.join(&s.file).display(), s.problem),
        ));
    }
    Ok((file, manifest))
}

/// Not found: no published number `path`, with the nearest paths.
fn no_number(manifest: &Manifest, path: &str, file: &Path) -> Failure {
    let paths = || manifest.numbers.iter().map(|n| n.path.as_str());
    let mut near = crate::words::nearest(path, paths(), 3);
    if near.is_empty() {
        near = paths()
            .filter(|p| p.contains(path.trim_start_matches("summary")))
            .take(10)
            .collect();
    }
    Failure::new(
        exit::NOT_FOUND,
        miette::miette!(
            help = if near.is_empty() {
                "the paths are listed in manifest.json under `numbers`".to_owned()
            } else {
                format!("did you mean one of: {}", near.join(", "))
            },
            "no published number `{path}` in {}",
            file.display()
        ),
    )
}

/// A number's grades, left-out grades and judge readings as read back
/// from the cache, and how many of them it does not hold.
struct ReadBack {
    grades: Vec<GradeRow>,
    left_out: Vec<GradeRow>,
    readings: Vec<ReadingRow>,
    missing: usize,
}

impl ReadBack {
    fn of(store: &Store, number: &Number) -> ReadBack {
        let mut missing = 0;
        let mut read_grades = |keys: &[Name]| -> Vec<GradeRow> {
            keys.iter()
                .map(|g| match read_back::<GradeRecord>(store, g) {
                    Some((key_ok, grade)) => GradeRow::Read {
                        grade: g.clone(),
                        key_ok,
                        session: grade.as_ref().map(|r| r.session.clone()),
                        arm: grade.as_ref().map(|r| r.arm),
                        instance_id: grade.as_ref().map(|r| r.instance_id.clone()),
                        verdict: grade.as_ref().map(|r| r.verdict),
                        fault: grade.as_ref().map(|r| r.fault),
                    },
                    None => {
                        missing += 1;
                        GradeRow::Missing {
                            grade: g.clone(),
                            missing: true,
                        }
                    }
                })
                .collect()
        };
        let grades = read_grades(&number.grades);
        let left_out = read_grades(&number.left_out);
        // Judge numbers aggregate readings (judge node keys) instead of grades.
        let mut readings = Vec::new();
        for r in &number.readings {
            let Some((key_ok, reading)) = read_back::<JudgeRecord>(store, r) else {
                missing += 1;
                readings.push(ReadingRow::Missing {
                    reading: r.clone(),
                    missing: true,
                });
                continue;
            };
            readings.push(ReadingRow::Read {
                reading: r.clone(),
                key_ok,
                sessions: reading.as_ref().map(|x| x.sessions.clone()),
                instance_id: reading.as_ref().map(|x| x.instance_id.clone()),
                mode: reading.as_ref().map(|x| x.mode),
                sample: reading.as_ref().map(|x| x.sample),
                outcome: reading.as_ref().map(|x| x.outcome),
            });
        }
        ReadBack {
            grades,
            left_out,
            readings,
            missing,
        }
    }
}

/// A judge number as text: its value and each reading it aggregates.
fn print_readings(path: &str, number: &Number, readings: &[ReadingRow]) {
    println!("number   {path} = {}", number.value);
    println!("from     {} judge readings", readings.len());
    for r in readings {
        let (reading, sessions, mode, sample, note) = match r {
            ReadingRow::Missing { reading, .. } => (
                reading,
                Vec::new(),
                "",
                "null".to_owned(),
                "NOT IN THIS CACHE",
            ),
            ReadingRow::Read {
                reading,
                key_ok,
                sessions,
                mode,
                sample,
                ..
            } => (
                reading,
                sessions.clone().unwrap_or_default(),
                mode.map_or("", mode_word),
                sample.map_or_else(|| "null".to_owned(), |s| s.to_string()),
                if *key_ok { "" } else { "KEY MISMATCH" },
            ),
        };
        println!(
            "  {}  {:40} {:8} s{} {}",
            reading.get(..12).unwrap_or(""),
            sessions.join(" + "),
            mode,
            sample,
            note
        );
    }
}

/// A number of grades as text: its value, its grades, the sessions and
/// tasks it is over, and the grades it leaves out.
fn print_number(path: &str, number: &Number, manifest: &Manifest, read: &ReadBack) {
    println!("number   {path} = {}", number.value);
    println!(
        "from     {} grades (release digest {})",
        read.grades.len(),
        manifest.release_digest
    );
    print_grades(&read.grades);
    if !number.sessions.is_empty() {
        println!("over     {} sessions", number.sessions.len());
        for s in &number.sessions {
            println!("  {s}");
        }
    }
    if !number.tasks.is_empty() {
        println!(
            "over     {} tasks (the denominator: a task without a grade above counts 0)",
            number.tasks.len()
        );
    }
    if !read.left_out.is_empty() {
        println!(
            "left out {} grades (their runs ended on an infrastructure fault: not the agent's doing)",
            read.left_out.len()
        );
        print_grades(&read.left_out);
    }
}

fn print_grades(rows: &[GradeRow]) {
    for r in rows {
        match r {
            GradeRow::Missing { grade, .. } => println!("  {grade}  NOT IN THIS CACHE"),
            GradeRow::Read {
                grade,
                key_ok,
                session,
                arm,
                verdict,
                fault,
                ..
            } => println!(
                "  {}  {:28} {:8} {:22} {:14} {}",
                grade.get(..12).unwrap_or(""),
                session.as_deref().unwrap_or(""),
                arm.map_or("", Arm::as_str),
                verdict.map_or("", Verdict::as_str),
                fault.map_or("", Fault::as_str),
                if *key_ok { "" } else { "KEY MISMATCH" }
            ),
        }
    }
}

/// A judge mode's word, as its record writes it.
fn mode_word(mode: Mode) -> &'static str {
    match mode {
        Mode::Single => "single",
        Mode::Pairwise => "pairwise",
    }
}

/// A release file's path and text; not found (build first) when unreadable.
fn release_text(release: &Path, file: &str) -> Result<(PathBuf, String), Failure> {
    let path = release.join(file);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((path, text)),
        Err(e) => Err(Failure::new(
            exit::NOT_FOUND,
            miette::miette!(
                help = "build first, or pass --release DIR",
                "cannot read {}: {e}",
                path.display()
            ),
        )),
    }
}

/// Reads a release file's JSON tree (`summary.json`, `funnel.json`).
fn release_tree(release: &Path, file: &str) -> Result<serde_json::Value, Failure> {
    let (path, text) = release_text(release, file)?;
    serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            exit::VERIFY_MISMATCH,
            miette::miette!("{}: {e}", path.display()),
        )
    })
}

/// A path that names no number of the manifest but a node of a release
/// file: a funnel count (funnel.json, counted by the release node), or a
/// part of summary.json that is not a number (a list, a missing rate).
/// Printed with what it is; None when the path is a manifest number or
/// names nothing.
fn explain_value(release: &Path, manifest: &Manifest, path: &str) -> Result<Option<i32>, Failure> {
    if path.starts_with("funnel") {
        let tree = release_tree(release, "funnel.json")?;
        let Some(value) = crate::release::value_at(&tree, "funnel", path) else {
            return Err(Failure::new(
                exit::NOT_FOUND,
                miette::miette!(
                    help = "the counts are the keys of release/funnel.json",
                    "no count `{path}` in {}",
                    release.join("funnel.json").display()
                ),
            ));
        };
        println!("number   {path} = {value}");
        println!(
            "from     the release node's count of every candidate's triage and every task's screening \
             (release/funnel.json, release digest {}); `assay explain release` names its inputs",
            manifest.release_digest
        );
        return Ok(Some(exit::OK));
    }
    if manifest.number(path).is_some() {
        return Ok(None);
    }
    let tree = release_tree(release, "summary.json")?;
    let Some(value) = crate::release::value_at(&tree, "summary", path) else {
        return Ok(None);
    };
    println!("value    {path} = {value}");
    let under: Vec<&str> = manifest
        .numbers
        .iter()
        .map(|n| n.path.as_str())
        .filter(|p| {
            p.strip_prefix(path)
                .is_some_and(|r| r.starts_with(['.', '[']))
        })
        .collect();
    if value.is_null() {
        println!("         no figure: nothing it could be computed from (no session, no attempt)");
    } else if under.is_empty() {
        println!("         not a number: summary.json holds it as it is shown");
    } else {
        println!("         not one number: the numbers under it are");
        for p in under {
            println!("  {p}");
        }
    }
    Ok(Some(exit::OK))
}

/// A report label alone: that number for every agent/model, by path.
pub(super) fn explain_label(release: &Path, label: &str, rest: &str) -> Result<i32, Failure> {
    let tree = release_tree(release, "summary.json")?;
    let agents: Vec<&String> = tree["agents"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    println!("label    `{label}` is `{rest}` under each agent/model in summary.json");
    for key in agents {
        let path = format!("summary.agents{}{rest}", crate::release::path_segment(key));
        let value = crate::release::value_at(&tree, "summary", &path)
            .map_or_else(|| "(none)".to_owned(), ToString::to_string);
        println!("  {path} = {value}");
    }
    println!("next     `assay explain PATH` for what one of them was computed from");
    Ok(exit::OK)
}
