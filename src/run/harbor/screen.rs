//! Certifying a Harbor dataset (`[[harbor_dataset]]`, docs/harbor.md): each
//! task folder's environment is built, then its controls are read
//! `repeats` times each as Harbor would run them — the no-op (the untouched
//! environment, then `tests/test.sh`) must score 0 and the oracle
//! (`solution/solve.sh`, then `tests/test.sh`) must score 1 — in fresh
//! containers with the network the task declares (`public`: the daemon's
//! bridge; `no-network` and the unenforced `allowlist`: none), no new
//! privileges, few capabilities and the run limits, removed after. A task is certified only when every reading
//! holds; the others are released with their reasons.
//!
//! The environment is built twice from nothing (`--no-cache`), so what the
//! daemon happens to have cached never decides a certification: the first
//! build carries the readings, the rebuild one reading of each control, and
//! a rebuild that reads otherwise makes the task `non_reproducible`. The
//! build has the network the task's `[environment] network_mode` declares
//! (Harbor's default, `public`, when it declares none), and so do the
//! controls and every graded run of the task ([`NetworkMode::runs_networked`]).
//!
//! The docker CLI drives it (`docker build` of the folder's Dockerfile:
//! assay's own image builder makes only its layout's images). A base image
//! that is not on this machine fails the task's environment with "cannot
//! pull offline", never the build. Every reason and tail is stripped of
//! terminal escapes before it is recorded.

use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use assay_docker::{ForeignContainer, ForeignSpec, Limits};
use serde::{Deserialize, Serialize};

use crate::model::shown::clean;
use crate::run::error::chain;
use crate::run::executor::daemon::Daemon;

pub(crate) use super::task_toml::{NetworkMode, TaskToml, TaskTomlError};

/// What one reading of a control gave.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Reading {
    /// `reward` of reward.json (or its one number), or reward.txt's number.
    pub(crate) reward: Option<f64>,
    /// Every number the verifier wrote.
    pub(crate) rewards: BTreeMap<String, f64>,
    pub(crate) timed_out: bool,
    /// Why the reading has no reward, when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// The last lines of the verifier's output.
    pub(crate) tail: String,
    /// The network the task declares.
    #[serde(default)]
    pub(crate) network: NetworkMode,
    /// Whether this run had the network ([`NetworkMode::runs_networked`]).
    #[serde(default)]
    pub(crate) networked: bool,
    /// The verifier's files (`/logs/verifier`) by name, for a reader of
    /// its reports (`deepswe`); never recorded.
    #[serde(skip)]
    pub(crate) files: BTreeMap<String, Vec<u8>>,
}

/// The environment of a Harbor task, as built.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Built {
    pub(crate) ok: bool,
    /// The image id (`sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) image: Option<String>,
    /// Why there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// Why the image was built from `environment/Dockerfile` though the
    /// task names a prebuilt one: it is not on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fallback: Option<String>,
    /// Whether the Dockerfile's build steps had the network (the task
    /// declares `network_mode = "public"`, or nothing).
    #[serde(default)]
    pub(crate) networked: bool,
}

/// The second build of a task's environment, and its one reading of each
/// control.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Rebuilt {
    pub(crate) environment: Built,
    pub(crate) readings: BTreeMap<String, Vec<Reading>>,
}

/// The two controls.
pub(crate) const NOP: &str = "nop";
pub(crate) const ORACLE: &str = "oracle";

/// The images a Dockerfile starts from (its `FROM` lines, less its own
/// stages and `scratch`).
pub(crate) fn base_images(dockerfile: &str) -> Vec<String> {
    let mut stages = Vec::new();
    let mut out = Vec::new();
    for line in dockerfile.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if !words
            .first()
            .is_some_and(|w| w.eq_ignore_ascii_case("FROM"))
        {
            continue;
        }
        let rest: Vec<&str> = words[1..]
            .iter()
            .copied()
            .filter(|w| !w.starts_with("--"))
            .collect();
        let Some(image) = rest.first() else { continue };
        if !stages.iter().any(|s: &String| s == image) && *image != "scratch" {
            out.push((*image).to_owned());
        }
        if rest.len() >= 3 && rest[1].eq_ignore_ascii_case("AS") {
            stages.push(rest[2].to_owned());
        }
    }
    out
}

