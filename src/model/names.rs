//! Node names, built and parsed in this one place. A name is `<kind>:<what>`;
//! names are what users type (`assay explain grade:alpha/calc-1.json:exclude`)
//! and what manifests list, so their shapes are part of the interface
//! (docs/stages.md): change one here or nowhere.

use crate::model::config::Arm;
use serde::Serialize;

/// The one release node.
pub(crate) const RELEASE: &str = "release";

pub(crate) fn step(name: &str) -> String {
    format!("step:{name}")
}

/// The step a `step:` node name names, if it is one.
pub(crate) fn step_of(node: &str) -> Option<&str> {
    node.strip_prefix("step:")
}

/// An environment, by the first 12 hex digits of its params' hash.
pub(crate) fn env(params_hash: &blake3::Hash) -> String {
    format!("env:{}", &params_hash.to_hex()[..12])
}

/// A Harbor task folder of a `[[harbor_dataset]]`.
pub(crate) fn harbor_task(dataset: &str, folder: &str) -> String {
    format!("harbor_task:{dataset}/{folder}")
}

/// A session on a Harbor task, graded by the task's own verifier.
pub(crate) fn harbor_grade(session: &str) -> String {
    format!("harbor_grade:{session}")
}

/// A Deep-SWE-shaped Harbor task's triage record (`<dataset>/<folder>`).
pub(crate) fn deepswe_triage(id: &str) -> String {
    format!("swe_triage:{id}")
}

/// The environment made from a Harbor task's own image: a Deep-SWE-shaped
/// task's, and a reward-only task's for the agents' attempts (its word is
/// `swe_env` for both).
pub(crate) fn harbor_image_env(id: &str) -> String {
    format!("swe_env:{id}")
}

/// A SWE-bench-family instance (`<name>/<instance_id>`).
pub(crate) fn instance(id: &str) -> String {
    format!("instance:{id}")
}

/// A SWE-bench-family instance's triage record.
pub(crate) fn instance_triage(id: &str) -> String {
    format!("instance_triage:{id}")
}

/// A SWE-bench-family instance's environment.
pub(crate) fn instance_env(id: &str) -> String {
    format!("instance_env:{id}")
}

pub(crate) fn triage(candidate: &str) -> String {
    format!("triage:{candidate}")
}

pub(crate) fn tree(candidate: &str, state: State) -> String {
    format!("tree:{candidate}:{}", state.as_str())
}

/// Reading `repeat` of a candidate's tree in `state`, at screening.
pub(crate) fn screen_run(candidate: &str, state: State, repeat: u32) -> String {
    format!("run:{candidate}:{}:r{repeat}", state.as_str())
}

/// The reading of a candidate's gold tree that certifies its canaries.
pub(crate) fn certify(candidate: &str) -> String {
    format!("certify:{candidate}")
}

pub(crate) fn screen(candidate: &str) -> String {
    format!("screen:{candidate}")
}

/// A task: `task:<id>` on the basic track, `task:<id>:<track>` otherwise.
pub(crate) fn task(instance_id: &str, track: &str) -> String {
    if track == "basic" {
        format!("task:{instance_id}")
    } else {
        format!("task:{instance_id}:{track}")
    }
}

/// The task id a `task:` node name names (either track).
pub(crate) fn task_of(node: &str) -> Option<&str> {
    let rest = node.strip_prefix("task:")?;
    Some(rest.split(':').next().unwrap_or(rest))
}

pub(crate) fn session(id: &str) -> String {
    format!("session:{id}")
}

/// One attempt of an agent assay runs itself (a session it made).
pub(crate) fn attempt(id: &str) -> String {
    format!("attempt:{id}")
}

/// The environment of an agent's own tools (`[[agent]] setup`).
pub(crate) fn agent_env(label: &str) -> String {
    format!("env:agent/{label}")
}

/// A session's patch staged over its task's tree, in one arm.
pub(crate) fn stage(session: &str, arm: Arm) -> String {
    format!("stage:{session}:{}", arm.as_str())
}

/// The graded run of a session in one arm.
pub(crate) fn graded_run(session: &str, arm: Arm) -> String {
    format!("run:{session}:{}", arm.as_str())
}

/// The checks and reruns of a session's graded run in one arm.
pub(crate) fn recheck(session: &str, arm: Arm) -> String {
    format!("recheck:{session}:{}", arm.as_str())
}

