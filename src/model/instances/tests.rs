use super::*;

const BASE: &str = "0123456789abcdef0123456789abcdef01234567";

fn row(extra: &str) -> String {
    format!(
        r#"{{"instance_id":"owner__calc-1","repo":"owner/calc","base_commit":"{BASE}","patch":"diff --git a/calc.py b/calc.py\n","test_patch":"diff --git a/tests/test_calc.py b/tests/test_calc.py\n","problem_statement":"Add it","version":"0.1"{extra}}}"#
    )
}

#[test]
fn lists_are_read_as_json_strings_or_as_lists() {
    let text = [
        row(r#","FAIL_TO_PASS":"[\"tests/test_calc.py::test_add\"]","PASS_TO_PASS":[]"#),
        String::new(),
        row(r#","FAIL_TO_PASS":["a"],"PASS_TO_PASS":"[\"b\", \"c\"]""#),
    ]
    .join("\n");
    let rows = rows(&text);
    assert_eq!(rows.len(), 2);
    let (place, first) = &rows[0];
    assert_eq!(*place, Place::Line(1));
    let first = first.as_ref().unwrap();
    assert_eq!(first.fail_to_pass, ["tests/test_calc.py::test_add"]);
    assert!(first.pass_to_pass.is_empty());
    let (place, second) = &rows[1];
    assert_eq!(*place, Place::Line(3));
    assert_eq!(second.as_ref().unwrap().pass_to_pass, ["b", "c"]);
}

#[test]
fn a_bad_row_names_its_line_and_field_and_leaves_the_others_read() {
    let text = [
        row(r#","FAIL_TO_PASS":"[\"a\"","PASS_TO_PASS":[]"#),
        row(r#","FAIL_TO_PASS":["a"],"PASS_TO_PASS":[1]"#),
        row(r#","FAIL_TO_PASS":["a"],"PASS_TO_PASS":[]"#).replace(BASE, "HEAD"),
        "{not json".to_owned(),
        row(r#","FAIL_TO_PASS":["a"],"PASS_TO_PASS":[]"#),
    ]
    .join("\n");
    let rows = rows(&text);
    let errors: Vec<String> = rows
        .iter()
        .filter_map(|(_, r)| r.as_ref().err())
        .map(ToString::to_string)
        .collect();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(
        errors[0].starts_with("line 1: `FAIL_TO_PASS` is a string that is not a JSON list"),
        "{}",
        errors[0]
    );
    assert_eq!(
        errors[1],
        "line 2: `PASS_TO_PASS` has an item (0) that is not a string"
    );
    assert_eq!(
        errors[2],
        "line 3: `base_commit` is not a 40-digit commit id"
    );
    assert!(
        errors[3].starts_with("line 4: `(row)` is not JSON"),
        "{}",
        errors[3]
    );
    assert_eq!(
        rows[0].1.as_ref().unwrap_err().id.as_deref(),
        Some("owner__calc-1")
    );
    assert!(rows[4].1.is_ok());
}

#[test]
fn a_json_array_is_read_by_element() {
    let text = format!(
        "[{}, {}]",
        row(r#","FAIL_TO_PASS":["a"],"PASS_TO_PASS":[]"#),
        row(r#","PASS_TO_PASS":[]"#)
    );
    let rows = rows(&text);
    assert_eq!(rows.len(), 2);
    assert!(rows[0].1.is_ok());
    assert_eq!(
        rows[1].1.as_ref().unwrap_err().to_string(),
        "element 1: `FAIL_TO_PASS` is missing"
    );
}

#[test]
fn image_names_follow_the_familys_instance_image_key() {
    let text = row(r#","FAIL_TO_PASS":[],"PASS_TO_PASS":[]"#);
    let mut instance = rows(&text).remove(0).1.unwrap();
    assert_eq!(
        Family::SweBench.image_names(&instance),
        [
            "sweb.eval.x86_64.owner__calc-1:latest",
            "swebench/sweb.eval.x86_64.owner_1776_calc-1:latest"
        ]
    );
    instance.image = Some("mine:1".to_owned());
    assert_eq!(
        Family::SweRebench.image_names(&instance),
        [
            "mine:1",
            "sweb.eval.x86_64.owner__calc-1:latest",
            "swerebench/sweb.eval.x86_64.owner_1776_calc-1:latest"
        ]
    );
}

#[test]
fn each_family_adds_its_own_image_names_after_the_rows() {
    let text = row(r#","FAIL_TO_PASS":[],"PASS_TO_PASS":[]"#);
    let mut instance = rows(&text).remove(0).1.unwrap();
    assert_eq!(
        Family::SweGym.image_names(&instance),
        [
            "sweb.eval.x86_64.owner__calc-1:latest",
            "xingyaoww/sweb.eval.x86_64.owner_s_calc-1"
        ]
    );
    instance.instance_id = "Owner__calc.0123abcd.lm_rewrite__x1".to_owned();
    instance.image = Some("mine:2".to_owned());
    assert_eq!(
        Family::SweSmith.image_names(&instance),
        [
            "mine:2",
            "swebench/swesmith.x86_64.owner_1776_calc.0123abcd"
        ]
    );
}

#[test]
fn a_multi_swe_bench_row_is_read_in_swe_benchs_fields() {
    let text = format!(
        r#"{{"org":"Acme","repo":"calc","number":42,"base":{{"label":"x","ref":"main","sha":"{BASE}"}},"fix_patch":"diff --git a/calc.js b/calc.js\n","test_patch":"diff --git a/t.js b/t.js\n","resolved_issues":[{{"number":1,"title":"Add mul","body":"Please."}}],"f2p_tests":{{"muls":{{}}}},"n2p_tests":{{"new":{{}}}},"p2p_tests":{{"adds":{{}}}},"s2p_tests":{{}}}}"#
    );
    let first: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(Family::infer(Some(&first)), Family::MultiSweBench);
    let instance = rows(&text).remove(0).1.unwrap();
    assert_eq!(instance.instance_id, "Acme__calc-42");
    assert_eq!(instance.repo, "Acme/calc");
    assert_eq!(instance.base_commit, BASE);
    assert_eq!(instance.fail_to_pass, ["muls", "new"]);
    assert_eq!(instance.pass_to_pass, ["adds"]);
    assert_eq!(instance.problem_statement, "Add mul\nPlease.");
    assert_eq!(
        Family::MultiSweBench.image_names(&instance),
        ["mswebench/acme_m_calc:pr-42"]
    );
    let bad = text.replace(r#""sha":"#, r#""shaw":"#);
    assert_eq!(
        rows(&bad).remove(0).1.unwrap_err().to_string(),
        "line 1: `base.sha` is missing or not a string"
    );
}

#[test]
fn a_rows_own_test_command_comes_first_and_an_unread_parser_is_named() {
    let files = ["tests/test_calc.py".to_owned()];
    let own = |config: &str| {
        rows(&row(&format!(
            r#","FAIL_TO_PASS":[],"PASS_TO_PASS":[],"install_config":{config}"#
        )))
        .remove(0)
        .1
        .unwrap()
    };
    let string = own(r#"{"test_cmd":"pytest -x","log_parser":"parse_log_pytest"}"#);
    let (spec, record) = test_command(&string, &files, None).unwrap();
    assert_eq!(spec.command, "pytest -x 'tests/test_calc.py'");
    assert_eq!(
        (record.from.as_str(), spec.format),
        ("install_config", Format::Pytest)
    );
    let listed = own(r#"{"test_cmd":["make","make check"],"log_parser":"parse_log_django"}"#);
    let (spec, _) = test_command(&listed, &files, None).unwrap();
    assert_eq!(
        (spec.command.as_str(), spec.format),
        ("make\nmake check", Format::Unittest)
    );
    let unread = own(r#"{"test_cmd":["go test -v ./..."],"log_parser":"parse_log_gotest"}"#);
    let why = test_command(&unread, &files, None).unwrap_err();
    assert!(why.contains("`parse_log_gotest`"), "{why}");
    let fallback = ("go test -json ./...".to_owned(), Format::GoTestJson);
    let (_, record) = test_command(&unread, &files, Some(&fallback)).unwrap();
    assert_eq!(record.from, "pipeline");
    // No parser named: SWE-bench's table, as without `install_config`.
    let mut django = own(r#"{"test_cmd":"pytest -rA"}"#);
    django.repo = "django/django".to_owned();
    let (_, record) = test_command(&django, &files, Some(&fallback)).unwrap();
    assert_eq!(record.from, "swe-bench-spec");
}

#[test]
fn the_spec_is_swe_benchs_per_repository() {
    let files = [
        "tests/model_fields/test_x.py".to_owned(),
        "tests/data.json".to_owned(),
    ];
    assert_eq!(
        spec("django/django", "3.0", &files),
        Some(Spec {
            command: "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 'model_fields.test_x'".to_owned(),
            format: Format::Unittest,
        })
    );
    assert_eq!(
        spec("django/django", "1.9", &files).unwrap().command,
        "./tests/runtests.py --verbosity 2 'model_fields.test_x'"
    );
    assert_eq!(
        spec("psf/requests", "2.0", &["test_requests.py".to_owned()]),
        Some(Spec {
            command: "pytest -rA 'test_requests.py'".to_owned(),
            format: Format::Pytest,
        })
    );
    assert_eq!(spec("sympy/sympy", "1.1", &files), None);
    assert_eq!(spec("owner/calc", "0.1", &files), None);
}

#[test]
fn every_disagreement_with_the_lists_is_named() {
    use Outcome::{Failed, Passed};
    let lists = DatasetLists {
        family: "swe-bench".into(),
        base_commit: BASE.into(),
        fail_to_pass: vec![
            "f2p_ok".into(),
            "f2p_at_base".into(),
            "f2p_flaky".into(),
            "gone".into(),
        ],
        pass_to_pass: vec!["p2p_ok".into(), "p2p_breaks".into()],
        disagreements: Vec::new(),
    };
    let state = |pairs: &[(&str, Vec<Outcome>)]| -> BTreeMap<String, Vec<Outcome>> {
        pairs
            .iter()
            .map(|(t, o)| (format!("x.{t}"), o.clone()))
            .collect()
    };
    let readings = BTreeMap::from([
        (
            "test".to_owned(),
            state(&[
                ("f2p_ok", vec![Failed, Failed]),
                ("f2p_at_base", vec![Passed, Passed]),
                ("f2p_flaky", vec![Failed, Passed]),
                ("p2p_ok", vec![Passed, Passed]),
                ("p2p_breaks", vec![Passed, Passed]),
            ]),
        ),
        (
            "gold".to_owned(),
            state(&[
                ("f2p_ok", vec![Passed, Passed]),
                ("f2p_at_base", vec![Passed, Passed]),
                ("f2p_flaky", vec![Passed, Passed]),
                ("p2p_ok", vec![Passed, Passed]),
                ("p2p_breaks", vec![Failed, Failed]),
            ]),
        ),
    ]);
    let found = compare(&lists, &readings, |t| t.trim_start_matches("x.").to_owned());
    let kinds: Vec<(&str, DisagreementKind)> =
        found.iter().map(|d| (d.test.as_str(), d.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("f2p_at_base", DisagreementKind::PassesAtBase),
            ("f2p_flaky", DisagreementKind::Flaky),
            ("gone", DisagreementKind::NeverRan),
            ("p2p_breaks", DisagreementKind::FailsAtGold),
        ]
    );
    assert_eq!(
        found[1].readings,
        "test: failed, passed; gold: passed, passed"
    );
    assert_eq!(found[2].readings, "test: absent; gold: absent");
}

/// Multi-SWE-bench's images keep the repository at `/home/<repo>` and the
/// pull request's patches beside it; SWE-smith's hold it clean, the row's
/// patch the bug to apply, the clean commit named by its `repo`; every
/// other family's layout is SWE-bench's (the repository at `WORKDIR`,
/// nothing to remove or apply).
#[test]
fn each_familys_image_layout() {
    let one = |text: String| {
        let (_, row) = rows(&text).remove(0);
        row.unwrap()
    };
    let cli = one(row(r#","FAIL_TO_PASS":[],"PASS_TO_PASS":[]"#).replace("owner/calc", "cli/cli"));
    let layout = Family::MultiSweBench.layout(&cli.repo, &cli.patch);
    assert_eq!(layout.repository.as_deref(), Some("/home/cli"));
    assert_eq!(layout.answers, ["/home/fix.patch", "/home/test.patch"]);
    assert!(!layout.is_plain());
    let smith = one(format!(
        r#"{{"instance_id":"owner__calc.0123abcd.lm__x","repo":"swesmith/owner__calc.0123abcd","base_commit":"{BASE}","patch":"diff --git a/calc.py b/calc.py\n","FAIL_TO_PASS":["tests/test_calc.py::test_sub"],"PASS_TO_PASS":["tests/test_calc.py::test_add","tests/other.py::TestX::test_y"],"image_name":"swebench/swesmith.x86_64.owner_1776_calc.0123abcd"}}"#
    ));
    assert_eq!(
        smith.test_patch, "",
        "a SWE-smith row reads without a test patch"
    );
    let layout = Family::SweSmith.layout(&smith.repo, &smith.patch);
    assert_eq!(layout.breaks.as_deref(), Some(smith.patch.as_str()));
    assert_eq!(layout.clean_head.as_deref(), Some("0123abcd"));
    assert!(!layout.is_plain());
    assert_eq!(
        files_of_ids(smith.fail_to_pass.iter().chain(&smith.pass_to_pass)),
        ["tests/other.py", "tests/test_calc.py"]
    );
    for family in [Family::SweBench, Family::SweRebench, Family::SweGym] {
        assert!(
            family.layout(&cli.repo, &cli.patch).is_plain(),
            "{family:?}"
        );
    }
}

/// Outside SWE-smith's rows a missing test patch is still a bad row.
#[test]
fn only_a_swe_smith_row_reads_without_a_test_patch() {
    let text = row(r#","FAIL_TO_PASS":[],"PASS_TO_PASS":[]"#).replace(
        r#","test_patch":"diff --git a/tests/test_calc.py b/tests/test_calc.py\n""#,
        "",
    );
    assert!(!text.contains("test_patch"), "{text}");
    let (_, read) = rows(&text).remove(0);
    let err = read.unwrap_err();
    assert_eq!(err.field, "test_patch", "{err}");
    assert!(files_of_ids(&["../x.py::t".to_owned(), "/etc/x::t".to_owned()]).is_empty());
}
