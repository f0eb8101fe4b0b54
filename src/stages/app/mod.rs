//! App tasks' I/O: a tree read through the layers of
//! [`rules::app`](crate::model::rules::app) — admission read from the built tree,
//! the build and the deployment sandboxed ([`deploy`]), the probes sent by
//! assay from the app's network namespace ([`http`]).

pub(crate) mod deploy;
pub(crate) mod http;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assay_exec::Bwrap;

use crate::model::rules::app::{AppChecks, Layer, Outcome, Reading, TreeFacts};

/// Bound on the build.
const BUILD_S: u64 = 600;
/// Bytes of a file the start names that admission reads.
const START_FILE_CAP: u64 = 1 << 20;

/// The Chromium the browser layer launches: `ASSAY_CHROMIUM`, else
/// `chromium` on the system's path.
pub(crate) fn chromium() -> PathBuf {
    std::env::var_os("ASSAY_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// Reads `tree` (composed, the artifacts layer `artifacts`) through every
/// layer of `checks`; `work` holds the logs. The tree is built in place.
pub(crate) fn read(
    bwrap: &Bwrap,
    chromium: &Path,
    checks: &AppChecks,
    artifacts: Outcome,
    tree: &Path,
    work: &Path,
) -> Reading {
    let mut reading = Reading::default();
    let timed = |layer: Layer, reading: &mut Reading, f: &mut dyn FnMut() -> Outcome| {
        let started = Instant::now();
        let o = f();
        reading
            .ms
            .insert(layer, started.elapsed().as_millis() as u64);
        let passed = o.passed();
        reading.stages.push((layer, o));
        passed
    };
    if !timed(Layer::Artifacts, &mut reading, &mut || artifacts.clone()) {
        return reading;
    }
    let admitted = timed(Layer::Admission, &mut reading, &mut || match facts(
        tree,
        &checks.start.command,
    ) {
        Err(e) => Outcome::Harness {
            detail: format!("cannot read the tree: {e}"),
        },
        Ok(facts) => match crate::model::rules::app::refuse(&checks.admission, &facts) {
            None => Outcome::Pass,
            Some(detail) => Outcome::Fail { detail },
        },
    });
    if !admitted {
        return reading;
    }
    let built = timed(Layer::Build, &mut reading, &mut || match &checks.build {
        None => Outcome::Pass,
        Some(command) => deploy::build(
            bwrap,
            tree,
            command,
            Duration::from_secs(BUILD_S),
            &work.join("build.log"),
        ),
    });
    if !built {
        return reading;
    }
    let started = Instant::now();
    let deployment = deploy::Deployment::start(bwrap, tree, &checks.start, &work.join("app.log"));
    reading
        .ms
        .insert(Layer::Deployment, started.elapsed().as_millis() as u64);
    let deployment = match deployment {
        Ok(d) => {
            reading.stages.push((Layer::Deployment, Outcome::Pass));
            d
        }
        Err(o) => {
            reading.stages.push((Layer::Deployment, o));
            return reading;
        }
    };
    let started = Instant::now();
    reading.probes = deployment.probe(
        &checks.probes,
        &deploy::nonce(),
        Duration::from_secs(checks.start.probe_s),
    );
    reading
        .ms
        .insert(Layer::Probes, started.elapsed().as_millis() as u64);
    if !checks.flows.is_empty() && reading.probes.iter().all(|c| c.outcome.passed()) {
        let started = Instant::now();
        reading.flows =
            deployment.browse(&checks.flows, chromium, Duration::from_secs(checks.flow_s));
        reading
            .ms
            .insert(Layer::Browser, started.elapsed().as_millis() as u64);
    }
    reading
}

/// What admission reads of the tree as the session left it (before the
/// task's build, which is assay's to run): its regular files and their
/// bytes (no symlink followed), and the texts the start reaches.
fn facts(tree: &Path, start: &str) -> std::io::Result<TreeFacts> {
    let mut facts = TreeFacts::default();
    let mut stack = vec![tree.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                facts.total_bytes += entry.metadata()?.len();
                if let Ok(rel) = entry.path().strip_prefix(tree) {
                    facts.files.insert(rel.to_string_lossy().into_owned());
                }
            }
        }
    }
    facts
        .start_texts
        .push(("the start command".into(), start.to_owned()));
    let read = |rel: &str| assay_exec::beneath::read(tree, Path::new(rel), START_FILE_CAP).ok();
    if let Some(bytes) = read("package.json")
        && let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&bytes)
    {
        for script in ["prestart", "start", "poststart"] {
            if let Some(text) = doc
                .pointer(&format!("/scripts/{script}"))
                .and_then(|v| v.as_str())
            {
                facts
                    .start_texts
                    .push((format!("package.json scripts.{script}"), text.to_owned()));
            }
        }
    }
    for word in start.split_whitespace() {
        let word = word.trim_start_matches("./");
        if facts.files.contains(word)
            && let Some(bytes) = read(word)
        {
            facts.start_texts.push((
                word.to_owned(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    Ok(facts)
}

#[cfg(test)]
mod tests;
