//! The walk over a patch, section by section, as git's `apply_patch`
//! does it: find the next header (a `diff --git` line, or a `---`/`+++`
//! pair followed by a hunk), read the section's body, go on after it.
//!
//! Invariant: [`Raw`] is git's `struct patch` for one section, tri-states
//! and all; only [`Raw::into_file`] turns it into the public types, and a
//! [`Parser`] keeps git's state across sections (the `-p` value guessed
//! once, from the first traditional section).

use super::hunks::fragment_header;
use super::{AddedLine, PatchFile, PatchPath};
use crate::error::GitError;

/// A section as git's `struct patch` holds it: names as bytes, `is_new` and
/// `is_delete` as git's tri-state (-1 unknown, 0, 1).
#[derive(Debug, Clone, Default)]
pub(super) struct Raw {
    pub(super) old_name: Option<Vec<u8>>,
    pub(super) new_name: Option<Vec<u8>>,
    pub(super) def_name: Option<Vec<u8>>,
    pub(super) is_new: i8,
    pub(super) is_delete: i8,
    pub(super) is_rename: bool,
    pub(super) is_copy: bool,
    pub(super) old_mode: u32,
    pub(super) new_mode: u32,
    pub(super) score: u32,
    pub(super) is_binary: bool,
    pub(super) lines_added: u64,
    pub(super) lines_removed: u64,
    pub(super) added: Vec<AddedLine>,
}

impl Raw {
    fn unknown() -> Raw {
        Raw {
            is_new: -1,
            is_delete: -1,
            ..Raw::default()
        }
    }

    pub(super) fn names_ok(&self) -> Result<(), GitError> {
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

    pub(super) fn into_file(self) -> Result<PatchFile, GitError> {
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

pub(super) struct Parser<'a> {
    pub(super) buf: &'a [u8],
    /// Where each line end is, for line numbers.
    line_ends: Vec<usize>,
    pub(super) p_value: i64,
    pub(super) p_value_known: bool,
    /// Keep each added line (else only count them).
    pub(super) keep_added: bool,
}

impl<'a> Parser<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Parser<'a> {
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
    pub(super) fn line_of(&self, pos: usize) -> usize {
        self.line_ends.partition_point(|end| *end < pos) + 1
    }

    pub(super) fn at_line(&self, pos: usize, reason: &str) -> GitError {
        GitError::Patch {
            line: self.line_of(pos),
            reason: reason.into(),
        }
    }

    /// Length of the line at `pos`, its line end included.
    pub(super) fn linelen(&self, pos: usize) -> usize {
        let rest = &self.buf[pos.min(self.buf.len())..];
        rest.iter()
            .position(|b| *b == b'\n')
            .map_or(rest.len(), |p| p + 1)
    }

    pub(super) fn rest(&self, pos: usize) -> &'a [u8] {
        &self.buf[pos.min(self.buf.len())..]
    }

    /// Every section, as `apply_patch` collects them.
    pub(super) fn parse(&mut self) -> Result<Vec<Raw>, GitError> {
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
}
