//! A SWE-bench-family instance (docs/instances.md) taken in as an assay
//! task: three nodes stand where a mined task has its triage and its
//! environment, and everything after them — trees, screening runs in three
//! states, certification, canaries, the task, grades with arms and reruns —
//! is a mined task's.
//!
//! - `instance:<name>/<id>` finds the instance's image by the family's
//!   names ([`Family::image_names`], the first the daemon has), and reads
//!   the repository in its working directory (`/testbed`) from a container
//!   of it with no network: the commit it stands on, which must be the
//!   instance's base or SWE-bench's own setup commit over it, and the
//!   history it holds that the base does not reach (refs, reflogs, tags,
//!   packed objects: every commit in its object database that is not an
//!   ancestor of its `HEAD`). A family whose images keep the repository
//!   elsewhere and the patches beside it (Multi-SWE-bench's `/home`,
//!   [`ImageLayout`]) has it read there, and the task is made from an
//!   image of SWE-bench's layout committed from the one found: the
//!   patches removed, `WORKDIR` the repository. SWE-smith's images hold
//!   the repository clean and its rows' patch is the bug: the task's
//!   image is the one found with the bug applied, and its gold the way
//!   back (`instance_triage`). A row that does not read
//!   fails this node alone, naming the file, the line and the field.
//! - `instance_triage:<name>/<id>` makes the triage record: the base tree is
//!   the image's working directory as `git add -A` stages it (its `.git`
//!   and ignored files left out), the patches and statement are the row's,
//!   and the instance's own lists ride along (`dataset`) to be compared
//!   with assay's readings in the task.
//! - `instance_env:<name>/<id>` makes the docker executor's environment from
//!   the image as a Deep-SWE task's is made (`swe_task::FromImage`), with the
//!   working directory's `.git` removed first: no graded run and no agent
//!   sees any history, and the setup fails if a repository is left.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use assay_engine::JobCtx;
use serde::{Deserialize, Serialize};

use super::adapter::{Kind, Made, NoInputs, NodeKind};
use super::swe_task::{ImageEnv, ImageOf};
use crate::model::instances::{
    DatasetLists, Family, ImageLayout, Instance, TESTBED, TestCommand, files_of_ids,
};
use crate::model::records::{Decision, TriageRecord};
use crate::model::shell;
use crate::run::error::{Context, Kinded, NodeError};
use crate::run::executor::Executors;
use crate::run::harbor::workspace;

/// The history check's budget: a repository's object database is listed
/// and compared with its base's ancestors.
const HISTORY_BUDGET: Duration = Duration::from_secs(600);
/// Where the check's container writes what it found.
const FOUND: &str = "/tmp/assay-history";

#[derive(Clone, Debug, Serialize)]
pub(crate) struct InstanceParams {
    pub(crate) dataset: String,
    pub(crate) family: Family,
    /// The row as read, or why it does not read (the node then fails).
    pub(crate) row: Result<Instance, String>,
    /// The image names tried, in order.
    pub(crate) names: Vec<String>,
    /// The test command and where it came from (none: none runs it).
    pub(crate) test_command: Option<TestCommand>,
    /// Where the family's image keeps the repository and the answers it
    /// holds; left out of the key when it is SWE-bench's.
    #[serde(skip_serializing_if = "ImageLayout::is_plain")]
    pub(crate) layout: ImageLayout,
}

/// `instance:<name>/<id>`: the instance's image, and what its repository holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct InstanceRecord {
    pub(crate) dataset: String,
    pub(crate) instance_id: String,
    pub(crate) family: String,
    /// Every name tried, in order.
    pub(crate) names_tried: Vec<String>,
    /// The test command, its report format, and where it came from: the
    /// row's `install_config`, SWE-bench's spec, or the pipeline.
    pub(crate) test_command: Option<TestCommand>,
    /// The first name the daemon has, and the id of the image the task is
    /// made from: the one found, or, where the family's layout differs
    /// from SWE-bench's, one made of it (`found_image`).
    pub(crate) image_name: Option<String>,
    pub(crate) image: Option<String>,
    /// The image as found, when `image` was made of it: its answers
    /// removed, its `WORKDIR` the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) found_image: Option<String>,
    /// The files of the found image that held the instance's patches,
    /// gone from `image`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) removed: Vec<String>,
    /// The row's patch (SWE-smith's bug) is applied in `image`'s
    /// repository; `found_image` holds it clean.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) bug_applied: bool,
    /// The repository's place in the image (`WORKDIR`, else `/testbed`).
    pub(crate) workdir: String,
    /// The commit the repository stands on.
    pub(crate) head: Option<String>,
    /// Commits of the repository's object database that its `HEAD` does
    /// not reach: the future the image held (removed from the environment).
    pub(crate) commits_not_from_base: Option<u64>,
    /// Its refs but `HEAD`'s branch, and how many reflog entries it kept.
    pub(crate) refs: Vec<String>,
    pub(crate) reflog_entries: Option<u64>,
    /// Why the instance cannot become a task (no image, not at its base).
    pub(crate) declined: Option<(Decision, String)>,
}

