//! The argv a container starts with:
//! `/usr/bin/env -i -- K=V… /bin/sh -c 'exec 2>&1 && exec /bin/sh -c "$1"' assay COMMAND`.
//!
//! - Docker always adds variables of its own (`HOSTNAME`, `HOME`, the image's
//!   `ENV`); `env -i` drops them so the command sees exactly the spec's
//!   environment, as the local runner's children do.
//! - Docker reads stdout and stderr from two pipes, so their relative order
//!   is lost; the outer shell points stderr at stdout before it becomes the
//!   command's shell, so the log keeps the order the command wrote in (the
//!   local runner's one pipe).

use std::collections::BTreeMap;

use bollard::models::ContainerCreateBody;

use crate::DockerError;

/// The outer shell's script: stderr onto stdout, then the command's shell.
const SCRIPT: &str = r#"exec 2>&1 && exec /bin/sh -c "$1""#;

/// The same for a container started ahead and parked
/// ([`crate::fleet`]): it first waits for one line of go-ahead on its
/// stdin, and nothing else runs in it before that line; the command then
/// reads nothing of that stdin.
const PARKED: &str = r#"read -r _ || exit 125; exec 2>&1 </dev/null && exec /bin/sh -c "$1""#;

/// Makes `body` (a request [`shell`]'s argv went into) one that parks:
/// stdin open for the go-ahead, the outer script waiting for it. `false`
/// (and `body` as it was) when its argv is not [`shell`]'s.
pub(crate) fn park(body: &mut ContainerCreateBody) -> bool {
    let Some(cmd) = body.cmd.as_mut() else {
        return false;
    };
    // [… K=V, "/bin/sh", "-c", SCRIPT, "assay", COMMAND]
    let Some(at) = cmd.len().checked_sub(3) else {
        return false;
    };
    if cmd[at] != SCRIPT || at < 2 || cmd[at - 1] != "-c" {
        return false;
    }
    cmd[at] = PARKED.to_owned();
    body.attach_stdin = Some(true);
    body.open_stdin = Some(true);
    body.stdin_once = Some(true);
    true
}

pub(crate) struct Argv {
    pub(crate) entrypoint: Vec<String>,
    pub(crate) cmd: Vec<String>,
}

pub(crate) fn shell(env: &BTreeMap<String, String>, command: &str) -> Result<Argv, DockerError> {
    let invalid = |what, value: &str, why| DockerError::InvalidSpec {
        what,
        value: value.to_owned(),
        why,
    };
    let mut cmd = Vec::with_capacity(env.len() + 3);
    for (key, value) in env {
        if key.is_empty() || key.contains(['=', '\0']) {
            return Err(invalid(
                "environment variable name",
                key,
                "a name is not empty and holds no `=` or NUL",
            ));
        }
        if value.contains('\0') {
            return Err(invalid(
                "environment variable value",
                key,
                "a value holds no NUL",
            ));
        }
        cmd.push(format!("{key}={value}"));
    }
    if command.contains('\0') {
        return Err(invalid("command", command, "a command holds no NUL"));
    }
    cmd.extend(["/bin/sh", "-c", SCRIPT, "assay", command].map(str::to_owned));
    Ok(Argv {
        entrypoint: ["/usr/bin/env", "-i", "--"].map(str::to_owned).to_vec(),
        cmd,
    })
}
