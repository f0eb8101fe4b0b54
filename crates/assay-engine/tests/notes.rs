//! A job's notes reach the build's event stream as `job_state` events of
//! its node (its warnings as `job_warning` events), before the event of its
//! end; outside a build they go nowhere.

use std::collections::BTreeSet;
use std::sync::Arc;

use assay_engine::{BuildOptions, Event, Graph, Job, JobCtx, JobFuture, NodeSpec, Output, Store};

/// Notes `queued`, then `running` and `done` at its place, then ends.
struct Placed(&'static str);

impl Job for Placed {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let place = self.0;
        Box::pin(async move {
            ctx.notes.note("queued", None);
            tokio::task::yield_now().await;
            ctx.notes.note("running", Some(place));
            ctx.notes.note("done", Some(place));
            ctx.notes.warn(format!("{place} was slow"));
            Ok(Output {
                bytes: place.as_bytes().to_vec(),
                attachments: Vec::new(),
            })
        })
    }
}

fn placed(name: &str, place: &'static str) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        kind: "placed".into(),
        kind_version: 1,
        params: name.as_bytes().to_vec(),
        params_json: String::new(),
        deps: Vec::new(),
        observation: false,
        job: Arc::new(Placed(place)),
    }
}

#[test]
fn a_jobs_notes_are_events_of_its_node_before_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let graph = Graph::new(vec![placed("a", "n1"), placed("b", "n2")]).unwrap();
    let opts = BuildOptions {
        jobs: 2,
        reread: BTreeSet::new(),
        label: "t".into(),
    };
    let mut lines = Vec::new();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(assay_engine::build(&store, &graph, &opts, &mut |e| {
        lines.push(serde_json::to_string(e).unwrap());
    }))
    .unwrap();
    for (name, place) in [("a", "n1"), ("b", "n2")] {
        let at = |want: &str| {
            lines
                .iter()
                .position(|l| l == want)
                .unwrap_or_else(|| panic!("no {want} in {lines:#?}"))
        };
        let queued = at(&format!(
            r#"{{"event":"job_state","name":"{name}","kind":"placed","state":"queued"}}"#
        ));
        let running = at(&format!(
            r#"{{"event":"job_state","name":"{name}","kind":"placed","state":"running","place":"{place}"}}"#
        ));
        let done = at(&format!(
            r#"{{"event":"job_state","name":"{name}","kind":"placed","state":"done","place":"{place}"}}"#
        ));
        let warned = at(&format!(
            r#"{{"event":"job_warning","name":"{name}","kind":"placed","message":"{place} was slow"}}"#
        ));
        let finished = lines
            .iter()
            .position(|l| {
                l.contains(r#""event":"node_finished""#)
                    && l.contains(&format!(r#""name":"{name}""#))
            })
            .unwrap();
        assert!(
            queued < running && running < done && done < warned && warned < finished,
            "{lines:#?}"
        );
    }
    // A second build reuses both: no job runs, so no note.
    let mut again = Vec::new();
    rt.block_on(assay_engine::build(&store, &graph, &opts, &mut |e| {
        if matches!(e, Event::JobState { .. }) {
            again.push(serde_json::to_string(e).unwrap());
        }
    }))
    .unwrap();
    assert!(again.is_empty(), "{again:?}");
}
