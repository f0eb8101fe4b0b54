//! Quality metrics (`[[metric]]`): counting a tool's findings on one tree,
//! and what a session introduced against its task's gold tree.
//!
//! A finding carries the file it is about where the tool names one; paths
//! are made relative to the tree (`/assay/tree/a.py`, `./a.py` → `a.py`), and
//! findings in test files are dropped, so a session is measured on its code,
//! not on the hidden tests laid over it. What a session *introduced* is, per
//! file, how many more findings its tree has than the gold tree, summed
//! (findings with no file count as one file, `""`). The tool's output is
//! hostile (the code under test can print anything): it is read bounded by
//! the run's log cap, and a document that is not what the metric counts is
//! an error naming why, which fails that metric's node alone.

use std::collections::BTreeMap;

use assay_git::AddedLines;
use globset::GlobSet;
use regex::Regex;
use serde_json::Value;

use crate::model::config::Count;

/// What a tree's (or a patch's) findings were, per file.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Findings {
    /// File (relative to the tree; `""` for none) -> findings outside tests.
    pub(crate) by_path: BTreeMap<String, u64>,
    /// Findings in test files, not counted.
    pub(crate) in_tests: u64,
}

impl Findings {
    fn add(&mut self, path: Option<&str>, tests: &GlobSet) {
        let path = path.map(relative).unwrap_or_default();
        if !path.is_empty() && tests.is_match(&path) {
            self.in_tests += 1;
        } else {
            *self.by_path.entry(path).or_default() += 1;
        }
    }

    /// Findings outside tests.
    pub(crate) fn total(&self) -> u64 {
        self.by_path.values().sum()
    }
}

/// A tool's path made relative to the tree it ran in: the sandbox's tree
/// (`/assay/tree`, on both executors), a scratch tree of an unsandboxed
/// run (`…/tree/`), and `./` prefixes are dropped.
pub(crate) fn relative(path: &str) -> String {
    let mut p = path.trim();
    if p.starts_with('/')
        && let Some(at) = p.find("/tree/")
    {
        p = &p[at + "/tree/".len()..];
    }
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    p.trim_start_matches('/').to_owned()
}

/// The findings in a command's `output` (its log or the file it wrote)
/// and its exit code, counted as `count` says.
pub(crate) fn count(
    count: &Count,
    output: &[u8],
    exit_code: Option<i32>,
    tests: &GlobSet,
) -> Result<Findings, String> {
    let mut found = Findings::default();
    match count {
        Count::Exit => {
            if exit_code != Some(0) {
                found.add(None, tests);
            }
        }
        Count::Lines { pattern } => {
            let re = Regex::new(pattern).map_err(|e| e.to_string())?;
            for line in String::from_utf8_lossy(output).lines() {
                if let Some(c) = re.captures(line) {
                    found.add(c.name("path").map(|m| m.as_str()), tests);
                }
            }
        }
        Count::Json { at, path_key } => {
            let doc: Value = serde_json::from_slice(output)
                .map_err(|e| format!("the output is not the JSON the metric counts: {e}"))?;
            let mut hits = Vec::new();
            walk(&doc, at, None, path_key.as_deref(), &mut hits)?;
            for path in hits {
                found.add(path.as_deref(), tests);
            }
        }
    }
    Ok(found)
}

