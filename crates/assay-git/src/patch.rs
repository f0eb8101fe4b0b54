//! Reading a patch the way `git apply` reads it: its file sections, the
//! paths each one writes, and the lines its hunks add.
//!
//! Every decision assay takes about a session patch (which paths the policy
//! leaves out, which hidden test files it must give way to, whether it
//! touches test infrastructure or reaches into the test framework) rests on
//! this reading, while `git apply` is what writes the tree. The two must not
//! differ, or a patch could be judged by one path and written to another
//! (`--- a/t.py` / `+++ b/t.py.orig` is written to `t.py`: git takes the
//! shorter name). So this module is a port of the parser of git's
//! `apply.c` (`find_header`, `parse_git_diff_header`,
//! `parse_traditional_patch`, `parse_fragment`, the binary hunks), down to
//! its quirks: the `-p` value guessed from the first traditional section
//! and kept for the rest, names ending at the first tab or carriage
//! return, epoch timestamps marking creations, hunks read strictly by
//! their line counts (a hunk line `+++ b/x` is content, never a header).
//!
//! And then it does not trust itself: [`check_with_git`] asks git for its
//! own reading (`git apply --numstat -z --summary`: per section the path
//! written and the lines added and removed, then creations, deletions,
//! renames, copies and mode changes) and compares it, byte for byte, with
//! the same output rendered from this reading. Any difference refuses the
//! patch, with the first section that differs. Names must be UTF-8 (others
//! are refused with that reason).

use crate::command::Git;
use crate::error::GitError;

/// One file section of a patch: the paths it touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchPath {
    /// The path written (the path removed, for a deletion): the one
    /// `git apply --exclude` matches.
    pub path: String,
    /// The path read when it differs (a rename's or a copy's source).
    pub old_path: Option<String>,
    /// `old_path` stays (a copy); otherwise a differing `old_path` is
    /// removed (a rename).
    pub is_copy: bool,
    /// The section creates `path` (or may: a traditional hunk with no old
    /// lines creates the file when it does not exist).
    pub is_new: bool,
    pub is_deleted: bool,
    /// The resulting entry is a symlink (mode 120000).
    pub is_symlink: bool,
}

impl PatchPath {
    /// The paths this section changes: `path`, and a rename's source.
    pub fn written(&self) -> impl Iterator<Item = &str> {
        let removed = self.old_path.as_deref().filter(|_| !self.is_copy);
        std::iter::once(self.path.as_str()).chain(removed)
    }
}

/// A line a hunk adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedLine {
    /// 1-based line number in the patch.
    pub line: usize,
    /// The content, without the `+` and the line end (lossy UTF-8).
    pub text: String,
}

/// One file section of a patch, with what its hunks add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    pub path: PatchPath,
    /// Lines added by the text hunks, in order (none for a binary patch).
    pub added: Vec<AddedLine>,
    pub lines_added: u64,
    pub lines_removed: u64,
    pub is_binary: bool,
}

/// Parses the file sections of `patch`; see the module documentation.
pub fn parse_patch(patch: &[u8]) -> Result<Vec<PatchFile>, GitError> {
    parse_patch_with(patch, AddedLines::Keep)
}

/// Whether [`parse_patch_with`] keeps the added lines or only counts them
/// (a patch of millions of lines then costs no allocation per line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddedLines {
    Keep,
    Count,
}

/// [`parse_patch`], keeping the added lines or only counting them.
pub fn parse_patch_with(patch: &[u8], lines: AddedLines) -> Result<Vec<PatchFile>, GitError> {
    let mut parser = Parser::new(patch);
    parser.keep_added = lines == AddedLines::Keep;
    parser.parse()?.into_iter().map(Raw::into_file).collect()
}

/// The paths of each file section of `patch` ([`parse_patch`] without the
/// added lines).
pub fn patch_paths(patch: &[u8]) -> Result<Vec<PatchPath>, GitError> {
    Ok(parse_patch_with(patch, AddedLines::Count)?
        .into_iter()
        .map(|f| f.path)
        .collect())
}

