//! The families of SWE-bench-shaped instance files (docs/instances.md, "The
//! families"): each family's image names, the shape of its rows where it
//! differs from SWE-bench's, and a row's own test spec, each read from the
//! family's published code:
//! - SWE-bench: `swebench/harness/test_spec/test_spec.py`,
//!   `instance_image_key`;
//! - SWE-rebench: the `swerebench` namespace of its SWE-bench fork, its
//!   rows' `docker_image` and `install_config` (`test_cmd`, `log_parser`;
//!   `SWE-rebench/SWE-bench-fork` `swebench/harness/grading.py`,
//!   `test_spec/python.py`; `SWE-rebench/SWE-rebench-V2` `scripts/eval.py`);
//! - SWE-Gym: OpenHands' `get_instance_docker_image`,
//!   `xingyaoww/sweb.eval.x86_64.<id, `__` as `_s_`>`;
//! - SWE-smith: `swesmith/profiles/base.py` `image_name`,
//!   `swebench/swesmith.x86_64.<owner>_1776_<repo>.<commit[:8]>`;
//! - Multi-SWE-bench: `multi_swe_bench/harness/image.py` and its repos'
//!   images, `mswebench/<org>_m_<repo>:pr-<number>`, its rows
//!   (`harness/dataset.py`, `pull_request.py`) mapped to SWE-bench's fields.

use std::collections::BTreeSet;

use assay_report::Format;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::words::words;

words! {
    /// The family an instance file is of: its image names.
    pub(crate) enum Family {
        /// SWE-bench, Verified, Lite, Multimodal's Python rows.
        SweBench = "swe-bench",
        /// SWE-rebench (nebius): SWE-bench's schema and image key under
        /// the `swerebench` namespace.
        SweRebench = "swe-rebench",
        /// SWE-Gym (OpenHands): SWE-bench's schema, images under
        /// `xingyaoww` with `__` written `_s_`.
        SweGym = "swe-gym",
        /// SWE-smith: one image per repository and commit.
        SweSmith = "swe-smith",
        /// Multi-SWE-bench (ByteDance): its own row shape, one image per
        /// pull request.
        MultiSweBench = "multi-swe-bench",
    }
}

impl Family {
    /// The family of a file whose rows say nothing of it, by its first
    /// row's shape: SWE-rebench's rows carry `install_config`,
    /// Multi-SWE-bench's `org` and `number`, SWE-smith's an `image_name`
    /// of its `swesmith.` images; anything else (SWE-Gym's rows too: its
    /// schema is SWE-bench's) is read as SWE-bench's.
    pub(crate) fn infer(first: Option<&Value>) -> Family {
        let Some(v) = first else {
            return Family::SweBench;
        };
        if v.get("install_config").is_some() {
            Family::SweRebench
        } else if v.get("org").is_some() && v.get("number").is_some() {
            Family::MultiSweBench
        } else if v
            .get("image_name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.contains("/swesmith."))
        {
            Family::SweSmith
        } else {
            Family::SweBench
        }
    }

    /// The family's image names of the instance `id` of `repo` (and
    /// Multi-SWE-bench's pull request `number`), in the order tried after
    /// the row's own, as the family's code writes them (not lowercased).
    pub(crate) fn names(self, id: &str, repo: &str, number: Option<u64>) -> Vec<String> {
        let key = format!("sweb.eval.x86_64.{id}:latest");
        match self {
            Family::SweBench => vec![
                key.clone(),
                format!("swebench/{key}").replace("__", "_1776_"),
            ],
            Family::SweRebench => vec![
                key.clone(),
                format!("swerebench/{key}").replace("__", "_1776_"),
            ],
            Family::SweGym => vec![
                key,
                format!("xingyaoww/sweb.eval.x86_64.{id}").replace("__", "_s_"),
            ],
            // `<owner>__<repo>.<commit[:8]>.<bug>`: the profile's
            // `repo_name`, then the bug.
            Family::SweSmith => id
                .rsplit_once('.')
                .map(|(repo_name, _)| {
                    format!(
                        "swebench/swesmith.x86_64.{}",
                        repo_name.replace("__", "_1776_")
                    )
                })
                .into_iter()
                .collect(),
            Family::MultiSweBench => match (repo.split_once('/'), number) {
                (Some((org, repo)), Some(number)) => {
                    vec![format!("mswebench/{org}_m_{repo}:pr-{number}")]
                }
                _ => Vec::new(),
            },
        }
    }
}

/// Where a family's image keeps the repository, and the files of it that
/// hold an answer, when they are not SWE-bench's (the repository at the
/// image's `WORKDIR`, nothing else to remove).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ImageLayout {
    /// The repository's directory, where it is not the image's `WORKDIR`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) repository: Option<String>,
    /// Files of the image that hold the instance's patches, removed before
    /// any tree is read from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) answers: Vec<String>,
    /// A patch the repository gets before any tree is read from it: a
    /// SWE-smith row's `patch`, the bug, whose images hold the repository
    /// clean (the task's base is the bug, its gold the way back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) breaks: Option<String>,
    /// The start of the commit the image's repository must stand on when
    /// the row's `base_commit` is not in it: SWE-smith's clean commit, the
    /// `<commit8>` of its `repo` (`swesmith/<owner>__<repo>.<commit8>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) clean_head: Option<String>,
}

