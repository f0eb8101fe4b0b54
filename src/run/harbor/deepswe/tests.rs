use super::*;

/// A folder in Deep-SWE v1.1's layout with `config` as its
/// `tests/config.json`.
fn folder(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in [
        ("task.toml", "[task]\nname = \"ds/calc\"\n"),
        ("instruction.md", "Add `mul`.\n"),
        ("environment/Dockerfile", "FROM assay-base:bookworm\n"),
        (CONFIG, config),
        ("tests/test.patch", TEST_PATCH),
        ("tests/test.sh", "#!/bin/bash\n"),
        ("solution/solution.patch", GOLD_PATCH),
        ("solution/solve.sh", "#!/bin/bash\n"),
    ] {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

const TEST_PATCH: &str = "diff --git a/tests/test_mul.py b/tests/test_mul.py
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/tests/test_mul.py
@@ -0,0 +1 @@
+import calc
";
const GOLD_PATCH: &str = "diff --git a/calc.py b/calc.py
index e69de29..0000001 100644
--- a/calc.py
+++ b/calc.py
@@ -1 +1,2 @@
 x = 1
+y = 2
";

const CONFIG_CTRF: &str = r#"{
 "base_commit": "c981f9c7aa91b83cc9bd33a09ecee9e751b06e8d",
 "f2p_node_ids": [" calc.T.test_mul ", "calc.T.test_mul", "calc.T.test_pow", "calc.T.test_gone", "calc.T.test_zero", "calc.T.test_flip"],
 "p2p_node_ids": ["calc.T.test_add", "calc.T.test_sub", "calc.T.test_broken"],
 "grade": {"format": "ctrf", "node_id": "suite.name", "tool_label": "x", "reports": ["/logs/verifier/base-ctrf.json", "/logs/verifier/new-ctrf.json"]}
}"#;

fn read(config: &str) -> Result<Folder, Box<FolderError>> {
    let dir = folder(config);
    Folder::detect(dir.path()).expect("Deep-SWE-shaped")
}

#[test]
fn a_deep_swe_folder_reads_into_its_whitelists_patches_and_report_format() {
    let f = read(CONFIG_CTRF).unwrap();
    assert_eq!(f.base_commit, "c981f9c7aa91b83cc9bd33a09ecee9e751b06e8d");
    assert_eq!(
        f.fail_to_pass,
        [
            "calc.T.test_mul",
            "calc.T.test_pow",
            "calc.T.test_gone",
            "calc.T.test_zero",
            "calc.T.test_flip"
        ],
        "trimmed and each once, as the verifier takes them"
    );
    assert_eq!(f.pass_to_pass.len(), 3);
    assert_eq!(f.report, Format::CtrfSuite);
    assert_eq!(f.test_files, ["tests/test_mul.py"]);
    assert_eq!(f.gold_files, ["calc.py"]);
    let junit = CONFIG_CTRF.replace(
        r#""format": "ctrf", "node_id": "suite.name""#,
        r#""format": "junit""#,
    );
    assert_eq!(read(&junit).unwrap().report, Format::Junit);
    let by_name = CONFIG_CTRF.replace(r#", "node_id": "suite.name""#, "");
    assert_eq!(read(&by_name).unwrap().report, Format::Ctrf);
    // A reward-only task is not one.
    let plain = tempfile::tempdir().unwrap();
    assert!(Folder::detect(plain.path()).is_none());
}

#[test]
fn a_broken_config_is_a_diagnostic_pointing_into_it() {
    let cases = [
        (
            CONFIG_CTRF.replace("suite.name", "suite>name"),
            "unknown `grade.node_id` `suite>name`",
            "\"node_id\"",
        ),
        (
            CONFIG_CTRF.replace(r#""format": "ctrf""#, r#""format": "tap""#),
            "unknown `grade.format` `tap`",
            "\"format\"",
        ),
        (
            CONFIG_CTRF.replace(
                "/logs/verifier/base-ctrf.json",
                "/logs/verifier/../../etc/passwd",
            ),
            "is not a file under /logs/verifier/",
            "\"reports\"",
        ),
        (
            CONFIG_CTRF.replace(
                r#""f2p_node_ids": [" calc"#,
                r#""f2p_node_ids": [3, " calc"#,
            ),
            "invalid type: integer `3`, expected a string",
            "3",
        ),
        (
            CONFIG_CTRF.replace("\"p2p_node_ids\"", "\"p2p_ids\""),
            "unknown field `p2p_ids`",
            "",
        ),
    ];
    for (config, message, at) in cases {
        let e = read(&config).unwrap_err();
        assert!(e.message.contains(message), "{}", e.message);
        assert!(e.message.starts_with(CONFIG), "{}", e.message);
        assert!(e.help.is_some());
        let span = e.span.unwrap();
        if !at.is_empty() {
            let src = e.src.as_ref().unwrap().inner();
            assert_eq!(
                &src[span.offset()..span.offset() + at.len()],
                at,
                "{message}"
            );
        }
    }
    // A missing part of the layout: named, no span.
    let dir = folder(CONFIG_CTRF);
    std::fs::remove_file(dir.path().join("solution/solution.patch")).unwrap();
    let e = Folder::detect(dir.path()).unwrap().unwrap_err();
    assert!(
        e.message.starts_with("solution/solution.patch: "),
        "{}",
        e.message
    );
    std::fs::write(
        dir.path().join("solution/solution.patch"),
        "diff --git a/x\n@@ nonsense\n",
    )
    .unwrap();
    let e = Folder::detect(dir.path()).unwrap().unwrap_err();
    assert!(
        e.message
            .starts_with("solution/solution.patch: not a patch git applies"),
        "{}",
        e.message
    );
    std::fs::write(dir.path().join("instruction.md"), " \n").unwrap();
    let e = Folder::detect(dir.path()).unwrap().unwrap_err();
    assert_eq!(e.message, "instruction.md: empty");
}

/// A CTRF report in go-ctrf-json-reporter's shape: `suite` the class.
fn ctrf(tests: &[(&str, &str)]) -> Vec<u8> {
    let tests: Vec<String> = tests
        .iter()
        .map(|(name, status)| {
            let (suite, name) = name.rsplit_once('.').unwrap();
            format!(
                r#"{{"name": "{name}", "suite": "{suite}", "status": "{status}", "duration": 1}}"#
            )
        })
        .collect();
    format!(
        r#"{{"results": {{"tool": {{"name": "t"}}, "tests": [{}]}}}}"#,
        tests.join(",")
    )
    .into_bytes()
}

/// A control reading whose verifier wrote `base` and `new` (moved under
/// `reports/`, as Deep-SWE's test.sh leaves them).
fn reading(base: &[(&str, &str)], new: &[(&str, &str)]) -> Reading {
    let mut r = Reading::default();
    r.files.insert("reports/base-ctrf.json".into(), ctrf(base));
    r.files.insert("new-ctrf.json".into(), ctrf(new));
    r
}

#[test]
fn the_controls_reports_recompute_the_lists_and_every_disagreement_is_listed() {
    let f = read(CONFIG_CTRF).unwrap();
    let old = |sub: &'static str| {
        vec![
            ("calc.T.test_add", "passed"),
            ("calc.T.test_sub", sub),
            ("calc.T.test_broken", "failed"),
            ("calc.T.test_extra", "passed"),
        ]
    };
    let nop = |flip: &'static str| {
        reading(
            &old("failed"),
            &[
                ("calc.T.test_mul", "failed"),
                ("calc.T.test_pow", "failed"),
                ("calc.T.test_zero", "passed"),
                ("calc.T.test_flip", flip),
                ("calc.T.test_new", "failed"),
            ],
        )
    };
    let oracle = || {
        reading(
            &old("passed"),
            &[
                ("calc.T.test_mul", "passed"),
                ("calc.T.test_pow", "skipped"),
                ("calc.T.test_zero", "passed"),
                ("calc.T.test_flip", "passed"),
                ("calc.T.test_new", "passed"),
            ],
        )
    };
    let readings = BTreeMap::from([
        (NOP.to_owned(), vec![nop("failed"), nop("passed")]),
        (ORACLE.to_owned(), vec![oracle(), oracle()]),
    ]);
    let s = screen(&f, &readings);
    assert_eq!(s.unread, Vec::<String>::new());
    assert_eq!(
        s.fail_to_pass,
        ["calc.T.test_mul", "calc.T.test_new", "calc.T.test_sub"]
    );
    assert_eq!(
        s.pass_to_pass,
        ["calc.T.test_add", "calc.T.test_extra", "calc.T.test_zero"]
    );
    assert_eq!(s.flaky, ["calc.T.test_flip"]);
    assert_eq!(s.unlisted_pass_to_pass, 1, "test_extra");
    let got: Vec<(&str, &str, DisagreementKind)> = s
        .whitelist_disagreements
        .iter()
        .map(|d| (d.test.as_str(), d.whitelist.as_str(), d.kind))
        .collect();
    use DisagreementKind::*;
    assert_eq!(
        got,
        [
            ("calc.T.test_broken", "PASS_TO_PASS", FailsAtGold),
            ("calc.T.test_flip", "FAIL_TO_PASS", Flaky),
            ("calc.T.test_gone", "FAIL_TO_PASS", NeverRan),
            ("calc.T.test_new", "none", NotWhitelisted),
            ("calc.T.test_pow", "FAIL_TO_PASS", FailsAtGold),
            ("calc.T.test_sub", "PASS_TO_PASS", FailsBeforeFix),
            ("calc.T.test_zero", "FAIL_TO_PASS", PassesBeforeFix),
        ]
    );
    let flip = &s.whitelist_disagreements[1];
    assert_eq!(flip.readings, "nop: failed, passed; oracle: passed, passed");
    let pow = &s.whitelist_disagreements[4];
    assert_eq!(
        pow.readings,
        "nop: failed, failed; oracle: skipped, skipped"
    );
}

#[test]
fn a_reading_without_a_readable_report_says_nothing_and_says_why() {
    let f = read(CONFIG_CTRF).unwrap();
    let mut garbage = Reading::default();
    garbage
        .files
        .insert("base-ctrf.json".into(), b"{\"results\": ".to_vec());
    garbage
        .files
        .insert("new-ctrf.json".into(), vec![b' '; FILE_CAP]);
    let readings = BTreeMap::from([
        (NOP.to_owned(), vec![Reading::default(), garbage]),
        (ORACLE.to_owned(), vec![]),
    ]);
    let s = screen(&f, &readings);
    assert_eq!(s.unread.len(), 2, "{:?}", s.unread);
    assert_eq!(
        s.unread[0],
        "nop reading 0: /logs/verifier/base-ctrf.json: not written; /logs/verifier/new-ctrf.json: not written"
    );
    assert!(s.unread[1].contains("not a CTRF report"), "{}", s.unread[1]);
    assert!(s.unread[1].contains("over the cap"), "{}", s.unread[1]);
    assert!(s.fail_to_pass.is_empty() && s.whitelist_disagreements.is_empty());
}

mod wrapper {
    use super::super::*;
    use crate::model::canary::{Hidden, plant};

    const TEST_FILE: &str = "import unittest\n\nfrom calc.ops import divide\n\n\nclass TestDivide(unittest.TestCase):\n    def test_divide(self):\n        self.assertEqual(divide(4, 2), 2)\n";

    fn folder(suites: &str) -> Folder {
        Folder {
            base_commit: "0".repeat(40),
            fail_to_pass: Vec::new(),
            pass_to_pass: Vec::new(),
            report: Format::Junit,
            reports: vec!["/logs/verifier/junit.xml".into()],
            test_files: vec!["tests/test_ops.py".into()],
            gold_files: Vec::new(),
            suites: Some(suites.into()),
        }
    }

    /// Every Deep-SWE task was weakly checked: the check for a command that
    /// stops at its first failure read `rm -f` and `[ -f … ]` in this
    /// wrapper as unittest's `-f`. The suites' own `-x` still refuses.
    #[test]
    fn the_wrapper_leaves_the_suites_their_canaries() {
        let hidden = [Hidden {
            path: "tests/test_ops.py",
            text: TEST_FILE.as_bytes(),
            beside: "",
        }];
        let plain = folder(
            "run_log python3 -m pytest tests/test_ops.py -rA --junitxml=/logs/verifier/junit.xml",
        );
        let command = plain.test_command().unwrap();
        assert!(
            command.contains("rm -f ") && command.contains("[ -f "),
            "{command}"
        );
        let planted = plant(Format::Junit, &command, &hidden, [7; 32], None)
            .unwrap_or_else(|why| panic!("{why}: {command}"));
        assert!(!planted.canaries.is_empty());
        let failfast = folder(
            "run_log python3 -m pytest -x tests/test_ops.py --junitxml=/logs/verifier/junit.xml",
        );
        let why = plant(
            Format::Junit,
            &failfast.test_command().unwrap(),
            &hidden,
            [7; 32],
            None,
        )
        .unwrap_err();
        assert!(why.contains("`-x`"), "{why}");
    }
}