pub(crate) struct InstanceNode {
    pub(crate) params: InstanceParams,
    pub(crate) executors: Arc<Executors>,
}

impl Kind for InstanceNode {
    const NAME: &'static str = NodeKind::Instance.as_str();
    const VERSION: u32 = 2;
    type Params = InstanceParams;
    type Inputs = NoInputs;
    type Record = InstanceRecord;

    fn params(&self) -> &InstanceParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        _: NoInputs,
        _ctx: JobCtx,
    ) -> Result<Made<InstanceRecord>, NodeError> {
        let p = &self.params;
        let row = p.row.as_ref().map_err(NodeError::input)?;
        let mut record = InstanceRecord {
            dataset: p.dataset.clone(),
            instance_id: row.instance_id.clone(),
            family: p.family.as_str().to_owned(),
            names_tried: p.names.clone(),
            test_command: p.test_command.clone(),
            ..InstanceRecord::default()
        };
        let docker = self.executors.daemon().client().await.infra()?;
        let mut found = None;
        for name in &p.names {
            if let Ok(image) = docker.inspect_foreign(name).await {
                found = Some((name.clone(), image));
                break;
            }
        }
        let Some((name, image)) = found else {
            record.declined = Some((
                Decision::NoImage,
                format!(
                    "the docker daemon has none of the images tried: {}",
                    p.names.join(", ")
                ),
            ));
            return Ok(Made::record(record));
        };
        record.workdir = match (
            &p.layout.repository,
            image.working_dir.trim_end_matches('/'),
        ) {
            (Some(dir), _) => dir.clone(),
            (None, "") => TESTBED.to_owned(),
            (None, dir) => dir.to_owned(),
        };
        record.image_name = Some(name);
        record.image = Some(image.id.clone());
        let history = read_history(docker, &image.id, &record.workdir, &p.layout.answers).await?;
        record.declined = match &p.layout.breaks {
            None => history.check(&row.base_commit, &record.workdir),
            Some(_) => history.check_clean(p.layout.clean_head.as_deref(), &record.workdir),
        };
        if record.declined.is_none() && !p.layout.is_plain() {
            let made = relaid(docker, &image.id, &record.workdir, &p.layout).await?;
            record.found_image = record.image.replace(made.to_string());
            record.removed = history.answers.clone();
            record.bug_applied = p.layout.breaks.is_some();
        }
        record.head = history.head;
        record.commits_not_from_base = history.commits_not_from_base;
        record.refs = history.refs;
        record.reflog_entries = history.reflog_entries;
        Ok(Made::record(record))
    }

    /// A stored record is not taken when it found no image (the names are
    /// tried again: an image may have been loaded since) or when the image
    /// it found is gone from the daemon.
    fn refuse_hit(&self, output: &[u8]) -> Option<String> {
        let r: InstanceRecord = serde_json::from_slice(output).ok()?;
        match (&r.declined, &r.image) {
            (Some((Decision::NoImage, _)), _) => {
                Some("it found no image: the names are tried again".to_owned())
            }
            (_, Some(id)) if self.executors.daemon().image_present(id) == Some(false) => {
                Some(format!("its image {id} is gone from the daemon"))
            }
            _ => None,
        }
    }
}

/// What the repository in an image's working directory holds.
#[derive(Debug, Default)]
struct History {
    /// Why it could not be read (no directory, no git, no repository).
    unread: Option<String>,
    head: Option<String>,
    parent: Option<String>,
    commits_not_from_base: Option<u64>,
    refs: Vec<String>,
    reflog_entries: Option<u64>,
    /// The answer files of the family's layout the image holds.
    answers: Vec<String>,
}