impl ImageLayout {
    pub(crate) fn is_plain(&self) -> bool {
        self.repository.is_none() && self.answers.is_empty() && self.breaks.is_none()
    }
}

impl Family {
    /// The family's image layout for a row of `repo` whose patch is `patch`:
    /// - Multi-SWE-bench's images say `WORKDIR /home/`, keep the repository
    ///   at `/home/<repo>` (checked out at the base) and the pull request's
    ///   `fix.patch` and `test.patch` beside it (`harness/repos/*/*.py`,
    ///   e.g. `golang/cli/cli.py`, its `dockerfile()` and `files()`);
    /// - SWE-smith's images hold the repository clean at `/testbed`, the
    ///   commit its `repo` names; a row's `patch` is the bug, applied to
    ///   it (`swesmith/harness/utils.py` `run_patch_in_container`: the
    ///   gold is the patch reversed; `harness/gather.py`: `base_commit`
    ///   is the bug's commit on the mirror's branch, not in the image).
    pub(crate) fn layout(self, repo: &str, patch: &str) -> ImageLayout {
        match self {
            Family::MultiSweBench => ImageLayout {
                repository: repo
                    .rsplit_once('/')
                    .map(|(_, name)| format!("/home/{name}")),
                answers: vec!["/home/fix.patch".to_owned(), "/home/test.patch".to_owned()],
                ..ImageLayout::default()
            },
            Family::SweSmith => ImageLayout {
                breaks: Some(patch.to_owned()),
                clean_head: repo
                    .rsplit_once('.')
                    .map(|(_, commit)| commit.to_owned())
                    .filter(|c| c.len() >= 7 && c.bytes().all(|b| b.is_ascii_hexdigit())),
                ..ImageLayout::default()
            },
            Family::SweBench | Family::SweRebench | Family::SweGym => ImageLayout::default(),
        }
    }
}

/// Whether a row is SWE-smith's (its image one of `swesmith.` images, or
/// its repository a `swesmith/` mirror): such a row has no `test_patch`,
/// the tests it lists being in the repository already.
pub(crate) fn is_swe_smith(v: &Value) -> bool {
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
    text("image_name").contains("swesmith.") || text("repo").starts_with("swesmith/")
}

/// The files of pytest-style test ids (`path::name`) in `lists`: what a
/// row without a test patch (SWE-smith's) names as its tests' files.
pub(crate) fn files_of_ids<'a>(lists: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut files: Vec<String> = lists
        .into_iter()
        .filter_map(|id| id.split_once("::").map(|(file, _)| file.to_owned()))
        .filter(|f| !f.is_empty() && !f.starts_with('/') && !f.split('/').any(|c| c == ".."))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// A row's own test spec: SWE-rebench's `install_config.test_cmd` and
/// `install_config.log_parser`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OwnTest {
    /// The commands: one (a string, SWE-rebench's fork: run with the test
    /// directives after it) or a list (SWE-rebench-V2: run as written, in
    /// order).
    pub(crate) commands: Vec<String>,
    pub(crate) listed: bool,
    /// The parser the family reads the log with, by its name.
    pub(crate) log_parser: Option<String>,
}

