//! The release's files at scale (`benches/report-scale.sh` runs these,
//! ignored by default): a synthetic input of T tasks × 10 agents × 3
//! attempts (one scored arm each, every session with a short transcript),
//! published at T/4 and at T; prints the time of each, their ratio (4 for
//! a cost that grows linearly), the number of files, the largest and the
//! total size; with `ASSAY_SCALE_DIR`, writes the larger release's files
//! there. No timed assertion: the figures are for the bench's note.
//!
//! [`release_at_scale`] (`benches/million.sh`, one size a process) is the
//! release step at a number of sessions: publish, the check of every file
//! through manifest.json (`assay verify`'s step that needs no cache), a
//! publish with one more session, the process's peak memory, and the
//! largest file and page written.

use std::time::Instant;

use super::tests::{grade, task};
use super::*;
use crate::model::records::{RunFacts, SessionRecord};

const AGENTS: usize = 10;
const ATTEMPTS: usize = 3;

pub(super) fn input(tasks: usize) -> PublishInput {
    let transcript = [
        serde_json::json!({"type": "assistant", "message": {"content": [
            {"type": "text", "text": "Looking at the code."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat x.py"}}
        ], "usage": {"input_tokens": 100, "output_tokens": 20}}}),
        serde_json::json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "def f():\n    return 1\n"}
        ]}}),
        serde_json::json!({"type": "result", "subtype": "success", "is_error": false, "num_turns": 1}),
    ]
    .map(|v| v.to_string())
    .join("\n");
    let mut input = PublishInput::default();
    input
        .transcripts
        .insert("tr".to_owned(), transcript.into_bytes());
    input.patches.insert(
        "patch".to_owned(),
        b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n".to_vec(),
    );
    for t in 0..tasks {
        let id = format!("repo-{t}");
        input.tasks.push(task(&id, "basic", true));
        for a in 0..AGENTS {
            for k in 0..ATTEMPTS {
                let session = format!("agent-{a}/{id}/{k}");
                let verdict = if (t + a + k) % 3 == 0 {
                    "resolved"
                } else {
                    "unresolved"
                };
                let fault = if verdict == "resolved" {
                    "none"
                } else {
                    "agent"
                };
                let mut g = grade(
                    &session,
                    &format!("agent-{a}"),
                    "m",
                    "exclude",
                    verdict,
                    fault,
                );
                g.0.instance_id = id.clone();
                g.0.task_digest = format!("task-{id}-basic");
                input.grades.push(g);
                input.sessions.push(SessionRecord {
                    id: session,
                    task: id.clone(),
                    track: "basic".to_owned(),
                    agent: format!("agent-{a}"),
                    model: "m".to_owned(),
                    patch: "patch".to_owned(),
                    facts: RunFacts {
                        turns: Some(3),
                        tokens: [("input".to_owned(), 1000), ("output".to_owned(), 200)].into(),
                        ..RunFacts::default()
                    },
                    transcript: Some("tr".to_owned()),
                });
            }
        }
    }
    input
}

fn measure(tasks: usize, keep: bool) -> f64 {
    let input = input(tasks);
    let start = Instant::now();
    let files = publish(&input);
    let secs = start.elapsed().as_secs_f64();
    let (largest, size) = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.len()))
        .max_by_key(|(_, n)| *n)
        .unwrap_or_default();
    let total: usize = files.values().map(Vec::len).sum();
    println!(
        "{tasks} tasks x {AGENTS} agents x {ATTEMPTS} attempts = {} sessions: publish {secs:.2} s, \
         {} files, {:.1} MB in all, largest {largest} {:.2} MB",
        tasks * AGENTS * ATTEMPTS,
        files.len(),
        total as f64 / 1e6,
        size as f64 / 1e6
    );
    if let Some(dir) = std::env::var("ASSAY_SCALE_DIR").ok().filter(|_| keep) {
        for (name, bytes) in &files {
            let path = std::path::Path::new(&dir).join(name);
            std::fs::create_dir_all(path.parent().unwrap_or(std::path::Path::new(&dir)))
                .unwrap_or_default();
            std::fs::write(path, bytes).unwrap_or_default();
        }
    }
    secs
}

#[test]
#[ignore = "a bench: benches/report-scale.sh"]
fn publish_at_scale() {
    let tasks: usize = std::env::var("ASSAY_SCALE_TASKS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(1000);
    let quarter = measure(tasks / 4, false);
    let full = measure(tasks, true);
    println!(
        "ratio full / quarter: {:.2} (4.00 is linear)",
        full / quarter
    );
}

/// The input of `sessions` graded sessions (30 a task), its grades keyed
/// by 64 hex digits as real node keys are.
fn sessions_input(sessions: usize) -> PublishInput {
    let mut input = input(sessions.div_ceil(AGENTS * ATTEMPTS));
    input.grades.truncate(sessions);
    input.sessions.truncate(sessions);
    for g in &mut input.grades {
        g.1 = blake3::hash(g.1.as_bytes()).to_hex().to_string();
    }
    input
}

/// One more session (the next attempt of the first agent on the first task).
fn one_more(input: &mut PublishInput) {
    let (mut g, mut s) = (input.grades[0].clone(), input.sessions[0].clone());
    let id = format!("{}/extra", s.id);
    g.0.session = id.clone();
    g.1 = blake3::hash(id.as_bytes()).to_hex().to_string();
    s.id = id;
    input.grades.push(g);
    input.sessions.push(s);
}

/// The process's CPU time so far, user and system, in seconds: the figure
/// to read on a shared machine, where the wall time moves with the load.
fn cpu_secs() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

/// Runs `step`, printing its wall and CPU time (user + system, then each).
fn timed<T>(what: &str, step: impl FnOnce() -> T) -> T {
    let (wall, (user, system)) = (Instant::now(), cpu_secs());
    let out = step();
    let (user_now, system_now) = cpu_secs();
    let (user, system) = (user_now - user, system_now - system);
    println!(
        "{what}: {:.2} s wall, {:.2} s CPU ({user:.2} user, {system:.2} system)",
        wall.elapsed().as_secs_f64(),
        user + system,
    );
    out
}

fn peak_rss_mb() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

/// Writes back the files under `dir` and drops them, and only them, from
/// the page cache.
fn evict(dir: &std::path::Path) -> std::io::Result<()> {
    use rustix::fs::{Advice, fadvise};
    rustix::fs::syncfs(std::fs::File::open(dir)?)?;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                stack.push(entry.path());
            } else {
                fadvise(
                    std::fs::File::open(entry.path())?,
                    0,
                    None,
                    Advice::DontNeed,
                )?;
            }
        }
    }
    Ok(())
}

