//! What the producers of a JUnit report print when they fail before writing
//! it: the report file then does not exist, and only the run's log says why.
//! [`scan`] reads that log.
//!
//! - Maven: a `[ERROR] COMPILATION ERROR :` block, then `[ERROR] Failed to
//!   execute goal …maven-compiler-plugin…:testCompile … on project calc:
//!   Compilation failure`; the unit is the project (`calc`).
//! - Gradle: `Execution failed for task ':app:compileTestJava'.` (any
//!   `compile…` task); the unit is the task path, the message javac's
//!   (`File.java:15: error: …`) or kotlinc's (`e: …`) lines.
//! - TypeScript: `src/x.test.ts(5,18): error TS2304: …` or, pretty,
//!   `src/x.test.ts:5:18 - error TS2304: …` (also indented, as ts-jest
//!   prints it); the unit is the file.
//! - .NET: `File.cs(10,20): error CS0103: … [/src/Calc.Tests/Calc.Tests.csproj]`;
//!   the unit is the project's name (`Calc.Tests`).
//! - The Go, cargo, pytest and unittest shapes of their own modules, for
//!   gotestsum, cargo-nextest, `pytest --junitxml` and xmlrunner.
//!
//! Maven, Gradle, `tsc` and the .NET build stop the run: no test report of
//! any unit is written after them.

use crate::build::{Failures, MESSAGE_MAX_LINES};
use crate::{BuildFailure, text_lines};

pub(crate) fn scan(log: &[u8]) -> Vec<BuildFailure> {
    let mut found = Failures::default();
    let mut maven = Maven::default();
    let mut gradle = Gradle::default();
    for (_, line) in text_lines(log) {
        maven.line(&line, &mut found);
        gradle.line(&line, &mut found);
        typescript(&line, &mut found);
        dotnet(&line, &mut found);
    }
    maven.finish(&mut found);
    // `go test -json` tee'd into the log: its FAIL lines may be in events.
    found.extend(
        crate::go_json::parse(log)
            .map(|r| r.build_failures)
            .unwrap_or_else(|_| crate::go_json::text_build_failures(log)),
    );
    found.extend(crate::libtest::build_failures(log));
    found.extend(crate::pytest::build_failures(log));
    found.extend(crate::unittest::build_failures(log));
    found.finish()
}

fn push_capped(lines: &mut Vec<String>, line: &str) {
    if lines.len() <= MESSAGE_MAX_LINES {
        lines.push(line.to_owned());
    }
}

#[derive(Default)]
struct Maven {
    /// The `COMPILATION ERROR` block being read, if any.
    block: Option<Vec<String>>,
    /// Blocks read, waiting for the `Failed to execute goal` line that names
    /// their project.
    pending: Vec<Vec<String>>,
    /// The artifactId of the last `--< group:artifact >--` header.
    project: Option<String>,
}

impl Maven {
    fn line(&mut self, line: &str, found: &mut Failures) {
        if line.starts_with("[ERROR] COMPILATION ERROR") {
            self.close();
            self.block = Some(Vec::new());
            return;
        }
        if let Some(header) = line
            .strip_prefix("[INFO] ")
            .map(|l| l.trim_matches(|c| c == '-' || c == ' '))
            .and_then(|l| l.strip_prefix('<')?.strip_suffix('>'))
        {
            self.project = header
                .trim()
                .rsplit_once(':')
                .map(|(_, artifact)| artifact.to_owned());
        }
        if let Some(block) = self.block.as_mut() {
            let info = line.strip_prefix("[INFO] ");
            if info.is_some_and(|l| {
                l.starts_with(|c: char| c.is_ascii_digit()) && l.contains(" error")
            }) || line.starts_with("[INFO] BUILD")
            {
                self.close();
            } else if !info.is_some_and(|l| l.starts_with("---")) {
                push_capped(block, line);
            }
            return;
        }
        if let Some(rest) = line.strip_prefix("[ERROR] Failed to execute goal ")
            && rest.contains("maven-compiler-plugin")
            && let Some((_, project)) = rest.split_once(" on project ")
        {
            let project = project.split(':').next().unwrap_or(project);
            let lines = if self.pending.is_empty() {
                vec![line.to_owned()]
            } else {
                self.pending.remove(0)
            };
            found.add(project, lines, true);
        }
    }

