//! App tasks: what a deployed application is checked against, and how its
//! readings become layer verdicts, controls and a grade.
//!
//! A reading of one tree goes through the layers in order — artifacts (the
//! patch applies), admission (the built tree meets the task's rules), build,
//! deployment (started, listening on its port within `ready_s`), probes
//! (HTTP), browser (flows) — and stops at the first that fails: every later
//! layer is `skipped`. Completion passes when every layer passed.
//!
//! **Controls** ([`certify`]): the reference tree is read `repeats` times and
//! must pass every layer in every reading; a probe or flow that passes in
//! some reference readings and fails in others is *flaky*, listed and left
//! out of every grade; the base tree must fail at least one layer (with the
//! flaky checks left out) in every reading, or the task tests nothing.
//!
//! **Faults** ([`grade`]) come only from what assay observed: a failed
//! layer is the agent's, except where assay saw its own side fail — the
//! port was taken before the app started, the browser could not start or
//! broke ([`Outcome::Harness`]), or a probe timed out while the reference,
//! deployed again in the same build, timed out on it too.
//!
//! Nothing here does I/O; the deployment is `run::app`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::records::Fault;
use crate::words::words;

/// The token probes and flows write as `{nonce}`: a fresh random word per
/// deployment, so an app answering from a canned file cannot match.
pub(crate) const NONCE: &str = "{nonce}";

/// An app task's hidden checks, as the settings give them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct AppChecks {
    /// Run with `sh -c` at the root of the tree before admission; its
    /// failure fails the build layer. `None`: nothing to build.
    pub(crate) build: Option<String>,
    pub(crate) admission: Admission,
    pub(crate) start: Start,
    pub(crate) probes: Vec<Probe>,
    /// Browser flows, each run in a fresh headless Chromium that reaches
    /// only the app's loopback.
    #[serde(default)]
    pub(crate) flows: Vec<assay_browser::Flow>,
    /// Seconds each flow has, Chromium's start included.
    pub(crate) flow_s: u64,
}

/// How the app is served.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Start {
    /// Run with `sh -c` at the root of the built tree; it must keep serving.
    pub(crate) command: String,
    /// The port it must listen on, on its loopback.
    pub(crate) port: u16,
    /// Seconds it has to listen.
    pub(crate) ready_s: u64,
    /// Seconds each probe has for its answer.
    pub(crate) probe_s: u64,
    /// The task's own services, started before the app in its sandbox
    /// (a stub of an API the app calls), each listening on its port.
    #[serde(default)]
    pub(crate) services: Vec<Service>,
}

/// A process the task runs beside the app.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Service {
    pub(crate) command: String,
    pub(crate) port: u16,
}

/// One HTTP request and what its answer must be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Probe {
    /// Names the probe in readings and reports; unique in its task.
    pub(crate) name: String,
    pub(crate) method: String,
    /// The request target, from `/`; may hold `{nonce}`.
    pub(crate) path: String,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// The request body; may hold `{nonce}`.
    #[serde(default)]
    pub(crate) body: Option<String>,
    pub(crate) expect: Expect,
}

/// What a probe's answer must hold. Strings may hold `{nonce}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Expect {
    pub(crate) status: u16,
    /// Header name (any case) → text its value contains.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// Text the body contains.
    #[serde(default)]
    pub(crate) body_contains: Option<String>,
    /// A regular expression the body matches (`{nonce}` is substituted
    /// quoted).
    #[serde(default)]
    pub(crate) body_regex: Option<String>,
    /// JSON pointer (RFC 6901, e.g. `/items/0/name`) → the JSON value there.
    #[serde(default)]
    pub(crate) json: BTreeMap<String, serde_json::Value>,
}

/// An answer as the probe client read it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Response {
    pub(crate) status: u16,
    /// Names lower-cased.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

/// `text` with every `{nonce}` replaced.
pub(crate) fn with_nonce(text: &str, nonce: &str) -> String {
    text.replace(NONCE, nonce)
}

