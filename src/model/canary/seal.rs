//! Sealed expectations: the answer never enters the sandbox
//! (docs/security.md, "Sealed expectations").
//!
//! A window of mutants hides a test's expected value among wrong ones; code
//! that reads the test at run time (its caller's frame, `runtime.Caller`,
//! `#[track_caller]`, a stack trace) can often tell the right one. A seal
//! takes the value out of the tree instead. Where an assertion compares a
//! computed value with an expected *literal* —
//!
//! - Python: `self.assertEqual(A, E)` / `assertEquals`, `assert A == E`;
//! - JavaScript: `assert.strictEqual(A, E)` / `deepStrictEqual`,
//!   `expect(A).toBe(E)` / `toEqual` / `toStrictEqual`;
//! - Go: `if A != E {`, testify's `assert.Equal(t, E, A)` / `require.Equal`;
//! - Rust: `assert_eq!(A, E)` —
//!
//! the graded tree's copy of the line hands `A` to assay through the
//! run's seal channel (a line `[assay-seal] TOKEN<TAB>VALUE` on descriptor
//! 9, the output pipe assay drains, `VALUE` written in the language's own
//! literal syntax by a helper appended to the file) and compares two
//! copies of one sentinel, so the assertion passes locally. The expected
//! literal stays on the task record. After the run assay compares every
//! reported value with it by the language's equality ([`Lit::equals`]): a
//! test passes only if its runner passed it **and** every sealed site of it
//! matched. A sealed site that a passing test never reported, a report of a
//! token nobody planted, a value the reader cannot read: forged, the
//! agent's.
//!
//! A site is sealed only where its literal is read whole ([`Lit::parse`]),
//! the assertion sits on one line, and none of the value's scalars stands
//! in a string or comment elsewhere in the test (a message that repeats the
//! value would give it away). Certification reads the sealed gold tree once
//! ([`certified_seals`]): a site is kept only where its test passed and
//! every report of it matched.

use std::collections::{BTreeMap, BTreeSet};

use assay_report::Outcome;
use serde::{Deserialize, Serialize};

use super::lit::Lit;
use super::shape::{Lang, Rng};
use super::source::{Block, Part, SealSite, TestRef, blanked, blocks, parts, top_level_args};
use crate::words::words;

/// What starts a seal report on the run's output.
pub(crate) const MARK: &[u8] = b"[assay-seal] ";

/// The longest value a seal carries: longer ones are not sealed (one
/// `write` of a line up to the pipe's atomic size keeps reports of
/// threads apart).
const MAX_VALUE: usize = 3000;

/// At most this many reports are read from one run.
const MAX_REPORTS: usize = 100_000;

/// A certified seal, on the task record (so in its digest).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Seal {
    pub(crate) of: TestRef,
    /// The assertion's line (from the test's first line) and the byte
    /// offset of its expected literal.
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) expected: String,
    /// Whether `of` is a FAIL_TO_PASS test of the task (set by the task).
    #[serde(default)]
    pub(crate) fail_to_pass: bool,
}

/// A seal planted in one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    pub(crate) token: String,
    pub(crate) file: String,
    /// The report name of the test it is in (a fresh name in a graded run).
    pub(crate) test: String,
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) expected: String,
}

words! {
    /// What a run made of a sealed site of a test its runner passed.
    pub(crate) enum SealOutcome {
        Matched = "matched",
        /// A reported value differs from the expected one: a wrong answer.
        Mismatched = "mismatched",
        /// The test passed without reporting the site: forged.
        Missing = "missing",
        /// A report the reader cannot read, or of a token no site had:
        /// forged.
        Malformed = "malformed",
    }
}

/// A sealed site of a test the runner passed, once read back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SealReading {
    pub(crate) file: String,
    pub(crate) test: String,
    pub(crate) line: u32,
    pub(crate) expected: String,
    /// The values reported (the first few).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) got: Vec<String>,
    pub(crate) outcome: SealOutcome,
}

/// The test functions of `text` ([`blocks`]) with their sealable
/// assertions.
pub(crate) fn sealed_blocks(lang: Lang, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = blocks(lang, text);
    for b in &mut out {
        b.seals = sites(lang, &lines[b.start..b.end], b.def_line - b.start);
    }
    out
}

/// The sealable assertions of a block's lines (`def_at`: the line of its
/// `def`/`fn`/`it(`; sites are after it, or on it for a one-line `it`).
pub(crate) fn sites(lang: Lang, block: &[&str], def_at: usize) -> Vec<SealSite> {
    let code: Vec<String> = block.iter().map(|l| code_of(lang, l)).collect();
    let mut out = Vec::new();
    for (n, line) in block.iter().enumerate().skip(def_at) {
        if n == def_at && lang != Lang::Js {
            continue;
        }
        let Some((actual, expected)) = site_in(lang, &code[n]) else {
            continue;
        };
        // A comment after the assertion is not part of its expected side.
        let expected = (expected.0, expected.1.min(comment_start(lang, line)));
        let (actual, expected) = (trim(line, actual), trim(line, expected));
        if actual.0 >= actual.1 {
            continue;
        }
        let text = &line[expected.0..expected.1];
        let Some(value) = Lit::parse(lang, text) else {
            continue;
        };
        let Some(scrub) = spelled_elsewhere(lang, block, n, expected, &value) else {
            continue;
        };
        out.push(SealSite {
            line: n,
            actual,
            expected,
            text: text.to_owned(),
            scrub,
        });
    }
    out
}

