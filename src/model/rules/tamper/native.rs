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

use go::go;
use rust::{manifest, rust};

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lang {
    Rust,
    Go,
    /// `Cargo.toml`.
    Manifest,
}

impl Lang {
    fn of(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path);
        if name.ends_with(".rs") {
            Some(Lang::Rust)
        } else if name.ends_with(".go") {
            Some(Lang::Go)
        } else if name == "Cargo.toml" {
            Some(Lang::Manifest)
        } else {
            None
        }
    }
}

/// Files Go's build (or any linker) takes in whole: assembly and objects.
static NATIVE_FILE: LazyLock<Regex> = LazyLock::new(|| re(r"\.(s|S|sx|syso|o|a|so)$"));

/// The added text of one file, three ways: as written; without comments;
/// without comments and with string contents blanked (for identifier
/// heuristics a message or doc string must not trip). Each keeps the
/// text's offsets and line breaks.
struct Views {
    raw: String,
    code: String,
    bare: String,
}

impl Views {
    fn of(text: &str, lang: Lang) -> Views {
        let (code, bare) = strip(text, lang);
        Views {
            raw: text.to_owned(),
            code,
            bare,
        }
    }

    /// The first match of `r` in the raw or the comment-free text.
    fn find(&self, r: &Regex) -> Option<usize> {
        [&self.raw, &self.code]
            .iter()
            .filter_map(|t| r.find(t).map(|m| m.start()))
            .min()
    }
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("static flag pattern {pattern}: {e}"))
}

/// Comments blanked (`code`), and strings' contents blanked too (`bare`),
/// byte for byte (ASCII spaces for blanked bytes, newlines kept).
fn strip(text: &str, lang: Lang) -> (String, String) {
    let b = text.as_bytes();
    let mut code = b.to_vec();
    let mut bare = b.to_vec();
    let blank = |v: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut v[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut code, i, end);
            blank(&mut bare, i, end);
            i = end;
        } else if c == b'/' && next == Some(b'*') {
            // Rust's block comments nest; Go's do not.
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                if b[j] == b'/' && b.get(j + 1) == Some(&b'*') && (depth == 0 || lang == Lang::Rust)
                {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            let end = j.min(b.len());
            blank(&mut code, i, end);
            blank(&mut bare, i, end);
            i = end;
        } else if c == b'"' {
            // Rust's raw strings: `r"…"`, `r#"…"#`, with a b/c prefix.
            let mut hashes = 0;
            let mut k = i;
            while k > 0 && b[k - 1] == b'#' {
                hashes += 1;
                k -= 1;
            }
            let raw = lang == Lang::Rust
                && k > 0
                && b[k - 1] == b'r'
                && (k < 2
                    || !ident(b[k - 2])
                    || matches!(b[k - 2], b'b' | b'c') && (k < 3 || !ident(b[k - 3])));
            let end = if raw {
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                find(b, i + 1, &close).map_or(b.len(), |p| p + close.len())
            } else {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                (j + 1).min(b.len())
            };
            blank(
                &mut bare,
                (i + 1).min(end),
                end.saturating_sub(1).max(i + 1),
            );
            i = end;
        } else if c == b'`' && lang == Lang::Go {
            let end = b[i + 1..]
                .iter()
                .position(|&c| c == b'`')
                .map_or(b.len(), |p| i + 2 + p);
            blank(
                &mut bare,
                (i + 1).min(end),
                end.saturating_sub(1).max(i + 1),
            );
            i = end;
        } else if c == b'\'' {
            // A char literal is `'x'` or `'\…'` (the escaped character
            // itself may be a quote: `'\''`, and `\u{…}` is the longest);
            // a Rust lifetime is not.
            let end = if next == Some(b'\\') {
                b.get(i + 3..)
                    .and_then(|rest| rest.iter().take(10).position(|&c| c == b'\''))
                    .map(|p| i + 4 + p)
            } else {
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
            };
            match end {
                Some(end) => {
                    blank(&mut bare, i + 1, end - 1);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    let s = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
    (s(code), s(bare))
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

type Found = Vec<(TamperRule, usize, &'static str)>;

struct Pattern {
    rule: TamperRule,
    re: Regex,
    why: &'static str,
}

fn pattern(rule: TamperRule, re_: &str, why: &'static str) -> Pattern {
    Pattern {
        rule,
        re: re(re_),
        why,
    }
}

/// Where `r` first matches inside the brace-delimited bodies opened at
/// `opens` (ascending offsets of `{`; an unclosed one runs to the end). In
/// time linear in the text however many bodies nest or stay open (a patch
/// of 100,000 unclosed `extern {` must not cost 100,000 scans to the end):
/// text already searched is not searched again, but for a window of a
/// match's length at the seam.
fn in_bodies(text: &str, opens: impl Iterator<Item = usize>, r: &Regex) -> Option<usize> {
    const SEAM: usize = 256;
    let mut close = std::collections::BTreeMap::new();
    let mut stack = Vec::new();
    for (i, c) in text.bytes().enumerate() {
        match c {
            b'{' => stack.push(i),
            b'}' => {
                if let Some(open) = stack.pop() {
                    close.insert(open, i + 1);
                }
            }
            _ => {}
        }
    }
    let mut searched = 0usize;
    for open in opens {
        let end = close.get(&open).copied().unwrap_or(text.len());
        let mut start = open.max(searched.saturating_sub(SEAM));
        while !text.is_char_boundary(start) {
            start += 1;
        }
        if start < end
            && let Some(m) = r.find(&text[start..end])
        {
            return Some(start + m.start());
        }
        searched = searched.max(end);
    }
    None
}

#[cfg(test)]
mod tests;
