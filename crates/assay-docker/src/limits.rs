//! [`Limits`] as Docker host configuration, shared by setup and test
//! containers. What each field becomes:
//!
//! | limit | Docker (`HostConfig`) | enforced by |
//! |---|---|---|
//! | `cpu_millis` | `NanoCpus` = millis × 10⁶ | CFS quota |
//! | `memory` | `Memory` = `MemorySwap` (no swap) | memory cgroup; OOM kill |
//! | `pids` | `PidsLimit` | pids cgroup |
//! | `open_files` | `Ulimits` `nofile` | rlimit |
//! | `file_size` | `Ulimits` `fsize` | rlimit |
//! | (always) | `Ulimits` `core` = 0 | no core dumps fill the disk |
//! | `written` | nothing: no Docker option bounds a volume on overlay/ext4 (`storage-opt size` needs xfs with project quotas) | a watchdog over the volume, from the host (`run.rs`) |
//!
//! Output never goes to a Docker log driver (`LogConfig` `none`): we read it
//! attached and cap it ourselves, so a flood cannot fill the daemon's disk.

use bollard::models::{HostConfig, HostConfigLogConfig, ResourcesUlimits};

use crate::Limits;

pub(crate) fn host_config(limits: &Limits) -> HostConfig {
    let bytes = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let ulimit = |name: &str, value: u64| ResourcesUlimits {
        name: Some(name.to_owned()),
        soft: Some(bytes(value)),
        hard: Some(bytes(value)),
    };
    let mut ulimits = vec![ulimit("core", 0)];
    ulimits.extend(limits.open_files.map(|n| ulimit("nofile", n)));
    ulimits.extend(limits.file_size.map(|n| ulimit("fsize", n)));
    HostConfig {
        nano_cpus: limits.cpu_millis.map(|m| i64::from(m) * 1_000_000),
        memory: limits.memory.map(bytes),
        memory_swap: limits.memory.map(bytes),
        pids_limit: limits.pids.map(i64::from),
        ulimits: Some(ulimits),
        log_config: Some(HostConfigLogConfig {
            typ: Some("none".to_owned()),
            config: None,
        }),
        security_opt: Some(vec!["no-new-privileges".to_owned()]),
        privileged: Some(false),
        ..Default::default()
    }
}
