//! A job that declares itself trivial ([`Job::trivial`]) is polled once on
//! the build's own thread; one still pending after that poll is spawned like
//! any other, and one that fails there fails its node and skips its
//! dependents. Either way its row is committed before it is reported, and a
//! rebuild reuses it.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use assay_engine::{
    BuildOptions, Event, Graph, Job, JobCtx, JobError, JobFuture, NodeSpec, Output, Store,
};

#[derive(Clone, Copy)]
enum Shape {
    /// Done at its first poll.
    Ready,
    /// Pending once (a yield), then done.
    Yields,
    /// Fails at its first poll.
    Fails,
}

/// Records the thread its work ran on (after any yield).
struct Tiny {
    shape: Shape,
    trivial: bool,
    ran_on: Arc<Mutex<Vec<(String, ThreadId)>>>,
}

impl Job for Tiny {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let (shape, ran_on) = (self.shape, self.ran_on.clone());
        Box::pin(async move {
            if let Shape::Yields = shape {
                tokio::task::yield_now().await;
            }
            ran_on
                .lock()
                .unwrap()
                .push((ctx.name.clone(), std::thread::current().id()));
            match shape {
                Shape::Fails => Err(JobError::new("no")),
                _ => Ok(Output {
                    bytes: ctx.name.into_bytes(),
                    attachments: Vec::new(),
                }),
            }
        })
    }

    fn trivial(&self) -> bool {
        self.trivial
    }
}

type RanOn = Arc<Mutex<Vec<(String, ThreadId)>>>;

fn graph(ran_on: &RanOn) -> Graph {
    let node = |name: &str, deps: &[&str], shape, trivial| NodeSpec {
        name: name.into(),
        kind: "tiny".into(),
        kind_version: 1,
        params: name.as_bytes().to_vec(),
        params_json: String::new(),
        deps: deps.iter().map(|d| (*d).to_owned()).collect(),
        observation: false,
        job: Arc::new(Tiny {
            shape,
            trivial,
            ran_on: ran_on.clone(),
        }),
    };
    Graph::new(vec![
        node("ready", &[], Shape::Ready, true),
        node("after-ready", &["ready"], Shape::Ready, true),
        node("yields", &["ready"], Shape::Yields, true),
        node(
            "after-yields",
            &["yields", "after-ready"],
            Shape::Ready,
            true,
        ),
        node("spawned", &[], Shape::Ready, false),
        node("fails", &[], Shape::Fails, true),
        node("after-fails", &["fails"], Shape::Ready, true),
    ])
    .unwrap()
}

#[test]
fn trivial_jobs_run_on_the_builds_thread_and_are_reported_once_committed() {
    let dir = tempfile::tempdir().unwrap();
    let ran_on: RanOn = Arc::default();
    let graph = graph(&ran_on);
    let opts = BuildOptions {
        jobs: 2,
        reread: BTreeSet::new(),
        label: "t".into(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut finished = Vec::new();
    let outcome = rt
        .block_on(assay_engine::build(&store, &graph, &opts, &mut |e| {
            if let Event::NodeFinished { name, key, .. } = e {
                // Reported only once its row is in the index.
                let row = Store::open(dir.path()).unwrap().key_record(key).unwrap();
                finished.push(((*name).to_owned(), row.is_some()));
            }
        }))
        .unwrap();
    let s = &outcome.summary;
    assert_eq!((s.executed, s.failed, s.skipped), (5, 1, 1));
    assert_eq!(finished.len(), 5);
    for (name, committed) in &finished {
        assert!(committed, "`{name}` reported before its row was committed");
    }

    let here = std::thread::current().id();
    let ran_on = ran_on.lock().unwrap().clone();
    let thread_of = |name: &str| ran_on.iter().find(|(n, _)| n == name).unwrap().1;
    for name in ["ready", "after-ready", "fails"] {
        assert_eq!(
            thread_of(name),
            here,
            "`{name}` is trivial and ready at once"
        );
    }
    assert_ne!(thread_of("spawned"), here, "not trivial: a task of its own");

    // Every success was committed: a rebuild reuses them and reruns the failure.
    let again = rt
        .block_on(assay_engine::build(
            &Store::open(dir.path()).unwrap(),
            &graph,
            &opts,
            &mut |_| {},
        ))
        .unwrap()
        .summary;
    assert_eq!((again.reused, again.executed, again.failed), (5, 0, 1));
}
