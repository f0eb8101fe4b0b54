//! What a build of `[[harbor_dataset]]`s leaves: `harbor-tasks.jsonl` read
//! back, and the screening containers it must not leave.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use super::Project;

/// `release/harbor-tasks.jsonl` of `p`: its text and its lines.
pub fn harbor_tasks(p: &Project) -> (String, Vec<Value>) {
    let text = std::fs::read_to_string(p.path().join("release/harbor-tasks.jsonl")).unwrap();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (text, lines)
}

/// The line of `folder`.
pub fn by_folder(lines: &[Value], folder: &str) -> Value {
    lines
        .iter()
        .find(|l| l["folder"] == folder)
        .unwrap_or_else(|| panic!("no line for {folder}"))
        .clone()
}

/// No screening container of the tasks `lines` released outlives the
/// build: none made from their images (other builds on the same daemon
/// screen tasks of their own meanwhile).
pub fn assert_no_screening_containers(lines: &[Value]) {
    for image in lines
        .iter()
        .filter_map(|l| l["environment"]["image"].as_str())
    {
        let left = Command::new("docker")
            .args(["ps", "-aq", "--filter", "label=assay.harbor=screen"])
            .args(["--filter", &format!("ancestor={image}")])
            .output()
            .unwrap();
        assert!(left.status.success());
        assert!(
            String::from_utf8_lossy(&left.stdout).trim().is_empty(),
            "screening containers of {image} left behind"
        );
    }
}

/// Removes, when dropped, the environment images the builds of `p` made
/// (labelled with its cache) and the layers beneath them: a test leaves no
/// image behind, and touches no other build's.
pub struct BuiltImages(String);

impl BuiltImages {
    pub fn of(p: &Project) -> BuiltImages {
        BuiltImages(format!("label=assay.cache={}", p.cache().display()))
    }

    /// The ids of the images still there.
    pub fn ids(&self) -> Vec<String> {
        let out = Command::new("docker")
            .args([
                "images",
                "-q",
                "--no-trunc",
                "--filter",
                "label=assay.harbor=environment",
            ])
            .args(["--filter", &self.0])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for BuiltImages {
    fn drop(&mut self) {
        let ids = self.ids();
        if !ids.is_empty() {
            let _ = Command::new("docker")
                .arg("rmi")
                .arg("-f")
                .args(&ids)
                .output();
        }
    }
}

/// `scripts/base-image.sh`: `assay-base:bookworm`, made once per test
/// process.
pub fn base_image() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let out = Command::new(Path::new(super::example::ROOT).join("scripts/base-image.sh"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/base-image.sh failed (these tests need the Docker daemon):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// The image the node preset runs in on the docker executor: the base image
/// with Debian's `nodejs` (Node 18), built offline once by
/// `scripts/base-image.sh` when the daemon lacks it.
pub const NODE_IMAGE: &str = "assay-node:bookworm";

/// Builds [`NODE_IMAGE`] when the daemon lacks it.
pub fn node_image() {
    let script = Path::new(super::example::ROOT).join("scripts/base-image.sh");
    let out = Command::new(script)
        .args([NODE_IMAGE, "nodejs"])
        .output()
        .expect("run scripts/base-image.sh");
    assert!(
        out.status.success(),
        "scripts/base-image.sh {NODE_IMAGE} nodejs failed (these tests need a running Docker daemon):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An image of `assay-base:bookworm` with this machine's Go toolchain at
/// `/usr/local/go` (no registry: the files are copied in and committed),
/// made once per machine.
pub fn go_image() -> &'static str {
    const TAG: &str = "assay-harbor-go:bookworm";
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        base_image();
        let have = Command::new("docker")
            .args(["image", "inspect", TAG])
            .output()
            .unwrap();
        if have.status.success() {
            return;
        }
        let goroot = Command::new("go").args(["env", "GOROOT"]).output();
        let goroot = match goroot {
            Ok(o) if o.status.success() => String::from_utf8(o.stdout).unwrap().trim().to_owned(),
            other => panic!(
                "this test needs `go` on PATH (apt-get install golang-go; .ci/run does): {other:?}"
            ),
        };
        let name = format!("assay-harbor-go-{}", std::process::id());
        let ok = |args: &[&str]| {
            let out = Command::new("docker").args(args).output().unwrap();
            assert!(out.status.success(), "docker {args:?}: {out:?}");
        };
        ok(&["create", "--name", &name, "assay-base:bookworm", "true"]);
        // `tar -h`: Debian's GOROOT links its sources from /usr/share.
        let (parent, dir) = goroot.rsplit_once('/').unwrap();
        let copied = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "tar -chf - -C '{parent}' '{dir}' --transform 's,^{dir},go,' | docker cp - {name}:/usr/local/"
            ))
            .output()
            .unwrap();
        assert!(copied.status.success(), "{copied:?}");
        ok(&[
            "commit",
            "--change",
            "ENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change",
            "ENV GOFLAGS=-mod=mod GOTOOLCHAIN=local",
            &name,
            TAG,
        ]);
        ok(&["rm", "-f", &name]);
    });
    TAG
}

/// `scripts/harbor.sh ARGS` in `dir` (the Harbor CLI, installed once by
/// `--setup`); must succeed.
pub fn harbor_cli(dir: &Path, args: &[&str]) -> String {
    static SETUP: OnceLock<()> = OnceLock::new();
    let script = Path::new(super::example::ROOT).join("scripts/harbor.sh");
    SETUP.get_or_init(|| {
        let out = Command::new(&script).arg("--setup").output().unwrap();
        assert!(
            out.status.success(),
            "scripts/harbor.sh --setup failed (harbor from PyPI):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
    let out = Command::new(&script)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "harbor {args:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