pub(crate) fn grade(session: &str, arm: Arm) -> String {
    format!("grade:{session}:{}", arm.as_str())
}

pub(crate) fn metrics(session: &str) -> String {
    format!("metrics:{session}")
}

/// Metric `metric` on a session's graded tree.
pub(crate) fn quality(metric: &str, session: &str) -> String {
    format!("quality:{metric}:{session}")
}

/// Metric `metric` on a task's gold tree.
pub(crate) fn quality_gold(metric: &str, task: &str) -> String {
    format!("quality:{metric}:gold:{task}")
}

/// Sample `sample` of judge `judge` reading one session.
pub(crate) fn judge_single(judge: &str, session: &str, sample: u32) -> String {
    format!("judge:{judge}:{session}:s{sample}")
}

/// Sample `sample` of judge `judge` comparing two sessions, `first` shown first.
pub(crate) fn judge_pair(judge: &str, first: &str, second: &str, sample: u32) -> String {
    format!("judge:{judge}:{first}>{second}:s{sample}")
}

/// Whose tree an app node reads: the task's reference or base (a control,
/// named by its task) or a session's (named by the session, unique).
#[derive(Clone, Copy, Debug)]
pub(crate) enum AppTree<'a> {
    Reference(&'a str),
    Base(&'a str),
    Session(&'a str),
}

impl AppTree<'_> {
    fn what(self) -> String {
        match self {
            AppTree::Reference(task) => format!("{task}:reference"),
            AppTree::Base(task) => format!("{task}:base"),
            AppTree::Session(session) => session.to_owned(),
        }
    }
}

/// An app tree composed, admitted and built.
pub(crate) fn app_build(tree: AppTree<'_>) -> String {
    format!("app_build:{}", tree.what())
}

/// A layer after the build (`app_deploy`, `app_probe`, `app_browse`) of an
/// app tree: a control's reading `repeat`, or a session's one reading.
pub(crate) fn app_layer(kind: &str, tree: AppTree<'_>, repeat: Option<u32>) -> String {
    match repeat {
        Some(r) => format!("{kind}:{}:r{r}", tree.what()),
        None => format!("{kind}:{}", tree.what()),
    }
}

/// An app task's controls.
pub(crate) fn app_certify(task: &str) -> String {
    format!("app_certify:{task}")
}

/// A session's grade on an app task.
pub(crate) fn app_grade(session: &str) -> String {
    format!("app_grade:{session}")
}

/// A state of a screened candidate: the three trees each test is read in.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum State {
    /// The base commit as it is.
    Base,
    /// Base + the hidden test patch: the empty-patch control.
    Test,
    /// Base + test patch + gold patch: the reference control.
    Gold,
}

impl State {
    /// In the order screening reads them (and node params number them:
    /// the order of the variants is the key's encoding).
    pub(crate) const ALL: [State; 3] = [State::Base, State::Test, State::Gold];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Base => "base",
            State::Test => "test",
            State::Gold => "gold",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_names_parse_back_to_their_id_on_every_track() {
        assert_eq!(task("calc-1", "basic"), "task:calc-1");
        assert_eq!(task("calc-1", "spec"), "task:calc-1:spec");
        for track in ["basic", "spec"] {
            assert_eq!(task_of(&task("calc-4-parse", track)), Some("calc-4-parse"));
        }
        assert_eq!(task_of("grade:calc-1:exclude"), None);
    }

    #[test]
    fn step_names_parse_back() {
        assert_eq!(step_of(&step("fetch")), Some("fetch"));
        assert_eq!(step_of("release"), None);
    }

    /// The shapes users type and manifests list (docs/stages.md).
    #[test]
    fn names_keep_their_published_shapes() {
        assert_eq!(tree("calc-1", State::Base), "tree:calc-1:base");
        assert_eq!(screen_run("calc-1", State::Base, 1), "run:calc-1:base:r1");
        assert_eq!(graded_run("a/s.json", Arm::Keep), "run:a/s.json:keep");
        assert_eq!(grade("a/s.json", Arm::Exclude), "grade:a/s.json:exclude");
        assert_eq!(judge_single("j", "a/s.json", 0), "judge:j:a/s.json:s0");
        assert_eq!(judge_pair("j", "a", "b", 2), "judge:j:a>b:s2");
        assert_eq!(env(&blake3::hash(b"x")).len(), "env:".len() + 12);
    }
}