/// Refuses `patch` unless `git apply` reads it as [`parse_patch`] does:
/// the same sections, each writing the same path with the same line counts,
/// the same creations, deletions, renames, copies and mode changes.
/// `GitError::Misread` names the first difference; a patch git refuses
/// outright is `GitError::Command` with git's message.
pub fn check_with_git(patch: &[u8]) -> Result<(), GitError> {
    let raws = Parser::new(patch).parse()?;
    for r in &raws {
        r.names_ok()?;
    }
    if raws.is_empty() {
        return Ok(());
    }
    let ours = render(&raws);
    let theirs = Git::detached()
        .args(["apply", "--numstat", "-z", "--summary"])
        .output(patch)?;
    if ours == theirs {
        return Ok(());
    }
    Err(GitError::Misread {
        reason: first_difference(&ours, &theirs, raws.len()),
    })
}

// ---- the reading -------------------------------------------------------------

/// A section as git's `struct patch` holds it: names as bytes, `is_new` and
/// `is_delete` as git's tri-state (-1 unknown, 0, 1).
#[derive(Debug, Clone, Default)]
struct Raw {
    old_name: Option<Vec<u8>>,
    new_name: Option<Vec<u8>>,
    def_name: Option<Vec<u8>>,
    is_new: i8,
    is_delete: i8,
    is_rename: bool,
    is_copy: bool,
    old_mode: u32,
    new_mode: u32,
    score: u32,
    is_binary: bool,
    lines_added: u64,
    lines_removed: u64,
    added: Vec<AddedLine>,
}

impl Raw {
    fn unknown() -> Raw {
        Raw {
            is_new: -1,
            is_delete: -1,
            ..Raw::default()
        }
    }

    fn names_ok(&self) -> Result<(), GitError> {
        for n in [&self.old_name, &self.new_name].into_iter().flatten() {
            if std::str::from_utf8(n).is_err() {
                return Err(GitError::Patch {
                    line: 0,
                    reason: format!("path `{}` is not valid UTF-8", String::from_utf8_lossy(n)),
                });
            }
        }
        Ok(())
    }

    fn into_file(self) -> Result<PatchFile, GitError> {
        self.names_ok()?;
        let text = |n: Option<Vec<u8>>| n.map(|b| String::from_utf8_lossy(&b).into_owned());
        let old = text(self.old_name);
        let new = text(self.new_name);
        let (path, old_path) = match (new, old) {
            (Some(new), Some(old)) if old != new => (new, Some(old)),
            (Some(new), _) => (new, None),
            (None, Some(old)) => (old, None),
            (None, None) => {
                return Err(GitError::Patch {
                    line: 0,
                    reason: "file section names no path".into(),
                });
            }
        };
        let mode = if self.new_mode != 0 {
            self.new_mode
        } else {
            self.old_mode
        };
        Ok(PatchFile {
            path: PatchPath {
                is_copy: old_path.is_some() && !self.is_rename,
                path,
                old_path,
                is_new: self.is_new != 0 && self.is_delete != 1,
                is_deleted: self.is_delete == 1,
                is_symlink: mode == 0o120000,
            },
            added: self.added,
            lines_added: self.lines_added,
            lines_removed: self.lines_removed,
            is_binary: self.is_binary,
        })
    }
}

/// git's `isspace` (the C locale's, without the NUL git's table adds).
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

const TERM_SPACE: u8 = 1;
const TERM_TAB: u8 = 2;

fn name_terminate(c: u8, terminate: u8) -> bool {
    !(c == b' ' && terminate & TERM_SPACE == 0 || c == b'\t' && terminate & TERM_TAB == 0)
}

/// The byte at `i`, or NUL past the end (git reads into NUL padding).
fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

