//! git's extended headers: the name a `diff --git` line gives both sides,
//! then the lines after it (`old mode`, `new file mode`, `rename from`,
//! `similarity index`, `index`, its own `---`/`+++` lines ...).
//!
//! Invariant: as git's `parse_git_diff_header`, the header ends at the
//! first line it does not know (or a hunk); a section left with no name,
//! or with two of creation, deletion, rename and copy, is refused.

use super::cstr::{at, c_str, is_space, strn_eq, strtoul_end};
use super::names::{TERM_TAB, find_name, is_dev_null, skip_tree_prefix, unquote_c_style};
use super::parser::{Parser, Raw};
use crate::error::GitError;

impl Parser<'_> {
    /// git's `git_header_name`: the name a `diff --git` line gives both
    /// sides, when it gives one (not for a rename).
    fn git_header_name(&self, pos: usize, llen: usize) -> Option<Vec<u8>> {
        const PREFIX: usize = b"diff --git ".len();
        let p = self.p_value;
        let line = self.rest(pos + PREFIX);
        let llen = llen - PREFIX;
        if at(line, 0) == b'"' {
            let (mut first, after) = unquote_c_style(line)?;
            let cp = skip_tree_prefix(p, &first, first.len())?;
            first.drain(..cp);
            let mut second = after;
            while second < llen && is_space(line[second]) {
                second += 1;
            }
            if llen <= second {
                return None;
            }
            if line[second] == b'"' {
                let (sp, _) = unquote_c_style(&line[second..])?;
                let cp = skip_tree_prefix(p, &sp, sp.len())?;
                return (c_str(&sp[cp..]) == c_str(&first)).then_some(first);
            }
            let cp = second + skip_tree_prefix(p, &line[second..], llen - second)?;
            return (line[cp..llen] == first[..]).then_some(first);
        }
        let name = skip_tree_prefix(p, line, llen)?;
        if let Some(q) = line[name..llen].iter().position(|b| *b == b'"') {
            let second = name + q;
            let (sp, _) = unquote_c_style(&line[second..])?;
            let np = skip_tree_prefix(p, &sp, sp.len())?;
            let len = sp.len() - np;
            if len < second - name
                && strn_eq(&sp[np..], &line[name..], len)
                && is_space(at(line, name + len))
            {
                return Some(sp[np..].to_vec());
            }
            return None;
        }
        let n = &line[name..];
        // strchr(name, '\n'): None when a NUL comes first.
        let line_len = n.iter().position(|b| *b == b'\n' || *b == 0)?;
        if n[line_len] == 0 {
            return None;
        }
        for len in 0.. {
            match at(n, len) {
                b'\n' => return None,
                b'\t' | b' ' => {
                    if at(n, len + 1) == 0 {
                        return None;
                    }
                    let rest = &n[len + 1..];
                    let Some(s) = skip_tree_prefix(p, rest, line_len - (len + 1)) else {
                        continue;
                    };
                    if at(rest, s + len) == b'\n' && strn_eq(n, &rest[s..], len) {
                        return Some(n[..len].to_vec());
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// git's `parse_git_diff_header`: the header's size (its first line
    /// included), the section's names and modes set on `raw`.
    pub(super) fn parse_git_diff_header(
        &self,
        pos: usize,
        len: usize,
        raw: &mut Raw,
    ) -> Result<usize, GitError> {
        raw.is_new = 0;
        raw.is_delete = 0;
        raw.def_name = self.git_header_name(pos, len);
        let p = self.p_value;
        let sub = if p > 0 { p - 1 } else { 0 };
        let mut offset = len;
        let mut at_ = pos + len;
        while at_ < self.buf.len() {
            let l = self.linelen(at_);
            if l == 0 || self.buf[at_ + l - 1] != b'\n' {
                break;
            }
            let line = &self.buf[at_..at_ + l];
            let after = |prefix: &[u8]| {
                line.starts_with(prefix)
                    .then(|| self.rest(at_ + prefix.len()))
            };
            let fail = |why: &str| self.at_line(at_, why);
            if line.starts_with(b"@@ -") {
                break;
            } else if let Some(s) = after(b"--- ") {
                let isnull = raw.is_new != 0;
                verify_name(s, isnull, &mut raw.old_name, p).map_err(fail)?;
            } else if let Some(s) = after(b"+++ ") {
                let isnull = raw.is_delete != 0;
                verify_name(s, isnull, &mut raw.new_name, p).map_err(fail)?;
            } else if let Some(s) = after(b"old mode ") {
                raw.old_mode = parse_mode(s).ok_or_else(|| self.at_line(at_, "invalid mode"))?;
            } else if let Some(s) = after(b"new mode ") {
                raw.new_mode = parse_mode(s).ok_or_else(|| self.at_line(at_, "invalid mode"))?;
            } else if let Some(s) = after(b"deleted file mode ") {
                raw.is_delete = 1;
                raw.old_name = raw.def_name.clone();
                raw.old_mode = parse_mode(s).ok_or_else(|| self.at_line(at_, "invalid mode"))?;
            } else if let Some(s) = after(b"new file mode ") {
                raw.is_new = 1;
                raw.new_name = raw.def_name.clone();
                raw.new_mode = parse_mode(s).ok_or_else(|| self.at_line(at_, "invalid mode"))?;
            } else if let Some(s) = after(b"copy from ") {
                raw.is_copy = true;
                raw.old_name = find_name(s, None, sub, 0);
            } else if let Some(s) = after(b"copy to ") {
                raw.is_copy = true;
                raw.new_name = find_name(s, None, sub, 0);
            } else if let Some(s) = after(b"rename old ").or_else(|| after(b"rename from ")) {
                raw.is_rename = true;
                raw.old_name = find_name(s, None, sub, 0);
            } else if let Some(s) = after(b"rename new ").or_else(|| after(b"rename to ")) {
                raw.is_rename = true;
                raw.new_name = find_name(s, None, sub, 0);
            } else if let Some(s) =
                after(b"similarity index ").or_else(|| after(b"dissimilarity index "))
            {
                let v = strtoul_end(s, 10).map_or(0, |(v, _)| v);
                if v <= 100 {
                    raw.score = v as u32;
                }
            } else if let Some(s) = after(b"index ") {
                if let Some(mode) = index_mode(s) {
                    raw.old_mode = mode.ok_or_else(|| self.at_line(at_, "invalid mode"))?;
                }
            } else {
                break;
            }
            let extensions = [
                raw.is_delete == 1,
                raw.is_new == 1,
                raw.is_rename,
                raw.is_copy,
            ]
            .iter()
            .filter(|b| **b)
            .count();
            if extensions > 1 {
                return Err(fail("inconsistent header lines"));
            }
            offset += l;
            at_ += l;
        }
        if raw.old_name.is_none() && raw.new_name.is_none() {
            let Some(def) = &raw.def_name else {
                return Err(self.at_line(pos, "git diff header lacks filename information"));
            };
            raw.old_name = Some(def.clone());
            raw.new_name = Some(def.clone());
        }
        if (raw.new_name.is_none() && raw.is_delete == 0)
            || (raw.old_name.is_none() && raw.is_new == 0)
        {
            return Err(self.at_line(pos, "git diff header lacks filename information"));
        }
        Ok(offset)
    }
}

/// git's `gitdiff_verify_name` for a `---` / `+++` line of a git header.
fn verify_name(
    line: &[u8],
    isnull: bool,
    name: &mut Option<Vec<u8>>,
    p_value: i64,
) -> Result<(), &'static str> {
    match name {
        None if !isnull => {
            *name = find_name(line, None, p_value, TERM_TAB);
            Ok(())
        }
        Some(_) if isnull => Err("bad git-diff: expected /dev/null"),
        Some(n) => match find_name(line, None, p_value, TERM_TAB) {
            Some(another) if another == *n => Ok(()),
            _ => Err("bad git-diff: inconsistent filename"),
        },
        None if is_dev_null(line) => Ok(()),
        None => Err("bad git-diff: expected /dev/null"),
    }
}

/// git's `parse_mode_line`: octal, then white space.
fn parse_mode(s: &[u8]) -> Option<u32> {
    let (v, end) = strtoul_end(s, 8)?;
    is_space(at(s, end)).then_some(v as u32)
}

/// The mode after an `index a..b` line's ids, when there is one:
/// `Some(None)` when it is not a valid mode (git refuses the patch).
fn index_mode(line: &[u8]) -> Option<Option<u32>> {
    const HEXSZ: usize = 40;
    // git searches the rest of the patch, but only a dot, a space or a
    // line end within HEXSZ bytes counts: look no further (a patch of many
    // sections would otherwise be read in quadratic time).
    let window = |s: &'_ [u8]| -> usize { s.len().min(HEXSZ + 1) };
    let s = c_str(&line[..window(line)]);
    let dot = s.iter().position(|b| *b == b'.')?;
    if at(line, dot + 1) != b'.' || HEXSZ < dot {
        return None;
    }
    let rest = &line[dot + 2..];
    let near = c_str(&rest[..window(rest)]);
    let eol = near.iter().position(|b| *b == b'\n');
    let space = near.iter().position(|b| *b == b' ');
    let end = match (space, eol) {
        (Some(sp), Some(e)) if sp < e => sp,
        (Some(sp), None) => sp,
        (_, Some(e)) => e,
        // Neither within reach (or a NUL first): the id is too long.
        (None, None) => return None,
    };
    if HEXSZ < end {
        return None;
    }
    (rest[end] == b' ').then(|| parse_mode(&rest[end + 1..]))
}
