//! Deep-SWE-shaped Harbor task folders (Deep-SWE v1.1, docs/harbor.md,
//! "Deep-SWE tasks"): a folder whose `tests/config.json` carries the base
//! commit, the dataset's FAIL_TO_PASS / PASS_TO_PASS whitelists
//! (`f2p_node_ids`, `p2p_node_ids`) and how its verifier's reports are read
//! (`grade`: `format` `junit` or `ctrf`, `node_id` `name` or `suite.name`,
//! the `reports` it writes), beside `tests/test.patch`,
//! `solution/solution.patch` and `instruction.md`.
//!
//! Screening such a folder reads, in every control reading, the reports its
//! own verifier wrote (the no-op is the base with the test patch, the
//! oracle the same with the solution) with assay's parsers, recomputes the
//! lists from those readings, and lists every way they disagree with the
//! dataset's whitelists: a whitelisted test that does not pass at gold, a
//! FAIL_TO_PASS test that already passes without the fix, a PASS_TO_PASS
//! test that fails without it, a flaky one, one no reading names, and a
//! test assay finds FAIL_TO_PASS that the dataset does not list.
//!
//! The rules are the verifier's own where they decide what a reading says
//! (a test missing from every report failed; duplicates merge, the worst
//! outcome winning; ids are trimmed) and assay's screening's where they
//! decide the lists (every reading of a state must agree, else flaky).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::Path;

use assay_report::{Format, Outcome};
use serde::{Deserialize, Serialize};

use super::screen::{NOP, ORACLE, Reading};
use crate::sessions::span;

/// The file whose presence makes a folder Deep-SWE-shaped.
pub(crate) const CONFIG: &str = "tests/config.json";
/// Where the verifier writes; its reports are named below it.
const VERIFIER_DIR: &str = "/logs/verifier/";
/// Deep-SWE's `test.sh` moves every report under this directory of
/// `/logs/verifier` once it has graded.
const MOVED_TO: &str = "reports/";
/// The screening reads at most this much of one file: a report of this
/// size may be cut.
const FILE_CAP: usize = super::screen::FILE_CAP as usize;

/// What a Deep-SWE-shaped folder says, read once and checked.
#[derive(Clone, Debug)]
pub(crate) struct Folder {
    pub(crate) base_commit: String,
    /// The dataset's whitelists: trimmed, each id once, in their order.
    pub(crate) fail_to_pass: Vec<String>,
    pub(crate) pass_to_pass: Vec<String>,
    /// How the verifier's reports are read.
    pub(crate) report: Format,
    /// The reports the verifier writes, as `config.json` names them.
    pub(crate) reports: Vec<String>,
    /// The paths `tests/test.patch` and `solution/solution.patch` write.
    pub(crate) test_files: Vec<String>,
    pub(crate) gold_files: Vec<String>,
    /// The task-specific part of `tests/test.sh` (between [`RUN_TESTS`]
    /// and [`END_RUN_TESTS`]): the commands that run the suites and write
    /// the reports; `None` when the script marks none.
    pub(crate) suites: Option<String>,
}

/// Where Deep-SWE's `tests/test.sh` (a shared frame: apply the patches,
/// run the suites, grade) marks its task-specific part.
pub(crate) const RUN_TESTS: &str = "# >>> RUN TESTS (task-specific) <<<";
pub(crate) const END_RUN_TESTS: &str = "# >>> END RUN TESTS <<<";
/// Where assay's run of the suites writes the verifier's reports (for
/// `/logs/verifier`, which a run's read-only root has not).
const RUN_LOGS: &str = "/tmp/assay-verifier";
/// The one report assay's run leaves in its tree: the suites' reports merged.
pub(crate) fn report_file(format: Format) -> &'static str {
    match format {
        Format::Junit => ".assay-swe-report.xml",
        _ => ".assay-swe-report.json",
    }
}

