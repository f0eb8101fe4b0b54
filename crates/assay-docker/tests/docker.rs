//! Against the real Docker daemon, no mocks: every guarantee of the docker
//! executor is tried from inside a container and must hold.
//!
//! The daemon must be reachable: these tests fail (they never skip) when it
//! is not. The base image is built with `scripts/base-image.sh` when absent
//! (a minute or so), and reused when present.
//!
//! Tests run in parallel in one process, so "nothing is left" is checked per
//! container (by id, or by a marker in its command), never as "no assay
//! containers at all".

// The helpers below are test code too; `allow-unwrap-in-tests` only covers
// `#[test]` functions.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use assay_docker::{
    ContainerOutcome, ContainerRun, Docker, DockerError, Fleet, ForeignSpec, HOME_DIR, ImageId,
    ImageSpec, KilledBy, Limits, Report, ReportRequest, RunUser, ServeSpec, TreeMount,
};
use tempfile::TempDir;

const BASE: &str = "assay-base:bookworm";
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The base image, built once per test process if the daemon lacks it.
fn base_image() -> &'static str {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = Command::new(repo_root().join("scripts/base-image.sh"))
            .arg(BASE)
            .output()
            .expect("run scripts/base-image.sh");
        assert!(
            out.status.success(),
            "scripts/base-image.sh failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
    BASE
}

async fn docker() -> Docker {
    match Docker::connect().await {
        Ok(docker) => docker,
        Err(error) => panic!("these tests need a running Docker daemon: {error}"),
    }
}

fn setup_spec(setup: &[&str]) -> ImageSpec {
    ImageSpec {
        base: base_image().to_owned(),
        key_files: BTreeMap::new(),
        guard: BTreeMap::new(),
        setup: setup.iter().map(|s| (*s).to_owned()).collect(),
        env: BTreeMap::from([("PATH".to_owned(), PATH.to_owned())]),
        user: RunUser::default(),
        writable: Vec::new(),
        timeout: Duration::from_secs(120),
        log_cap: 1 << 20,
        limits: Limits::default(),
    }
}

/// The environment image most runs use: the base plus the skeleton.
fn plain_image() -> ImageId {
    static IMAGE: OnceLock<ImageId> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            // Built on a runtime of its own: each test has its own runtime,
            // and this one must outlive whichever test came first.
            std::thread::spawn(|| {
                tokio::runtime::Runtime::new().unwrap().block_on(async {
                    docker()
                        .await
                        .build_image(&setup_spec(&[]))
                        .await
                        .unwrap()
                        .id
                })
            })
            .join()
            .unwrap()
        })
        .clone()
}

/// A staged tree and a run over it.
struct Stage {
    dir: TempDir,
}

impl Stage {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tree")).unwrap();
        Self { dir }
    }

    fn tree(&self) -> PathBuf {
        self.dir.path().join("tree")
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.tree().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("run.log")
    }

    fn log(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(self.log_path()).unwrap()).into_owned()
    }

    fn spec(&self, command: &str) -> ContainerRun {
        ContainerRun {
            image: plain_image(),
            tree: self.tree(),
            tree_mount: TreeMount::Upload,
            binds: Vec::new(),
            command: command.to_owned(),
            env: BTreeMap::from([
                ("PATH".to_owned(), PATH.to_owned()),
                ("HOME".to_owned(), HOME_DIR.to_owned()),
            ]),
            timeout: Duration::from_secs(60),
            log_path: self.log_path(),
            log_cap: 1 << 20,
            report: None,
            limits: Limits::default(),
            tmp_size: 16 << 20,
            home_size: 4 << 20,
            watch: Vec::new(),
            protect: Vec::new(),
        }
    }

    async fn run(&self, command: &str) -> ContainerOutcome {
        docker().await.run(&self.spec(command)).await.unwrap()
    }
}

/// `docker ARGS…` (the CLI, a second opinion on the daemon's state); its
/// stdout, trimmed.
fn cli(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn container_exists(id: &str) -> bool {
    !cli(&["ps", "-aq", "--no-trunc", "--filter", &format!("id={id}")]).is_empty()
}

/// Ids of assay containers whose command line holds `marker`.
fn containers_with(marker: &str) -> Vec<String> {
    let listed = cli(&[
        "ps",
        "-a",
        "--no-trunc",
        "--filter",
        "label=assay.run=1",
        "--format",
        "{{.ID}} {{.Command}}",
    ]);
    listed
        .lines()
        .filter(|line| line.contains(marker))
        .map(|line| line.split(' ').next().unwrap().to_owned())
        .collect()
}

async fn eventually(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what} not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

/// Accepts connections on all host addresses and answers `hello`.
fn host_listener() -> u16 {
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.write_all(b"hello");
        }
    });
    port
}

/// Python that connects to the default gateway (the host, from a bridged
/// container; 172.17.0.1 when there is no route) and prints what happened.
fn connect_to_host(port: u16) -> String {
    format!(
        r#"python3 - <<'PY'
import socket, struct
gateway = "172.17.0.1"
for line in open("/proc/net/route").read().splitlines()[1:]:
    fields = line.split()
    if fields[1] == "00000000":
        gateway = socket.inet_ntoa(struct.pack("<L", int(fields[2], 16)))
try:
    s = socket.create_connection((gateway, {port}), timeout=5)
    print("connected:", s.recv(5).decode())
except OSError as e:
    print("refused errno", e.errno)
PY"#
    )
}

// ---------------------------------------------------------------- connect

#[tokio::test]
async fn connect_fails_at_once_when_nothing_listens() {
    let start = Instant::now();
    let error = Docker::connect_to("unix:///nonexistent/docker.sock")
        .await
        .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    let message = error.to_string();
    assert!(
        matches!(error, DockerError::Unreachable { .. }),
        "{message}"
    );
    assert!(
        message.contains("/nonexistent/docker.sock") && message.contains("DOCKER_HOST"),
        "{message}"
    );
}

#[tokio::test]
async fn connect_gives_up_on_a_daemon_that_never_answers() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("mute.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    // Accept and hold every connection without a word.
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(4).collect();
        std::thread::sleep(Duration::from_secs(60));
        drop(held);
    });
    let start = Instant::now();
    let error = Docker::connect_to(&format!("unix://{}", socket.display()))
        .await
        .unwrap_err();
    let waited = start.elapsed();
    assert!(
        waited >= assay_docker::CONNECT_TIMEOUT
            && waited < assay_docker::CONNECT_TIMEOUT + Duration::from_secs(3),
        "{waited:?}"
    );
    assert!(error.to_string().contains("no answer within"), "{error}");
}

