//! `assay verify`: re-hash the cache (every key from its stored record, every
//! blob from its bytes) and check a release against it (see `audit`): say
//! which node, file or number disagrees.

use std::path::{Path, PathBuf};

use clap::Args;

use super::shared::{Failure, Global};
use crate::exit;
use crate::pipeline::Pipeline;

/// Check the cache and the release against their digests, recomputing every number.
///
/// The cache: every key against its record, every output and blob against its
/// digest. The release: its manifest's digests, and every file recomputed from
/// the cache and compared byte for byte.
#[derive(Args, Debug)]
pub(crate) struct VerifyArgs {
    /// The release directory to check (default: the pipeline's, when it exists).
    #[arg(long)]
    release: Option<PathBuf>,
    /// Check the cache only.
    #[arg(long, conflicts_with = "release")]
    cache_only: bool,
    #[command(flatten)]
    pub(crate) bounds: super::shared::SourceBounds,
    /// Re-execute the cached nodes of these kinds (e.g. `triage,screen,task,grade`)
    /// on their cached inputs and compare what they produce with what is stored.
    #[arg(long, value_delimiter = ',')]
    reexecute: Vec<String>,
    /// One JSON object per problem on stdout.
    #[arg(long)]
    json: bool,
    /// Check an exported bundle (`assay export`) instead: no cache, source
    /// or pipeline.toml needed.
    #[arg(long, conflicts_with_all = ["release", "cache_only", "reexecute"])]
    bundle: Option<PathBuf>,
    /// With `--bundle`: the release digest the bundle must be of.
    #[arg(long, requires = "bundle")]
    digest: Option<String>,
    /// Check only this published number (its path in manifest.json, e.g.
    /// `summary.agents[alpha/model-a].resolved_rate`, shown on report.html
    /// when the pointer rests on it) and the nodes it rests on: in the
    /// bundle with `--bundle`, else in this cache's last release. A count
    /// of release/funnel.json (`funnel.certified`) is checked against the
    /// recomputed funnel and the triage and screening nodes it counts.
    #[arg(conflicts_with_all = ["release", "cache_only", "reexecute"])]
    number: Option<String>,
}