/// The label of every environment image assay builds from a task's
/// Dockerfile (`assay.harbor=environment`).
pub(crate) const IMAGE_LABEL: &str = "assay.harbor";
/// The label naming the cache (its absolute path) whose build made the image.
pub(crate) const CACHE_LABEL: &str = "assay.cache";

/// Whether this machine's daemon has `image`.
fn image_present(image: &str) -> bool {
    docker(
        &["image", "inspect", "--format", "{{.Id}}", image],
        Duration::from_secs(60),
    )
    .is_ok_and(|out| out.ok)
}

/// The labels of an environment image built for the cache at `cache`:
/// assay built it ([`IMAGE_LABEL`]), for that cache ([`CACHE_LABEL`], its
/// absolute path).
pub(crate) fn image_labels(cache: &Path) -> [String; 2] {
    [
        format!("{IMAGE_LABEL}=environment"),
        format!(
            "{CACHE_LABEL}={}",
            std::path::absolute(cache)
                .unwrap_or_else(|_| cache.to_owned())
                .display()
        ),
    ]
}

/// The task's environment: its `docker_image` when this machine has it,
/// else its Dockerfile built from nothing (no layer of the daemon's cache
/// reused) with the network the task declares, every intermediate
/// container removed even when a step fails (Deep-SWE's folders carry
/// both: the Dockerfile reproduces the prebuilt image). `tag` names the
/// built image; its labels say that assay built it ([`IMAGE_LABEL`]) and
/// for which cache ([`CACHE_LABEL`]), for `assay gc --images`.
pub(crate) fn build(folder: &Path, toml: &TaskToml, tag: &str, cache: &Path) -> Built {
    let failed = |reason: String| Built {
        ok: false,
        image: None,
        reason: Some(clean(&reason)),
        fallback: None,
        networked: false,
    };
    let offline = |image: &str| {
        format!(
            "cannot pull offline: the image `{image}` is not on this machine (load or build it first)"
        )
    };
    let context = folder.join("environment");
    let prebuilt = toml.docker_image.as_deref();
    let mut fallback = None;
    let mut networked = false;
    let image = if let Some(image) = prebuilt.filter(|i| image_present(i)) {
        image.to_owned()
    } else {
        let Ok(dockerfile) = std::fs::read_to_string(context.join("Dockerfile")) else {
            return failed(match prebuilt {
                Some(image) => offline(image),
                None => "no environment/Dockerfile and no [environment] docker_image".into(),
            });
        };
        fallback = prebuilt.map(|image| {
            format!("the image `{image}` is not on this machine: built from environment/Dockerfile")
        });
        // A failed fallback says what it fell back from.
        let failed = |reason: String| {
            failed(match &fallback {
                Some(why) => format!("{reason} ({why})"),
                None => reason,
            })
        };
        if let Some(missing) = base_images(&dockerfile).iter().find(|i| !image_present(i)) {
            return failed(offline(missing));
        }
        networked = toml.network.builds_networked();
        let context = context.display().to_string();
        let network = if networked { "default" } else { "none" };
        let [built_by, built_for] = image_labels(cache);
        let args = [
            "build",
            "--network",
            network,
            "--no-cache",
            "--rm",
            "--force-rm",
            "--label",
            &built_by,
            "--label",
            &built_for,
            "-t",
            tag,
            &context,
        ];
        match docker(&args, toml.build_timeout) {
            Ok(out) if out.ok => tag.to_owned(),
            Ok(out) if out.timed_out => {
                return failed(format!(
                    "docker build timed out after {} s",
                    toml.build_timeout.as_secs()
                ));
            }
            Ok(out) => {
                let mut log = out.stdout;
                log.extend_from_slice(without_legacy_banner(&out.stderr).as_bytes());
                return failed(format!("docker build failed: {}", tail(&log, 8)));
            }
            Err(e) => return failed(format!("docker build: {e}")),
        }
    };
    match docker(
        &["image", "inspect", "--format", "{{.Id}}", &image],
        Duration::from_secs(60),
    ) {
        Ok(out) if out.ok => Built {
            ok: true,
            image: Some(String::from_utf8_lossy(&out.stdout).trim().to_owned()),
            reason: None,
            fallback,
            networked,
        },
        _ => failed(format!("the image `{image}` cannot be inspected")),
    }
}

