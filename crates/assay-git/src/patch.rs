//! Which paths a patch touches, read from its headers the way `git apply`
//! reads them.
//!
//! Understands git diffs (`diff --git a/x b/y` with extended headers, quoted
//! names with C escapes, renames/copies, mode lines, binary patches) and
//! traditional unified diffs (`--- a/x` / `+++ b/x`, stripped of one leading
//! component like `git apply -p1`). Hunks are skipped by their line counts so
//! a removed line starting with `-- ` is never mistaken for a header. The
//! result is used to decide exclusions and to refuse escaping paths before a
//! patch is applied; it is not a patch applier.

use crate::error::GitError;

/// One file section of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchPath {
    /// The path after the patch (before it, for a deletion).
    pub path: String,
    /// The path before the patch when it differs (rename or copy).
    pub old_path: Option<String>,
    pub is_new: bool,
    pub is_deleted: bool,
    /// The resulting entry is a symlink (mode 120000).
    pub is_symlink: bool,
}

/// Parses the file sections of `patch`; see the module documentation.
pub fn patch_paths(patch: &[u8]) -> Result<Vec<PatchPath>, GitError> {
    let lines: Vec<&[u8]> = split_lines(patch);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(rest) = line.strip_prefix(b"diff --git ") {
            let (section, next) = git_section(&lines, i, rest)?;
            out.push(section);
            i = next;
        } else if line.starts_with(b"--- ")
            && lines.get(i + 1).is_some_and(|l| l.starts_with(b"+++ "))
            && lines.get(i + 2).is_some_and(|l| l.starts_with(b"@@ -"))
        {
            let old = traditional_name(&line[4..], i + 1)?;
            let new = traditional_name(&lines[i + 1][4..], i + 2)?;
            out.push(section_from_names(old, new, false, false, false, i + 1)?);
            i = skip_hunks(&lines, i + 2);
        } else {
            i += 1;
        }
    }
    Ok(out)
}

fn split_lines(data: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    if data.ends_with(b"\n") {
        lines.pop();
    }
    lines
        .into_iter()
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect()
}

fn malformed(line: usize, reason: impl Into<String>) -> GitError {
    GitError::Patch {
        line,
        reason: reason.into(),
    }
}

fn to_string(bytes: Vec<u8>, line: usize) -> Result<String, GitError> {
    String::from_utf8(bytes).map_err(|_| malformed(line, "path is not valid UTF-8"))
}

