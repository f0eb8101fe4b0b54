//! Names of paths: git's quoting, the `-p` prefix, `/dev/null`, and the
//! names of traditional `---`/`+++` lines (ended by a tab, a carriage
//! return or a GNU diff timestamp, the shorter of two when one extends the
//! other, the epoch marking a creation or a deletion).
//!
//! Invariant: each function is the git function it names in `apply.c`
//! (`find_name*`, `skip_tree_prefix`, `unquote_c_style`,
//! `guess_p_value`, `parse_traditional_patch`), quirks included.

use super::cstr::{at, c_str, is_space, strn_eq};
use super::parser::{Parser, Raw};
use super::timestamp;

const TERM_SPACE: u8 = 1;
pub(super) const TERM_TAB: u8 = 2;

fn name_terminate(c: u8, terminate: u8) -> bool {
    !(c == b' ' && terminate & TERM_SPACE == 0 || c == b'\t' && terminate & TERM_TAB == 0)
}

/// Collapses repeated slashes; like git's, it ends the name at a NUL.
fn squash_slash(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    for &b in c_str(name) {
        if b == b'/' && out.last() == Some(&b'/') {
            continue;
        }
        out.push(b);
    }
    out
}

/// git's `unquote_c_style`: the name quoted at the start of `s` (which
/// starts with `"`) and the index just past its closing quote.
pub(super) fn unquote_c_style(s: &[u8]) -> Option<(Vec<u8>, usize)> {
    if at(s, 0) != b'"' {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 1;
    loop {
        match at(s, i) {
            b'"' => return Some((out, i + 1)),
            b'\\' => {}
            0 => return None,
            c => {
                out.push(c);
                i += 1;
                continue;
            }
        }
        let c = at(s, i + 1);
        i += 2;
        let ch = match c {
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 11,
            b'\\' | b'"' => c,
            b'0'..=b'3' => {
                let (d1, d2) = (at(s, i), at(s, i + 1));
                if !(b'0'..=b'7').contains(&d1) || !(b'0'..=b'7').contains(&d2) {
                    return None;
                }
                i += 2;
                ((c - b'0') << 6) | ((d1 - b'0') << 3) | (d2 - b'0')
            }
            _ => return None,
        };
        out.push(ch);
    }
}

/// git's `skip_tree_prefix`: the offset past `p_value` leading components
/// of `s[..len]`, or None (too few, or an absolute name).
pub(super) fn skip_tree_prefix(p_value: i64, s: &[u8], len: usize) -> Option<usize> {
    if p_value == 0 {
        return if len > 0 && at(s, 0) == b'/' {
            None
        } else {
            Some(0)
        };
    }
    let mut nslash = p_value;
    for i in 0..len {
        if at(s, i) == b'/' {
            nslash -= 1;
            if nslash <= 0 {
                return if i == 0 { None } else { Some(i + 1) };
            }
        }
    }
    None
}

pub(super) fn is_dev_null(s: &[u8]) -> bool {
    s.starts_with(b"/dev/null") && is_space(at(s, 9))
}

/// git's `find_name_gnu`: a quoted name with `p_value` components dropped.
fn find_name_gnu(line: &[u8], p_value: i64) -> Option<Vec<u8>> {
    let (name, _) = unquote_c_style(line)?;
    let name = c_str(&name);
    let mut cp = 0;
    for _ in 0..p_value {
        cp += name[cp..].iter().position(|b| *b == b'/')? + 1;
    }
    Some(squash_slash(&name[cp..]))
}

/// git's `find_name_common`. `end`, when given, is where the name ends
/// whatever it holds; otherwise a line end or a terminating space does.
fn find_name_common(
    line: &[u8],
    def: Option<&[u8]>,
    p_value: i64,
    end: Option<usize>,
    terminate: u8,
) -> Option<Vec<u8>> {
    let mut start = (p_value == 0).then_some(0);
    let mut p = p_value;
    let mut i = 0;
    while Some(i) != end && i < line.len() {
        let c = line[i];
        if end.is_none() && is_space(c) && (c == b'\n' || name_terminate(c, terminate)) {
            break;
        }
        i += 1;
        if c == b'/' {
            p -= 1;
            if p == 0 {
                start = Some(i);
            }
        }
    }
    let Some(start) = start else {
        return def.map(squash_slash);
    };
    let len = i - start;
    if len == 0 {
        return def.map(squash_slash);
    }
    if let Some(def) = def
        && def.len() < len
        && strn_eq(&line[start..], def, def.len())
    {
        return Some(squash_slash(def));
    }
    Some(squash_slash(&line[start..i]))
}

pub(super) fn find_name(
    line: &[u8],
    def: Option<&[u8]>,
    p_value: i64,
    terminate: u8,
) -> Option<Vec<u8>> {
    if at(line, 0) == b'"'
        && let Some(name) = find_name_gnu(line, p_value)
    {
        return Some(name);
    }
    find_name_common(line, def, p_value, None, terminate)
}

fn find_name_traditional(line: &[u8], def: Option<&[u8]>, p_value: i64) -> Option<Vec<u8>> {
    if at(line, 0) == b'"'
        && let Some(name) = find_name_gnu(line, p_value)
    {
        return Some(name);
    }
    // strchrnul(line, '\n'), where a NUL ends the string too.
    let len = line
        .iter()
        .position(|b| *b == b'\n' || *b == 0)
        .unwrap_or(line.len());
    match timestamp::len(&line[..len]) {
        0 => find_name_common(line, def, p_value, None, TERM_TAB),
        date => find_name_common(line, def, p_value, Some(len - date), 0),
    }
}

impl Parser<'_> {
    fn guess_p_value(&self, nameline: &[u8]) -> i64 {
        if is_dev_null(nameline) {
            return -1;
        }
        match find_name_traditional(nameline, None, 0) {
            None => -1,
            Some(name) if !name.contains(&b'/') => 0,
            Some(_) => -1,
        }
    }

    pub(super) fn parse_traditional(
        &mut self,
        first: usize,
        second: usize,
        raw: &mut Raw,
    ) -> Result<(), &'static str> {
        let (first, second) = (self.rest(first), self.rest(second));
        if !self.p_value_known {
            let mut p = self.guess_p_value(first);
            let q = self.guess_p_value(second);
            if p < 0 {
                p = q;
            }
            if 0 <= p && p == q {
                self.p_value = p;
                self.p_value_known = true;
            }
        }
        let name;
        if is_dev_null(first) {
            raw.is_new = 1;
            raw.is_delete = 0;
            name = find_name_traditional(second, None, self.p_value);
            raw.new_name = name.clone();
        } else if is_dev_null(second) {
            raw.is_new = 0;
            raw.is_delete = 1;
            name = find_name_traditional(first, None, self.p_value);
            raw.old_name = name.clone();
        } else {
            let first_name = find_name_traditional(first, None, self.p_value);
            name = find_name_traditional(second, first_name.as_deref(), self.p_value);
            if timestamp::is_epoch(first) {
                raw.is_new = 1;
                raw.is_delete = 0;
                raw.new_name = name.clone();
            } else if timestamp::is_epoch(second) {
                raw.is_new = 0;
                raw.is_delete = 1;
                raw.old_name = name.clone();
            } else {
                raw.old_name = name.clone();
                raw.new_name = name.clone();
            }
        }
        if name.is_none() {
            return Err("unable to find filename in patch");
        }
        Ok(())
    }
}
