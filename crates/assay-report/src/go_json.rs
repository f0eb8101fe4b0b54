//! `go test -json` output (test2json events), one object per line:
//! `{"Action":"run"|"pass"|"fail"|"skip"|"output"|…,"Package":…,"Test":…}`.
//!
//! A test's name is `package.TestName` (subtests `package.TestName/sub`,
//! each its own entry next to its parent), and its file is the package: Go
//! reruns by package. Events without `Test` are the package's own result.
//! A test that ran but never got a result (the binary panicked or was
//! killed) is an `Error`.
//!
//! A package whose test binary does not build is a [`BuildFailure`] of the
//! package, in either of the shapes Go prints:
//!
//! - Go < 1.24: plain text, not JSON, from the go command itself: the
//!   compiler's block (`# example.com/calc [example.com/calc.test]` then its
//!   errors) and `FAIL\texample.com/calc [build failed]` (`[setup failed]`
//!   when an import cannot be resolved); the `FAIL` line may also arrive as
//!   a package `output` event.
//! - Go ≥ 1.24: `build-output` events (with `ImportPath`, not `Package`)
//!   carrying the compiler's block, `build-fail`, then the package's `fail`
//!   event naming it in `FailedBuild`.
//!
//! The message is the compiler's block without its `# …` header. A package
//! that fails without a failing test and without a recognised build failure
//! (TestMain, a timeout panic) becomes an `Error` entry named after the
//! package, so it cannot pass for "no failing tests".
//!
//! A failed test's message is what it printed (its `output` events without
//! go's own `=== RUN` / `--- FAIL` lines): `t.Error`s, a panic and its
//! frames.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::build::{Failures, MESSAGE_MAX_LINES};
use crate::message::TEST_MESSAGE_MAX_LINES;
use crate::{BuildFailure, Collector, Format, Outcome, ParseError, Report, json_lines, text_lines};

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    action: String,
    package: Option<String>,
    test: Option<String>,
    output: Option<String>,
    import_path: Option<String>,
    failed_build: Option<String>,
}

pub(crate) fn parse(input: &[u8]) -> Result<Report, ParseError> {
    let mut out = Collector::new(Format::GoTestJson);
    // (package, test) → line it started on.
    let mut running: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut failed_packages: BTreeSet<String> = BTreeSet::new();
    let mut packages_with_failing_tests: BTreeSet<String> = BTreeSet::new();
    let mut text = GoText::default();
    // `build-output` of each ImportPath (Go ≥ 1.24).
    let mut build_output: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // What each (package, test) printed, its first lines: a failure's words.
    let mut printed: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (number, raw) in text_lines(input) {
        let line = raw.trim();
        if !line.starts_with('{') {
            text.line(&raw);
            continue;
        }
        let owns = |v: &serde_json::Value| v.get("Action").is_some();
        let Some(event): Option<Event> = json_lines::event(&mut out, number, line, owns)? else {
            continue;
        };
        // `build-output` / `build-fail` (Go ≥ 1.24) carry `ImportPath`, not
        // `Package`; the package's own `fail` follows them.
        if let Some(path) = event.import_path.filter(|p| !p.is_empty()) {
            match event.action.as_str() {
                "build-output" => {
                    let lines = build_output.entry(path).or_default();
                    for l in event.output.as_deref().unwrap_or("").lines() {
                        if !l.starts_with("# ") && lines.len() <= MESSAGE_MAX_LINES {
                            lines.push(l.to_owned());
                        }
                    }
                }
                "build-fail" => {
                    let lines = build_output.get(&path).cloned().unwrap_or_default();
                    text.failures.add(package_of(&path), lines, false);
                }
                _ => {}
            }
            continue;
        }
        let Some(package) = event.package.filter(|p| !p.is_empty()) else {
            continue;
        };
        if event.test.as_deref().is_none_or(str::is_empty) {
            if let Some(output) = &event.output {
                for l in output.lines() {
                    text.fail_line(l);
                }
            }
            if let Some(failed) = event.failed_build.filter(|f| !f.is_empty()) {
                let lines = build_output.get(&failed).cloned().unwrap_or_default();
                text.failures.add(&package, lines, false);
            }
        }
        if let (Some(test), Some(output)) = (event.test.as_deref(), event.output.as_deref())
            && event.action == "output"
            && !test.is_empty()
        {
            let lines = printed
                .entry((package.clone(), test.to_owned()))
                .or_default();
            for l in output.lines().filter(|l| !is_go_test_status(l)) {
                if lines.len() <= TEST_MESSAGE_MAX_LINES {
                    lines.push(l.to_owned());
                }
            }
        }
        let outcome = match event.action.as_str() {
            "pass" => Outcome::Passed,
            "fail" => Outcome::Failed,
            "skip" => Outcome::Skipped,
            "run" => {
                if let Some(test) = event.test {
                    running.insert((package, test), number);
                }
                continue;
            }
            _ => continue,
        };
        match event.test.filter(|t| !t.is_empty()) {
            Some(test) => {
                running.remove(&(package.clone(), test.clone()));
                let said = printed.remove(&(package.clone(), test.clone()));
                if outcome.is_failure() {
                    packages_with_failing_tests.insert(package.clone());
                }
                let said = said.map(|lines| lines.join("\n"));
                out.record_saying(
                    format!("{package}.{test}"),
                    Some(package),
                    outcome,
                    said.as_deref(),
                );
            }
            None if outcome == Outcome::Failed => {
                failed_packages.insert(package);
            }
            None => {}
        }
    }
    for ((package, test), line) in running {
        out.note(format!(
            "line {line}: `{package}.{test}` ran but got no result; counted as an error"
        ));
        packages_with_failing_tests.insert(package.clone());
        let said = printed.remove(&(package.clone(), test.clone()));
        let said = said.map(|lines| lines.join("\n"));
        out.record_saying(
            format!("{package}.{test}"),
            Some(package),
            Outcome::Error,
            said.as_deref(),
        );
    }
    let build_failures = text.finish();
    let unbuilt: BTreeSet<&str> = build_failures.iter().map(|b| b.unit.as_str()).collect();
    for package in failed_packages {
        if !packages_with_failing_tests.contains(&package) && !unbuilt.contains(package.as_str()) {
            out.note(format!(
                "package `{package}` failed without a failing test and without a recognised build failure (a crash outside a test?)"
            ));
            out.record(package.clone(), Some(package), Outcome::Error);
        }
    }
    out.build_failures(build_failures);
    Ok(out.finish())
}