/// Parses a C-quoted name at the start of `s` (which starts with `"`);
/// returns the unquoted bytes and the remainder after the closing quote.
fn unquote(s: &[u8], line: usize) -> Result<(Vec<u8>, &[u8]), GitError> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'"' => return Ok((out, &s[i + 1..])),
            b'\\' => {
                let c = *s
                    .get(i + 1)
                    .ok_or_else(|| malformed(line, "dangling escape"))?;
                i += 2;
                match c {
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'v' => out.push(11),
                    b'\\' => out.push(b'\\'),
                    b'"' => out.push(b'"'),
                    b'0'..=b'3' => {
                        let digits = s
                            .get(i - 1..i + 2)
                            .ok_or_else(|| malformed(line, "short octal escape"))?;
                        let mut v: u32 = 0;
                        for d in digits {
                            if !(b'0'..=b'7').contains(d) {
                                return Err(malformed(line, "bad octal escape"));
                            }
                            v = v * 8 + u32::from(d - b'0');
                        }
                        out.push(u8::try_from(v).map_err(|_| malformed(line, "bad octal escape"))?);
                        i += 2;
                    }
                    _ => return Err(malformed(line, "unknown escape in quoted path")),
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Err(malformed(line, "unterminated quoted path"))
}

/// Drops the first path component, like `git apply -p1`.
fn strip_component(name: &[u8]) -> &[u8] {
    match name.iter().position(|b| *b == b'/') {
        Some(p) => &name[p + 1..],
        None => name,
    }
}

/// Collapses repeated slashes, as git does with patch names.
fn squash_slashes(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    for &b in name {
        if b == b'/' && out.last() == Some(&b'/') {
            continue;
        }
        out.push(b);
    }
    out
}

/// A name from a `---`/`+++` line: `None` for /dev/null, otherwise the name
/// with one leading component stripped. A trailing timestamp (after a tab)
/// is dropped.
fn traditional_name(s: &[u8], line: usize) -> Result<Option<String>, GitError> {
    let raw: Vec<u8> = if s.starts_with(b"\"") {
        unquote(s, line)?.0
    } else {
        let end = s.iter().position(|b| *b == b'\t').unwrap_or(s.len());
        let mut name = &s[..end];
        while name.last() == Some(&b' ') {
            name = &name[..name.len() - 1];
        }
        name.to_vec()
    };
    if raw == b"/dev/null" {
        return Ok(None);
    }
    Ok(Some(to_string(
        squash_slashes(strip_component(&raw)),
        line,
    )?))
}

/// A name from a rename/copy line: taken verbatim (no prefix to strip).
fn verbatim_name(s: &[u8], line: usize) -> Result<String, GitError> {
    let raw = if s.starts_with(b"\"") {
        unquote(s, line)?.0
    } else {
        s.to_vec()
    };
    to_string(squash_slashes(&raw), line)
}

/// The two names of a `diff --git` header line.
fn header_names(rest: &[u8], line: usize) -> Result<(Option<String>, Option<String>), GitError> {
    if rest.starts_with(b"\"") {
        let (a, tail) = unquote(rest, line)?;
        let tail = tail.strip_prefix(b" ").unwrap_or(tail);
        let b = if tail.starts_with(b"\"") {
            unquote(tail, line)?.0
        } else {
            tail.to_vec()
        };
        let a = to_string(squash_slashes(strip_component(&a)), line)?;
        let b = to_string(squash_slashes(strip_component(&b)), line)?;
        return Ok((Some(a), Some(b)));
    }
    if let Some(pos) = rest.iter().position(|b| *b == b'"') {
        // Unquoted first name, quoted second one.
        let a = rest[..pos]
            .strip_suffix(b" ")
            .unwrap_or(&rest[..pos])
            .to_vec();
        let b = unquote(&rest[pos..], line)?.0;
        let a = to_string(squash_slashes(strip_component(&a)), line)?;
        let b = to_string(squash_slashes(strip_component(&b)), line)?;
        return Ok((Some(a), Some(b)));
    }
    // Unquoted names may contain spaces: pick the split where both halves
    // name the same path (git's rule when no other header names the files).
    for (idx, _) in rest.iter().enumerate().filter(|(_, b)| **b == b' ') {
        let a = strip_component(&rest[..idx]);
        let b = strip_component(&rest[idx + 1..]);
        if a == b && !a.is_empty() {
            let name = to_string(squash_slashes(a), line)?;
            return Ok((Some(name.clone()), Some(name)));
        }
    }
    // Different names (a rename): the rename lines or ---/+++ lines decide.
    Ok((None, None))
}

fn is_symlink_mode(s: &[u8]) -> bool {
    s.trim_ascii() == b"120000"
}

/// Parses one `diff --git` section starting at `start`; returns the section
/// and the index of the first line after it.
fn git_section(lines: &[&[u8]], start: usize, rest: &[u8]) -> Result<(PatchPath, usize), GitError> {
    let lineno = start + 1;
    let (mut old, mut new) = header_names(rest, lineno)?;
    let (mut is_new, mut is_deleted, mut symlink) = (false, false, false);
    let mut i = start + 1;
    while i < lines.len() {
        let l = lines[i];
        let n = i + 1;
        if let Some(s) = l.strip_prefix(b"--- ") {
            old = traditional_name(s, n)?;
        } else if let Some(s) = l.strip_prefix(b"+++ ") {
            new = traditional_name(s, n)?;
        } else if let Some(s) = l.strip_prefix(b"new file mode ") {
            is_new = true;
            symlink = is_symlink_mode(s);
        } else if l.starts_with(b"deleted file mode ") {
            is_deleted = true;
        } else if let Some(s) = l.strip_prefix(b"new mode ") {
            symlink = is_symlink_mode(s);
        } else if l.starts_with(b"old mode ") {
        } else if let Some(s) = l
            .strip_prefix(b"rename from ")
            .or_else(|| l.strip_prefix(b"copy from "))
            .or_else(|| l.strip_prefix(b"rename old "))
        {
            old = Some(verbatim_name(s, n)?);
        } else if let Some(s) = l
            .strip_prefix(b"rename to ")
            .or_else(|| l.strip_prefix(b"copy to "))
            .or_else(|| l.strip_prefix(b"rename new "))
        {
            new = Some(verbatim_name(s, n)?);
        } else if let Some(s) = l.strip_prefix(b"index ") {
            if let Some(mode) = s.split(|b| *b == b' ').nth(1) {
                symlink = symlink || is_symlink_mode(mode);
            }
        } else if l.starts_with(b"similarity index ") || l.starts_with(b"dissimilarity index ") {
        } else {
            break;
        }
        i += 1;
    }
    // `--- /dev/null` / `+++ /dev/null` mark creations and deletions too.
    if old.is_none() && new.is_some() {
        is_new = true;
    }
    if new.is_none() && old.is_some() && !is_new {
        is_deleted = true;
    }
    let section = section_from_names(old, new, is_new, is_deleted, symlink, lineno)?;
    Ok((section, skip_hunks(lines, i)))
}

fn section_from_names(
    old: Option<String>,
    new: Option<String>,
    is_new: bool,
    is_deleted: bool,
    is_symlink: bool,
    line: usize,
) -> Result<PatchPath, GitError> {
    let (path, old_path, is_new, is_deleted) = match (old, new) {
        (None, None) => return Err(malformed(line, "file section names no path")),
        (None, Some(new)) => (new, None, true, false),
        (Some(old), None) => (old, None, false, true),
        (Some(old), Some(new)) if old == new || is_new || is_deleted => {
            (if is_deleted { old } else { new }, None, is_new, is_deleted)
        }
        (Some(old), Some(new)) => (new, Some(old), false, false),
    };
    Ok(PatchPath {
        path,
        old_path,
        is_new,
        is_deleted,
        is_symlink,
    })
}

/// Parses `@@ -a,b +c,d @@` into the old and new line counts.
fn hunk_counts(line: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(line.strip_prefix(b"@@ -")?).ok()?;
    let mut parts = text.split(' ');
    let count = |range: &str| -> Option<u64> {
        match range.split_once(',') {
            Some((_, n)) => n.parse().ok(),
            None => range.parse::<u64>().ok().map(|_| 1),
        }
    };
    let old = count(parts.next()?)?;
    let new = count(parts.next()?.strip_prefix('+')?)?;
    Some((old, new))
}

/// Skips hunks (and binary patch data) from `i`; returns the index of the
/// first line that can start a new section.
fn skip_hunks(lines: &[&[u8]], mut i: usize) -> usize {
    while i < lines.len() {
        let l = lines[i];
        if let Some((mut old, mut new)) = hunk_counts(l) {
            i += 1;
            while i < lines.len() && (old > 0 || new > 0) {
                match lines[i].first() {
                    Some(b' ') | None => {
                        old = old.saturating_sub(1);
                        new = new.saturating_sub(1);
                    }
                    Some(b'-') => old = old.saturating_sub(1),
                    Some(b'+') => new = new.saturating_sub(1),
                    Some(b'\\') => {}
                    _ => break,
                }
                i += 1;
            }
            // A "\ No newline at end of file" marker may follow the last line.
            while i < lines.len() && lines[i].starts_with(b"\\") {
                i += 1;
            }
        } else if l.starts_with(b"diff --git ") || l.starts_with(b"--- ") {
            return i;
        } else {
            i += 1;
        }
    }
    i
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
                is_new: false,
                is_deleted: false,
                is_symlink: false,
            }]
        );
    }

    #[test]
    fn removed_line_like_header_is_hunk_content() {
        let patch =
            b"--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,1 @@\n--- a/evil\n+++ b/evil\n@@ -1 +1 @@\n";
        // The hunk's first two lines are content; the remainder is not a
        // valid section (no hunk of its own), so only q.sql is named.
        let p = patch_paths(patch).expect("parse");
        assert_eq!(p[0].path, "q.sql");
        assert_eq!(p.len(), 1);
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
}
