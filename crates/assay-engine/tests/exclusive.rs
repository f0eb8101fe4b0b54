//! Jobs that declare the same exclusive resource never overlap, and a job
//! waiting for a busy resource leaves its slot to other ready work.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assay_engine::{BuildOptions, Graph, Job, JobCtx, JobFuture, NodeSpec, Output, Store};

type Log = Arc<Mutex<Vec<(String, Instant, Instant)>>>;

struct Sleepy {
    name: String,
    resource: Option<String>,
    log: Log,
}

impl Job for Sleepy {
    fn run(&self, _ctx: JobCtx) -> JobFuture {
        let name = self.name.clone();
        let log = self.log.clone();
        Box::pin(async move {
            let start = Instant::now();
            tokio::time::sleep(Duration::from_millis(150)).await;
            log.lock().unwrap_or_else(|p| p.into_inner()).push((
                name.clone(),
                start,
                Instant::now(),
            ));
            Ok(Output {
                bytes: name.into_bytes(),
                attachments: Vec::new(),
            })
        })
    }

    fn exclusive(&self) -> Option<&str> {
        self.resource.as_deref()
    }
}

fn node(name: &str, resource: Option<&str>, log: &Log) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        kind: "sleepy".into(),
        kind_version: 1,
        params: name.as_bytes().to_vec(),
        params_json: String::new(),
        deps: Vec::new(),
        observation: false,
        job: Arc::new(Sleepy {
            name: name.into(),
            resource: resource.map(str::to_owned),
            log: log.clone(),
        }),
    }
}

#[test]
fn exclusive_jobs_never_overlap_and_do_not_hold_slots() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let log: Log = Arc::default();
    // Queue order puts both `env` jobs first: without slot release, `free`
    // would wait behind `r2` for a slot.
    let graph = Graph::new(vec![
        node("r1", Some("env"), &log),
        node("r2", Some("env"), &log),
        node("free", None, &log),
    ])
    .unwrap();
    let opts = BuildOptions {
        jobs: 2,
        reread: BTreeSet::new(),
        label: "t".into(),
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let outcome = rt
        .block_on(assay_engine::build(&store, &graph, &opts, &mut |_| {}))
        .unwrap();
    assert_eq!(outcome.summary.executed, 3);
    let log = log.lock().unwrap();
    let get = |n: &str| log.iter().find(|(name, _, _)| name == n).cloned().unwrap();
    let (r1, r2, free) = (get("r1"), get("r2"), get("free"));
    let (first, second) = if r1.1 <= r2.1 { (r1, r2) } else { (r2, r1) };
    assert!(second.1 >= first.2, "the two `env` jobs overlapped");
    assert!(
        free.1 < first.2,
        "the free job waited for a slot held by a blocked job"
    );
}
