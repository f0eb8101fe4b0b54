//! The check against git itself: [`check_with_git`] renders assay's
//! reading as `git apply --numstat -z --summary` prints it and compares the
//! two, byte for byte.
//!
//! Invariant: the rendering is git's (`numstat_patch_list`,
//! `summary_patch_list`), so any difference is a difference of reading;
//! the first one found is named.

use super::cstr::c_str;
use super::parser::{Parser, Raw};
use crate::command::Git;
use crate::error::GitError;

/// Refuses `patch` unless `git apply` reads it as
/// [`parse_patch`](super::parse_patch) does: the same sections, each
/// writing the same path with the same line counts, the same creations,
/// deletions, renames, copies and mode changes.
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