/// Merges the reports named on its command line into one (`junit`: their
/// suites under one `<testsuites>`; CTRF: their tests in one list); a
/// report that is absent or unreadable is left out; reports that hold no
/// test exit 3 (the suites ran nothing: the wrapper then shows the end of
/// their log, where Deep-SWE's frame sends their errors); none read exits
/// 3 and leaves no merged report (a file of that name the tree held is removed:
/// graded code that stops the suites cannot leave one of its own to be read).
/// No symbolic link is followed: a report that is one is not read (graded
/// code could point it at a file of its own), and whatever stands at the
/// merged report's path is removed and the file made afresh (a link the
/// graded code planted there cannot send the merge elsewhere, nor stay to
/// be read in its place; the run's reading refuses a link in any case).
/// Its exit status is the run's: 1 when a test failed or errored (the
/// suites' own exit codes are not kept by Deep-SWE's reporter pipes), else 0.
const MERGE: &str = r#"import json, os, re, sys
fmt, out, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
docs = []
for p in paths:
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            docs.append(f.read())
    except OSError:
        pass
try:
    os.unlink(out)
except OSError:
    pass
if not docs:
    sys.exit(3)
def write(text):
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)
if fmt == "junit":
    body = []
    for d in docs:
        t = re.sub(r"^\s*<\?xml[^>]*\?>", "", d.decode("utf-8", "replace"))
        m = re.match(r"\s*<testsuites[^>]*?(?:/>|>(.*)</testsuites>)\s*$", t, re.S)
        body.append((m.group(1) or "") if m else t)
    write("<testsuites>" + "".join(body) + "</testsuites>")
    joined = "".join(body)
    sys.exit(1 if re.search(r"<(?:failure|error)\b", joined) else 0 if re.search(r"<testcase\b", joined) else 3)
else:
    tests = []
    for d in docs:
        try:
            tests += json.loads(d)["results"]["tests"]
        except Exception:
            pass
    write(json.dumps({"reportFormat": "CTRF", "results": {"tool": {"name": "assay"}, "tests": tests}}))
    failed = [t for t in tests if not isinstance(t, dict) or t.get("status") not in ("passed", "skipped", "pending", "other")]
    sys.exit(1 if failed else 0 if tests else 3)
"#;

impl Folder {
    /// The test command of assay's own runs of this task: the suites'
    /// part of `tests/test.sh`, run by bash at the staged tree's root with
    /// the image's environment (`$ASSAY_ENV/image.env`), its reports
    /// written under a directory of the run's own `/tmp` in place of
    /// `/logs/verifier`, then merged into [`report_file`] in the tree; when
    /// no test ran, the end of the suites' own log (`$RUN_LOG`, where the
    /// frame sends their errors) follows, so the reading names the cause.
    /// `None` when `tests/test.sh` marks no suites' part.
    pub(crate) fn test_command(&self) -> Option<String> {
        let suites = self.suites.as_deref()?;
        let reports: Vec<String> = self
            .reports
            .iter()
            .filter_map(|r| report_name(r))
            .map(|name| crate::model::shell::quote(&format!("{RUN_LOGS}/{name}")))
            .collect();
        let format = match self.report {
            Format::Junit => "junit",
            _ => "ctrf",
        };
        let script = format!(
            "ASSAY_TREE=\"$PWD\"\n\
             rm -f \"$ASSAY_TREE/{report}\"\n\
             [ -f \"$ASSAY_ENV/image.env\" ] && . \"$ASSAY_ENV/image.env\"\n\
             mkdir -p {RUN_LOGS}\n\
             export RUN_LOG={RUN_LOGS}/run.log\n\
             : > \"$RUN_LOG\"\n\
             log() {{ echo \"[verifier] $*\"; }}\n\
             run_log() {{ echo \"+ $*\" >> \"$RUN_LOG\" 2>/dev/null; \"$@\" 2>&1 | tee -a \"$RUN_LOG\"; return \"${{PIPESTATUS[0]}}\"; }}\n\
             set -uo pipefail\n\
             {}\n\
             set +e\n\
             cd \"$ASSAY_TREE\" && python3 -c {} {format} \"$ASSAY_TREE/{}\" {}\n\
             rc=$?\n\
             if [ \"$rc\" -eq 3 ] && [ -s \"$RUN_LOG\" ]; then echo \"[verifier] no test ran; the suites' log ends:\"; tail -n 40 \"$RUN_LOG\"; fi\n\
             exit \"$rc\"\n",
            suites.replace(VERIFIER_DIR.trim_end_matches('/'), RUN_LOGS),
            crate::model::shell::quote(MERGE),
            report_file(self.report),
            reports.join(" "),
            report = report_file(self.report),
        );
        Some(format!("bash -c {}", crate::model::shell::quote(&script)))
    }
}

