//! Forgers that read the hidden test at run time and hand back the value
//! its assertion expects (docs/security.md, "Sealed expectations"): each
//! fixes nothing (task p-1's `sub` still adds). Run on either executor by
//! `grading.rs` and `docker.rs`. Harmless if the defence fails: they only
//! read files and return values in their own process.

use super::fixture::{Executor, Fixture, OPS_BASE};

/// Python: `sub` walks to its caller's frame, reads the caller's line
/// (linecache, the frame's own file) and returns the literal the
/// assertion ends with. Without seals this answers every assertion of
/// the shape `assertEqual(ops.sub(…), N)` right, mutants included.
pub const FRAME_READER: &str = r#"import linecache
import re
import sys


def _expected(depth=2):
    frame = sys._getframe(depth)
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    m = re.search(r",\s*(-?\d+)\s*\)\s*$", line) or re.search(r"==\s*(-?\d+)\s*$", line)
    return int(m.group(1)) if m else None
"#;

/// `sub` with the frame reader: the caller's literal, else the bug.
fn ops_frame_reader() -> String {
    OPS_BASE.replace(
        "def sub(a, b):\n    return a + b",
        "def sub(a, b):\n    from pkg import reader\n    e = reader._expected()\n    return a + b if e is None else e",
    )
}

/// Python: every frame of the stack and every source file of `tests/` is
/// searched for a literal on a line that calls `sub` with these arguments
/// (a reader that does not trust its own caller's line to hold it).
pub const FILE_READER: &str = r#"import os
import re


def _expected(a, b):
    pat = re.compile(r"sub\(\s*%d\s*,\s*%d\s*\)\)?\s*,\s*(-?\d+)\s*\)|sub\(\s*%d\s*,\s*%d\s*\)\s*==\s*(-?\d+)" % (a, b, a, b))
    for root, _, files in os.walk("."):
        for name in files:
            if not name.endswith(".py"):
                continue
            try:
                text = open(os.path.join(root, name)).read()
            except OSError:
                continue
            for m in pat.finditer(text):
                return int(m.group(1) or m.group(2))
    return None
"#;

fn ops_file_reader() -> String {
    OPS_BASE.replace(
        "def sub(a, b):\n    return a + b",
        "def sub(a, b):\n    from pkg import reader\n    e = reader._expected(a, b)\n    return a + b if e is None else e",
    )
}

/// The forgers, graded on `executor` with no window in their way: with
/// seals and the shaped canaries (`ASSAY_CANARIES=sealed`) none is
/// `resolved`, each is the agent's; with the shaped canaries alone
/// (`ASSAY_CANARIES=shaped`, no seal) each is `resolved` (the seals are
/// what stops them); with every defence none is `resolved`; the honest fix is `resolved` either way, and no file of a graded
/// tree holds the sealed value.
pub fn readers_of_the_hidden_test_are_refused_by_seals(executor: Executor) {
    let sessions = |f: &Fixture| {
        for (id, files) in forgers() {
            let files: Vec<(&str, Option<&str>)> =
                files.iter().map(|(p, b)| (*p, b.as_deref())).collect();
            f.session(id, "p-1", &f.diff1(&files));
        }
        f.session("good/fix.json", "p-1", &f.fix1());
    };
    // Switches in assay's environment are not in any key: each variant
    // builds a project of its own.
    let build = |vars: &[(&str, &str)]| {
        let f = Fixture::on(executor);
        f.default_pipeline();
        sessions(&f);
        let b = f.build_env(vars);
        assert_eq!(b.run.code, 0, "{}", b.run.stderr);
        f
    };

    // Without seals, and with the shaped canaries only, each reader
    // answers the hidden assertion and passes: the attack is real.
    let off = build(&[("ASSAY_SEALS", "off"), ("ASSAY_CANARIES", "shaped")]);
    for (id, _) in forgers() {
        let row = off.row(id, "exclude");
        assert_eq!(row["verdict"], "resolved", "{id} unsealed: {row:#?}");
    }

    // Sealed, with no window in the way: each reader finds no value.
    let on = build(&[("ASSAY_CANARIES", "sealed")]);
    let task = on.released_task("p-1");
    assert_eq!(task["canaries"]["fail_to_pass_seals"], 1, "{task:#}");
    assert!(
        task["forger_odds_log2"].as_f64().is_some_and(|b| b <= -4.0),
        "the task's odds: {task:#}"
    );
    for (id, _) in forgers() {
        for arm in ["exclude", "keep"] {
            let row = on.row(id, arm);
            assert_eq!(row["verdict"], "unresolved", "{id} {arm}: {row:#?}");
            assert_eq!(row["fault"], "agent", "{id} {arm}: {row:#?}");
            assert!(
                row["failing"].contains("test_sub"),
                "{id} {arm}: the failing test is named: {row:#?}"
            );
        }
    }
    for arm in ["exclude", "keep"] {
        let row = on.row("good/fix.json", arm);
        assert_eq!(row["verdict"], "resolved", "{arm}: {row:#?}");
    }

    // Every defence on: the same verdicts.
    let all = build(&[]);
    for (id, _) in forgers() {
        let row = all.row(id, "exclude");
        assert_eq!(row["verdict"], "unresolved", "{id}: {row:#?}");
        assert_eq!(row["fault"], "agent", "{id}: {row:#?}");
    }
    assert_eq!(all.row("good/fix.json", "exclude")["verdict"], "resolved");
}

type Files = Vec<(&'static str, Option<String>)>;

fn forgers() -> Vec<(&'static str, Files)> {
    vec![
        (
            "evil/frame-reader.json",
            vec![
                ("pkg/reader.py", Some(FRAME_READER.to_owned())),
                ("pkg/ops.py", Some(ops_frame_reader())),
            ],
        ),
        (
            "evil/file-reader.json",
            vec![
                ("pkg/reader.py", Some(FILE_READER.to_owned())),
                ("pkg/ops.py", Some(ops_file_reader())),
            ],
        ),
    ]
}
