//! Test files named by a report, as paths relative to the tree's root.
//!
//! JavaScript runners name a test's file by its absolute path, resolved
//! through symlinks (jest, vitest and `node --test` print `realpath`s). The
//! tree the run saw may be reached through a symlink (`/tmp` is
//! `/private/tmp` on macOS), so a path is made relative against each root as
//! given and as resolved; a path that lies under none of them, or climbs out
//! with `..`, is refused: a report naming files outside its tree was not
//! written by the run's runner.
//!
//! Ids are checked too: no control character (a newline would forge a line
//! of a results table or a rerun command) and at most [`MAX_ID_BYTES`].

use std::path::{Component, Path, PathBuf};

use crate::ParseError;

/// The longest test id a report may name.
pub const MAX_ID_BYTES: usize = 2048;

/// The roots a report's absolute paths are made relative to: each as given
/// and, where it exists here, as resolved through symlinks.
pub(crate) struct Roots(Vec<PathBuf>);

impl Roots {
    pub(crate) fn new(roots: &[&Path]) -> Roots {
        let mut all = Vec::new();
        for root in roots {
            all.push(root.to_path_buf());
            if let Ok(real) = std::fs::canonicalize(root)
                && !all.contains(&real)
            {
                all.push(real);
            }
        }
        Roots(all)
    }

    /// `file` relative to the tree, `/`-separated, without `.` parts. An
    /// absolute path is taken relative to the first root it lies under (as
    /// printed, or resolved where it exists here); with no roots at all it is
    /// kept as printed.
    pub(crate) fn relative(&self, file: &str) -> Result<String, ParseError> {
        let refuse = |why: &str| ParseError::Refused {
            message: format!("test file `{}` {why}", file.escape_debug()),
        };
        check_text(file).map_err(|why| refuse(&why))?;
        let path = Path::new(file);
        let rel: PathBuf = if path.is_absolute() && !self.0.is_empty() {
            let resolved = std::fs::canonicalize(path).ok();
            let candidates = std::iter::once(path).chain(resolved.as_deref());
            candidates
                .flat_map(|p| self.0.iter().filter_map(move |r| p.strip_prefix(r).ok()))
                .next()
                .ok_or_else(|| refuse("lies outside the tree"))?
                .to_path_buf()
        } else {
            path.to_path_buf()
        };
        let mut parts = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(p) => {
                    parts.push(p.to_str().ok_or_else(|| refuse("is not UTF-8"))?.to_owned())
                }
                Component::CurDir => {}
                Component::RootDir if self.0.is_empty() => parts.push(String::new()),
                Component::ParentDir => return Err(refuse("climbs out with `..`")),
                _ => return Err(refuse("is not a path inside the tree")),
            }
        }
        if parts.iter().all(String::is_empty) {
            return Err(refuse("names no file"));
        }
        Ok(parts.join("/"))
    }
}

/// Refuses an id (or a part of one) with a control character or longer than
/// [`MAX_ID_BYTES`].
pub(crate) fn check_id(id: &str) -> Result<(), ParseError> {
    check_text(id).map_err(|why| ParseError::Refused {
        message: format!("test id `{}` {why}", truncated(id).escape_debug()),
    })
}

fn check_text(text: &str) -> Result<(), String> {
    if text.len() > MAX_ID_BYTES {
        return Err(format!(
            "is {} bytes long (at most {MAX_ID_BYTES})",
            text.len()
        ));
    }
    if text.chars().any(char::is_control) {
        return Err("holds a control character (a newline?)".to_owned());
    }
    Ok(())
}

fn truncated(s: &str) -> &str {
    let mut end = s.len().min(80);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_are_made_relative_to_the_root_as_given_or_resolved() {
        let roots = Roots::new(&[Path::new("/assay/tree")]);
        assert_eq!(
            roots
                .relative("/assay/tree/src/__tests__/a.test.ts")
                .unwrap(),
            "src/__tests__/a.test.ts"
        );
        assert_eq!(roots.relative("./test/a.js").unwrap(), "test/a.js");
        for bad in [
            "/etc/passwd",
            "/assay/tree/../x.js",
            "test/../../x.js",
            "/assay/tree",
        ] {
            assert!(
                matches!(roots.relative(bad), Err(ParseError::Refused { .. })),
                "{bad}"
            );
        }
        assert!(roots.relative("test/a\n.js").is_err());
        // No root: kept as printed (a report read outside any run).
        assert_eq!(Roots::new(&[]).relative("/x/a.js").unwrap(), "/x/a.js");
    }

    #[test]
    fn a_root_reached_through_a_symlink_matches_the_resolved_paths_a_runner_prints() {
        let base = std::env::temp_dir().join(format!("assay-report-roots-{}", std::process::id()));
        let real = base.join("private/tree");
        std::fs::create_dir_all(real.join("test")).unwrap();
        std::fs::write(real.join("test/a.test.js"), "").unwrap();
        let link = base.join("tree");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let real = std::fs::canonicalize(&real).unwrap();
        let link_roots = Roots::new(&[&link]);
        let printed = format!("{}/test/a.test.js", real.display());
        assert_eq!(link_roots.relative(&printed).unwrap(), "test/a.test.js");
        // And the other way round: the root resolved, the report through the link.
        let real_roots = Roots::new(&[&real]);
        let via_link = format!("{}/test/a.test.js", link.display());
        assert_eq!(real_roots.relative(&via_link).unwrap(), "test/a.test.js");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