/// The elements of `doc` at `at`, each with its file: `path_key` on the
/// element or the nearest object above it (`inherited`).
fn walk(
    doc: &Value,
    at: &[String],
    inherited: Option<&str>,
    path_key: Option<&str>,
    hits: &mut Vec<Option<String>>,
) -> Result<(), String> {
    let here = path_key
        .and_then(|k| doc.get(k))
        .and_then(Value::as_str)
        .or(inherited);
    let Some((step, rest)) = at.split_first() else {
        hits.push(here.map(str::to_owned));
        return Ok(());
    };
    match (step.as_str(), doc) {
        ("*", Value::Array(items)) => {
            for item in items {
                walk(item, rest, here, path_key, hits)?;
            }
            Ok(())
        }
        ("*", other) => Err(format!(
            "the output has {} where the metric expects an array",
            kind_of(other)
        )),
        (key, Value::Object(map)) => match map.get(key) {
            Some(v) => walk(v, rest, here, path_key, hits),
            None => Err(format!("the output has no `{key}` where the metric counts")),
        },
        (key, other) => Err(format!(
            "the output has {} where the metric expects an object with `{key}`",
            kind_of(other)
        )),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Matches of `pattern` in the added lines of `patch`'s files that match
/// `files` (all when empty), test files apart. A patch that cannot be read
/// adds nothing.
pub(crate) fn added(patch: &[u8], pattern: &Regex, files: &GlobSet, tests: &GlobSet) -> Findings {
    let mut found = Findings::default();
    let sections = assay_git::parse_patch_with(patch, AddedLines::Keep).unwrap_or_default();
    for f in &sections {
        let path = f.path.path.as_str();
        if !files.is_empty() && !files.is_match(path) {
            continue;
        }
        for line in &f.added {
            for _ in pattern.find_iter(&line.text) {
                found.add(Some(path), tests);
            }
        }
    }
    found
}

/// What a session's findings add to its gold tree's: per file, the
/// findings beyond gold's, summed.
pub(crate) fn introduced(session: &BTreeMap<String, u64>, gold: &BTreeMap<String, u64>) -> u64 {
    session
        .iter()
        .map(|(path, n)| n.saturating_sub(gold.get(path).copied().unwrap_or(0)))
        .sum()
}

/// The median of `values` (the mean of the middle two for an even count).
pub(crate) fn median(values: &mut [u64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid] as f64
    } else {
        (values[mid - 1] + values[mid]) as f64 / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tests_glob() -> GlobSet {
        super::super::policy::globset(&["tests/**".to_owned(), "**/*_test.go".to_owned()]).unwrap()
    }

    fn none() -> GlobSet {
        GlobSet::empty()
    }

    #[test]
    fn paths_are_made_relative_to_the_tree() {
        assert_eq!(relative("/assay/tree/pkg/a.py"), "pkg/a.py");
        assert_eq!(relative("./calc.go"), "calc.go");
        assert_eq!(
            relative("/var/cache/assay/tmp/run-1/tree/src/x.ts"),
            "src/x.ts"
        );
        assert_eq!(relative("src/x.ts"), "src/x.ts");
    }

    #[test]
    fn lines_count_by_file_and_drop_test_files() {
        let out = b"./pkg/a.py:3: print call\npkg/a.py:9: print call\ntests/test_a.py:1: print call\nsummary line\n";
        let c = Count::Lines {
            pattern: r"^(?P<path>[^:]+):\d+: ".into(),
        };
        let f = count(&c, out, Some(1), &tests_glob()).unwrap();
        assert_eq!(f.by_path, BTreeMap::from([("pkg/a.py".to_owned(), 2)]));
        assert_eq!((f.total(), f.in_tests), (2, 1));
    }

    #[test]
    fn an_exit_code_is_one_finding_with_no_file() {
        let f = count(&Count::Exit, b"", Some(2), &none()).unwrap();
        assert_eq!(f.by_path, BTreeMap::from([(String::new(), 1)]));
        assert_eq!(
            count(&Count::Exit, b"", Some(0), &none()).unwrap().total(),
            0
        );
        // Killed (no exit code) is a finding too: the tool did not pass.
        assert_eq!(count(&Count::Exit, b"", None, &none()).unwrap().total(), 1);
    }

    #[test]
    fn json_findings_take_the_nearest_path() {
        let eslint =
            br#"[{"filePath":"/assay/tree/src/a.ts","messages":[{"ruleId":"x"},{"ruleId":"y"}]},
            {"filePath":"/assay/tree/tests/a.test.ts","messages":[{"ruleId":"x"}]}]"#;
        let c = Count::Json {
            at: vec!["*".into(), "messages".into(), "*".into()],
            path_key: Some("filePath".into()),
        };
        let f = count(&c, eslint, Some(1), &tests_glob()).unwrap();
        assert_eq!(f.by_path, BTreeMap::from([("src/a.ts".to_owned(), 2)]));
        assert_eq!(f.in_tests, 1);
    }

    #[test]
    fn malformed_json_is_an_error_that_says_why() {
        let c = Count::Json {
            at: vec!["*".into()],
            path_key: None,
        };
        let e = count(&c, b"[{\"a\": 1", Some(0), &none()).unwrap_err();
        assert!(e.contains("not the JSON"), "{e}");
        let e = count(&c, b"{\"a\": 1}", Some(0), &none()).unwrap_err();
        assert!(
            e.contains("an object where the metric expects an array"),
            "{e}"
        );
    }

    #[test]
    fn introduced_counts_only_what_gold_lacks() {
        let s = BTreeMap::from([("a.py".to_owned(), 3), ("b.py".to_owned(), 1)]);
        let g = BTreeMap::from([("a.py".to_owned(), 2), ("c.py".to_owned(), 5)]);
        assert_eq!(introduced(&s, &g), 2);
        assert_eq!(introduced(&g, &g), 0);
    }

    #[test]
    fn added_counts_matches_in_added_lines_of_chosen_files() {
        let patch = b"diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,1 +1,2 @@\n let x = 1;\n+let y: any = x as any;\ndiff --git a/src/b.test.ts b/src/b.test.ts\n--- a/src/b.test.ts\n+++ b/src/b.test.ts\n@@ -1,1 +1,2 @@\n let x = 1;\n+let z: any = 2;\n";
        let re = Regex::new(r":\s*any\b|\bas\s+any\b").unwrap();
        let ts = super::super::policy::globset(&["**/*.ts".to_owned()]).unwrap();
        let tests = super::super::policy::globset(&["**/*.test.ts".to_owned()]).unwrap();
        let f = added(patch, &re, &ts, &tests);
        assert_eq!(f.by_path, BTreeMap::from([("src/a.ts".to_owned(), 2)]));
        assert_eq!(f.in_tests, 1);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_middle_mean() {
        assert_eq!(median(&mut [3, 1, 2]), Some(2.0));
        assert_eq!(median(&mut [4, 1, 2, 0]), Some(1.5));
        assert_eq!(median(&mut []), None);
    }
}
