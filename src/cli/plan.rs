//! `assay plan`: what a build would run and why, without running anything.

use assay_engine::PlanState;
use clap::Args;

use super::shared::{Failure, Global};
use crate::exit;
use crate::model::config::ExecutorKind;
use crate::model::kind::NodeKind;

/// Show what `assay build` would execute, and why, without running it.
#[derive(Args, Debug)]
pub(crate) struct PlanArgs {
    /// One JSON object per node on stdout.
    #[arg(long)]
    json: bool,
    /// List cached nodes too (by default only what would run).
    #[arg(long)]
    all: bool,
    /// Plan as if `build --reread KINDS` were given.
    #[arg(long, value_delimiter = ',', value_parser = crate::model::kind::parse_arg)]
    reread: Vec<NodeKind>,
    #[command(flatten)]
    pub(crate) bounds: super::shared::SourceBounds,
}

pub(crate) fn run(global: &Global, args: PlanArgs) -> Result<i32, Failure> {
    let pipeline = global.load_pipeline()?;
    let store = global.open_store_checked(Some(&pipeline))?;
    let plan = super::shared::laid_out(&pipeline, &store)?;
    let graph = plan.graph;
    let previous = match store.builds(1).map_err(Failure::cache)?.first() {
        Some(b) => store.manifest(b).map_err(Failure::cache)?,
        None => None,
    };
    // With nothing cached, a node waiting on another's output cannot be
    // reused whatever that output is: it runs.
    let first = store.stats().map_err(Failure::cache)?.0 == 0;
    let reread = super::shared::kinds(&args.reread);
    let entries =
        assay_engine::plan(&store, &graph, &reread, previous.as_ref()).map_err(Failure::cache)?;
    let (mut cached, mut run, mut blocked) = (0, 0, 0);
    // Runs that would or may execute (a new input's output may make them
    // new), by the executor they go to (from their environment node).
    let mut runs_on: std::collections::BTreeMap<ExecutorKind, usize> = Default::default();
    // Rechecks that would or may execute, and the reruns and checks they
    // may run on top (a rerun only when a test failed).
    let (mut rechecks, mut extra) = (0, 0);
    for e in &entries {
        let executes = matches!(e.state, PlanState::Run { .. } | PlanState::Blocked { .. });
        let bound = graph.find(&e.name).and_then(|id| {
            let spec = graph.node(id);
            let executor = spec.deps.iter().find_map(|d| plan.env_executors.get(d))?;
            Some((spec, *executor))
        });
        if let Some((spec, executor)) = bound.filter(|_| executes) {
            if e.kind.as_str() == NodeKind::Run {
                *runs_on.entry(executor).or_default() += 1;
            } else if e.kind.as_str() == NodeKind::Recheck && executor != ExecutorKind::Local {
                let params: serde_json::Value =
                    serde_json::from_str(&spec.params_json).unwrap_or_default();
                let checks = if params["check_command"].is_string() {
                    2
                } else {
                    0
                };
                rechecks += 1;
                extra += params["reruns"].as_u64().unwrap_or(0) + checks;
            }
        }
        match &e.state {
            PlanState::Cached => cached += 1,
            PlanState::Run { .. } => run += 1,
            PlanState::Blocked { .. } => blocked += 1,
        }
        if args.json {
            println!("{}", serde_json::to_string(e).unwrap_or_default());
        } else {
            match &e.state {
                PlanState::Cached if args.all => println!("cached   {}", e.name),
                PlanState::Cached => {}
                PlanState::Run { reason } => println!("run      {}  ({reason})", e.name),
                PlanState::Blocked { on } if first => {
                    println!("run      {}  (new, after {on})", e.name)
                }
                PlanState::Blocked { on } => {
                    println!("maybe    {}  (depends on the output of {on})", e.name)
                }
            }
        }
    }
    if !args.json {
        println!("{}", counts_line(run, blocked, cached, first));
        // Where the test runs would go, when not all on this machine.
        if runs_on.keys().any(|e| *e != ExecutorKind::Local) {
            let by: Vec<String> = runs_on
                .iter()
                .map(|(e, n)| format!("{n} on {}", e.as_str()))
                .collect();
            let inside = if extra > 0 {
                format!(", and up to {extra} reruns and checks inside {rechecks} rechecks")
            } else {
                String::new()
            };
            println!(
                "test runs that would or may execute: {}{inside}",
                by.join(", ")
            );
        }
    }
    Ok(exit::OK)
}

/// The plan's last line. `blocked` nodes wait on outputs not yet known: on a
/// cache that holds nothing they run whatever those outputs are, so a first
/// plan counts them with the rest instead of as a possibility.
fn counts_line(run: usize, blocked: usize, cached: usize, first: bool) -> String {
    if first {
        return format!(
            "{} would run: nothing is cached yet, so a first build runs every node",
            run + blocked
        );
    }
    format!("{run} would run, {blocked} would run if their inputs' outputs change, {cached} cached")
}

#[cfg(test)]
mod tests {
    use super::counts_line;

    #[test]
    fn a_first_plan_says_everything_runs() {
        assert_eq!(
            counts_line(3, 13, 0, true),
            "16 would run: nothing is cached yet, so a first build runs every node"
        );
    }

    #[test]
    fn a_later_plan_counts_what_may_run_apart() {
        assert_eq!(
            counts_line(1, 2, 40, false),
            "1 would run, 2 would run if their inputs' outputs change, 40 cached"
        );
    }
}
