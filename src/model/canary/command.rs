//! The test command a canary run carries: renamed tests named by their
//! fresh names (with their canaries), and whether it stops at the first
//! failure, where a canary that must fail would stop the real tests.

use std::collections::BTreeMap;

use super::Planted;

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

/// `command` with each test it names by a declared name that the run
/// renamed given that test's fresh name (a check or a rerun of chosen
/// tests). A name declared in several renamed files is given the fresh
/// name of the file whose stem stands in the same word of the command,
/// else left as it is.
///
/// A test named so brings its canaries (its window, its copy: `kin`):
/// the word naming it is written once for it and once for each of them,
/// in the order of their names (fresh, random: the order says nothing),
/// so the command does not tell the original from its window. The
/// canaries it names are then the only ones its reading expects
/// (`selected`): the others' tests did not run.
pub(crate) fn renamed_command(command: &str, planted: &mut Planted) -> String {
    if planted.renamed.is_empty() && planted.kin.is_empty() {
        return command.to_owned();
    }
    let mut fresh_of: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (fresh, orig) in &planted.renamed {
        let file = planted.renamed_in.get(fresh).map_or("", String::as_str);
        fresh_of.entry(orig).or_default().push((fresh, file));
    }
    let mut selected = std::collections::BTreeSet::new();
    let mut named_any = false;
    let words: Vec<String> = command
        .split(' ')
        .map(|word| {
            // The word as pieces of text, with the test it names (at most
            // the first: one selector names one test).
            let mut out = String::new();
            let mut named: Option<(usize, String)> = None;
            let mut rest = word;
            while let Some(start) = rest.find(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                out.push_str(&rest[..start]);
                let tail = &rest[start..];
                let end = tail
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(tail.len());
                let ident = &tail[..end];
                let stem = |file: &str| {
                    let base = file.rsplit('/').next().unwrap_or(file);
                    base.split('.').next().unwrap_or(base).to_owned()
                };
                // A test is the last name of its path (`mod.Class.test`,
                // `file.py::test`): a name followed by `.`, `/` or `:` is
                // a module, a file or a class, even when a test shares it.
                let last = !tail[end..].starts_with(['.', '/', ':']);
                let pick = fresh_of
                    .get(ident)
                    .filter(|_| last)
                    .and_then(|c| match c.as_slice() {
                        [(fresh, _)] => Some(*fresh),
                        many => many
                            .iter()
                            .find(|(_, file)| word.contains(&stem(file)))
                            .map(|(fresh, _)| *fresh),
                    });
                let name = pick.unwrap_or(ident);
                if last && (pick.is_some() || planted.kin.contains_key(name)) && named.is_none() {
                    named = Some((out.len(), name.to_owned()));
                    named_any = true;
                }
                out.push_str(name);
                rest = &tail[end..];
            }
            out.push_str(rest);
            let Some((at, name)) = named else {
                return out;
            };
            let kin = planted.kin.get(&name).map(Vec::as_slice).unwrap_or(&[]);
            if kin.is_empty() {
                return out;
            }
            let mut all: Vec<&str> = kin.iter().map(String::as_str).collect();
            all.push(&name);
            all.sort();
            selected.extend(kin.iter().cloned());
            let (head, tail) = (&out[..at], &out[at + name.len()..]);
            all.iter()
                .map(|n| format!("{head}{n}{tail}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    if named_any {
        planted.selected = Some(selected);
    }
    words.join(" ")
}
