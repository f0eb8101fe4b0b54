//! `assay export --harbor DIR`: every certified task of the last build's
//! release (both tracks) as a Harbor task folder (docs/harbor.md):
//!
//! ```text
//! <instance id>/
//!   task.toml            the task's digest in [metadata], timeouts
//!   instruction.md       the prompt assay's own agents get
//!   environment/         Dockerfile: the base image, key files, setup, the base tree
//!   tests/test.sh        runs assay's verifier (tests/assay, tests/assay-task.json, tests/base.tar)
//!   solution/solve.sh    applies the gold patch
//! ```
//!
//! A task is exported only as it was screened: the pipeline's docker
//! environment for its source must be the one it was certified in (its env
//! node), or the export says to build with `--executor docker` first.
//!
//! What goes wrong is an [`ExportError`] of one kind — nothing built yet,
//! a bad input, the pipeline's configuration, the cache, the machine (the
//! disk the folders are written to) — and the CLI gives each its own exit
//! code.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use assay_engine::{Digest, Store};
use assay_git::{Source, TreeStore};
use serde::Deserialize;

use crate::model::config::ExecutorSetting;
use crate::model::names;
use crate::model::records::TaskRecord;
use crate::nodes::release::ReleaseRecord;
use crate::pipeline::Pipeline;
use crate::plan::envs::{EnvSettings, Envs, env_name, env_params};
use crate::run::harbor::{BASE_TAR, BINARY, SPEC_FILE, SPEC_VERSION, Spec, WORKSPACE};
use crate::run::redact::RedactConfig;
use crate::run::swebench;

/// Why an export stopped, by whose doing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExportError {
    /// Nothing to export from: no build on this cache, or no release in it,
    /// or a node the release names is gone from it (collected).
    #[error("{0}")]
    NotBuilt(String),
    /// What the command was given cannot be exported: the directory is not
    /// empty, a task's environment is not a docker one, a source
    /// repository does not open.
    #[error("{0}")]
    Input(String),
    /// The pipeline's settings do not resolve.
    #[error("{0}")]
    Config(String),
    /// The cache cannot be read: its object store, a blob, a record.
    #[error("{0}")]
    Cache(String),
    /// The machine failed the export: writing the folders (the disk full
    /// or failing).
    #[error("{0}")]
    Infrastructure(String),
}

impl ExportError {
    fn cache(e: impl std::fmt::Display) -> Self {
        ExportError::Cache(e.to_string())
    }

    /// A file or directory of the export that could not be written: the
    /// destination's fault when it is not a directory assay may write (a
    /// file on the way, no permission, a read-only file system), else the
    /// machine's.
    fn write(path: &Path, e: std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        let why = format!("{}: {e}", path.display());
        match e.kind() {
            K::NotADirectory
            | K::PermissionDenied
            | K::ReadOnlyFilesystem
            | K::AlreadyExists
            | K::IsADirectory => ExportError::Input(why),
            _ => ExportError::Infrastructure(why),
        }
    }
}

/// What the export wrote.
#[derive(Debug, Default)]
pub(crate) struct Exported {
    pub(crate) release_digest: String,
    /// The folders written, by instance id.
    pub(crate) tasks: Vec<String>,
    /// Tasks of the release not exported, with why (uncertified ones are
    /// not counted here: a release never offers them).
    pub(crate) skipped: Vec<(String, String)>,
}

/// One line of the release's tasks.jsonl, as far as the export reads it.
#[derive(Deserialize)]
struct Line {
    digest: String,
    #[serde(default)]
    certified: bool,
}