// ------------------------------------------------------------------ build

#[tokio::test]
async fn a_missing_base_image_names_the_script_that_builds_it() {
    let mut spec = setup_spec(&[]);
    spec.base = "assay-base:never-built".to_owned();
    let error = docker().await.build_image(&spec).await.unwrap_err();
    assert!(
        matches!(error, DockerError::BaseImageMissing { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("scripts/base-image.sh assay-base:never-built"),
        "{error}"
    );
}

#[tokio::test]
async fn a_failing_setup_names_its_command_exit_code_and_log() {
    let marker = unique("failing-setup");
    let spec = setup_spec(&[
        &format!("echo one {marker}"),
        "echo two; exit 3",
        "echo never",
    ]);
    let error = docker().await.build_image(&spec).await.unwrap_err();
    let DockerError::Setup(failure) = error else {
        panic!("not a setup failure: {error}");
    };
    assert_eq!(failure.step, Some(1));
    assert_eq!(failure.command.as_deref(), Some("echo two; exit 3"));
    assert_eq!(failure.exit_code, Some(3));
    assert!(!failure.timed_out);
    let log = String::from_utf8_lossy(&failure.log);
    assert_eq!(log, format!("one {marker}\ntwo\n"));
    assert_eq!(
        failure.to_string(),
        "setup command 1 `echo two; exit 3` exited with 3"
    );
    assert_eq!(containers_with(&marker), Vec::<String>::new());
}

#[tokio::test]
async fn a_setup_past_its_timeout_is_killed_and_leaves_nothing() {
    let marker = unique("slow-setup");
    let mut spec = setup_spec(&[&format!("echo {marker}"), "sleep 600"]);
    spec.timeout = Duration::from_secs(2);
    let start = Instant::now();
    let error = docker().await.build_image(&spec).await.unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    let DockerError::Setup(failure) = error else {
        panic!("not a setup failure: {error}");
    };
    assert!(failure.timed_out);
    assert_eq!(failure.exit_code, None);
    assert_eq!(String::from_utf8_lossy(&failure.log), format!("{marker}\n"));
    assert_eq!(failure.to_string(), "the setup timed out");
    assert_eq!(containers_with(&marker), Vec::<String>::new());
}

#[tokio::test]
async fn setup_runs_as_one_script_over_the_key_files_with_the_network() {
    let port = host_listener();
    let marker = unique("setup-net");
    let mut spec = setup_spec(&[
        "mkdir -p sub && cd sub",
        // `cd` carried over from the previous command.
        "pwd > ../where",
        &format!("cat ../requirements.txt; echo {marker}"),
        &connect_to_host(port),
    ]);
    spec.key_files
        .insert("requirements.txt".to_owned(), b"pytest==8.0\n".to_vec());
    spec.key_files
        .insert("deep/er/key.lock".to_owned(), b"locked\n".to_vec());
    let built = docker().await.build_image(&spec).await.unwrap();
    let log = String::from_utf8_lossy(&built.setup_log);
    assert!(!built.reused);
    assert!(log.contains("pytest==8.0\n"), "{log}");
    assert!(
        log.contains("connected: hello"),
        "setup must reach the network:\n{log}"
    );

    // What setup wrote stays in the image, read-only for runs.
    let stage = Stage::new();
    let mut run = stage.spec(
        "cat /assay/env/where /assay/env/deep/er/key.lock; echo $ASSAY_ENV; \
         touch /assay/env/x 2>&1 || echo env-read-only",
    );
    run.image = built.id.clone();
    let out = docker().await.run(&run).await.unwrap();
    assert_eq!(out.exit_code, Some(0));
    // ASSAY_ENV is the setup's, not the run's: the run's env is the spec's.
    assert_eq!(
        stage.log(),
        "/assay/env/sub\nlocked\n\ntouch: cannot touch '/assay/env/x': Read-only file system\nenv-read-only\n"
    );
    docker().await.remove_image(&built.id).await.unwrap();
}

#[tokio::test]
async fn two_builds_of_one_spec_share_one_image() {
    let marker = unique("shared");
    let spec = setup_spec(&[&format!("echo {marker} > /assay/env/marker")]);
    let docker = docker().await;
    let first = docker.build_image(&spec).await.unwrap();
    let second = docker.build_image(&spec).await.unwrap();
    assert!(!first.reused);
    assert!(second.reused);
    assert_eq!(first.id, second.id);
    assert_eq!(first.spec_digest, second.spec_digest);

    let mut other = spec.clone();
    other.setup.push("true".to_owned());
    let third = docker.build_image(&other).await.unwrap();
    assert!(!third.reused);
    assert_ne!(third.id, first.id);
    for id in [&first.id, &third.id] {
        docker.remove_image(id).await.unwrap();
    }
}

#[tokio::test]
async fn a_saved_image_removed_and_loaded_back_has_the_same_id() {
    let marker = unique("saved");
    let docker = docker().await;
    let built = docker
        .build_image(&setup_spec(&[&format!(
            "echo {marker} > /assay/env/marker"
        )]))
        .await
        .unwrap();
    let blob = docker.save_image(&built.id).await.unwrap();
    docker.remove_image(&built.id).await.unwrap();
    let stage = Stage::new();
    let mut run = stage.spec("cat /assay/env/marker");
    run.image = built.id.clone();
    let gone = docker.run(&run).await.unwrap_err();
    assert!(matches!(gone, DockerError::ImageMissing { .. }), "{gone}");

    let loaded = docker.load_image(blob).await.unwrap();
    assert_eq!(loaded, built.id);
    // Labels came back too: it still knows its run user and its spec.
    let out = docker.run(&run).await.unwrap();
    assert_eq!(
        (out.exit_code, stage.log()),
        (Some(0), format!("{marker}\n"))
    );
    let again = docker
        .build_image(&setup_spec(&[&format!(
            "echo {marker} > /assay/env/marker"
        )]))
        .await
        .unwrap();
    assert!(again.reused && again.id == built.id);
    docker.remove_image(&built.id).await.unwrap();
}

// ------------------------------------------------------------------- runs

#[tokio::test]
async fn a_run_cannot_reach_the_network() {
    let port = host_listener();
    let stage = Stage::new();
    let out = stage
        .run(&format!("ls /sys/class/net; {}", connect_to_host(port)))
        .await;
    assert_eq!(out.exit_code, Some(0));
    // Only a loopback, and the host is unreachable (ENETUNREACH), where a
    // bridged setup container connects (see the setup test).
    assert_eq!(stage.log(), "lo\nrefused errno 101\n");
}

#[tokio::test]
async fn a_run_is_an_unprivileged_user_with_the_limits_applied() {
    let stage = Stage::new();
    let mut spec = stage.spec(
        r#"echo "uid $(id -u) gid $(id -g)"
grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status | tr -s '\t' ' '
for f in memory.max memory.swap.max pids.max cpu.max memory/memory.limit_in_bytes memory/memory.memsw.limit_in_bytes pids/pids.max cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us; do
  [ -e /sys/fs/cgroup/$f ] && echo "$f $(cat /sys/fs/cgroup/$f)"
done
echo "nofile $(ulimit -n) core $(ulimit -c)"
python3 -c 'import resource; print("fsize", resource.getrlimit(resource.RLIMIT_FSIZE)[0])'
df -k /tmp /assay/home | awk 'NR > 1 { print $6, $2 }'"#,
    );
    spec.limits = Limits {
        cpu_millis: Some(500),
        memory: Some(256 << 20),
        pids: Some(64),
        open_files: Some(256),
        file_size: Some(8 << 20),
        written: Some(64 << 20),
    };
    let out = docker().await.run(&spec).await.unwrap();
    let log = stage.log();
    assert_eq!(out.exit_code, Some(0), "{log}");
    let memory = 256u64 << 20;
    // No swap: cgroup v2 counts swap apart (0), v1 memory and swap together.
    let cgroup = if log.contains("memory.max ") {
        format!("memory.max {memory}\nmemory.swap.max 0\npids.max 64\ncpu.max 50000 100000\n")
    } else {
        format!(
            "memory/memory.limit_in_bytes {memory}\nmemory/memory.memsw.limit_in_bytes {memory}\n\
             pids/pids.max 64\ncpu/cpu.cfs_quota_us 50000\ncpu/cpu.cfs_period_us 100000\n"
        )
    };
    assert_eq!(
        log,
        format!(
            "uid 1000 gid 1000\nCapInh: 0000000000000000\nCapPrm: 0000000000000000\n\
             CapEff: 0000000000000000\nCapBnd: 0000000000000000\nCapAmb: 0000000000000000\n\
             NoNewPrivs: 1\n{cgroup}nofile 256 core 0\nfsize {}\n/tmp 16384\n/assay/home 4096\n",
            8 << 20
        )
    );
}

#[tokio::test]
async fn a_run_sees_exactly_the_environment_of_its_spec() {
    let stage = Stage::new();
    let mut spec = stage.spec("env | sort");
    spec.env.insert("ASSAY_SEED".to_owned(), "0".to_owned());
    let out = docker().await.run(&spec).await.unwrap();
    assert_eq!(out.exit_code, Some(0));
    // PWD is the shell's own; no HOSTNAME, no image ENV (LANG), nothing of ours.
    assert_eq!(
        stage.log(),
        format!("ASSAY_SEED=0\nHOME={HOME_DIR}\nPATH={PATH}\nPWD=/assay/tree\n")
    );
}

#[tokio::test]
async fn a_run_writes_only_its_tree_tmp_and_home() {
    let stage = Stage::new();
    stage.write("pkg/mod.py", "x = 1\n");
    let out = stage
        .run(
            r#"for f in /escape /etc/escape /etc/hosts /usr/escape /var/tmp/escape /assay/escape /assay/env/escape /root/escape; do
  (echo x >> "$f") 2>/dev/null && echo "WROTE $f" || echo "refused $f"
done
for f in ./new pkg/new /tmp/new "$HOME/new"; do echo x > "$f" && echo "wrote $f"; done
head -c 20000000 /dev/zero > /tmp/big 2>/dev/null && echo "WROTE past the tmpfs size" || echo "tmp is size-limited""#,
        )
        .await;
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(
        stage.log(),
        "refused /escape\nrefused /etc/escape\nrefused /etc/hosts\nrefused /usr/escape\n\
         refused /var/tmp/escape\nrefused /assay/escape\nrefused /assay/env/escape\n\
         refused /root/escape\nwrote ./new\nwrote pkg/new\nwrote /tmp/new\n\
         wrote /assay/home/new\ntmp is size-limited\n"
    );
}

/// What a test suite compiles into `/tmp` or its home runs, as under the
/// local sandbox: `go test` builds its test binaries under `$TMPDIR`, and a
/// tmpfs the daemon mounts `noexec` by default fails every Go suite.
#[tokio::test]
async fn a_run_executes_what_it_wrote_to_tmp_and_home() {
    let stage = Stage::new();
    let out = stage
        .run(
            r#"for d in /tmp "$HOME"; do cp /bin/true "$d/built" && "$d/built" && echo "ran $d/built"; done"#,
        )
        .await;
    assert_eq!(out.exit_code, Some(0), "{}", stage.log());
    assert_eq!(stage.log(), "ran /tmp/built\nran /assay/home/built\n");
}

#[tokio::test]
async fn the_tree_arrives_owned_by_the_run_user_with_symlinks_as_symlinks() {
    let stage = Stage::new();
    stage.write("pkg/mod.py", "x = 1\n");
    std::os::unix::fs::symlink("/etc/passwd", stage.tree().join("link")).unwrap();
    let out = stage
        .run("stat -c '%n %u:%g %F' . pkg pkg/mod.py link; readlink link; pwd")
        .await;
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(
        stage.log(),
        ". 0:0 directory\npkg 1000:1000 directory\npkg/mod.py 1000:1000 regular file\n\
         link 1000:1000 symbolic link\n/etc/passwd\n/assay/tree\n"
    );
    // The tree's root is root's and sticky: the run creates entries there,
    // but renames or removes only its own.
    let out = stage
        .run("stat -c '%a' .; touch new && rm new && echo own")
        .await;
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(stage.log(), "1777\nown\n");
}

/// Every way to change a protected file from inside, each on its own line
/// so the log says which got through: `CHANGED <how>` when it did.
const CHANGE_PROTECTED: &str = "\
cd tests/unit
echo evil > test_a.py && echo 'CHANGED write'
echo evil >> test_a.py && echo 'CHANGED append'
true > test_a.py && echo 'CHANGED truncate'
chmod 666 test_a.py && echo 'CHANGED chmod'
mv test_a.py moved.py && echo 'CHANGED rename'
rm -f test_a.py && echo 'CHANGED unlink'
echo new > new.py && mv -f new.py test_a.py && echo 'CHANGED replace'
ln test_a.py ../hard.py && echo evil > ../hard.py && echo 'CHANGED hard link'
cd /assay/tree
mv tests/unit tests/moved && echo 'CHANGED dir rename'
mv tests gone && echo 'CHANGED top dir rename'
rm -rf tests 2>/dev/null && echo 'CHANGED removed'
mkdir -p tests/unit/__pycache__ && echo beside > tests/unit/beside.py && echo 'WROTE beside'
echo helper > tests/unit/helper.py && mv tests/unit/helper.py tests/unit/helper2.py && echo 'MOVED own'
echo top > test_top.py && echo 'CHANGED top file'
cat tests/unit/test_a.py
";

#[tokio::test]
async fn a_protected_file_cannot_be_written_renamed_unlinked_or_replaced_and_its_dirs_stay() {
    let docker = docker().await;
    let stage = Stage::new();
    stage.write("tests/unit/test_a.py", "hidden\n");
    stage.write("tests/unit/helper.py", "helper\n");
    stage.write("test_top.py", "top\n");
    let mut spec = stage.spec(CHANGE_PROTECTED);
    spec.protect = ["tests/unit/test_a.py", "test_top.py", "tests/missing.py"]
        .map(PathBuf::from)
        .to_vec();
    spec.watch = spec.protect.clone();
    let out = docker.run(&spec).await.unwrap();
    let log = stage.log();
    assert_eq!(out.exit_code, Some(0), "{log}");
    assert!(!log.contains("CHANGED"), "{log}");
    assert!(log.contains("WROTE beside\nMOVED own\n"), "{log}");
    assert!(log.ends_with("\nhidden\n"), "{log}");
    let hash = |bytes: &[u8]| Some(*blake3::hash(bytes).as_bytes());
    assert_eq!(
        out.watched[Path::new("tests/unit/test_a.py")],
        hash(b"hidden\n")
    );
    assert_eq!(out.watched[Path::new("test_top.py")], hash(b"top\n"));

    // Unprotected, the same script gets through: the attack is real.
    spec.protect.clear();
    docker.run(&spec).await.unwrap();
    assert!(stage.log().contains("CHANGED write"), "{}", stage.log());
}

#[tokio::test]
async fn a_run_on_an_image_of_another_layout_is_refused() {
    // An assay image as an older assay made them: its tree directory the
    // run user's, no `assay.layout` label.
    let marker = unique("old-layout");
    let container = cli(&["create", base_image(), "true", &marker]);
    let image = cli(&[
        "commit",
        "--change",
        "LABEL assay.user=1000:1000",
        &container,
    ]);
    cli(&["rm", &container]);
    let stage = Stage::new();
    let mut spec = stage.spec("true");
    spec.image = ImageId::parse(&image).unwrap();
    let error = docker().await.run(&spec).await.unwrap_err();
    cli(&["image", "rm", &image]);
    assert!(
        matches!(error, DockerError::OtherLayout { ref found, .. } if found == "none"),
        "{error}"
    );
}

#[tokio::test]
async fn the_report_is_copied_out_but_never_through_a_symlink() {
    let docker = docker().await;
    let cases: [(&str, &str, Report); 6] = [
        (
            "report.xml",
            "echo '<ok/>' > report.xml",
            Report::Present(b"<ok/>\n".to_vec()),
        ),
        (
            "out/r.xml",
            "mkdir out; echo deep > out/r.xml",
            Report::Present(b"deep\n".to_vec()),
        ),
        ("report.xml", "true", Report::Missing),
        (
            "report.xml",
            "ln -s /etc/passwd report.xml",
            Report::NotAFile,
        ),
        ("out/passwd", "ln -s /etc out", Report::NotAFile),
        (
            "report.xml",
            "head -c 5000 /dev/zero > report.xml",
            Report::TooLarge { size: 5000 },
        ),
    ];
    for (path, command, expected) in cases {
        let stage = Stage::new();
        let mut spec = stage.spec(command);
        spec.report = Some(ReportRequest {
            path: path.into(),
            cap: 4096,
        });
        let out = docker.run(&spec).await.unwrap();
        assert_eq!(out.report, Some(expected), "{command}");
    }
}

#[tokio::test]
async fn watched_files_are_fingerprinted_after_the_run_without_following_links() {
    let docker = docker().await;
    let stage = Stage::new();
    for name in ["same", "edited", "deleted", "linked", "dir"] {
        stage.write(&format!("tests/{name}.py"), "x = 1\n");
    }
    let mut spec = stage.spec(
        "echo y >> tests/edited.py; rm tests/deleted.py; \
         ln -sf /etc/passwd tests/linked.py; rm tests/dir.py; mkdir tests/dir.py",
    );
    spec.watch = ["same", "edited", "deleted", "linked", "dir"]
        .map(|name| PathBuf::from(format!("tests/{name}.py")))
        .to_vec();
    let out = docker.run(&spec).await.unwrap();
    assert_eq!(out.exit_code, Some(0));
    let hash = |bytes: &[u8]| Some(*blake3::hash(bytes).as_bytes());
    let watched: Vec<(String, Option<[u8; 32]>)> = out
        .watched
        .iter()
        .map(|(path, hash)| (path.display().to_string(), *hash))
        .collect();
    assert_eq!(
        watched,
        [
            ("tests/deleted.py".to_owned(), None),
            ("tests/dir.py".to_owned(), None),
            ("tests/edited.py".to_owned(), hash(b"x = 1\ny\n")),
            ("tests/linked.py".to_owned(), None),
            ("tests/same.py".to_owned(), hash(b"x = 1\n")),
        ]
    );
}

#[tokio::test]
async fn output_past_the_cap_is_drained_and_counted_not_kept() {
    let stage = Stage::new();
    let mut spec =
        stage.spec("echo out; echo err >&2; echo out2; head -c 3000000 /dev/zero; echo end");
    spec.log_cap = 20;
    let out = docker().await.run(&spec).await.unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.log_bytes, 13 + 3_000_000 + 4);
    assert!(out.log_truncated);
    // In the order written, though stdout and stderr are two streams to Docker.
    let log = std::fs::read(stage.log_path()).unwrap();
    assert_eq!(log, b"out\nerr\nout2\n\0\0\0\0\0\0\0");
}

#[tokio::test]
async fn exit_codes_come_back() {
    let stage = Stage::new();
    let out = stage.run("exit 7").await;
    assert_eq!(
        (out.exit_code, out.timed_out, out.killed_by),
        (Some(7), false, None)
    );
    let out = stage.run("no-such-command").await;
    assert_eq!(out.exit_code, Some(127));
}

/// Drives `run` until the container whose command holds `marker` exists;
/// returns its id and the name of its tree volume.
async fn container_of<F>(run: &mut std::pin::Pin<Box<F>>, marker: &str) -> (String, String)
where
    F: std::future::Future<Output = Result<ContainerOutcome, DockerError>>,
{
    let appeared = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            tokio::select! {
                finished = run.as_mut() => panic!("the run ended: {finished:?}"),
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
            // Running, not only created: the run holds its container's
            // guard only once the daemon's answer to the create call is
            // read, and a run dropped before that (a busy daemon lists the
            // container first) leaves a container no guard knows of.
            if let Some(id) = containers_with(marker).pop()
                && cli(&["inspect", "-f", "{{.State.Running}}", &id]) == "true"
            {
                return id;
            }
        }
    })
    .await;
    let id = appeared.expect("no container appeared");
    let volume = cli(&[
        "inspect",
        "-f",
        "{{range .Mounts}}{{if eq .Destination \"/assay/tree\"}}{{.Name}}{{end}}{{end}}",
        &id,
    ]);
    assert!(!volume.is_empty(), "no tree volume on {id}");
    (id, volume)
}

