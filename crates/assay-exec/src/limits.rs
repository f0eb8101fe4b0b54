//! rlimits, computed in the parent and applied in the child before the command's exec.

use std::io;

use rustix::process::{Resource, Rlimit};

use crate::Limits;

/// The limits to set, as plain data so that applying them in the child
/// allocates nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    entries: [(Resource, Option<u64>); 5],
}

impl Plan {
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            entries: [
                (Resource::Fsize, limits.max_file_size),
                (Resource::Nproc, limits.max_processes),
                (Resource::Nofile, limits.max_open_files),
                (Resource::As, limits.max_memory),
                (Resource::Core, limits.no_core.then_some(0)),
            ],
        }
    }

    /// The limits to set, by name, for the launcher's command line.
    pub(crate) fn named(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.entries
            .iter()
            .filter_map(|&(resource, wanted)| Some((name(resource), wanted?)))
    }

    /// The plan of [`Plan::named`]'s limits; a name it does not give is an
    /// error.
    pub(crate) fn from_named(named: &[(String, u64)]) -> io::Result<Self> {
        let mut plan = Self::new(&Limits {
            no_core: false,
            ..Limits::default()
        });
        for (wanted, value) in named {
            let entry = plan
                .entries
                .iter_mut()
                .find(|(resource, _)| name(*resource) == wanted)
                .ok_or_else(|| io::Error::other(format!("unknown limit `{wanted}`")))?;
            entry.1 = Some(*value);
        }
        Ok(plan)
    }

    /// Set each limit as soft = hard = min(wanted, inherited hard limit):
    /// equal so the command cannot raise the soft limit back, clamped because
    /// an unprivileged process may only lower its hard limit.
    ///
    /// Runs in the launcher or between `fork` and `exec`: plain system calls only.
    pub(crate) fn apply(&self) -> io::Result<()> {
        for &(resource, wanted) in &self.entries {
            let Some(wanted) = wanted else { continue };
            let hard = rustix::process::getrlimit(resource).maximum;
            let value = hard.map_or(wanted, |hard| hard.min(wanted));
            rustix::process::setrlimit(
                resource,
                Rlimit {
                    current: Some(value),
                    maximum: Some(value),
                },
            )?;
        }
        Ok(())
    }
}

fn name(resource: Resource) -> &'static str {
    match resource {
        Resource::Fsize => "fsize",
        Resource::Nproc => "nproc",
        Resource::Nofile => "nofile",
        Resource::As => "as",
        Resource::Core => "core",
        _ => "other",
    }
}
