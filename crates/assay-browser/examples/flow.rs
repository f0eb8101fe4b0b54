//! Run one flow from a TOML file against a served app, in the machine's
//! Chromium, and print how it went as one JSON line (timings included):
//!
//!     cargo run -p assay-browser --example flow -- BASE_URL FLOW.toml [BUDGET_SECS] [SHOTS_DIR]
//!
//! FLOW.toml holds `name` and `steps` (docs/pipeline.md, "Browser flows").
//! With SHOTS_DIR, each step's screenshot is written there as `NN.png`.

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use assay_browser::{Flow, run_flow};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, path, rest @ ..] = args.as_slice() else {
        eprintln!("usage: flow BASE_URL FLOW.toml [BUDGET_SECS] [SHOTS_DIR]");
        return ExitCode::from(2);
    };
    let budget = rest.first().and_then(|s| s.parse().ok()).unwrap_or(60);
    let flow: Flow = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|text| toml::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(flow) => flow,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let began = Instant::now();
    let outcome = run_flow(
        Command::new("chromium"),
        base,
        &flow,
        Duration::from_secs(budget),
    );
    let total_ms = began.elapsed().as_millis();
    match outcome {
        Ok(outcome) => {
            if let Some(dir) = rest.get(1) {
                for step in &outcome.steps {
                    let file = format!("{dir}/{:02}.png", step.index);
                    if let Err(e) = std::fs::write(&file, &step.screenshot_png) {
                        eprintln!("{file}: {e}");
                    }
                }
            }
            let steps: Vec<_> = outcome
                .steps
                .iter()
                .map(|s| serde_json::json!({"ok": s.ok, "ms": s.ms, "detail": s.detail, "png_bytes": s.screenshot_png.len()}))
                .collect();
            println!(
                "{}",
                serde_json::json!({"flow": flow.name, "failed_at": outcome.failed_at,
                    "launch_ms": outcome.launch_ms, "total_ms": total_ms, "steps": steps})
            );
            if outcome.failed_at.is_some() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(3)
        }
    }
}