fn volume_exists(name: &str) -> bool {
    !cli(&["volume", "ls", "-q", "--filter", &format!("name={name}")]).is_empty()
}

#[tokio::test]
async fn a_timeout_kills_the_run_and_removes_its_container_and_tree() {
    let marker = unique("timeout");
    let stage = Stage::new();
    let mut spec = stage.spec(&format!("echo started; sleep 600 # {marker}"));
    spec.timeout = Duration::from_secs(3);
    let start = Instant::now();
    let docker = docker().await;
    let mut run = Box::pin(docker.run(&spec));
    let (id, volume) = container_of(&mut run, &marker).await;
    let out = run.await.unwrap();
    assert!(out.timed_out);
    assert_eq!(out.killed_by, Some(KilledBy::WallClock));
    assert_eq!(out.exit_code, None);
    assert!(
        out.duration >= Duration::from_secs(3) && start.elapsed() < Duration::from_secs(20),
        "{:?}",
        out.duration
    );
    assert_eq!(stage.log(), "started\n");
    assert_eq!(out.container, id);
    assert!(!container_exists(&id));
    assert!(!volume_exists(&volume), "the tree volume {volume} is left");
}

#[tokio::test]
async fn a_dropped_run_removes_its_container_and_tree() {
    let marker = unique("dropped");
    let stage = Stage::new();
    let spec = stage.spec(&format!("sleep 600 # {marker}"));
    let docker = docker().await;
    let mut run = Box::pin(docker.run(&spec));
    let (id, volume) = container_of(&mut run, &marker).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(run);
    eventually(
        "the dropped run's container and tree are removed",
        Duration::from_secs(20),
        || !container_exists(&id) && !volume_exists(&volume),
    )
    .await;
}

