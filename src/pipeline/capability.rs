//! What the settings ask of each environment's report format, checked
//! against the format's row ([`Format::capabilities`]) once the file is
//! read: a setting that needs what the format lacks is an error at the
//! environment's `report`, with the setting that asks beside it, never a
//! run that silently does without.
//!
//! Two settings ask: `[screen] scope = "touched-files"` needs reports that
//! name each test's file, and a `touched_command` over `{packages}` needs
//! Go packages. The other capabilities are optional, and what lacks them
//! says so where it shows: a run whose format has no built-in canaries (and
//! no `[env] canary`) is graded "not forgery-checked", a task whose format
//! has no SWE-bench log parser keeps assay's test ids in `tasks.jsonl`.

use assay_report::{Capabilities, Format, TestFile};

use super::env::EnvSpec;
use super::{ConfigError, Origin};
use crate::model::rules::screening::Scope;
use crate::model::rules::touched::PACKAGES;

/// Every environment's format against what the settings ask of it.
pub(super) fn check(
    pipeline: &Origin<'_>,
    envs: &[EnvSpec],
    scope: Scope,
    scope_word: Option<&toml::Spanned<String>>,
) -> Result<(), ConfigError> {
    for env in envs {
        let format = env.format;
        let row = format.capabilities();
        // `env::env` fills in every environment's report.
        let Some(report) = &env.written.report else {
            continue;
        };
        if let Some(word) = scope_word.filter(|_| !scope.is_suite())
            && !Scope::can_select(format)
        {
            return Err(pipeline
                .error_at(
                    report.span(),
                    format!("scope = \"touched-files\" cannot select tests in `{format}` reports: they do not name a test's file"),
                    format!("`{format}` reports name no test's file"),
                    format!(
                        "keep the default scope (\"suite\") for `{format}` reports; the reports that name a test's file are {}",
                        names(|c| c.test_file.names_files())
                    ),
                )
                .also(word.span(), "needs each test's file"));
        }
        if let Some(touched) = &env.written.touched_command
            && touched.get_ref().contains(PACKAGES)
            && row.test_file != TestFile::GoPackage
        {
            return Err(pipeline
                .error_at(
                    report.span(),
                    format!("[env] touched_command: `{PACKAGES}` selects Go packages, and this environment's reports are `{format}`"),
                    format!("`{format}` reports name no Go package"),
                    format!(
                        "e.g. touched_command = \"python -m pytest -rA {{files}}\": `{{files}}` becomes the test files the test patch touches; `{PACKAGES}` needs {} reports (docs/stages.md, \"Scope\")",
                        names(|c| c.test_file == TestFile::GoPackage)
                    ),
                )
                .also(touched.span(), "this command"));
        }
    }
    Ok(())
}

/// The formats whose row has `has`, as a hint lists them.
fn names(has: impl Fn(&Capabilities) -> bool) -> String {
    let names: Vec<String> = Format::with(has).iter().map(|f| format!("`{f}`")).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;

    /// The diagnostic a pipeline file gives, rendered as text (no colour).
    fn error_of(toml: &str) -> String {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pipeline.toml");
        std::fs::write(&path, toml).unwrap();
        match Pipeline::load(&path) {
            Ok(_) => String::new(),
            Err(e) => format!("{:?}", miette::Report::new(e)),
        }
    }

    const SCOPED: &str = "[screen]\nscope = \"touched-files\"\n";

    #[test]
    fn touched_files_in_a_format_that_names_no_file_points_at_the_report() {
        for format in Format::with(|c| !c.test_file.names_files()) {
            let e = error_of(&format!(
                "{SCOPED}[env]\ntest_command = \"t\"\nreport = \"{format}\"\n"
            ));
            assert!(
                e.contains(&format!("`{format}` reports name no test's file")),
                "{e}"
            );
            assert!(e.contains("needs each test's file"), "{e}");
            assert!(e.contains("`pytest`") && !e.contains("`tap`,"), "{e}");
        }
        for format in Format::with(|c| c.test_file.names_files()) {
            let ok = format!("{SCOPED}[env]\ntest_command = \"t\"\nreport = \"{format}\"\n");
            assert_eq!(error_of(&ok), "", "{format}");
        }
    }

    #[test]
    fn packages_in_a_format_that_names_no_package_points_at_the_report_and_the_command() {
        let e = error_of(&format!(
            "{SCOPED}[env.a]\ntest_command = \"t\"\nreport = \"go-test-json\"\ntouched_command = \"go test {{packages}}\"\n[env.b]\ntest_command = \"t\"\nreport = \"unittest\"\ntouched_command = \"python -m unittest {{packages}}\"\n"
        ));
        assert!(e.contains("`unittest` reports name no Go package"), "{e}");
        assert!(e.contains("this command"), "{e}");
        assert!(e.contains("needs `go-"), "{e}");
        // The label stands on [env.b]'s report, not [env.a]'s.
        assert!(e.contains("report = \"unittest\""), "{e}");
        assert!(!e.contains("report = \"go-test-json\""), "{e}");
    }
}
