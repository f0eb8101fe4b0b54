//! `assay build`: build the pipeline's DAG, reusing every cached node.

use assay_engine::{BuildOptions, CacheLock};
use clap::Args;

use super::shared::{Failure, Global, runtime};
use crate::exit;
use crate::model::config::ExecutorKind;
use crate::pipeline::Pipeline;
use crate::render::Renderer;

/// Build the pipeline: mine, screen, grade and release, doing only what changed.
#[derive(Args, Debug)]
pub(crate) struct BuildArgs {
    /// Nodes run at once (default: the number of cores).
    #[arg(short, long)]
    jobs: Option<usize>,
    /// One JSON object per event on stdout; the last line is the summary.
    #[arg(long)]
    json: bool,
    /// Re-execute cached observations of these kinds (e.g. `run`): flaky tests get read again.
    #[arg(long, value_delimiter = ',', value_parser = crate::model::kind::parse_arg)]
    reread: Vec<crate::model::kind::NodeKind>,
    /// Print every node as it runs.
    #[arg(short, long)]
    verbose: bool,
    /// Run every environment on this executor for this build, whatever
    /// `[env] executor` says: `local` (bubblewrap), `docker` or `slurm`.
    #[arg(long, value_parser = executor_kind())]
    executor: Option<ExecutorKind>,
    #[command(flatten)]
    pub(crate) bounds: super::shared::SourceBounds,
}

/// `--executor`: a word of [`ExecutorKind`].
fn executor_kind() -> impl clap::builder::TypedValueParser<Value = ExecutorKind> {
    use clap::builder::TypedValueParser;
    let words = ExecutorKind::ALL.iter().map(|k| k.as_str());
    clap::builder::PossibleValuesParser::new(words)
        .try_map(|word: String| ExecutorKind::parse(&word).ok_or("not an executor"))
}