#[test]
fn a_run_dropped_with_its_runtime_removes_its_container() {
    let marker = unique("runtime-gone");
    let stage = Stage::new();
    let spec = stage.spec(&format!("sleep 600 # {marker}"));
    let image = plain_image();
    assert_eq!(spec.image, image);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.spawn(async move {
        let docker = docker().await;
        let _ = docker.run(&spec).await;
    });
    // Running, not only created: a runtime shut down while the create call
    // is in flight leaves a container no guard knows of yet (the next
    // build's sweep of dead processes' containers takes it).
    let start = Instant::now();
    while !cli(&["ps", "--no-trunc", "--format", "{{.Command}}"]).contains(&marker) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no container started"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    runtime.shutdown_background();
    // A bound on "eventually", not a speed: with every docker test running
    // side by side on a loaded 2-core machine the daemon took over 20 s.
    let start = Instant::now();
    while !containers_with(&marker).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "the container outlived its runtime"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

// ------------------------------------------------------------------ fleet

/// The state of container `id` (`created`, `running`, `exited`, …).
fn status_of(id: &str) -> String {
    cli(&["inspect", "-f", "{{.State.Status}}", id])
}

#[tokio::test]
async fn runs_through_a_fleet_take_containers_created_ahead_never_one_that_ran() {
    let marker = unique("fleet");
    let command = format!("ls -A; cat n # {marker}");
    let fleet = Fleet::default();
    let docker = docker().await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let stage = Stage::new();
        stage.write("n", &format!("{n}\n"));
        let out = docker.run_in(&stage.spec(&command), &fleet).await.unwrap();
        assert_eq!(out.exit_code, Some(0));
        // Exactly its own tree: no file of an earlier run.
        assert_eq!(stage.log(), format!("n\n{n}\n"));
        ids.push(out.container);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "a container ran twice: {ids:?}");
    let counts = fleet.counts();
    assert_eq!((counts.created, counts.claimed), (1, 2), "{counts:?}");
    // Those that ran go in the background; the next one is there, started
    // and parked on its go-ahead, which is where its command comes from:
    // nothing of any run is in it.
    eventually(
        "the ones that ran are removed",
        Duration::from_secs(20),
        || containers_with(&marker).is_empty(),
    )
    .await;
    let made = fleet.made_ahead();
    assert_eq!(made.len(), 3, "{made:?}");
    // The second and third runs took the first two made ahead.
    assert!(
        made[..2].iter().all(|id| ids.contains(id)),
        "{made:?} {ids:?}"
    );
    let pooled = made.last().unwrap();
    assert!(!ids.contains(pooled));
    assert_eq!(status_of(pooled), "running");
    // Nothing runs in it but the outer shell waiting for its go-ahead.
    let top = cli(&["top", pooled, "-o", "pid,args"]);
    let processes: Vec<&str> = top.lines().skip(1).collect();
    assert_eq!(processes.len(), 1, "{top}");
    assert!(processes[0].contains("IFS= read -r c"), "{top}");
    assert!(!top.contains(&marker), "{top}");
    assert_eq!(fleet.drain().await, Vec::<String>::new());
    assert_eq!(fleet.counts().unused, 1);
    assert!(!container_exists(pooled));
}

