//! `assay docs [TOPIC]`: the reference pages a user's own files point at,
//! built into the binary. A `pipeline.toml` written by `assay init` sits in
//! the user's repository, where the source tree's `docs/` is not: the
//! comments it carries name `assay docs pipeline` instead, which works
//! wherever the binary does.

use clap::{Args, ValueEnum};

use super::shared::Failure;
use crate::exit;

/// Print one of assay's reference pages (markdown), as shipped with this binary.
///
/// `assay docs pipeline` documents every key of `pipeline.toml`.
#[derive(Args, Debug)]
pub(crate) struct DocsArgs {
    /// The page (default: pipeline).
    #[arg(value_enum, default_value_t = Topic::Pipeline)]
    topic: Topic,
}

/// The pages a pipeline's own comments and diagnostics refer to.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Topic {
    /// Every key of pipeline.toml (docs/pipeline.md).
    Pipeline,
    /// The session file schema and the importers (docs/sessions.md).
    Sessions,
    /// What each language needs from a run's environment (docs/languages.md).
    Languages,
    /// The verdicts and whose fault each is (docs/verdicts.md).
    Verdicts,
    /// The nodes, screening, controls and the funnel (docs/stages.md).
    Stages,
}

impl Topic {
    fn text(self) -> &'static str {
        match self {
            Topic::Pipeline => include_str!("../../docs/pipeline.md"),
            Topic::Sessions => include_str!("../../docs/sessions.md"),
            Topic::Languages => include_str!("../../docs/languages.md"),
            Topic::Verdicts => include_str!("../../docs/verdicts.md"),
            Topic::Stages => include_str!("../../docs/stages.md"),
        }
    }
}

pub(crate) fn run(args: DocsArgs) -> Result<i32, Failure> {
    use std::io::Write as _;
    // A closed pipe (`assay docs | head`) is not an error.
    let _ = std::io::stdout().write_all(args.topic.text().as_bytes());
    Ok(exit::OK)
}
