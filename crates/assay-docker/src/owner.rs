//! Who owns a container: every container assay creates is labelled with the
//! creating process (pid, its start time, the host), so that containers left
//! by a killed assay can be found and removed later, and only those.
//!
//! A pid alone is not an identity: once its process is gone the number is
//! reused. The pid's start time (field 22 of `/proc/PID/stat`, in clock ticks
//! since boot) pairs with it to name exactly one process. The host name keeps
//! a daemon shared by several machines from having one machine's assay remove
//! another's live containers.

use std::collections::HashMap;
use std::sync::OnceLock;

/// Every assay container: `assay.run=1`.
pub(crate) const RUN: &str = "assay.run";
pub(crate) const PID: &str = "assay.pid";
pub(crate) const PID_START: &str = "assay.pid_start";
pub(crate) const HOST: &str = "assay.host";
/// `setup` or `test`.
pub(crate) const STAGE: &str = "assay.stage";

struct Owner {
    pid: u32,
    start: String,
    host: String,
}

fn me() -> &'static Owner {
    static ME: OnceLock<Owner> = OnceLock::new();
    ME.get_or_init(|| {
        let pid = std::process::id();
        Owner {
            pid,
            start: start_time(pid).unwrap_or_default(),
            host: host_name(),
        }
    })
}

/// The labels of a container this process creates for `stage`.
pub(crate) fn labels(stage: &str) -> HashMap<String, String> {
    let me = me();
    HashMap::from([
        (RUN.to_owned(), "1".to_owned()),
        (PID.to_owned(), me.pid.to_string()),
        (PID_START.to_owned(), me.start.clone()),
        (HOST.to_owned(), me.host.clone()),
        (STAGE.to_owned(), stage.to_owned()),
    ])
}

/// Image labels that blank the owner labels. Committing a container copies
/// its labels into the image, and every container made from that image
/// inherits them: without this, a container someone else starts from an
/// environment image would look like an abandoned run and be removed.
pub(crate) fn cleared() -> impl Iterator<Item = (String, String)> {
    [RUN, PID, PID_START, HOST, STAGE]
        .into_iter()
        .map(|key| (key.to_owned(), String::new()))
}

/// Whether a container with these labels belongs to a process that is gone.
/// Containers of another host, or without readable owner labels, are never
/// claimed.
pub(crate) fn is_abandoned(labels: &HashMap<String, String>) -> bool {
    let (Some(host), Some(pid), Some(start)) = (
        labels.get(HOST),
        labels.get(PID).and_then(|pid| pid.parse::<u32>().ok()),
        labels.get(PID_START),
    ) else {
        return false;
    };
    *host == me().host && start_time(pid).as_ref() != Some(start)
}

/// Whether the container was started by this very process.
pub(crate) fn is_mine(labels: &HashMap<String, String>) -> bool {
    let me = me();
    labels.get(HOST) == Some(&me.host)
        && labels.get(PID).and_then(|p| p.parse::<u32>().ok()) == Some(me.pid)
        && labels.get(PID_START) == Some(&me.start)
}

/// The start time of a live (not zombie) process, as text.
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or
    // parentheses itself; the fields after the last `)` are plain.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // Field 3 is the state; field 22 the start time.
    let state = fields.next()?;
    if matches!(state, "Z" | "X" | "x") {
        return None;
    }
    fields.nth(18).map(str::to_owned)
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_labels_are_not_abandoned() {
        assert!(!is_abandoned(&labels("test")));
    }

    #[test]
    fn a_reused_pid_is_abandoned() {
        let mut labels = labels("test");
        labels.insert(PID_START.to_owned(), "1".to_owned());
        assert!(is_abandoned(&labels));
    }

    #[test]
    fn another_host_or_no_owner_is_never_claimed() {
        let mut labels = labels("test");
        labels.insert(PID_START.to_owned(), "1".to_owned());
        labels.insert(HOST.to_owned(), "elsewhere".to_owned());
        assert!(!is_abandoned(&labels));
        assert!(!is_abandoned(&HashMap::from([(
            RUN.to_owned(),
            "1".to_owned()
        )])));
    }

    #[test]
    fn start_time_is_field_22() {
        let mine = start_time(std::process::id()).unwrap();
        assert!(mine.parse::<u64>().is_ok(), "{mine}");
        // pid 1 started before us.
        let init: u64 = start_time(1).unwrap().parse().unwrap();
        assert!(init <= mine.parse().unwrap());
    }
}