/// The build failures of Go < 1.24's plain-text lines alone (for logs that
/// are not test2json, such as gotestsum's).
pub(crate) fn text_build_failures(input: &[u8]) -> Vec<BuildFailure> {
    let mut text = GoText::default();
    for (_, line) in text_lines(input) {
        text.line(&line);
    }
    text.finish()
}

/// `example.com/calc [example.com/calc.test]` → `example.com/calc`.
fn package_of(import_path: &str) -> &str {
    import_path.split_whitespace().next().unwrap_or(import_path)
}

/// Reads the go command's own text lines: the compiler's `# package` blocks
/// and the `FAIL\tpackage [build failed]` lines that name what they broke.
#[derive(Default)]
struct GoText {
    /// Compiler blocks by package, in the order they appeared.
    blocks: Vec<(String, Vec<String>)>,
    /// The block that text lines are added to.
    open: Option<usize>,
    failures: Failures,
}

impl GoText {
    fn line(&mut self, line: &str) {
        if let Some(header) = line.strip_prefix("# ") {
            self.blocks
                .push((package_of(header).to_owned(), Vec::new()));
            self.open = Some(self.blocks.len() - 1);
        } else if self.fail_line(line) || is_go_status(line) {
            self.open = None;
        } else if let Some((_, lines)) = self.open.and_then(|i| self.blocks.get_mut(i))
            && lines.len() <= MESSAGE_MAX_LINES
        {
            lines.push(line.to_owned());
        }
    }

    /// `FAIL\tpkg [build failed]` / `[setup failed]`: records the failure
    /// with its package's compiler block (or, when the package has none of
    /// its own because a dependency broke, every block so far).
    fn fail_line(&mut self, line: &str) -> bool {
        let Some(rest) = line.strip_prefix("FAIL\t") else {
            return false;
        };
        let Some(package) = rest
            .strip_suffix(" [build failed]")
            .or_else(|| rest.strip_suffix(" [setup failed]"))
            .map(str::trim)
        else {
            return false;
        };
        let own: Vec<String> = self
            .blocks
            .iter()
            .filter(|(p, _)| p == package)
            .flat_map(|(_, lines)| lines.iter().cloned())
            .collect();
        let lines = if own.is_empty() {
            self.blocks
                .iter()
                .flat_map(|(p, lines)| {
                    std::iter::once(format!("# {p}")).chain(lines.iter().cloned())
                })
                .collect()
        } else {
            own
        };
        self.failures.add(package, lines, false);
        true
    }