pub(crate) fn run(global: &Global, mut args: VerifyArgs) -> Result<i32, Failure> {
    // A report label in place of the path's tail (`summary.agents[K].pass@1`).
    if let Some(super::labels::Named::Path(path)) = args.number.as_deref().map(super::labels::read)
    {
        args.number = Some(path);
    }
    if let Some(dir) = &args.bundle {
        return bundle(dir, &args);
    }
    if args.number.is_some() {
        return number_in_cache(global, &args);
    }
    let mut ph = crate::run::phase::Phases::new("verify");
    let pipeline = Pipeline::load(&global.pipeline).ok();
    let store = global.open_store(pipeline.as_ref())?;
    ph.mark("open");
    let problems = store.verify().map_err(Failure::cache)?;
    ph.mark("cache");
    let (nodes, builds) = store.stats().map_err(Failure::cache)?;
    ph.mark("stats");
    for p in &problems {
        if args.json {
            println!("{}", serde_json::to_string(p).unwrap_or_default());
        } else {
            eprintln!("MISMATCH {} {}: {}", p.kind, p.key, p.problem);
        }
    }
    if !args.json {
        if problems.is_empty() {
            println!("cache ok: {nodes} nodes, {builds} builds verified");
        } else {
            eprintln!("{} problems in {nodes} nodes", problems.len());
        }
    }
    let mut mismatch = !problems.is_empty();

    // assay's own object store: every loose object must hash to its name (a
    // planted object would change what later staged trees contain).
    mismatch |= !object_store_ok(&store.dir().join("git"), args.json);
    ph.mark("fsck");
    // Environment directories against the digests recorded at setup.
    match crate::ops::inspect::damaged_environments(&store) {
        Ok(damaged) if damaged.is_empty() => {}
        Ok(damaged) => {
            mismatch = true;
            for (dir, why) in damaged {
                eprintln!("MISMATCH environment {dir}: {why}");
            }
        }
        Err(e) => return Err(e.into()),
    }

    let release_dir = match (&args.release, args.cache_only) {
        (_, true) => None,
        (Some(dir), _) => Some(dir.clone()),
        (None, _) => pipeline
            .as_ref()
            .map(Pipeline::release_dir)
            .filter(|d| d.join("tasks.jsonl").is_file()),
    };
    ph.mark("environments");
    let mut release_result = serde_json::Value::Null;
    if let Some(dir) = release_dir {
        let (findings, checked) = crate::ops::audit::verify_release(&store, &dir).map_err(|e| {
            Failure::new(
                exit::VERIFY_MISMATCH,
                miette::miette!("release {}: {e}", dir.display()),
            )
        })?;
        print_findings(&findings, args.json);
        if !args.json {
            if findings.is_empty() {
                println!(
                    "release ok: {} files in {}{}, recomputed from {} inputs",
                    checked.files,
                    dir.display(),
                    checked
                        .release_digest
                        .as_ref()
                        .map(|d| format!(" (release digest {d})"))
                        .unwrap_or_default(),
                    checked.inputs
                );
            } else {
                eprintln!("release {}: {} problems", dir.display(), findings.len());
            }
        }
        ph.mark("release");
        release_result = serde_json::json!({
            "dir": dir.display().to_string(),
            "files": checked.files,
            "inputs": checked.inputs,
            "release_digest": checked.release_digest.map(|d| d.to_string()),
            "problems": findings.len(),
        });
        mismatch |= !findings.is_empty();
    }
    if !args.reexecute.is_empty() {
        mismatch |= reexecute(global, &store, &args)?;
    }
    if args.json {
        // The last line says how it went, problems or none.
        let result = serde_json::json!({
            "verified": !mismatch,
            "nodes": nodes,
            "builds": builds,
            "cache_problems": problems.len(),
            "release": release_result,
        });
        println!("{result}");
    }
    Ok(if mismatch {
        exit::VERIFY_MISMATCH
    } else {
        exit::OK
    })
}

/// Whether every loose object of the object store at `git_dir` hashes to
/// its name (`git fsck`); what does not is printed.
fn object_store_ok(git_dir: &Path, json: bool) -> bool {
    let mut ok = true;
    if git_dir.join("objects").is_dir() {
        let out = std::process::Command::new("git")
            .args(["fsck", "--no-full", "--no-dangling", "--no-progress"])
            .current_dir(git_dir)
            .env("GIT_DIR", git_dir)
            .output();
        match out {
            Ok(o) => {
                let text = String::from_utf8_lossy(&o.stderr).into_owned()
                    + &String::from_utf8_lossy(&o.stdout);
                let errors: Vec<&str> = text
                    .lines()
                    .filter(|l| {
                        l.starts_with("error")
                            || l.starts_with("missing")
                            || l.starts_with("broken")
                    })
                    .collect();
                if !o.status.success() || !errors.is_empty() {
                    ok = false;
                    for e in &errors {
                        eprintln!("MISMATCH object store: {e}");
                    }
                    if errors.is_empty() {
                        eprintln!("MISMATCH object store: git fsck failed: {}", text.trim());
                    }
                } else if !json {
                    println!("object store ok: {}", git_dir.display());
                }
            }
            Err(e) => {
                ok = false;
                eprintln!("MISMATCH object store: cannot run git fsck: {e}");
            }
        }
    }
    ok
}

