//! App tasks' I/O: a tree read through the layers of
//! [`rules::app`](crate::model::rules::app) — admission read from the built tree,
//! the build and the deployment sandboxed ([`deploy`] on this machine,
//! [`docker`] in containers of the environment's image, as the [`Runner`]
//! says), the probes sent by assay from the app's network namespace
//! ([`http`]).

pub(crate) mod deploy;
pub(crate) mod docker;
pub(crate) mod http;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assay_exec::Bwrap;

use crate::run::executor::Parking;

use crate::model::rules::app::{AppChecks, Layer, Outcome, Reading, TreeFacts};

/// Bound on the build.
const BUILD_S: u64 = 600;
/// Bytes of a file the start names that admission reads.
const START_FILE_CAP: u64 = 1 << 20;

/// Where an app's build and deployments run: this machine under
/// bubblewrap, or fresh containers of the task's environment image.
pub(crate) enum Runner {
    Local,
    Docker(Box<docker::DockerApp>),
}

impl Runner {
    /// Where a layer after the build deploys: in containers of the image
    /// the build names when `confine` is the docker executor's, else here.
    /// Called on the build's runtime.
    pub(crate) fn after_build(
        executors: &std::sync::Arc<crate::run::executor::Executors>,
        confine: Option<&crate::model::config::Confinement>,
        build: &crate::model::rules::app::BuildRecord,
    ) -> Runner {
        let image = build
            .image
            .clone()
            .ok_or_else(|| "the build names none".to_owned());
        confine
            .and_then(|conf| {
                docker::DockerApp::new(
                    tokio::runtime::Handle::current(),
                    std::sync::Arc::clone(executors),
                    conf,
                    image,
                )
            })
            .map_or(Runner::Local, |d| Runner::Docker(Box::new(d)))
    }

    /// Starts `start` over the built `tree`.
    fn start(
        &self,
        bwrap: &Bwrap,
        tree: &Path,
        start: &crate::model::rules::app::Start,
        log: &Path,
    ) -> Result<deploy::Deployment, Outcome> {
        match self {
            Runner::Local => deploy::Deployment::start(bwrap, tree, start, log),
            Runner::Docker(d) => d.start(bwrap, tree, start, log),
        }
    }
}

/// The Chromium the browser layer launches: `ASSAY_CHROMIUM`, else
/// `chromium` on the system's path.
pub(crate) fn chromium() -> PathBuf {
    std::env::var_os("ASSAY_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// The artifacts, admission and build layers of `tree` (composed, the
/// artifacts layer `artifacts`), each as it ended and its time, up to the
/// first that did not pass; `work` holds the build's log. The tree is built
/// in place.
pub(crate) fn build_layers(
    bwrap: &Bwrap,
    runner: &Runner,
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
    timed(Layer::Build, &mut reading, &mut || match &checks.build {
        None => Outcome::Pass,
        Some(command) => {
            let (within, log) = (Duration::from_secs(BUILD_S), work.join("build.log"));
            match runner {
                Runner::Local => deploy::build(bwrap, tree, command, within, &log),
                Runner::Docker(d) => d.build(tree, command, within, &log),
            }
        }
    });
    reading
}

/// Reads `tree` (composed, the artifacts layer `artifacts`) through every
/// layer of `checks`; `work` holds the logs. The tree is built in place.
/// (The nodes read the layers one node each; this reads them in one go.)
#[cfg(test)]
pub(crate) fn read(
    bwrap: &Bwrap,
    chromium: &Path,
    checks: &AppChecks,
    artifacts: Outcome,
    tree: &Path,
    work: &Path,
) -> Reading {
    let mut reading = build_layers(bwrap, &Runner::Local, checks, artifacts, tree, work);
    if !reading.stages.iter().all(|(_, o)| o.passed()) {
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
        reading.flows = deployment
            .browse(&checks.flows, chromium, Duration::from_secs(checks.flow_s))
            .into_iter()
            .map(|(check, _)| check)
            .collect();
        reading
            .ms
            .insert(Layer::Browser, started.elapsed().as_millis() as u64);
    }
    reading
}

/// Bytes a built tree may hold to be kept (as a tar blob) and deployed.
pub(crate) const BUILT_TREE_CAP: u64 = 256 << 20;

/// `tree` as a tar (regular files, directories and symlinks as they are,
/// none followed), or why not: over [`BUILT_TREE_CAP`].
pub(crate) fn pack(tree: &Path) -> std::io::Result<Result<Vec<u8>, String>> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    builder.mode(tar::HeaderMode::Deterministic);
    let mut entries = Vec::new();
    let mut stack = vec![tree.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                stack.push(entry.path());
            }
            entries.push(entry.path());
        }
    }
    entries.sort();
    let mut total = 0u64;
    for path in entries {
        let meta = std::fs::symlink_metadata(&path)?;
        total += meta.len();
        if total > BUILT_TREE_CAP {
            return Ok(Err(format!(
                "the built tree holds more than {BUILT_TREE_CAP} bytes"
            )));
        }
        let rel = path.strip_prefix(tree).unwrap_or(&path);
        builder.append_path_with_name(&path, rel)?;
    }
    Ok(Ok(builder.into_inner()?))
}