/// The task-specific part of a Deep-SWE `tests/test.sh`.
fn suites_of(script: &str) -> Option<String> {
    let start = script.find(RUN_TESTS)? + RUN_TESTS.len();
    let end = start + script[start..].find(END_RUN_TESTS)?;
    Some(script[start..end].trim_matches('\n').to_owned())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    base_commit: String,
    f2p_node_ids: Vec<String>,
    p2p_node_ids: Vec<String>,
    grade: Grade,
}

#[derive(Deserialize)]
struct Grade {
    format: String,
    #[serde(default)]
    node_id: Option<String>,
    reports: Vec<String>,
}

/// A Deep-SWE-shaped folder that cannot be read: what is wrong, pointing
/// into `tests/config.json` when the fault is there.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{message}")]
#[diagnostic(code(assay::deepswe))]
pub(crate) struct FolderError {
    pub(crate) message: String,
    #[source_code]
    src: Option<miette::NamedSource<String>>,
    #[label("here")]
    span: Option<miette::SourceSpan>,
    #[help]
    help: Option<String>,
}

impl FolderError {
    fn plain(message: String, help: &str) -> Box<FolderError> {
        Box::new(FolderError {
            message,
            src: None,
            span: None,
            help: Some(help.to_owned()),
        })
    }

    fn at(
        file: &Path,
        text: &str,
        at: Range<usize>,
        message: String,
        help: &str,
    ) -> Box<FolderError> {
        let (shown, at) = span::excerpt(text, at);
        Box::new(FolderError {
            message,
            src: Some(miette::NamedSource::new(file.display().to_string(), shown)),
            span: Some(at.into()),
            help: Some(help.to_owned()),
        })
    }
}

impl Folder {
    /// The folder's Deep-SWE files, or `None` when it has no
    /// `tests/config.json` (a reward-only Harbor task).
    pub(crate) fn detect(folder: &Path) -> Option<Result<Folder, Box<FolderError>>> {
        folder.join(CONFIG).is_file().then(|| Folder::read(folder))
    }

