use super::*;
use crate::model::canary::seal::sealed_blocks as blocks;

const UNITTEST: &str = "import unittest\n\nfrom pkg import ops\n\n\nclass TestOps(unittest.TestCase):\n    def test_sub(self):\n        self.assertEqual(ops.sub(5, 3), 2)\n        self.assertEqual(ops.name(), 'minus')\n        self.assertEqual(ops.sub(9, 3), 6, 'expected 6')\n        self.assertEqual(ops.pair(), [1, (2, 'x')])\n        self.assertEqual(ops.sub(1, 1), x)\n        self.assertTrue(ops.sub(2, 2) == 0)\n\n    def test_plain(self):\n        assert ops.sub(8, 1) == 7\n        assert not ops.sub(8, 1) == 6\n        assert ops.sub(8, 1) == 7, \"seven\"\n        assert ops.sub(4, 4) == 0 # zero\n";

fn texts(lang: Lang, text: &str) -> Vec<Vec<String>> {
    blocks(lang, text)
        .iter()
        .map(|b| b.seals.iter().map(|s| s.text.clone()).collect())
        .collect()
}

#[test]
fn python_assertions_with_a_literal_expected_side_are_sealable() {
    assert_eq!(
        texts(Lang::Unittest, UNITTEST),
        [
            // `6`'s message is scrubbed with it; `x` is no literal; an
            // `assertTrue` compares nothing assay can hand over.
            vec!["2", "'minus'", "6", "[1, (2, 'x')]"],
            // `not …` and a message are left alone only where they change
            // what is compared.
            vec!["7", "7", "0"],
        ]
    );
}

#[test]
fn javascript_go_and_rust_assertions_are_sealable() {
    let js = "const assert = require('assert');\ndescribe('ops', () => {\n  it('subtracts', () => {\n    assert.strictEqual(sub(5, 3), 2);\n    expect(sub(1, 1)).toBe(0);\n    expect(name()).toEqual({a: [1, 'x']});\n    expect(sub(1, 1)).not.toBe(3);\n    assert.deepStrictEqual(pair(), [1, 2], 'pair');\n  });\n});\n";
    assert_eq!(
        texts(Lang::Js, js),
        [vec!["2", "0", "{a: [1, 'x']}", "[1, 2]"]]
    );
    let go = "package ops\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif got := Sub(5, 3); got != 2 {\n\t\tt.Fatalf(\"got %d\", got)\n\t}\n\tif Name() != \"minus\" {\n\t\tt.Fatal(\"bad\")\n\t}\n\tif Sub(1, 1) != 0 && ok {\n\t}\n\tassert.Equal(t, 4, Sub(6, 2))\n\tif Sub(9, 3) != 6 {\n\t\tt.Fatalf(\"want 6\")\n\t}\n}\n";
    assert_eq!(texts(Lang::Go, go), [vec!["2", "\"minus\"", "4", "6"]]);
    // A value that is also an input is the test's own: not sealed.
    let echo = "package ops\n\nimport \"testing\"\n\nfunc TestEcho(t *testing.T) {\n\tif Echo(\"abc\") != \"abc\" {\n\t\tt.Fatal(\"no\")\n\t}\n}\n";
    assert_eq!(texts(Lang::Go, echo), [Vec::<String>::new()]);
    let rust = "#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn subs() {\n        assert_eq!(sub(5, 3), 2);\n        assert_eq!(name(), \"minus\", \"named {}\", 1);\n        assert_eq!(v(), vec![1u8, 2]);\n        assert_eq!(w(), y);\n    }\n}\n";
    assert_eq!(
        texts(Lang::Rust, rust),
        [vec!["2", "\"minus\"", "vec![1u8, 2]"]]
    );
}

/// Every file a sealed run can read holds none of its sealed values: the
/// sealed lines keep the computed side and lose the expected one.
#[test]
fn a_sealed_file_holds_no_expected_value_of_a_sealed_site() {
    let mut rng = Rng::new([7; 32]);
    for (lang, text) in [
        (Lang::Unittest, UNITTEST.to_owned()),
        (
            Lang::Pytest,
            "def test_long():\n    # g() is 123456\n    assert f('a') == 'the quick brown fox'\n    assert g() == 123456, 'g() is not 123456'\n\n\nif __name__ == '__main__':\n    test_long()\n".to_owned(),
        ),
    ] {
        let w = crate::model::canary::certify::seal_file(lang, "tests/test_x.py", &text, "", &mut rng)
            .expect("sealed");
        assert!(!w.sealed.is_empty());
        for (s, _) in &w.sealed {
            let value = Lit::parse(lang, &s.expected).expect("literal");
            for scalar in value.scalars().iter().filter(|v| v.len() >= 2) {
                assert!(
                    !w.text.contains(scalar.as_str()),
                    "{scalar} of {} is still in\n{}",
                    s.expected,
                    w.text
                );
            }
            assert!(w.text.contains(&s.token));
        }
        assert!(!w.text.contains("123456"), "{}", w.text);
        // The helper runs before a script's own main block.
        if let Some(main) = w.text.find("if __name__") {
            assert!(w.text.find("def __assay_seal__").expect("helper") < main);
        }
    }
}

#[test]
fn a_sealed_line_hands_the_computed_side_over_and_compares_sentinels() {
    let line = "        self.assertEqual(ops.sub(5, 3), 2)";
    let b = blocks(Lang::Unittest, UNITTEST);
    let site = &b[0].seals[0];
    assert_eq!(
        seal_line(Lang::Unittest, line, site, "ab"),
        "        self.assertEqual(__assay_seal__(\"ab\", ops.sub(5, 3)), __assay_sealed__)"
    );
}

