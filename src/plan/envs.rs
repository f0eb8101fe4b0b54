//! The pipeline's environments, checked once: the one `[env]`, or each
//! `[env.NAME]` (its report format and budgets checked with the settings),
//! with its confinement; and which one each source's tasks run in. Every
//! error points into the file.

use assay_report::Format;

use crate::model::rules::limits::RunLimits;
use crate::nodes::env::EnvParams;
use crate::nodes::run::RunParams;
use crate::pipeline::{EnvConfig, Pipeline, SourceSettings};
use crate::run::error::StageError;
use crate::run::executor::{Confinement, ExecutorSetting, Executors, SandboxMode};
use crate::run::redact::RedactConfig;

/// One environment, checked: what its nodes are laid out with.
pub(crate) struct EnvSettings<'a> {
    /// `None` for the unnamed `[env]`.
    pub(crate) name: Option<&'a str>,
    pub(crate) cfg: &'a EnvConfig,
    pub(crate) format: Format,
    pub(crate) timeout: u64,
    pub(crate) log_cap: u64,
    pub(crate) confine: Confinement,
    /// `[env] touched_command`: what graded runs run instead of the test
    /// command (checked with the scope at load).
    pub(crate) touched_command: Option<&'a str>,
    /// `[env] export`, on an executor whose environments are artifacts.
    pub(crate) export: bool,
    /// `[env] rebuild`, checked at load.
    pub(crate) rebuild: &'a crate::model::rebuild::RebuildSpec,
}

