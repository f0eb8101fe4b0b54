//! Grading an agent's workspace diff on any Harbor task (a reward-only
//! task of Terminal-Bench's shape included) with the task's own verifier:
//! in a fresh container of the task's environment — never the container
//! the agent ran in — the working directory (`WORKDIR`) is replaced by the
//! image's own with the agent's patch applied (or by the working directory
//! a Harbor job collected from the agent's container), and `tests/test.sh`
//! runs as Harbor runs it, with the network the task declares (as its
//! controls had at screening). The patch is applied on this machine
//! by `git apply` in a directory of its own (no path outside it, none
//! beyond a symbolic link), never by a program of the image.
//!
//! The verdict is a pure function of what happened ([`decide`]): reward 1
//! is `resolved`; any other reward, or a verifier that ran out of time,
//! `unresolved`; no reward `no_report`, the agent's, since the task's
//! controls wrote theirs at screening (a task is graded only once
//! certified); a patch that does not apply `patch_apply_failed`; a
//! container that could not be made `env_setup_failed`, the harness's.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use assay_docker::ForeignContainer;

use super::screen::{self, Container, Reading, TaskToml};
use crate::model::records::{Fault, Verdict};
use crate::run::error::chain;
use crate::run::executor::daemon::Daemon;

/// How a workspace's reading went.
#[derive(Debug)]
pub(crate) enum Graded {
    /// The verifier ran (or tried to) on the patched workspace.
    Read(Reading),
    /// The agent's patch does not apply to the working directory.
    PatchFailed(String),
    /// The environment could not be made ready: no working directory,
    /// docker failed before the verifier started.
    Setup(String),
}