/// A [`Sink`] that writes each file under `dir` as it comes (or, without
/// one, only hashes it) and keeps their count, total size and the largest
/// file and page.
struct Tally {
    dir: Option<std::path::PathBuf>,
    files: usize,
    total: usize,
    largest: (String, usize),
    largest_page: (String, usize),
}

impl Tally {
    fn new(dir: Option<std::path::PathBuf>) -> Tally {
        Tally {
            dir,
            files: 0,
            total: 0,
            largest: (String::new(), 0),
            largest_page: (String::new(), 0),
        }
    }
}

impl Sink for Tally {
    type Error = std::io::Error;

    fn put(&mut self, name: &str, bytes: Vec<u8>) -> Result<String, std::io::Error> {
        if let Some(dir) = &self.dir {
            let path = dir.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, &bytes)?;
        }
        self.files += 1;
        self.total += bytes.len();
        if bytes.len() > self.largest.1 {
            self.largest = (name.to_owned(), bytes.len());
        }
        if name.ends_with(".html") && bytes.len() > self.largest_page.1 {
            self.largest_page = (name.to_owned(), bytes.len());
        }
        Ok(assay_engine::Digest::of(&bytes).to_hex())
    }
}

#[test]
#[ignore = "a bench: benches/million.sh"]
fn release_at_scale() {
    let sessions: usize = std::env::var("ASSAY_SCALE_SESSIONS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(7500);
    let mut input = timed(&format!("sessions {sessions}: input"), || {
        sessions_input(sessions)
    });
    // ASSAY_SCALE_UNSPLIT=1: nothing split (the files as one, side by side).
    let limits = match std::env::var("ASSAY_SCALE_UNSPLIT").as_deref() {
        Ok("1") => &Limits::NONE,
        _ => &Limits::RELEASE,
    };
    // Written as they are made, as the release node writes them to the
    // blob store, into ASSAY_SCALE_DIR or a temp dir.
    let temp = tempfile::tempdir().expect("a temp dir");
    let dir = std::env::var_os("ASSAY_SCALE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| temp.path().to_owned());
    let mut tally = Tally::new(Some(dir.clone()));
    timed(&format!("sessions {sessions}: publish"), || {
        publish_into(&input, limits, &mut tally)
    })
    .expect("the release written");
    println!(
        "sessions {sessions}: {} files, {:.1} MB in all, largest file {} {:.2} MB, \
         largest page {} {:.2} MB",
        tally.files,
        tally.total as f64 / 1e6,
        tally.largest.0,
        tally.largest.1 as f64 / 1e6,
        tally.largest_page.0,
        tally.largest_page.1 as f64 / 1e6,
    );
    // ASSAY_SCALE_COLD=1: the files written back and dropped from the page
    // cache first, so verify reads them from the disk at every size (at a
    // million they no longer fit beside the process; at 250,000 they do).
    // ASSAY_SCALE_COLD=2: the kernel's caches dropped whole besides (the
    // inodes and directory entries too; needs root, and slows every other
    // process on the machine for a while).
    let cold = std::env::var("ASSAY_SCALE_COLD").unwrap_or_default();
    if cold == "1" || cold == "2" {
        timed(&format!("sessions {sessions}: evict"), || {
            evict(&dir)?;
            match cold.as_str() {
                "2" => std::fs::write("/proc/sys/vm/drop_caches", "3"),
                _ => Ok(()),
            }
        })
        .expect("the files evicted (and with 2 the caches dropped, as root)");
    }
    let on_disk = timed(
        &format!("sessions {sessions}: verify, the files on disk listed and hashed"),
        || crate::ops::audit::OnDisk::read(&dir).expect("the release read"),
    );
    let (findings, digest) = timed(
        &format!("sessions {sessions}: verify, every file through manifest.json"),
        || crate::ops::audit::check_listed(&on_disk),
    );
    println!(
        "sessions {sessions}: {} findings, release {}",
        findings.len(),
        digest.unwrap_or_default()
    );
    assert!(findings.is_empty(), "{findings:?}");
    // ASSAY_SCALE_PLUS1=0: no publish with one more session (verify alone).
    if std::env::var("ASSAY_SCALE_PLUS1").as_deref() == Ok("0") {
        println!("sessions {sessions}: peak memory {:.0} MB", peak_rss_mb());
        return;
    }
    one_more(&mut input);
    let mut again = Tally::new(None);
    timed(&format!("sessions {sessions}: +1 session publish"), || {
        publish_into(&input, limits, &mut again)
    })
    .expect("the release hashed");
    println!("sessions {sessions}: +1 session: {} files", again.files);
    println!("sessions {sessions}: peak memory {:.0} MB", peak_rss_mb());
}