    /// The failures named by `FAIL … [build failed]` lines, each given its
    /// package's block when the block came after the line (the go command
    /// prints the block on stderr and the line on stdout, in either order
    /// in a merged log), and the packages of blocks no line named whose
    /// lines are a compiler's or vet's (`file.go:12:5: …`): the line went
    /// elsewhere (a CTRF or JUnit converter reading `go test -json`'s
    /// stdout), and the block is all the log says. (When lines named other
    /// packages, a block of its own is a dependency's, already their
    /// message.)
    fn finish(mut self) -> Vec<BuildFailure> {
        let named_none = self.failures.is_empty();
        for (package, lines) in std::mem::take(&mut self.blocks) {
            if (named_none || self.failures.has(&package))
                && lines.iter().any(|l| is_go_diagnostic(l))
            {
                self.failures.add(&package, lines, false);
            }
        }
        self.failures.finish()
    }
}

/// `./calc_test.go:9:2: undefined: Mul`, `calc/x.go:3:8: …` (the compiler's
/// and vet's shape: a Go file, a line, a column).
fn is_go_diagnostic(line: &str) -> bool {
    let line = line.trim_start();
    line.split_once(".go:").is_some_and(|(_, rest)| {
        let mut parts = rest.splitn(3, ':');
        let numeric = |p: Option<&str>| {
            p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        };
        numeric(parts.next()) && numeric(parts.next()) && parts.next().is_some()
    })
}