pub(crate) fn export(
    pipeline: &Pipeline,
    store: &Store,
    dir: &Path,
    binary: &Path,
) -> Result<Exported, ExportError> {
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(ExportError::Input(format!(
            "{} is not empty: the Harbor export writes a fresh directory",
            dir.display()
        )));
    }
    let (release, release_digest) = last_release(store)?;
    let tasks_blob = release
        .files
        .get("tasks.jsonl")
        .ok_or_else(|| ExportError::NotBuilt("the last release has no tasks.jsonl".into()))?;
    let tasks_jsonl = blob(store, tasks_blob)?;
    let mut warnings = Vec::new();
    // A pipeline of Harbor datasets alone has no environment of its own:
    // none of its tasks is exported (each is named below).
    let envs = if pipeline.settings.sources.is_empty() {
        None
    } else {
        Some(
            Envs::resolve(pipeline, &Default::default(), &mut warnings)
                .map_err(|e| ExportError::Config(format!("{e:?}")))?,
        )
    };
    let redact = RedactConfig {
        patterns: pipeline.settings.redact_patterns.clone(),
        env: pipeline.settings.redact_env.clone(),
    };
    let tree_store =
        TreeStore::open_or_init(&store.dir().join("git")).map_err(ExportError::cache)?;
    let mut sources: BTreeMap<String, Source> = BTreeMap::new();
    let mut out = Exported {
        release_digest,
        ..Exported::default()
    };
    std::fs::create_dir_all(dir).map_err(|e| ExportError::write(dir, e))?;
    for line in tasks_jsonl.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let line: Line = serde_json::from_slice(line)
            .map_err(|e| ExportError::Cache(format!("the release's tasks.jsonl: {e}")))?;
        if !line.certified {
            continue;
        }
        let task = task_record(store, &line.digest)?;
        let id = swebench::instance_id(&task.instance_id, &task.track);
        if task.env == names::harbor_image_env(&task.instance_id) {
            match swe_spec(pipeline, &task, &line.digest, &id) {
                Ok((spec, image)) => {
                    let base = base_tar(&tree_store, &task.base_commit)?;
                    let folder = Folder {
                        spec: &spec,
                        base_image: &image,
                        setup: &[],
                        key_files: &[],
                        base: &base,
                        binary,
                        image_tree: true,
                    };
                    // `<dataset>/<folder>`: one folder, not two.
                    folder.write(&dir.join(id.replace('/', "__")))?;
                    out.tasks.push(id);
                }
                Err(why) => out.skipped.push((id, why)),
            }
            continue;
        }
        let Some(src) = pipeline
            .settings
            .sources
            .iter()
            .filter(|s| {
                task.instance_id
                    .starts_with(&format!("{}-", s.name.get_ref()))
            })
            .max_by_key(|s| s.name.get_ref().len())
        else {
            out.skipped
                .push((id, "no [[source]] of the pipeline names it".into()));
            continue;
        };
        let Some(envs) = &envs else {
            return Err(ExportError::Config(format!(
                "{id}: the pipeline names its source but resolves no environment"
            )));
        };
        let env = envs
            .for_source(pipeline, src)
            .map_err(|e| ExportError::Config(format!("{e:?}")))?;
        let ExecutorSetting::Docker(docker) = &env.confine.executor else {
            return Err(ExportError::Input(format!(
                "{id}: its environment is not a docker one; export with the executor it was built with (`assay build --executor docker`, then `assay export --harbor` reads the same settings)"
            )));
        };
        let name = src.name.get_ref().clone();
        if !sources.contains_key(&name) {
            let path = pipeline.resolve(src.path.get_ref());
            let source = Source::open(&path)
                .map_err(|e| ExportError::Input(format!("{}: {e}", path.display())))?;
            tree_store
                .add_alternate(&source.objects_dir())
                .map_err(ExportError::cache)?;
            sources.insert(name.clone(), source);
        }
        let source = &sources[&name];
        let (params, key_files) = env_params(env, source, &task.base_commit, &redact)
            .map_err(|e| ExportError::Config(format!("{e:?}")))?;
        if env_name(&params) != task.env {
            out.skipped.push((
                id,
                format!(
                    "certified in {}, and the pipeline's docker environment for it is {} now: build with `--executor docker` first",
                    task.env,
                    env_name(&params)
                ),
            ));
            continue;
        }
        let base = base_tar(&tree_store, &task.base_commit)?;
        let spec = spec_of(pipeline, env, &line.digest, &id, task);
        let folder = Folder {
            spec: &spec,
            base_image: &docker.base_image,
            setup: &params.setup,
            key_files: &key_files,
            base: &base,
            binary,
            image_tree: false,
        };
        folder.write(&dir.join(&id))?;
        out.tasks.push(id);
    }
    Ok(out)
}

