//! SWE-bench-family instance files (docs/instances.md): each row an
//! instance (`instance_id`, `repo`, `base_commit`, `patch`, `test_patch`,
//! `FAIL_TO_PASS` / `PASS_TO_PASS` as JSON strings or lists, `version`,
//! `problem_statement`), read and checked row by row so that a bad row
//! fails its instance alone, with the line and the field.
//!
//! Three things are the family's and are taken from its published code,
//! never guessed:
//! - the image of an instance ([`Family::image_names`]): the row's own
//!   `image_name` / `image` / `docker_image`, then the family's names
//!   (`family.rs`: SWE-bench's instance image key
//!   `sweb.eval.x86_64.<id>:latest` as `swebench.harness` builds it
//!   locally, and under the family's registry with `__` written `_1776_`,
//!   SWE-Gym's `_s_`, SWE-smith's and Multi-SWE-bench's own schemes), all
//!   lowercased (`swebench/harness/test_spec/test_spec.py`,
//!   `instance_image_key`);
//! - the test command ([`test_command`]): the row's own
//!   (`install_config`), else that of its repository and version
//!   ([`spec`]): SWE-bench 4's `MAP_REPO_VERSION_TO_SPECS` test commands
//!   with its test
//!   directives (the test patch's files; Django's as dotted modules), read
//!   by the parser SWE-bench's `MAP_REPO_TO_PARSER_PY` names;
//! - the repository's place in the image, `/testbed`.
//!
//! [`compare`] lists every way the instance's lists disagree with what
//! assay's own screening read.

use std::collections::BTreeMap;

use assay_report::{Format, Outcome};
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod family;

pub(crate) use family::{Family, ImageLayout, OwnTest, files_of_ids};

/// Where SWE-bench's images hold the repository at the base commit.
pub(crate) const TESTBED: &str = "/testbed";

impl Family {
    /// The image names tried for `row`, in order: the row's own first,
    /// then the family's ([`Family::names`]), lowercased, each once.
    pub(crate) fn image_names(self, row: &Instance) -> Vec<String> {
        let family = self.names(&row.instance_id, &row.repo, row.number);
        let mut seen = std::collections::BTreeSet::new();
        row.image
            .iter()
            .cloned()
            .chain(family)
            .map(|n| n.to_lowercase())
            .filter(|n| seen.insert(n.clone()))
            .collect()
    }
}

/// One instance, as its row gives it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Instance {
    pub(crate) instance_id: String,
    pub(crate) repo: String,
    pub(crate) base_commit: String,
    pub(crate) patch: String,
    pub(crate) test_patch: String,
    pub(crate) problem_statement: String,
    pub(crate) version: String,
    #[serde(rename = "FAIL_TO_PASS")]
    pub(crate) fail_to_pass: Vec<String>,
    #[serde(rename = "PASS_TO_PASS")]
    pub(crate) pass_to_pass: Vec<String>,
    /// The row's own image name (`image_name`, `image`, `docker_image`),
    /// when it has one.
    pub(crate) image: Option<String>,
    /// The row's own test command and log parser (`install_config`).
    pub(crate) own_test: Option<OwnTest>,
    /// Multi-SWE-bench's pull request number, naming its image.
    pub(crate) number: Option<u64>,
}

/// Where a row is in its file: its line (JSONL) or its index (a JSON array).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Line(usize),
    Element(usize),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Line(n) => write!(f, "line {n}"),
            Place::Element(n) => write!(f, "element {n}"),
        }
    }
}

/// A row that is not an instance: where, which field, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{place}: `{field}` {why}")]
pub(crate) struct RowError {
    pub(crate) place: Place,
    /// The row's `instance_id`, when it has one.
    pub(crate) id: Option<String>,
    pub(crate) field: String,
    pub(crate) why: String,
}

/// A row of the file: an instance, or why it is not one.
pub(crate) type Row = (Place, Result<Instance, RowError>);

/// The rows of an instance file: a JSON array of objects, or one object a
/// line (blank lines skipped). A file that is neither is one bad row.
pub(crate) fn rows(text: &str) -> Vec<Row> {
    let values: Vec<(Place, Result<Value, String>)> = if text.trim_start().starts_with('[') {
        match serde_json::from_str::<Vec<Value>>(text) {
            Ok(vs) => vs
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Place::Element(i), Ok(v)))
                .collect(),
            Err(e) => vec![(Place::Line(e.line()), Err(e.to_string()))],
        }
    } else {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                let v = serde_json::from_str::<Value>(l).map_err(|e| e.to_string());
                (Place::Line(i + 1), v)
            })
            .collect()
    };
    values
        .into_iter()
        .map(|(place, v)| {
            let row = v
                .map_err(|why| RowError {
                    place,
                    id: None,
                    field: "(row)".to_owned(),
                    why: format!("is not JSON: {why}"),
                })
                .and_then(|v| instance(place, &v));
            (place, row)
        })
        .collect()
}