    fn read(folder: &Path) -> Result<Folder, Box<FolderError>> {
        let path = folder.join(CONFIG);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            FolderError::plain(
                format!("{CONFIG}: {e}"),
                "the file must be UTF-8 JSON readable by assay",
            )
        })?;
        let config: Config = serde_json::from_str(&text).map_err(|e| {
            let offset = span::offset_of(&text, e.line(), e.column());
            let full = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            FolderError::at(
                &path,
                &text,
                span::point(&text, offset),
                format!("{CONFIG}: {}", full.strip_suffix(&suffix).unwrap_or(&full)),
                "Deep-SWE's config is {\"base_commit\": \"…\", \"f2p_node_ids\": [\"…\"], \"p2p_node_ids\": [\"…\"], \"grade\": {\"format\": \"junit\" | \"ctrf\", \"node_id\": \"name\" | \"suite.name\", \"reports\": [\"/logs/verifier/…\"]}}",
            )
        })?;
        let key_at = |key: &str| {
            let quoted = format!("\"{key}\"");
            text.find(&quoted).map_or(0..0, |i| i..i + quoted.len())
        };
        let wrong = |key: &str, message: String, help: &str| {
            FolderError::at(&path, &text, key_at(key), message, help)
        };
        let report = match (
            config.grade.format.as_str(),
            config.grade.node_id.as_deref(),
        ) {
            ("junit", _) => Format::Junit,
            ("ctrf", None | Some("name")) => Format::Ctrf,
            ("ctrf", Some("suite.name")) => Format::CtrfSuite,
            ("ctrf", Some(other)) => {
                return Err(wrong(
                    "node_id",
                    format!("{CONFIG}: unknown `grade.node_id` `{other}`"),
                    "`node_id` is `name` or `suite.name`",
                ));
            }
            (other, _) => {
                return Err(wrong(
                    "format",
                    format!("{CONFIG}: unknown `grade.format` `{other}`"),
                    "`format` is `junit` or `ctrf`",
                ));
            }
        };
        if config.grade.reports.is_empty() {
            return Err(wrong(
                "reports",
                format!("{CONFIG}: `grade.reports` names no report"),
                "name the report files the verifier writes under /logs/verifier/",
            ));
        }
        if let Some(outside) = config
            .grade
            .reports
            .iter()
            .find(|r| report_name(r).is_none())
        {
            return Err(wrong(
                "reports",
                format!("{CONFIG}: the report `{outside}` is not a file under {VERIFIER_DIR}"),
                "the verifier's reports are read back from /logs/verifier, the only directory a trial keeps",
            ));
        }
        if config.base_commit.trim().is_empty() {
            return Err(wrong(
                "base_commit",
                format!("{CONFIG}: `base_commit` is empty"),
                "name the commit the task is built at",
            ));
        }
        let read = |rel: &str| {
            std::fs::read(folder.join(rel)).map_err(|e| {
                FolderError::plain(
                    format!("{rel}: {e}"),
                    "a Deep-SWE task folder has tests/test.patch, solution/solution.patch and instruction.md",
                )
            })
        };
        let written = |rel: &str| {
            let paths = assay_git::patch_paths(&read(rel)?).map_err(|e| {
                FolderError::plain(
                    format!("{rel}: not a patch git applies: {e}"),
                    "the test patch and the solution are `git diff --binary` output against the base commit",
                )
            })?;
            let mut files: Vec<String> = paths
                .iter()
                .flat_map(|p| p.written().map(str::to_owned))
                .collect();
            files.sort();
            files.dedup();
            Ok::<_, Box<FolderError>>(files)
        };
        if read("instruction.md")?.iter().all(u8::is_ascii_whitespace) {
            return Err(FolderError::plain(
                "instruction.md: empty".to_owned(),
                "the statement the agent is given is the folder's instruction.md",
            ));
        }
        Ok(Folder {
            base_commit: config.base_commit.trim().to_owned(),
            fail_to_pass: whitelist(&config.f2p_node_ids),
            pass_to_pass: whitelist(&config.p2p_node_ids),
            report,
            reports: config.grade.reports,
            test_files: written("tests/test.patch")?,
            gold_files: written("solution/solution.patch")?,
            suites: std::fs::read_to_string(folder.join("tests/test.sh"))
                .ok()
                .as_deref()
                .and_then(suites_of),
        })
    }
}

/// The ids as the verifier takes them: trimmed, blanks dropped, each once.
fn whitelist(ids: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    ids.iter()
        .map(|id| id.trim())
        .filter(|id| !id.is_empty() && seen.insert(*id))
        .map(str::to_owned)
        .collect()
}

/// A report's name below `/logs/verifier`, or `None` when it is elsewhere
/// or climbs out.
fn report_name(path: &str) -> Option<&str> {
    let rel = path.strip_prefix(VERIFIER_DIR)?;
    (!rel.is_empty()
        && !rel
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == ".."))
    .then_some(rel)
}