impl History {
    /// Why an instance over this repository is declined: it stands
    /// neither on `base` nor on SWE-bench's setup commit over it
    /// (`git commit --allow-empty -am SWE-bench`, whose parent is the base).
    fn check(&self, base: &str, workdir: &str) -> Option<(Decision, String)> {
        if let Some(why) = &self.unread {
            return Some((
                Decision::ImageNotAtBase,
                format!("the repository at {workdir} cannot be read: {why}"),
            ));
        }
        let head = self.head.as_deref().unwrap_or_default();
        if head == base || self.parent.as_deref() == Some(base) {
            return None;
        }
        Some((
            Decision::ImageNotAtBase,
            format!(
                "the repository at {workdir} stands on {head}, not on the instance's base_commit {base} (nor on one commit over it)"
            ),
        ))
    }

    /// Why the repository is not the clean one a SWE-smith row's bug is
    /// applied to: unread, or not on the commit starting `clean` (its
    /// `repo`'s `<commit8>`; any commit when the row names none).
    fn check_clean(&self, clean: Option<&str>, workdir: &str) -> Option<(Decision, String)> {
        if let Some(why) = &self.unread {
            return Some((
                Decision::ImageNotAtBase,
                format!("the repository at {workdir} cannot be read: {why}"),
            ));
        }
        let head = self.head.as_deref().unwrap_or_default();
        match clean {
            Some(clean) if !head.starts_with(clean) => Some((
                Decision::ImageNotAtBase,
                format!(
                    "the repository at {workdir} stands on {head}, not on the clean commit {clean} the row's repo names"
                ),
            )),
            _ => None,
        }
    }
}

/// Where [`relaid`] puts the patch it applies, removed before the commit.
const LAYOUT_IN: &str = "/tmp/assay-layout";

/// The image `image` made into SWE-bench's layout (`layout`): each of its
/// answers removed, its patch that breaks the repository (SWE-smith's
/// bug) applied there, and its `WORKDIR` the repository's directory
/// `workdir`, in a container of it with no network, committed.
async fn relaid(
    docker: &assay_docker::Docker,
    image: &str,
    workdir: &str,
    layout: &ImageLayout,
) -> Result<assay_docker::ImageId, NodeError> {
    let quoted: Vec<String> = layout.answers.iter().map(|a| shell::quote(a)).collect();
    let mut script = format!(
        "for f in {}; do rm -rf -- \"$f\"; if [ -e \"$f\" ] || [ -L \"$f\" ]; then exit 3; fi; done",
        quoted.join(" ")
    );
    let staged = match &layout.breaks {
        None => None,
        Some(patch) => {
            let dir = tempfile::tempdir().infra().context("a scratch directory")?;
            std::fs::write(dir.path().join("breaks.diff"), patch)
                .infra()
                .context("writing the row's patch")?;
            script.push_str(&format!(
                "; cd {w} && git -c safe.directory='*' apply --whitespace=nowarn {LAYOUT_IN}/breaks.diff || exit 4; rm -rf {LAYOUT_IN} || exit 4",
                w = shell::quote(workdir)
            ));
            Some(dir)
        }
    };
    let spec = assay_docker::ForeignSpec {
        image: image.to_owned(),
        script,
        limits: assay_docker::Limits::default(),
        labels: std::collections::HashMap::from([(
            crate::run::harbor::screen::IMAGE_LABEL.to_owned(),
            "layout".to_owned(),
        )]),
        network: false,
    };
    let container = docker.create_foreign(&spec).await.infra()?;
    let uploaded = match &staged {
        None => Ok(()),
        Some(dir) => {
            container
                .upload_dirs(&[(dir.path().to_owned(), LAYOUT_IN.to_owned())])
                .await
        }
    };
    let ran = match uploaded {
        Ok(()) => container.run(HISTORY_BUDGET).await,
        Err(e) => Err(e),
    };
    let made = match &ran {
        Ok(r) if !r.timed_out && r.exit_code == Some(0) => {
            Some(docker.commit_foreign(&container, image, workdir).await)
        }
        _ => None,
    };
    let _ = container.remove().await;
    let ran = ran
        .infra()
        .context("making the image in SWE-bench's layout")?;
    match (made, ran.timed_out, ran.exit_code) {
        (Some(made), _, _) => made
            .infra()
            .context("committing the image in SWE-bench's layout"),
        (None, true, _) => Err(NodeError::infra(
            "making the image in SWE-bench's layout ran out of time",
        )),
        (None, false, Some(3)) => Err(NodeError::input(format!(
            "the image keeps the instance's patches ({}), and its user cannot remove them",
            layout.answers.join(", ")
        ))),
        (None, false, Some(4)) => Err(NodeError::input(format!(
            "the row's patch (the bug) does not apply to the repository at {workdir}"
        ))),
        (None, false, code) => Err(NodeError::infra(format!(
            "making the image in SWE-bench's layout ended with {code:?}"
        ))),
    }
}

