//! A candidate's screening nodes — its three trees, `repeats` runs of each,
//! the screen and the canaries' certification — laid out the same way for
//! a mined candidate, a Deep-SWE-shaped folder and an instance.

use std::path::Path;
use std::sync::Arc;

use assay_engine::NodeSpec;

use super::envs::EnvSettings;
use super::source::{Cx, Laid};
use crate::model::names;
use crate::model::rules::screening::Scope;
use crate::model::rules::timeout::TimeoutRule;
use crate::nodes::adapter;
use crate::nodes::certify::{Certify, CertifyNames};
use crate::nodes::run::{Run, RunNames};
use crate::nodes::screen::{Screen, ScreenNames, ScreenParams};
use crate::nodes::task::{Task, TaskNames, TaskParams};
use crate::nodes::tree::{State, Tree, TreeNames, TreeParams};
use crate::nodes::{release, screen, task};
use crate::run::executor::Executors;
use crate::run::redact::RedactConfig;

/// What a candidate's screening nodes are laid out with.
pub(super) struct Screening<'a> {
    pub(super) candidate: &'a str,
    pub(super) triage: &'a str,
    pub(super) env: &'a EnvSettings<'a>,
    pub(super) env_name: &'a str,
    pub(super) store_dir: &'a Path,
    pub(super) repeats: u32,
    pub(super) scope: Scope,
    pub(super) redact: &'a RedactConfig,
    pub(super) watch: &'a [String],
    pub(super) executors: &'a Arc<Executors>,
}

/// A candidate's three trees, `repeats` runs of each (tree by tree, as the
/// runs of a serial environment execute) and its screen; returns the
/// screen's name.
pub(super) fn screening_nodes(out: &mut Vec<NodeSpec>, s: &Screening<'_>) -> String {
    let cid = s.candidate;
    for state in State::ALL {
        let tree_name = names::tree(cid, state);
        out.push(adapter::spec(
            tree_name.clone(),
            Tree {
                params: TreeParams {
                    state,
                    rebuild: s.env.rebuild.clone(),
                },
                store_dir: s.store_dir.to_owned(),
            },
            TreeNames {
                triage: s.triage.to_owned(),
            },
        ));
        for r in 0..s.repeats {
            out.push(adapter::spec(
                names::screen_run(cid, state, r),
                Run {
                    params: s.env.run_params(s.redact, r, s.watch),
                    store_dir: s.store_dir.to_owned(),
                    env: s.env_name.to_owned(),
                    executors: s.executors.clone(),
                },
                RunNames {
                    tree: tree_name.clone(),
                    env: s.env_name.to_owned(),
                },
            ));
        }
    }
    let screen_name = names::screen(cid);
    out.push(adapter::spec(
        screen_name.clone(),
        Screen(ScreenParams {
            repeats: s.repeats,
            report: s.env.format,
            scope: s.scope,
        }),
        ScreenNames {
            triage: s.triage.to_owned(),
            runs: screen::readings(s.repeats)
                .map(|(state, r)| names::screen_run(cid, state, r))
                .collect(),
        },
    ));
    out.push(adapter::spec(
        names::certify(cid),
        Certify {
            params: s.env.run_params(s.redact, 0, s.watch),
            store_dir: s.store_dir.to_owned(),
            env: s.env_name.to_owned(),
            executors: s.executors.clone(),
        },
        CertifyNames {
            triage: s.triage.to_owned(),
            tree: names::tree(cid, State::Gold),
            env: s.env_name.to_owned(),
            screen: screen_name.clone(),
        },
    ));
    screen_name
}

/// The one basic-track task of a Deep-SWE-shaped folder or an instance,
/// screened in its own image's environment.
pub(super) struct ImageTask<'a, 'e> {
    pub(super) id: &'a str,
    pub(super) triage: &'a str,
    pub(super) env_name: &'a str,
    pub(super) env: &'e EnvSettings<'e>,
    pub(super) statement: Option<String>,
    pub(super) repo: &'a str,
    pub(super) version: &'a str,
    pub(super) release: release::Input,
}

impl<'e> ImageTask<'_, 'e> {
    /// Lays out its screening nodes and its `task` node, and hands it to
    /// the grading layout and the release.
    pub(super) fn lay_out(self, cx: &Cx<'_>, out: &mut Vec<NodeSpec>, laid: &mut Laid<'e>) {
        let settings = &cx.pipeline.settings;
        let env = self.env;
        let screen = screening_nodes(
            out,
            &Screening {
                candidate: self.id,
                triage: self.triage,
                env,
                env_name: self.env_name,
                store_dir: &cx.store_dir,
                repeats: settings.repeats,
                scope: settings.scope,
                redact: &cx.redact,
                watch: &settings.triage.test_globs,
                executors: cx.executors,
            },
        );
        let grade = &settings.grade;
        let params = TaskParams {
            instance_id: self.id.to_owned(),
            track: "basic".to_owned(),
            statement: self.statement,
            spec: None,
            topic: None,
            topics: Vec::new(),
            env: self.env_name.to_owned(),
            repo: self.repo.to_owned(),
            version: self.version.to_owned(),
            hints: None,
            created_at: task::iso8601(0),
            test_command: env.cfg.test_command.clone(),
            touched_command: None,
            log_parser: crate::run::swebench::log_parser(env.format).to_owned(),
            timeout: (grade.timeout_factor > 0).then_some(TimeoutRule {
                factor: grade.timeout_factor,
                floor_s: grade.timeout_floor,
                ceiling_s: env.timeout,
            }),
        };
        let task_name = names::task(self.id, "basic");
        out.push(adapter::spec(
            task_name.clone(),
            Task(params),
            TaskNames {
                triage: self.triage.to_owned(),
                screen,
                certify: names::certify(self.id),
                env: Some(self.env_name.to_owned()),
            },
        ));
        laid.gold_trees
            .insert(self.id.to_owned(), names::tree(self.id, State::Gold));
        laid.task_nodes.insert(
            (self.id.to_owned(), "basic".to_owned()),
            (task_name.clone(), self.env_name.to_owned()),
        );
        laid.env_of.insert(self.env_name.to_owned(), env);
        laid.release.push(task_name, self.release);
    }
}
