//! Whether a test command stops at its first failure, where a canary that
//! must fail would stop the real tests.

/// The flag of `command` that stops a run at its first failure, if any.
///
/// Long flags count wherever they stand. The short `-x` and `-f` are also
/// the shell's own words (`rm -f`, `[ -f file ]`, `set -x`, `tar -x`), and
/// wrappers such as assay's own Deep-SWE script are full of them: a short
/// flag counts only in a clause whose program is not one of those
/// utilities. A clause starts after a shell separator or a quote; one that
/// starts with a flag continues the clause before it (`pytest -k "a" -x`).
pub(super) fn stops_at_first_failure(command: &str) -> Option<&str> {
    let mut program = "";
    for clause in command.split(['\n', ';', '&', '|', '\'', '"', '(', ')', '`', '{', '}']) {
        let mut at_start = true;
        for w in clause.split_whitespace() {
            let prefix = is_assignment(w) || SHELL_KEYWORDS.contains(&w);
            if at_start && !prefix && !w.starts_with('-') {
                program = w.rsplit('/').next().unwrap_or(w);
            }
            at_start &= prefix;
            let flag = match w {
                "-x" | "-f" => !NOT_RUNNERS.contains(&program),
                "--exitfirst" | "--failfast" | "-failfast" | "--fail-fast" | "--bail"
                | "--test-fail-fast" => true,
                _ => w.starts_with("--maxfail") || w.starts_with("-failfast="),
            };
            if flag {
                return Some(w);
            }
        }
    }
    None
}

/// Words before a clause's program.
const SHELL_KEYWORDS: &[&str] = &[
    "if", "then", "elif", "else", "while", "until", "do", "!", "time", "env", "nohup",
];

/// Programs whose `-x` or `-f` is not a test runner's fail-fast flag.
const NOT_RUNNERS: &[&str] = &[
    "[", "[[", "test", "rm", "cp", "mv", "ln", "mkdir", "touch", "chmod", "chown", "tar", "set",
    "bash", "sh", "grep", "sed", "cut", "tail", "head", "sort", "uniq", "xargs", "find", "kill",
    "pkill", "ps", "git", "curl", "export", "source", ".", "echo", "printf", "cat", "tee", "cd",
    "exec", "command", "type", "hash", "readlink", "realpath", "stat",
];

/// Whether a shell word is a variable assignment (`A=b`) before a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
    })
}
