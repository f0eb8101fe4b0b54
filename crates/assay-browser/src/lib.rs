//! Scripted flows in the machine's headless Chromium, each step's screenshot
//! kept as evidence: the browser layer of an app task.
//!
//! Chromium is driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`, fds 3 and 4): nothing listens on a port, so the
//! app under test, which shares the browser's network namespace, has no
//! debugging endpoint to reach (docs/security.md, "The browser").
//!
//! [`run_flow`] holds these invariants:
//!
//! - **Whose fault.** A step the page does not satisfy (a missing element, a
//!   text that is not there, a page that does not load or answer before the
//!   step's deadline, a crashed page) is the app's: `ok = false` at that step,
//!   which ends the flow ([`FlowOutcome::failed_at`]). Chromium failing to
//!   start, dying, or breaking the protocol is the harness's: a
//!   [`BrowserError`], and no outcome.
//! - **A hard budget.** The whole flow, launch included, ends by `budget`.
//!   Steps may use all of it but a reserve kept for the last screenshot and
//!   the teardown; a browser-level wait that passes the budget is
//!   [`BrowserError::Budget`].
//! - **Nothing left.** Chromium runs in its own process group with a fresh
//!   profile in a temp dir; the group is killed and the profile removed at the
//!   end, on error and on panic alike. What it sends is bounded (no message is
//!   kept past 32 MiB; it is never waited on past a deadline).

mod driver;
mod launch;
mod pipe;
mod step;
mod steps;

use std::process::Command;
use std::time::{Duration, Instant};

pub use assay_exec::group_members;
pub use step::{State, Step};

use driver::Driver;
use launch::Chromium;

/// A named sequence of steps, run in one fresh browser.
#[derive(serde::Deserialize, serde::Serialize, Clone, Debug, PartialEq)]
pub struct Flow {
    pub name: String,
    pub steps: Vec<Step>,
}

/// One step as it went.
#[derive(Clone, Debug, PartialEq)]
pub struct StepResult {
    /// Its position in [`Flow::steps`].
    pub index: usize,
    pub ok: bool,
    /// What happened, for a reader: why it failed, or what it saw.
    pub detail: String,
    /// The viewport after the step, as PNG; empty when the page painted
    /// nothing in time (the detail says so).
    pub screenshot_png: Vec<u8>,
    /// The step's wall time, its screenshot included.
    pub ms: u64,
}

/// The steps run: all of them, or up to the first that failed.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowOutcome {
    pub steps: Vec<StepResult>,
    /// The index of the failing step; `None` when every step passed.
    pub failed_at: Option<usize>,
    /// From spawning Chromium to its page being ready for the first step.
    pub launch_ms: u64,
}

/// The harness's failures: none of them says anything about the app.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum BrowserError {
    /// Chromium could not be started, or exited before it answered.
    #[error("chromium did not start: {0}")]
    Launch(String),
    /// Chromium died, or its messages broke the protocol, mid-flow.
    #[error("the DevTools protocol failed: {0}")]
    Protocol(String),
    /// A wait on the browser itself passed the flow's budget.
    #[error("the browser flow passed its budget: {0}")]
    Budget(String),
}

/// Screenshot time within what is left after a step.
const SHOT_BOUND: Duration = Duration::from_secs(3);

/// The part of the budget steps may not use: the last screenshot's time and
/// the teardown's.
fn reserve(budget: Duration) -> Duration {
    (budget / 4).min(Duration::from_secs(5))
}

/// Run `flow` against the app at `base_url` (`http://127.0.0.1:8000`; each
/// `open` path is appended to it) in a fresh headless Chromium.
///
/// `chromium` is a command the caller prepared (the binary, a sandbox prefix
/// such as bwrap or nsenter, a network namespace to join in `pre_exec`):
/// this adds the headless flags, the profile and the DevTools pipe on fds 3
/// and 4, which a sandbox prefix must pass through. `Command::new("chromium")`
/// is the machine's own.
pub fn run_flow(
    chromium: Command,
    base_url: &str,
    flow: &Flow,
    budget: Duration,
) -> Result<FlowOutcome, BrowserError> {
    let start = Instant::now();
    let deadline = start + budget;
    let (mut browser, pipe) = Chromium::launch(chromium)
        .map_err(|e| BrowserError::Launch(format!("could not spawn it: {e}")))?;
    let mut driver = Driver::attach(pipe, &mut browser, deadline)?;
    let launch_ms = millis(start.elapsed());
    let step_deadline = deadline - reserve(budget);
    if Instant::now() >= step_deadline {
        // No step can be blamed for a budget the launch used up.
        return Err(BrowserError::Budget(format!(
            "chromium took {launch_ms} ms of the {} ms budget to start",
            budget.as_millis()
        )));
    }
    let mut outcome = FlowOutcome {
        steps: Vec::new(),
        failed_at: None,
        launch_ms,
    };
    for (index, step) in flow.steps.iter().enumerate() {
        let began = Instant::now();
        let done = steps::run(&mut driver, base_url, step, step_deadline)?;
        let shot_deadline = (Instant::now() + SHOT_BOUND).min(deadline);
        let screenshot = driver.screenshot(shot_deadline)?;
        let mut detail = done.detail;
        if let Err(why) = &screenshot {
            detail.push_str(&format!(" (no screenshot: {why})"));
        }
        outcome.steps.push(StepResult {
            index,
            ok: done.ok,
            detail,
            screenshot_png: screenshot.unwrap_or_default(),
            ms: millis(began.elapsed()),
        });
        if !done.ok {
            outcome.failed_at = Some(index);
            break;
        }
    }
    drop(driver);
    drop(browser);
    Ok(outcome)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
