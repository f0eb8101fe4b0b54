//! Environment images: a container from the base image gets the environment
//! skeleton and key files as a tar, runs the setup as one `set -e` script (as
//! root, with the network), and is committed to an image labelled with the
//! spec's digest.
//!
//! Why commit and not the build API with a generated Dockerfile: the
//! container path reports the setup exactly as the local executor does — one
//! script, one exit code, one interleaved log under our cap — and names the
//! failing command without parsing builder text; and it needs nothing of the
//! daemon's builders (the classic one is deprecated, BuildKit through bollard
//! needs its heavy `buildkit` feature and a gRPC session).
//!
//! Reuse: the image carries label `assay.spec` = blake3 of what determines its
//! content (base image *id*, key files, setup commands, setup environment,
//! run user, and the layout version below). A build whose digest is already
//! on an image returns that image (`reused`) without running anything. The
//! pipeline keys environments by its env key on top of this; the label makes
//! a rebuild after a lost cache, or by another pipeline, free.

use bollard::models::{ContainerConfig, HostConfig};
use bollard::query_parameters::{CommitContainerOptions, ListImagesOptions};
use bytes::Bytes;

use crate::container::{Blueprint, Container};
use crate::error::status;
use crate::spec::ENV_DIR;
use crate::{
    BuiltImage, Docker, DockerError, ImageId, ImageSpec, SetupFailure, archive, command, limits,
    owner,
};

/// Bumped when the setup script changes meaning; the spec digest also
/// holds [`crate::LAYOUT`], so an image of another layout is never reused.
const LAYOUT_VERSION: &str = "assay-docker image v2";
/// Image label: the spec digest.
pub(crate) const SPEC_LABEL: &str = "assay.spec";
/// Image label: `uid:gid` of the run user, who owns the uploaded tree.
pub(crate) const USER_LABEL: &str = "assay.user";
/// Image label: the [`ImageSpec::writable`] directories, joined by `:`.
pub(crate) const WRITABLE_LABEL: &str = "assay.writable";
/// Image label: the [`crate::LAYOUT`] the image was built with.
pub(crate) const LAYOUT_LABEL: &str = "assay.layout";
/// Written by the setup script's exit trap: `STEP EXIT_CODE`.
const FAILED_STEP: &str = "/assay/.setup-failed";

impl Docker {
    /// Builds the environment image `spec` describes, or returns the one
    /// already built from an identical spec. A setup that fails is
    /// [`DockerError::Setup`], with the failing command, its exit code and
    /// the log.
    pub async fn build_image(&self, spec: &ImageSpec) -> Result<BuiltImage, DockerError> {
        for dir in &spec.writable {
            crate::spec::writable_dir(dir)?;
        }
        let base = self.base_image(&spec.base).await?;
        let spec_digest = spec_digest(&base, spec);
        if let Some(id) = self.image_with_spec(&spec_digest).await? {
            return Ok(BuiltImage {
                id,
                spec_digest,
                reused: true,
                setup_log: Vec::new(),
                log_bytes: 0,
            });
        }
        let skeleton = archive::skeleton(&spec.key_files, &spec.guard, spec.user)?;
        let mut env = spec.env.clone();
        env.insert("ASSAY_ENV".to_owned(), ENV_DIR.to_owned());
        let argv = command::shell(&env, &assay_exec::setup::script(&spec.setup, FAILED_STEP))?;
        let blueprint = Blueprint {
            image: base.to_string(),
            user: Some("0:0".to_owned()),
            working_dir: Some(ENV_DIR),
            argv,
            stage: "setup",
            labels: std::collections::HashMap::new(),
            stdin: false,
            host_config: HostConfig {
                network_mode: Some("bridge".to_owned()),
                ..limits::host_config(&spec.limits)
            },
        };
        let container = Container::create(self, blueprint).await?;
        container
            .upload("/", futures_util::stream::iter([Ok(Bytes::from(skeleton))]))
            .await?;
        let ended = container
            .drive(Vec::new(), spec.log_cap, spec.timeout, None, None)
            .await?;
        if ended.timed_out || ended.exit_code != Some(0) {
            let step = failed_step(&container).await;
            container.remove().await?;
            return Err(DockerError::Setup(Box::new(SetupFailure {
                step,
                command: step.and_then(|step| spec.setup.get(step).cloned()),
                exit_code: ended.exit_code,
                timed_out: ended.timed_out,
                oom_killed: ended.oom_killed,
                log: ended.output.sink,
                log_bytes: ended.output.total,
            })));
        }
        let id = self.commit(&container, &spec_digest, spec).await?;
        container.remove().await?;
        Ok(BuiltImage {
            id,
            spec_digest,
            reused: false,
            setup_log: ended.output.sink,
            log_bytes: ended.output.total,
        })
    }

    /// The base image's id (`base` by tag or id); it must be in the daemon
    /// already: [`DockerError::BaseImageMissing`] otherwise, which says how
    /// to build it. Nothing is pulled.
    pub async fn base_image(&self, base: &str) -> Result<ImageId, DockerError> {
        match self.api.inspect_image(base).await {
            Ok(image) => ImageId::parse(image.id.as_deref().unwrap_or_default()),
            Err(error) if status(&error) == Some(404) => Err(DockerError::BaseImageMissing {
                image: base.to_owned(),
            }),
            Err(source) => Err(DockerError::Api {
                action: format!("inspect base image {base}"),
                source,
            }),
        }
    }

    async fn image_with_spec(&self, spec_digest: &str) -> Result<Option<ImageId>, DockerError> {
        let options = ListImagesOptions {
            filters: Some(
                [(
                    "label".to_owned(),
                    vec![format!("{SPEC_LABEL}={spec_digest}")],
                )]
                .into(),
            ),
            ..Default::default()
        };
        let images = self
            .api
            .list_images(Some(options))
            .await
            .map_err(DockerError::api("list environment images"))?;
        images
            .first()
            .map(|image| ImageId::parse(&image.id))
            .transpose()
    }

