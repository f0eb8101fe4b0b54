//! The command line: clap structs converted once into domain calls.

mod bench_dag;
mod build;
mod completions;
mod docs;
mod explain;
mod explain_number;
mod export;
mod failures;
mod forward;
mod gc;
mod harbor_verify;
mod hash;
mod init;
mod labels;
mod plan;
mod shared;
mod show;
mod verify;
mod worker;

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};

pub(crate) use shared::Failure;
use shared::{Global, SourceBounds};

#[derive(Parser, Debug)]
#[command(
    name = "assay",
    version,
    about = "Coding-agent benchmarks from merged pull requests, with numbers you can check from a hash."
)]
pub(crate) struct Cli {
    /// The pipeline file.
    #[arg(short, long, global = true, default_value = "pipeline.toml")]
    pub(crate) pipeline: PathBuf,
    /// The cache directory (overrides `cache` in the pipeline file).
    #[arg(long, global = true)]
    pub(crate) cache: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Build(build::BuildArgs),
    Plan(plan::PlanArgs),
    Explain(explain::ExplainArgs),
    Export(export::ExportArgs),
    Show(show::ShowArgs),
    Gc(gc::GcArgs),
    Verify(verify::VerifyArgs),
    Hash(hash::HashArgs),
    Completions(completions::CompletionsArgs),
    Docs(docs::DocsArgs),
    Init(init::InitArgs),
    #[command(hide = true)]
    BenchDag(bench_dag::BenchDagArgs),
    #[command(hide = true)]
    Worker(worker::WorkerArgs),
    #[command(hide = true)]
    Forward(forward::ForwardArgs),
    #[command(hide = true)]
    HarborVerify(harbor_verify::HarborVerifyArgs),
}

pub(crate) fn run(cli: Cli) -> Result<i32, Failure> {
    let bounds = match &cli.command {
        Command::Build(a) => a.bounds.clone(),
        Command::Plan(a) => a.bounds.clone(),
        Command::Verify(a) => a.bounds.clone(),
        _ => SourceBounds::default(),
    };
    let global = Global {
        pipeline: cli.pipeline,
        cache: cli.cache,
        since: bounds.since,
        limit: bounds.limit,
    };
    match cli.command {
        Command::Build(a) => build::run(&global, a),
        Command::Plan(a) => plan::run(&global, a),
        Command::Explain(a) => explain::run(&global, a),
        Command::Export(a) => export::run(&global, a),
        Command::Show(a) => show::run(&global, a),
        Command::Gc(a) => gc::run(&global, a),
        Command::Verify(a) => verify::run(&global, a),
        Command::Hash(a) => hash::run(&global, a),
        Command::Completions(a) => completions::run(a, Cli::command()),
        Command::Docs(a) => docs::run(a),
        Command::Init(a) => init::run(&global, a),
        Command::BenchDag(a) => bench_dag::run(&global, a),
        Command::Worker(a) => worker::run(a),
        Command::Forward(a) => forward::run(a),
        Command::HarborVerify(a) => harbor_verify::run(a),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Cli;

    /// `--since` and `--limit` are offered where they bound something.
    #[test]
    fn source_bounds_are_options_of_the_commands_that_read_sources_only() {
        for cmd in ["build", "plan", "verify"] {
            let parsed =
                Cli::try_parse_from(["assay", cmd, "--since", "2024-01-01", "--limit", "3"]);
            assert!(parsed.is_ok(), "{cmd}: {:?}", parsed.err());
        }
        for cmd in [&["show", "abc"][..], &["gc"], &["hash", "x"]] {
            let mut args = vec!["assay"];
            args.extend_from_slice(cmd);
            args.extend(["--since", "2024-01-01"]);
            let e = Cli::try_parse_from(&args).unwrap_err();
            assert!(e.to_string().contains("--since"), "{cmd:?}: {e}");
        }
    }

    #[test]
    fn reread_takes_node_kinds_and_refuses_other_words() {
        for cmd in ["build", "plan"] {
            assert!(Cli::try_parse_from(["assay", cmd, "--reread", "run,judge"]).is_ok());
            let e = Cli::try_parse_from(["assay", cmd, "--reread", "run,runs"])
                .unwrap_err()
                .to_string();
            assert!(e.contains("no node kind `runs`"), "{e}");
        }
        assert_eq!(
            super::shared::kinds(&[
                crate::model::kind::NodeKind::Judge,
                crate::model::kind::NodeKind::Run
            ]),
            ["judge".to_owned(), "run".to_owned()].into()
        );
    }
}