/// A container started ahead waits for its go-ahead on its stdin; the
/// command it then runs reads none of that line (its stdin is empty), and
/// its clock starts at the go-ahead, not at the container's start.
#[tokio::test]
async fn a_parked_containers_command_reads_no_go_ahead_and_its_clock_starts_at_go() {
    let marker = unique("parked");
    let command = format!("cat; echo read-nothing; sleep 1 # {marker}");
    let fleet = Fleet::default();
    let docker = docker().await;
    let stage = Stage::new();
    let mut spec = stage.spec(&command);
    spec.timeout = Duration::from_secs(4);
    let first = docker.run_in(&spec, &fleet).await.unwrap();
    assert_eq!(first.exit_code, Some(0));
    assert_eq!(stage.log(), "read-nothing\n");
    // Parked longer than the run's whole budget before it is claimed.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let stage = Stage::new();
    let mut spec = stage.spec(&command);
    spec.timeout = Duration::from_secs(4);
    let second = docker.run_in(&spec, &fleet).await.unwrap();
    assert_eq!(fleet.counts().claimed, 1, "{:?}", fleet.counts());
    assert_eq!(
        (second.exit_code, second.timed_out),
        (Some(0), false),
        "{second:?}"
    );
    assert_eq!(stage.log(), "read-nothing\n");
    assert!(second.duration < Duration::from_secs(3), "{second:?}");
    assert_eq!(fleet.drain().await, Vec::<String>::new());
    assert_eq!(containers_with(&marker), Vec::<String>::new());
}