/// One reading of `control` in a fresh container of `image`.
pub(crate) fn read(
    daemon: &Daemon,
    folder: &Path,
    image: &str,
    control: &str,
    toml: &TaskToml,
) -> Reading {
    let solve = control == ORACLE;
    let script = format!(
        "mkdir -p /logs/verifier /logs/agent; {}chmod +x /tests/test.sh; /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1; exit 0",
        if solve {
            "chmod +x /solution/solve.sh; /solution/solve.sh > /logs/agent/oracle.txt 2>&1; "
        } else {
            ""
        }
    );
    let budget = toml.verifier_timeout
        + if solve {
            toml.agent_timeout
        } else {
            Duration::ZERO
        };
    let mut copies = vec![(folder.join("tests"), super::TESTS.to_owned())];
    if solve {
        copies.push((folder.join("solution"), "/solution".to_owned()));
    }
    let reading = reading_in(
        Container {
            daemon,
            image,
            script: &script,
            budget,
            network: toml.network,
        },
        async |_| Ok(copies),
    );
    tokio::runtime::Handle::current().block_on(reading)
}

/// A fresh container of a task's image running `script` (as `sh -c`).
pub(super) struct Container<'a> {
    pub(super) daemon: &'a Daemon,
    pub(super) image: &'a str,
    pub(super) script: &'a str,
    /// Killed past it.
    pub(super) budget: Duration,
    /// The task's declared network: the container has it when
    /// [`NetworkMode::runs_networked`].
    pub(super) network: NetworkMode,
}

/// Host directories to copy into a container: (host directory, container
/// directory).
pub(super) type Copies = Vec<(std::path::PathBuf, String)>;

/// Each file the verifier wrote is read up to this many bytes (a report of
/// this size may be cut), and all of them up to [`LOGS_CAP`].
pub(crate) const FILE_CAP: u64 = 16 << 20;
const LOGS_CAP: u64 = 64 << 20;