/// The spec of a task exported from a mined source: its test command,
/// report and limits from its environment, the grading settings from the
/// pipeline.
fn spec_of(
    pipeline: &Pipeline,
    env: &EnvSettings<'_>,
    digest: &str,
    id: &str,
    task: TaskRecord,
) -> Spec {
    Spec {
        version: SPEC_VERSION,
        digest: digest.to_owned(),
        task_id: id.to_owned(),
        test_command: env.cfg.test_command.clone(),
        report: env
            .cfg
            .report
            .as_ref()
            .map(|r| r.get_ref().clone())
            .unwrap_or_default(),
        report_file: env.cfg.report_file.clone(),
        timeout_s: env.timeout,
        log_cap: env.log_cap,
        policy: pipeline.settings.grade.policy,
        test_globs: pipeline.settings.triage.test_globs.clone(),
        max_patch_bytes: pipeline.settings.grade.caps.bytes,
        max_patch_files: pipeline.settings.grade.caps.files,
        canary: env.cfg.canary.as_ref().map(|c| c.get_ref().clone()),
        task,
    }
}

/// The spec of a Deep-SWE-shaped folder's task (docs/harbor.md, "Deep-SWE
/// tasks as assay tasks") and the image its screening ran in (the
/// `swe_env` image: the dataset's image, its working directory at the
/// workspace), or why it is not exported: the folder is gone or no longer
/// reads, or the image is gone from the daemon.
fn swe_spec(
    pipeline: &Pipeline,
    task: &TaskRecord,
    digest: &str,
    id: &str,
) -> Result<(Spec, String), String> {
    let (dataset, folder) = task
        .instance_id
        .split_once('/')
        .ok_or("not a `<dataset>/<folder>` id")?;
    let dir = pipeline
        .settings
        .harbor_datasets
        .iter()
        .find(|(name, _)| name == dataset)
        .map(|(_, dir)| dir.join(folder))
        .ok_or_else(|| format!("no [[harbor_dataset]] of the pipeline is named {dataset}"))?;
    let shape = match crate::run::harbor::deepswe::Folder::detect(&dir) {
        Some(Ok(shape)) => shape,
        Some(Err(e)) => return Err(format!("{}: {e}", dir.display())),
        None => {
            return Err(format!(
                "{} is no Deep-SWE-shaped folder now",
                dir.display()
            ));
        }
    };
    let test_command = shape
        .test_command()
        .ok_or("its tests/test.sh marks no suites' part")?;
    let hidden = crate::model::rules::policy::TestPatch::read(task.test_patch.as_bytes()).hidden();
    let command = crate::model::rules::touched::command_over(None, &test_command, &hidden);
    let script =
        crate::model::rules::task::eval_script(&task.base_commit, &task.test_patch, &command);
    if script != task.eval_script {
        return Err(format!(
            "{} changed since the last build: build first",
            dir.display()
        ));
    }
    let image = task
        .image
        .clone()
        .ok_or("its environment records no image")?;
    let present = std::process::Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", &image])
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        return Err(format!(
            "its environment image {image} is not on this machine's daemon: build again"
        ));
    }
    let toml = crate::run::harbor::screen::TaskToml::read(&dir).map_err(|e| e.to_string())?;
    let settings = &pipeline.settings;
    let spec = Spec {
        version: SPEC_VERSION,
        digest: digest.to_owned(),
        task_id: id.to_owned(),
        test_command,
        report: shape.report.as_str().to_owned(),
        report_file: Some(crate::run::harbor::deepswe::report_file(shape.report).to_owned()),
        timeout_s: toml.verifier_timeout.as_secs().max(1),
        log_cap: 64 << 20,
        policy: settings.grade.policy,
        test_globs: settings.triage.test_globs.clone(),
        max_patch_bytes: settings.grade.caps.bytes,
        max_patch_files: settings.grade.caps.files,
        canary: None,
        task: task.clone(),
    };
    Ok((spec, image))
}