/// A line's code: strings and comments blanked, offsets kept.
fn code_of(lang: Lang, line: &str) -> String {
    let mut out = line.as_bytes().to_vec();
    for (part, from, to) in parts(lang, line) {
        if part != Part::Code {
            out[from..to].fill(b' ');
        }
    }
    // Only whole characters were blanked: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| " ".repeat(line.len()))
}

/// Where a line's trailing comment starts (its length when it has none).
fn comment_start(lang: Lang, line: &str) -> usize {
    parts(lang, line)
        .iter()
        .find(|(part, _, _)| *part == Part::Comment)
        .map_or(line.len(), |(_, from, _)| *from)
}

fn trim(line: &str, (s, e): (usize, usize)) -> (usize, usize) {
    let part = &line[s..e];
    let lead = part.len() - part.trim_start().len();
    (s + lead, s + part.trim_end().len())
}

/// Where a line of code holds a sealable assertion: the byte ranges of its
/// computed and expected sides.
type Sides = ((usize, usize), (usize, usize));

fn site_in(lang: Lang, code: &str) -> Option<Sides> {
    match lang {
        Lang::Unittest | Lang::Pytest => python_site(code),
        Lang::Js => js_site(code),
        Lang::Go => go_site(code),
        Lang::Rust => {
            let at = code.find("assert_eq!(")? + "assert_eq!(".len();
            let args = top_level_args(code, at)?;
            (args.len() >= 2 && statement_ends(code, args.last()?.1)).then(|| (args[0], args[1]))
        }
    }
}

/// Whether nothing but the call's close (and `;`) follows `at`, the end
/// of its last argument.
fn statement_ends(code: &str, at: usize) -> bool {
    let rest = code[at..].trim();
    matches!(rest, ")" | ");" | ")," | "))" | "));")
}

fn python_site(code: &str) -> Option<Sides> {
    for m in [".assertEqual(", ".assertEquals("] {
        if let Some(p) = code.find(m) {
            let args = top_level_args(code, p + m.len())?;
            let ok = (2..=3).contains(&args.len())
                && statement_ends(code, args.last()?.1)
                && code[..p].trim() == "self";
            return ok.then(|| (args[0], args[1]));
        }
    }
    let t = code.trim_start();
    let head = t.strip_prefix("assert ")?;
    let from = code.len() - head.len();
    let parts = top_level_split(code, from, code.len(), ",");
    let end = parts.first()?.1;
    if bracket_open(code) {
        return None;
    }
    let eqs = top_level_split(code, from, end, "==");
    let [(a0, a1), (e0, e1)] = eqs.as_slice() else {
        return None;
    };
    let actual = &code[*a0..*a1];
    let plain = !actual.split_whitespace().any(|w| {
        matches!(
            w,
            "not" | "and" | "or" | "in" | "is" | "if" | "else" | "lambda"
        )
    }) && !["<", ">", "!="].iter().any(|op| actual.contains(op));
    plain.then_some(((*a0, *a1), (*e0, *e1)))
}

fn js_site(code: &str) -> Option<Sides> {
    for m in ["assert.strictEqual(", "assert.deepStrictEqual("] {
        if let Some(p) = code.find(m) {
            let args = top_level_args(code, p + m.len())?;
            let ok = (2..=3).contains(&args.len()) && statement_ends(code, args.last()?.1);
            return ok.then(|| (args[0], args[1]));
        }
    }
    for m in [".toBe(", ".toEqual(", ".toStrictEqual("] {
        if let Some(p) = code.find(m) {
            let args = top_level_args(code, p + m.len())?;
            if args.len() != 1 || !statement_ends(code, args[0].1) {
                return None;
            }
            // `expect(A)` right before the matcher.
            let close = p.checked_sub(1)?;
            (code.as_bytes()[close] == b')').then_some(())?;
            let open = matching_open(code, close)?;
            code[..open].trim_end().ends_with("expect").then_some(())?;
            return Some(((open + 1, close), args[0]));
        }
    }
    None
}

