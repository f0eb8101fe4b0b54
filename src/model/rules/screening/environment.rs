//! Whether a reading's environment was broken: its test command could not
//! run at all (not executable, not found, a missing interpreter or
//! toolchain, a write the run may not make, no network), named from the
//! end of its log.

use crate::model::records::RunRecord;

/// The end of a log as one line: its last few non-blank lines (the
/// error a failed command printed last), cut to a few hundred bytes.
fn log_end(log: &str) -> String {
    const LINES: usize = 3;
    const BYTES: usize = 300;
    let last: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("assay: "))
        .collect();
    let text = last[last.len().saturating_sub(LINES)..].join(" / ");
    if text.len() <= BYTES {
        return text;
    }
    let mut cut = text.len() - BYTES;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    format!("…{}", &text[cut..])
}

/// Why a reading's test command could not run at all, if it could not:
/// exit 126 (not executable) or 127 (not found), or a shell's "command not
/// found" / a missing interpreter / a write the run may not make
/// (permission denied, a read-only file system) in a log without a single
/// test. Names the command or the path where the log does, and the exit
/// code.
pub(crate) fn environment_broken(run: &RunRecord, log: &str) -> Option<String> {
    let code = run.exit_code;
    if run.env_failed {
        let what = run
            .untrusted
            .clone()
            .unwrap_or_else(|| "the environment's setup failed".to_owned());
        return Some(match log_end(log) {
            end if end.is_empty() => what,
            end => format!("{what}; its log ends: {end}"),
        });
    }
    let named = log.lines().find_map(|l| {
        not_found_command(l)
            .or_else(|| toolchain_missing(l))
            .map(|(cmd, what)| format!("`{cmd}` {what}"))
            .or_else(|| denied(l))
    });
    let by_code = matches!(code, Some(126 | 127));
    // Without the exit code, only a log that ran nothing and built nothing
    // (a build failure is a fact about the tree, not the environment).
    let ran_something = !run.tests.is_empty() || !run.build_failures.is_empty();
    if !by_code && (named.is_none() || ran_something || code == Some(0)) {
        return None;
    }
    let exit = code.map_or_else(|| "no exit code".to_owned(), |c| format!("exit {c}"));
    Some(match (named, code) {
        (Some(named), _) => format!("{named} ({exit})"),
        (None, Some(126)) => format!("the test command could not be executed ({exit})"),
        (None, _) => format!("the test command was not found ({exit})"),
    })
}

/// What stopped a run, from the first line of its log that says: a
/// missing command or toolchain, a refused write, no network, a missing
/// Python module. For a reason's words (a Harbor control's verifier that
/// scored wrong); None when no line says.
pub(crate) fn cause(log: &str) -> Option<String> {
    log.lines().find_map(|l| {
        not_found_command(l)
            .or_else(|| toolchain_missing(l))
            .map(|(cmd, what)| format!("`{cmd}` {what}"))
            .or_else(|| denied(l))
            .or_else(|| offline(l))
            .or_else(|| missing_module(l))
    })
}

/// A line saying a name did not resolve or a host was unreachable.
fn offline(line: &str) -> Option<String> {
    const SAYS: [&str; 6] = [
        "Temporary failure resolving",
        "Temporary failure in name resolution",
        "Could not resolve host",
        "Network is unreachable",
        "Name or service not known",
        "Failed to establish a new connection",
    ];
    let line = line.trim();
    SAYS.iter().any(|s| line.contains(s)).then(|| {
        let shown: String = line.chars().take(160).collect();
        format!("{OFFLINE}: `{shown}`")
    })
}

/// How a cause naming a missing network starts (the line follows).
pub(crate) const OFFLINE: &str = "no network (the run is offline)";

/// Python's `ModuleNotFoundError: No module named 'pytest'` (or a
/// `python -m` run's `No module named pytest`).
fn missing_module(line: &str) -> Option<String> {
    let at = line.find("No module named ")?;
    let name = line[at + "No module named ".len()..]
        .trim()
        .trim_matches(|c| matches!(c, '\'' | '"'));
    (!name.is_empty()).then(|| format!("Python module `{name}` not found"))
}

/// The command a shell's or `env`'s error line says is missing (or not
/// executable), with what it says: `bash: python3: command not found`,
/// `sh: 1: python3: not found`, `/usr/bin/env: 'python3': No such file or
/// directory`, `bash: ./run.sh: Permission denied`.
fn not_found_command(line: &str) -> Option<(String, &'static str)> {
    let line = line.trim();
    let unquote = |s: &str| {
        s.trim()
            .trim_matches(|c| matches!(c, '\'' | '"' | '‘' | '’' | '`'))
            .to_owned()
    };
    let last_field = |head: &str| head.rsplit(": ").next().map(unquote);
    if let Some(head) = line.strip_suffix(": command not found") {
        return Some((last_field(head)?, "not found"));
    }
    // dash's shape (`sh: 1: pytest: not found`); other tools say "not found" too.
    if let Some(head) = line.strip_suffix(": not found")
        && ["sh: ", "/bin/sh: ", "dash: "]
            .iter()
            .any(|p| line.starts_with(p))
    {
        return Some((last_field(head)?, "not found"));
    }
    if line.starts_with("/usr/bin/env: ") || line.starts_with("env: ") {
        let head = line.strip_suffix(": No such file or directory")?;
        return Some((last_field(head)?, "not found (missing interpreter)"));
    }
    if let Some(head) = line.strip_suffix(": Permission denied")
        && (line.starts_with("bash: ") || line.starts_with("sh: "))
    {
        return Some((last_field(head)?, "not executable"));
    }
    None
}

/// A write the run was refused, with the path where the line names one:
/// Go's `mkdir /root/.cache: permission denied`, coreutils' `mkdir: cannot
/// create directory '/opt/x': Permission denied`, Python's
/// `PermissionError: [Errno 13] Permission denied: '/opt/x'`, and the same
/// with `Read-only file system`.
fn denied(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    let (at, what) = ["permission denied", "read-only file system"]
        .into_iter()
        .find_map(|what| lower.find(what).map(|at| (at, what)))?;
    let path = |text: &str| {
        let word = text.trim_matches(|c: char| {
            matches!(
                c,
                '\'' | '"' | '‘' | '’' | '`' | ':' | ',' | '(' | ')' | '[' | ']'
            )
        });
        word.starts_with('/').then(|| word.to_owned())
    };
    let before = line[..at].split_whitespace().rev().find_map(path);
    let found = before.or_else(|| line[at + what.len()..].split_whitespace().find_map(path));
    Some(match found {
        Some(p) => format!("{what} on `{p}`"),
        None => what.to_owned(),
    })
}

/// A toolchain manager's proxy that found no toolchain to run, with what
/// it says: rustup's `error: rustup could not choose a version of cargo to
/// run, …` and `error: toolchain 'nightly-…' is not installed`, pyenv's
/// `pyenv: version `3.11' is not installed`.
fn toolchain_missing(line: &str) -> Option<(String, &'static str)> {
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("error: rustup could not choose a version of ") {
        let tool = rest.split_whitespace().next()?;
        return Some((
            tool.to_owned(),
            "has no toolchain (rustup could not choose one)",
        ));
    }
    if line.starts_with("error: toolchain '") && line.contains("' is not installed") {
        return Some(("rustup".to_owned(), "lacks the toolchain it was asked for"));
    }
    if line.starts_with("pyenv: version `") && line.contains("is not installed") {
        return Some((
            "pyenv".to_owned(),
            "lacks the Python version it was asked for",
        ));
    }
    None
}