fn sealed(token: &str, test: &str, expected: &str) -> Sealed {
    Sealed {
        token: token.into(),
        file: "tests/test_x.py".into(),
        test: test.into(),
        line: 1,
        col: 30,
        expected: expected.into(),
    }
}

#[test]
fn a_passed_test_passes_only_with_every_sealed_value_right() {
    let planted = [
        sealed("t1", "T.test_a", "2"),
        sealed("t2", "T.test_b", "[1, 'x']"),
        sealed("t3", "T.test_c", "2"),
        sealed("t4", "T.test_d", "None"),
    ];
    let mut tests: BTreeMap<String, Outcome> = [
        ("tests.test_x.T.test_a", Outcome::Passed),
        ("tests.test_x.T.test_b", Outcome::Passed),
        ("tests.test_x.T.test_c", Outcome::Passed),
        ("tests.test_x.T.test_d", Outcome::Failed),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let reports: Vec<(String, String)> = [("t1", "2.0"), ("t2", "[1, 'y']"), ("t4", "0")]
        .into_iter()
        .map(|(t, v)| (t.to_owned(), v.to_owned()))
        .collect();
    let r = judge(&planted, &reports, |_| Some(Lang::Pytest), &mut tests);
    assert_eq!(tests["tests.test_x.T.test_a"], Outcome::Passed, "2 == 2.0");
    assert_eq!(tests["tests.test_x.T.test_b"], Outcome::Failed);
    assert_eq!(tests["tests.test_x.T.test_c"], Outcome::Failed);
    let outcomes: Vec<(&str, SealOutcome)> =
        r.iter().map(|r| (r.test.as_str(), r.outcome)).collect();
    assert_eq!(
        outcomes,
        [
            ("T.test_b", SealOutcome::Mismatched),
            ("T.test_c", SealOutcome::Missing)
        ]
    );
    assert!(forged(&r).expect("forged").contains("T.test_c"));
    assert_eq!(forged(&r[..1]), None, "a wrong value is no forgery");

    // A report of a token no site had: forged, even beside right values.
    let mut tests: BTreeMap<String, Outcome> =
        [("tests.test_x.T.test_a".to_owned(), Outcome::Passed)].into();
    let reports = vec![
        ("t1".to_owned(), "2".to_owned()),
        ("zz".to_owned(), "2".to_owned()),
    ];
    let r = judge(&planted[..1], &reports, |_| Some(Lang::Pytest), &mut tests);
    assert!(forged(&r).expect("forged").contains("no planted site"));
}

#[test]
fn reports_are_taken_out_of_the_log() {
    let log = b"ok\n\n[assay-seal] t1\t2\nRan 1 test\n[assay-seal] cut";
    let (found, rest) = reports(log);
    assert_eq!(
        found,
        [
            ("t1".to_owned(), "2".to_owned()),
            (String::new(), "cut".to_owned())
        ]
    );
    // The newline before a mark is the helper's own, as the audit hook's.
    assert_eq!(rest, b"ok\nRan 1 test");
}

#[test]
fn guess_odds_follow_the_prior() {
    let py = |s: &str| Lit::parse(Lang::Pytest, s).expect("literal");
    assert_eq!(guess_odds(&py("True")), 0.5);
    assert_eq!(guess_odds(&py("0")), 0.25);
    assert_eq!(guess_odds(&py("7")), 1.0 / 16.0);
    assert_eq!(guess_odds(&py("'division by zero'")), 2f64.powi(-12));
    assert_eq!(guess_odds(&py("[]")), 0.25);
    assert_eq!(guess_odds(&py("[1, 2]")), 0.25 * (1.0 / 16.0) * 0.25);
}

/// The helpers are real code: Python runs a sealed file and its reports
/// come back through the descriptor named by `ASSAY_AUDIT_FD`.
#[test]
fn python_runs_a_sealed_file_and_reports_its_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(sorted({3, 1}), [1, 3])\n        self.assertEqual(dict(k=(1.5, None, b'x')), {'k': 'no'})\n\n    def test_b(self):\n        assert 'a' + 'b' == 'zz'\n\n\nif __name__ == '__main__':\n    unittest.main()\n";
    let mut rng = Rng::new([1; 32]);
    let w =
        crate::model::canary::certify::seal_file(Lang::Unittest, "test_s.py", text, "", &mut rng)
            .expect("sealed");
    std::fs::write(dir.path().join("test_s.py"), &w.text).expect("write");
    let Ok(out) = std::process::Command::new("python3")
        .arg("test_s.py")
        .current_dir(dir.path())
        .env("ASSAY_AUDIT_FD", "1")
        .output()
    else {
        panic!("python3 is needed");
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the sealed assertions pass locally: {stderr}"
    );
    let (found, _) = reports(&out.stdout);
    let values: Vec<&str> = found.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(values, ["[1, 3]", "{'k': (1.5, None, b'x', )}", "'ab'"]);
    let planted: Vec<Sealed> = w.sealed.iter().map(|(s, _)| s.clone()).collect();
    let mut tests: BTreeMap<String, Outcome> = [
        ("T.test_a".to_owned(), Outcome::Passed),
        ("T.test_b".to_owned(), Outcome::Passed),
    ]
    .into();
    let r = judge(&planted, &found, |_| Some(Lang::Unittest), &mut tests);
    assert_eq!(tests["T.test_a"], Outcome::Failed, "{r:?}");
    assert_eq!(tests["T.test_b"], Outcome::Failed);
}