/// One reading in `c`: a foreign container of the task's image
/// (`assay_docker::ForeignSpec`: the network the task declares, no new
/// privileges, few capabilities) with the run limits; `prepare` is given the created
/// (never started) container and says which host directories to copy in
/// (the task's `tests/` among them), or why it cannot be read; then it
/// runs within its budget and its `/logs/verifier` is read. The container
/// is removed whatever happened.
pub(super) async fn reading_in(
    c: Container<'_>,
    prepare: impl AsyncFnOnce(&ForeignContainer<'_>) -> Result<Copies, String>,
) -> Reading {
    let mut reading = Reading {
        network: c.network,
        networked: c.network.runs_networked(),
        ..Reading::default()
    };
    let mut ph = crate::run::phase::Phases::wall("verifier");
    let outcome = async {
        let docker = c
            .daemon
            .client()
            .await
            .map_err(|e| format!("cannot run docker: {e}"))?;
        let spec = ForeignSpec {
            image: c.image.to_owned(),
            script: c.script.to_owned(),
            limits: Limits {
                memory: Some(4 << 30),
                pids: Some(1024),
                ..Limits::default()
            },
            labels: HashMap::from([(IMAGE_LABEL.to_owned(), "screen".to_owned())]),
            network: reading.networked,
        };
        let container = docker
            .create_foreign(&spec)
            .await
            .map_err(|e| format!("docker create: {}", chain(&e)))?;
        ph.mark("create");
        let read = async {
            let copies = prepare(&container).await?;
            ph.mark("prepare");
            container.upload_dirs(&copies).await.map_err(|e| {
                let to: Vec<&str> = copies.iter().map(|(_, to)| to.as_str()).collect();
                format!("copying {}: {}", to.join(", "), chain(&e))
            })?;
            ph.mark("upload");
            let ran = container
                .run(c.budget)
                .await
                .map_err(|e| format!("starting the verifier: {}", chain(&e)))?;
            ph.mark("start to exit");
            reading.timed_out = ran.timed_out;
            let files = container
                .files("/logs/verifier", FILE_CAP, LOGS_CAP)
                .await
                .map_err(|e| format!("reading /logs/verifier: {}", chain(&e)));
            ph.mark("read logs");
            files
        }
        .await;
        // Whatever happened: a removal that fails is retried by the
        // container's guard, and its owner labels name it to the next build.
        let _ = container.remove().await;
        ph.mark("remove");
        read
    }
    .await;
    match outcome {
        Ok(files) => {
            reading.tail = tail(
                files.get("test-stdout.txt").map_or(&[][..], Vec::as_slice),
                20,
            );
            reward_of(&files, &mut reading);
            reading.files = files;
        }
        Err(e) => reading.error = Some(e),
    }
    reading.error = reading.error.as_deref().map(clean);
    if reading.timed_out && reading.reward.is_none() {
        reading.error = Some(format!("timed out after {} s", c.budget.as_secs()));
    }
    reading
}

/// The reward of a verifier's files, as Harbor reads them: reward.txt (one
/// number) or reward.json (a flat map of numbers: its `reward`, or its one
/// number).
fn reward_of(files: &BTreeMap<String, Vec<u8>>, reading: &mut Reading) {
    if let Some(text) = files.get("reward.txt") {
        match String::from_utf8_lossy(text).trim().parse::<f64>() {
            Ok(r) if r.is_finite() => {
                reading.reward = Some(r);
                reading.rewards.insert("reward".into(), r);
            }
            _ => reading.error = Some("reward.txt does not hold one number".into()),
        }
        return;
    }
    let Some(json) = files.get("reward.json") else {
        reading.error = Some("the verifier wrote no reward.txt or reward.json".into());
        return;
    };
    let map: Result<BTreeMap<String, f64>, _> = serde_json::from_slice(json);
    match map {
        Ok(map) => {
            reading.reward = map
                .get("reward")
                .copied()
                .or_else(|| (map.len() == 1).then(|| *map.values().next().unwrap_or(&0.0)));
            if reading.reward.is_none() {
                reading.error = Some("reward.json has no `reward` and more than one number".into());
            }
            reading.rewards = map;
        }
        Err(e) => reading.error = Some(format!("reward.json is not a flat map of numbers: {e}")),
    }
}

/// Whether the task's controls hold, and why not: every no-op reading
/// scores 0 and every oracle reading 1, in a built environment, and a
/// rebuild of it (when it was built from a Dockerfile) reads the same.
pub(crate) fn certify(
    built: &Built,
    readings: &BTreeMap<String, Vec<Reading>>,
    rebuilt: Option<&Rebuilt>,
) -> Vec<String> {
    if !built.ok {
        return vec![format!(
            "environment_failed: {}",
            built.reason.as_deref().unwrap_or("not built")
        )];
    }
    let mut why = Vec::new();
    if let Some(r) = rebuilt
        && let Some(differs) = non_reproducible(built, readings, r)
    {
        why.push(differs);
    }
    for (control, want, word) in [(NOP, 0.0, "nop_passes"), (ORACLE, 1.0, "oracle_fails")] {
        for (i, r) in readings.get(control).into_iter().flatten().enumerate() {
            match r.reward {
                Some(x) if x == want => {}
                Some(x) if control == NOP => {
                    why.push(format!("{word}: reading {} scored {x}", i + 1));
                }
                Some(x) => why.push(with_cause(
                    format!("{word}: reading {} scored {x}", i + 1),
                    r,
                )),
                None => why.push(with_cause(
                    format!(
                        "{control}_no_reward: reading {}: {}",
                        i + 1,
                        r.error.as_deref().unwrap_or("no reward")
                    ),
                    r,
                )),
            }
        }
    }
    why
}

/// A reason with what its verifier's log says stopped it, where a line
/// says (a missing tool, no network, a refused write).
pub(super) fn with_cause(reason: String, r: &Reading) -> String {
    match cause(r) {
        Some(cause) => format!("{reason}; its verifier's log: {cause}"),
        None => reason,
    }
}

/// The first cause the reading's log names; a missing network says
/// whether the run had one and why not.
fn cause(r: &Reading) -> Option<String> {
    let cause = crate::model::rules::screening::cause(&r.tail)?;
    let Some(line) = cause.strip_prefix(crate::model::rules::screening::OFFLINE) else {
        return Some(cause);
    };
    let declared = r.network.as_str();
    Some(match (r.networked, r.network) {
        (true, _) => format!(
            "the network did not answer (the run had the network: the task declares `network_mode = \"{declared}\"`){line}"
        ),
        (false, NetworkMode::Allowlist) => {
            format!(
                "no network ({}){line}",
                r.network.unenforced().unwrap_or_default()
            )
        }
        (false, NetworkMode::NoNetwork) => format!(
            "no network (the task declares `network_mode = \"{declared}\"`: its runs have none){line}"
        ),
        (false, NetworkMode::Public) => cause,
    })
}

/// Why the rebuild of an environment does not read as the first build
/// did, with both readings: it failed to build, or a control's rewards
/// differ.
fn non_reproducible(
    built: &Built,
    readings: &BTreeMap<String, Vec<Reading>>,
    rebuilt: &Rebuilt,
) -> Option<String> {
    let image = |b: &Built| b.image.clone().unwrap_or_default();
    if !rebuilt.environment.ok {
        return Some(format!(
            "non_reproducible: the first build ({}) was built, the rebuild failed: {}",
            image(built),
            rebuilt.environment.reason.as_deref().unwrap_or("not built")
        ));
    }
    let rewards = |readings: &BTreeMap<String, Vec<Reading>>, control: &str| {
        let mut seen: Vec<String> = readings
            .get(control)
            .into_iter()
            .flatten()
            .map(|r| {
                r.reward
                    .map_or_else(|| "none".to_owned(), |x| x.to_string())
            })
            .collect();
        seen.sort();
        seen.dedup();
        seen.join(", ")
    };
    let say = |readings: &BTreeMap<String, Vec<Reading>>| {
        [NOP, ORACLE]
            .iter()
            .map(|c| format!("{c} {}", rewards(readings, c)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let differs = [NOP, ORACLE]
        .iter()
        .any(|c| rewards(readings, c) != rewards(&rebuilt.readings, c));
    differs.then(|| {
        format!(
            "non_reproducible: the first build ({}) read {}, the rebuild ({}) read {}",
            image(built),
            say(readings),
            image(&rebuilt.environment),
            say(&rebuilt.readings)
        )
    })
}

/// How a docker CLI call ended.
pub(super) struct Out {
    pub(super) ok: bool,
    pub(super) timed_out: bool,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
}

/// The classic builder's stderr without its deprecation notice (a
/// `DEPRECATED: The legacy builder …` line, the indented lines after it and
/// the blank that ends it), which it prints on every build: a reason keeps
/// the builder's own words. BuildKit is not used (docs/harbor.md).
fn without_legacy_banner(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let mut out = String::with_capacity(text.len());
    let mut in_banner = false;
    for line in text.split_inclusive('\n') {
        if line.starts_with("DEPRECATED: The legacy builder") {
            in_banner = true;
            continue;
        }
        if in_banner && (line.starts_with([' ', '\t']) || line.trim().is_empty()) {
            continue;
        }
        in_banner = false;
        out.push_str(line);
    }
    out
}

/// `docker ARGS`, killed past `timeout` (a `start -a` then leaves a running
/// container, which the caller's `rm -f` removes).
pub(super) fn docker(args: &[&str], timeout: Duration) -> Result<Out, String> {
    let mut docker = Command::new("docker");
    docker.args(args).env("DOCKER_BUILDKIT", "0");
    bounded(docker, timeout).map_err(|e| format!("cannot run docker: {e}"))
}

/// `command`'s output, the command killed past `timeout`.
fn bounded(mut command: Command, timeout: Duration) -> Result<Out, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut buf);
        }
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.take(1 << 20).read_to_end(&mut buf);
        }
        buf
    });
    // The call's end is waited for on a thread of its own, so it is seen at
    // once (a poll would add its interval to every one of the several calls
    // a reading makes); past the budget the process is killed through a
    // pidfd opened before anything could reap it, never by a reused pid.
    let child_pid = child.id();
    let pidfd = rustix::process::Pid::from_raw(child_pid as i32).and_then(|pid| {
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
    });
    let (ended, waited) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = ended.send(child.wait());
    });
    let (status, timed_out) = match waited.recv_timeout(timeout) {
        Ok(status) => (status, false),
        Err(_) => {
            match &pidfd {
                Some(fd) => {
                    let _ = rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL);
                }
                None => {
                    if let Some(pid) = rustix::process::Pid::from_raw(child_pid as i32) {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                    }
                }
            }
            (waited.recv().map_err(|e| e.to_string())?, true)
        }
    };
    let _ = waiter.join();
    let status = status.map_err(|e| e.to_string())?;
    Ok(Out {
        ok: status.success() && !timed_out,
        timed_out,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    })
}