/// Unpacks a tar of [`pack`] into `dest` (nothing written outside it).
pub(crate) fn unpack(tar: &[u8], dest: &Path) -> std::io::Result<()> {
    let mut archive = tar::Archive::new(tar);
    archive.set_preserve_permissions(true);
    archive.set_overwrite(false);
    archive.unpack(dest)
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

/// A built tree (a tar of [`pack`]) unpacked into a fresh directory and
/// started there. Dropped: the app's processes first, then the directory.
pub(crate) struct Served {
    pub(crate) deployment: Result<deploy::Deployment, Outcome>,
    /// Wall time from the start to listening (or giving up).
    pub(crate) ms: u64,
    dir: Option<tempfile::TempDir>,
}

impl Served {
    /// Unpacks `tar` and starts `start` over it, where `runner` says.
    pub(crate) fn start(
        bwrap: &Bwrap,
        runner: &Runner,
        tar: &[u8],
        start: &crate::model::rules::app::Start,
    ) -> Served {
        let began = Instant::now();
        let dir = match tempfile::Builder::new().prefix("assay-app-").tempdir() {
            Ok(dir) => dir,
            Err(e) => {
                return Served {
                    deployment: Err(Outcome::Harness {
                        detail: format!("cannot make the deployment's directory: {e}"),
                    }),
                    ms: 0,
                    dir: None,
                };
            }
        };
        let tree = dir.path().join("tree");
        let deployment = match std::fs::create_dir(&tree).and_then(|()| unpack(tar, &tree)) {
            Err(e) => Err(Outcome::Harness {
                detail: format!("cannot unpack the built tree: {e}"),
            }),
            Ok(()) => runner.start(bwrap, &tree, start, &dir.path().join("app.log")),
        };
        Served {
            deployment,
            ms: began.elapsed().as_millis() as u64,
            dir: Some(dir),
        }
    }

    /// What the app wrote while it ran (capped).
    pub(crate) fn log(&self) -> Vec<u8> {
        let mut bytes = self
            .dir
            .as_ref()
            .and_then(|d| std::fs::read(d.path().join("app.log")).ok())
            .unwrap_or_default();
        bytes.truncate(LOG_CAP);
        bytes
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // The app's processes end before its directory is removed.
        self.deployment = Err(Outcome::Skipped);
    }
}

/// What parks and finds a deployment: the built tree's blob and the start.
pub(crate) fn park_key(tree: &str, start: &crate::model::rules::app::Start) -> String {
    format!(
        "{tree} {}",
        serde_json::to_string(start).unwrap_or_default()
    )
}

impl Served {
    /// Leaves a deployment that came to listen serving under `key`
    /// ([`park_key`]) in `lot` for [`Served::unpark`], a minute at most;
    /// its hold keeps enforcing its limits meanwhile. Anything else is
    /// ended. The deployment layer reads an app that came to listen; the
    /// probes then read that same app, as one would by hand, instead of
    /// paying a second sandbox and start for it.
    pub(crate) fn park(self, lot: &Parking, key: String) {
        if self.deployment.is_ok() {
            lot.park(key, Box::new(self));
        }
    }

    /// The deployment parked under `key`, as it is now: serving, or
    /// stopped by a limit or by its own exit meanwhile (which its probes
    /// then record).
    pub(crate) fn unpark(lot: &Parking, key: &str) -> Option<Served> {
        lot.take(key)?.downcast::<Served>().ok().map(|s| *s)
    }
}

/// Bytes of an app's log kept.
const LOG_CAP: usize = 1 << 20;