/// The row's `install_config` test spec, if it has a test command.
pub(crate) fn own_test(v: &Value) -> Option<OwnTest> {
    let config = v.get("install_config")?;
    let (commands, listed) = match config.get("test_cmd")? {
        Value::String(s) => (vec![s.clone()], false),
        Value::Array(items) => (
            items
                .iter()
                .filter_map(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(str::to_owned)
                .collect(),
            true,
        ),
        _ => return None,
    };
    if commands.iter().all(|c| c.trim().is_empty()) {
        return None;
    }
    let log_parser = config
        .get("log_parser")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Some(OwnTest {
        commands,
        listed,
        log_parser,
    })
}

/// assay's report format for a family's log parser, by name; `None` for a
/// parser assay has no reader for.
pub(crate) fn parser_format(log_parser: &str) -> Option<Format> {
    match log_parser {
        "parse_log_pytest" | "parse_log_pytest_options" | "parse_log_pytest_v2" => {
            Some(Format::Pytest)
        }
        "parse_log_django" => Some(Format::Unittest),
        _ => None,
    }
}

/// A Multi-SWE-bench row (`org`, `repo`, `number`, `base.sha`,
/// `fix_patch`, `test_patch`, `f2p_tests` / `s2p_tests` / `n2p_tests` /
/// `p2p_tests` keyed by test name, `resolved_issues`) in SWE-bench's
/// fields; any other row as it is. Its FAIL_TO_PASS is every test its
/// harness counts as fixed (failing, skipped or absent with the test
/// patch, passing with the fix); its PASS_TO_PASS its `p2p_tests`.
pub(crate) fn swe_bench_shaped(v: &Value) -> Result<Value, (String, String)> {
    let (Some(org), Some(number)) = (v.get("org"), v.get("number")) else {
        return Ok(v.clone());
    };
    let bad = |field: &str, why: &str| (field.to_owned(), why.to_owned());
    let org = org.as_str().ok_or_else(|| bad("org", "is not a string"))?;
    let repo = v
        .get("repo")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("repo", "is missing or not a string"))?;
    let number = number
        .as_u64()
        .ok_or_else(|| bad("number", "is not a pull request number"))?;
    let sha = v
        .pointer("/base/sha")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("base.sha", "is missing or not a string"))?;
    let names = |fields: &[&str]| -> Result<Vec<Value>, (String, String)> {
        let mut out = BTreeSet::new();
        for &field in fields {
            match v.get(field) {
                None | Some(Value::Null) => {}
                Some(Value::Object(m)) => out.extend(m.keys().cloned()),
                Some(Value::Array(items)) => {
                    for item in items {
                        let s = item
                            .as_str()
                            .ok_or_else(|| bad(field, "has an item that is not a test name"))?;
                        out.insert(s.to_owned());
                    }
                }
                Some(_) => return Err(bad(field, "is not an object of tests")),
            }
        }
        Ok(out.into_iter().map(Value::from).collect())
    };
    let issues: Vec<String> = v
        .get("resolved_issues")
        .and_then(Value::as_array)
        .map(|issues| {
            issues
                .iter()
                .map(|i| {
                    let part = |k: &str| i.get(k).and_then(Value::as_str).unwrap_or_default();
                    format!("{}\n{}", part("title"), part("body"))
                })
                .collect()
        })
        .unwrap_or_default();
    let statement = match issues.is_empty() {
        false => issues.join("\n\n"),
        true => {
            let part = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
            format!("{}\n{}", part("title"), part("body"))
        }
    };
    let mut out = Map::new();
    let id = v
        .get("instance_id")
        .cloned()
        .unwrap_or_else(|| Value::from(format!("{org}__{repo}-{number}")));
    out.insert("instance_id".into(), id);
    out.insert("repo".into(), Value::from(format!("{org}/{repo}")));
    out.insert("number".into(), Value::from(number));
    out.insert("base_commit".into(), Value::from(sha));
    for (to, from) in [("patch", "fix_patch"), ("test_patch", "test_patch")] {
        out.insert(to.into(), v.get(from).cloned().unwrap_or(Value::Null));
    }
    out.insert("problem_statement".into(), Value::from(statement));
    out.insert(
        "FAIL_TO_PASS".into(),
        Value::Array(names(&["f2p_tests", "s2p_tests", "n2p_tests"])?),
    );
    out.insert("PASS_TO_PASS".into(), Value::Array(names(&["p2p_tests"])?));
    for keep in ["image_name", "image", "version"] {
        if let Some(val) = v.get(keep) {
            out.insert(keep.into(), val.clone());
        }
    }
    Ok(Value::Object(out))
}