/// The bytes of `s` before its first NUL (a C string).
fn c_str(s: &[u8]) -> &[u8] {
    &s[..s.iter().position(|b| *b == 0).unwrap_or(s.len())]
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
fn unquote_c_style(s: &[u8]) -> Option<(Vec<u8>, usize)> {
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
fn skip_tree_prefix(p_value: i64, s: &[u8], len: usize) -> Option<usize> {
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

/// `strncmp(a, b, n) == 0`.
fn strn_eq(a: &[u8], b: &[u8], n: usize) -> bool {
    for i in 0..n {
        let (x, y) = (at(a, i), at(b, i));
        if x != y {
            return false;
        }
        if x == 0 {
            return true;
        }
    }
    true
}

fn is_dev_null(s: &[u8]) -> bool {
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

fn find_name(line: &[u8], def: Option<&[u8]>, p_value: i64, terminate: u8) -> Option<Vec<u8>> {
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

/// The timestamps GNU diff writes after a traditional name, as git
/// recognises them (`diff_timestamp_len`, `has_epoch_timestamp`).
mod timestamp {
    use super::at;

    fn digit(s: &[u8], i: usize) -> bool {
        at(s, i).is_ascii_digit()
    }

    fn sane_tz(s: &[u8], len: usize) -> usize {
        if len < 6 || s[len - 6] != b' ' {
            return 0;
        }
        let tz = len - 6;
        if s[tz + 1] != b'+' && s[tz + 1] != b'-' {
            return 0;
        }
        if (tz + 2..len).any(|i| !digit(s, i)) {
            return 0;
        }
        6
    }

    fn tz_with_colon(s: &[u8], len: usize) -> usize {
        if len < 7 || s[len - 3] != b':' {
            return 0;
        }
        let tz = len - 7;
        if s[tz] != b' ' || (s[tz + 1] != b'+' && s[tz + 1] != b'-') {
            return 0;
        }
        let p = tz + 2;
        if !digit(s, p) || !digit(s, p + 1) || s[p + 2] != b':' || !digit(s, p + 3) {
            return 0;
        }
        if !digit(s, p + 4) {
            return 0;
        }
        7
    }

    fn date(s: &[u8], len: usize) -> usize {
        if len < 8 || s[len - 3] != b'-' {
            return 0;
        }
        let mut d = len - 8;
        let p = d;
        let shape = [true, true, false, true, true, false, true, true];
        for (k, is_digit) in shape.iter().enumerate() {
            let ok = if *is_digit {
                digit(s, p + k)
            } else {
                s[p + k] == b'-'
            };
            if !ok {
                return 0;
            }
        }
        if d >= 2 && digit(s, d - 1) && digit(s, d - 2) {
            d -= 2;
        }
        len - d
    }

    fn short_time(s: &[u8], len: usize) -> usize {
        if len < 9 || s[len - 3] != b':' {
            return 0;
        }
        let p = len - 9;
        let shape = b" dd:dd:dd";
        for (k, want) in shape.iter().enumerate() {
            let ok = if *want == b'd' {
                digit(s, p + k)
            } else {
                s[p + k] == *want
            };
            if !ok {
                return 0;
            }
        }
        9
    }

    fn fractional_time(s: &[u8], len: usize) -> usize {
        if len == 0 || !digit(s, len - 1) {
            return 0;
        }
        let mut p = len - 1;
        while p > 0 && digit(s, p) {
            p -= 1;
        }
        if s[p] != b'.' {
            return 0;
        }
        match short_time(s, p) {
            0 => 0,
            n => len - p + n,
        }
    }

    fn trailing_spaces(s: &[u8], len: usize) -> usize {
        if len == 0 || s[len - 1] != b' ' {
            return 0;
        }
        let mut p = len;
        while p != 0 {
            p -= 1;
            if s[p] != b' ' {
                return len - (p + 1);
            }
        }
        len
    }

    /// How many bytes at the end of `s` (a name line without its line
    /// end) are a timestamp, with the tab or spaces before it.
    pub(super) fn len(s: &[u8]) -> usize {
        let len = s.len();
        if len == 0 || !digit(s, len - 1) {
            return 0;
        }
        let mut end = len;
        let mut n = sane_tz(s, end);
        if n == 0 {
            n = tz_with_colon(s, end);
        }
        end -= n;
        let mut n = short_time(s, end);
        if n == 0 {
            n = fractional_time(s, end);
        }
        end -= n;
        let n = date(s, end);
        if n == 0 {
            return 0;
        }
        end -= n;
        if end == 0 {
            return 0;
        }
        if s[end - 1] == b'\t' {
            return len - (end - 1);
        }
        if s[end - 1] != b' ' {
            return 0;
        }
        end -= trailing_spaces(s, end);
        len - end
    }

    /// Whether the name line (up to its line end) ends with a tab and the
    /// epoch, which GNU diff writes for a file that does not exist.
    pub(super) fn is_epoch(s: &[u8]) -> bool {
        let line = &s[..s.iter().position(|b| *b == b'\n').unwrap_or(s.len())];
        let Some(tab) = line.iter().rposition(|b| *b == b'\t') else {
            return false;
        };
        // The regex matches up to the line end, which must be there.
        let t = &s[tab + 1..];
        let (epoch_hour, t) = if let Some(t) = t.strip_prefix(b"1969-12-31 ") {
            (24, t)
        } else if let Some(t) = t.strip_prefix(b"1970-01-01 ") {
            (0, t)
        } else {
            return false;
        };
        // ^[0-2][0-9]:([0-5][0-9]):00(\.0+)? ([-+][0-2][0-9]:?[0-5][0-9])\n
        let range = |i: usize, lo: u8, hi: u8| (lo..=hi).contains(&at(t, i));
        if !(range(0, b'0', b'2') && digit(t, 1) && at(t, 2) == b':') {
            return false;
        }
        if !(range(3, b'0', b'5') && digit(t, 4) && at(t, 5) == b':') {
            return false;
        }
        if !(at(t, 6) == b'0' && at(t, 7) == b'0') {
            return false;
        }
        let mut i = 8;
        if at(t, i) == b'.' && at(t, i + 1) == b'0' {
            i += 1;
            while at(t, i) == b'0' {
                i += 1;
            }
        }
        if at(t, i) != b' ' {
            return false;
        }
        let sign = at(t, i + 1);
        if sign != b'+' && sign != b'-' {
            return false;
        }
        let z = i + 2;
        if !(range(z, b'0', b'2') && digit(t, z + 1)) {
            return false;
        }
        let colon = at(t, z + 2) == b':';
        let m = if colon { z + 3 } else { z + 2 };
        if !(range(m, b'0', b'5') && digit(t, m + 1) && at(t, m + 2) == b'\n') {
            return false;
        }
        let num = |a: usize, b: usize| -> i64 {
            t[a..b].iter().fold(0, |v, d| v * 10 + i64::from(d - b'0'))
        };
        let hour = num(0, 2);
        let minute = num(3, 5);
        let mut zone = if colon {
            num(z, z + 2) * 60 + num(m, m + 2)
        } else {
            let all = num(z, m + 2);
            (all / 100) * 60 + all % 100
        };
        if sign == b'-' {
            zone = -zone;
        }
        hour * 60 + minute - zone == epoch_hour * 60
    }
}

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
fn fragment_header(line: &[u8]) -> Option<(u64, u64)> {
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

struct Parser<'a> {
    buf: &'a [u8],
    /// Where each line end is, for line numbers.
    line_ends: Vec<usize>,
    p_value: i64,
    p_value_known: bool,
    /// Keep each added line (else only count them).
    keep_added: bool,
}

impl<'a> Parser<'a> {
    fn new(buf: &'a [u8]) -> Parser<'a> {
        Parser {
            buf,
            line_ends: buf
                .iter()
                .enumerate()
                .filter_map(|(i, b)| (*b == b'\n').then_some(i))
                .collect(),
            p_value: 1,
            p_value_known: false,
            keep_added: true,
        }
    }

    /// 1-based line number of byte `pos`.
    fn line_of(&self, pos: usize) -> usize {
        self.line_ends.partition_point(|end| *end < pos) + 1
    }

    fn at_line(&self, pos: usize, reason: &str) -> GitError {
        GitError::Patch {
            line: self.line_of(pos),
            reason: reason.into(),
        }
    }

    /// Length of the line at `pos`, its line end included.
    fn linelen(&self, pos: usize) -> usize {
        let rest = &self.buf[pos.min(self.buf.len())..];
        rest.iter()
            .position(|b| *b == b'\n')
            .map_or(rest.len(), |p| p + 1)
    }

    fn rest(&self, pos: usize) -> &'a [u8] {
        &self.buf[pos.min(self.buf.len())..]
    }

    /// Every section, as `apply_patch` collects them.
    fn parse(&mut self) -> Result<Vec<Raw>, GitError> {
        let mut out = Vec::new();
        let mut offset = 0;
        while offset < self.buf.len() {
            match self.parse_chunk(offset)? {
                Some((raw, used)) => {
                    out.push(raw);
                    offset += used;
                }
                // No further header, or a broken binary patch: git stops
                // reading there, quietly.
                None => break,
            }
        }
        Ok(out)
    }

    fn parse_chunk(&mut self, offset: usize) -> Result<Option<(Raw, usize)>, GitError> {
        let Some((hdr_at, hdrsize, mut raw)) = self.find_header(offset)? else {
            return Ok(None);
        };
        let hd = offset + hdr_at + hdrsize;
        let mut patchsize = self.parse_single_patch(hd, &mut raw)?;
        if patchsize == 0 {
            let llen = self.linelen(hd);
            let line = &self.buf[hd..hd + llen];
            if line == b"GIT binary patch\n" {
                match self.parse_binary(hd + llen) {
                    None => return Ok(None),
                    Some(used) => {
                        raw.is_binary = true;
                        patchsize = used + llen;
                    }
                }
            } else if hd + llen >= 8 && &self.buf[hd + llen - 8..hd + llen] == b" differ\n" {
                let size = self.buf.len() - hd;
                for prefix in [&b"Binary files "[..], b"Files "] {
                    if prefix.len() < size && line.starts_with(prefix) {
                        raw.is_binary = true;
                        patchsize = llen;
                        break;
                    }
                }
            }
        }
        Ok(Some((raw, hdr_at + hdrsize + patchsize)))
    }

    /// The next section header from `offset`: its offset from there, its
    /// size, and the section it names.
    fn find_header(&mut self, offset: usize) -> Result<Option<(usize, usize, Raw)>, GitError> {
        let mut raw = Raw::unknown();
        let mut pos = offset;
        while pos < self.buf.len() {
            let size = self.buf.len() - pos;
            let len = self.linelen(pos);
            if len == 0 {
                break;
            }
            let line = &self.buf[pos..pos + len];
            if len < 6 {
                pos += len;
                continue;
            }
            if line.starts_with(b"@@ -") {
                if fragment_header(line).is_some() {
                    return Err(self.at_line(pos, "patch fragment without header"));
                }
                pos += len;
                continue;
            }
            if size < len + 6 {
                break;
            }
            if line.starts_with(b"diff --git ") {
                let hdr_len = self.parse_git_diff_header(pos, len, &mut raw)?;
                if hdr_len <= len {
                    pos += len;
                    continue;
                }
                return Ok(Some((pos - offset, hdr_len, raw)));
            }
            let next = pos + len;
            if !line.starts_with(b"--- ") || !self.rest(next).starts_with(b"+++ ") {
                pos += len;
                continue;
            }
            let nextlen = self.linelen(next);
            if size < nextlen + 14 || !self.rest(next + nextlen).starts_with(b"@@ -") {
                pos += len;
                continue;
            }
            self.parse_traditional(pos + 4, next + 4, &mut raw)
                .map_err(|why| self.at_line(pos, why))?;
            return Ok(Some((pos - offset, len + nextlen, raw)));
        }
        Ok(None)
    }

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

    fn parse_traditional(
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
    fn parse_git_diff_header(
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

    /// The hunks from `pos` (git's `parse_single_patch`): their size.
    fn parse_single_patch(&self, pos: usize, raw: &mut Raw) -> Result<usize, GitError> {
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
    fn parse_binary(&self, pos: usize) -> Option<usize> {
        let forward = self.binary_hunk(pos).ok()??;
        match self.binary_hunk(pos + forward) {
            Ok(Some(reverse)) => Some(forward + reverse),
            Ok(None) => Some(forward),
            Err(()) => None,
        }
    }

    /// One `literal`/`delta` hunk: Ok(None) when none starts at `pos`.
    /// The deflated data itself is not inflated here: a hunk git finds
    /// corrupt stops its reading, and [`check_with_git`] sees the sections
    /// it then leaves out.
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

/// C's `strtoul(s, &end, base)`: leading white space, a sign, digits
/// (saturating); None when no digit was read.
fn strtoul_end(s: &[u8], base: u32) -> Option<(u64, usize)> {
    let mut i = 0;
    while is_space(at(s, i)) {
        i += 1;
    }
    let negative = match at(s, i) {
        b'-' => {
            i += 1;
            true
        }
        b'+' => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut v: u64 = 0;
    while let Some(d) = char::from(at(s, i)).to_digit(base) {
        v = v
            .saturating_mul(u64::from(base))
            .saturating_add(u64::from(d));
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if negative { v.wrapping_neg() } else { v }, i))
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

// ---- what git says about it --------------------------------------------------

/// What `git apply --numstat -z --summary` prints for `raws`.
fn render(raws: &[Raw]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in raws {
        out.extend(numstat(r));
    }
    for r in raws {
        out.extend(summary(r));
    }
    out
}

fn name_or_null(n: &Option<Vec<u8>>) -> &[u8] {
    n.as_deref().unwrap_or(b"(null)")
}

fn numstat(r: &Raw) -> Vec<u8> {
    let mut out = if r.is_binary {
        b"-\t-\t".to_vec()
    } else {
        format!("{}\t{}\t", r.lines_added, r.lines_removed).into_bytes()
    };
    out.extend_from_slice(name_or_null(if r.new_name.is_some() {
        &r.new_name
    } else {
        &r.old_name
    }));
    out.push(0);
    out
}

fn summary(r: &Raw) -> Vec<u8> {
    let mut out = Vec::new();
    let file_mode_name = |out: &mut Vec<u8>, what: &str, mode: u32, name: &Option<Vec<u8>>| {
        if mode != 0 {
            out.extend(format!(" {what} mode {mode:06o} ").into_bytes());
        } else {
            out.extend(format!(" {what} ").into_bytes());
        }
        out.extend_from_slice(name_or_null(name));
        out.push(b'\n');
    };
    let mode_change = |out: &mut Vec<u8>, with_name: bool| {
        if r.old_mode != 0 && r.new_mode != 0 && r.old_mode != r.new_mode {
            out.extend(
                format!(" mode change {:06o} => {:06o}", r.old_mode, r.new_mode).into_bytes(),
            );
            if with_name {
                out.push(b' ');
                out.extend_from_slice(name_or_null(&r.new_name));
            }
            out.push(b'\n');
        }
    };
    if r.is_new != 0 {
        file_mode_name(&mut out, "create", r.new_mode, &r.new_name);
    } else if r.is_delete != 0 {
        file_mode_name(&mut out, "delete", r.old_mode, &r.old_name);
    } else if r.is_rename || r.is_copy {
        let what = if r.is_rename { "rename" } else { "copy" };
        let old = c_str(name_or_null(&r.old_name));
        let new = c_str(name_or_null(&r.new_name));
        let (mut o, mut n) = (0, 0);
        loop {
            let so = old[o..].iter().position(|b| *b == b'/');
            let sn = new[n..].iter().position(|b| *b == b'/');
            match (so, sn) {
                (Some(so), Some(sn)) if so == sn && old[o..o + so] == new[n..n + sn] => {
                    o += so + 1;
                    n += sn + 1;
                }
                _ => break,
            }
        }
        out.extend(format!(" {what} ").into_bytes());
        if o != 0 {
            out.extend_from_slice(&old[..o]);
            out.push(b'{');
            out.extend_from_slice(&old[o..]);
            out.extend_from_slice(b" => ");
            out.extend_from_slice(&new[n..]);
            out.push(b'}');
        } else {
            out.extend_from_slice(old);
            out.extend_from_slice(b" => ");
            out.extend_from_slice(new);
        }
        out.extend(format!(" ({}%)\n", r.score).into_bytes());
        mode_change(&mut out, false);
    } else if r.score != 0 {
        out.extend_from_slice(b" rewrite ");
        out.extend_from_slice(name_or_null(&r.new_name));
        out.extend(format!(" ({}%)\n", r.score).into_bytes());
        mode_change(&mut out, false);
    } else {
        mode_change(&mut out, true);
    }
    out
}

/// Names where assay's reading (`ours`) and git's (`theirs`) part.
fn first_difference(ours: &[u8], theirs: &[u8], sections: usize) -> String {
    let show = |b: &[u8]| String::from_utf8_lossy(b).escape_debug().to_string();
    let records = |out: &[u8]| -> (Vec<Vec<u8>>, Vec<u8>) {
        let mut recs = Vec::new();
        let mut rest = out;
        while rest
            .first()
            .is_some_and(|c| c.is_ascii_digit() || *c == b'-')
        {
            let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
            recs.push(rest[..end].to_vec());
            rest = rest.get(end + 1..).unwrap_or_default();
        }
        (recs, rest.to_vec())
    };
    let (ours_recs, ours_summary) = records(ours);
    let (their_recs, their_summary) = records(theirs);
    if their_recs.len() != sections {
        return format!(
            "git reads {} file section(s) in it, assay {sections}",
            their_recs.len()
        );
    }
    for (i, (a, b)) in ours_recs.iter().zip(&their_recs).enumerate() {
        if a != b {
            let path = |r: &[u8]| -> String {
                let mut parts = r.splitn(3, |c| *c == b'\t');
                let (add, del, name) = (parts.next(), parts.next(), parts.next());
                format!(
                    "`{}` (+{} -{})",
                    show(name.unwrap_or_default()),
                    show(add.unwrap_or_default()),
                    show(del.unwrap_or_default())
                )
            };
            return format!(
                "git applies file section {} to {}, assay read {}",
                i + 1,
                path(b),
                path(a)
            );
        }
    }
    let ours_lines: Vec<&[u8]> = ours_summary.split(|b| *b == b'\n').collect();
    let their_lines: Vec<&[u8]> = their_summary.split(|b| *b == b'\n').collect();
    for k in 0..ours_lines.len().max(their_lines.len()) {
        let (a, b) = (
            ours_lines.get(k).copied().unwrap_or_default(),
            their_lines.get(k).copied().unwrap_or_default(),
        );
        if a != b {
            return format!(
                "git summarises it as `{}`, assay as `{}`",
                show(b.trim_ascii()),
                show(a.trim_ascii())
            );
        }
    }
    "git reads it differently".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_names_are_unescaped() {
        let patch = b"diff --git \"a/sp ace\\tx\\303\\244\" \"b/sp ace\\tx\\303\\244\"\nnew file mode 100644\nindex 0000000..e69de29\n";
        let p = patch_paths(patch).expect("parse");
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].path, "sp ace\tx\u{e4}");
        assert!(p[0].is_new);
    }

    #[test]
    fn rename_keeps_both_names() {
        let patch = b"diff --git a/old name.txt b/new name.txt\nsimilarity index 90%\nrename from old name.txt\nrename to new name.txt\nindex 1..2 100644\n--- a/old name.txt\n+++ b/new name.txt\n@@ -1 +1 @@\n-a\n+b\n";
        let p = patch_paths(patch).expect("parse");
        assert_eq!(
            p,
            vec![PatchPath {
                path: "new name.txt".into(),
                old_path: Some("old name.txt".into()),
                is_copy: false,
                is_new: false,
                is_deleted: false,
                is_symlink: false,
            }]
        );
        assert_eq!(
            p[0].written().collect::<Vec<_>>(),
            ["new name.txt", "old name.txt"]
        );
    }

    #[test]
    fn removed_line_like_header_is_hunk_content() {
        let patch = b"--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- a/evil\n+++ b/evil\n ctx\n";
        // The hunk's first two lines are content, read by the hunk's counts.
        let p = parse_patch(patch).expect("parse");
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].path.path, "q.sql");
        assert_eq!((p[0].lines_added, p[0].lines_removed), (1, 1));
        assert_eq!(p[0].added[0].text, "++ b/evil");
        assert_eq!(p[0].added[0].line, 5);
    }

    /// The scanner desync of issue 18: an added line `+++ b/tests/x.py` is
    /// content of its hunk, so what follows still belongs to `pkg/mod.py`.
    #[test]
    fn an_added_line_shaped_like_a_header_does_not_change_the_file() {
        let patch = b"diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1,3 @@\n x\n+++ b/tests/test_x.py\n+import unittest\n";
        let p = parse_patch(patch).expect("parse");
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].path.path, "pkg/mod.py");
        let added: Vec<&str> = p[0].added.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(added, ["++ b/tests/test_x.py", "import unittest"]);
    }

    #[test]
    fn a_hunk_line_git_refuses_makes_the_patch_corrupt() {
        let patch = b"--- a/q\n+++ b/q\n@@ -1,2 +1,2 @@\n-a\n+b\n@@ -9 +9 @@\n";
        assert!(parse_patch(patch).is_err());
    }

    #[test]
    fn symlink_deletion_and_spaces() {
        let patch = b"diff --git a/l b/l\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\ndiff --git a/a b c b/a b c\ndeleted file mode 100644\nindex 1..0\n";
        let p = patch_paths(patch).expect("parse");
        assert_eq!(p.len(), 2);
        assert!(p[0].is_symlink && p[0].is_new);
        assert_eq!(p[1].path, "a b c");
        assert!(p[1].is_deleted);
    }

    #[test]
    fn traditional_absolute_name_is_stripped_like_git() {
        let p = patch_paths(b"--- /dev/null\n+++ /etc/y\n@@ -0,0 +1 @@\n+x\n").expect("parse");
        assert_eq!(p[0].path, "etc/y");
        assert!(p[0].is_new);
    }

    #[test]
    fn git_header_absolute_name() {
        let p = patch_paths(b"diff --git a//etc/x b//etc/x\nnew file mode 100644\n--- /dev/null\n+++ b//etc/x\n@@ -0,0 +1 @@\n+x\n")
            .expect("parse");
        assert_eq!(p[0].path, "/etc/x");
    }

    /// git takes the shorter of two traditional names when one extends
    /// the other: `t.py.orig` is written to `t.py`.
    #[test]
    fn a_traditional_name_with_a_suffix_is_the_shorter_one() {
        let p = patch_paths(
            b"--- a/tests/test_x.py\n+++ b/tests/test_x.py.orig\n@@ -1 +1,2 @@\n a\n+b\n",
        )
        .expect("parse");
        assert_eq!(p[0].path, "tests/test_x.py");
        assert_eq!(p[0].old_path, None);
    }

    #[test]
    fn timestamps_end_traditional_names_and_the_epoch_creates() {
        let patch = b"--- a/my file.py\t1970-01-01 00:00:00.000000000 +0000\n+++ b/my file.py\t2024-05-01 10:00:00.123456789 +0200\n@@ -0,0 +1 @@\n+x\n";
        let p = patch_paths(patch).expect("parse");
        assert_eq!(p[0].path, "my file.py");
        assert!(p[0].is_new);
    }

    #[test]
    fn a_name_ends_at_a_carriage_return() {
        let p = patch_paths(b"--- a/x.py\r\n+++ b/x.py\r\n@@ -1 +1 @@\n-a\n+b\n").expect("parse");
        assert_eq!(p[0].path, "x.py");
    }

    /// A patch of 100,000 sections (the shape of issue 18's 16 MB patch)
    /// is read in linear time: every look past a line stays in its line.
    #[test]
    fn a_patch_of_many_sections_is_read_in_linear_time() {
        let mut patch = Vec::new();
        for i in 0..100_000 {
            patch.extend(
                format!("diff --git a/g/f{i}.py b/g/f{i}.py\nnew file mode 100644\nindex 0000000..e69de29\n")
                    .into_bytes(),
            );
        }
        let started = std::time::Instant::now();
        let files = parse_patch(&patch).expect("parse");
        assert_eq!(files.len(), 100_000);
        assert_eq!(files[99_999].path.path, "g/f99999.py");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_non_utf8_name_is_refused() {
        let e = patch_paths(b"--- a/caf\xe9\n+++ b/caf\xe9\n@@ -1 +1 @@\n-a\n+b\n")
            .expect_err("refused");
        assert!(e.to_string().contains("not valid UTF-8"), "{e}");
    }
}