/// Why `response` does not meet `expect`, or `None` when it does. A
/// `body_regex` that does not compile is a reason too (the settings check
/// every regex once, with a stand-in nonce).
pub(crate) fn unmet(expect: &Expect, nonce: &str, response: &Response) -> Option<String> {
    if response.status != expect.status {
        return Some(format!(
            "status {} (expected {})",
            response.status, expect.status
        ));
    }
    for (name, want) in &expect.headers {
        let want = with_nonce(want, nonce);
        let name = name.to_ascii_lowercase();
        let got = response.headers.iter().find(|(n, _)| *n == name);
        match got {
            Some((_, v)) if v.contains(&want) => {}
            Some((_, v)) => return Some(format!("header {name}: {v:?} lacks {want:?}")),
            None => return Some(format!("no header {name}")),
        }
    }
    let body = String::from_utf8_lossy(&response.body);
    if let Some(want) = &expect.body_contains {
        let want = with_nonce(want, nonce);
        if !body.contains(&want) {
            return Some(format!("the body lacks {want:?}: {}", excerpt(&body)));
        }
    }
    if let Some(pattern) = &expect.body_regex {
        let pattern = pattern.replace(NONCE, &regex::escape(nonce));
        match regex::Regex::new(&pattern) {
            Ok(re) if re.is_match(&body) => {}
            Ok(_) => {
                return Some(format!(
                    "the body does not match /{pattern}/: {}",
                    excerpt(&body)
                ));
            }
            Err(e) => return Some(format!("body_regex: {e}")),
        }
    }
    if !expect.json.is_empty() {
        let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&response.body) else {
            return Some(format!("the body is not JSON: {}", excerpt(&body)));
        };
        for (pointer, want) in &expect.json {
            let want = json_with_nonce(want, nonce);
            match doc.pointer(pointer) {
                Some(got) if *got == want => {}
                Some(got) => return Some(format!("{pointer} is {got} (expected {want})")),
                None => return Some(format!("{pointer} is missing")),
            }
        }
    }
    None
}

fn json_with_nonce(v: &serde_json::Value, nonce: &str) -> serde_json::Value {
    match v {
        serde_json::Value::String(s) => serde_json::Value::String(with_nonce(s, nonce)),
        other => other.clone(),
    }
}

fn excerpt(body: &str) -> String {
    const MAX: usize = 200;
    match body.char_indices().nth(MAX) {
        Some((at, _)) => format!("{:?}…", &body[..at]),
        None => format!("{body:?}"),
    }
}

/// What the tree must be before it is built and started.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Admission {
    /// Paths (from the tree's root) that must be regular files.
    #[serde(default)]
    pub(crate) required: Vec<String>,
    /// Bound on the bytes of the tree's regular files after the build.
    #[serde(default)]
    pub(crate) max_tree_bytes: Option<u64>,
    /// Refuse a start command, a `package.json` start script or a file the
    /// start command names that fetches from the network. Default on.
    #[serde(default = "yes")]
    pub(crate) no_network_start: bool,
}

fn yes() -> bool {
    true
}

/// What admission reads of a built tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TreeFacts {
    /// Regular files (symlinks not followed), relative paths.
    pub(crate) files: BTreeSet<String>,
    pub(crate) total_bytes: u64,
    /// The texts the start reaches: (where, text) — the start command, the
    /// `scripts.start` of `package.json`, files the start command names.
    pub(crate) start_texts: Vec<(String, String)>,
}

/// The commands that fetch from the network, as admission refuses them.
const FETCHERS: &str = r"(?m)(^|[\s;&|(`])(curl|wget|apt-get|apt|git\s+clone|pip3?\s+install|python3?\s+-m\s+pip\s+install|npm\s+(install|i|ci|add)|npx|yarn\s+add|pnpm\s+(add|install)|go\s+get|cargo\s+install)(\s|$)";

/// Why the tree is not admitted, or `None`.
pub(crate) fn refuse(rules: &Admission, facts: &TreeFacts) -> Option<String> {
    for path in &rules.required {
        if !facts.files.contains(path.trim_start_matches("./")) {
            return Some(format!(
                "the required file {path} is missing (or not a regular file)"
            ));
        }
    }
    if let Some(max) = rules.max_tree_bytes
        && facts.total_bytes > max
    {
        return Some(format!(
            "the built tree holds {} bytes, more than the {max} admitted",
            facts.total_bytes
        ));
    }
    if rules.no_network_start {
        let re = regex::Regex::new(FETCHERS).ok()?;
        for (place, text) in &facts.start_texts {
            if let Some(m) = re.find(text) {
                return Some(format!(
                    "{place} fetches from the network at start (`{}`); the app must start from what it built",
                    m.as_str().trim()
                ));
            }
        }
    }
    None
}

words! {
    /// The layers of an app task, in the order a reading passes them.
    pub(crate) enum Layer {
        Artifacts = "artifacts",
        Admission = "admission",
        Build = "build",
        Deployment = "deployment",
        Probes = "probes",
        Browser = "browser",
        Completion = "completion",
    }
}

