//! What every command shares: the global options, the failure on its way
//! out, the cache directory's checks, the laid-out graph and the runtime.

use std::path::PathBuf;

use crate::exit;

/// `--since` / `--limit`: which candidates of each source are read. Only
/// the commands that read the sources take them (build, plan, verify).
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct SourceBounds {
    /// Only candidates merged on or after this day (YYYY-MM-DD), for every source.
    #[arg(long)]
    pub(crate) since: Option<String>,
    /// At most this many candidates per source, newest first.
    #[arg(long)]
    pub(crate) limit: Option<usize>,
}

/// An error on its way out: what to print, and the exit code it maps to.
pub(crate) struct Failure {
    pub(crate) report: miette::Report,
    pub(crate) code: i32,
}

impl Failure {
    pub(crate) fn new(code: i32, report: impl Into<miette::Report>) -> Failure {
        Failure {
            report: report.into(),
            code,
        }
    }

    pub(crate) fn cache(e: impl std::fmt::Display) -> Failure {
        Failure::new(
            exit::CACHE,
            miette::miette!(
                help = "if the index is damaged, move `index.sqlite` out of the cache directory; the next build starts it afresh (blobs are reused)",
                "{e}"
            ),
        )
    }
}

impl From<crate::run::error::StageError> for Failure {
    fn from(e: crate::run::error::StageError) -> Failure {
        use crate::run::error::StageError;
        let code = match &e {
            StageError::Config(_) => exit::CONFIG,
            StageError::Cache(_) => exit::CACHE,
            StageError::Sandbox { .. } => exit::SANDBOX,
        };
        Failure::new(code, e)
    }
}

impl From<crate::pipeline::ConfigError> for Failure {
    fn from(e: crate::pipeline::ConfigError) -> Failure {
        Failure::new(exit::CONFIG, e)
    }
}

/// Options every command shares.
pub(crate) struct Global {
    pub(crate) pipeline: PathBuf,
    pub(crate) cache: Option<PathBuf>,
    pub(crate) since: Option<String>,
    pub(crate) limit: Option<usize>,
}

impl Global {
    /// The pipeline file, with `--since` / `--limit` applied to every source.
    pub(crate) fn load_pipeline(&self) -> Result<crate::pipeline::Pipeline, Failure> {
        let since = match &self.since {
            None => None,
            Some(since) => Some(crate::pipeline::parse_date(since).ok_or_else(|| {
                Failure::new(
                    exit::USAGE,
                    miette::miette!(
                        help = "write the day as YYYY-MM-DD",
                        "--since `{since}` is not a date"
                    ),
                )
            })?),
        };
        let mut p = crate::pipeline::Pipeline::load(&self.pipeline)?;
        p.settings.bound_sources(crate::pipeline::Bounds {
            since,
            limit: self.limit,
        });
        Ok(p)
    }

    /// The cache directory: `--cache`, else the pipeline's `cache`, else `./cache`.
    pub(crate) fn cache_dir(&self, config: Option<&crate::pipeline::Pipeline>) -> PathBuf {
        if let Some(c) = &self.cache {
            return c.clone();
        }
        match config {
            Some(p) => p.cache_dir(),
            None => PathBuf::from("cache"),
        }
    }

    pub(crate) fn open_store(
        &self,
        config: Option<&crate::pipeline::Pipeline>,
    ) -> Result<assay_engine::Store, Failure> {
        let dir = self.cache_dir(config);
        check_cache_dir(&dir)?;
        let store = assay_engine::Store::open(&dir).map_err(Failure::cache)?;
        // Marks the directory as ours (the CACHEDIR.TAG convention), so a
        // later `--cache` naming some other directory is refused.
        let tag = dir.join(CACHE_TAG);
        if !tag.exists() {
            let _ = std::fs::write(&tag, CACHE_TAG_TEXT);
        }
        Ok(store)
    }

    /// [`Global::open_store`] for commands that build on the index (build,
    /// plan): a damaged index is refused (exit 5) instead of reusing rows
    /// from it. Costs one `PRAGMA quick_check` (docs/cache.md).
    pub(crate) fn open_store_checked(
        &self,
        config: Option<&crate::pipeline::Pipeline>,
    ) -> Result<assay_engine::Store, Failure> {
        let store = self.open_store(config)?;
        store.quick_check().map_err(Failure::cache)?;
        Ok(store)
    }
}

/// The marker file of an assay cache directory.
pub(crate) const CACHE_TAG: &str = "CACHEDIR.TAG";
const CACHE_TAG_TEXT: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This file is a cache directory tag created by assay.\n\
# For information about cache directory tags see https://bford.info/cachedir/\n";

/// Refuses a cache directory that is not one: the root, or an existing
/// directory with files in it but neither assay's marker nor its index, which
/// `build` would write into and `gc` delete from.
pub(crate) fn check_cache_dir(dir: &std::path::Path) -> Result<(), Failure> {
    let refuse = |why: String| {
        Failure::new(
            exit::CACHE,
            miette::miette!(
                help = "point --cache (or `cache` in pipeline.toml) at an empty or new directory, or at an existing assay cache",
                "{why}"
            ),
        )
    };
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    if absolute.parent().is_none() {
        return Err(refuse(format!(
            "{} cannot be a cache directory",
            absolute.display()
        )));
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let ours = dir.join(CACHE_TAG).is_file() || dir.join("index.sqlite").is_file();
    // `lock` is the build lock, taken before the store is opened.
    let foreign = entries.flatten().any(|e| e.file_name() != "lock");
    if !ours && foreign {
        return Err(refuse(format!(
            "{} is not an assay cache (no {CACHE_TAG}, no index.sqlite) and is not empty; nothing in it was touched",
            dir.display()
        )));
    }
    Ok(())
}

/// The build's graph from the pipeline, with the layout's warnings printed:
/// the setup every command that runs or plans nodes shares.
pub(crate) fn laid_out(
    pipeline: &crate::pipeline::Pipeline,
    store: &assay_engine::Store,
) -> Result<crate::ops::build::BuildPlan, Failure> {
    let plan = crate::ops::build::lay_out(pipeline, store)?;
    for w in &plan.warnings {
        eprintln!("{w}");
    }
    Ok(plan)
}

/// Kinds as the engine takes them (`--reread`): their words.
pub(crate) fn kinds(kinds: &[crate::model::kind::NodeKind]) -> std::collections::BTreeSet<String> {
    kinds.iter().map(|k| k.as_str().to_owned()).collect()
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Failure::new(
                exit::INTERNAL,
                miette::miette!("cannot start the runtime: {e}"),
            )
        })
}
