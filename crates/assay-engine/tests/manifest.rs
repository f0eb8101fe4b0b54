//! A build's manifest (every node's name, kind, key, output and status) is
//! the same bytes however it was written: a large build's sweep encodes the
//! entries of the nodes it settles on a second thread as it goes, and the
//! end of the build adds the rest. A no-op rebuild whose manifest is the
//! previous build's byte for byte does not store it again; a previous blob
//! that rotted is replaced.

#![allow(clippy::unwrap_used)]

use assay_engine::{
    BuildManifest, BuildOptions, BuildOutcome, Digest, Graph, ManifestEntry, NodeStatus, Store,
};

/// Above the size from which a sweep writes the manifest as it goes.
const NODES: usize = 6000;

fn build(store: &Store, graph: &Graph) -> BuildOutcome {
    let opts = BuildOptions {
        jobs: 2,
        reread: Default::default(),
        label: "test".into(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(assay_engine::build(store, graph, &opts, &mut |_| {}))
        .unwrap()
}

/// The manifest the outcome says, entry by entry.
fn expected(graph_nodes: &[(String, String)], outcome: &BuildOutcome) -> BuildManifest {
    BuildManifest {
        entries: graph_nodes
            .iter()
            .zip(&outcome.nodes)
            .map(|((name, kind), n)| ManifestEntry {
                name: name.clone(),
                kind: kind.clone(),
                key: n.key,
                output: n.output,
                status: match n.status {
                    NodeStatus::Executed => "executed",
                    NodeStatus::Reused => "reused",
                    NodeStatus::Failed(_) => "failed",
                    NodeStatus::Skipped(_) => "skipped",
                }
                .into(),
            })
            .collect(),
    }
}

fn stored(store: &Store, digest: &Digest) -> Vec<u8> {
    store.blobs().get(digest).unwrap()
}

#[test]
fn a_manifest_is_the_outcome_however_the_build_went() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("cache")).unwrap();
    let specs = assay_engine::synthetic::nodes(NODES, 7);
    let names: Vec<(String, String)> = specs
        .iter()
        .map(|s| (s.name.clone(), s.kind.clone()))
        .collect();
    let graph = Graph::new(specs).unwrap();

    let cold = build(&store, &graph);
    assert_eq!(cold.summary.executed, NODES);
    let want = expected(&names, &cold).encode();
    assert_eq!(stored(&store, &cold.manifest), want, "cold build");

    let noop = build(&store, &graph);
    assert_eq!(noop.summary.reused, NODES);
    let want = expected(&names, &noop).encode();
    assert_eq!(stored(&store, &noop.manifest), want, "no-op rebuild");
    assert_ne!(noop.manifest, cold.manifest);

    // The same again: the same digest, and the blob is not written anew.
    let blob = store.blobs().path(&noop.manifest);
    let written = std::fs::metadata(&blob).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let again = build(&store, &graph);
    assert_eq!(again.manifest, noop.manifest);
    assert_eq!(
        std::fs::metadata(&blob).unwrap().modified().unwrap(),
        written,
        "the previous build's manifest, byte for byte: not stored again"
    );
    let builds = store.builds(2).unwrap();
    assert_eq!(builds[0].manifest, Some(again.manifest));

    // A rotten previous manifest is not taken for this one: rewritten whole.
    std::fs::write(&blob, b"rotten").unwrap();
    let repaired = build(&store, &graph);
    assert_eq!(repaired.manifest, noop.manifest);
    assert_eq!(stored(&store, &repaired.manifest), want, "repaired");

    // One node in the middle changed: the sweep settles the nodes before
    // it, the rest is written at the end; statuses as the outcome says.
    let mut specs = assay_engine::synthetic::nodes(NODES, 7);
    specs[NODES / 2].params = assay_engine::encode_params(&u64::MAX);
    let changed = Graph::new(specs).unwrap();
    let partial = build(&store, &changed);
    assert!(partial.summary.executed >= 1 && partial.summary.reused >= NODES / 2);
    let manifest = BuildManifest::decode(&stored(&store, &partial.manifest)).unwrap();
    assert_eq!(manifest, expected(&names, &partial));
    assert_eq!(manifest.entries[NODES / 2].status, "executed");
    assert_eq!(manifest.entries[0].status, "reused");
}