fn go_site(code: &str) -> Option<Sides> {
    let t = code.trim_start();
    if let Some(head) = t.strip_prefix("if ") {
        let from = code.len() - head.len();
        let brace = code.rfind(" {")?;
        if code[brace + 2..].trim() != "" {
            return None;
        }
        // `if v := f(); v != E {`: the condition after the `;`.
        let from = top_level_split(code, from, brace, ";").last()?.0;
        let cond = &code[from..brace];
        if cond.contains("&&") || cond.contains("||") || cond.contains("==") {
            return None;
        }
        let sides = top_level_split(code, from, brace, "!=");
        let [a, e] = sides.as_slice() else {
            return None;
        };
        let actual = &code[a.0..a.1];
        if actual.contains('<') || actual.contains('>') || actual.trim_start().starts_with('!') {
            return None;
        }
        return Some((*a, *e));
    }
    for m in ["assert.Equal(", "require.Equal("] {
        if let Some(p) = code.find(m) {
            let args = top_level_args(code, p + m.len())?;
            let ok = args.len() >= 3 && statement_ends(code, args.last()?.1);
            return ok.then(|| (args[2], args[1]));
        }
    }
    None
}

/// `code[from..to]` split at each top-level `sep` (outside brackets).
fn top_level_split(code: &str, from: usize, to: usize, sep: &str) -> Vec<(usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = from;
    let mut k = from;
    while k < to {
        match b[k] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ if depth == 0 && code[k..to].starts_with(sep) => {
                // `==` is not part of `!=`, `<=`, `>=` or `===`.
                let prev = k.checked_sub(1).map(|p| b[p]);
                let next = b.get(k + sep.len()).copied();
                let part_of_other = sep == "=="
                    && (matches!(prev, Some(b'!' | b'<' | b'>' | b'=')) || next == Some(b'='));
                if !part_of_other {
                    out.push((start, k));
                    k += sep.len();
                    start = k;
                    continue;
                }
            }
            _ => {}
        }
        k += 1;
    }
    out.push((start, to));
    out
}

fn bracket_open(code: &str) -> bool {
    let mut d = 0i32;
    for c in code.bytes() {
        match c {
            b'(' | b'[' | b'{' => d += 1,
            b')' | b']' | b'}' => d -= 1,
            _ => {}
        }
    }
    d != 0 || code.trim_end().ends_with('\\')
}