/// A parked container is told its run's argv with the go-ahead line: a
/// command and variables of quotes, backslashes, `$`, backticks and
/// newlines (one line of them reading `go`) run exactly as in a container
/// created for them, and so does each of two runs with different commands
/// and variables taking the same parked container's spec.
#[tokio::test]
async fn a_parked_container_runs_its_claimants_argv_byte_for_byte() {
    let marker = unique("argv");
    let fleet = Fleet::default();
    let docker = docker().await;
    let awkward = "it's \\ \"$HOME\" `x` $(y)\ngo\n  tail  ";
    let mut logs = Vec::new();
    for n in 0..3 {
        let stage = Stage::new();
        let mut spec = stage.spec(&format!(
            "printf '%s|' \"$V\" \"$W\"; printf 'run {n}\\n'\n\
             go\n\
             echo \"it's\" 'a \\ b' # {marker}"
        ));
        spec.env.insert("V".into(), awkward.into());
        spec.env.insert("W".into(), format!("{n}\n"));
        let out = docker.run_in(&spec, &fleet).await.unwrap();
        // `go` is no command: the run's own shell says so, after the rest.
        assert_eq!(out.exit_code, Some(0), "{}", stage.log());
        logs.push(stage.log());
    }
    assert_eq!(fleet.counts().claimed, 2, "{:?}", fleet.counts());
    for (n, log) in logs.iter().enumerate() {
        assert_eq!(
            log.as_str(),
            format!(
                "{awkward}|{n}\n|run {n}\n{}it's a \\ b\n",
                go_not_found(log)
            ),
            "run {n}"
        );
    }
    assert_eq!(fleet.drain().await, Vec::<String>::new());
    assert_eq!(containers_with(&marker), Vec::<String>::new());
}

/// The shell's own words for a command `go` it did not find, as `log`
/// holds them (they name the shell's path and line).
fn go_not_found(log: &str) -> String {
    let line = log
        .lines()
        .find(|l| l.contains("go: not found"))
        .unwrap_or_else(|| panic!("no `go: not found` in {log:?}"));
    format!("{line}\n")
}

/// Deployments through a fleet: the second takes the container parked for
/// it, which becomes the app's own script (the first process, as probes
/// find it), sees exactly its own tree and variables, and still reads the
/// caller's go-ahead on its stdin; a parked deployment container is never
/// a test run's.
#[tokio::test]
async fn a_deployment_through_a_fleet_takes_a_parked_container_and_reads_its_callers_go_ahead() {
    let marker = unique("serve");
    let fleet = Fleet::default();
    let docker = docker().await;
    let mut ids = Vec::new();
    for n in 0..2 {
        let stage = Stage::new();
        stage.write("n", &format!("{n}\n"));
        let spec = ServeSpec {
            image: plain_image(),
            tree: stage.tree(),
            script: format!(
                "read -r word; printf '%s|%s|%s\\n' \"$word\" \"$V\" \"$(ls -A)\"; exec sleep 876{n} # {marker}"
            ),
            env: BTreeMap::from([
                ("PATH".to_owned(), PATH.to_owned()),
                ("V".to_owned(), format!("it's\n{n}")),
            ]),
            log_path: stage.log_path(),
            log_cap: 1 << 20,
            limits: Limits::default(),
            tmp_size: 16 << 20,
            home_size: 4 << 20,
        };
        let mut serving = docker.serve_in(&spec, &fleet).await.unwrap();
        serving.say(b"hello\n").await.unwrap();
        let pid = serving.pid();
        eventually("the app execs", Duration::from_secs(20), || {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c == format!("sleep\x00876{n}\x00").as_bytes())
        })
        .await;
        ids.push(serving.id().to_owned());
        serving.end().await.unwrap();
        // Ended: the app runs no more, and its output is all in the log.
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            state.is_empty() || state.contains(") Z "),
            "the app outlived its end: {state}"
        );
        assert_eq!(stage.log(), format!("hello|it's\n{n}|n\n"));
    }
    assert_eq!(fleet.counts().claimed, 1, "{:?}", fleet.counts());
    assert_eq!(fleet.made_ahead()[0], ids[1]);
    // A test run of the same image, user and limits makes its own.
    let stage = Stage::new();
    docker.run_in(&stage.spec("true"), &fleet).await.unwrap();
    assert_eq!(fleet.counts().claimed, 1, "{:?}", fleet.counts());
    assert_eq!(fleet.drain().await, Vec::<String>::new());
    for id in fleet.made_ahead().iter().chain(&ids) {
        assert!(!container_exists(id), "{id} outlived the drain");
    }
    assert_eq!(containers_with(&marker), Vec::<String>::new());
}