pub(crate) fn run(global: &Global, args: BuildArgs) -> Result<i32, Failure> {
    let mut ph = crate::run::phase::Phases::new("build");
    let mut pipeline = global.load_pipeline()?;
    ph.mark("load pipeline");
    pipeline.settings.executor_override = args.executor;
    let cache_dir = global.cache_dir(Some(&pipeline));
    super::shared::check_cache_dir(&cache_dir)?;
    let _lock = CacheLock::acquire(&cache_dir, |pid| {
        eprintln!(
            "waiting for another build on {} to finish{}",
            cache_dir.display(),
            pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
        );
    })
    .map_err(Failure::cache)?;
    let store = global.open_store_checked(Some(&pipeline))?;
    store.clean_tmp();
    ph.mark("open store");
    let rt = runtime()?;
    let plan = super::shared::laid_out(&pipeline, &store)?;
    ph.mark("lay out");
    for line in plan.executors.start(&rt)? {
        eprintln!("{line}");
    }
    let executors = plan.executors;
    let graph = plan.graph;
    let opts = BuildOptions {
        jobs: args.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        }),
        reread: super::shared::kinds(&args.reread),
        label: pipeline.path.display().to_string(),
    };
    let mut renderer = Renderer::new(args.json, args.verbose);
    let mut sink = |e: &assay_engine::Event<'_>| renderer.event(e);
    let interrupted = rt.block_on(async {
        tokio::select! {
            outcome = assay_engine::build(&store, &graph, &opts, &mut sink) => Some(outcome),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    let Some(outcome) = interrupted else {
        // Dropping the build cancelled every job: local runs' process groups
        // are killed as their guards drop, containers are removed by theirs.
        // Shut the runtime down so those drops happen now, then make sure
        // nothing this process started is left on the daemon.
        eprintln!("interrupted: stopping every run");
        rt.shutdown_timeout(std::time::Duration::from_secs(10));
        for line in executors.interrupted() {
            eprintln!("{line}");
        }
        return Ok(exit::INTERRUPTED);
    };
    ph.mark("engine build");
    for line in executors.finished(&rt) {
        eprintln!("{line}");
    }
    let outcome = outcome.map_err(Failure::cache)?;
    let tasks = task_records(&store, &outcome, &graph);
    if let Some(id) = graph.find(crate::model::names::RELEASE) {
        write_release(&pipeline, &store, &outcome, id, &tasks)?;
    }
    ph.mark("write release");
    let lost = crate::plan::lost::Lost::of_build(&store, &outcome, &graph);
    ph.mark("lost");
    if !lost.is_empty() {
        eprintln!("{lost}");
    }
    if outcome.summary.failed > 0 {
        let failures = super::failures::Failures::of(&outcome.summary.failed_by_class);
        eprintln!("{failures}");
        return Ok(failures.code());
    }
    if let Some(why) = broken_everywhere(&tasks) {
        eprintln!("error: every screened task found its environment broken: {why}");
        return Ok(exit::ENVIRONMENT);
    }
    Ok(exit::OK)
}

/// The task records this build made.
fn task_records(
    store: &assay_engine::Store,
    outcome: &assay_engine::BuildOutcome,
    graph: &assay_engine::Graph,
) -> Vec<crate::model::records::TaskRecord> {
    (0..graph.len())
        .filter(|&i| graph.node(i).kind == crate::model::kind::NodeKind::Task)
        .filter_map(|i| outcome.output(store, i).ok().flatten())
        .filter_map(|b| serde_json::from_slice::<crate::model::records::TaskRecord>(&b).ok())
        .collect()
}

/// When every task this build screened is uncertified because its
/// environment is broken, what broke (each distinct reason once, the first
/// few): such a build measured nothing.
fn broken_everywhere(tasks: &[crate::model::records::TaskRecord]) -> Option<String> {
    let screened = tasks
        .iter()
        .filter(|t| t.status != crate::model::records::TaskStatus::Declined);
    let mut reasons: Vec<&str> = Vec::new();
    for t in screened {
        let why = t.environment_broken()?;
        if !reasons.contains(&why) {
            reasons.push(why);
        }
    }
    const SHOWN: usize = 3;
    let more = reasons.len().saturating_sub(SHOWN);
    let mut text = reasons[..reasons.len().min(SHOWN)].join("\n  ");
    if more > 0 {
        text.push_str(&format!("\n  (and {more} more)"));
    }
    (!reasons.is_empty()).then_some(text)
}

/// What to write for the tasks held back awaiting a statement: each one's
/// file, in the pipeline's `statements` directory (as the file names it).
fn statements_to_write(pipeline: &Pipeline, tasks: &[crate::model::records::TaskRecord]) -> String {
    let mut ids: Vec<&str> = tasks
        .iter()
        .filter(|t| t.status == crate::model::records::TaskStatus::AwaitingStatement)
        .map(|t| t.instance_id.as_str())
        .collect();
    ids.sort();
    ids.dedup();
    let dir = match &pipeline.settings.statements {
        Some(d) => d
            .strip_prefix(&pipeline.root)
            .unwrap_or(d)
            .display()
            .to_string(),
        None => {
            return format!(
                "to release them, set `statements = \"DIR\"` in {} and write DIR/<task id>.md for: {}",
                pipeline.path.display(),
                ids.join(", ")
            );
        }
    };
    let files: Vec<String> = ids.iter().map(|id| format!("{dir}/{id}.md")).collect();
    format!("to release them, write {}", files.join(", "))
}

/// The funnel in one line. Tasks held back for a statement are screened and
/// certified but not released: the line counts them among the certified and
/// says how many of those are released and how many wait, so a first build
/// whose tasks all await a statement never reads `0 certified`.
fn funnel_line(record: &crate::nodes::release::ReleaseRecord) -> String {
    let f = &record.funnel;
    let waiting = f.awaiting_statement_certified;
    let mut line = format!(
        "funnel: {} candidates -> {} eligible -> {} screened -> {} certified",
        f.candidates,
        f.eligible,
        f.screened,
        f.certified + waiting
    );
    if waiting > 0 {
        line.push_str(&format!(
            " ({} released, {waiting} awaiting a statement: released once it is written)",
            f.certified
        ));
    }
    line
}

/// Removes the report pages, manifest shards and results.csv's parts (or
/// the whole results.csv, when this release has parts) of an earlier
/// release that this one does not have: a file left behind would read as
/// part of the release.
fn stale_pages(
    dir: &std::path::Path,
    record: &crate::nodes::release::ReleaseRecord,
) -> std::io::Result<()> {
    if !record.files.contains_key("results.csv") {
        match std::fs::remove_file(dir.join("results.csv")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    for sub in ["pages", "manifest", crate::release::RESULTS_DIR] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = format!("{sub}/{}", e.file_name().to_string_lossy());
            if e.file_type()?.is_file() && !record.files.contains_key(&name) {
                std::fs::remove_file(e.path())?;
            }
        }
    }
    Ok(())
}

/// Writes the release node's files into the release directory, each replaced
/// atomically (temp file + rename), and prints the funnel.
fn write_release(
    pipeline: &Pipeline,
    store: &assay_engine::Store,
    outcome: &assay_engine::BuildOutcome,
    id: usize,
    tasks: &[crate::model::records::TaskRecord],
) -> Result<(), Failure> {
    let Some(bytes) = outcome.output(store, id).map_err(Failure::cache)? else {
        eprintln!("release: not written (the release node did not succeed)");
        return Ok(());
    };
    let record: crate::nodes::release::ReleaseRecord = serde_json::from_slice(&bytes)
        .map_err(|e| Failure::new(exit::INTERNAL, miette::miette!("release record: {e}")))?;
    let dir = pipeline.release_dir();
    let io = |e: std::io::Error| {
        Failure::new(
            exit::CACHE,
            miette::miette!("writing {}: {e}", dir.display()),
        )
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    for (name, digest) in &record.files {
        let digest: assay_engine::Digest = digest
            .parse()
            .map_err(|e: String| Failure::new(exit::INTERNAL, miette::miette!("{e}")))?;
        let data = store.blobs().get(&digest).map_err(Failure::cache)?;
        // A report page lives in a directory of its own (`pages/…`).
        let path = dir.join(name);
        let parent = path.parent().unwrap_or(&dir);
        std::fs::create_dir_all(parent).map_err(io)?;
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        let tmp = parent.join(format!(".{file}.tmp"));
        std::fs::write(&tmp, &data).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)?;
    }
    stale_pages(&dir, &record).map_err(io)?;
    let f = &record.funnel;
    let declined: Vec<String> = f.declined.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let uncertified: Vec<String> = f
        .uncertified_because
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if let Some(h) = &f.harbor {
        eprintln!("{}", h.line());
    }
    if let Some(i) = &f.instances {
        eprintln!("{}", i.line());
    }
    // A pipeline of Harbor datasets or instances alone mines no pull
    // request.
    let mined = f.candidates > 0 || (f.harbor.is_none() && f.instances.is_none());
    if mined {
        eprintln!("{}", funnel_line(&record));
        eprintln!(
            "  declined: {}\n  tasks released: {} ({} uncertified: {}), held back awaiting a statement: {}",
            if declined.is_empty() {
                "none".into()
            } else {
                declined.join(", ")
            },
            f.tasks_released,
            f.uncertified,
            if uncertified.is_empty() {
                "none".into()
            } else {
                uncertified.join(", ")
            },
            f.awaiting_statement
        );
    }
    if f.awaiting_statement > 0 {
        eprintln!("  {}", statements_to_write(pipeline, tasks));
    }
    // The report's pages (a release may have thousands) are counted.
    let (pages, top): (Vec<&String>, Vec<&String>) =
        record.files.keys().partition(|n| n.starts_with("pages/"));
    let (shards, top): (Vec<&String>, Vec<&String>) =
        top.into_iter().partition(|n| n.starts_with("manifest/"));
    let (parts, top): (Vec<&String>, Vec<&String>) =
        top.into_iter().partition(|n| n.starts_with("results/"));
    let top: Vec<&str> = top.iter().map(|n| n.as_str()).collect();
    eprintln!(
        "  wrote {}/{{{}}}{}{}{}",
        dir.display(),
        top.join(","),
        match pages.len() {
            0 => String::new(),
            n => format!(" and {n} report pages in {}/pages", dir.display()),
        },
        match shards.len() {
            0 => String::new(),
            n => format!(" and {n} manifest shards in {}/manifest", dir.display()),
        },
        match parts.len() {
            0 => String::new(),
            n => format!(" and results.csv in {n} parts in {}/results", dir.display()),
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(files: &[&str]) -> crate::nodes::release::ReleaseRecord {
        crate::nodes::release::ReleaseRecord {
            files: files
                .iter()
                .map(|f| ((*f).to_owned(), String::new()))
                .collect(),
            funnel: crate::release::Funnel::default(),
        }
    }

    /// What an earlier release wrote and this one does not have goes:
    /// results.csv's parts past this release's, and the whole results.csv
    /// once this release is in parts (and the other way round).
    #[test]
    fn an_earlier_releases_results_files_are_removed_when_this_one_lacks_them() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        };
        let present = |rel: &str| dir.path().join(rel).exists();
        for f in [
            "results.csv",
            "results/0000.csv",
            "results/0001.csv",
            "results/0002.csv",
        ] {
            write(f);
        }
        stale_pages(
            dir.path(),
            &record(&["results/0000.csv", "results/0001.csv"]),
        )
        .unwrap();
        assert!(!present("results.csv"));
        assert!(present("results/0000.csv") && present("results/0001.csv"));
        assert!(!present("results/0002.csv"));
        write("results.csv");
        stale_pages(dir.path(), &record(&["results.csv"])).unwrap();
        assert!(present("results.csv"));
        assert!(!present("results/0000.csv") && !present("results/0001.csv"));
    }
}
