//! What an untrusted tree or patch may not do.
//!
//! A staged tree is later written to disk and run. So no path may leave the
//! root (`..`, absolute), none may reach git metadata (a `.git` component,
//! compared case-insensitively as git does), and no symlink may point
//! outside the root. Symlink targets are resolved lexically from the link's
//! directory, following other symlinks of the same tree (a chain such as
//! `l2 -> d/l1/..` with `d/l1 -> ..` escapes although each link looks
//! harmless alone). Nothing here touches the file system.

use std::collections::HashMap;

/// Why `path` is not acceptable as a tree path, if it is not.
pub(crate) fn path_violation(path: &str) -> Option<String> {
    if path.is_empty() {
        return Some("empty path".into());
    }
    if path.starts_with('/') {
        return Some("absolute path".into());
    }
    for component in path.split('/') {
        if let Some(reason) = component_violation(component) {
            return Some(reason);
        }
    }
    None
}

/// Why a single path component (a tree entry name) is not acceptable.
pub(crate) fn component_violation(component: &str) -> Option<String> {
    match component {
        "" => Some("empty path component".into()),
        "." => Some("`.` path component".into()),
        ".." => Some("`..` path component leaves the tree".into()),
        c if c.eq_ignore_ascii_case(".git") => Some("path inside git metadata (.git)".into()),
        c if c.contains(['\0', '/']) => Some("invalid character in path component".into()),
        _ => None,
    }
}

/// Resolves symlinks of one tree, lexically and without a file system.
pub(crate) struct LinkResolver<'a> {
    links: &'a HashMap<String, String>,
}

/// At most this many symlinks are followed while resolving one path (as
/// Linux's MAXSYMLINKS); more is treated as an escape.
const MAX_LINKS: usize = 40;

impl<'a> LinkResolver<'a> {
    /// `links` maps each symlink path of the tree to its target.
    pub(crate) fn new(links: &'a HashMap<String, String>) -> LinkResolver<'a> {
        LinkResolver { links }
    }

    /// Why the symlink at `path` with `target` escapes the root, if it does.
    pub(crate) fn escape(&self, path: &str, target: &str) -> Option<String> {
        if target.starts_with('/') {
            return Some(format!("symlink target `{target}` is absolute"));
        }
        let mut stack: Vec<String> = path.split('/').map(str::to_string).collect();
        stack.pop();
        let mut budget = MAX_LINKS;
        match self.walk(&mut stack, target, &mut budget) {
            Ok(()) => None,
            Err(why) => Some(format!("symlink target `{target}` {why}")),
        }
    }

    /// Appends `target`'s components to `stack`, following symlinks.
    fn walk(
        &self,
        stack: &mut Vec<String>,
        target: &str,
        budget: &mut usize,
    ) -> Result<(), String> {
        if target.starts_with('/') {
            return Err("resolves through an absolute symlink".into());
        }
        for component in target.split('/') {
            match component {
                "" | "." => {}
                ".." => {
                    if stack.pop().is_none() {
                        return Err("leaves the tree".into());
                    }
                }
                c => {
                    stack.push(c.to_string());
                    let here = stack.join("/");
                    if let Some(next) = self.links.get(&here) {
                        if *budget == 0 {
                            return Err("has too many levels of symlinks".into());
                        }
                        *budget -= 1;
                        stack.pop();
                        self.walk(stack, next, budget)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert!(path_violation("a/b").is_none());
        assert!(path_violation("../x").is_some());
        assert!(path_violation("a/../../x").is_some());
        assert!(path_violation("/etc/x").is_some());
        assert!(path_violation(".git/config").is_some());
        assert!(path_violation("sub/.GIT/hooks/pre-commit").is_some());
        assert!(path_violation(".gitignore").is_none());
    }

    #[test]
    fn links() {
        let mut links = HashMap::new();
        links.insert("d/l1".to_string(), "..".to_string());
        links.insert("l2".to_string(), "d/l1/..".to_string());
        links.insert("ok".to_string(), "d/file".to_string());
        let r = LinkResolver::new(&links);
        assert!(r.escape("d/l1", "..").is_none());
        assert!(r.escape("l2", "d/l1/..").is_some());
        assert!(r.escape("ok", "d/file").is_none());
        assert!(r.escape("a/b", "../../x").is_some());
        assert!(r.escape("a/b", "../x").is_none());
        assert!(r.escape("x", "/etc/passwd").is_some());
        links.insert("loop".to_string(), "loop".to_string());
        let r = LinkResolver::new(&links);
        assert!(r.escape("loop", "loop").is_some());
    }
}