words! {
    /// A layer's verdict in one reading or grade.
    pub(crate) enum LayerVerdict {
        Pass = "pass",
        Fail = "fail",
        /// An earlier layer failed.
        Skipped = "skipped",
    }
}

/// How one layer (or one probe, one flow) of a reading ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum Outcome {
    Pass,
    /// The app (its tree, its build, its process) failed it.
    Fail {
        detail: String,
    },
    /// A probe got no answer within its bound.
    TimedOut {
        detail: String,
    },
    /// assay's own side failed: the sandbox or the browser did not start,
    /// or the browser broke.
    Harness {
        detail: String,
    },
    /// Something listened on the app's port before the start command ran.
    /// In the app's own network namespace only the task's declared services
    /// run by then, so whose fault it is depends on the controls: see
    /// [`grade`].
    Taken {
        detail: String,
    },
    /// An earlier layer failed.
    Skipped,
}

impl Outcome {
    pub(crate) fn passed(&self) -> bool {
        matches!(self, Outcome::Pass)
    }

    fn detail(&self) -> &str {
        match self {
            Outcome::Fail { detail }
            | Outcome::TimedOut { detail }
            | Outcome::Harness { detail }
            | Outcome::Taken { detail } => detail,
            Outcome::Pass | Outcome::Skipped => "",
        }
    }
}

/// One named check of a reading: a probe or a browser flow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Check {
    pub(crate) name: String,
    #[serde(flatten)]
    pub(crate) outcome: Outcome,
    pub(crate) ms: u64,
}

/// One reading of one tree through the layers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Reading {
    /// Artifacts, admission, build, deployment: each as it ended, in order,
    /// up to the first that did not pass.
    pub(crate) stages: Vec<(Layer, Outcome)>,
    pub(crate) probes: Vec<Check>,
    pub(crate) flows: Vec<Check>,
    /// Wall time of each layer, milliseconds.
    pub(crate) ms: BTreeMap<Layer, u64>,
}

impl Reading {
    pub(crate) fn stage(&self, layer: Layer) -> Outcome {
        self.stages
            .iter()
            .find(|(l, _)| *l == layer)
            .map(|(_, o)| o.clone())
            .unwrap_or(Outcome::Skipped)
    }
}

/// The task's controls: whether it certifies, and the checks kept out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Controls {
    pub(crate) certified: bool,
    /// Why not, when not.
    pub(crate) reason: Option<String>,
    pub(crate) flaky_probes: Vec<String>,
    pub(crate) flaky_flows: Vec<String>,
    /// The first layer the base failed in each reading.
    pub(crate) base_fails: Vec<Layer>,
}

/// The checks that passed in some readings and failed in others.
fn flaky(readings: &[Reading], of: impl Fn(&Reading) -> &[Check]) -> Vec<String> {
    let mut seen: BTreeMap<&str, (bool, bool)> = BTreeMap::new();
    for r in readings {
        for c in of(r) {
            let e = seen.entry(c.name.as_str()).or_default();
            if c.outcome.passed() {
                e.0 = true;
            } else if !matches!(c.outcome, Outcome::Skipped) {
                e.1 = true;
            }
        }
    }
    seen.into_iter()
        .filter(|(_, (pass, fail))| *pass && *fail)
        .map(|(n, _)| n.to_owned())
        .collect()
}

/// The layers of `reading` with the `left_out` checks ignored.
pub(crate) fn layers(
    reading: &Reading,
    left_out_probes: &[String],
    left_out_flows: &[String],
) -> Vec<(Layer, Outcome)> {
    let mut out = Vec::new();
    let mut failed = false;
    let mut push = |layer: Layer, o: Outcome, out: &mut Vec<(Layer, Outcome)>| {
        let o = if failed { Outcome::Skipped } else { o };
        if !o.passed() {
            failed = true;
        }
        out.push((layer, o));
    };
    for layer in [
        Layer::Artifacts,
        Layer::Admission,
        Layer::Build,
        Layer::Deployment,
    ] {
        push(layer, reading.stage(layer), &mut out);
    }
    let checks = |checks: &[Check], left_out: &[String]| {
        let kept: Vec<&Check> = checks
            .iter()
            .filter(|c| !left_out.contains(&c.name))
            .collect();
        if kept.is_empty()
            && !checks.is_empty()
            && checks.iter().all(|c| c.outcome == Outcome::Skipped)
        {
            return Outcome::Skipped;
        }
        let first = kept.iter().find(|c| !c.outcome.passed());
        match first {
            None => Outcome::Pass,
            Some(c) => {
                let detail = format!("{}: {}", c.name, c.outcome.detail());
                match &c.outcome {
                    Outcome::TimedOut { .. } => Outcome::TimedOut { detail },
                    Outcome::Harness { .. } => Outcome::Harness { detail },
                    Outcome::Taken { .. } => Outcome::Taken { detail },
                    Outcome::Skipped => Outcome::Skipped,
                    _ => Outcome::Fail { detail },
                }
            }
        }
    };
    push(
        Layer::Probes,
        checks(&reading.probes, left_out_probes),
        &mut out,
    );
    push(
        Layer::Browser,
        checks(&reading.flows, left_out_flows),
        &mut out,
    );
    let completion = if failed {
        Outcome::Skipped
    } else {
        Outcome::Pass
    };
    out.push((Layer::Completion, completion));
    out
}

