//! Static flags for Rust and Go patches (docs/security.md, "Static flags
//! for Rust and Go"): constructs a compiled patch can use to rewrite what
//! the test runner reports, which no honest fix of a task needs. A Rust or
//! Go test runs in the same process as the code under test, so a patch can
//! shadow the assertion macros the tests expand, run code before `main`
//! (constructor sections), override libc's symbols in the test binary, or
//! take over the process's stdout and rewrite the runner's lines. Each
//! [`TamperRule`] names one family; a flag is a tamper suspect in effect
//! unless the pipeline allows that rule for the task, with a reason.
//!
//! The added content of each file is read as text, its hunks' added lines
//! joined, so a construct split over lines, with comments between its
//! tokens or inside an attribute (`cfg_attr`, `#![…]`) still matches. The
//! comments are taken out by a small lexer that knows the language's
//! strings (Rust's raw strings and char literals, Go's raw strings): a
//! comment opener inside a string cannot hide the code after it. Every
//! pattern is tried on the text with comments and on the text without, so
//! a lexer that disagrees with the compiler can only add matches. Go's
//! directives are comments, so they are matched in the text as written.
//!
//! What is read: the `.rs` and `.go` files (with their `include!` and
//! `#[path]` targets flagged unless they are `.rs` files the scan reads),
//! `Cargo.toml` manifests, and the names of the files a Go build or a
//! linker takes in whole (assembly, `.syso` objects). A binary section on
//! any of those paths hides its content from the scan and is flagged.
//! Test files an arm kept are read without the Go rules honest tests trip
//! (capturing `os.Stdout`, `TestMain(m *testing.M)`): a helper file of the
//! tests kept by a `new-test-files` policy is compiled with them.

use std::sync::LazyLock;

use assay_git::PatchFile;
use regex::Regex;

pub(crate) use crate::model::config::TamperRule;

mod go;
mod rust;
mod scan;

use go::go;
use rust::{manifest, rust};
use scan::{Lang, Views, re};

/// One construct a rule matched: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Flag {
    pub(crate) rule: TamperRule,
    pub(crate) path: String,
    /// 1-based line of the patch the match starts on (0: none, a binary
    /// section).
    pub(crate) patch_line: usize,
    /// The line of the file as the patch leaves it, when [`locate`] found
    /// its hunk.
    pub(crate) line: Option<usize>,
    pub(crate) why: &'static str,
    /// The line, trimmed and cut to a readable length.
    pub(crate) excerpt: String,
}

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = match self.line {
            Some(line) => format!("{}:{line}", self.path),
            None => self.path.clone(),
        };
        write!(
            f,
            "static flag {}: {at} (patch line {}): {}: `{}`",
            self.rule, self.patch_line, self.why, self.excerpt
        )
    }
}

/// How much of a file the flags read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read {
    Not,
    Code,
    /// A test file the arm kept: every rule but those honest tests trip
    /// (a Go test capturing `os.Stdout`, a `TestMain(m *testing.M)`).
    Tests,
}

/// The flags of the patch's sections, each read as `read` says, in patch
/// order, one per rule and file (its first match).
pub(crate) fn flags<'a>(
    files: impl IntoIterator<Item = &'a PatchFile>,
    read: impl Fn(&str) -> Read,
) -> Vec<Flag> {
    let mut out = Vec::new();
    for f in files {
        let path = f.path.path.as_str();
        let how = read(path);
        if f.path.is_deleted || how == Read::Not {
            continue;
        }
        let lang = Lang::of(path);
        // Fixtures a test tree holds (`testdata/`, which Go never builds)
        // may be binary or assembly; code compiled with the tests is read.
        let whole = how == Read::Code;
        if f.is_binary {
            if lang.is_some() || (whole && NATIVE_FILE.is_match(path)) {
                out.push(Flag {
                    rule: TamperRule::BinaryCode,
                    path: path.to_owned(),
                    patch_line: 0,
                line: None,
                    why: "a binary section on a source, manifest or object file: its content escapes the scan",
                    excerpt: path.to_owned(),
                });
            }
            continue;
        }
        if whole && NATIVE_FILE.is_match(path) {
            out.push(Flag {
                rule: TamperRule::GoNativeCode,
                path: path.to_owned(),
                patch_line: f.added.first().map_or(0, |a| a.line),
                line: None,
                why: "assembly or an object file, which `go build` links in whole",
                excerpt: path.to_owned(),
            });
        }
        let Some(lang) = lang else { continue };
        let text: String = f
            .added
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let views = Views::of(&text, lang);
        let mut found = Vec::new();
        match lang {
            Lang::Rust => rust(&views, &mut found),
            Lang::Go => go(&views, &mut found),
            Lang::Manifest => manifest(&views, &mut found),
        }
        if how == Read::Tests {
            found.retain(|(rule, _, _)| {
                !matches!(rule, TamperRule::GoFdRewrite | TamperRule::GoTestingReach)
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        found.sort_by_key(|(_, at, _)| *at);
        for (rule, at, why) in found {
            if !seen.insert(rule) {
                continue;
            }
            // `at` is an offset into a view whose blanked bytes were parts
            // of characters: count bytes, never slice the text there.
            let line = text.as_bytes()[..at.min(text.len())]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            let added = &f.added[line.min(f.added.len().saturating_sub(1))];
            out.push(Flag {
                rule,
                path: path.to_owned(),
                patch_line: added.line,
                line: None,
                why,
                excerpt: excerpt(&added.text),
            });
        }
    }
    out
}

/// Sets each flag's file line from the hunk its patch line is in: the
/// hunk header's new start, plus the context and added lines before it.
/// Walking back from an added line, the first line starting with `@@` is
/// its hunk's header (a hunk's own lines start with ` `, `+`, `-` or `\`).
pub(crate) fn locate(patch: &[u8], flags: &mut [Flag]) {
    // One forward pass to the flags' lines in order (no index of every
    // line: a patch at the cap may hold ten million).
    let mut order: Vec<usize> = (0..flags.len())
        .filter(|&i| flags[i].patch_line > 0)
        .collect();
    order.sort_by_key(|&i| flags[i].patch_line);
    let (mut line, mut pos) = (1usize, 0usize);
    for i in order {
        while line < flags[i].patch_line && pos < patch.len() {
            pos = patch[pos..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(patch.len(), |p| pos + p + 1);
            line += 1;
        }
        let (mut end, mut before) = (pos, 0usize);
        while end > 0 {
            let start = patch[..end - 1]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            let l = &patch[start..end - 1];
            if l.starts_with(b"@@") {
                flags[i].line = new_start(l).map(|s| s + before);
                break;
            }
            if !l.starts_with(b"-") && !l.starts_with(b"\\") {
                before += 1;
            }
            end = start;
        }
    }
}

/// `c` of a hunk header `@@ -a,b +c,d @@`.
fn new_start(header: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(header).ok()?;
    let plus = text.split_whitespace().find(|w| w.starts_with('+'))?;
    plus[1..].split(',').next()?.parse().ok()
}

fn excerpt(line: &str) -> String {
    let t = line.trim();
    match t.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_owned(),
    }
}

/// Files Go's build (or any linker) takes in whole: assembly and objects.
static NATIVE_FILE: LazyLock<Regex> = LazyLock::new(|| re(r"\.(s|S|sx|syso|o|a|so)$"));

#[cfg(test)]
mod tests;
