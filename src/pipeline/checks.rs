//! Values that parse but make no sense, refused at load with a span into the
//! file: a timeout or evidence cap of 0, an empty test command, no screening
//! readings, absurd reruns, a redact pattern that matches everywhere, a
//! negative or NaN price, two sources with one name, a report file outside
//! the tree, the cache at the root of the filesystem.

use std::ops::Range;
use std::path::{Component, Path};

use super::{ConfigError, Origin, PipelineFile};

/// Reruns above this are a typo, not a policy: each one reruns the suite.
const MAX_RERUNS: u32 = 20;

/// The span of `key = …` inside `[table]` (the first one), or of the table
/// header, or the start of the file: for values that carry no span.
fn span_of(text: &str, table: &str, key: &str) -> Range<usize> {
    let mut offset = 0;
    let mut in_table = table.is_empty();
    let mut header = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            let name = t.trim_matches(|c| c == '[' || c == ']').trim();
            in_table = name == table;
            if in_table && header.is_none() {
                header = Some(offset..offset + line.trim_end().len());
            }
        } else if in_table
            && let Some(rest) = t.strip_prefix(key)
            && rest.trim_start().starts_with('=')
        {
            let start = offset + (line.len() - line.trim_start().len());
            return start..offset + line.trim_end().len();
        }
        offset += line.len();
    }
    header.unwrap_or(0..0)
}

fn escapes_tree(rel: &str) -> bool {
    let p = Path::new(rel);
    p.is_absolute()
        || p.components()
            .any(|c| matches!(c, Component::ParentDir | Component::RootDir))
}

fn is_root(p: &str) -> bool {
    let t = p.trim();
    t.is_empty()
        || Path::new(t)
            .components()
            .all(|c| matches!(c, Component::RootDir))
}

pub(super) fn check(p: &Origin<'_>, f: &PipelineFile) -> Result<(), ConfigError> {
    let at = |table: &str, key: &str, message: String, help: &str| {
        p.error_at(span_of(p.text, table, key), message, "here", help)
    };
    for (key, value) in [("cache", &f.cache), ("release", &f.release)] {
        if let Some(v) = value
            && is_root(v)
        {
            return Err(at(
                "",
                key,
                format!("`{key} = \"{v}\"` would make the filesystem root assay's {key} directory"),
                "name a directory of its own, e.g. `cache = \"cache\"`",
            ));
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for s in &f.source {
        if !names.insert(s.name.get_ref().clone()) {
            return Err(p.error_at(
                s.name.span(),
                format!("two sources are named `{}`", s.name.get_ref()),
                "named again here",
                "source names prefix the task ids: give each source its own",
            ));
        }
    }
    for (name, env) in f.envs() {
        let table = match name {
            Some(n) => format!("env.{}", n.get_ref()),
            None => "env".to_owned(),
        };
        let table = table.as_str();
        if env.timeout == Some(0) {
            return Err(at(
                table,
                "timeout",
                "`timeout` cannot be 0".into(),
                "seconds before a run is killed; leave it out for the default (300)",
            ));
        }
        if env.log_cap == Some(0) {
            return Err(at(
                table,
                "log_cap",
                "`log_cap` cannot be 0".into(),
                "bytes of evidence kept; every run would be ineligible. Leave it out for the default (64 MiB)",
            ));
        }
        if env.report.is_none() {
            return Err(at(
                table,
                "report",
                "`report` is missing".into(),
                &format!(
                    "the test command's report format: one of {} (or a `preset`, which gives one)",
                    super::env::formats().join(", ")
                ),
            ));
        }
        if env.test_command.trim().is_empty() {
            return Err(at(
                table,
                "test_command",
                "`test_command` is empty".into(),
                "the command that runs the tests, e.g. \"python3 -m unittest -v\"",
            ));
        }
        if let Some(rel) = &env.report_file
            && (rel.trim().is_empty() || escapes_tree(rel))
        {
            return Err(at(
                table,
                "report_file",
                format!("`report_file = \"{rel}\"` is not a path inside the staged tree"),
                "a relative path without `..`, e.g. \"report.xml\"",
            ));
        }
    }
    if f.screen.repeats == Some(0) {
        return Err(at(
            "screen",
            "repeats",
            "`repeats` cannot be 0".into(),
            "each state must be read at least once; 2 or more finds flaky tests",
        ));
    }
    if let Some(n) = f.grade.reruns
        && n > MAX_RERUNS
    {
        return Err(at(
            "grade",
            "reruns",
            format!("`reruns = {n}` reruns the suite up to {n} times per failing grade"),
            &format!("use at most {MAX_RERUNS} (the default is 3)"),
        ));
    }
    for pat in &f.redact.patterns {
        let matches_empty = regex::bytes::Regex::new(pat.get_ref()).is_ok_and(|r| r.is_match(b""));
        if pat.get_ref().is_empty() || matches_empty {
            return Err(p.error_at(
                pat.span(),
                "a redact pattern that matches the empty string would rewrite every log",
                "this pattern",
                "write the secret's shape, e.g. 'tok_[A-Za-z0-9]{32}'",
            ));
        }
    }
    for (model, kinds) in &f.prices {
        for (kind, price) in kinds {
            if !price.is_finite() || *price < 0.0 {
                return Err(at(
                    &format!("prices.{model}"),
                    kind,
                    format!("price `{kind}` of `{model}` is {price}"),
                    "prices are USD per million tokens: a finite number, 0 or more",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::span_of;

    #[test]
    fn spans_find_the_key_in_its_table() {
        let text = "cache = \"/\"\n[env]\ntimeout = 0\n[grade]\ntimeout = 5\n";
        assert_eq!(&text[span_of(text, "", "cache")], "cache = \"/\"");
        assert_eq!(&text[span_of(text, "env", "timeout")], "timeout = 0");
        assert_eq!(&text[span_of(text, "grade", "timeout")], "timeout = 5");
        assert_eq!(&text[span_of(text, "grade", "missing")], "[grade]");
    }
}
