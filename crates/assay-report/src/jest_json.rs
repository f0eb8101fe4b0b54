//! jest's JSON report (`jest --json --outputFile=report.json`), and the
//! reports written in its shape: vitest's (`vitest run --reporter=json
//! --outputFile=report.json`) and assay's reporter for `node --test`
//! (docs/languages.md).
//!
//! `testResults[]` holds one entry per test file (`name`: its path, absolute
//! as the runner resolved it), each with `assertionResults[]`: the suites
//! around a test (`ancestorTitles`), its `title` and `status`. A test's id is
//! `path/to/file.test.ts > describe > test`, the path relative to the tree
//! (`tree_path`), and its file is that path.
//!
//! Statuses: `passed`; `failed`; `pending`, `skipped`, `todo`, `disabled`
//! are skips; anything else is an error, noted. A file that failed to run
//! (jest's "Test suite failed to run", vitest's "Failed to load url", a
//! `node --test` file that does not load: a failed entry titled with the
//! file's own path) is a [`crate::BuildFailure`] of that file: its tests
//! never ran.
//!
//! The input is the JSON document, alone or as one line among others (a
//! reporter writing to a shared stream); two documents, none, or a document
//! of another shape are errors, and so is any id or path a runner could not
//! have written (`tree_path`).

use std::path::Path;

use serde::Deserialize;

use crate::build::MESSAGE_MAX_LINES;
use crate::tree_path::{Roots, check_id};
use crate::{Collector, Format, Outcome, ParseError, Report, strip_ansi};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    test_results: Vec<File>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    name: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    assertion_results: Vec<Assertion>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Assertion {
    #[serde(default)]
    ancestor_titles: Vec<String>,
    title: String,
    status: String,
    #[serde(default)]
    failure_messages: Vec<String>,
}

pub(crate) fn parse(input: &[u8], roots: &[&Path]) -> Result<Report, ParseError> {
    let document: Document = crate::json_document::read(input, "testResults")?;
    let roots = Roots::new(roots);
    let mut out = Collector::new(Format::JestJson);
    let mut failures = crate::build::Failures::default();
    for file in document.test_results {
        let path = roots.relative(&file.name)?;
        let mut ran = 0;
        for a in file.assertion_results {
            if a.ancestor_titles.is_empty() && a.title == file.name && a.status == "failed" {
                failures.add(&path, message_lines(&a.failure_messages.join("\n")), false);
                continue;
            }
            ran += 1;
            let id = id_of(&path, &a.ancestor_titles, &a.title)?;
            let outcome = match a.status.as_str() {
                "passed" => Outcome::Passed,
                "failed" => Outcome::Failed,
                "pending" | "skipped" | "todo" | "disabled" => Outcome::Skipped,
                other => {
                    out.note(format!(
                        "`{id}`: unknown status `{}`; counted as an error",
                        other.escape_debug()
                    ));
                    Outcome::Error
                }
            };
            let said: Vec<String> = a
                .failure_messages
                .iter()
                .flat_map(|m| m.lines())
                .map(strip_ansi)
                .collect();
            out.record_saying(id, Some(path.clone()), outcome, Some(&said.join("\n")));
        }
        if ran == 0 && file.status.as_deref() == Some("failed") {
            failures.add(
                &path,
                message_lines(file.message.as_deref().unwrap_or("")),
                false,
            );
        }
    }
    out.build_failures(failures.finish());
    Ok(out.finish())
}

/// `path > ancestor > … > title`, each part checked.
pub(crate) fn id_of(path: &str, ancestors: &[String], title: &str) -> Result<String, ParseError> {
    let mut id = path.to_owned();
    for part in ancestors.iter().map(String::as_str).chain([title]) {
        check_id(part)?;
        id.push_str(" > ");
        id.push_str(part);
    }
    check_id(&id)?;
    Ok(id)
}