#[tokio::test]
async fn a_timed_out_run_through_a_fleet_leaves_no_container_or_tree_after_the_drain() {
    let marker = unique("fleet-timeout");
    let stage = Stage::new();
    let mut spec = stage.spec(&format!("sleep 600 # {marker}"));
    spec.timeout = Duration::from_secs(2);
    let fleet = Fleet::default();
    let docker = docker().await;
    let mut run = Box::pin(docker.run_in(&spec, &fleet));
    let (id, volume) = container_of(&mut run, &marker).await;
    let out = run.await.unwrap();
    assert_eq!(out.killed_by, Some(KilledBy::WallClock));
    assert_eq!(out.container, id);
    assert_eq!(fleet.drain().await, Vec::<String>::new());
    assert_eq!(containers_with(&marker), Vec::<String>::new());
    assert!(!container_exists(&id));
    assert!(!volume_exists(&volume), "the tree volume {volume} is left");
}

#[tokio::test]
async fn a_memory_hog_is_oom_killed_and_says_so() {
    let stage = Stage::new();
    let mut spec = stage.spec("exec python3 -c 'x = bytearray(1 << 30); print(len(x))'");
    spec.limits.memory = Some(64 << 20);
    let out = docker().await.run(&spec).await.unwrap();
    assert!(out.oom_killed, "{out:?}");
    assert_eq!(out.killed_by, Some(KilledBy::Memory));
    assert_eq!(out.exit_code, Some(137));
    assert!(!out.timed_out);
    assert!(!container_exists(&out.container));
}

/// Writes 8 MiB into the tree 40 times (320 MiB), a tenth of a second
/// apart, then says `finished`: `redirect` says where each write goes.
fn writer(redirect: &str) -> String {
    format!(
        "for i in $(seq 40); do head -c 8388608 /dev/zero {redirect}; sleep 0.1; done; echo finished"
    )
}

#[tokio::test]
async fn a_run_writing_past_its_write_limit_is_killed_and_says_so() {
    for command in [
        writer("> part$i"),
        // One file, unlinked at once: the tree looks empty throughout.
        format!("exec 3>hidden; rm hidden; {}", writer(">&3")),
    ] {
        let stage = Stage::new();
        let mut spec = stage.spec(&command);
        spec.limits.written = Some(32 << 20);
        let out = docker().await.run(&spec).await.unwrap();
        assert_eq!(out.killed_by, Some(KilledBy::Written), "{command}: {out:?}");
        assert!(
            !stage.log().contains("finished"),
            "{command}: {}",
            stage.log()
        );
        assert!(!out.timed_out);
        assert!(!container_exists(&out.container));
    }
}

#[tokio::test]
async fn a_run_within_its_write_limit_is_left_alone() {
    let stage = Stage::new();
    stage.write("big-already", &"x".repeat(40 << 20));
    let mut spec = stage.spec("head -c 8388608 /dev/zero > part; echo finished");
    // The tree as uploaded does not count: only what the run adds.
    spec.limits.written = Some(32 << 20);
    let out = docker().await.run(&spec).await.unwrap();
    assert_eq!((out.exit_code, out.killed_by), (Some(0), None), "{out:?}");
    assert!(stage.log().contains("finished"));
}

