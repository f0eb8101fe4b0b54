//! `go test -json` output (test2json events), one object per line:
//! `{"Action":"run"|"pass"|"fail"|"skip"|"output"|…,"Package":…,"Test":…}`.
//!
//! A test's name is `package.TestName` (subtests `package.TestName/sub`,
//! each its own entry next to its parent), and its file is the package: Go
//! reruns by package. Events without `Test` are the package's own result.
//! A package that fails without any failing test did not build, or died
//! outside a test (TestMain, a timeout panic): it becomes an `Error` entry
//! named after the package, so a broken build cannot pass for "no failing
//! tests". A test that ran but never got a result (the binary panicked or
//! was killed) is an `Error` too. Lines that are not JSON objects (build
//! errors printed as text by older Go) are skipped.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::{Collector, Format, Outcome, ParseError, Report, text_lines};

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    action: String,
    package: Option<String>,
    test: Option<String>,
}

pub(crate) fn parse(input: &[u8]) -> Result<Report, ParseError> {
    let mut out = Collector::new(Format::GoTestJson);
    // (package, test) → line it started on.
    let mut running: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut failed_packages: BTreeSet<String> = BTreeSet::new();
    let mut packages_with_failing_tests: BTreeSet<String> = BTreeSet::new();
    for (number, line) in text_lines(input) {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let event: Event = match serde_json::from_str(line) {
            Ok(event) => event,
            Err(e) if e.is_data() => match serde_json::from_str::<serde_json::Value>(line) {
                Ok(v) if v.get("Action").is_some() => {
                    return Err(ParseError::Schema {
                        line: number,
                        message: e.to_string(),
                    });
                }
                _ => continue,
            },
            Err(e) => {
                out.note(format!("line {number}: skipped malformed JSON ({e})"));
                continue;
            }
        };
        // `build-output` / `build-fail` (Go ≥ 1.24) carry `ImportPath`, not
        // `Package`; the package's own `fail` follows them.
        let Some(package) = event.package.filter(|p| !p.is_empty()) else {
            continue;
        };
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
                if outcome.is_failure() {
                    packages_with_failing_tests.insert(package.clone());
                }
                out.record(format!("{package}.{test}"), Some(package), outcome);
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
        out.record(format!("{package}.{test}"), Some(package), Outcome::Error);
    }
    for package in failed_packages {
        if !packages_with_failing_tests.contains(&package) {
            out.note(format!(
                "package `{package}` failed without a failing test (build failure or crash outside a test)"
            ));
            out.record(package.clone(), Some(package), Outcome::Error);
        }
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    "example.com/calc/broken",
                    Some("example.com/calc/broken"),
                    Outcome::Error
                ),
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
        // TestHang got no result; calc/broken did not build.
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
    }

    #[test]
    fn go_124_build_failure() {
        let r = parse(include_bytes!(
            "../tests/fixtures/go_test_json_build_fail_go124.txt"
        ))
        .unwrap();
        assert_eq!(
            outcomes(&r),
            [("example.com/calc", Some("example.com/calc"), Outcome::Error)]
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
}