fn matching_open(code: &str, close: usize) -> Option<usize> {
    let b = code.as_bytes();
    let mut d = 0;
    for k in (0..=close).rev() {
        match b[k] {
            b')' => d += 1,
            b'(' => {
                d -= 1;
                if d == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Where a scalar of `value` stands in a string or comment of the test
/// outside the site's own literal: in a message (a failure message's
/// string, a comment) each place is scrubbed with the seal; anywhere else
/// (an input) the value is the test's own and the site is not sealed
/// (`None`).
fn spelled_elsewhere(
    lang: Lang,
    block: &[&str],
    at: usize,
    expected: (usize, usize),
    value: &Lit,
) -> Option<Vec<(usize, usize, usize)>> {
    let scalars: Vec<String> = value
        .scalars()
        .into_iter()
        .filter(|s| !s.trim().is_empty())
        .collect();
    let mut scrub = Vec::new();
    for (n, line) in block.iter().enumerate() {
        let code = code_of(lang, line);
        let messages = message_ranges(lang, &code);
        let comment = comment_start(lang, line);
        for s in &scalars {
            for (i, j) in token_places(line, s) {
                // Only what the code view blanked: strings and comments.
                let blanked = code.as_bytes()[i..j].iter().all(|c| *c == b' ');
                let own = n == at && i < expected.1 && j > expected.0;
                if !blanked || own {
                    continue;
                }
                let in_message = i >= comment || messages.iter().any(|(a, b)| i >= *a && j <= *b);
                if !in_message {
                    return None;
                }
                scrub.push((n, i, j));
            }
        }
    }
    scrub.sort_unstable();
    scrub.dedup();
    Some(scrub)
}

/// The byte ranges of a line's code that are failure messages: what a
/// test prints when it fails, never what it computes.
fn message_ranges(lang: Lang, code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let args_from = |out: &mut Vec<(usize, usize)>, at: usize, skip: usize| {
        let end =
            top_level_args(code, at).map_or(code.len(), |a| a.last().map_or(code.len(), |l| l.1));
        match top_level_args(code, at) {
            Some(args) => {
                if let (Some(first), Some(last)) = (args.get(skip), args.last()) {
                    out.push((first.0, last.1));
                }
            }
            None if skip == 0 => out.push((at, end)),
            None => {}
        }
    };
    let calls: &[(&str, usize)] = match lang {
        Lang::Unittest | Lang::Pytest => &[
            ("self.assertEqual(", 2),
            ("self.assertEquals(", 2),
            ("self.assertTrue(", 1),
            ("self.assertFalse(", 1),
            ("self.fail(", 0),
            ("print(", 0),
        ],
        Lang::Js => &[
            ("assert.strictEqual(", 2),
            ("assert.deepStrictEqual(", 2),
            ("assert.equal(", 2),
            ("assert.ok(", 1),
            ("assert(", 1),
            ("new Error(", 0),
            ("console.log(", 0),
        ],
        Lang::Go => &[
            (".Fatalf(", 0),
            (".Errorf(", 0),
            (".Fatal(", 0),
            (".Error(", 0),
            (".Logf(", 0),
            (".Log(", 0),
            (".Skipf(", 0),
            ("assert.Equal(", 3),
            ("require.Equal(", 3),
        ],
        Lang::Rust => &[
            ("assert_eq!(", 2),
            ("assert_ne!(", 2),
            ("assert!(", 1),
            ("panic!(", 0),
            ("println!(", 0),
            ("eprintln!(", 0),
        ],
    };
    for (call, skip) in calls {
        let mut from = 0;
        while let Some(p) = code[from..].find(call).map(|p| from + p) {
            args_from(&mut out, p + call.len(), *skip);
            from = p + call.len();
        }
    }
    // Python's `assert X, MSG`.
    if matches!(lang, Lang::Unittest | Lang::Pytest)
        && let Some(head) = code.trim_start().strip_prefix("assert ")
    {
        let from = code.len() - head.len();
        let parts = top_level_split(code, from, code.len(), ",");
        if parts.len() > 1 {
            out.push((parts[1].0, code.len()));
        }
    }
    out
}

/// The places `s` stands in `text` as a whole token.
fn token_places(text: &str, s: &str) -> Vec<(usize, usize)> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(s).map(|i| from + i) {
        let before = text[..i].chars().next_back();
        let after = text[i + s.len()..].chars().next();
        let edges = s.starts_with(|c: char| c.is_alphanumeric()) && word(before)
            || s.ends_with(|c: char| c.is_alphanumeric()) && word(after);
        if !edges {
            out.push((i, i + s.len()));
        }
        from = i + s.len().max(1);
    }
    out
}

/// A fresh token for one planted seal.
pub(crate) fn token(rng: &mut Rng) -> String {
    format!("{:016x}", rng.next())
}

/// The edits that seal `site` under `token` (line, byte range, new
/// text): the computed side handed to assay, the expected side the
/// sentinel, every place its value stands in a message `<sealed>`.
pub(crate) fn site_edits(
    lang: Lang,
    line: &str,
    site: &SealSite,
    token: &str,
) -> Vec<(usize, usize, usize, String)> {
    let actual = &line[site.actual.0..site.actual.1];
    let (call, sentinel) = match lang {
        Lang::Unittest | Lang::Pytest => (
            format!("__assay_seal__(\"{token}\", {actual})"),
            "__assay_sealed__".to_owned(),
        ),
        Lang::Js => (
            format!("__assaySeal(\"{token}\", {actual})"),
            "__assaySealed".to_owned(),
        ),
        Lang::Go => (
            format!("assaySeal(\"{token}\", {actual})"),
            "assaySealed".to_owned(),
        ),
        Lang::Rust => (
            format!("{{ __assay_seal!(\"{token}\", {actual}); 0u8 }}"),
            "0u8".to_owned(),
        ),
    };
    let mut out = vec![
        (site.line, site.actual.0, site.actual.1, call),
        (site.line, site.expected.0, site.expected.1, sentinel),
    ];
    out.extend(
        site.scrub
            .iter()
            .map(|(l, s, e)| (*l, *s, *e, "<sealed>".to_owned())),
    );
    out
}

/// `body` with `edits` applied (each once; an edit overlapping one already
/// made is left out), later ranges of a line first so earlier ones keep
/// their offsets.
pub(crate) fn apply_edits(body: &mut [String], mut edits: Vec<(usize, usize, usize, String)>) {
    edits.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
    edits.dedup_by(|a, b| (a.0, a.1, a.2) == (b.0, b.1, b.2));
    let mut done: Option<(usize, usize)> = None;
    for (l, s, e, text) in edits {
        let Some(line) = body.get_mut(l) else {
            continue;
        };
        if done.is_some_and(|(dl, ds)| dl == l && e > ds) || e > line.len() {
            continue;
        }
        line.replace_range(s..e, &text);
        done = Some((l, s));
    }
}

/// `line` with the site sealed under `token` (a site with nothing to
/// scrub elsewhere).
#[cfg(test)]
pub(crate) fn seal_line(lang: Lang, line: &str, site: &SealSite, token: &str) -> String {
    let mut body = vec![line.to_owned()];
    let edits = site_edits(lang, line, site, token)
        .into_iter()
        .map(|(_, s, e, t)| (0, s, e, t))
        .collect();
    apply_edits(&mut body, edits);
    body.remove(0)
}

/// The names the helper declares: a file that already uses one is not
/// sealed.
fn helper_names(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Unittest | Lang::Pytest => &["__assay_seal__", "__assay_sealed__"],
        Lang::Js => &["__assaySeal", "__assaySealed"],
        Lang::Go => &[
            "assaySeal",
            "assaySealed",
            "assaySealedT",
            "assaySealOut",
            "assayos",
            "assayreflect",
            "assaystrconv",
        ],
        Lang::Rust => &["__assay_seal"],
    }
}

/// Whether the file, or a file beside it, already uses a name the helper
/// declares: then it is not sealed.
pub(crate) fn clashes(lang: Lang, text: &str, beside: &str) -> bool {
    helper_names(lang)
        .iter()
        .any(|n| text.contains(n) || beside.contains(n))
}

/// `text` (a sealed file's lines) with the helper that writes the seal
/// reports added where the language needs it.
pub(crate) fn with_helper(lang: Lang, text: &str) -> String {
    match lang {
        Lang::Unittest | Lang::Pytest => {
            // Before a script's `if __name__ == "__main__":`, which runs
            // the tests when the file is the program.
            match text.find("\nif __name__") {
                Some(at) => format!("{}\n{PYTHON_HELPER}\n{}", &text[..at], &text[at..]),
                None => format!("{text}\n{PYTHON_HELPER}"),
            }
        }
        Lang::Js => format!("{text}\n{JS_HELPER}"),
        Lang::Go => {
            let mut out = String::new();
            let mut done = false;
            for line in text.lines() {
                out.push_str(line);
                out.push('\n');
                if !done && line.starts_with("package ") {
                    out.push_str(GO_IMPORTS);
                    done = true;
                }
            }
            format!("{out}\n{GO_HELPER}")
        }
        Lang::Rust => {
            let lines: Vec<&str> = text.lines().collect();
            let at = rust_items_start(&lines);
            let mut out = String::new();
            for (n, line) in lines.iter().enumerate() {
                if n == at {
                    out.push_str(RUST_HELPER);
                }
                out.push_str(line);
                out.push('\n');
            }
            if at >= lines.len() {
                out.push_str(RUST_HELPER);
            }
            out
        }
    }
}

/// The first line of a Rust file after its inner attributes and doc
/// comments: where an item may go.
fn rust_items_start(lines: &[&str]) -> usize {
    let mut depth = 0i32;
    for (n, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let skip = depth > 0 || t.is_empty() || t.starts_with("#![") || t.starts_with("//");
        let code = blanked(line, false);
        for c in code.bytes() {
            match c {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ => {}
            }
        }
        if !skip {
            return n;
        }
    }
    lines.len()
}

const PYTHON_HELPER: &str = r#"

def __assay_seal__(token, value):
    import os
    import stat

    def enc(v, depth):
        t = type(v)
        if depth > 32:
            raise ValueError("deep")
        if v is None or t is bool or t is int or t is float or t is str or t is bytes:
            return repr(v)
        if t is list:
            return "[" + ", ".join(enc(x, depth + 1) for x in v) + "]"
        if t is tuple:
            return "(" + "".join(enc(x, depth + 1) + ", " for x in v) + ")"
        if t is dict:
            return "{" + ", ".join(enc(k, depth + 1) + ": " + enc(x, depth + 1) for k, x in v.items()) + "}"
        if t is set or t is frozenset:
            return "{" + ", ".join(sorted(enc(x, depth + 1) for x in v)) + "}" if v else "set()"
        raise TypeError(t.__name__)

    try:
        text = enc(value, 0)
    except Exception:
        text = "?" + type(value).__name__
    line = ("\n[assay-seal] %s\t%s\n" % (token, text)).encode("utf-8", "backslashreplace")
    # The channel (descriptor 9, the run's output pipe), unless this is a
    # runner's worker started without it (pytest-xdist): its stderr then.
    fd = 2
    if "PYTEST_XDIST_WORKER" not in os.environ:
        try:
            given = int(os.environ.get("ASSAY_AUDIT_FD", "2"))
            mode = os.fstat(given).st_mode
            if stat.S_ISFIFO(mode) or stat.S_ISREG(mode):
                fd = given
        except (OSError, ValueError):
            fd = 2
    while line:
        line = line[os.write(fd, line):]
    return __assay_sealed__


__assay_sealed__ = object()
"#;

const JS_HELPER: &str = r#"
function __assaySeal(token, value) {
  const enc = (v, d) => {
    if (d > 32) throw new Error("deep");
    if (v === null) return "null";
    if (v === undefined) return "undefined";
    const t = typeof v;
    if (t === "number") return Object.is(v, -0) ? "-0" : String(v);
    if (t === "string") return JSON.stringify(v);
    if (t === "boolean") return String(v);
    if (Array.isArray(v) && Object.getPrototypeOf(v) === Array.prototype)
      return "[" + Array.from(v, (x) => enc(x, d + 1)).join(", ") + "]";
    if (t === "object" && Object.getPrototypeOf(v) === Object.prototype)
      return "{" + Object.keys(v).map((k) => JSON.stringify(k) + ": " + enc(v[k], d + 1)).join(", ") + "}";
    throw new Error("not a literal");
  };
  let text;
  try { text = enc(value, 0); } catch (e) { text = "?" + typeof value; }
  const fs = typeof process.getBuiltinModule === "function" ? process.getBuiltinModule("fs") : require("fs");
  const line = "\n[assay-seal] " + token + "\t" + text + "\n";
  // The channel (descriptor 9, the run's output pipe) is this process's
  // unless it is a runner's worker, whose inherited descriptors Node does
  // not pass on: a worker writes to its stderr, which its runner relays
  // (assay's `node --test` reporter hands the line over).
  const worker = process.env.NODE_TEST_CONTEXT || process.env.JEST_WORKER_ID ||
    (process.env.VITEST_WORKER_ID && typeof process.send === "function");
  let out = 2;
  if (!worker) {
    try {
      const st = fs.fstatSync(Number(process.env.ASSAY_AUDIT_FD || 2));
      if (st.isFIFO() || st.isFile()) out = Number(process.env.ASSAY_AUDIT_FD || 2);
    } catch (e) { out = 2; }
  }
  fs.writeSync(out, line);
  return __assaySealed;
}
function __assaySealed() {}
"#;

const GO_IMPORTS: &str =
    "\nimport (\n\tassayos \"os\"\n\tassayreflect \"reflect\"\n\tassaystrconv \"strconv\"\n)\n";

const GO_HELPER: &str = r#"
type assaySealedT struct{}

var assaySealed interface{} = assaySealedT{}

var assaySealOut = func() *assayos.File {
	fd, err := assaystrconv.Atoi(assayos.Getenv("ASSAY_AUDIT_FD"))
	if err != nil {
		fd = 2
	}
	return assayos.NewFile(uintptr(fd), "assay-seal")
}()

func assaySeal(token string, v interface{}) interface{} {
	var text string
	rv := assayreflect.ValueOf(v)
	switch rv.Kind() {
	case assayreflect.Bool:
		text = assaystrconv.FormatBool(rv.Bool())
	case assayreflect.Int, assayreflect.Int8, assayreflect.Int16, assayreflect.Int32, assayreflect.Int64:
		text = assaystrconv.FormatInt(rv.Int(), 10)
	case assayreflect.Uint, assayreflect.Uint8, assayreflect.Uint16, assayreflect.Uint32, assayreflect.Uint64, assayreflect.Uintptr:
		text = assaystrconv.FormatUint(rv.Uint(), 10)
	case assayreflect.Float32:
		text = assaystrconv.FormatFloat(rv.Float(), 'g', -1, 32)
	case assayreflect.Float64:
		text = assaystrconv.FormatFloat(rv.Float(), 'g', -1, 64)
	case assayreflect.String:
		text = assaystrconv.Quote(rv.String())
	case assayreflect.Invalid:
		text = "?nil"
	default:
		text = "?" + rv.Type().String()
	}
	_, _ = assaySealOut.Write([]byte("\n[assay-seal] " + token + "\t" + text + "\n"))
	return assaySealed
}
"#;

const RUST_HELPER: &str = r#"#[allow(unused_macros)]
macro_rules! __assay_seal {
    ($token:expr, $value:expr) => {{
        let __assay_value = &$value;
        let __assay_line = ::std::format!("\n[assay-seal] {}\t{:?}\n", $token, __assay_value);
        let __assay_fd: i32 = ::std::env::var("ASSAY_AUDIT_FD")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2);
        // The run's output pipe, inherited: borrowed, never closed. (A pipe
        // cannot be opened again through /proc by another uid.)
        #[allow(unsafe_code)]
        let mut __assay_out = ::std::mem::ManuallyDrop::new(unsafe {
            <::std::fs::File as ::std::os::fd::FromRawFd>::from_raw_fd(__assay_fd)
        });
        let _ = ::std::io::Write::write_all(&mut *__assay_out, __assay_line.as_bytes());
    }};
}

"#;

/// The lines a channel wrote into a run's output `log` (each `\n`, `mark`,
/// its text, `\n`, written at once), with whether each ended whole, and
/// the output without them. What was written cannot be taken back, so
/// every occurrence of the mark counts wherever it falls (one cut short by
/// the end of the log or by another mark too); a newline before a mark is
/// the writer's own. The guard's audit findings and the seal reports share
/// the pipe this way.
pub(crate) fn channel_lines(log: &[u8], mark: &[u8]) -> (Vec<(String, bool)>, Vec<u8>) {
    let mut found = Vec::new();
    let mut rest = Vec::with_capacity(log.len());
    let mut at = 0;
    while let Some(i) = find(&log[at..], mark).map(|i| at + i) {
        let start = if i > at && log[i - 1] == b'\n' {
            i - 1
        } else {
            i
        };
        rest.extend_from_slice(&log[at..start]);
        let body = i + mark.len();
        let end = [find(&log[body..], b"\n"), find(&log[body..], mark)]
            .into_iter()
            .flatten()
            .min()
            .map_or(log.len(), |n| body + n);
        let whole = log.get(end) == Some(&b'\n');
        if found.len() < MAX_REPORTS {
            found.push((String::from_utf8_lossy(&log[body..end]).into_owned(), whole));
        }
        at = if whole { end + 1 } else { end };
    }
    rest.extend_from_slice(&log[at..]);
    (found, rest)
}

/// The seal reports in a run's output `log`, each `(token, value)` in
/// order of arrival (a line cut short or without a tab has an empty token),
/// and the output without them.
pub(crate) fn reports(log: &[u8]) -> (Vec<(String, String)>, Vec<u8>) {
    let (lines, rest) = channel_lines(log, MARK);
    let found = lines
        .into_iter()
        .map(|(line, whole)| match line.split_once('\t') {
            Some((t, v)) if whole => (t.to_owned(), v.to_owned()),
            _ => (String::new(), line),
        })
        .collect();
    (found, rest)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// What a run's seal reports make of its tests: each test whose runner
/// passed it is held to its sealed sites. `tests`: the reading's outcomes
/// by report id (fresh names); a test with a mismatched site becomes
/// failed there. Returns every sealed site of a passed test that did not
/// match (and a malformed or unplanted report), for the run record.
pub(crate) fn judge(
    planted: &[Sealed],
    reports: &[(String, String)],
    lang_of: impl Fn(&str) -> Option<Lang>,
    tests: &mut BTreeMap<String, Outcome>,
) -> Vec<SealReading> {
    let mut by_token: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut out = Vec::new();
    let known: BTreeSet<&str> = planted.iter().map(|s| s.token.as_str()).collect();
    for (token, value) in reports {
        if known.contains(token.as_str()) {
            by_token.entry(token).or_default().push(value);
        } else {
            out.push(SealReading {
                file: String::new(),
                test: String::new(),
                line: 0,
                expected: String::new(),
                got: vec![cap(&format!("{token}\t{value}"))],
                outcome: SealOutcome::Malformed,
            });
        }
    }
    // Sites by the test they are in.
    let mut by_test: BTreeMap<&str, Vec<&Sealed>> = BTreeMap::new();
    for s in planted {
        by_test.entry(&s.test).or_default().push(s);
    }
    for (test, seals) in by_test {
        let ids: Vec<String> = tests
            .keys()
            .filter(|id| super::reading::names_test(id, test))
            .cloned()
            .collect();
        let passed = !ids.is_empty() && ids.iter().all(|id| tests[id] == Outcome::Passed);
        if !passed {
            continue;
        }
        let mut wrong = false;
        for s in seals {
            let got = by_token
                .get(s.token.as_str())
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let lang = lang_of(&s.file);
            let expected = lang.and_then(|l| Lit::parse(l, &s.expected));
            let outcome = match (lang, expected) {
                _ if got.is_empty() => SealOutcome::Missing,
                (Some(l), Some(e)) => {
                    let values: Option<Vec<Lit>> = got.iter().map(|v| read_value(l, v)).collect();
                    match values {
                        None => SealOutcome::Malformed,
                        Some(v) if v.iter().all(|v| e.equals(v, l)) => SealOutcome::Matched,
                        Some(_) => SealOutcome::Mismatched,
                    }
                }
                _ => SealOutcome::Malformed,
            };
            if outcome == SealOutcome::Matched {
                continue;
            }
            wrong = true;
            out.push(SealReading {
                file: s.file.clone(),
                test: s.test.clone(),
                line: s.line,
                expected: s.expected.clone(),
                got: got.iter().take(3).map(|v| cap(v)).collect(),
                outcome,
            });
        }
        if wrong {
            for id in ids {
                tests.insert(id, Outcome::Failed);
            }
        }
    }
    out
}

/// A reported value: `?type` (the encoder's word for a value that is no
/// literal) reads as a value that equals nothing.
fn read_value(lang: Lang, v: &str) -> Option<Lit> {
    if v.starts_with('?') && v.len() < 200 {
        return Some(Lit::Tuple(vec![Lit::Str(v.to_owned()), Lit::Undefined]));
    }
    Lit::parse(lang, v)
}

fn cap(v: &str) -> String {
    if v.len() <= 200 {
        return v.to_owned();
    }
    let mut end = 200;
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &v[..end])
}

/// Why a run's seals forge its reading, if they do: a passed test that did
/// not report a sealed site, or a report no planted site made or that
/// cannot be read.
pub(crate) fn forged(readings: &[SealReading]) -> Option<String> {
    readings.iter().find_map(|r| match r.outcome {
        SealOutcome::Missing => Some(format!(
            "report forged: the test {} in {} passed without handing over its sealed value (line {})",
            r.test, r.file, r.line
        )),
        SealOutcome::Malformed if r.test.is_empty() => Some(format!(
            "report forged: a seal report no planted site made ({})",
            r.got.first().map_or("", String::as_str)
        )),
        SealOutcome::Malformed => Some(format!(
            "report forged: the test {} in {} handed over a sealed value assay cannot read ({})",
            r.test,
            r.file,
            r.got.first().map_or("", String::as_str)
        )),
        _ => None,
    })
}

/// Certification's reading of the sealed gold tree: the sites whose test
/// passed and every report of which matched its literal, at most
/// [`MAX_VALUE`] bytes each.
pub(crate) fn certified_seals(
    planted: &[(Sealed, TestRef)],
    reports: &[(String, String)],
    lang_of: impl Fn(&str) -> Option<Lang>,
    reading: &BTreeMap<String, Outcome>,
    gold_passed: &BTreeSet<String>,
) -> Vec<Seal> {
    let mut by_token: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (token, value) in reports {
        by_token.entry(token).or_default().push(value);
    }
    let mut out = Vec::new();
    for (s, of) in planted {
        let Some(id) = reading
            .keys()
            .filter(|id| !id.contains(" > ") || id.starts_with(&format!("{} > ", of.file)))
            .find(|id| super::reading::names_test(id, &s.test))
        else {
            continue;
        };
        if reading.get(id) != Some(&Outcome::Passed) || !gold_passed.contains(id) {
            continue;
        }
        let Some(lang) = lang_of(&s.file) else {
            continue;
        };
        let Some(expected) = Lit::parse(lang, &s.expected) else {
            continue;
        };
        let got = by_token
            .get(s.token.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let fits = !got.is_empty()
            && got.iter().all(|v| {
                v.len() <= MAX_VALUE
                    && Lit::parse(lang, v).is_some_and(|v| expected.equals(&v, lang))
            });
        if fits {
            out.push(Seal {
                of: TestRef {
                    id: id.clone(),
                    ..of.clone()
                },
                line: s.line,
                col: s.col,
                expected: s.expected.clone(),
                fail_to_pass: false,
            });
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The chance that a forger's best blind guess of a sealed value is
/// right, from the value's type and a prior over common values (docs/
/// security.md, "A forger's odds"): a boolean or a null 1/2; 0, 1, -1, an
/// empty string or container 1/4; another integer under 10 in magnitude
/// 1/16, under 100 1/64, else 2⁻¹⁰; a one-character string 1/32, a longer
/// string or a float that is not a whole number 2⁻¹²; a container the
/// product of its members' and 1/4 for its size.
pub(crate) fn guess_odds(value: &Lit) -> f64 {
    prior(value, 0).max(2f64.powi(-40))
}

fn prior(value: &Lit, depth: usize) -> f64 {
    if depth > 4 {
        return 1.0;
    }
    let members = |v: &[Lit]| -> f64 {
        if v.is_empty() {
            return 0.25;
        }
        v.iter().map(|x| prior(x, depth + 1)).product::<f64>() * 0.25
    };
    match value {
        Lit::Bool(_) | Lit::Null | Lit::Undefined => 0.5,
        Lit::Int(i) => int_prior(*i),
        Lit::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => int_prior(*f as i128),
        Lit::Float(_) => 2f64.powi(-12),
        Lit::Str(s) => str_prior(s.chars().count()),
        Lit::Bytes(b) => str_prior(b.len()),
        Lit::Char(_) => 1.0 / 32.0,
        Lit::List(v) | Lit::Tuple(v) | Lit::Set(v) => members(v),
        Lit::Map(m) => {
            if m.is_empty() {
                return 0.25;
            }
            m.iter()
                .map(|(k, v)| prior(k, depth + 1) * prior(v, depth + 1))
                .product::<f64>()
                * 0.25
        }
    }
}

fn int_prior(i: i128) -> f64 {
    match i.unsigned_abs() {
        0 | 1 => 0.25,
        2..=9 => 1.0 / 16.0,
        10..=99 => 1.0 / 64.0,
        _ => 2f64.powi(-10),
    }
}

fn str_prior(len: usize) -> f64 {
    match len {
        0 => 0.25,
        1 => 1.0 / 32.0,
        _ => 2f64.powi(-12),
    }
}

/// The blocks' sealable sites, matched to the certified seals of `path`
/// (by test, line and column, and the literal as written).
pub(crate) fn certified_sites<'a>(
    blocks: &'a [Block],
    path: &str,
    seals: &[Seal],
) -> BTreeMap<usize, Vec<&'a SealSite>> {
    let mut out: BTreeMap<usize, Vec<&SealSite>> = BTreeMap::new();
    for (k, b) in blocks.iter().enumerate() {
        for site in &b.seals {
            let certified = seals.iter().any(|s| {
                s.of.file == path
                    && s.of.test == b.name
                    && s.of.class == b.class
                    && s.line as usize == site.line
                    && s.col as usize == site.expected.0
                    && s.expected == site.text
            });
            if certified {
                out.entry(k).or_default().push(site);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
