//! Consumers of engine events: the `--json` line stream, a progress bar that
//! stays silent for sub-second builds, and the closing summary.

use std::io::Write;
use std::time::{Duration, Instant};

use assay_engine::{Event, Summary};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub(crate) enum Renderer {
    Json(std::io::BufWriter<std::io::Stdout>),
    Human(Human),
}

pub(crate) struct Human {
    bar: ProgressBar,
    started: Instant,
    shown: bool,
    verbose: bool,
    /// Per place a job said it runs at (a Slurm node): runs there now, and
    /// done there.
    places: std::collections::BTreeMap<String, (u64, u64)>,
}

impl Renderer {
    pub(crate) fn new(json: bool, verbose: bool) -> Renderer {
        if json {
            Renderer::Json(std::io::BufWriter::new(std::io::stdout()))
        } else {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {pos}/{len} {wide_msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            Renderer::Human(Human {
                bar,
                started: Instant::now(),
                shown: false,
                verbose,
                places: Default::default(),
            })
        }
    }

    pub(crate) fn event(&mut self, e: &Event) {
        match self {
            Renderer::Json(out) => {
                if let Ok(line) = serde_json::to_string(e) {
                    let _ = writeln!(out, "{line}");
                }
                // A consumer follows the stream live, and a killed build must
                // have shown every `node_finished` it got to: flush each line
                // that carries news. Reuse lines (most of a no-op build) ride
                // along with the next flush or the buffer filling up.
                if !matches!(e, Event::NodeReused { .. }) {
                    let _ = out.flush();
                }
            }
            Renderer::Human(h) => h.event(e),
        }
    }
}

impl Human {
    /// One line on stderr, above the bar while it shows. Printed whether or
    /// not stderr is a terminal (the bar's own `println` prints nothing
    /// while the bar is hidden: a pipe, a log file, the first second).
    /// A line of the build's progress: node names and failure reasons may
    /// quote a session file or a test's output, so its terminal escapes
    /// and control characters are taken out.
    fn line(&self, text: String) {
        let text = crate::model::shown::clean(&text);
        self.bar.suspend(|| eprintln!("{text}"));
    }

    fn event(&mut self, e: &Event) {
        // Only draw once the build has taken a second: fast builds stay quiet.
        if !self.shown && self.started.elapsed() > Duration::from_secs(1) {
            self.shown = true;
            self.bar
                .set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
        }
        match e {
            Event::BuildStarted { nodes, .. } => self.bar.set_length(*nodes as u64),
            Event::NodeStarted { name, key, .. } => {
                self.bar.set_message(name.to_string());
                if self.verbose {
                    self.line(format!("  run    {name}  key {}", key.short()));
                }
            }
            Event::NodeFinished {
                name, duration_ms, ..
            } => {
                self.bar.inc(1);
                if self.verbose {
                    self.line(format!("  done   {name}  {duration_ms} ms"));
                }
            }
            Event::NodeReused { .. } => self.bar.inc(1),
            Event::NodeFailed {
                name,
                reason,
                class,
                ..
            } => {
                self.bar.inc(1);
                let class = class.map(|c| format!(" ({c})")).unwrap_or_default();
                self.line(format!("  FAILED {name}{class}: {reason}"));
            }
            Event::NodeSkipped { name, because, .. } => {
                self.bar.inc(1);
                if self.verbose {
                    self.line(format!("  skip   {name}: {because}"));
                }
            }
            Event::JobState {
                name, state, place, ..
            } => {
                if self.verbose {
                    let at = place.map(|p| format!(" on {p}")).unwrap_or_default();
                    self.line(format!("  {state:<6} {name}{at}"));
                }
                let Some(place) = place else {
                    return;
                };
                let (running, done) = self.places.entry(place.to_string()).or_default();
                match *state {
                    "running" => *running += 1,
                    "done" => {
                        *running = running.saturating_sub(1);
                        *done += 1;
                    }
                    _ => *running = running.saturating_sub(1),
                }
                let places: Vec<String> = self
                    .places
                    .iter()
                    .map(|(p, (r, d))| format!("{p}: {r} running, {d} done"))
                    .collect();
                self.bar
                    .set_message(format!("{name} · {}", places.join(" · ")));
            }
            Event::JobWarning { name, message, .. } => {
                self.line(format!("warning: {name}: {message}"));
            }
            Event::CacheRepaired { name, problem, .. } => {
                self.line(format!("  cache  {name}: {problem}; recomputing"));
            }
            Event::Summary(s) => {
                self.bar.finish_and_clear();
                eprintln!("{}", summary_line(s));
            }
        }
    }
}

pub(crate) fn summary_line(s: &Summary) -> String {
    let kinds: Vec<String> = s
        .by_kind
        .iter()
        .map(|(k, c)| {
            let mut parts = Vec::new();
            if c.executed > 0 {
                parts.push(format!("{} run", c.executed));
            }
            if c.reused > 0 {
                parts.push(format!("{} reused", c.reused));
            }
            if c.failed > 0 {
                parts.push(format!("{} failed", c.failed));
            }
            if c.skipped > 0 {
                parts.push(format!("{} skipped", c.skipped));
            }
            format!("{k}: {}", parts.join(", "))
        })
        .collect();
    format!(
        "build: {} executed, {} reused, {} failed, {} skipped\n  {}",
        s.executed,
        s.reused,
        s.failed,
        s.skipped,
        kinds.join("\n  ")
    )
}