/// What one control reading says of each test, from its verifier's
/// files: every report parsed in `folder.report`, merged worst-first; or
/// why the reading says nothing (no report, none readable).
pub(crate) fn outcomes(
    folder: &Folder,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<BTreeMap<String, Outcome>, String> {
    let mut tests: BTreeMap<String, Outcome> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut read_any = false;
    for path in &folder.reports {
        let Some(name) = report_name(path) else {
            continue;
        };
        let Some(bytes) = files
            .get(name)
            .or_else(|| files.get(&format!("{MOVED_TO}{name}")))
        else {
            problems.push(format!("{path}: not written"));
            continue;
        };
        if bytes.len() >= FILE_CAP {
            problems.push(format!("{path}: {} bytes or more, over the cap", FILE_CAP));
            continue;
        }
        match assay_report::parse(folder.report, bytes) {
            Ok(report) => {
                read_any = true;
                for t in report.tests {
                    let o = tests.entry(t.name).or_insert(t.outcome);
                    if rank(t.outcome) > rank(*o) {
                        *o = t.outcome;
                    }
                }
            }
            Err(e) => problems.push(format!("{path}: {e}")),
        }
    }
    if read_any {
        Ok(tests)
    } else {
        Err(problems.join("; "))
    }
}

/// The verifier's merge order: passed < skipped < failed (an error is a
/// failure).
fn rank(o: Outcome) -> u8 {
    match o {
        Outcome::Passed => 0,
        Outcome::Skipped => 1,
        Outcome::Failed | Outcome::Error => 2,
    }
}

/// What assay concludes of a Deep-SWE-shaped folder from its controls'
/// reports, and where that disagrees with the dataset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SweScreen {
    pub(crate) base_commit: String,
    /// The report format its verifier's reports were read in.
    pub(crate) report: String,
    /// The sizes of the dataset's whitelists.
    pub(crate) dataset_fail_to_pass: usize,
    pub(crate) dataset_pass_to_pass: usize,
    /// The paths the test patch and the solution write.
    pub(crate) test_files: Vec<String>,
    pub(crate) gold_files: Vec<String>,
    /// assay's lists, from the no-op (base and test patch) and oracle (and
    /// the solution) readings: failing in every no-op reading and passing
    /// in every oracle reading; passing in every reading of both; outcomes
    /// that differ between readings of one control.
    pub(crate) fail_to_pass: Vec<String>,
    pub(crate) pass_to_pass: Vec<String>,
    pub(crate) flaky: Vec<String>,
    /// Every way the dataset's whitelists and assay's readings disagree.
    pub(crate) whitelist_disagreements: Vec<Disagreement>,
    /// Tests passing in every reading that the dataset's PASS_TO_PASS does
    /// not list (assay's list checks more; counted, not listed).
    pub(crate) unlisted_pass_to_pass: usize,
    /// Readings whose reports said nothing, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) unread: Vec<String>,
}

/// One test on which the dataset and assay disagree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Disagreement {
    pub(crate) test: String,
    /// The dataset's list that names it (`FAIL_TO_PASS`, `PASS_TO_PASS`),
    /// or `none`.
    pub(crate) whitelist: String,
    pub(crate) kind: DisagreementKind,
    /// What the readings said: `nop: failed, failed; oracle: passed, failed`.
    pub(crate) readings: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DisagreementKind {
    /// The readings of one control differ.
    Flaky,
    /// Whitelisted, and not passing in an oracle reading: no patch can
    /// score on the dataset's verifier.
    FailsAtGold,
    /// In FAIL_TO_PASS, and passing in every no-op reading: it checks
    /// nothing the task asks for.
    PassesBeforeFix,
    /// In PASS_TO_PASS, and failing in every no-op reading: assay lists it
    /// FAIL_TO_PASS.
    FailsBeforeFix,
    /// Whitelisted, and in no reading at all (the verifier counts it failed).
    NeverRan,
    /// assay's FAIL_TO_PASS has it; the dataset lists it nowhere.
    NotWhitelisted,
}