/// The last build's release record and its digest (`manifest.json`'s).
fn last_release(store: &Store) -> Result<(ReleaseRecord, String), ExportError> {
    let (_, key) = crate::ops::audit::bundle::last_release(store).map_err(ExportError::NotBuilt)?;
    let (_, _, row) = store
        .key_record(&key)
        .map_err(ExportError::cache)?
        .ok_or_else(|| ExportError::NotBuilt("the last release is not in the cache".into()))?;
    let record: ReleaseRecord =
        serde_json::from_slice(&store.output_bytes(&row).map_err(ExportError::cache)?)
            .map_err(|x| ExportError::Cache(format!("the release record: {x}")))?;
    let digest = match record.files.get("manifest.json") {
        Some(d) => crate::ops::audit::release_digest(&blob(store, d)?)
            .map(|(claimed, _)| claimed)
            .unwrap_or_default(),
        None => String::new(),
    };
    Ok((record, digest))
}

fn blob(store: &Store, hex: &str) -> Result<Vec<u8>, ExportError> {
    let d: Digest = hex.parse().map_err(ExportError::Cache)?;
    store.blobs().get(&d).map_err(ExportError::cache)
}

/// The task node's record, by its key (tasks.jsonl's `digest`).
fn task_record(store: &Store, hex: &str) -> Result<TaskRecord, ExportError> {
    let key: Digest = hex.parse().map_err(ExportError::Cache)?;
    let (_, _, row) = store
        .key_record(&key)
        .map_err(ExportError::cache)?
        .ok_or_else(|| {
            ExportError::NotBuilt(format!("task node {hex} is not in the cache (collected?)"))
        })?;
    let bytes = store.output_bytes(&row).map_err(ExportError::cache)?;
    serde_json::from_slice(&bytes).map_err(|e| ExportError::Cache(format!("task node {hex}: {e}")))
}

/// The files of `commit`'s tree as a tar: sorted, mtime 0, git's modes, so
/// the same task always gives the same bytes.
fn base_tar(store: &TreeStore, commit: &str) -> Result<Vec<u8>, ExportError> {
    let tree = store.tree_of(commit).map_err(ExportError::cache)?;
    let mut b = tar::Builder::new(Vec::new());
    let blobs = store.blob_reader().map_err(ExportError::cache)?;
    for entry in store.entries(&tree).map_err(ExportError::cache)? {
        let data = blobs.read(&entry.id).map_err(ExportError::cache)?;
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        if entry.mode == 0o120000 {
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_mode(0o777);
            h.set_size(0);
            let target = String::from_utf8_lossy(&data).into_owned();
            b.append_link(&mut h, &entry.path, target)
                .map_err(|e| ExportError::Cache(format!("{}: {e}", entry.path)))?;
        } else {
            h.set_entry_type(tar::EntryType::Regular);
            h.set_mode(if entry.mode == 0o100755 { 0o755 } else { 0o644 });
            h.set_size(data.len() as u64);
            b.append_data(&mut h, &entry.path, data.as_slice())
                .map_err(|e| ExportError::Cache(format!("{}: {e}", entry.path)))?;
        }
    }
    b.into_inner().map_err(ExportError::cache)
}

