//! The agents' attempts: per `[[agent]]` its tools' environment, then per
//! task of its tracks and attempt an `attempt` node (a session assay
//! makes), graded on its task as a session file's would be.

use std::collections::BTreeSet;

use assay_engine::NodeSpec;

use super::grading_target::{GradeLayout, Target, grade_on};
use super::source::{HarborRef, image_confinement};
use crate::model::names;
use crate::nodes::adapter::{self, NoNames};
use crate::nodes::attempt;
use crate::nodes::judge;
use crate::nodes::release::{Input, ReleaseInputs};
use crate::pipeline::Pipeline;

/// Per `[[agent]]`: its tools' environment, then per task of its tracks
/// and attempt an `attempt` node (a session assay makes), graded as a
/// session file's would be (`grade_on`).
pub(super) fn attempt_nodes(
    pipeline: &Pipeline,
    g: &GradeLayout<'_>,
    out: &mut Vec<NodeSpec>,
    release: &mut ReleaseInputs,
    reviewable: &mut Vec<judge::Reviewable>,
) {
    let reward_only = reward_only(g);
    if g.task_nodes.is_empty() && reward_only.is_empty() {
        // Nothing for an agent to attempt: no tools to build.
        return;
    }
    let mut image_envs = BTreeSet::new();
    for agent in &pipeline.settings.agents {
        let tools = names::agent_env(&agent.label);
        out.push(tools_node(g, agent, &tools));
        let mut laid: u32 = 0;
        for mut a in attempted(g, agent, &reward_only) {
            if let Some(env) = a.image_env.take()
                && image_envs.insert(a.env_node.clone())
            {
                out.push(env);
            }
            for index in 0..agent.attempts {
                // The agent's attempts take its lanes in turn.
                laid += 1;
                let id = crate::run::attempt::session_id(&agent.label, a.id, a.track, index);
                let node_name = names::attempt(&id);
                let mut params = attempt::AttemptParams::of(agent, index, &a.confine, g.redact);
                params.instruction.clone_from(&a.instruction);
                out.push(adapter::spec(
                    node_name.clone(),
                    attempt::Attempt {
                        params,
                        store_dir: g.store_dir.to_owned(),
                        lane: format!("agent-lane:{}:{}", agent.label, laid % agent.lanes),
                        retries: agent.retries,
                        id: id.clone(),
                        track: a.track.to_owned(),
                        executors: g.executors.clone(),
                    },
                    attempt::AttemptNames {
                        task: a.task_node.to_owned(),
                        env: a.env_node.clone(),
                        tools: tools.clone(),
                    },
                ));
                release.push(node_name.clone(), Input::Session);
                let session = (id.as_str(), node_name.as_str(), None);
                grade_on(pipeline, g, &a.target, session, out, release, reviewable);
            }
        }
    }
}

/// An agent's tools: their own environment, built from its `setup`.
fn tools_node(
    g: &GradeLayout<'_>,
    agent: &crate::pipeline::AgentSettings,
    tools: &str,
) -> NodeSpec {
    adapter::spec(
        tools.to_owned(),
        crate::nodes::env::Env::new(
            crate::nodes::env::EnvParams {
                setup: agent.setup.clone(),
                key_files: Vec::new(),
                confine: crate::model::config::Confinement::default(),
                redact: g.redact.clone(),
                export: false,
                at: Some(crate::run::attempt::AGENT_AT.to_owned()),
                warm: Vec::new(),
            },
            Vec::new(),
            std::time::Duration::from_secs(3600),
            g.cache_dir.to_owned(),
            g.executors.clone(),
        ),
        NoNames {},
    )
}

/// A task an agent attempts: where its attempts hang, what they run in,
/// and what grades them.
struct Attempted<'g> {
    id: &'g str,
    track: &'g str,
    task_node: &'g str,
    env_node: String,
    /// The environment node made from a reward-only task's image (laid
    /// out once for every agent).
    image_env: Option<NodeSpec>,
    confine: crate::model::config::Confinement,
    /// A reward-only task's one statement, its `instruction.md`.
    instruction: Option<String>,
    target: Target<'g>,
}

/// The tasks `agent` attempts: assay's tasks on its tracks, then, on the
/// basic track, the reward-only Harbor tasks.
fn attempted<'g>(
    g: &GradeLayout<'g>,
    agent: &crate::pipeline::AgentSettings,
    reward_only: &[&'g HarborRef],
) -> Vec<Attempted<'g>> {
    let mut out = Vec::new();
    for ((id, track), (task_node, env_node)) in g.task_nodes {
        let Some(env) = g
            .env_of
            .get(env_node)
            .filter(|_| agent.tracks.contains(track))
        else {
            continue;
        };
        out.push(Attempted {
            id,
            track,
            task_node,
            env_node: env_node.clone(),
            image_env: None,
            confine: env.confine.clone(),
            instruction: None,
            target: Target::Task {
                id,
                task_node,
                env_node,
                // A Deep-SWE-shaped task's own verifier reads the attempt's
                // patch too, beside assay's grade.
                reading: g.harbor.get(id),
            },
        });
    }
    if !agent.tracks.iter().any(|t| t == HARBOR_TRACK) {
        return out;
    }
    for &h in reward_only {
        let env_node = names::harbor_image_env(&h.id);
        let confine = image_confinement(&h.node, None);
        let image_env = adapter::spec(
            env_node.clone(),
            crate::nodes::swe_task::HarborImageEnv::new(
                crate::nodes::swe_task::ImageEnvParams {
                    confine: confine.clone(),
                    redact: g.redact.clone(),
                },
                g.cache_dir.to_owned(),
                g.executors.clone(),
            ),
            crate::nodes::swe_task::HarborImageEnvNames {
                task: h.node.clone(),
            },
        );
        out.push(Attempted {
            id: &h.id,
            track: HARBOR_TRACK,
            task_node: &h.node,
            env_node,
            image_env: Some(image_env),
            confine,
            instruction: Some(
                std::fs::read_to_string(h.path.join("instruction.md")).unwrap_or_default(),
            ),
            target: Target::RewardOnly(h),
        });
    }
    out
}

/// The track of a reward-only Harbor task: its one statement.
const HARBOR_TRACK: &str = "basic";

/// The Harbor tasks that are not tasks of assay's (reward-only: no
/// Deep-SWE shape that reads), once each, in `<dataset>/<folder>` order.
fn reward_only<'g>(g: &GradeLayout<'g>) -> Vec<&'g HarborRef> {
    g.harbor
        .iter()
        .filter(|(name, h)| {
            **name == h.id
                && !g
                    .task_nodes
                    .contains_key(&(h.id.clone(), HARBOR_TRACK.to_owned()))
        })
        .map(|(_, h)| h)
        .collect()
}
