//! A section's body: its text hunks, read strictly by the counts of their
//! `@@ -a,b +c,d @@` lines (a hunk line `+++ b/x` is content, never a
//! header), and the hunks of a `GIT binary patch`.
//!
//! Invariant: a hunk whose lines do not match its counts makes the patch
//! corrupt, as in git's `parse_fragment`; the added lines and the counts
//! are those of the hunks read, nothing else.

use super::AddedLine;
use super::parser::{Parser, Raw};
use crate::error::GitError;

/// git's `parse_num` + `parse_range`: from `offset`, a number, an optional
/// `,count` (default 1), then `expect`; the offset after it.
fn parse_range(line: &[u8], offset: usize, expect: &[u8]) -> Option<(u64, usize)> {
    if offset >= line.len() {
        return None;
    }
    let num = |from: usize| -> Option<(u64, usize)> {
        let digits = line[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 {
            return None;
        }
        let v = line[from..from + digits].iter().fold(0u64, |v, d| {
            v.saturating_mul(10).saturating_add(u64::from(d - b'0'))
        });
        Some((v, digits))
    };
    let (_, digits) = num(offset)?;
    let mut at_ = offset + digits;
    let mut count = 1;
    if line.get(at_) == Some(&b',') {
        let (n, d) = num(at_ + 1)?;
        count = n;
        at_ += d + 1;
    }
    if line.len() - at_ < expect.len() || !line[at_..].starts_with(expect) {
        return None;
    }
    Some((count, at_ + expect.len()))
}

/// `@@ -a,b +c,d @@` (the line with its line end): the old and new counts.
pub(super) fn fragment_header(line: &[u8]) -> Option<(u64, u64)> {
    if line.last() != Some(&b'\n') {
        return None;
    }
    let (old, off) = parse_range(line, 4, b" +")?;
    let (new, _) = parse_range(line, off, b" @@")?;
    Some((old, new))
}

/// The base-85 alphabet of git's binary patches.
fn is_base85(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&()*+-;<=>?@^_`{|}~".contains(&c)
}

impl Parser<'_> {
    /// The hunks from `pos` (git's `parse_single_patch`): their size.
    pub(super) fn parse_single_patch(&self, pos: usize, raw: &mut Raw) -> Result<usize, GitError> {
        let (mut offset, mut old, mut new, mut hunks) = (0, 0u64, 0u64, 0);
        let mut at_ = pos;
        while self.buf.len().saturating_sub(at_) > 4 && self.rest(at_).starts_with(b"@@ -") {
            let Some((len, o, n)) = self.parse_fragment(at_, raw) else {
                return Err(self.at_line(at_, "corrupt patch"));
            };
            old = old.saturating_add(o);
            new = new.saturating_add(n);
            hunks += 1;
            offset += len;
            at_ += len;
        }
        if raw.is_new < 0 && (old > 0 || hunks > 1) {
            raw.is_new = 0;
        }
        if raw.is_delete < 0 && (new > 0 || hunks > 1) {
            raw.is_delete = 0;
        }
        if raw.is_new > 0 && old > 0 {
            return Err(self.at_line(pos, "new file depends on old contents"));
        }
        if raw.is_delete > 0 && new > 0 {
            return Err(self.at_line(pos, "deleted file still has contents"));
        }
        Ok(offset)
    }

    /// One hunk at `pos`, read by its counts: its size and its old and new
    /// counts, or None when it is corrupt.
    fn parse_fragment(&self, pos: usize, raw: &mut Raw) -> Option<(usize, u64, u64)> {
        let len = self.linelen(pos);
        let (old_count, new_count) = fragment_header(&self.buf[pos..pos + len])?;
        let (mut old, mut new) = (old_count, new_count);
        let (mut added, mut deleted) = (0u64, 0u64);
        let mut offset = len;
        let mut at_ = pos + len;
        let mut lines = Vec::new();
        while at_ < self.buf.len() {
            if old == 0 && new == 0 {
                break;
            }
            let l = self.linelen(at_);
            if l == 0 || self.buf[at_ + l - 1] != b'\n' {
                return None;
            }
            let line = &self.buf[at_..at_ + l];
            match line[0] {
                b'\n' | b' ' => {
                    old = old.wrapping_sub(1);
                    new = new.wrapping_sub(1);
                }
                b'-' => {
                    deleted += 1;
                    old = old.wrapping_sub(1);
                }
                b'+' => {
                    added += 1;
                    new = new.wrapping_sub(1);
                    if self.keep_added {
                        lines.push(AddedLine {
                            line: self.line_of(at_),
                            text: String::from_utf8_lossy(&line[1..l - 1]).into_owned(),
                        });
                    }
                }
                b'\\' if l >= 12 && line.starts_with(b"\\ ") => {}
                _ => return None,
            }
            offset += l;
            at_ += l;
        }
        if old != 0 || new != 0 || (deleted == 0 && added == 0) {
            return None;
        }
        if self.buf.len() - at_ > 12 && self.rest(at_).starts_with(b"\\ ") {
            offset += self.linelen(at_);
        }
        raw.lines_added += added;
        raw.lines_removed += deleted;
        raw.added.extend(lines);
        Some((offset, old_count, new_count))
    }

    /// A binary patch's hunks after `GIT binary patch`: their size, or
    /// None when git would stop reading (no hunk, or a corrupt one).
    pub(super) fn parse_binary(&self, pos: usize) -> Option<usize> {
        let forward = self.binary_hunk(pos).ok()??;
        match self.binary_hunk(pos + forward) {
            Ok(Some(reverse)) => Some(forward + reverse),
            Ok(None) => Some(forward),
            Err(()) => None,
        }
    }

    /// One `literal`/`delta` hunk: Ok(None) when none starts at `pos`.
    /// The deflated data itself is not inflated here: a hunk git finds
    /// corrupt stops its reading, and
    /// [`check_with_git`](super::check_with_git) sees the sections it then
    /// leaves out.
    fn binary_hunk(&self, pos: usize) -> Result<Option<usize>, ()> {
        let head = self.rest(pos);
        if !head.starts_with(b"delta ") && !head.starts_with(b"literal ") {
            return Ok(None);
        }
        let mut used = self.linelen(pos);
        let mut at_ = pos + used;
        loop {
            let l = self.linelen(at_);
            used += l;
            if l == 1 {
                return Ok(Some(used));
            }
            if l < 7 || !(l - 2).is_multiple_of(5) {
                return Err(());
            }
            let max = (l - 2) / 5 * 4;
            let byte_length = match self.buf[at_] {
                c @ b'A'..=b'Z' => usize::from(c - b'A') + 1,
                c @ b'a'..=b'z' => usize::from(c - b'a') + 27,
                _ => return Err(()),
            };
            if max < byte_length || byte_length + 4 <= max {
                return Err(());
            }
            if !self.buf[at_ + 1..at_ + l - 1].iter().all(|c| is_base85(*c)) {
                return Err(());
            }
            at_ += l;
        }
    }
}