/// The first layer of `layers` that did not pass (completion aside).
fn first_failure(layers: &[(Layer, Outcome)]) -> Option<&(Layer, Outcome)> {
    layers
        .iter()
        .find(|(l, o)| *l != Layer::Completion && !o.passed())
}

/// The controls of a task from its reference and base readings.
pub(crate) fn certify(reference: &[Reading], base: &[Reading]) -> Controls {
    let flaky_probes = flaky(reference, |r| &r.probes);
    let flaky_flows = flaky(reference, |r| &r.flows);
    let mut controls = Controls {
        certified: false,
        reason: None,
        flaky_probes,
        flaky_flows,
        base_fails: Vec::new(),
    };
    if reference.is_empty() {
        controls.reason = Some("no reading of the reference tree".into());
        return controls;
    }
    for (n, r) in reference.iter().enumerate() {
        let layers = layers(r, &controls.flaky_probes, &controls.flaky_flows);
        if let Some((layer, o)) = first_failure(&layers) {
            controls.reason = Some(format!(
                "the reference fails {layer} in reading {}: {}",
                n + 1,
                o.detail()
            ));
            return controls;
        }
    }
    for (n, b) in base.iter().enumerate() {
        let layers = layers(b, &controls.flaky_probes, &controls.flaky_flows);
        match first_failure(&layers) {
            Some((layer, _)) => controls.base_fails.push(*layer),
            None => {
                controls.reason = Some(format!(
                    "the base tree passes every layer in reading {}: the task tests nothing",
                    n + 1
                ));
                return controls;
            }
        }
    }
    controls.certified = true;
    controls
}

/// One layer of a graded session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GradedLayer {
    pub(crate) layer: Layer,
    pub(crate) verdict: LayerVerdict,
    /// Whose fault a failure is; `none` otherwise.
    pub(crate) fault: Fault,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) detail: String,
}

/// A session's grade on an app task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AppGrade {
    pub(crate) layers: Vec<GradedLayer>,
    /// Every layer passed.
    pub(crate) completed: bool,
    /// The first layer that failed, and whose fault that is.
    pub(crate) failed_layer: Option<Layer>,
    pub(crate) fault: Fault,
}

/// The grade of a session's `reading` on a certified task. `reference_now`
/// is the reference deployed again in the same build when the session's
/// probes timed out: a probe that times out for both is the harness's.
pub(crate) fn grade(
    controls: &Controls,
    reading: &Reading,
    reference_now: Option<&Reading>,
) -> AppGrade {
    let layers = layers(reading, &controls.flaky_probes, &controls.flaky_flows);
    let reference_timed_out = |detail: &str| {
        reference_now.is_some_and(|r| {
            r.probes.iter().any(|c| {
                matches!(c.outcome, Outcome::TimedOut { .. })
                    && detail.starts_with(&format!("{}:", c.name))
            })
        })
    };
    let graded: Vec<GradedLayer> = layers
        .iter()
        .map(|(layer, o)| {
            let mut detail = o.detail().to_owned();
            let (verdict, fault) = match o {
                Outcome::Pass => (LayerVerdict::Pass, Fault::None),
                Outcome::Skipped => (LayerVerdict::Skipped, Fault::None),
                Outcome::Harness { .. } => (LayerVerdict::Fail, Fault::Harness),
                // The reference started on a free port in every screening
                // reading, under the same services: what differs is the
                // tree, which the services ran in. An uncertified task's
                // reference met the taken port too: the task's doing.
                Outcome::Taken { .. } if controls.certified => {
                    detail.push_str(
                        "; the task's services never took it in the reference's readings: they ran this tree's files",
                    );
                    (LayerVerdict::Fail, Fault::Agent)
                }
                Outcome::Taken { .. } => (LayerVerdict::Fail, Fault::Harness),
                Outcome::TimedOut { detail } if reference_timed_out(detail) => {
                    (LayerVerdict::Fail, Fault::Harness)
                }
                Outcome::TimedOut { .. } | Outcome::Fail { .. } => {
                    (LayerVerdict::Fail, Fault::Agent)
                }
            };
            GradedLayer {
                layer: *layer,
                verdict,
                fault,
                detail,
            }
        })
        .collect();
    let failed = graded
        .iter()
        .find(|l| l.verdict == LayerVerdict::Fail)
        .map(|l| (l.layer, l.fault));
    AppGrade {
        completed: failed.is_none(),
        failed_layer: failed.map(|(l, _)| l),
        fault: failed.map_or(Fault::None, |(_, f)| f),
        layers: graded,
    }
}