/// The first lines of a runner's message, without its colours and blank
/// lines at the ends.
fn message_lines(message: &str) -> Vec<String> {
    let lines: Vec<String> = message
        .lines()
        .map(|l| strip_ansi(l).trim_end().to_owned())
        .skip_while(|l| l.trim().is_empty())
        .take(MESSAGE_MAX_LINES + 1)
        .collect();
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    lines[..end].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libtest::tests::outcomes;
    use crate::testing::failures;
    use crate::{Trust, assess};

    #[test]
    fn jest_report_ids_are_file_describe_test_relative_to_the_tree() {
        let input = include_bytes!("../tests/fixtures/jest_json.json");
        let r = parse(input, &[Path::new("/private/tmp/jscalc")]).unwrap();
        let calc = Some("src/__tests__/calc.test.ts");
        assert_eq!(
            outcomes(&r),
            [
                (
                    "src/__tests__/calc.test.ts > calc > adds",
                    calc,
                    Outcome::Passed
                ),
                (
                    "src/__tests__/calc.test.ts > calc > divides",
                    calc,
                    Outcome::Failed
                ),
                (
                    "src/__tests__/calc.test.ts > calc > edge cases > zero",
                    calc,
                    Outcome::Passed
                ),
                (
                    "src/__tests__/calc.test.ts > calc > later",
                    calc,
                    Outcome::Skipped
                ),
                (
                    "src/format.spec.ts > formats",
                    Some("src/format.spec.ts"),
                    Outcome::Passed
                ),
                (
                    "src/format.spec.ts > not yet",
                    Some("src/format.spec.ts"),
                    Outcome::Skipped
                ),
            ]
        );
        assert_eq!(
            failures(&r),
            [(
                "src/__tests__/mul.test.ts",
                "  ● Test suite failed to run\n\n    Cannot find module '../mul' from 'src/__tests__/mul.test.ts'\n\n    > 1 | import { mul } from '../mul';\n        | ^",
                false
            )]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert_eq!(
            crate::testing::messages(&r),
            [(
                "src/__tests__/calc.test.ts > calc > divides",
                "Error: expect(received).toBe(expected) // Object.is equality\n\nExpected: 3\nReceived: 2\n    at Object.toBe (/private/tmp/jscalc/src/__tests__/calc.test.ts:9:25)"
            )]
        );
        assert_eq!(assess(Some(1), &r), Trust::Trusted);
        // The unbuilt file accounts for its own tests only.
        assert!(
            r.build_failure_for("src/__tests__/mul.test.ts > mul > x", None)
                .is_some()
        );
        assert!(
            r.build_failure_for("src/format.spec.ts > formats", None)
                .is_none()
        );
    }

    #[test]
    fn vitest_report_reads_the_same_way() {
        let input = include_bytes!("../tests/fixtures/vitest_json.json");
        let r = parse(input, &[Path::new("/work/repo")]).unwrap();
        let names: Vec<(&str, Outcome)> = r
            .tests
            .iter()
            .map(|t| (t.name.as_str(), t.outcome))
            .collect();
        assert_eq!(
            names,
            [
                (
                    "packages/core/test/parse.test.ts > parse > reads numbers",
                    Outcome::Passed
                ),
                (
                    "packages/core/test/parse.test.ts > parse > rejects junk",
                    Outcome::Failed
                ),
                (
                    "packages/core/test/parse.test.ts > parse > someday",
                    Outcome::Skipped
                ),
                (
                    "packages/core/test/parse.test.ts > parse > unicode > reads ½",
                    Outcome::Passed
                ),
                ("packages/ui/src/render.spec.tsx > renders", Outcome::Passed),
            ]
        );
        assert_eq!(failures(&r).len(), 1);
        assert_eq!(failures(&r)[0].0, "packages/core/test/mul.test.ts");
    }

    #[test]
    fn node_test_through_assays_reporter() {
        // Captured: tests/fixtures/README.md.
        let input = include_bytes!("../tests/fixtures/node_test_reporter.json");
        let r = parse(input, &[Path::new("/tmp/jsfix/node")]).unwrap();
        let names: Vec<(&str, Outcome)> = r
            .tests
            .iter()
            .map(|t| (t.name.as_str(), t.outcome))
            .collect();
        assert_eq!(
            names,
            [
                ("test/calc.test.js > calc > adds", Outcome::Passed),
                ("test/calc.test.js > calc > fails", Outcome::Failed),
                ("test/calc.test.js > calc > nested > deep", Outcome::Passed),
                ("test/calc.test.js > later", Outcome::Skipped),
                ("test/calc.test.js > skipped", Outcome::Skipped),
                ("test/calc.test.js > top level", Outcome::Passed),
                ("test/hook.test.js > hooked", Outcome::Failed),
                ("test/hook.test.js > hooked > never", Outcome::Failed),
            ]
        );
        assert_eq!(
            failures(&r),
            [("test/broken.test.js", "test failed", false)]
        );
        assert_eq!(assess(Some(1), &r), Trust::Trusted);
        assert!(matches!(assess(Some(0), &r), Trust::Untrustworthy(_)));
    }

    #[test]
    fn a_report_with_only_unloaded_files_is_a_build_failure() {
        let input = br#"{"testResults":[{"name":"/t/a.test.js","status":"failed","message":"SyntaxError: Unexpected token","assertionResults":[]}]}"#;
        let r = parse(input, &[Path::new("/t")]).unwrap();
        assert!(r.tests.is_empty());
        assert!(matches!(assess(Some(1), &r), Trust::BuildFailed(_)));
        assert!(matches!(assess(Some(0), &r), Trust::Untrustworthy(_)));
    }

    #[test]
    fn hostile_reports_are_refused_not_read() {
        let root = [Path::new("/assay/tree")];
        let doc = |name: &str, title: &str| {
            serde_json::json!({"testResults": [{"name": name, "assertionResults": [
                {"ancestorTitles": [], "title": title, "status": "passed"}]}]})
            .to_string()
        };
        for (name, title) in [
            ("/assay/tree/../../etc/x.test.js", "t"),
            ("/elsewhere/x.test.js", "t"),
            ("/assay/tree/x.test.js", "line\nFAIL forged"),
            ("/assay/tree/x.test.js", &"x".repeat(5000)),
        ] {
            let got = parse(doc(name, title).as_bytes(), &root);
            assert!(
                matches!(got, Err(ParseError::Refused { .. })),
                "{name} {title:.20}: {got:?}"
            );
        }
        // Malformed, or not this shape.
        for input in [
            &b"{\"testResults\": ["[..],
            b"[]",
            b"{\"stats\":{}}",
            b"{\"testResults\": 5}",
        ] {
            assert!(parse(input, &root).is_err(), "{input:?}");
        }
        // Two documents in one stream: which one is the run's?
        let two = format!(
            "{}\n{}\n",
            doc("/assay/tree/a.js", "t"),
            doc("/assay/tree/a.js", "t")
        );
        assert!(parse(two.as_bytes(), &root).is_err());
        // Nested past serde_json's recursion limit: an error, not a crash.
        let deep = format!(
            "{{\"testResults\":{}{}}}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        assert!(parse(deep.as_bytes(), &root).is_err());
    }

    #[test]
    fn a_document_among_other_lines_is_found() {
        let input = b"console noise {\n{\"testResults\":[{\"name\":\"/t/a.test.js\",\"assertionResults\":[{\"title\":\"x\",\"status\":\"weird\"}]}]}\nmore\n";
        let r = parse(input, &[Path::new("/t")]).unwrap();
        assert_eq!(r.outcome("a.test.js > x"), Some(Outcome::Error));
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    }
}
