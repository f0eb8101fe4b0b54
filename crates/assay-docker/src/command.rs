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

/// The whole script of a container started ahead and parked
/// ([`crate::fleet`]): it waits for its go-ahead on its stdin, which is the
/// run's argv ([`go_ahead`]) and a last line `go` with no newline after it,
/// then runs that argv with nothing of that stdin. Nothing else runs in it
/// before; a stdin closed before the whole go-ahead came (its assay gone)
/// ends it with 125, having run nothing. The argv is the run's, not the
/// container's: a parked container fits any run of its image, user and
/// limits.
const PARKED: &str = r#"c=; while IFS= read -r l; do c="$c$l
"; done; [ "$l" = go ] || exit 125; exec </dev/null; eval "exec $c""#;

/// Makes `body` one that parks: the outer shell of [`PARKED`] as its only
/// command, stdin open for the go-ahead.
pub(crate) fn park(body: &mut ContainerCreateBody) {
    body.entrypoint = Some(["/bin/sh", "-c", PARKED].map(str::to_owned).to_vec());
    body.cmd = Some(Vec::new());
    body.attach_stdin = Some(true);
    body.open_stdin = Some(true);
    body.stdin_once = Some(true);
}

/// What a parked container is told to run `argv` with: its words, each
/// quoted for the shell, then the line `go` ([`PARKED`]).
pub(crate) fn go_ahead(argv: &Argv) -> Vec<u8> {
    let mut said = String::new();
    for word in argv.entrypoint.iter().chain(&argv.cmd) {
        said.push('\'');
        said.push_str(&word.replace('\'', r"'\''"));
        said.push_str("' ");
    }
    said.push_str("\ngo");
    said.into_bytes()
}

#[derive(Clone)]
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