/// What an `app_build` node records: the artifacts, admission and build
/// layers of one tree, and the built tree (a tar blob) when all three passed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct BuildRecord {
    /// Each layer as it ended, in order, up to the first that did not pass.
    pub(crate) stages: Vec<(Layer, Outcome)>,
    pub(crate) ms: BTreeMap<Layer, u64>,
    /// The built tree as a tar blob (hex digest), when every layer passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tree: Option<String>,
    /// The build's log blob, when the build ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) log: Option<String>,
    /// On the docker executor: the environment's image (`sha256:…`) the
    /// tree was built in, which every later layer deploys it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) image: Option<String>,
}

impl BuildRecord {
    /// Whether every layer of the build passed (a tree to deploy).
    pub(crate) fn built(&self) -> Option<&str> {
        self.stages
            .iter()
            .all(|(_, o)| o.passed())
            .then_some(self.tree.as_deref())
            .flatten()
    }
}

/// What an `app_deploy` node records: the deployment layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct DeployRecord {
    pub(crate) outcome: Outcome,
    pub(crate) ms: u64,
    /// The app's output while it started, as a blob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) log: Option<String>,
}

/// What an `app_probe` node records: the probes layer, and where a probe
/// timed out, the same probes sent to the reference deployed again now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProbeRecord {
    /// Empty when the deployment did not pass (the layer is skipped).
    pub(crate) probes: Vec<Check>,
    pub(crate) ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reference_now: Option<Vec<Check>>,
}

/// One step of a flow as the browser node keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Shot {
    pub(crate) flow: String,
    pub(crate) step: usize,
    pub(crate) ok: bool,
    pub(crate) detail: String,
    /// The PNG screenshot's blob (hex digest); empty when none was taken.
    pub(crate) png: String,
}

/// What an `app_browse` node records: the browser layer and its evidence.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct BrowseRecord {
    /// Empty when the probes layer did not pass (the layer is skipped).
    pub(crate) flows: Vec<Check>,
    pub(crate) ms: u64,
    pub(crate) shots: Vec<Shot>,
}

impl BrowseRecord {
    /// The failing step of the first failed flow.
    pub(crate) fn failing_shot(&self) -> Option<&Shot> {
        self.shots.iter().find(|s| !s.ok)
    }
}

/// Whether a reading goes on to the browser layer. A session's (`flaky`:
/// the probes its task's controls found flaky, kept out of its grade) goes
/// on when its deployment passed and every probe but the flaky ones
/// passed: a flaky probe's failure must not cost the session its browser
/// layer, which [`layers`] would then count as passed unread. A control's
/// reading (`flaky` = `None`) goes on whenever its deployment passed:
/// which probes are flaky is known only from all the readings, and a base
/// reading whose only failure is a flaky probe must still be read by the
/// browser to tell whether the base fails.
pub(crate) fn browser_due(
    deploy: &DeployRecord,
    probe: &ProbeRecord,
    flaky: Option<&[String]>,
) -> bool {
    deploy.outcome.passed()
        && flaky.is_none_or(|flaky| {
            probe
                .probes
                .iter()
                .all(|c| c.outcome.passed() || flaky.contains(&c.name))
        })
}

