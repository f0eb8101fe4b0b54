//! The report's links checked as a reader follows them (tests only): every
//! `href` of every HTML file of a release names a file of that release and,
//! after `#`, an `id` on it. Plain std, so the integration tests include
//! this same file (`tests/util/mod.rs`) to check a release the binary wrote.

use std::collections::{BTreeMap, BTreeSet};

/// Every link that reaches nothing, as `file: href (why)`; none is a
/// release whose pages all lead somewhere. `files` is the release, by
/// path from its directory (`pages/…` with `/`).
pub(crate) fn dangling(files: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut ids: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for (name, bytes) in files.iter().filter(|(n, _)| n.ends_with(".html")) {
        let text = String::from_utf8_lossy(bytes);
        for href in attribute(&text, "href") {
            let (path, anchor) = href.split_once('#').unwrap_or((&href, ""));
            let target = if path.is_empty() {
                Some(name.clone())
            } else if path.contains(':') || path.starts_with('/') {
                None
            } else {
                resolve(name, path)
            };
            let Some((target, bytes)) = target.and_then(|t| files.get_key_value(&t)) else {
                out.push(format!("{name}: {href} (no such file in the release)"));
                continue;
            };
            if anchor.is_empty() {
                continue;
            }
            let known = ids.entry(target.as_str()).or_insert_with(|| {
                attribute(&String::from_utf8_lossy(bytes), "id")
                    .into_iter()
                    .collect()
            });
            if !known.contains(anchor) {
                out.push(format!("{name}: {href} (no id {anchor:?} on {target})"));
            }
        }
    }
    out
}

/// The values of every `name="…"` in `html`, unescaped.
fn attribute(html: &str, name: &str) -> Vec<String> {
    let open = format!(" {name}=\"");
    html.match_indices(&open)
        .filter_map(|(at, _)| {
            let rest = &html[at + open.len()..];
            let end = rest.find('"')?;
            Some(unescape(&rest[..end]))
        })
        .collect()
}

/// Text of an HTML attribute value as `markup::esc` wrote it.
pub(crate) fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Every file beneath `dir`, by its path from there (with `/`).
#[allow(dead_code)]
pub(crate) fn read(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if let Ok(rel) = path.strip_prefix(dir) {
                let name = rel.to_string_lossy().replace('\\', "/");
                files.insert(name, std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

/// `path` relative to the directory of release file `from`, as a release
/// path; none where it climbs out of the release.
fn resolve(from: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(files: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        files
            .iter()
            .map(|(n, t)| ((*n).to_owned(), t.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn a_link_to_a_missing_file_or_anchor_is_found_and_a_good_one_is_not() {
        let files = release(&[
            (
                "report.html",
                "<a href=\"pages/t.html#s-1\"> <a href=\"#top\"> <p id=\"top\">",
            ),
            (
                "pages/t.html",
                "<a href=\"../report.html\"> <a href=\"x.html\"> <a href=\"t.html#s-2\"> \
                 <section id=\"s-1\"> <a href=\"https://example.invalid/\"> \
                 <a href=\"../../etc/passwd\">",
            ),
        ]);
        assert_eq!(
            dangling(&files),
            [
                "pages/t.html: x.html (no such file in the release)",
                "pages/t.html: t.html#s-2 (no id \"s-2\" on pages/t.html)",
                "pages/t.html: https://example.invalid/ (no such file in the release)",
                "pages/t.html: ../../etc/passwd (no such file in the release)",
            ]
        );
    }
}