    async fn commit(
        &self,
        container: &Container<'_>,
        spec_digest: &str,
        spec: &ImageSpec,
    ) -> Result<ImageId, DockerError> {
        let mut labels: std::collections::HashMap<String, String> = owner::cleared().collect();
        labels.insert(SPEC_LABEL.to_owned(), spec_digest.to_owned());
        labels.insert(USER_LABEL.to_owned(), spec.user.to_string());
        labels.insert(LAYOUT_LABEL.to_owned(), crate::LAYOUT.to_string());
        if !spec.writable.is_empty() {
            labels.insert(WRITABLE_LABEL.to_owned(), spec.writable.join(":"));
        }
        let config = ContainerConfig {
            // An empty list, not none: the daemon would copy the setup's
            // `env -i` entrypoint into the image otherwise.
            entrypoint: Some(Vec::new()),
            cmd: Some(vec!["/bin/sh".to_owned()]),
            env: Some(vec![format!("ASSAY_ENV={ENV_DIR}")]),
            working_dir: Some(crate::TREE_DIR.to_owned()),
            user: Some(spec.user.to_string()),
            labels: Some(labels),
            ..Default::default()
        };
        let options = CommitContainerOptions {
            container: Some(container.id.clone()),
            comment: Some(format!("assay environment {spec_digest}")),
            ..Default::default()
        };
        let committed = self
            .long
            .commit_container(options, config)
            .await
            .map_err(DockerError::api("commit the environment image"))?;
        ImageId::parse(&committed.id)
    }
}

/// The step the exit trap recorded, if it could.
async fn failed_step(container: &Container<'_>) -> Option<usize> {
    let archive = container.download(FAILED_STEP).await.ok()?;
    let text = archive::single_file(&archive).ok()??;
    assay_exec::setup::failed_step(&String::from_utf8(text).ok()?)
}

fn spec_digest(base: &ImageId, spec: &ImageSpec) -> String {
    let mut hasher = blake3::Hasher::new();
    let mut put = |bytes: &[u8]| {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    put(LAYOUT_VERSION.as_bytes());
    put(&crate::LAYOUT.to_le_bytes());
    put(base.as_str().as_bytes());
    put(spec.user.to_string().as_bytes());
    put(&(spec.key_files.len() as u64).to_le_bytes());
    for (path, bytes) in &spec.key_files {
        put(path.as_bytes());
        put(bytes);
    }
    put(&(spec.guard.len() as u64).to_le_bytes());
    for (name, bytes) in &spec.guard {
        put(name.as_bytes());
        put(bytes);
    }
    put(&(spec.setup.len() as u64).to_le_bytes());
    for command in &spec.setup {
        put(command.as_bytes());
    }
    put(&(spec.env.len() as u64).to_le_bytes());
    for (key, value) in &spec.env {
        put(key.as_bytes());
        put(value.as_bytes());
    }
    // Only when there are some: a spec without any hashes as a spec
    // without the field, so its image keeps its digest.
    if !spec.writable.is_empty() {
        put(&(spec.writable.len() as u64).to_le_bytes());
        for dir in &spec.writable {
            put(dir.as_bytes());
        }
    }
    hasher.finalize().to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec() -> ImageSpec {
        ImageSpec {
            base: "assay-base:bookworm".into(),
            key_files: [("requirements.txt".into(), b"pytest\n".to_vec())].into(),
            guard: [("sitecustomize.py".into(), b"import sys\n".to_vec())].into(),
            setup: vec!["pip install -r requirements.txt".into()],
            env: [("PATH".into(), "/usr/bin:/bin".into())].into(),
            user: Default::default(),
            writable: Vec::new(),
            timeout: Duration::from_secs(60),
            log_cap: 1 << 20,
            limits: Default::default(),
        }
    }

    #[test]
    fn the_digest_follows_content_not_budgets() {
        let base = ImageId::parse(&format!("sha256:{}", "a".repeat(64))).unwrap();
        let digest = spec_digest(&base, &spec());
        let mut budget = spec();
        budget.timeout = Duration::from_secs(1);
        budget.log_cap = 1;
        budget.limits.memory = Some(1);
        assert_eq!(spec_digest(&base, &budget), digest);

        let mut file = spec();
        file.key_files
            .insert("requirements.txt".into(), b"pytest==8\n".to_vec());
        let mut user = spec();
        user.user.uid = 1001;
        let mut split = spec();
        split.setup = vec!["pip install".into(), "-r requirements.txt".into()];
        let mut guard = spec();
        guard
            .guard
            .insert("sitecustomize.py".into(), b"import os\n".to_vec());
        let mut writable = spec();
        writable.writable = vec!["/root".into()];
        let other_base = ImageId::parse(&format!("sha256:{}", "b".repeat(64))).unwrap();
        for other in [
            spec_digest(&base, &file),
            spec_digest(&base, &guard),
            spec_digest(&base, &user),
            spec_digest(&base, &split),
            spec_digest(&base, &writable),
            spec_digest(&other_base, &spec()),
        ] {
            assert_ne!(other, digest);
        }
    }

    #[test]
    fn the_script_marks_each_step() {
        assert_eq!(
            assay_exec::setup::script(&["a".into(), "b".into()], FAILED_STEP),
            "set -e\ntrap 'rc=$?; [ \"$rc\" -eq 0 ] || echo \"${ASSAY_STEP:-} $rc\" \
             >/assay/.setup-failed' EXIT\nASSAY_STEP=0\na\nASSAY_STEP=1\nb\n"
        );
    }
}
