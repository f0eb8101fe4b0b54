//! `[[instances]]`, checked: a unique plain name, an existing file, a
//! known family (or none: inferred from the rows), and the fallback test
//! command and report format for the repositories SWE-bench's spec does
//! not run (docs/instances.md). The rows themselves are read when the
//! nodes are laid out, each bad row failing its instance alone.

use std::path::PathBuf;

use assay_report::Format;

use super::file::InstancesConfig;
use super::{ConfigError, Origin};
use crate::model::instances::Family;

/// One instance file, checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct InstancesSettings {
    /// Names its tasks (`<name>/<instance_id>`).
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    /// `None`: inferred from the file's first row.
    pub(crate) family: Option<Family>,
    /// The test command and report of instances whose repository the
    /// family's spec does not run.
    pub(crate) fallback: Option<(String, Format)>,
}

/// Every `[[instances]]`, checked.
pub(crate) fn instances(
    pipeline: &Origin<'_>,
    written: &[InstancesConfig],
) -> Result<Vec<InstancesSettings>, ConfigError> {
    let mut out: Vec<InstancesSettings> = Vec::new();
    for t in written {
        let name = t.name.get_ref();
        let plain = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !plain || out.iter().any(|o| &o.name == name) {
            return Err(pipeline.error_at(
                t.name.span(),
                format!("`{name}` cannot name an instance file"),
                "here",
                "a unique name of letters, digits, `-`, `_` and `.`",
            ));
        }
        let path = pipeline.resolve(t.path.get_ref());
        if !path.is_file() {
            return Err(pipeline.error_at(
                t.path.span(),
                format!("the instance file {} does not exist", path.display()),
                "this file",
                "point `path` at a JSON or JSONL file of SWE-bench-shaped instances",
            ));
        }
        let family = match &t.family {
            None => None,
            Some(f) => Some(Family::parse(f.get_ref()).ok_or_else(|| {
                let known: Vec<&str> = Family::ALL.iter().map(|f| f.as_str()).collect();
                pipeline.error_at(
                    f.span(),
                    format!("unknown instance family `{}`", f.get_ref()),
                    "this family",
                    format!("one of {}, or leave it out to infer it", known.join(", ")),
                )
            })?),
        };
        let fallback = match (&t.test_command, &t.report) {
            (None, None) => None,
            (Some(command), Some(report)) => {
                let format: Format = report.get_ref().parse().map_err(|_| {
                    pipeline.error_at(
                        report.span(),
                        format!("unknown report format `{}`", report.get_ref()),
                        "this format",
                        format!("one of {}", super::report_formats().join(", ")),
                    )
                })?;
                Some((command.get_ref().clone(), format))
            }
            (Some(command), None) => {
                return Err(pipeline.error_at(
                    command.span(),
                    "`test_command` without `report`",
                    "this command",
                    "add the format its output is read in, e.g. report = \"pytest\"",
                ));
            }
            (None, Some(report)) => {
                return Err(pipeline.error_at(
                    report.span(),
                    "`report` without `test_command`",
                    "this format",
                    "add the command it reads, or remove `report`",
                ));
            }
        };
        out.push(InstancesSettings {
            name: name.clone(),
            path,
            family,
            fallback,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;

    fn load(table: &str) -> Result<Pipeline, String> {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("rows.jsonl"), "").unwrap();
        let path = tmp.path().join("pipeline.toml");
        std::fs::write(&path, format!("[[instances]]\nname = \"sb\"\n{table}")).unwrap();
        Pipeline::load(&path).map_err(|e| format!("{:?}", miette::Report::new(e)))
    }

    #[test]
    fn an_instances_table_becomes_its_settings() {
        let p = load("path = \"rows.jsonl\"\nfamily = \"swe-rebench\"\ntest_command = \"pytest -rA\"\nreport = \"pytest\"\n").unwrap();
        let s = &p.settings.instances[0];
        assert_eq!(
            (s.name.as_str(), s.family, s.fallback.clone()),
            (
                "sb",
                Some(Family::SweRebench),
                Some(("pytest -rA".to_owned(), Format::Pytest))
            )
        );
        assert!(s.path.ends_with("rows.jsonl"));
    }

    #[test]
    fn a_bad_instances_table_is_pointed_at_with_a_hint() {
        for (table, says) in [
            ("path = \"none.jsonl\"\n", "does not exist"),
            (
                "path = \"rows.jsonl\"\nfamily = \"swe-lancer\"\n",
                "one of swe-bench, swe-rebench, swe-gym, swe-smith, multi-swe-bench",
            ),
            (
                "path = \"rows.jsonl\"\ntest_command = \"pytest\"\n",
                "without `report`",
            ),
            (
                "path = \"rows.jsonl\"\nreport = \"pytest\"\n",
                "without `test_command`",
            ),
            (
                "path = \"rows.jsonl\"\ntest_command = \"x\"\nreport = \"nope\"\n",
                "unknown report format `nope`",
            ),
        ] {
            let e = load(table).unwrap_err();
            assert!(e.contains(says), "{table}: {e}");
        }
    }
}