/// Files as a tar (sorted, mtime 0): the key files for `/assay/env`.
fn files_tar(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, ExportError> {
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort();
    let mut b = tar::Builder::new(Vec::new());
    for (path, data) in sorted {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        b.append_data(&mut h, path, data.as_slice())
            .map_err(|e| ExportError::Input(format!("the key file {path}: {e}")))?;
    }
    b.into_inner().map_err(ExportError::cache)
}

/// One task folder's parts.
struct Folder<'a> {
    spec: &'a Spec,
    base_image: &'a str,
    setup: &'a [String],
    key_files: &'a [(String, Vec<u8>)],
    base: &'a [u8],
    binary: &'a Path,
    /// The image holds the workspace already, as the docker executor's
    /// run user's (a Deep-SWE-shaped task's environment): the base tree
    /// goes over it and becomes root's, as the verifier's git needs.
    image_tree: bool,
}

impl Folder<'_> {
    fn write(&self, dir: &Path) -> Result<(), ExportError> {
        let spec = self.spec;
        let task = &spec.task;
        let put = |rel: &str, bytes: &[u8], exec: bool| -> Result<(), ExportError> {
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| ExportError::write(parent, e))?;
            }
            std::fs::write(&path, bytes).map_err(|e| ExportError::write(&path, e))?;
            if exec {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                    .map_err(|e| ExportError::write(&path, e))?;
            }
            Ok(())
        };
        put("task.toml", self.task_toml().as_bytes(), false)?;
        put(
            "instruction.md",
            crate::run::attempt::prompt(&task.problem_statement).as_bytes(),
            false,
        )?;
        put(
            "environment/Dockerfile",
            self.dockerfile().as_bytes(),
            false,
        )?;
        put(
            "environment/setup.sh",
            setup_script(self.setup).as_bytes(),
            false,
        )?;
        put("environment/env.tar", &files_tar(self.key_files)?, false)?;
        put("environment/base.tar", self.base, false)?;
        put(
            "environment/sitecustomize.py",
            crate::run::guard::source(WORKSPACE).as_bytes(),
            false,
        )?;
        put("tests/test.sh", TEST_SH.as_bytes(), true)?;
        put(
            &format!("tests/{SPEC_FILE}"),
            &serde_json::to_vec_pretty(spec).map_err(ExportError::cache)?,
            false,
        )?;
        link_or_copy(
            &dir.join("environment/base.tar"),
            &dir.join("tests").join(BASE_TAR),
        )?;
        // One binary for every folder, hard-linked where the file system allows.
        link_or_copy(self.binary, &dir.join("tests").join(BINARY))?;
        put("solution/solve.sh", solve_sh(&task.patch).as_bytes(), true)?;
        Ok(())
    }

    fn task_toml(&self) -> String {
        let spec = self.spec;
        let task = &spec.task;
        let q = |s: &str| toml_string(s);
        let mut t = String::new();
        let _ = writeln!(
            t,
            "# Exported by assay {} from a certified task (docs/harbor.md).\nschema_version = \"1.4\"\n\
             # The workspace, copied out of the agent's container (docker cp) into\n\
             # the verifier's own, emptied first: nothing else of the agent's crosses.\n\
             artifacts = [{}]\n\n[task]\nname = {}\n",
            env!("CARGO_PKG_VERSION"),
            q(WORKSPACE),
            q(&harbor_name(&spec.task_id))
        );
        let _ = writeln!(t, "[metadata]");
        for (k, v) in [
            ("assay_digest", spec.digest.as_str()),
            ("assay_task", task.instance_id.as_str()),
            ("assay_track", task.track.as_str()),
            ("assay_instance_id", spec.task_id.as_str()),
            ("repo", task.repo.as_str()),
            ("base_commit", task.base_commit.as_str()),
        ] {
            let _ = writeln!(t, "{k} = {}", q(v));
        }
        let _ = writeln!(
            t,
            "\n[verifier]\n# the test command's timeout, and time to stage the graded tree\ntimeout_sec = {}.0\n\
             # A fresh container of the task's environment: the agent, root in its own,\n\
             # leaves no process, binary, runner or reward file where the verifier runs.\n\
             environment_mode = \"separate\"\n\n[agent]\ntimeout_sec = 1800.0\n\n[environment]\nbuild_timeout_sec = {}.0",
            spec.timeout_s + 120,
            spec.timeout_s.max(600)
        );
        t
    }

    fn dockerfile(&self) -> String {
        format!(
            "# The task's environment as assay's docker executor builds it: the base\n\
             # image, the key files in /assay/env, the setup there; then the task's\n\
             # base tree at {WORKSPACE}, a git repository of one commit tagged `base`\n\
             # when the image has git.\n\
             FROM {base}\n\
             {user}\
             ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\\n    LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 ASSAY_ENV=/assay/env\n\
             ADD env.tar /assay/env/\n\
             COPY sitecustomize.py /assay/guard/sitecustomize.py\n\
             COPY setup.sh /assay/setup.sh\n\
             WORKDIR /assay/env\n\
             RUN HOME=/root TMPDIR=/tmp sh /assay/setup.sh\n\
             ADD base.tar {WORKSPACE}/\n\
             WORKDIR {WORKSPACE}\n\
             {owner}\
             RUN if command -v git >/dev/null 2>&1; then \\\n      \
             git init -q . && git add -A && \\\n      \
             git -c user.name=assay -c user.email=assay@localhost commit -q --allow-empty -m base && \\\n      \
             git tag -f base; fi\n",
            base = self.base_image,
            user = if self.image_tree { "USER root\n" } else { "" },
            owner = if self.image_tree {
                format!("RUN chown -R 0:0 {WORKSPACE}\n")
            } else {
                String::new()
            },
        )
    }
}