/// `--reexecute KINDS`: returns whether anything differed.
fn reexecute(
    global: &Global,
    store: &assay_engine::Store,
    args: &VerifyArgs,
) -> Result<bool, Failure> {
    let pipeline = global.load_pipeline()?;
    let dir = global.cache_dir(Some(&pipeline));
    let _lock = assay_engine::CacheLock::acquire(&dir, |_| {
        eprintln!("waiting for the build on this cache to finish");
    })
    .map_err(Failure::cache)?;
    let rt = super::shared::runtime()?;
    let plan = super::shared::laid_out(&pipeline, store)?;
    // The executors start as for a build (the daemon's leftovers swept, the
    // images it holds noted) and release what they took (an allocation)
    // after.
    for line in plan.executors.start(&rt)? {
        eprintln!("{line}");
    }
    let kinds = args.reexecute.iter().cloned().collect();
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let report = rt.block_on(assay_engine::recheck(store, &plan.graph, &kinds, jobs));
    for line in plan.executors.finished(&rt) {
        eprintln!("{line}");
    }
    let report = report.map_err(Failure::cache)?;
    let differ: Vec<&assay_engine::Recheck> = report.checked.iter().filter(|r| !r.same()).collect();
    // A pure node that differs is a mismatch; an observation that differs is
    // a new reading, unless it changes a verdict: a grade read again that
    // comes out with another verdict or fault is a mismatch too.
    let changed_verdict = |r: &assay_engine::Recheck| {
        crate::ops::inspect::verdict_change(
            &r.kind,
            r.stored_bytes.as_deref(),
            r.new_bytes.as_deref(),
        )
    };
    let verdicts: Vec<(&assay_engine::Recheck, String)> = differ
        .iter()
        .filter_map(|r| changed_verdict(r).map(|c| (*r, c)))
        .collect();
    let mismatches = differ.iter().filter(|r| !r.observation).count() + verdicts.len();
    for (r, change) in &verdicts {
        if args.json {
            println!(
                "{}",
                serde_json::json!({"node": r.name, "kind": r.kind, "verdict_changed": change})
            );
        } else {
            eprintln!("VERDICT  {}: {change}", r.name);
        }
    }
    for r in &differ {
        if args.json {
            println!("{}", serde_json::to_string(r).unwrap_or_default());
        } else {
            match &r.recomputed {
                Ok(d) if r.observation => eprintln!(
                    "REREAD   {}: an observation, read again: stored output {}, new reading {}",
                    r.name, r.stored, d
                ),
                Ok(d) => eprintln!(
                    "DIFFERS  {}: stored output {}, re-executed {}",
                    r.name, r.stored, d
                ),
                Err(e) => eprintln!("FAILED   {}: {e}", r.name),
            }
        }
    }
    if !args.json {
        println!(
            "re-executed {} nodes of kinds {}: {} identical, {} differ, {} verdicts changed, {} observations read differently{}",
            report.checked.len(),
            args.reexecute.join(","),
            report.checked.len() - differ.len(),
            mismatches - verdicts.len(),
            verdicts.len(),
            differ.len() - (mismatches - verdicts.len()),
            if report.not_cached.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} nodes not cached, not checked: build first)",
                    report.not_cached.len()
                )
            }
        );
    }
    Ok(mismatches > 0)
}

/// `verify NUMBER` without `--bundle`: the cache's last release is exported
/// into a private temporary directory and that bundle's number is checked,
/// so a number is checked the one way whether it comes with a bundle or
/// from the cache (what it rests on, re-hashed from the bytes).
fn number_in_cache(global: &Global, args: &VerifyArgs) -> Result<i32, Failure> {
    let pipeline = Pipeline::load(&global.pipeline).ok();
    let store = global.open_store(pipeline.as_ref())?;
    let tmp = tempfile::tempdir().map_err(Failure::cache)?;
    let dir = tmp.path().join("bundle");
    crate::ops::audit::bundle::export(&store, &dir, &[]).map_err(|e| {
        Failure::new(
            exit::NOT_FOUND,
            miette::miette!(
                help = "build first; `assay verify --bundle DIR NUMBER` checks an exported bundle",
                "cannot check a number of this cache's last release: {e}"
            ),
        )
    })?;
    let cache = global.cache_dir(pipeline.as_ref());
    checked(&dir, args, Held::Cache(&cache))
}

/// `--bundle DIR [NUMBER]`: everything from the bundle alone.
fn bundle(dir: &std::path::Path, args: &VerifyArgs) -> Result<i32, Failure> {
    checked(dir, args, Held::Bundle)
}

