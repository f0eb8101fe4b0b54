//! Jobs that declare the same exclusive resource never overlap, and a job
//! waiting for a busy resource leaves its slot to other ready work.
//!
//! No clock is read: the jobs write what they do into one ordered log, and an
//! `env` job stays running until the free job has started. The free job only
//! becomes ready (after `gate`) once both `env` jobs are queued, so it is
//! queued behind the blocked one whatever order the scheduler starts with: if
//! a blocked job held the second slot, the free job could not start and the
//! running `env` job would give up after a generous bound, which the log
//! records. And if the resource were not exclusive, the second `env` job would
//! start while the first is still waiting.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assay_engine::{BuildOptions, Graph, Job, JobCtx, JobFuture, NodeSpec, Output, Store};
use tokio::sync::watch;

/// What the jobs did, in the order they did it.
type Log = Arc<Mutex<Vec<String>>>;

fn note(log: &Log, line: String) {
    log.lock().unwrap_or_else(|p| p.into_inner()).push(line);
}

struct Recorded {
    name: String,
    resource: Option<String>,
    /// `free` announces its start; the others only record theirs.
    announces: bool,
    log: Log,
    /// Set once the free job has started.
    free_started: watch::Sender<bool>,
}

impl Job for Recorded {
    fn run(&self, _ctx: JobCtx) -> JobFuture {
        let name = self.name.clone();
        let log = self.log.clone();
        let exclusive = self.resource.is_some();
        let announces = self.announces;
        let free_started = self.free_started.clone();
        Box::pin(async move {
            note(&log, format!("start {name}"));
            if exclusive {
                let mut rx = free_started.subscribe();
                let waited =
                    tokio::time::timeout(Duration::from_secs(30), rx.wait_for(|s| *s)).await;
                if waited.is_err() {
                    note(&log, format!("{name} gave up waiting for `free` to start"));
                }
            } else if announces {
                free_started.send_replace(true);
            }
            note(&log, format!("end {name}"));
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

fn node(
    name: &str,
    resource: Option<&str>,
    deps: &[&str],
    log: &Log,
    free: &watch::Sender<bool>,
) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        kind: "recorded".into(),
        kind_version: 1,
        params: name.as_bytes().to_vec(),
        params_json: String::new(),
        deps: deps.iter().map(|d| (*d).to_owned()).collect(),
        observation: false,
        job: Arc::new(Recorded {
            name: name.into(),
            resource: resource.map(str::to_owned),
            announces: name == "free",
            log: log.clone(),
            free_started: free.clone(),
        }),
    }
}

#[test]
fn exclusive_jobs_never_overlap_and_do_not_hold_slots() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let log: Log = Arc::default();
    let (free, _keep) = watch::channel(false);
    let graph = Graph::new(vec![
        node("r1", Some("env"), &[], &log, &free),
        node("r2", Some("env"), &[], &log, &free),
        node("gate", None, &[], &log, &free),
        node("free", None, &["gate"], &log, &free),
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
    assert_eq!(outcome.summary.executed, 4);
    let log = log.lock().unwrap().clone();
    let at = |line: &str| {
        log.iter()
            .position(|l| l == line)
            .unwrap_or_else(|| panic!("no `{line}` in {log:?}"))
    };
    let (first, second) = if at("start r1") < at("start r2") {
        ("r1", "r2")
    } else {
        ("r2", "r1")
    };
    assert!(
        at(&format!("start {second}")) > at(&format!("end {first}")),
        "the two `env` jobs overlapped: {log:?}"
    );
    assert!(
        !log.iter().any(|l| l.contains("gave up")),
        "the free job waited for a slot held by a blocked job: {log:?}"
    );
    assert!(
        at("start free") < at(&format!("end {first}")),
        "the free job started only after the first `env` job ended: {log:?}"
    );
}

/// Records its start, stays running a while, then records its end.
struct Lingers {
    name: String,
    log: Log,
}

impl Job for Lingers {
    fn run(&self, _ctx: JobCtx) -> JobFuture {
        let (name, log) = (self.name.clone(), self.log.clone());
        Box::pin(async move {
            note(&log, format!("start {name}"));
            tokio::time::sleep(Duration::from_millis(200)).await;
            note(&log, format!("end {name}"));
            Ok(Output {
                bytes: name.into_bytes(),
                attachments: Vec::new(),
            })
        })
    }

    fn exclusive(&self) -> Option<&str> {
        Some("env")
    }
}

/// `verify --reexecute` drives jobs without the build's scheduler: it must
/// honour `exclusive()` all the same (a grade's reruns share a local
/// environment with the runs).
#[test]
fn exclusive_jobs_never_overlap_under_recheck() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let log: Log = Arc::default();
    let lingers = |name: &str| NodeSpec {
        name: name.into(),
        kind: "lingers".into(),
        kind_version: 1,
        params: name.as_bytes().to_vec(),
        params_json: String::new(),
        deps: Vec::new(),
        observation: true,
        job: Arc::new(Lingers {
            name: name.into(),
            log: log.clone(),
        }),
    };
    let graph = Graph::new(vec![lingers("a"), lingers("b")]).unwrap();
    let opts = BuildOptions {
        jobs: 2,
        reread: BTreeSet::new(),
        label: "t".into(),
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(assay_engine::build(&store, &graph, &opts, &mut |_| {}))
        .unwrap();
    log.lock().unwrap().clear();
    let kinds = BTreeSet::from(["lingers".to_owned()]);
    let report = rt
        .block_on(assay_engine::recheck(&store, &graph, &kinds, 2))
        .unwrap();
    assert_eq!(report.checked.len(), 2);
    assert!(report.checked.iter().all(|r| r.same()));
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 4, "{log:?}");
    for pair in log.chunks(2) {
        let name = pair[0].trim_start_matches("start ");
        assert_eq!(
            pair,
            [format!("start {name}"), format!("end {name}")],
            "the two jobs on `env` overlapped under recheck: {log:?}"
        );
    }
}