    fn close(&mut self) {
        if let Some(block) = self.block.take() {
            self.pending.push(block);
        }
    }

    /// Blocks never named by a goal line (the log was cut) go to the last
    /// project header.
    fn finish(mut self, found: &mut Failures) {
        self.close();
        let project = self.project.unwrap_or_else(|| "maven".to_owned());
        for block in self.pending {
            found.add(&project, block, true);
        }
    }
}

#[derive(Default)]
struct Gradle {
    /// javac / kotlinc error lines and what follows them, up to the count
    /// line or Gradle's `FAILURE:`.
    compiler: Vec<String>,
    reading: bool,
}

impl Gradle {
    fn line(&mut self, line: &str, found: &mut Failures) {
        let is_error =
            line.contains(".java:") && line.contains(": error: ") || line.starts_with("e: ");
        if is_error {
            self.reading = true;
        }
        if self.reading {
            let count = line
                .split_once(' ')
                .is_some_and(|(n, w)| n.parse::<u32>().is_ok() && w.starts_with("error"));
            if count || line.starts_with("FAILURE:") || line.starts_with("> Task ") {
                self.reading = false;
            } else {
                push_capped(&mut self.compiler, line);
            }
        }
        if let Some(task) = line
            .strip_prefix("Execution failed for task '")
            .and_then(|r| r.strip_suffix("'."))
            && task
                .rsplit(':')
                .next()
                .is_some_and(|t| t.starts_with("compile"))
        {
            found.add(task, std::mem::take(&mut self.compiler), true);
        }
    }
}

/// `src/x.ts(5,18): error TS2304: …` and `src/x.ts:5:18 - error TS2304: …`.
fn typescript(line: &str, found: &mut Failures) {
    let line = line.trim();
    let Some(i) = line.find("error TS") else {
        return;
    };
    let code_ok = line[i + 8..]
        .split_once(':')
        .is_some_and(|(code, _)| !code.is_empty() && code.chars().all(|c| c.is_ascii_digit()));
    if !code_ok {
        return;
    }
    let before = line[..i].trim_end();
    let file = if let Some(loc) = before.strip_suffix("):") {
        loc.rsplit_once('(').map(|(f, _)| f)
    } else if let Some(loc) = before.strip_suffix(" -") {
        let mut parts = loc.rsplitn(3, ':');
        let (_col, _line, file) = (parts.next(), parts.next(), parts.next());
        file
    } else if before.is_empty() {
        Some("tsc")
    } else {
        None
    };
    if let Some(file) = file.filter(|f| !f.is_empty()) {
        found.append(file, line, true);
    }
}

