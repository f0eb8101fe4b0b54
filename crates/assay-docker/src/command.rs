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
/// ([`crate::fleet`]): it waits for its go-ahead, one line on its stdin
/// ([`go_ahead`]: the run's argv, each word quoted for the shell, a newline
/// in a word written as `"$N"`), then becomes that argv. Nothing else runs
/// in it before; a stdin that ends before the line does (its assay gone)
/// ends it with 125, having run nothing. The argv is the run's, not the
/// container's, so a parked container fits any run of its image, user and
/// limits. What the run's command reads of that stdin is what its claimant
/// writes after the line: nothing for a test run (the stdin is closed with
/// the line), the app's own go-ahead for a deployment.
const PARKED: &str = "IFS= read -r c || exit 125; N='\n'; eval \"exec $c\"";

/// Makes `body` one that parks: the shell of [`PARKED`] as its only
/// command, stdin open for the go-ahead.
pub(crate) fn park(body: &mut ContainerCreateBody) {
    body.entrypoint = Some(["/bin/sh", "-c", PARKED].map(str::to_owned).to_vec());
    body.cmd = Some(Vec::new());
    body.attach_stdin = Some(true);
    body.open_stdin = Some(true);
    body.stdin_once = Some(true);
}

/// The line a parked container is told to run `argv` with ([`PARKED`]).
pub(crate) fn go_ahead(argv: &Argv) -> Vec<u8> {
    let mut said = String::new();
    for word in argv.entrypoint.iter().chain(&argv.cmd) {
        if !said.is_empty() {
            said.push(' ');
        }
        for (i, part) in word.split('\n').enumerate() {
            if i > 0 {
                said.push_str("\"$N\"");
            }
            said.push('\'');
            said.push_str(&part.replace('\'', r"'\''"));
            said.push('\'');
        }
    }
    said.push('\n');
    said.into_bytes()
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Write as _;
    use std::process::{Command, Stdio};

    use super::*;

    /// The parked shell, here rather than in a container: fed `input` on
    /// its stdin, its exit code.
    fn parked_shell(input: &[u8]) -> Option<i32> {
        let mut sh = Command::new("/bin/sh")
            .args(["-c", PARKED])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        sh.stdin.take().unwrap().write_all(input).unwrap();
        sh.wait().unwrap().code()
    }

    /// A go-ahead cut short (its assay died while writing it) runs
    /// nothing, whatever it held; the whole line runs its argv.
    #[test]
    fn a_go_ahead_cut_short_runs_nothing_and_a_whole_one_runs_its_argv() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("made");
        let argv = Argv {
            entrypoint: vec!["/bin/sh".into(), "-c".into()],
            cmd: vec![format!("touch '{}'\nexit 3", made.display())],
        };
        let line = go_ahead(&argv);
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        for cut in [0, 1, line.len() / 2, line.len() - 1] {
            assert_eq!(parked_shell(&line[..cut]), Some(125), "cut at {cut}");
            assert!(!made.exists(), "cut at {cut} ran");
        }
        assert_eq!(parked_shell(&line), Some(3));
        assert!(made.exists());
    }
}