/// The last `n` lines of `bytes`, without terminal escapes.
pub(super) fn tail(bytes: &[u8], n: usize) -> String {
    let text = clean(&String::from_utf8_lossy(bytes));
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bounded_call_ends_when_its_process_does_and_is_killed_past_its_budget() {
        let mut quick = Command::new("sh");
        quick.args(["-c", "echo out; echo err >&2"]);
        let out = bounded(quick, Duration::from_secs(30)).unwrap();
        assert!(out.ok && !out.timed_out);
        assert_eq!(
            (&out.stdout[..], &out.stderr[..]),
            (&b"out\n"[..], &b"err\n"[..])
        );

        let started = std::time::Instant::now();
        let mut slow = Command::new("sleep");
        slow.arg("30");
        let out = bounded(slow, Duration::from_millis(200)).unwrap();
        assert!(out.timed_out && !out.ok);
        // Killed, not waited out (a generous bound: the machine may be busy).
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );

        let mut failing = Command::new("sh");
        failing.args(["-c", "exit 3"]);
        let out = bounded(failing, Duration::from_secs(30)).unwrap();
        assert!(!out.ok && !out.timed_out);
        assert!(
            bounded(
                Command::new("/nonexistent/assay-test"),
                Duration::from_secs(1)
            )
            .is_err()
        );
    }

    use super::*;

    /// Every `environment_failed` reason began with the classic builder's
    /// deprecation notice; the builder's own words stay.
    #[test]
    fn a_failed_builds_reason_is_the_builders_words_without_its_deprecation_notice() {
        let stderr = b"DEPRECATED: The legacy builder is deprecated and will be removed in a future release.\n            BuildKit is currently disabled; enable it by removing the DOCKER_BUILDKIT=0\n            environment-variable.\n\nthe --mount option requires BuildKit. Refer to https://docs.docker.com/go/buildkit/\n";
        assert_eq!(
            without_legacy_banner(stderr),
            "the --mount option requires BuildKit. Refer to https://docs.docker.com/go/buildkit/\n"
        );
        let plain = "Step 2/2 : RUN false\n  indented stays\n";
        assert_eq!(without_legacy_banner(plain.as_bytes()), plain);
    }

    #[test]
    fn the_base_images_are_the_from_lines_less_stages_and_scratch() {
        let d = "FROM --platform=linux/amd64 golang:1.22 AS build\nRUN go build\nFROM build AS test\nfrom scratch\nFROM debian:bookworm\n";
        assert_eq!(base_images(d), ["golang:1.22", "debian:bookworm"]);
    }

    fn reading(reward: Option<f64>) -> Reading {
        Reading {
            reward,
            ..Reading::default()
        }
    }

    #[test]
    fn a_task_is_certified_only_when_every_control_reading_holds() {
        let built = Built {
            ok: true,
            ..Built::default()
        };
        let readings = |nop: Vec<Option<f64>>, oracle: Vec<Option<f64>>| {
            BTreeMap::from([
                (NOP.to_owned(), nop.into_iter().map(reading).collect()),
                (ORACLE.to_owned(), oracle.into_iter().map(reading).collect()),
            ])
        };
        assert!(
            certify(
                &built,
                &readings(vec![Some(0.0); 2], vec![Some(1.0); 2]),
                None
            )
            .is_empty()
        );
        let why = certify(
            &built,
            &readings(vec![Some(0.0), Some(1.0)], vec![Some(1.0); 2]),
            None,
        );
        assert_eq!(why, ["nop_passes: reading 2 scored 1"]);
        let why = certify(
            &built,
            &readings(vec![Some(0.0); 2], vec![Some(1.0), None]),
            None,
        );
        assert_eq!(why, ["oracle_no_reward: reading 2: no reward"]);
        let why = certify(
            &Built {
                ok: false,
                reason: Some("cannot pull offline".into()),
                ..Built::default()
            },
            &BTreeMap::new(),
            None,
        );
        assert_eq!(why, ["environment_failed: cannot pull offline"]);
    }

    /// A control that scored wrong says what its verifier's log names:
    /// the public Terminal-Bench folders' verifiers that install their
    /// tools at verify time, offline here.
    #[test]
    fn a_wrong_oracle_reading_names_what_its_verifier_lacked() {
        let built = Built {
            ok: true,
            ..Built::default()
        };
        let said = |tail: &str, reward: Option<f64>| {
            let oracle = Reading {
                reward,
                tail: tail.to_owned(),
                ..Reading::default()
            };
            let nop = Reading {
                reward: Some(0.0),
                tail: tail.to_owned(),
                ..Reading::default()
            };
            let readings = BTreeMap::from([
                (NOP.to_owned(), vec![nop]),
                (ORACLE.to_owned(), vec![oracle]),
            ]);
            certify(&built, &readings, None)
        };
        assert_eq!(
            said(
                "+ curl -LsSf https://astral.sh/uv/install.sh\n/tests/test.sh: line 9: curl: command not found\n",
                Some(0.0)
            ),
            ["oracle_fails: reading 1 scored 0; its verifier's log: `curl` not found"]
        );
        assert_eq!(
            said(
                "Err:1 http://deb.debian.org/debian bookworm InRelease\n  Temporary failure resolving 'deb.debian.org'\n",
                Some(0.0)
            ),
            [
                "oracle_fails: reading 1 scored 0; its verifier's log: no network (the run is offline): `Temporary failure resolving 'deb.debian.org'`"
            ]
        );
        // A run without the network says what the task declared; one with
        // it, that the network did not answer.
        let offline_tail = "  Temporary failure resolving 'deb.debian.org'\n";
        let declared = |network: NetworkMode| {
            let r = Reading {
                reward: Some(0.0),
                tail: offline_tail.to_owned(),
                network,
                networked: network.runs_networked(),
                ..Reading::default()
            };
            with_cause("oracle_fails: reading 1 scored 0".into(), &r)
        };
        assert_eq!(
            declared(NetworkMode::NoNetwork),
            "oracle_fails: reading 1 scored 0; its verifier's log: no network (the task declares `network_mode = \"no-network\"`: its runs have none): `Temporary failure resolving 'deb.debian.org'`"
        );
        assert!(
            declared(NetworkMode::Allowlist).contains(
                "no network (the task declares `network_mode = \"allowlist\"`, which assay does not enforce: its runs have no network)"
            ),
            "{}",
            declared(NetworkMode::Allowlist)
        );
        assert!(
            declared(NetworkMode::Public).contains(
                "the network did not answer (the run had the network: the task declares `network_mode = \"public\"`): `Temporary"
            ),
            "{}",
            declared(NetworkMode::Public)
        );
        assert_eq!(
            said("/usr/bin/python3: No module named pytest\n", None),
            [
                "oracle_no_reward: reading 1: no reward; its verifier's log: Python module `pytest` not found"
            ]
        );
        assert_eq!(
            said("FAILED test_outputs.py::test_answer\n", Some(0.0)),
            ["oracle_fails: reading 1 scored 0"]
        );
    }

    #[test]
    fn a_rebuild_that_reads_otherwise_is_non_reproducible_with_both_readings() {
        let built = |image: &str| Built {
            ok: true,
            image: Some(image.into()),
            ..Built::default()
        };
        let readings = |nop: Vec<Option<f64>>, oracle: Vec<Option<f64>>| {
            BTreeMap::from([
                (NOP.to_owned(), nop.into_iter().map(reading).collect()),
                (ORACLE.to_owned(), oracle.into_iter().map(reading).collect()),
            ])
        };
        let first = readings(vec![Some(0.0); 2], vec![Some(1.0); 2]);
        let same = Rebuilt {
            environment: built("sha256:b"),
            readings: readings(vec![Some(0.0)], vec![Some(1.0)]),
        };
        assert!(certify(&built("sha256:a"), &first, Some(&same)).is_empty());
        let other = Rebuilt {
            environment: built("sha256:b"),
            readings: readings(vec![Some(0.0)], vec![Some(0.0)]),
        };
        assert_eq!(
            certify(&built("sha256:a"), &first, Some(&other)),
            [
                "non_reproducible: the first build (sha256:a) read nop 0; oracle 1, the rebuild (sha256:b) read nop 0; oracle 0"
            ]
        );
        let broken = Rebuilt {
            environment: Built {
                ok: false,
                reason: Some("docker build failed: E: Unable to locate package".into()),
                ..Built::default()
            },
            readings: BTreeMap::new(),
        };
        let why = certify(&built("sha256:a"), &first, Some(&broken));
        assert!(
            why[0].starts_with("non_reproducible: the first build (sha256:a) was built, the rebuild failed: docker build failed"),
            "{why:?}"
        );
    }

    #[test]
    fn a_tail_is_read_without_terminal_escapes() {
        let raw = "\u{1b}[1;31mError:\u{1b}[0m step 3\r\n\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{7}\u{9b}2Kdone\u{7}";
        assert_eq!(tail(raw.as_bytes(), 1), "linkdone");
    }

    #[test]
    fn rewards_are_read_as_harbor_reads_them() {
        let files =
            |name: &str, text: &str| BTreeMap::from([(name.to_owned(), text.as_bytes().to_vec())]);
        let mut r = Reading::default();
        reward_of(&files("reward.txt", "1\n"), &mut r);
        assert_eq!(r.reward, Some(1.0));
        let mut r = Reading::default();
        reward_of(
            &files("reward.json", r#"{"reward": 0.0, "passed": 3}"#),
            &mut r,
        );
        assert_eq!((r.reward, r.rewards.len()), (Some(0.0), 2));
        let mut r = Reading::default();
        reward_of(&files("reward.json", r#"{"score": 0.5}"#), &mut r);
        assert_eq!(r.reward, Some(0.5));
        let mut r = Reading::default();
        reward_of(&BTreeMap::new(), &mut r);
        assert!(r.reward.is_none() && r.error.is_some());
    }
}
