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

use crate::DockerError;

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
    cmd.extend(
        [
            "/bin/sh",
            "-c",
            r#"exec 2>&1 && exec /bin/sh -c "$1""#,
            "assay",
            command,
        ]
        .map(str::to_owned),
    );
    Ok(Argv {
        entrypoint: ["/usr/bin/env", "-i", "--"].map(str::to_owned).to_vec(),
        cmd,
    })
}
