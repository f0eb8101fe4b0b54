//! The model: assay's vocabulary and its rules, with no I/O. Records and
//! node kinds, node names, the configuration's words (arms, the exclusion
//! policy, patch caps, tamper rules, metric counts), sessions and their run
//! facts, an agent's endpoint, the benchmark's rules and the canaries.
//!
//! Everything above builds on it: `pipeline` reads and checks the file into
//! these words, `sessions` reads session files into them, `stages` runs the
//! operations (plan, nodes, executors, publish) and stores what the rules
//! decide. Nothing here imports those layers, and nothing here touches a
//! file, a process, the network, the engine or a clock (the test below reads
//! every file of the model for it).

pub(crate) mod canary;
pub(crate) mod config;
pub(crate) mod endpoint;
pub(crate) mod instances;
pub(crate) mod kind;
pub(crate) mod names;
pub(crate) mod rebuild;
pub(crate) mod records;
pub(crate) mod rules;
pub(crate) mod session;
pub(crate) mod shell;
pub(crate) mod shown;
pub(crate) mod why;

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// A file's code before its tests, without comment lines and without
    /// the contents of its string literals (a rule may name `#[tokio::test`
    /// as text it looks for; a raw string `r#"…"#` may span lines, as the
    /// seal helpers' code does).
    fn code(source: &str) -> String {
        let code = source.split("#[cfg(test)]").next().unwrap_or(source);
        let code = without_raw_strings(code);
        let mut out = String::new();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            let (mut quoted, mut escaped) = (false, false);
            for c in line.chars() {
                match (quoted, escaped, c) {
                    (true, false, '\\') => escaped = true,
                    (true, true, _) => escaped = false,
                    (_, _, '"') => quoted = !quoted,
                    (false, _, c) => out.push(c),
                    (true, false, _) => {}
                }
            }
            out.push('\n');
        }
        out
    }

    /// `source` with each raw string literal `r#"…"#` emptied.
    fn without_raw_strings(source: &str) -> String {
        let mut out = String::new();
        let mut rest = source;
        while let Some(at) = rest.find("r#\"") {
            out.push_str(&rest[..at]);
            out.push_str("r#\"\"#");
            rest = match rest[at + 3..].find("\"#") {
                Some(end) => &rest[at + 3 + end + 2..],
                None => "",
            };
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn a_raw_string_over_lines_is_no_code_but_what_follows_it_is() {
        let source = "const H: &str = r#\"\nuse std::fs;\n\"#;\nuse std::process;\n";
        let code = code(source);
        assert!(!code.contains("std::fs"), "{code}");
        assert!(code.contains("std::process"), "{code}");
    }

    /// The model's invariant, checked on every file in it: none names an
    /// I/O crate, module or type, nor a layer above it.
    #[test]
    fn no_file_of_the_model_does_io_or_reaches_up() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model");
        let mut files = Vec::new();
        sources(&dir, &mut files);
        assert!(files.len() > 20, "{files:?}");
        let forbidden = [
            "tokio",
            "std::fs",
            "std::process",
            "std::net",
            "std::time::Instant",
            "SystemTime",
            "reqwest",
            "rusqlite",
            "assay_engine",
            "assay_exec::",
            "assay_docker",
            "JobCtx",
            "TreeStore",
            "Source::open",
            "crate::stages",
            "crate::pipeline",
            "crate::sessions",
            "crate::cli",
            "crate::ops::audit",
        ];
        for file in files {
            let source = std::fs::read_to_string(&file).unwrap();
            let rel = file.strip_prefix(&dir).unwrap().display().to_string();
            let code = if rel.ends_with("tests.rs") {
                String::new()
            } else {
                code(&source)
            };
            for word in forbidden {
                assert!(!code.contains(word), "model/{rel} names `{word}`");
            }
        }
    }
}
