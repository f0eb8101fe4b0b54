//! Looking through the files a build wrote: for bytes that must not be there.

use std::path::{Path, PathBuf};

/// Every file below `dir` holding one of `needles`: (path, needle index).
pub fn grep_tree(dir: &Path, needles: &[&[u8]], hits: &mut Vec<(PathBuf, usize)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            grep_tree(&p, needles, hits);
        } else if t.is_file() {
            let bytes = std::fs::read(&p).unwrap_or_default();
            for (i, n) in needles.iter().enumerate() {
                if bytes.windows(n.len()).any(|w| w == *n) {
                    hits.push((p.clone(), i));
                }
            }
        }
    }
}