/// What the agent left: a patch of the working directory, or the working
/// directory itself (a Harbor job that collected it as an artifact).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Answer<'a> {
    Patch(&'a [u8]),
    Tree(&'a Path),
}

/// The task's verifier on `answer` in the working directory of `image`, in
/// a fresh container.
pub(crate) async fn grade(
    daemon: &Daemon,
    folder: &Path,
    image: &str,
    toml: &TaskToml,
    answer: Answer<'_>,
    tmp: &Path,
) -> Graded {
    let Workdir {
        id, dir: workdir, ..
    } = match inspect(daemon, image).await {
        Ok(w) => w,
        Err(e) => return Graded::Setup(e),
    };
    let scratch = match tempfile::Builder::new().prefix("assay-harbor-").tempdir() {
        Ok(d) => d,
        Err(e) => return Graded::Setup(format!("a scratch directory: {e}")),
    };
    // What is copied into the container: the task's tests at /tests and
    // the workspace at /assay-workspace.
    let tree = scratch.path().join("assay-workspace");
    let mut refused = None;
    let script = format!(
        "W={w}; mkdir -p /logs/verifier && find \"$W\" -mindepth 1 -maxdepth 1 -exec rm -rf {{}} + && cp -a {WORKSPACE}/. \"$W\"/ && rm -rf {WORKSPACE} && cd \"$W\" || exit 0; chmod +x /tests/test.sh; /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1; exit 0",
        w = quote(&workdir)
    );
    let tests = (folder.join("tests"), super::TESTS.to_owned());
    let workspace = |dir: &Path| (dir.to_path_buf(), WORKSPACE.to_owned());
    let reading = screen::reading_in(
        Container {
            daemon,
            image,
            script: &script,
            budget: toml.verifier_timeout,
            network: toml.network,
        },
        async |container| {
            let patch = match answer {
                Answer::Tree(dir) => return Ok(vec![tests, workspace(dir)]),
                Answer::Patch(patch) => patch,
            };
            let base = base_tar(tmp, &id, container, &workdir).await?;
            unpack(&base, &tree)?;
            if let Err(e) = apply(&tree, patch, scratch.path()) {
                refused = Some(e.clone());
                return Err(e);
            }
            Ok(vec![tests, workspace(&tree)])
        },
    )
    .await;
    match refused {
        Some(e) => Graded::PatchFailed(e),
        None if reading.error.as_deref().is_some_and(is_setup) => {
            Graded::Setup(reading.error.unwrap_or_default())
        }
        None => Graded::Read(reading),
    }
}

/// Where the workspace is copied in, for the script to move into the
/// working directory.
const WORKSPACE: &str = "/assay-workspace";

/// Whether a reading's error is docker's before the verifier ran, not the
/// verifier's: a reading that got no reward for its own reasons (no
/// reward file, an unreadable one, a timeout) is the workspace's.
fn is_setup(error: &str) -> bool {
    [
        "docker create:",
        "copying ",
        "reading /",
        "cannot run docker",
        "starting the verifier:",
    ]
    .iter()
    .any(|p| error.starts_with(p))
}

/// The verdict of a graded workspace, whose fault it is, and why.
pub(crate) fn decide(graded: &Graded) -> (Verdict, Fault, String) {
    match graded {
        Graded::PatchFailed(e) => (
            Verdict::PatchApplyFailed,
            Fault::Agent,
            format!("the patch does not apply to the task's working directory: {e}"),
        ),
        Graded::Setup(e) => (Verdict::EnvSetupFailed, Fault::Harness, e.clone()),
        Graded::Read(r) => match r.reward {
            Some(1.0) => (Verdict::Resolved, Fault::None, "reward 1".to_owned()),
            Some(x) => (
                Verdict::Unresolved,
                Fault::Agent,
                screen::with_cause(format!("the task's verifier gave reward {x}"), r),
            ),
            None if r.timed_out => (
                Verdict::Unresolved,
                Fault::Agent,
                format!(
                    "the task's verifier {} on the workspace, where its controls finished at screening",
                    r.error.as_deref().unwrap_or("timed out")
                ),
            ),
            None => (
                Verdict::NoReport,
                Fault::Agent,
                format!(
                    "the task's verifier wrote no reward on the workspace ({}), where its no-op and oracle wrote theirs at screening",
                    r.error.as_deref().unwrap_or("no reward")
                ),
            ),
        },
    }
}

/// What a task's image says of its workspace.
#[derive(Clone, Debug)]
pub(crate) struct Workdir {
    /// The image's id (`sha256:…`).
    pub(crate) id: String,
    /// Its `WORKDIR`: where Harbor's agent starts and the workspace is.
    pub(crate) dir: String,
    /// Its `ENV` entries (`KEY=value`).
    pub(crate) env: Vec<String>,
    /// Its `USER` as written; empty when it sets none (root).
    pub(crate) user: String,
}

/// The working directory of `image` ([`copy_out`] into a scratch
/// directory) committed into the object store at `store_dir`: the commit
/// a task over the image starts from.
pub(crate) async fn commit_working_directory(
    daemon: &Daemon,
    image: &str,
    tmp: &Path,
    store_dir: &Path,
) -> Result<String, crate::run::error::NodeError> {
    use crate::run::error::{Context, Kinded};
    let scratch = tempfile::Builder::new()
        .prefix("assay-image-base-")
        .tempdir()
        .infra()
        .context("a scratch directory")?;
    let tree = scratch.path().join("base");
    copy_out(daemon, image, tmp, &tree)
        .await
        .infra()
        .with_context(|| format!("the working directory of the image {image}"))?;
    let store_dir = store_dir.to_owned();
    tokio::task::spawn_blocking(move || {
        let store = assay_git::TreeStore::open_or_init(&store_dir)?;
        let tree = store.write_tree_of(&tree)?;
        store.commit_of_tree(&tree)
    })
    .await
    .internal()?
    .cache()
    .context("committing the image's working directory")
}

/// The working directory of `image` as the image holds it, unpacked into
/// `to` (no entry outside it, none through a symbolic link): read from a
/// container created from it and never started, removed after; the tar is
/// kept in the cache's `tmp/` for the build's other readers, as [`grade`]
/// keeps it.
pub(crate) async fn copy_out(
    daemon: &Daemon,
    image: &str,
    tmp: &Path,
    to: &Path,
) -> Result<Workdir, String> {
    let workdir = inspect(daemon, image).await?;
    let docker = daemon
        .client()
        .await
        .map_err(|e| format!("cannot run docker: {e}"))?;
    let spec = assay_docker::ForeignSpec {
        image: image.to_owned(),
        script: "exit 0".to_owned(),
        limits: assay_docker::Limits::default(),
        labels: std::collections::HashMap::from([(
            screen::IMAGE_LABEL.to_owned(),
            "workdir".to_owned(),
        )]),
        network: false,
    };
    let container = docker
        .create_foreign(&spec)
        .await
        .map_err(|e| format!("docker create: {}", chain(&e)))?;
    let base = base_tar(tmp, &workdir.id, &container, &workdir.dir).await;
    let _ = container.remove().await;
    unpack(&base?, to)?;
    Ok(workdir)
}

/// `image`'s id, `WORKDIR` and environment; an image whose working
/// directory is unset or `/` has no workspace.
pub(crate) async fn inspect(daemon: &Daemon, image: &str) -> Result<Workdir, String> {
    let docker = daemon
        .client()
        .await
        .map_err(|e| format!("cannot run docker: {e}"))?;
    let inspected = docker
        .inspect_foreign(image)
        .await
        .map_err(|e| format!("the image `{image}` cannot be inspected: {}", chain(&e)))?;
    let dir = inspected.working_dir;
    if dir.is_empty() || dir == "/" || !dir.starts_with('/') {
        return Err(format!(
            "the task's image has no working directory (WORKDIR is `{dir}`): no workspace to apply a patch to"
        ));
    }
    Ok(Workdir {
        id: inspected.id,
        dir,
        env: inspected.env,
        user: inspected.user,
    })
}

/// Where the tar of `workdir` as the image `id` holds it is kept in the
/// cache's `tmp/` (which the next build empties) for the build's other
/// sessions on the same image: an image id is the digest of its content,
/// and only a content digest names the copy (a tag can be moved).
fn kept_copy(tmp: &Path, id: &str, workdir: &str) -> Option<PathBuf> {
    id.strip_prefix("sha256:")
        .filter(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|hex| {
            tmp.join("harbor-workdirs").join(format!(
                "{hex}-{}.tar",
                &blake3::hash(workdir.as_bytes()).to_hex()[..16]
            ))
        })
}

/// The tar of `workdir` as the image `id` holds it: its kept copy, else
/// read from `container` (created, not started) and kept.
async fn base_tar(
    tmp: &Path,
    id: &str,
    container: &ForeignContainer<'_>,
    workdir: &str,
) -> Result<Vec<u8>, String> {
    let kept = kept_copy(tmp, id, workdir);
    if let Some(bytes) = kept.as_ref().and_then(|k| std::fs::read(k).ok()) {
        return Ok(bytes);
    }
    let base = container
        .download(workdir)
        .await
        .map_err(|e| format!("reading {workdir}: {}", chain(&e)))?;
    if let Some(kept) = kept {
        // Complete or absent: written aside, then renamed into place.
        let dir = kept.parent().unwrap_or(tmp);
        let _ = std::fs::create_dir_all(dir).and_then(|()| {
            let mut f = tempfile::NamedTempFile::new_in(dir)?;
            f.write_all(&base)?;
            f.persist(&kept).map(drop).map_err(|e| e.error)
        });
    }
    Ok(base)
}

/// A directory's tar as the daemon sends it (one top directory) unpacked into
/// `to`: no entry outside it, none through a symbolic link.
fn unpack(tar_bytes: &[u8], to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let mut archive = tar::Archive::new(tar_bytes);
    let entries = archive
        .entries()
        .map_err(|e| format!("the working directory's tar: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("the working directory's tar: {e}"))?;
        let path = entry
            .path()
            .map_err(|e| format!("the working directory's tar: {e}"))?
            .into_owned();
        let mut rel = PathBuf::new();
        for c in path.components().skip(1) {
            match c {
                Component::Normal(part) => rel.push(part),
                _ => {
                    return Err(format!(
                        "a path leaving the working directory: {}",
                        path.display()
                    ));
                }
            }
        }
        if rel.as_os_str().is_empty() {
            continue;
        }
        let mut at = to.to_path_buf();
        for part in rel.parent().into_iter().flat_map(Path::components) {
            at.push(part);
            if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(format!("a path beyond a symbolic link: {}", path.display()));
            }
        }
        entry
            .unpack(to.join(&rel))
            .map_err(|e| format!("unpacking {}: {e}", rel.display()))?;
    }
    Ok(())
}

/// `git apply` of `patch` in `tree`, which no repository encloses
/// (discovery stops at `ceiling`); an empty patch changes nothing.
fn apply(tree: &Path, patch: &[u8], ceiling: &Path) -> Result<(), String> {
    if patch.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let mut child = Command::new("git")
        .args(["apply", "--whitespace=nowarn", "-"])
        .current_dir(tree)
        .env("GIT_CEILING_DIRECTORIES", ceiling)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(patch);
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(crate::model::shown::clean(
            String::from_utf8_lossy(&out.stderr).trim(),
        ))
    }
}