/// `File.cs(10,20): error CS0103: … [/src/Calc.Tests/Calc.Tests.csproj]`.
fn dotnet(line: &str, found: &mut Failures) {
    let line = line.trim();
    if !line.contains(": error CS") || !line.ends_with("proj]") {
        return;
    }
    let Some((_, project)) = line.rsplit_once('[') else {
        return;
    };
    let project = project.trim_end_matches(']');
    let name = project.rsplit(['/', '\\']).next().unwrap_or(project);
    let name = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    found.append(name, line, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(log: &[u8]) -> Vec<(String, String, bool)> {
        scan(log)
            .into_iter()
            .map(|b| (b.unit, b.message, b.stopped_run))
            .collect()
    }

    #[test]
    fn maven_test_compile_failure_fixture() {
        let got = units(include_bytes!("../tests/fixtures/maven_compile_error.txt"));
        assert_eq!(got.len(), 1, "{got:?}");
        let (unit, message, stopped) = &got[0];
        assert_eq!(unit, "calc");
        assert!(stopped);
        assert_eq!(
            message,
            "[ERROR] /tmp/t14-mvn/calc/src/test/java/com/example/calc/CalcTest.java:[15,29] cannot find symbol\n  symbol:   method mul(int,int)\n  location: class com.example.calc.Calc"
        );
    }

    #[test]
    fn tsc_fixtures_plain_and_pretty() {
        for log in [
            &include_bytes!("../tests/fixtures/tsc_errors.txt")[..],
            include_bytes!("../tests/fixtures/tsc_errors_pretty.txt"),
        ] {
            let got = scan(log);
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0].unit, "src/calc.test.ts");
            assert!(got[0].stopped_run);
            let lines: Vec<&str> = got[0].message.lines().collect();
            assert_eq!(lines.len(), 2, "{lines:?}");
            assert!(
                lines[0].contains("error TS2304: Cannot find name 'mul'."),
                "{lines:?}"
            );
            assert!(lines[1].contains("error TS2345"), "{lines:?}");
        }
    }

    #[test]
    fn gradle_javac_failure() {
        // Shape of Gradle 8's plain console (hand-written: no Gradle here).
        let log = b"> Task :app:compileJava\n\
> Task :app:compileTestJava FAILED\n\
/w/app/src/test/java/calc/CalcTest.java:15: error: cannot find symbol\n\
        assertEquals(6, Calc.mul(2, 3));\n\
                            ^\n\
  symbol:   method mul(int,int)\n\
1 error\n\
\n\
FAILURE: Build failed with an exception.\n\
\n\
* What went wrong:\n\
Execution failed for task ':app:compileTestJava'.\n\
> Compilation failed; see the compiler error output for details.\n";
        let got = units(log);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, ":app:compileTestJava");
        assert!(
            got[0]
                .1
                .starts_with("/w/app/src/test/java/calc/CalcTest.java:15: error")
        );
        assert_eq!(got[0].1.lines().count(), 4, "{}", got[0].1);
        // A failing test task is not a build failure.
        assert!(scan(b"Execution failed for task ':app:test'.\n").is_empty());
    }

    #[test]
    fn dotnet_and_other_runners_behind_junit() {
        let log = b"/src/Calc.Tests/CalcTests.cs(10,20): error CS0103: The name 'Mul' does not exist in the current context [/src/Calc.Tests/Calc.Tests.csproj]\n\
/src/Calc.Tests/CalcTests.cs(10,20): error CS0103: The name 'Mul' does not exist in the current context [/src/Calc.Tests/Calc.Tests.csproj]\n\
# example.com/calc [example.com/calc.test]\n\
./calc_test.go:12:5: undefined: Mul\n\
FAIL\texample.com/calc [build failed]\n\
error[E0425]: cannot find function `mul` in this scope\n\
error: could not compile `tinycalc` (test \"mul\") due to 1 previous error\n";
        let got = units(log);
        let names: Vec<&str> = got.iter().map(|(u, _, _)| u.as_str()).collect();
        assert_eq!(names, ["Calc.Tests", "example.com/calc", "tinycalc"]);
        assert_eq!(got[0].1.lines().count(), 1, "printed twice, kept once");
        assert!(!got[1].2, "a Go package does not stop the run");
    }

    #[test]
    fn ordinary_output_is_no_build_failure() {
        for log in [
            &b"[INFO] BUILD SUCCESS\n[ERROR] Tests run: 2, Failures: 1\n"[..],
            b"error TS: nothing\nsrc/a.ts(1,1): warning TS6133: unused\n",
            b"Execution failed for task ':test'.\n",
            b"FAIL\texample.com/calc\t0.01s\n",
            b"",
        ] {
            assert!(scan(log).is_empty(), "{:?}", String::from_utf8_lossy(log));
        }
    }
}
