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
///
/// Edges are kept flat (compressed sparse rows): node i's dependencies are
/// `deps[dep_at[i]..dep_at[i + 1]]`, and its dependents likewise, so a walk
/// of 100,000 nodes reads two arrays instead of 200,000 small vectors.
pub struct Graph {
    pub(crate) nodes: Vec<NodeSpec>,
    dep_at: Vec<u32>,
    deps: Vec<u32>,
    dependent_at: Vec<u32>,
    dependents: Vec<u32>,
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
        let mut dep_at = Vec::with_capacity(nodes.len() + 1);
        let mut deps = Vec::new();
        let mut dependent_count = vec![0u32; nodes.len()];
        dep_at.push(0);
        for n in &nodes {
            for dep in &n.deps {
                let Some(&j) = by_name.get(dep.as_str()) else {
                    return Err(GraphError::Dangling {
                        node: n.name.clone(),
                        missing: dep.clone(),
                    });
                };
                deps.push(j as u32);
                dependent_count[j] += 1;
            }
            dep_at.push(deps.len() as u32);
        }
        // Dependents: counted, then each node's run filled in node order.
        let mut dependent_at = Vec::with_capacity(nodes.len() + 1);
        dependent_at.push(0u32);
        for c in &dependent_count {
            dependent_at.push(dependent_at[dependent_at.len() - 1] + c);
        }
        let mut fill: Vec<u32> = dependent_at[..nodes.len()].to_vec();
        let mut dependents = vec![0u32; deps.len()];
        for i in 0..nodes.len() {
            for &j in &deps[dep_at[i] as usize..dep_at[i + 1] as usize] {
                dependents[fill[j as usize] as usize] = i as u32;
                fill[j as usize] += 1;
            }
        }
        let mut graph = Graph {
            nodes,
            dep_at,
            deps,
            dependent_at,
            dependents,
            order: Vec::new(),
        };
        graph.order = topo_order(&graph)?;
        Ok(graph)
    }

    /// Node `id`'s dependencies, in declared order.
    pub(crate) fn deps(&self, id: NodeId) -> &[u32] {
        &self.deps[self.dep_at[id] as usize..self.dep_at[id + 1] as usize]
    }

    /// The nodes that depend on node `id`.
    pub(crate) fn dependents(&self, id: NodeId) -> &[u32] {
        &self.dependents[self.dependent_at[id] as usize..self.dependent_at[id + 1] as usize]
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

/// A topological order: the declaration order when every node comes after
/// its dependencies (so a walk reads the nodes' arrays front to back), else
/// petgraph's.
fn topo_order(graph: &Graph) -> Result<Vec<NodeId>, GraphError> {
    let n = graph.len();
    if (0..n).all(|i| graph.deps(i).iter().all(|&d| (d as usize) < i)) {
        return Ok((0..n).collect());
    }
    let mut g: DiGraph<NodeId, ()> = DiGraph::with_capacity(n, graph.deps.len());
    let idx: Vec<NodeIndex> = (0..n).map(|i| g.add_node(i)).collect();
    for (i, &at) in idx.iter().enumerate() {
        for &j in graph.deps(i) {
            g.add_edge(idx[j as usize], at, ());
        }
    }
    match toposort(&g, None) {
        Ok(order) => Ok(order.into_iter().map(|n| g[n]).collect()),
        Err(cycle) => Err(GraphError::Cycle(find_cycle(graph, g[cycle.node_id()]))),
    }
}

/// Walks dependencies from `start` until a node repeats: the names on that loop.
fn find_cycle(graph: &Graph, start: NodeId) -> Vec<String> {
    let nodes = &graph.nodes;
    // Depth-first search for a path from start back to start.
    let mut stack = vec![(start, 0usize)];
    let mut on_path = vec![start];
    let mut seen = vec![false; nodes.len()];
    while let Some((node, next)) = stack.pop() {
        if next < graph.deps(node).len() {
            stack.push((node, next + 1));
            let d = graph.deps(node)[next] as usize;
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
