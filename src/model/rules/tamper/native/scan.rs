//! What the rules read a patch's added text with: the language of a file,
//! its three views (as written, without comments, with string contents
//! blanked) and the patterns tried on them.

use regex::Regex;

use crate::model::config::TamperRule;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lang {
    Rust,
    Go,
    /// `Cargo.toml`.
    Manifest,
}

impl Lang {
    pub(super) fn of(path: &str) -> Option<Lang> {
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

/// The added text of one file, three ways: as written; without comments;
/// without comments and with string contents blanked (for identifier
/// heuristics a message or doc string must not trip). Each keeps the
/// text's offsets and line breaks.
pub(super) struct Views {
    pub(super) raw: String,
    pub(super) code: String,
    pub(super) bare: String,
}

impl Views {
    pub(super) fn of(text: &str, lang: Lang) -> Views {
        let (code, bare) = strip(text, lang);
        Views {
            raw: text.to_owned(),
            code,
            bare,
        }
    }

    /// The first match of `r` in the raw or the comment-free text.
    pub(super) fn find(&self, r: &Regex) -> Option<usize> {
        [&self.raw, &self.code]
            .iter()
            .filter_map(|t| r.find(t).map(|m| m.start()))
            .min()
    }
}

pub(super) fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("static flag pattern {pattern}: {e}"))
}

/// Comments blanked (`code`), and strings' contents blanked too (`bare`),
/// byte for byte (ASCII spaces for blanked bytes, newlines kept).
pub(super) fn strip(text: &str, lang: Lang) -> (String, String) {
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

pub(super) fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

pub(super) type Found = Vec<(TamperRule, usize, &'static str)>;

pub(super) struct Pattern {
    pub(super) rule: TamperRule,
    pub(super) re: Regex,
    pub(super) why: &'static str,
}

pub(super) fn pattern(rule: TamperRule, re_: &str, why: &'static str) -> Pattern {
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
pub(super) fn in_bodies(
    text: &str,
    opens: impl Iterator<Item = usize>,
    r: &Regex,
) -> Option<usize> {
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