/// The script that reads the repository at `$W` into [`FOUND`], and which
/// of `answers` the image holds.
fn history_script(workdir: &str, answers: &[String]) -> String {
    let answers: Vec<String> = answers.iter().map(|a| shell::quote(a)).collect();
    format!(
        "W={w}; O={FOUND}; mkdir -p $O; \
         for f in {answers}; do if [ -e \"$f\" ] || [ -L \"$f\" ]; then echo \"$f\" >> $O/answers; fi; done; \
         if ! cd \"$W\" 2>/dev/null; then echo \"no directory $W\" > $O/unread; exit 0; fi; \
         if ! command -v git >/dev/null; then echo 'the image has no git' > $O/unread; exit 0; fi; \
         git config --global --add safe.directory \"$W\" 2>/dev/null; \
         if ! git rev-parse --verify -q HEAD > $O/head; then echo \"no git repository at $W\" > $O/unread; exit 0; fi; \
         git rev-parse --verify -q HEAD^ > $O/parent; \
         git for-each-ref --format='%(refname)' > $O/refs; \
         git reflog --all 2>/dev/null | wc -l > $O/reflog; \
         git rev-list HEAD | sort > $O/reached; \
         git cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' | awk '$1 == \"commit\" {{ print $2 }}' | sort > $O/all; \
         comm -23 $O/all $O/reached | wc -l > $O/unreached",
        w = shell::quote(workdir),
        answers = answers.join(" ")
    )
}