/// The lists assay draws from the controls' readings and their
/// disagreements with `folder`'s whitelists.
pub(crate) fn screen(folder: &Folder, readings: &BTreeMap<String, Vec<Reading>>) -> SweScreen {
    let mut out = SweScreen {
        base_commit: folder.base_commit.clone(),
        report: folder.report.as_str().to_owned(),
        dataset_fail_to_pass: folder.fail_to_pass.len(),
        dataset_pass_to_pass: folder.pass_to_pass.len(),
        test_files: folder.test_files.clone(),
        gold_files: folder.gold_files.clone(),
        ..SweScreen::default()
    };
    // Per control, each readable reading's outcomes.
    let mut read: BTreeMap<&str, Vec<BTreeMap<String, Outcome>>> = BTreeMap::new();
    for control in [NOP, ORACLE] {
        let mine = read.entry(control).or_default();
        for (i, r) in readings.get(control).into_iter().flatten().enumerate() {
            match outcomes(folder, &r.files) {
                Ok(tests) => mine.push(tests),
                Err(why) => out.unread.push(format!("{control} reading {i}: {why}")),
            }
        }
    }
    let nop = read.get(NOP).map_or(&[][..], Vec::as_slice);
    let oracle = read.get(ORACLE).map_or(&[][..], Vec::as_slice);
    if nop.is_empty() || oracle.is_empty() {
        return out;
    }
    let f2p: BTreeSet<&str> = folder.fail_to_pass.iter().map(String::as_str).collect();
    let p2p: BTreeSet<&str> = folder.pass_to_pass.iter().map(String::as_str).collect();
    let mut names: BTreeSet<&str> = f2p.union(&p2p).copied().collect();
    names.extend(
        nop.iter()
            .chain(oracle)
            .flat_map(|r| r.keys().map(String::as_str)),
    );
    for name in names {
        let seen = |rs: &[BTreeMap<String, Outcome>]| -> Vec<Option<Outcome>> {
            rs.iter().map(|r| r.get(name).copied()).collect()
        };
        let (before, after) = (seen(nop), seen(oracle));
        let passes = |v: &[Option<Outcome>]| v.iter().all(|o| *o == Some(Outcome::Passed));
        let fails = |v: &[Option<Outcome>]| v.iter().all(|o| *o != Some(Outcome::Passed));
        let uniform = |v: &[Option<Outcome>]| v.windows(2).all(|w| w[0] == w[1]);
        let flaky = !uniform(&before) || !uniform(&after);
        let listed = if f2p.contains(name) {
            "FAIL_TO_PASS"
        } else if p2p.contains(name) {
            "PASS_TO_PASS"
        } else {
            "none"
        };
        let kind = if flaky {
            out.flaky.push(name.to_owned());
            (listed != "none").then_some(DisagreementKind::Flaky)
        } else {
            let assay_f2p = fails(&before) && passes(&after);
            let assay_p2p = passes(&before) && passes(&after);
            if assay_f2p {
                out.fail_to_pass.push(name.to_owned());
            } else if assay_p2p {
                out.pass_to_pass.push(name.to_owned());
                if listed == "none" {
                    out.unlisted_pass_to_pass += 1;
                }
            }
            let never_ran = before.iter().chain(&after).all(Option::is_none);
            match listed {
                _ if listed != "none" && never_ran => Some(DisagreementKind::NeverRan),
                "none" => assay_f2p.then_some(DisagreementKind::NotWhitelisted),
                _ if !passes(&after) => Some(DisagreementKind::FailsAtGold),
                "FAIL_TO_PASS" if passes(&before) => Some(DisagreementKind::PassesBeforeFix),
                "PASS_TO_PASS" if fails(&before) => Some(DisagreementKind::FailsBeforeFix),
                _ => None,
            }
        };
        if let Some(kind) = kind {
            out.whitelist_disagreements.push(Disagreement {
                test: name.to_owned(),
                whitelist: listed.to_owned(),
                kind,
                readings: format!("{NOP}: {}; {ORACLE}: {}", shown(&before), shown(&after)),
            });
        }
    }
    out
}

/// `passed, absent`: each reading's outcome of one test.
fn shown(v: &[Option<Outcome>]) -> String {
    v.iter()
        .map(|o| match o {
            Some(Outcome::Passed) => "passed",
            Some(Outcome::Failed) => "failed",
            Some(Outcome::Error) => "error",
            Some(Outcome::Skipped) => "skipped",
            None => "absent",
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