/// `text` as one word of `sh`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_working_directory_is_kept_only_under_its_image_digest() {
        let tmp = Path::new("/cache/tmp");
        let id = format!("sha256:{}", "ab".repeat(32));
        let app = kept_copy(tmp, &id, "/app").unwrap();
        assert_eq!(
            app,
            tmp.join("harbor-workdirs").join(format!(
                "{}-{}.tar",
                "ab".repeat(32),
                &blake3::hash(b"/app").to_hex()[..16]
            ))
        );
        // Another working directory of the image is another copy; a tag,
        // or an id that is not a digest, names none.
        assert_ne!(kept_copy(tmp, &id, "/srv").unwrap(), app);
        assert_eq!(kept_copy(tmp, "my-tag", "/app"), None);
        assert_eq!(kept_copy(tmp, "sha256:../../etc", "/app"), None);
    }

    fn read(reward: Option<f64>, timed_out: bool) -> Graded {
        Graded::Read(Reading {
            reward,
            timed_out,
            error: reward
                .is_none()
                .then(|| "the verifier wrote no reward.txt or reward.json".into()),
            ..Reading::default()
        })
    }

    #[test]
    fn a_reward_only_task_grades_by_its_reward_and_blames_on_its_controls() {
        assert_eq!(decide(&read(Some(1.0), false)).0, Verdict::Resolved);
        let (v, f, _) = decide(&read(Some(0.0), false));
        assert_eq!((v, f), (Verdict::Unresolved, Fault::Agent));
        let (v, f, why) = decide(&read(Some(0.5), false));
        assert_eq!((v, f), (Verdict::Unresolved, Fault::Agent));
        assert!(why.contains("reward 0.5"), "{why}");
        let (v, f, why) = decide(&read(None, false));
        assert_eq!((v, f), (Verdict::NoReport, Fault::Agent));
        assert!(why.contains("no-op and oracle wrote theirs"), "{why}");
        assert_eq!(decide(&read(None, true)).0, Verdict::Unresolved);
        let (v, f, _) = decide(&Graded::PatchFailed("corrupt patch".into()));
        assert_eq!((v, f), (Verdict::PatchApplyFailed, Fault::Agent));
        let (v, f, _) = decide(&Graded::Setup("docker create: no space".into()));
        assert_eq!((v, f), (Verdict::EnvSetupFailed, Fault::Harness));
    }

    #[test]
    fn a_patch_is_applied_beneath_its_tree_and_nowhere_else() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("w");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join("a.txt"), "one\n").unwrap();
        let good = b"--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n";
        apply(&tree, good, dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(tree.join("a.txt")).unwrap(),
            "two\n"
        );
        let outside = b"--- /dev/null\n+++ b/../escaped.txt\n@@ -0,0 +1 @@\n+x\n";
        assert!(apply(&tree, outside, dir.path()).is_err());
        assert!(!dir.path().join("escaped.txt").exists());
        std::os::unix::fs::symlink(dir.path(), tree.join("link")).unwrap();
        let beyond = b"--- /dev/null\n+++ b/link/beyond.txt\n@@ -0,0 +1 @@\n+x\n";
        assert!(apply(&tree, beyond, dir.path()).is_err());
        assert!(!dir.path().join("beyond.txt").exists());
        assert!(apply(&tree, b"\n", dir.path()).is_ok(), "an empty patch");
    }

    #[test]
    fn a_working_directory_is_quoted_as_one_word() {
        assert_eq!(quote("/app"), "'/app'");
        assert_eq!(quote("/a'b"), r"'/a'\''b'");
    }
}