impl EnvSettings<'_> {
    /// `[env] warm` as (variable, directory), sorted by variable.
    pub(crate) fn warm(&self) -> Vec<(String, String)> {
        self.cfg
            .warm
            .as_ref()
            .map(|w| {
                w.get_ref()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

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
            stall_grace_s: 0,
            log_cap: self.log_cap,
            redact: redact.clone(),
            serial: self.cfg.serial.unwrap_or(true),
            repeat,
            confine: self.confine.clone(),
            watch: watch.to_vec(),
            canary: self.cfg.canary.as_ref().map(|c| c.get_ref().clone()),
            warm: self.warm(),
            touched_command: None,
        }
    }

    /// The params of a graded run: a run of the test command, or of the
    /// `touched_command` over the touched test files where one is set
    /// (`RunParams::touched_command`). Screening runs keep the whole
    /// suite, and their keys (docs/stages.md, "Scope").
    pub(crate) fn graded_run_params(&self, redact: &RedactConfig, watch: &[String]) -> RunParams {
        RunParams {
            touched_command: self.touched_command.map(str::to_owned),
            ..self.run_params(redact, 0, watch)
        }
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
        executors: &Executors,
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
                    "add [env] with test_command and report (see `assay docs pipeline`)",
                )
                .into());
        }
        let named = defined.iter().any(|env| env.name.is_some());
        let mut all = Vec::new();
        for env in defined {
            let cfg = &env.written;
            let confine = confinement(pipeline, executors, cfg, warnings)?;
            // Only an environment that is an artifact of its own can be saved.
            let export = executors.of(&confine).env_is_artifact()
                && cfg.export.as_ref().is_some_and(|e| *e.get_ref());
            all.push(EnvSettings {
                name: env.name(),
                cfg,
                format: env.format,
                timeout: env.timeout_s,
                log_cap: env.log_cap,
                confine,
                touched_command: env.touched_command.as_deref(),
                export,
                rebuild: &env.rebuild,
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

    /// The confinements these sources' environments run under, one per
    /// executor setting: what a build starts (and cleans up after).
    pub(crate) fn executors(
        &self,
        pipeline: &Pipeline,
        sources: &[SourceSettings],
    ) -> Result<Vec<Confinement>, StageError> {
        let mut out: Vec<Confinement> = Vec::new();
        for src in sources {
            let confine = &self.for_source(pipeline, src)?.confine;
            if !out.iter().any(|c| c.executor == confine.executor) {
                out.push(confine.clone());
            }
        }
        Ok(out)
    }
}

/// `[env]`'s executor, sandbox and limits, checked; bubblewrap probed once
/// when used.
fn confinement(
    pipeline: &Pipeline,
    executors: &Executors,
    env_cfg: &crate::pipeline::EnvConfig,
    warnings: &mut Vec<String>,
) -> Result<Confinement, StageError> {
    let executor = ExecutorSetting::parse(pipeline, env_cfg)?;
    let sandbox = match &env_cfg.sandbox {
        None => SandboxMode::Bwrap,
        Some(s) => SandboxMode::parse(s.get_ref()).ok_or_else(|| {
            pipeline.error_at(
                s.span(),
                format!("unknown sandbox `{}`", s.get_ref()),
                "here",
                "use `bwrap` (the default) or `none` (unsandboxed; the release says so)",
            )
        })?,
    };
    let d = RunLimits::default();
    let limit = |v: &Option<toml::Spanned<u64>>, default: u64, what: &str| {
        pipeline
            .origin()
            .nonzero(v, default, what, "a limit of 0 would fail every run")
    };
    let limits = RunLimits {
        memory: limit(&env_cfg.memory, d.memory, "memory")?,
        processes: limit(&env_cfg.processes, d.processes, "processes")?,
        open_files: limit(&env_cfg.open_files, d.open_files, "open_files")?,
        file_size: limit(&env_cfg.file_size, d.file_size, "file_size")?,
        tmp: limit(&env_cfg.tmp_size, d.tmp, "tmp_size")?,
        home: limit(&env_cfg.home_size, d.home, "home_size")?,
        write: limit(&env_cfg.write_limit, d.write, "write_limit")?,
    };
    if !executor.keyed_as_local() {
        // The container is the sandbox; `sandbox` is the local sandbox's
        // (on this machine, or on a Slurm node).
        return Ok(Confinement {
            sandbox: SandboxMode::Bwrap,
            limits,
            executor,
        });
    }
    if sandbox == SandboxMode::Bwrap
        && let Err(e) = executors.bwrap()
    {
        return Err(StageError::sandbox(
            e,
            "install bubblewrap (`apt-get install bubblewrap`); or set `sandbox = \"none\"` in [env] to grade unsandboxed (every build warns, and the release says so)",
        ));
    }
    if sandbox == SandboxMode::None {
        warnings.push(
            "warning: [env] sandbox = \"none\": task and graded code run unconfined on this machine, with your rights; the release will say it was graded unsandboxed".into(),
        );
    }
    Ok(Confinement {
        sandbox,
        limits,
        executor,
    })
}

/// A candidate's environment: the `[env]` spec and its key files' content at
/// `base` (their digests in the params, their bytes written into the
/// environment before setup runs).
pub(crate) fn env_params(
    env: &EnvSettings<'_>,
    source: &assay_git::Source,
    base: &str,
    redact: &RedactConfig,
) -> Result<(EnvParams, KeyFiles), StageError> {
    let mut key_files = Vec::new();
    let mut files = Vec::new();
    for kf in &env.cfg.key_files {
        match source.read_file(base, kf).map_err(StageError::cache)? {
            Some(bytes) => {
                key_files.push((kf.clone(), blake3::hash(&bytes).to_hex().to_string()));
                files.push((kf.clone(), bytes));
            }
            None => key_files.push((kf.clone(), "absent".into())),
        }
    }
    let params = EnvParams {
        setup: env.cfg.setup.clone(),
        key_files,
        confine: env.confine.clone(),
        redact: redact.clone(),
        export: env.export,
        at: None,
        warm: env.warm(),
    };
    Ok((params, files))
}

/// The key files' paths and bytes at a base commit.
pub(crate) type KeyFiles = Vec<(String, Vec<u8>)>;

/// The env node's name: its params' digest.
pub(crate) fn env_name(params: &EnvParams) -> String {
    crate::model::names::env(&blake3::hash(&assay_engine::encode_params(params)))
}