/// The first row's value, for [`Family::infer`].
pub(crate) fn first_value(text: &str) -> Option<Value> {
    if text.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<Value>>(text)
            .ok()?
            .into_iter()
            .next()
    } else {
        text.lines()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| serde_json::from_str(l).ok())
    }
}

fn instance(place: Place, v: &Value) -> Result<Instance, RowError> {
    let shaped = family::swe_bench_shaped(v).map_err(|(field, why)| RowError {
        place,
        id: None,
        field,
        why,
    })?;
    let v = &shaped;
    let id = v
        .get("instance_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let bad = |field: &str, why: &str| RowError {
        place,
        id: id.clone(),
        field: field.to_owned(),
        why: why.to_owned(),
    };
    if !v.is_object() {
        return Err(bad("(row)", "is not a JSON object"));
    }
    let text = |field: &str, required: bool| -> Result<String, RowError> {
        match v.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            None | Some(Value::Null) if !required => Ok(String::new()),
            None => Err(bad(field, "is missing")),
            // SWE-bench's `version` is a string, but some files write 3.0.
            Some(Value::Number(n)) if field == "version" => Ok(n.to_string()),
            Some(_) => Err(bad(field, "is not a string")),
        }
    };
    let instance_id = text("instance_id", true)?;
    if instance_id.is_empty()
        || !instance_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(bad(
            "instance_id",
            "is not an id of letters, digits, `-`, `_` and `.`",
        ));
    }
    let base_commit = text("base_commit", true)?;
    if base_commit.len() != 40 || !base_commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad("base_commit", "is not a 40-digit commit id"));
    }
    let patch = text("patch", true)?;
    // SWE-smith's rows have no test patch: their tests are in the repository.
    let smith = family::is_swe_smith(v);
    let test_patch = text("test_patch", !smith)?;
    for (field, p) in [("patch", &patch), ("test_patch", &test_patch)] {
        let absent = smith && field == "test_patch" && p.is_empty();
        if !absent && !p.contains("diff --git ") {
            return Err(bad(field, "is not a git diff (no `diff --git` line)"));
        }
    }
    let mut image = None;
    for field in ["image_name", "image", "docker_image"] {
        let name = text(field, false)?;
        if image.is_none() && !name.is_empty() {
            image = Some(name);
        }
    }
    Ok(Instance {
        repo: text("repo", true)?,
        problem_statement: text("problem_statement", false)?,
        version: text("version", false)?,
        fail_to_pass: list(v, "FAIL_TO_PASS").map_err(|why| bad("FAIL_TO_PASS", &why))?,
        pass_to_pass: list(v, "PASS_TO_PASS").map_err(|why| bad("PASS_TO_PASS", &why))?,
        instance_id,
        base_commit,
        patch,
        test_patch,
        image,
        own_test: family::own_test(v),
        number: v.get("number").and_then(Value::as_u64),
    })
}

/// A test list as SWE-bench writes it: a list of strings, or a JSON string
/// holding one (the Hugging Face datasets' form).
fn list(v: &Value, field: &str) -> Result<Vec<String>, String> {
    let parsed;
    let value = match v.get(field) {
        None => return Err("is missing".to_owned()),
        Some(Value::String(s)) => {
            parsed = serde_json::from_str::<Value>(s)
                .map_err(|e| format!("is a string that is not a JSON list: {e}"))?;
            &parsed
        }
        Some(other) => other,
    };
    let Value::Array(items) = value else {
        return Err("is not a list of test ids".to_owned());
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(s) => out.push(s.to_owned()),
            None => return Err(format!("has an item ({i}) that is not a string")),
        }
    }
    Ok(out)
}

/// How an instance's tests are run and read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    /// The command, run in the repository's directory.
    pub(crate) command: String,
    pub(crate) format: Format,
}

/// SWE-bench 4's test commands (`swebench/harness/constants/python.py`:
/// `TEST_PYTEST` is assigned twice there, and the second, `pytest -rA`,
/// is the one its specs hold).
const TEST_PYTEST: &str = "pytest -rA";
const TEST_ASTROPY_PYTEST: &str = "pytest -rA -vv -o console_output_style=classic --tb=no";
const TEST_SEABORN: &str = "pytest --no-header -rA";
const TEST_DJANGO: &str = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1";
const TEST_DJANGO_NO_PARALLEL: &str = "./tests/runtests.py --verbosity 2";

/// The file endings SWE-bench leaves out of the test directives
/// (`NON_TEST_EXTS`).
const NON_TEST_EXTS: [&str; 11] = [
    ".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml",
];