/// One reading assembled from its layers' records.
pub(crate) fn reading_of(
    build: &BuildRecord,
    deploy: &DeployRecord,
    probe: &ProbeRecord,
    browse: &BrowseRecord,
) -> Reading {
    let mut reading = Reading {
        stages: build.stages.clone(),
        probes: probe.probes.clone(),
        flows: browse.flows.clone(),
        ms: build.ms.clone(),
    };
    if deploy.outcome != Outcome::Skipped {
        reading
            .stages
            .push((Layer::Deployment, deploy.outcome.clone()));
        reading.ms.insert(Layer::Deployment, deploy.ms);
    }
    if !probe.probes.is_empty() {
        reading.ms.insert(Layer::Probes, probe.ms);
    }
    if !browse.flows.is_empty() {
        reading.ms.insert(Layer::Browser, browse.ms);
    }
    reading
}

/// The reference's probes as a reading, for [`grade`]'s `reference_now`.
pub(crate) fn reference_reading(probe: &ProbeRecord) -> Option<Reading> {
    probe.reference_now.as_ref().map(|checks| Reading {
        probes: checks.clone(),
        ..Reading::default()
    })
}

/// What an `app_certify` node records.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AppCertifyRecord {
    pub(crate) task: String,
    pub(crate) controls: Controls,
    pub(crate) reference: Vec<Reading>,
    pub(crate) base: Vec<Reading>,
}

/// A session's effort beside its layers, from its run facts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Effort {
    pub(crate) turns: Option<u64>,
    pub(crate) tokens: Option<u64>,
    pub(crate) duration_ms: Option<u64>,
    /// As the agent reported it; the release prices tokens itself.
    pub(crate) reported_cost_usd: Option<f64>,
}

impl Effort {
    pub(crate) fn of(facts: &crate::model::session::RunFacts) -> Effort {
        Effort {
            turns: facts.turns,
            tokens: (!facts.tokens.is_empty()).then(|| facts.tokens.values().sum()),
            duration_ms: facts.duration_ms,
            reported_cost_usd: facts.reported_cost_usd,
        }
    }
}