/// What the bundle checked holds: a bundle given, or the cache's last
/// release (the cache's directory), exported to check it.
enum Held<'a> {
    Bundle,
    Cache(&'a std::path::Path),
}

/// Checks the bundle in `dir` and says what it held.
fn checked(dir: &std::path::Path, args: &VerifyArgs, held: Held<'_>) -> Result<i32, Failure> {
    use crate::ops::audit::bundle::BundleError;
    let (findings, checked) = crate::ops::audit::bundle::verify_bundle(
        dir,
        args.number.as_deref(),
        args.digest.as_deref(),
    )
    .map_err(|e| match e {
        BundleError::NotABundle(_) => Failure::new(
            exit::NOT_FOUND,
            miette::miette!(help = "`assay export --to DIR` writes a bundle", "{e}"),
        ),
        BundleError::NoSuchNumber(_) => Failure::new(
            exit::NOT_FOUND,
            miette::miette!(
                help = "the paths are listed in release/manifest.json under `numbers`",
                "{e}"
            ),
        ),
        BundleError::NoSuchCount(_) => Failure::new(
            exit::NOT_FOUND,
            miette::miette!(
                help = "the counts are the keys of release/funnel.json",
                "{e}"
            ),
        ),
        BundleError::Unreadable(_) => Failure::new(
            exit::VERIFY_MISMATCH,
            miette::miette!("bundle {}: {e}", dir.display()),
        ),
    })?;
    print_findings(&findings, args.json);
    if !args.json {
        let what = match &args.number {
            Some(n) if n.starts_with("funnel") => format!("count {n}"),
            Some(n) => format!("number {n}"),
            None => format!("release {}", checked.release_digest),
        };
        let omitted = if checked.omitted_blobs > 0 {
            format!(" ({} left out, digests kept)", checked.omitted_blobs)
        } else {
            String::new()
        };
        let counts = format!(
            "{} nodes, {} blobs{omitted}, {} release files, {} numbers",
            checked.nodes, checked.blobs, checked.files, checked.numbers
        );
        const SHOWN: usize = 20;
        for (node, says) in checked.sources.iter().take(SHOWN) {
            println!("  rests on {} {}", one_line(node), one_line(says));
        }
        if checked.sources.len() > SHOWN {
            println!(
                "  … and {} more (release/manifest.json lists them all)",
                checked.sources.len() - SHOWN
            );
        }
        let (ok, problems) = match held {
            Held::Bundle => ("bundle ok".to_owned(), format!("bundle {}", dir.display())),
            Held::Cache(cache) => (
                format!("ok (the last release of the cache {})", cache.display()),
                format!("the last release of the cache {}", cache.display()),
            ),
        };
        if findings.is_empty() {
            println!("{ok}: {what}: checked {counts}");
        } else {
            eprintln!(
                "{problems}: {} problems (first: {}); checked {counts}",
                findings.len(),
                one_line(&findings[0].what)
            );
        }
    }
    Ok(if findings.is_empty() {
        exit::OK
    } else {
        exit::VERIFY_MISMATCH
    })
}

/// One `MISMATCH what: problem` line per finding (or one JSON object each).
fn print_findings(findings: &[crate::ops::audit::Finding], json: bool) {
    for f in findings {
        if json {
            println!("{}", serde_json::to_string(f).unwrap_or_default());
        } else {
            eprintln!("MISMATCH {}: {}", one_line(&f.what), one_line(&f.problem));
        }
    }
}

/// `text` as one line of a terminal: a finding names files and quotes
/// lines of a bundle someone else made, whose names and bytes may hold
/// terminal escapes (to hide a finding, or rewrite the line before it) or
/// line breaks (to forge a line of their own, such as `bundle ok`). Both
/// are taken out; `--json` escapes them instead.
fn one_line(text: &str) -> String {
    crate::model::shown::clean(text).replace(['\n', '\t'], " ")
}
