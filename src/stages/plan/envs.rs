//! The pipeline's environments, checked once: the one `[env]`, or each
//! `[env.NAME]` (its report format and budgets checked with the settings),
//! with its confinement; and which one each source's tasks run in. Every
//! error points into the file.

use std::collections::BTreeSet;

use assay_report::Format;

use super::confine::Confinement;
use super::error::StageError;
use super::redact::RedactConfig;
use super::run::RunParams;
use crate::pipeline::{EnvConfig, Pipeline, SourceSettings};

/// One environment, checked: what its nodes are laid out with.
pub(crate) struct EnvSettings<'a> {
    /// `None` for the unnamed `[env]`.
    pub(crate) name: Option<&'a str>,
    pub(crate) cfg: &'a EnvConfig,
    pub(crate) format: Format,
    pub(crate) timeout: u64,
    pub(crate) log_cap: u64,
    pub(crate) confine: Confinement,
    /// `[env] export`, on the docker executor.
    pub(crate) export: bool,
}

impl EnvSettings<'_> {
    /// The params of a run of the test command in this environment.
    pub(crate) fn run_params(
        &self,
        redact: &RedactConfig,
        repeat: u32,
        watch: &[String],
    ) -> RunParams {
        RunParams {
            command: self.cfg.test_command.clone(),
            report: self.format,
            report_file: self.cfg.report_file.clone(),
            timeout_s: self.timeout,
            log_cap: self.log_cap,
            redact: redact.clone(),
            serial: self.cfg.serial.unwrap_or(true),
            repeat,
            confine: self.confine.clone(),
            watch: watch.to_vec(),
            canary: self.cfg.canary.as_ref().map(|c| c.get_ref().clone()),
        }
    }

    /// The docker executor's base image, when this environment uses it.
    pub(crate) fn docker_base(&self) -> Option<&str> {
        self.confine.docker().map(|d| d.base_image.as_str())
    }
}

/// Every environment of the pipeline.
pub(crate) struct Envs<'a> {
    all: Vec<EnvSettings<'a>>,
    named: bool,
}

impl<'a> Envs<'a> {
    /// Checks every environment; a pipeline with sources needs at least one.
    pub(crate) fn resolve(
        pipeline: &'a Pipeline,
        warnings: &mut Vec<String>,
    ) -> Result<Envs<'a>, StageError> {
        let defined = &pipeline.settings.envs;
        if defined.is_empty() {
            let span = pipeline.settings.sources[0].name.span();
            return Err(pipeline
                .error_at(
                    span,
                    "a [[source]] needs an [env] table",
                    "this source",
                    "add [env] with test_command and report (see docs/pipeline.md)",
                )
                .into());
        }
        let named = defined.iter().any(|env| env.name.is_some());
        let mut all = Vec::new();
        for env in defined {
            let cfg = &env.written;
            let confine = super::layout::confinement(pipeline, cfg, warnings)?;
            let export =
                confine.docker().is_some() && cfg.export.as_ref().is_some_and(|e| *e.get_ref());
            all.push(EnvSettings {
                name: env.name(),
                cfg,
                format: env.format,
                timeout: env.timeout_s,
                log_cap: env.log_cap,
                confine,
                export,
            });
        }
        Ok(Envs { all, named })
    }

    /// The environment `src` runs in: the unnamed `[env]`, the `[env.NAME]`
    /// it names, or the only named one.
    pub(crate) fn for_source(
        &self,
        pipeline: &Pipeline,
        src: &SourceSettings,
    ) -> Result<&EnvSettings<'a>, StageError> {
        let names = || {
            self.all
                .iter()
                .filter_map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (&src.env, self.named) {
            (None, false) => Ok(&self.all[0]),
            (Some(want), false) => Err(pipeline
                .error_at(
                    want.span(),
                    format!("no environment `{}`: this pipeline has one unnamed [env]", want.get_ref()),
                    "names an environment",
                    format!(
                        "rename [env] to [env.{}] (one table per environment), or remove `env` here",
                        want.get_ref()
                    ),
                )
                .into()),
            (Some(want), true) => self
                .all
                .iter()
                .find(|e| e.name == Some(want.get_ref().as_str()))
                .ok_or_else(|| {
                    pipeline
                        .error_at(
                            want.span(),
                            format!("no environment `{}`", want.get_ref()),
                            "not an [env.NAME]",
                            format!("the environments are: {}", names()),
                        )
                        .into()
                }),
            (None, true) if self.all.len() == 1 => Ok(&self.all[0]),
            (None, true) => Err(pipeline
                .error_at(
                    src.name.span(),
                    "this source names no environment, and there are several",
                    "this source",
                    format!("add `env = \"NAME\"` to it, one of: {}", names()),
                )
                .into()),
        }
    }

    /// The base images of the docker environments these sources use.
    pub(crate) fn docker_bases(
        &self,
        pipeline: &Pipeline,
        sources: &[SourceSettings],
    ) -> Result<BTreeSet<String>, StageError> {
        let mut bases = BTreeSet::new();
        for src in sources {
            if let Some(base) = self.for_source(pipeline, src)?.docker_base() {
                bases.insert(base.to_owned());
            }
        }
        Ok(bases)
    }
}

/// `[env] executor`, `base_image` and `cpus`, checked. The docker-only keys
/// are ignored on the local executor, so `build --executor local` works on a
/// docker pipeline.
pub(crate) fn executor(
    pipeline: &Pipeline,
    cfg: &EnvConfig,
) -> Result<super::confine::Executor, StageError> {
    use super::confine::{DEFAULT_BASE_IMAGE, DockerSettings, Executor};
    let Some(name) = &cfg.executor else {
        return Ok(Executor::Local);
    };
    match name.get_ref().as_str() {
        "local" => return Ok(Executor::Local),
        "docker" => {}
        other => {
            return Err(pipeline
                .error_at(
                    name.span(),
                    format!("unknown executor `{other}`"),
                    "here",
                    "use `local` (the default: bubblewrap on this machine) or `docker`",
                )
                .into());
        }
    }
    let base_image = match &cfg.base_image {
        None => DEFAULT_BASE_IMAGE.to_owned(),
        Some(b) if b.get_ref().trim().is_empty() => {
            return Err(pipeline
                .error_at(
                    b.span(),
                    "`base_image` is empty",
                    "here",
                    format!("name an image by tag or id, or leave the key out for `{DEFAULT_BASE_IMAGE}`"),
                )
                .into());
        }
        Some(b) => b.get_ref().clone(),
    };
    let cpu_millis = match &cfg.cpus {
        None => None,
        Some(c) => {
            let millis = (c.get_ref() * 1000.0).round();
            if !(millis >= 1.0 && millis <= f64::from(u32::MAX)) {
                return Err(pipeline
                    .error_at(
                        c.span(),
                        format!("`cpus` must be a positive number, not {}", c.get_ref()),
                        "here",
                        "e.g. `cpus = 2` or `cpus = 1.5`; leave it out for no CPU limit",
                    )
                    .into());
            }
            Some(millis as u32)
        }
    };
    Ok(Executor::Docker(DockerSettings {
        base_image,
        cpu_millis,
    }))
}