async fn read_history(
    docker: &assay_docker::Docker,
    image: &str,
    workdir: &str,
    answers: &[String],
) -> Result<History, NodeError> {
    let spec = assay_docker::ForeignSpec {
        image: image.to_owned(),
        script: history_script(workdir, answers),
        limits: assay_docker::Limits::default(),
        labels: std::collections::HashMap::from([(
            crate::run::harbor::screen::IMAGE_LABEL.to_owned(),
            "history".to_owned(),
        )]),
        network: false,
    };
    let container = docker.create_foreign(&spec).await.infra()?;
    let ran = container.run(HISTORY_BUDGET).await;
    let files = container.files(FOUND, 1 << 20, 4 << 20).await;
    let _ = container.remove().await;
    let ran = ran.infra().context("the history check's container")?;
    if ran.timed_out {
        return Err(NodeError::infra(format!(
            "the history check ran over {} s",
            HISTORY_BUDGET.as_secs()
        )));
    }
    let files = files.infra().context("reading the history check")?;
    let text = |name: &str| -> Option<String> {
        files
            .get(name)
            .map(|b| String::from_utf8_lossy(b).trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let count = |name: &str| text(name).and_then(|s| s.parse::<u64>().ok());
    Ok(History {
        unread: text("unread"),
        head: text("head"),
        parent: text("parent"),
        commits_not_from_base: count("unreached"),
        refs: text("refs")
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default(),
        reflog_entries: count("reflog"),
        answers: text("answers")
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default(),
    })
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct InstanceTriageParams {
    /// `<name>/<instance_id>`: the task's instance id.
    pub(crate) id: String,
    pub(crate) row: Instance,
    pub(crate) family: Family,
    /// Why no test command runs it (neither the family's spec nor the
    /// pipeline's), if none does.
    pub(crate) no_test_command: Option<String>,
}

super::adapter::inputs! {
    pub(crate) struct InstanceTriageInputs / InstanceTriageNames { instance: InstanceRecord }
}

pub(crate) struct InstanceTriage {
    pub(crate) params: InstanceTriageParams,
    /// assay's object store (`cache/git`), where the base is committed.
    pub(crate) store_dir: PathBuf,
    pub(crate) executors: Arc<Executors>,
}

impl Kind for InstanceTriage {
    const NAME: &'static str = NodeKind::InstanceTriage.as_str();
    const VERSION: u32 = 1;
    type Params = InstanceTriageParams;
    type Inputs = InstanceTriageInputs;
    type Record = TriageRecord;

    fn params(&self) -> &InstanceTriageParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: InstanceTriageInputs,
        ctx: JobCtx,
    ) -> Result<Made<TriageRecord>, NodeError> {
        let p = &self.params;
        let row = &p.row;
        let paths = |patch: &str| -> Result<Vec<String>, NodeError> {
            let mut paths: Vec<String> = assay_git::patch_paths(patch.as_bytes())
                .input()?
                .into_iter()
                .map(|p| p.path)
                .collect();
            paths.sort();
            paths.dedup();
            Ok(paths)
        };
        let mut record = TriageRecord {
            id: p.id.clone(),
            repo: row.repo.clone(),
            base: String::new(),
            head: String::new(),
            title: row
                .problem_statement
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
            body: row.problem_statement.clone(),
            decision: Decision::Eligible,
            detail: String::new(),
            // A row without a test patch (SWE-smith's) names its tests'
            // files in its lists: the files a graded tree takes from the
            // task, whatever the patch did to them.
            test_files: match row.test_patch.is_empty() {
                false => paths(&row.test_patch).context("test_patch")?,
                true => files_of_ids(row.fail_to_pass.iter().chain(&row.pass_to_pass)),
            },
            gold_files: paths(&row.patch).context("patch")?,
            test_patch: String::new(),
            gold_patch: String::new(),
            dataset: Some(DatasetLists {
                family: p.family.as_str().to_owned(),
                base_commit: row.base_commit.clone(),
                fail_to_pass: row.fail_to_pass.clone(),
                pass_to_pass: row.pass_to_pass.clone(),
                disagreements: Vec::new(),
            }),
        };
        let instance = &i.instance.record;
        let declined = instance.declined.clone().or_else(|| {
            p.no_test_command
                .clone()
                .map(|why| (Decision::NoTestRunner, why))
        });
        if let Some((decision, detail)) = declined {
            (record.decision, record.detail) = (decision, detail);
            return Ok(Made::record(record));
        }
        let image = instance.image.clone().unwrap_or_default();
        let base = workspace::commit_working_directory(
            self.executors.daemon(),
            &image,
            &ctx.cache_dir.join("tmp"),
            &self.store_dir,
        )
        .await?;
        (record.base, record.head) = (base.clone(), base.clone());
        // SWE-smith's gold is the way back from the bug: the image's
        // repository as found, clean, against the base made of it.
        let gold = match (instance.bug_applied, &instance.found_image) {
            (true, Some(clean_image)) => {
                let clean = workspace::commit_working_directory(
                    self.executors.daemon(),
                    clean_image,
                    &ctx.cache_dir.join("tmp"),
                    &self.store_dir,
                )
                .await?;
                let store_dir = self.store_dir.clone();
                let diff = tokio::task::spawn_blocking(move || {
                    assay_git::TreeStore::open_or_init(&store_dir)?.diff(&base, &clean)
                })
                .await
                .internal()?
                .cache()
                .context("the way back from the bug")?;
                String::from_utf8(diff)
                    .input()
                    .context("the way back from the bug is not text")?
            }
            _ => row.patch.clone(),
        };
        record.gold_files = paths(&gold).context("the gold patch")?;
        let mut attachments = Vec::new();
        for (patch, slot) in [
            (&row.test_patch, &mut record.test_patch),
            (&gold, &mut record.gold_patch),
        ] {
            let digest = ctx.blobs.put(patch.as_bytes()).cache()?;
            *slot = digest.to_hex();
            attachments.push(digest);
        }
        Ok(Made {
            record,
            attachments,
        })
    }
}

super::adapter::inputs! {
    pub(crate) struct InstanceEnvInputs / InstanceEnvNames { instance: InstanceRecord }
}

/// `instance_env`: an instance's environment, from its image, its
/// repository's history removed.
pub(crate) struct InstanceImage;

/// The node kind `instance_env`.
pub(crate) type InstanceEnv = ImageEnv<InstanceImage>;

impl ImageOf for InstanceImage {
    const NAME: &'static str = NodeKind::InstanceEnv.as_str();
    const VERSION: u32 = 1;
    const SCRUB_HISTORY: bool = true;
    type Inputs = InstanceEnvInputs;

    fn image(i: &InstanceEnvInputs) -> Result<String, (String, String)> {
        let instance = &i.instance.record;
        match (&instance.declined, &instance.image) {
            (None, Some(image)) => Ok(image.clone()),
            (declined, _) => {
                let why = declined
                    .as_ref()
                    .map_or("no image", |(_, why)| why.as_str());
                Err((
                    format!(
                        "the instance {}/{} has no environment: {why}\n",
                        instance.dataset, instance.instance_id
                    ),
                    "none".to_owned(),
                ))
            }
        }
    }
}
