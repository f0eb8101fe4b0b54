//! What makes a released task loadable by SWE-bench's own harness: its
//! instance id per track, the log parser matching the report format, and
//! the test ids in the form that parser produces. assay's own ids stay as
//! they are everywhere else (screening, grades, results.csv); only the
//! published FAIL_TO_PASS / PASS_TO_PASS of `tasks.jsonl` are mapped
//! (docs/stages.md, "SWE-bench fields").

use assay_report::Format;

/// The SWE-bench log parser (a `PARSER_REGISTRY` name) whose keys the
/// published test ids follow; empty when none reads this format's log.
pub(crate) fn log_parser(format: Format) -> &'static str {
    format.capabilities().swebench_parser.unwrap_or("")
}

/// The SWE-bench instance id of a task on `track`: the basic track keeps
/// the task id, the spec twin is `<id>__spec` (any other track likewise).
pub(crate) fn instance_id(task: &str, track: &str) -> String {
    if track == "basic" {
        task.to_owned()
    } else {
        format!("{task}__{track}")
    }
}

/// A task id and track from a SWE-bench instance id (`calc-1__spec`).
pub(crate) fn split_instance_id(id: &str) -> Option<(&str, &str)> {
    let (task, track) = id.rsplit_once("__")?;
    (track == "spec").then_some((task, track))
}

pub(crate) use crate::model::instances::test_id;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unittest_ids_take_the_django_parsers_form() {
        assert_eq!(log_parser(Format::Unittest), "parse_log_django");
        assert_eq!(
            test_id("parse_log_django", "tests.test_x.C.test_y"),
            "test_y (tests.test_x.C.test_y)"
        );
        assert_eq!(
            test_id("parse_log_pytest", "tests/test_x.py::test_y"),
            "tests/test_x.py::test_y"
        );
        assert_eq!(test_id("", "pkg/TestX"), "pkg/TestX");
    }

    #[test]
    fn spec_twins_have_their_own_instance_id() {
        assert_eq!(instance_id("calc-1", "basic"), "calc-1");
        assert_eq!(instance_id("calc-1", "spec"), "calc-1__spec");
        assert_eq!(split_instance_id("calc-1__spec"), Some(("calc-1", "spec")));
        assert_eq!(split_instance_id("calc-1"), None);
        assert_eq!(split_instance_id("a__b"), None);
    }
}