/// What an `app_grade` node records: a session's layers on an app task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct AppGradeRecord {
    pub(crate) session: String,
    pub(crate) task: String,
    pub(crate) agent: String,
    pub(crate) model: String,
    /// Whether the task's controls certified it; an uncertified task's
    /// session is graded (its layers say what happened) but never scores
    /// (`not_graded` says why).
    pub(crate) certified: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) not_graded: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) grade: Option<AppGrade>,
    /// Wall time of each layer, milliseconds.
    pub(crate) ms: BTreeMap<Layer, u64>,
    pub(crate) effort: Effort,
    /// The failing browser step's screenshot blob, when the browser failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) failing_shot: Option<Shot>,
    /// On the docker executor: the environment image the session's app was
    /// built and deployed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) image: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, outcome: Outcome) -> Check {
        Check {
            name: name.into(),
            outcome,
            ms: 1,
        }
    }

    fn fail(d: &str) -> Outcome {
        Outcome::Fail { detail: d.into() }
    }

    /// A reading whose four first layers pass, with these probes.
    fn deployed(probes: Vec<Check>) -> Reading {
        Reading {
            stages: [
                Layer::Artifacts,
                Layer::Admission,
                Layer::Build,
                Layer::Deployment,
            ]
            .into_iter()
            .map(|l| (l, Outcome::Pass))
            .collect(),
            probes,
            flows: vec![check("flow", Outcome::Pass)],
            ms: BTreeMap::new(),
        }
    }

    fn response(status: u16, body: &str) -> Response {
        Response {
            status,
            headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_probe_checks_status_headers_text_regex_and_json_with_the_nonce() {
        let mut expect = Expect {
            status: 200,
            body_contains: Some("Hello, {nonce}".into()),
            ..Expect::default()
        };
        expect
            .headers
            .insert("Content-Type".into(), "text/html".into());
        assert_eq!(
            unmet(&expect, "k3y", &response(200, "<p>Hello, k3y</p>")),
            None
        );
        let canned = unmet(&expect, "k3y", &response(200, "<p>Hello, {nonce}</p>")).unwrap();
        assert!(canned.contains("lacks \"Hello, k3y\""), "{canned}");
        assert!(
            unmet(&expect, "k3y", &response(404, ""))
                .unwrap()
                .contains("status 404")
        );
        let regex = Expect {
            status: 200,
            body_regex: Some(r"^id=\d+ for {nonce}$".into()),
            ..Expect::default()
        };
        assert_eq!(unmet(&regex, "a.b", &response(200, "id=7 for a.b")), None);
        // The nonce is quoted: `.` in it matches only a dot.
        assert!(unmet(&regex, "a.b", &response(200, "id=7 for axb")).is_some());
        let mut json = Expect {
            status: 201,
            ..Expect::default()
        };
        json.json.insert("/items/0/name".into(), "{nonce}".into());
        json.json.insert("/count".into(), 1.into());
        let body = r#"{"items":[{"name":"n1"}],"count":1}"#;
        assert_eq!(unmet(&json, "n1", &response(201, body)), None);
        let wrong = unmet(&json, "n2", &response(201, body)).unwrap();
        assert!(wrong.contains("/items/0/name"), "{wrong}");
        assert!(
            unmet(&json, "n1", &response(201, "not json"))
                .unwrap()
                .contains("not JSON")
        );
    }

    #[test]
    fn admission_refuses_missing_files_a_large_tree_and_a_fetching_start() {
        let rules = Admission {
            required: vec!["app.py".into()],
            max_tree_bytes: Some(1000),
            no_network_start: true,
        };
        let mut facts = TreeFacts {
            files: ["app.py".to_owned()].into(),
            total_bytes: 10,
            start_texts: vec![("the start command".into(), "python3 app.py".into())],
        };
        assert_eq!(refuse(&rules, &facts), None);
        facts
            .start_texts
            .push(("start.sh".into(), "set -e\npip install flask\n".into()));
        assert!(refuse(&rules, &facts).unwrap().contains("pip install"));
        facts.start_texts.pop();
        facts.start_texts.push((
            "package.json scripts.start".into(),
            "npm i && node s.js".into(),
        ));
        assert!(refuse(&rules, &facts).unwrap().contains("package.json"));
        facts.start_texts.pop();
        // A word that only contains a fetcher's name is not one.
        facts
            .start_texts
            .push(("app.py".into(), "curly = 1\nwgetter()\n".into()));
        assert_eq!(refuse(&rules, &facts), None);
        facts.total_bytes = 1001;
        assert!(refuse(&rules, &facts).unwrap().contains("1001 bytes"));
        facts.files.clear();
        assert!(
            refuse(&rules, &facts)
                .unwrap()
                .contains("app.py is missing")
        );
    }

    #[test]
    fn a_failed_layer_skips_every_later_one() {
        let mut r = deployed(vec![check("greet", Outcome::Pass)]);
        r.stages[2] = (Layer::Build, fail("exit 1"));
        r.stages.truncate(3);
        let l = layers(&r, &[], &[]);
        let words: Vec<(&str, bool)> = l.iter().map(|(l, o)| (l.as_str(), o.passed())).collect();
        assert_eq!(words[2], ("build", false));
        assert!(l[3..].iter().all(|(_, o)| *o == Outcome::Skipped), "{l:?}");
    }

    #[test]
    fn a_reference_that_passes_and_a_base_that_fails_certify_and_flaky_probes_are_kept_out() {
        let reference = vec![
            deployed(vec![
                check("greet", Outcome::Pass),
                check("clock", Outcome::Pass),
            ]),
            deployed(vec![
                check("greet", Outcome::Pass),
                check("clock", fail("status 500")),
            ]),
        ];
        let base = vec![
            deployed(vec![
                check("greet", fail("status 404")),
                check("clock", Outcome::Pass)
            ]);
            2
        ];
        let c = certify(&reference, &base);
        assert!(c.certified, "{c:?}");
        assert_eq!(c.flaky_probes, ["clock"]);
        assert_eq!(c.base_fails, [Layer::Probes, Layer::Probes]);
        // The flaky probe's failure does not fail a session.
        let g = grade(&c, &reference[1], None);
        assert!(g.completed, "{g:?}");
    }

    /// A flaky probe that fails in a session's reading is kept out of its
    /// grade, so the browser still reads the app: its flows decide. Before
    /// the controls, every deployed reading goes on to the browser.
    #[test]
    fn a_flaky_probe_failing_does_not_skip_the_browser_layer() {
        let deployed = DeployRecord {
            outcome: Outcome::Pass,
            ms: 1,
            log: None,
        };
        let probe = ProbeRecord {
            probes: vec![
                check("greet", Outcome::Pass),
                check("clock", fail("status 500")),
            ],
            ms: 1,
            reference_now: None,
        };
        let flaky = ["clock".to_owned()];
        assert!(browser_due(&deployed, &probe, Some(&flaky)));
        assert!(!browser_due(&deployed, &probe, Some(&[])));
        assert!(browser_due(&deployed, &probe, None));
        let undeployed = DeployRecord {
            outcome: fail("never listened"),
            ..deployed.clone()
        };
        assert!(!browser_due(&undeployed, &probe, None));
        assert!(!browser_due(&undeployed, &probe, Some(&flaky)));

        // The flow read after the flaky failure decides the grade.
        let controls = Controls {
            certified: true,
            flaky_probes: flaky.to_vec(),
            ..Controls::default()
        };
        let build = BuildRecord {
            stages: [Layer::Artifacts, Layer::Admission, Layer::Build]
                .into_iter()
                .map(|l| (l, Outcome::Pass))
                .collect(),
            ..BuildRecord::default()
        };
        let browsed = |outcome: Outcome| BrowseRecord {
            flows: vec![check("flow", outcome)],
            ms: 1,
            shots: Vec::new(),
        };
        let g = grade(
            &controls,
            &reading_of(
                &build,
                &deployed,
                &probe,
                &browsed(fail("step 2: no #count")),
            ),
            None,
        );
        assert_eq!(
            (g.failed_layer, g.fault),
            (Some(Layer::Browser), Fault::Agent),
            "{g:?}"
        );
        let g = grade(
            &controls,
            &reading_of(&build, &deployed, &probe, &browsed(Outcome::Pass)),
            None,
        );
        assert!(g.completed, "{g:?}");
    }

    #[test]
    fn a_base_that_passes_or_a_reference_that_fails_does_not_certify() {
        let good = deployed(vec![check("greet", Outcome::Pass)]);
        let c = certify(std::slice::from_ref(&good), std::slice::from_ref(&good));
        assert!(!c.certified);
        assert!(c.reason.unwrap().contains("tests nothing"));
        let mut broken = good.clone();
        broken.stages[3] = (Layer::Deployment, fail("never listened"));
        let c = certify(&[good.clone(), broken], &[]);
        assert!(c.reason.unwrap().contains("fails deployment in reading 2"));
    }

    #[test]
    fn faults_follow_what_assay_saw() {
        let controls = Controls {
            certified: true,
            ..Controls::default()
        };
        let mut crashed = deployed(vec![]);
        crashed.stages[3] = (Layer::Deployment, fail("exited 1 before listening"));
        let g = grade(&controls, &crashed, None);
        assert_eq!(
            (g.failed_layer, g.fault),
            (Some(Layer::Deployment), Fault::Agent)
        );
        let mut no_sandbox = deployed(vec![]);
        no_sandbox.stages[3] = (
            Layer::Deployment,
            Outcome::Harness {
                detail: "cannot start the sandbox".into(),
            },
        );
        let g = grade(&controls, &no_sandbox, None);
        assert_eq!(
            (g.failed_layer, g.fault),
            (Some(Layer::Deployment), Fault::Harness)
        );
        // A port taken before the start: the harness's only where the
        // reference met it too (an uncertified task); on a certified task
        // the services ran the session's tree.
        let mut taken = deployed(vec![]);
        taken.stages[3] = (
            Layer::Deployment,
            Outcome::Taken {
                detail: "port 8000 was taken before the app started".into(),
            },
        );
        let g = grade(&controls, &taken, None);
        assert_eq!(
            (g.failed_layer, g.fault),
            (Some(Layer::Deployment), Fault::Agent)
        );
        assert!(
            g.layers[3].detail.contains("ran this tree's files"),
            "{g:?}"
        );
        let uncertified = Controls::default();
        let g = grade(&uncertified, &taken, None);
        assert_eq!(
            (g.failed_layer, g.fault),
            (Some(Layer::Deployment), Fault::Harness)
        );
        let mut no_browser = deployed(vec![check("greet", Outcome::Pass)]);
        no_browser.flows = vec![check(
            "flow",
            Outcome::Harness {
                detail: "chromium did not start".into(),
            },
        )];
        let g = grade(&controls, &no_browser, None);
        assert_eq!(
            (g.failed_layer, g.fault),
            (Some(Layer::Browser), Fault::Harness)
        );
        let slow = deployed(vec![check(
            "greet",
            Outcome::TimedOut {
                detail: "no answer in 5 s".into(),
            },
        )]);
        assert_eq!(grade(&controls, &slow, None).fault, Fault::Agent);
        let reference_slow = slow.clone();
        assert_eq!(
            grade(&controls, &slow, Some(&reference_slow)).fault,
            Fault::Harness
        );
        let reference_fine = deployed(vec![check("greet", Outcome::Pass)]);
        assert_eq!(
            grade(&controls, &slow, Some(&reference_fine)).fault,
            Fault::Agent
        );
    }
}