/// The test command and report format of `repo` at `version` from
/// SWE-bench's own spec, over the test patch's files (`test_files`); `None`
/// for a repository SWE-bench runs with no runner assay reads (sympy's
/// `bin/test`, sphinx's `tox`) or does not know.
pub(crate) fn spec(repo: &str, version: &str, test_files: &[String]) -> Option<Spec> {
    let (command, format) = match repo {
        "django/django" if version == "1.9" => (TEST_DJANGO_NO_PARALLEL, Format::Unittest),
        "django/django" => (TEST_DJANGO, Format::Unittest),
        "astropy/astropy" => (TEST_ASTROPY_PYTEST, Format::Pytest),
        "mwaskom/seaborn" => (TEST_SEABORN, Format::Pytest),
        "marshmallow-code/marshmallow"
        | "matplotlib/matplotlib"
        | "pallets/flask"
        | "psf/requests"
        | "pvlib/pvlib-python"
        | "pydata/xarray"
        | "pydicom/pydicom"
        | "pylint-dev/astroid"
        | "pylint-dev/pylint"
        | "pytest-dev/pytest"
        | "pyvista/pyvista"
        | "scikit-learn/scikit-learn"
        | "sqlfluff/sqlfluff" => (TEST_PYTEST, Format::Pytest),
        _ => return None,
    };
    let directives = directives(repo, test_files);
    Some(Spec {
        command: std::iter::once(command.to_owned())
            .chain(directives)
            .collect::<Vec<_>>()
            .join(" "),
        format,
    })
}

/// An instance's test command, the report format it is read in, and
/// where it came from: `install_config` (the row's own), `swe-bench-spec`
/// (SWE-bench's per-repository table) or `pipeline` (`[[instances]]`
/// `test_command` and `report`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TestCommand {
    pub(crate) from: String,
    pub(crate) command: String,
    pub(crate) report: String,
}

/// The test command of `row`: its own spec first, then SWE-bench's table,
/// then the pipeline's `fallback`; else why none runs it.
pub(crate) fn test_command(
    row: &Instance,
    test_files: &[String],
    fallback: Option<&(String, Format)>,
) -> Result<(Spec, TestCommand), String> {
    let pipeline = || {
        fallback.map(|(command, format)| Spec {
            command: command.clone(),
            format: *format,
        })
    };
    let (spec, from) = match own_spec(row, test_files) {
        Some(Ok(spec)) => (spec, "install_config"),
        Some(Err(why)) => match pipeline() {
            Some(spec) => (spec, "pipeline"),
            None => {
                return Err(format!(
                    "{why} (give [[instances]] `test_command` and `report`)"
                ));
            }
        },
        None => match spec(&row.repo, &row.version, test_files) {
            Some(spec) => (spec, "swe-bench-spec"),
            None => match pipeline() {
                Some(spec) => (spec, "pipeline"),
                None => {
                    return Err(format!(
                        "neither the family's spec nor the pipeline runs {} {} (give [[instances]] `test_command` and `report`)",
                        row.repo, row.version
                    ));
                }
            },
        },
    };
    let record = TestCommand {
        from: from.to_owned(),
        command: spec.command.clone(),
        report: spec.format.as_str().to_owned(),
    };
    Ok((spec, record))
}

/// The row's own spec (`install_config.test_cmd` with a `log_parser`):
/// one command with SWE-bench's test directives after it, or a list run
/// as written; `Some(Err)` when its parser is none assay reads.
fn own_spec(row: &Instance, test_files: &[String]) -> Option<Result<Spec, String>> {
    let own = row.own_test.as_ref()?;
    let parser = own.log_parser.as_deref()?;
    let Some(format) = family::parser_format(parser) else {
        return Some(Err(format!(
            "the row's log parser `{parser}` (install_config.log_parser) has no reader in assay"
        )));
    };
    let command = match own.listed {
        true => own.commands.join("\n"),
        false => own
            .commands
            .iter()
            .cloned()
            .chain(directives(&row.repo, test_files))
            .collect::<Vec<_>>()
            .join(" "),
    };
    Some(Ok(Spec { command, format }))
}

/// SWE-bench's test directives (`get_test_directives`): the test patch's
/// files but data files; Django's as modules (`tests/` and `.py` off,
/// slashes as dots).
fn directives(repo: &str, test_files: &[String]) -> Vec<String> {
    test_files
        .iter()
        .filter(|f| !NON_TEST_EXTS.iter().any(|ext| f.ends_with(ext)))
        .map(|f| {
            if repo != "django/django" {
                return crate::model::shell::quote(f);
            }
            let f = f.strip_suffix(".py").unwrap_or(f);
            let f = f.strip_prefix("tests/").unwrap_or(f);
            crate::model::shell::quote(&f.replace('/', "."))
        })
        .collect()
}