/// `to` as a hard link of `from`, else a copy.
fn link_or_copy(from: &Path, to: &Path) -> Result<(), ExportError> {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).map_err(|e| ExportError::write(to, e))?;
    }
    Ok(())
}

/// `tests/test.sh`: assay's verifier, which writes `reward.json`.
const TEST_SH: &str = "#!/bin/sh
# assay's verifier (docs/harbor.md): grades the workspace as an assay build
# grades a session and writes reward.json, assay-verdict.json and
# agent.patch. No reward.json means the verifier itself failed.
mkdir -p /logs/verifier
chmod +x /tests/assay 2>/dev/null
exec /tests/assay harbor-verify
";

/// `environment/setup.sh`: the setup commands as one `set -e` script, as
/// the docker executor runs them.
fn setup_script(setup: &[String]) -> String {
    let mut s = String::from("#!/bin/sh\nset -e\n");
    for cmd in setup {
        s.push_str(cmd);
        s.push('\n');
    }
    s
}

/// `solution/solve.sh`: the gold patch, applied in the workspace.
fn solve_sh(patch: &str) -> String {
    let digest = blake3::hash(patch.as_bytes()).to_hex();
    let mut marker = format!("ASSAY_GOLD_{}", &digest[..16]);
    while patch.lines().any(|l| l == marker) {
        marker.push('_');
    }
    format!(
        "#!/bin/sh\n# The task's gold patch.\nset -e\ncd {WORKSPACE}\ngit apply --whitespace=nowarn - <<'{marker}'\n{patch}{nl}{marker}\n",
        nl = if patch.ends_with('\n') || patch.is_empty() {
            ""
        } else {
            "\n"
        }
    )
}

/// The task's Harbor name, `assay/<instance id>` (Harbor's pattern:
/// `[A-Za-z0-9][A-Za-z0-9._-]*` on each side of the slash).
pub(crate) fn harbor_name(instance_id: &str) -> String {
    let name: String = instance_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("assay/{}", name.trim_start_matches(['.', '_', '-']))
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