/// The lines `go test -v` frames a test's own output with (`=== RUN`,
/// `--- FAIL: …`): not the test's words.
fn is_go_test_status(line: &str) -> bool {
    let line = line.trim_start();
    [
        "=== RUN",
        "=== PAUSE",
        "=== CONT",
        "=== NAME",
        "--- FAIL:",
        "--- PASS:",
        "--- SKIP:",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// The go command's progress and result lines, which end a compiler block.
fn is_go_status(line: &str) -> bool {
    line.starts_with("go: ")
        || line.starts_with("ok  \t")
        || line.starts_with("?   \t")
        || line.starts_with("FAIL")
        || line.starts_with("PASS")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::failures;

    fn outcomes(r: &Report) -> Vec<(&str, Option<&str>, Outcome)> {
        r.tests
            .iter()
            .map(|t| (t.name.as_str(), t.file.as_deref(), t.outcome))
            .collect()
    }

    #[test]
    fn go_fixture() {
        let r = parse(include_bytes!("../tests/fixtures/go_test_json.txt")).unwrap();
        let calc = Some("example.com/calc");
        let parse_pkg = Some("example.com/calc/parse");
        assert_eq!(
            outcomes(&r),
            [
                ("example.com/calc.TestAdd", calc, Outcome::Passed),
                ("example.com/calc.TestDivide", calc, Outcome::Failed),
                ("example.com/calc.TestDivide/by_zero", calc, Outcome::Failed),
                ("example.com/calc.TestDivide/simple", calc, Outcome::Passed),
                ("example.com/calc.TestNetwork", calc, Outcome::Skipped),
                (
                    "example.com/calc/fmt.TestFormat",
                    Some("example.com/calc/fmt"),
                    Outcome::Passed
                ),
                ("example.com/calc/parse.TestHang", parse_pkg, Outcome::Error),
                (
                    "example.com/calc/parse.TestParse",
                    parse_pkg,
                    Outcome::Passed
                ),
            ]
        );
        // TestHang got no result.
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        // A failing test's own lines, without go's `=== RUN` / `--- FAIL`.
        assert_eq!(
            crate::testing::messages(&r)
                .into_iter()
                .find(|(t, _)| *t == "example.com/calc.TestDivide/by_zero"),
            Some((
                "example.com/calc.TestDivide/by_zero",
                "    calc_test.go:21: expected error, got 0"
            ))
        );
        // calc/broken did not build: a build failure, not a test.
        assert_eq!(
            failures(&r),
            [(
                "example.com/calc/broken",
                "broken/broken.go:3:8: undefined: missingFunc",
                false
            )]
        );
    }

    #[test]
    fn go_124_build_failure() {
        let r = parse(include_bytes!(
            "../tests/fixtures/go_test_json_build_fail_go124.txt"
        ))
        .unwrap();
        assert!(r.tests.is_empty(), "{:?}", r.tests);
        assert_eq!(
            failures(&r),
            [(
                "example.com/calc",
                "./calc_test.go:9:2: undefined: Mul",
                false
            )]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn go_119_test_patch_uses_an_api_the_pr_adds() {
        // Real `go test -json ./...` (Go 1.19): no JSON at all, only text.
        let r = parse(include_bytes!(
            "../tests/fixtures/go_test_json_build_fail_go119.txt"
        ))
        .unwrap();
        assert!(r.tests.is_empty(), "{:?}", r.tests);
        assert_eq!(
            failures(&r),
            [(
                "example.com/calc",
                "./calc_test.go:12:5: undefined: Mul",
                false
            )]
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn go_119_collision_setup_failure_and_a_package_that_ran() {
        let r = parse(include_bytes!(
            "../tests/fixtures/go_test_json_collision_go119.txt"
        ))
        .unwrap();
        assert_eq!(
            outcomes(&r),
            [(
                "example.com/shapes/geom.TestArea",
                Some("example.com/shapes/geom"),
                Outcome::Passed
            )]
        );
        assert_eq!(
            failures(&r),
            [
                (
                    "example.com/shapes/calc",
                    "calc/calc_test.go:5:6: approx redeclared in this block\n\tcalc/agent_test.go:8:6: other declaration of approx",
                    false
                ),
                (
                    "example.com/shapes/remote",
                    "remote/remote_test.go:6:2: cannot find module providing package example.com/missing/dep: module lookup disabled by GOPROXY=off",
                    false
                ),
            ]
        );
    }

    #[test]
    fn fail_line_in_an_output_event_without_a_block_and_a_dependency_block() {
        // The package failed because a dependency did not build: its own
        // FAIL line has no block, so the blocks seen so far are its message.
        let input = b"# example.com/app/dep\n\
dep/dep.go:3:1: syntax error: non-declaration statement outside function body\n\
{\"Action\":\"output\",\"Package\":\"example.com/app\",\"Output\":\"FAIL\\texample.com/app [build failed]\\n\"}\n\
{\"Action\":\"fail\",\"Package\":\"example.com/app\",\"Elapsed\":0}\n\
{\"Action\":\"output\",\"Package\":\"example.com/app\",\"Test\":\"TestX\",\"Output\":\"FAIL\\texample.com/fake [build failed]\\n\"}\n";
        let r = parse(input).unwrap();
        assert!(r.tests.is_empty(), "{:?}", r.tests);
        assert_eq!(
            failures(&r),
            [(
                "example.com/app",
                "# example.com/app/dep\ndep/dep.go:3:1: syntax error: non-declaration statement outside function body",
                false
            )]
        );
    }

    #[test]
    fn failing_package_with_failing_test_gets_no_extra_entry() {
        let input = br#"{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"fail","Package":"p"}
{"Action":"fail","Package":"p/q"}
"#;
        let r = parse(input).unwrap();
        assert_eq!(
            outcomes(&r),
            [
                ("p.TestA", Some("p"), Outcome::Failed),
                ("p/q", Some("p/q"), Outcome::Error)
            ]
        );
    }

    #[test]
    fn wrong_shape_is_a_schema_error() {
        let err = parse(b"\n{\"Action\":\"pass\",\"Package\":7}\n").unwrap_err();
        assert!(matches!(err, ParseError::Schema { line: 2, .. }), "{err}");
    }

    #[test]
    fn garbage_gives_no_tests() {
        for input in [
            &b"{\"Action\":\"pass\"}\n{\"Action\":\"fail\",\"Package\":\"\"}\n{"[..],
            b"\xff{\x00",
            b"FAIL\tpkg [build failed]\n",
            b"{}\n{\"type\":\"test\"}",
        ] {
            let r = parse(input).unwrap();
            assert!(r.tests.is_empty(), "{input:?}");
        }
    }

    #[test]
    fn a_vet_failure_whose_fail_line_came_first_or_went_elsewhere() {
        // Go 1.19 `go test -json` with vet failing: the FAIL line on stdout
        // came before the block on stderr in the merged log.
        let merged = b"FAIL\texample.com/vet [build failed]\n# example.com/vet\n./a_test.go:6:30: fmt.Sprintf format %d has arg \"x\" of wrong type string\n";
        let vet = "./a_test.go:6:30: fmt.Sprintf format %d has arg \"x\" of wrong type string";
        let r = parse(merged).unwrap();
        assert_eq!(failures(&r), [("example.com/vet", vet, false)]);
        // stdout went to a CTRF converter: the log holds the block alone.
        let alone = &merged[b"FAIL\texample.com/vet [build failed]\n".len()..];
        assert_eq!(
            crate::scan_build_failures(Format::Ctrf, alone)
                .iter()
                .map(|b| (b.unit.as_str(), b.message.as_str(), b.stopped_run))
                .collect::<Vec<_>>(),
            [("example.com/vet", vet, false)]
        );
        // A block of something else (cgo's warnings) is not a failure.
        let r = parse(b"# example.com/c\nwarning: something odd\n").unwrap();
        assert!(r.build_failures.is_empty(), "{:?}", r.build_failures);
    }
}
