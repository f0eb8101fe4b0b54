//! The build graph: named nodes and their dependency edges, checked to be a DAG.
//!
//! Node names are stable, human-readable identities (`run:calc-1:gold:r0`);
//! keys are what the node computes from. A name lets `explain` compare a
//! node's key with the one it had in the previous build.

use std::collections::HashMap;
use std::sync::Arc;

use petgraph::algo::toposort;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::job::Job;

pub type NodeId = usize;

/// Everything the engine needs to know about one node.
pub struct NodeSpec {
    pub name: String,
    pub kind: String,
    pub kind_version: u32,
    /// Canonical encoding of the params (see [`crate::encode_params`]).
    pub params: Vec<u8>,
    /// The same params for humans (`explain`, `show`); not part of the key.
    pub params_json: String,
    /// Names of the nodes whose outputs this one reads, in order.
    pub deps: Vec<String>,
    /// Runs are observations, not functions: `--reread` may re-execute them.
    pub observation: bool,
    pub job: Arc<dyn Job>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GraphError {
    #[error("two nodes are named `{0}`")]
    DuplicateName(String),
    #[error("node `{node}` depends on `{missing}`, which is not a node of this build")]
    Dangling { node: String, missing: String },
    #[error("dependency cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
}

/// A validated DAG in topological order.
pub struct Graph {
    pub(crate) nodes: Vec<NodeSpec>,
    /// deps[i] = indices of node i's dependencies, in declared order.
    pub(crate) deps: Vec<Vec<NodeId>>,
    pub(crate) dependents: Vec<Vec<NodeId>>,
    pub(crate) order: Vec<NodeId>,
}

impl Graph {
    pub fn new(nodes: Vec<NodeSpec>) -> Result<Graph, GraphError> {
        let mut by_name: HashMap<&str, NodeId> = HashMap::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            if by_name.insert(n.name.as_str(), i).is_some() {
                return Err(GraphError::DuplicateName(n.name.clone()));
            }
        }
        let mut deps = Vec::with_capacity(nodes.len());
        let mut dependents = vec![Vec::new(); nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            let mut d = Vec::with_capacity(n.deps.len());
            for dep in &n.deps {
                let Some(&j) = by_name.get(dep.as_str()) else {
                    return Err(GraphError::Dangling {
                        node: n.name.clone(),
                        missing: dep.clone(),
                    });
                };
                d.push(j);
                dependents[j].push(i);
            }
            deps.push(d);
        }
        let order = topo_order(&nodes, &deps)?;
        Ok(Graph {
            nodes,
            deps,
            dependents,
            order,
        })
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node(&self, id: NodeId) -> &NodeSpec {
        &self.nodes[id]
    }

    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name)
    }
}

fn topo_order(nodes: &[NodeSpec], deps: &[Vec<NodeId>]) -> Result<Vec<NodeId>, GraphError> {
    let mut g: DiGraph<NodeId, ()> = DiGraph::with_capacity(nodes.len(), nodes.len());
    let idx: Vec<NodeIndex> = (0..nodes.len()).map(|i| g.add_node(i)).collect();
    for (i, d) in deps.iter().enumerate() {
        for &j in d {
            g.add_edge(idx[j], idx[i], ());
        }
    }
    match toposort(&g, None) {
        Ok(order) => Ok(order.into_iter().map(|n| g[n]).collect()),
        Err(cycle) => Err(GraphError::Cycle(find_cycle(
            nodes,
            deps,
            g[cycle.node_id()],
        ))),
    }
}

/// Walks dependencies from `start` until a node repeats: the names on that loop.
fn find_cycle(nodes: &[NodeSpec], deps: &[Vec<NodeId>], start: NodeId) -> Vec<String> {
    // Depth-first search for a path from start back to start.
    let mut stack = vec![(start, 0usize)];
    let mut on_path = vec![start];
    let mut seen = vec![false; nodes.len()];
    while let Some((node, next)) = stack.pop() {
        if next < deps[node].len() {
            stack.push((node, next + 1));
            let d = deps[node][next];
            if d == start {
                let mut names: Vec<String> =
                    on_path.iter().map(|&i| nodes[i].name.clone()).collect();
                names.push(nodes[start].name.clone());
                return names;
            }
            if !seen[d] {
                seen[d] = true;
                stack.push((d, 0));
                on_path.push(d);
            }
        } else {
            on_path.pop();
        }
    }
    vec![nodes[start].name.clone()]
}
