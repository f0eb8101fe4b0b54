//! `[env]`'s confinement, checked from the file alone: the sandbox, the run
//! limits, the executor it names and every executor's settings (each
//! executor's keys are checked whichever one is named, so `build
//! --executor` only picks among checked settings). What needs the machine
//! (bubblewrap, the Docker daemon, the cluster) is the executors' to find
//! when a build starts.

use super::file::{EnvConfig, SlurmConfig};
use super::{ConfigError, Origin};
use crate::model::config::RunLimits;
use crate::model::config::{
    DEFAULT_BASE_IMAGE, DockerSettings, ExecutorChoice, ExecutorKind, SandboxMode, SlurmSettings,
};

/// An environment's confinement as written, checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConfineSpec {
    pub(crate) sandbox: SandboxMode,
    pub(crate) limits: RunLimits,
    pub(crate) executors: ExecutorChoice,
}

pub(super) fn confine(pipeline: &Origin<'_>, cfg: &EnvConfig) -> Result<ConfineSpec, ConfigError> {
    let written = match &cfg.executor {
        None => ExecutorKind::Local,
        Some(word) => ExecutorKind::parse(word.get_ref()).ok_or_else(|| {
            pipeline.error_at(
                word.span(),
                format!("unknown executor `{}`", word.get_ref()),
                "here",
                format!(
                    "use {} (`local`, the default, is bubblewrap on this machine)",
                    ExecutorKind::ALL
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?,
    };
    let sandbox = match &cfg.sandbox {
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
    Ok(ConfineSpec {
        sandbox,
        limits: limits(pipeline, cfg)?,
        executors: ExecutorChoice {
            written,
            docker: docker(pipeline, cfg)?,
            slurm: slurm(pipeline, cfg)?,
        },
    })
}

fn limits(pipeline: &Origin<'_>, cfg: &EnvConfig) -> Result<RunLimits, ConfigError> {
    let d = RunLimits::default();
    let limit = |v: &Option<toml::Spanned<u64>>, default: u64, what: &str| {
        pipeline.nonzero(v, default, what, "a limit of 0 would fail every run")
    };
    Ok(RunLimits {
        memory: limit(&cfg.memory, d.memory, "memory")?,
        processes: limit(&cfg.processes, d.processes, "processes")?,
        open_files: limit(&cfg.open_files, d.open_files, "open_files")?,
        file_size: limit(&cfg.file_size, d.file_size, "file_size")?,
        tmp: limit(&cfg.tmp_size, d.tmp, "tmp_size")?,
        home: limit(&cfg.home_size, d.home, "home_size")?,
        write: limit(&cfg.write_limit, d.write, "write_limit")?,
    })
}

/// `[env] base_image` and `cpus`.
fn docker(pipeline: &Origin<'_>, cfg: &EnvConfig) -> Result<DockerSettings, ConfigError> {
    let base_image = match &cfg.base_image {
        None => DEFAULT_BASE_IMAGE.to_owned(),
        Some(b) if b.get_ref().trim().is_empty() => {
            return Err(pipeline.error_at(
                b.span(),
                "`base_image` is empty",
                "here",
                format!(
                    "name an image by tag or id, or leave the key out for `{DEFAULT_BASE_IMAGE}`"
                ),
            ));
        }
        Some(b) => b.get_ref().clone(),
    };
    let cpu_millis = match &cfg.cpus {
        None => None,
        Some(c) => {
            let millis = (c.get_ref() * 1000.0).round();
            if !(millis >= 1.0 && millis <= f64::from(u32::MAX)) {
                return Err(pipeline.error_at(
                    c.span(),
                    format!("`cpus` must be a positive number, not {}", c.get_ref()),
                    "here",
                    "e.g. `cpus = 2` or `cpus = 1.5`; leave it out for no CPU limit",
                ));
            }
            Some(millis as u32)
        }
    };
    Ok(DockerSettings {
        base_image,
        cpu_millis,
        on_cluster: None,
    })
}

/// `[env] slurm`.
fn slurm(pipeline: &Origin<'_>, cfg: &EnvConfig) -> Result<SlurmSettings, ConfigError> {
    let Some(table) = &cfg.slurm else {
        return Ok(SlurmSettings::default());
    };
    let c: &SlurmConfig = table.get_ref();
    let at = |message: String, label: &str, help: &str| {
        pipeline.error_at(table.span(), message, label, help)
    };
    if let Some(dir) = &c.node_cache
        && !dir.is_absolute()
    {
        return Err(at(
            format!(
                "[env] slurm: `node_cache` is not an absolute path ({})",
                dir.display()
            ),
            "this table",
            "give a directory on each node's local disk, e.g. \"/var/tmp/assay\"",
        ));
    }
    if c.nodes == Some(0) {
        return Err(at(
            "[env] slurm: `nodes` is 0".into(),
            "this allocation",
            "leave `nodes` out for one node, or give how many nodes the build's allocation holds",
        ));
    }
    let proxy_address = match &c.proxy_address {
        None => SlurmSettings::DEFAULT_PROXY_ADDRESS,
        Some(written) => written.parse().map_err(|_| {
            at(
                format!("[env] slurm: `proxy_address` is not an IP address ({written})"),
                "this table",
                "give this machine's address as the nodes reach it, e.g. \"10.0.0.5\"",
            )
        })?,
    };
    Ok(SlurmSettings {
        proxy_address,
        partition: c.partition.clone(),
        nodes: c.nodes.unwrap_or(1),
        time: c
            .time
            .clone()
            .unwrap_or_else(|| SlurmSettings::DEFAULT_TIME.into()),
        account: c.account.clone(),
        qos: c.qos.clone(),
        sbatch: c.sbatch.clone(),
        node_cache: c
            .node_cache
            .clone()
            .unwrap_or_else(|| SlurmSettings::DEFAULT_NODE_CACHE.into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;

    fn pipeline(env: &str) -> Result<ConfineSpec, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipeline.toml");
        std::fs::write(
            &path,
            format!("[env]\ntest_command = \"true\"\nreport = \"tap\"\n{env}"),
        )
        .unwrap();
        Pipeline::load(&path)
            .map(|p| p.settings.envs[0].confine.clone())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_executor_s_keys_are_checked_whichever_one_is_named() {
        let written = pipeline("base_image = \"python:3.12\"\ncpus = 1.5\n").unwrap();
        assert_eq!(written.executors.written, ExecutorKind::Local);
        assert_eq!(
            written.executors.docker,
            DockerSettings {
                base_image: "python:3.12".into(),
                cpu_millis: Some(1500),
                on_cluster: None,
            }
        );
        assert_eq!(written.executors.slurm, SlurmSettings::default());
        assert_eq!(written.sandbox, SandboxMode::Bwrap);
        for (env, needle) in [
            ("cpus = 0\n", "`cpus` must be a positive number"),
            ("base_image = \" \"\n", "`base_image` is empty"),
            ("executor = \"podman\"\n", "unknown executor `podman`"),
            ("sandbox = \"chroot\"\n", "unknown sandbox `chroot`"),
            ("memory = 0\n", "`memory` cannot be 0"),
            ("slurm = { nodes = 0 }\n", "`nodes` is 0"),
            ("slurm = { node_cache = \"rel\" }\n", "not an absolute path"),
            ("slurm = { proxy_address = \"x\" }\n", "not an IP address"),
        ] {
            let err = pipeline(env).unwrap_err();
            assert!(err.contains(needle), "{env}: {err}");
        }
    }

    #[test]
    fn the_chosen_executor_takes_its_checked_settings() {
        let spec =
            pipeline("executor = \"slurm\"\nslurm = { nodes = 2, proxy_address = \"10.0.0.5\" }\n")
                .unwrap();
        let choice = &spec.executors;
        let crate::model::config::ExecutorSetting::Slurm(slurm) = choice.setting(None) else {
            panic!("the written executor is slurm");
        };
        assert_eq!(slurm.nodes, 2);
        assert_eq!(slurm.proxy_address.to_string(), "10.0.0.5");
        assert_eq!(
            choice.setting(Some(ExecutorKind::Docker)).kind(),
            ExecutorKind::Docker
        );
        assert_eq!(
            choice.setting(Some(ExecutorKind::Local)),
            crate::model::config::ExecutorSetting::Local
        );
    }
}