#[tokio::test]
async fn a_fork_bomb_stops_at_the_pids_limit() {
    let stage = Stage::new();
    let mut spec = stage.spec(
        "python3 -c '
import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print(\"stopped at\", n, \"errno\", e.errno)
'",
    );
    spec.limits.pids = Some(32);
    spec.timeout = Duration::from_secs(30);
    let out = docker().await.run(&spec).await.unwrap();
    // The shell and python count too: fewer than 32 children.
    let log = stage.log();
    assert!(
        log.starts_with("stopped at ") && log.trim_end().ends_with("errno 11"),
        "{log}"
    );
    let n: u32 = log.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!((20..32).contains(&n), "{log}");
    // The sleeping children die with the container.
    assert_eq!(out.exit_code, Some(0));
    assert!(!container_exists(&out.container));
}

#[tokio::test]
async fn a_run_on_an_image_not_built_by_assay_is_refused() {
    let stage = Stage::new();
    let mut spec = stage.spec("true");
    spec.image =
        ImageId::parse(&cli(&["image", "inspect", "-f", "{{.Id}}", base_image()])).unwrap();
    let error = docker().await.run(&spec).await.unwrap_err();
    assert!(
        matches!(error, DockerError::NotAnAssayImage { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn an_unreadable_tree_is_an_error_and_leaves_nothing() {
    let stage = Stage::new();
    let marker = unique("no-tree");
    let mut spec = stage.spec(&format!("true # {marker}"));
    spec.tree = stage.dir.path().join("missing");
    let error = docker().await.run(&spec).await.unwrap_err();
    assert!(matches!(error, DockerError::Tree { .. }), "{error}");
    eventually("the container is removed", Duration::from_secs(10), || {
        containers_with(&marker).is_empty()
    })
    .await;
}

// --------------------------------------------------------------- leftovers

#[tokio::test]
async fn cleanup_removes_containers_of_dead_owners_only() {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    // pid 1's start time, from /proc/1/stat (field 22).
    let stat = std::fs::read_to_string("/proc/1/stat").unwrap();
    let init_start = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_owned();
    let create = |pid: &str, start: &str, host: &str| {
        cli(&[
            "create",
            "--label",
            "assay.run=1",
            "--label",
            &format!("assay.pid={pid}"),
            "--label",
            &format!("assay.pid_start={start}"),
            "--label",
            &format!("assay.host={host}"),
            base_image(),
            "true",
        ])
    };
    let dead = create("1", "1", host); // pid 1 reused: not the same start time
    let alive = create("1", &init_start, host);
    let elsewhere = create("1", "1", "another-host");

    let removed = docker().await.cleanup_leftovers().await.unwrap();
    assert!(removed.contains(&dead), "{removed:?}");
    assert!(!container_exists(&dead));
    for id in [&alive, &elsewhere] {
        assert!(!removed.contains(id) && container_exists(id));
        cli(&["rm", "-f", id]);
    }
}

// ------------------------------------------------------------------ types

/// The pipeline runs these on a multi-threaded runtime: the futures must be
/// `Send`. A compile-time check; the body never runs.
#[test]
fn the_futures_are_send() {
    fn send<T: Send>(_: T) {}
    let _check = |docker: &'static Docker,
                  run: &'static ContainerRun,
                  spec: &'static ImageSpec,
                  id: &'static ImageId| {
        send(docker.run(run));
        send(docker.build_image(spec));
        send(docker.save_image(id));
        send(docker.load_image(Vec::new()));
        send(docker.remove_image(id));
        send(docker.cleanup_leftovers());
        send(Docker::connect());
    };
}

// ---------------------------------------------------------------- foreign

fn foreign_spec(script: &str) -> ForeignSpec {
    ForeignSpec {
        image: base_image().to_owned(),
        script: script.to_owned(),
        limits: Limits {
            memory: Some(1 << 30),
            ..Limits::default()
        },
        labels: std::collections::HashMap::from([("assay.test".to_owned(), "foreign".to_owned())]),
        network: false,
    }
}

#[tokio::test]
async fn a_foreign_container_gets_its_directories_runs_confined_and_is_removed() {
    let docker = docker().await;
    let host = TempDir::new().unwrap();
    let tests = host.path().join("tests");
    std::fs::create_dir_all(tests.join("unit")).unwrap();
    std::fs::write(tests.join("unit/test.sh"), "echo ran\n").unwrap();
    // A symlink goes in as a symlink: nothing of the host behind it.
    std::os::unix::fs::symlink("/etc/hostname", tests.join("link")).unwrap();
    let script = "mkdir -p /logs/verifier && cd /logs/verifier \
        && sh /tests/unit/test.sh > ran.txt && readlink /tests/link > link.txt \
        && ls /sys/class/net > net.txt && id -u > uid.txt \
        && grep CapEff /proc/self/status > caps.txt \
        && stat -c %u /tests/unit/test.sh > owner.txt";
    let container = docker.create_foreign(&foreign_spec(script)).await.unwrap();
    let id = container.id().to_owned();
    let labels = cli(&[
        "inspect",
        "--format",
        "{{index .Config.Labels \"assay.test\"}} {{index .Config.Labels \"assay.run\"}}",
        &id,
    ]);
    assert_eq!(
        labels, "foreign 1",
        "its own label and assay's owner labels"
    );
    container
        .upload_dirs(&[(tests.clone(), "/tests".to_owned())])
        .await
        .unwrap();
    let ran = container.run(Duration::from_secs(60)).await.unwrap();
    assert_eq!((ran.exit_code, ran.timed_out), (Some(0), false));
    let files = container
        .files("/logs/verifier", 1 << 20, 1 << 20)
        .await
        .unwrap();
    container.remove().await.unwrap();
    assert!(!container_exists(&id));
    let text = |name: &str| String::from_utf8_lossy(&files[name]).trim().to_owned();
    assert_eq!(text("ran.txt"), "ran");
    assert_eq!(text("link.txt"), "/etc/hostname");
    assert_eq!(text("net.txt"), "lo", "no network but the loopback");
    assert_eq!(text("uid.txt"), "0", "the image's own user");
    assert_eq!(
        text("owner.txt"),
        "0",
        "copied in as root's, as docker cp does"
    );
    // CHOWN, DAC_OVERRIDE, FOWNER, FSETID, SETGID, SETUID and nothing else.
    assert_eq!(text("caps.txt"), "CapEff:\t00000000000000db");
}

#[tokio::test]
async fn a_foreign_container_past_its_budget_is_killed_and_removed_and_a_dropped_one_too() {
    let docker = docker().await;
    let container = docker
        .create_foreign(&foreign_spec("sleep 600"))
        .await
        .unwrap();
    let id = container.id().to_owned();
    let start = Instant::now();
    let ran = container.run(Duration::from_secs(1)).await.unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert_eq!((ran.exit_code, ran.timed_out), (None, true));
    container.remove().await.unwrap();
    assert!(!container_exists(&id));

    // A caller that fails between create and remove drops the container:
    // its guard removes it.
    let dropped = docker
        .create_foreign(&foreign_spec("sleep 600"))
        .await
        .unwrap();
    let id = dropped.id().to_owned();
    assert!(container_exists(&id));
    drop(dropped);
    eventually(
        "the dropped container's removal",
        Duration::from_secs(30),
        || !container_exists(&id),
    )
    .await;
}

#[tokio::test]
async fn a_verifier_that_floods_its_logs_is_read_only_up_to_the_caps() {
    let docker = docker().await;
    // 3 MiB in one file, then ten files of 512 KiB.
    let script = "mkdir -p /logs/verifier && cd /logs/verifier \
        && head -c 3145728 /dev/zero > a-big.txt \
        && for i in 0 1 2 3 4 5 6 7 8 9; do head -c 524288 /dev/zero > b-$i.txt; done \
        && echo 1 > reward.txt";
    let container = docker.create_foreign(&foreign_spec(script)).await.unwrap();
    container.run(Duration::from_secs(60)).await.unwrap();
    let files = container
        .files("/logs/verifier", 1 << 20, 64 << 20)
        .await
        .unwrap();
    assert_eq!(files["a-big.txt"].len(), 1 << 20, "cut at the file cap");
    assert_eq!(files["reward.txt"], b"1\n");
    let files = container
        .files("/logs/verifier", 1 << 20, 2 << 20)
        .await
        .unwrap();
    container.remove().await.unwrap();
    let kept: usize = files.values().map(Vec::len).sum();
    assert_eq!(kept, 2 << 20, "nothing past the total cap");
    assert!(files.len() < 12, "{:?}", files.keys().collect::<Vec<_>>());
}