/// assay's test id as the named parser keys it: unittest's dotted
/// `module.Class.method` becomes `method (module.Class.method)`, what
/// Python ≥ 3.11 prints; pytest's node ids are already the parser's keys.
pub(crate) fn test_id(log_parser: &str, id: &str) -> String {
    match log_parser {
        "parse_log_django" => match id.rsplit_once('.') {
            Some((_, method)) => format!("{method} ({id})"),
            None => id.to_owned(),
        },
        _ => id.to_owned(),
    }
}

/// How assay's readings of an instance's tests disagree with its lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DisagreementKind {
    /// In FAIL_TO_PASS, and passing in every reading of the base with the
    /// test patch: it checks nothing the fix does.
    PassesAtBase,
    /// Listed, and not passing in every reading of the gold tree: no patch
    /// can resolve the instance as listed.
    FailsAtGold,
    /// Listed, and the readings of one state differ.
    Flaky,
    /// Listed, and named by no reading at all.
    NeverRan,
}

impl DisagreementKind {
    pub(crate) const ALL: [DisagreementKind; 4] = [
        DisagreementKind::PassesAtBase,
        DisagreementKind::FailsAtGold,
        DisagreementKind::Flaky,
        DisagreementKind::NeverRan,
    ];

    /// Its word in the task record and summary.json.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DisagreementKind::PassesAtBase => "passes_at_base",
            DisagreementKind::FailsAtGold => "fails_at_gold",
            DisagreementKind::Flaky => "flaky",
            DisagreementKind::NeverRan => "never_ran",
        }
    }
}

/// One listed test on which the instance and assay's readings disagree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Disagreement {
    pub(crate) test: String,
    /// `FAIL_TO_PASS` or `PASS_TO_PASS`.
    pub(crate) list: String,
    pub(crate) kind: DisagreementKind,
    /// Each state's readings: `test: failed, failed; gold: passed, failed`.
    pub(crate) readings: String,
}

/// The instance's own lists, kept beside assay's in the task record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct DatasetLists {
    /// The instance file's family.
    pub(crate) family: String,
    /// The instance's `base_commit` (the task's `base_commit` is the
    /// tree assay read from the image's working directory).
    pub(crate) base_commit: String,
    #[serde(rename = "FAIL_TO_PASS")]
    pub(crate) fail_to_pass: Vec<String>,
    #[serde(rename = "PASS_TO_PASS")]
    pub(crate) pass_to_pass: Vec<String>,
    /// Every listed test on which assay's readings disagree, filled in by
    /// the task from its screen.
    #[serde(default)]
    pub(crate) disagreements: Vec<Disagreement>,
}

/// Every listed test of `lists` on which the screen's readings disagree
/// (`readings`: state → test → one outcome per reading; the states are
/// `test`, base with the test patch, and `gold`). `id` maps a test id of
/// assay's to the instance's form (its log parser's keys).
pub(crate) fn compare(
    lists: &DatasetLists,
    readings: &BTreeMap<String, BTreeMap<String, Vec<Outcome>>>,
    id: impl Fn(&str) -> String,
) -> Vec<Disagreement> {
    let by_state = |state: &str| -> BTreeMap<String, Vec<Outcome>> {
        readings
            .get(state)
            .into_iter()
            .flatten()
            .map(|(test, outcomes)| (id(test), outcomes.clone()))
            .collect()
    };
    let (before, after) = (by_state("test"), by_state("gold"));
    let mut out = Vec::new();
    for (list, tests) in [
        ("FAIL_TO_PASS", &lists.fail_to_pass),
        ("PASS_TO_PASS", &lists.pass_to_pass),
    ] {
        for test in tests {
            let b = before.get(test).map_or(&[][..], Vec::as_slice);
            let a = after.get(test).map_or(&[][..], Vec::as_slice);
            let uniform = |v: &[Outcome]| v.windows(2).all(|w| w[0] == w[1]);
            let passes = |v: &[Outcome]| !v.is_empty() && v.iter().all(|o| *o == Outcome::Passed);
            let kind = if b.is_empty() && a.is_empty() {
                Some(DisagreementKind::NeverRan)
            } else if !uniform(b) || !uniform(a) {
                Some(DisagreementKind::Flaky)
            } else if !passes(a) {
                Some(DisagreementKind::FailsAtGold)
            } else if list == "FAIL_TO_PASS" && passes(b) {
                Some(DisagreementKind::PassesAtBase)
            } else {
                None
            };
            if let Some(kind) = kind {
                out.push(Disagreement {
                    test: test.clone(),
                    list: list.to_owned(),
                    kind,
                    readings: format!("test: {}; gold: {}", shown(b), shown(a)),
                });
            }
        }
    }
    out
}

fn shown(v: &[Outcome]) -> String {
    if v.is_empty() {
        return "absent".to_owned();
    }
    v.iter()
        .map(|o| match o {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Error => "error",
            Outcome::Skipped => "skipped",
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
