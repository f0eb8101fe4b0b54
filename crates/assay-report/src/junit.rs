//! JUnit XML: `testsuites` / `testsuite` (nested at any depth) /
//! `testcase`, whose children `failure`, `error` and `skipped` give the
//! outcome (none: passed; several: the worst).
//!
//! The name is `classname.name`, or `name` when there is no classname; the
//! file is the testcase's `file` attribute, else the nearest enclosing
//! suite's. pytest's `<skipped type="pytest.xfail">` is an expected failure
//! and counts as passed, as in the pytest console format. A failed case's
//! message is its `failure` / `error` element's `message` attribute, then
//! its text (the stack or the runner's long report).
//!
//! The report may come from code under test, so the XML is read with
//! quick-xml and nothing more: no DTD processing, no entity expansion beyond
//! the five predefined entities and character references. A `DOCTYPE` is
//! ignored (noted), and a reference to any other entity in an attribute we
//! read is an error, so a "billion laughs" payload costs one linear scan.

use quick_xml::Reader;
use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};

use crate::message::TEST_MESSAGE_MAX_BYTES;
use crate::{Collector, Format, Outcome, ParseError, Report};

pub(crate) fn parse(input: &[u8]) -> Result<Report, ParseError> {
    let text = std::str::from_utf8(input).map_err(|e| ParseError::NotUtf8 {
        offset: e.valid_up_to() as u64,
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = Reader::from_str(text);
    let mut out = Collector::new(Format::Junit);
    let mut p = Walk::default();
    loop {
        let event = reader.read_event().map_err(|e| ParseError::Xml {
            offset: reader.error_position(),
            message: e.to_string(),
        })?;
        let offset = reader.buffer_position();
        match event {
            Event::Start(e) => p.open(&e, offset, false, &mut out)?,
            Event::Empty(e) => p.open(&e, offset, true, &mut out)?,
            Event::End(e) => p.close(e.local_name().as_ref(), &mut out),
            Event::Text(t) => p.text(&t.xml_content(XmlVersion::Implicit1_0)),
            Event::CData(t) => p.text(&t.xml_content(XmlVersion::Implicit1_0)),
            Event::GeneralRef(r) => {
                let c = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c),
                    _ => match r.xml_content(XmlVersion::Implicit1_0).as_ref() {
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "amp" => Some('&'),
                        "apos" => Some('\''),
                        "quot" => Some('"'),
                        _ => None,
                    },
                };
                if let Some(c) = c {
                    p.text(c.encode_utf8(&mut [0; 4]));
                }
            }
            Event::DocType(_) => out.note(format!(
                "byte {offset}: DOCTYPE ignored; its entities are not expanded"
            )),
            Event::Eof => break,
            _ => {}
        }
    }
    if !p.elements.is_empty() {
        return Err(ParseError::Xml {
            offset: text.len() as u64,
            message: format!(
                "input ends inside <{}>",
                p.elements.last().map_or("", String::as_str)
            ),
        });
    }
    if !p.saw_root {
        return Err(ParseError::NotJunit {
            offset: 0,
            message: "no <testsuites> or <testsuite> element".to_owned(),
        });
    }
    Ok(out.finish())
}

/// The testcase being read.
struct Case {
    name: String,
    file: Option<String>,
    outcome: Outcome,
    /// The `message` attributes and texts of its `failure` / `error`
    /// elements, capped as they are read.
    said: String,
    /// Inside a `failure` or `error` element: its text is the case's words.
    in_failure: bool,
}

#[derive(Default)]
struct Walk {
    /// Open elements (local names), for the end-of-input check.
    elements: Vec<String>,
    /// `file` attribute of each open testsuite.
    suite_files: Vec<Option<String>>,
    case: Option<Case>,
    saw_root: bool,
}

impl Walk {
    fn open(
        &mut self,
        e: &BytesStart<'_>,
        offset: u64,
        empty: bool,
        out: &mut Collector,
    ) -> Result<(), ParseError> {
        let tag = e.local_name().as_ref().to_owned();
        if self.elements.is_empty() && !self.saw_root {
            if tag != "testsuites" && tag != "testsuite" {
                return Err(ParseError::NotJunit {
                    offset,
                    message: format!("root element is <{tag}>"),
                });
            }
            self.saw_root = true;
        }
        match tag.as_str() {
            "testsuite" | "testsuites" => {
                let file = attr(e, "file", offset)?.filter(|f| !f.is_empty());
                if !empty {
                    self.suite_files.push(file);
                }
            }
            "testcase" if self.case.is_none() => {
                let name = attr(e, "name", offset)?.unwrap_or_default();
                let classname = attr(e, "classname", offset)?.filter(|c| !c.is_empty());
                let name = match classname {
                    Some(class) => format!("{class}.{name}"),
                    None => name,
                };
                let file = attr(e, "file", offset)?
                    .filter(|f| !f.is_empty())
                    .or_else(|| self.suite_files.iter().rev().flatten().next().cloned());
                let case = Case {
                    name,
                    file,
                    outcome: Outcome::Passed,
                    said: String::new(),
                    in_failure: false,
                };
                if empty {
                    finish_case(case, out);
                } else {
                    self.case = Some(case);
                }
            }
            "failure" | "error" | "skipped" => {
                if let Some(case) = self.case.as_mut() {
                    let outcome = match tag.as_str() {
                        "failure" => Outcome::Failed,
                        "error" => Outcome::Error,
                        _ if attr(e, "type", offset)?.as_deref() == Some("pytest.xfail") => {
                            Outcome::Passed
                        }
                        _ => Outcome::Skipped,
                    };
                    case.outcome = case.outcome.worst(outcome);
                    if tag != "skipped" {
                        if let Some(m) =
                            attr(e, "message", offset)?.filter(|m| !m.trim().is_empty())
                        {
                            case.hear(&m);
                            case.hear("\n");
                        }
                        case.in_failure = !empty;
                    }
                }
            }
            _ => {}
        }
        if !empty {
            self.elements.push(tag);
        }
        Ok(())
    }

    /// Text inside the current element: a failure's words when in one.
    fn text(&mut self, text: &str) {
        if let Some(case) = self.case.as_mut().filter(|c| c.in_failure) {
            case.hear(text);
        }
    }

    fn close(&mut self, tag: &str, out: &mut Collector) {
        self.elements.pop();
        if let ("failure" | "error", Some(case)) = (tag, self.case.as_mut()) {
            case.in_failure = false;
        }
        match tag {
            "testsuite" | "testsuites" => {
                self.suite_files.pop();
            }
            "testcase" => {
                if let Some(case) = self.case.take() {
                    finish_case(case, out);
                }
            }
            _ => {}
        }
    }
}

impl Case {
    /// Adds `text` to the case's words, up to twice the kept cap (the cap
    /// itself is applied once, by the collector).
    fn hear(&mut self, text: &str) {
        let room = (2 * TEST_MESSAGE_MAX_BYTES).saturating_sub(self.said.len());
        let mut cut = room.min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.said.push_str(&text[..cut]);
    }
}

fn finish_case(case: Case, out: &mut Collector) {
    if case.name.is_empty() {
        out.note("a <testcase> without a name was skipped");
        return;
    }
    out.record_saying(case.name, case.file, case.outcome, Some(&case.said));
}

/// The value of attribute `key`, with only the predefined entities and
/// character references resolved.
fn attr(e: &BytesStart<'_>, key: &str, offset: u64) -> Result<Option<String>, ParseError> {
    for a in e.attributes() {
        let a = a.map_err(|err| ParseError::Xml {
            offset,
            message: err.to_string(),
        })?;
        if a.key.local_name().as_ref() == key {
            let value =
                a.normalized_value(XmlVersion::Implicit1_0)
                    .map_err(|err| ParseError::Xml {
                        offset,
                        message: format!("attribute `{key}`: {err}"),
                    })?;
            return Ok(Some(value.into_owned()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// `parse` on its own thread, failing the test if it does not return
    /// within a bound far above one linear scan of the input: expanding the
    /// entities (3 GB of text) would blow it or exhaust memory first. A hang
    /// detector, not a timing assertion.
    fn parse_bounded(input: String) -> Result<Report, ParseError> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(parse(input.as_bytes()));
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("parse did not return within 60 s: were the entities expanded?")
    }

    fn outcomes(r: &Report) -> Vec<(&str, Option<&str>, Outcome)> {
        r.tests
            .iter()
            .map(|t| (t.name.as_str(), t.file.as_deref(), t.outcome))
            .collect()
    }

    fn expected(
        ops_file: Option<&'static str>,
        broken_file: Option<&'static str>,
    ) -> Vec<(&'static str, Option<&'static str>, Outcome)> {
        let f = ops_file;
        vec![
            ("tests.test_broken", broken_file, Outcome::Error),
            ("tests.test_ops.TestDivide.test_by_zero", f, Outcome::Passed),
            ("tests.test_ops.TestDivide.test_wrong", f, Outcome::Failed),
            ("tests.test_ops.test_add", f, Outcome::Passed),
            ("tests.test_ops.test_skip_inside", f, Outcome::Skipped),
            ("tests.test_ops.test_skipped", f, Outcome::Skipped),
            ("tests.test_ops.test_split[-0]", f, Outcome::Passed),
            ("tests.test_ops.test_split[a b-2]", f, Outcome::Passed),
            ("tests.test_ops.test_split[x [y] z-3]", f, Outcome::Passed),
            ("tests.test_ops.test_sub", f, Outcome::Failed),
            ("tests.test_ops.test_uses_broken_fixture", f, Outcome::Error),
            ("tests.test_ops.test_xfail", f, Outcome::Passed),
            ("tests.test_ops.test_xpass", f, Outcome::Passed),
            ("tests.test_ops.test_xpass_strict", f, Outcome::Failed),
        ]
    }

    #[test]
    fn pytest_junitxml_fixture() {
        let r = parse(include_bytes!("../tests/fixtures/junit_pytest.xml")).unwrap();
        assert_eq!(outcomes(&r), expected(None, None));
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn pytest_xunit1_fixture_has_files() {
        let r = parse(include_bytes!("../tests/fixtures/junit_pytest_xunit1.xml")).unwrap();
        assert_eq!(
            outcomes(&r),
            expected(Some("tests/test_ops.py"), Some("tests/test_broken.py"))
        );
    }

    #[test]
    fn nested_suites_suite_file_and_worst_child() {
        let input = br#"<?xml version="1.0"?>
<testsuites>
  <testsuite name="outer" file="spec/outer.js">
    <testsuite name="inner">
      <testcase classname="Outer &amp; Inner" name="works &lt;fine&gt;"/>
      <testcase name="flaky"><failure message="x"/><error message="teardown"/></testcase>
      <testcase classname="C" name="skip" file="spec/own.js"><skipped/></testcase>
    </testsuite>
    <testcase classname="" name="top"><system-out>&lt;not a test&gt;</system-out></testcase>
  </testsuite>
  <testsuite name="other"><testcase classname="D" name="plain"></testcase></testsuite>
</testsuites>"#;
        let r = parse(input).unwrap();
        let outer = Some("spec/outer.js");
        assert_eq!(
            outcomes(&r),
            [
                ("C.skip", Some("spec/own.js"), Outcome::Skipped),
                ("D.plain", None, Outcome::Passed),
                ("Outer & Inner.works <fine>", outer, Outcome::Passed),
                ("flaky", outer, Outcome::Error),
                ("top", outer, Outcome::Passed),
            ]
        );
    }

    const LAUGHS: &str = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
"#;

    #[test]
    fn billion_laughs_in_an_attribute_is_an_error_not_an_expansion() {
        let input = format!("{LAUGHS}<testsuite><testcase name=\"&lol9;\"/></testsuite>");
        let err = parse_bounded(input).unwrap_err();
        let ParseError::Xml { offset, message } = &err else {
            panic!("{err:?}");
        };
        assert!(*offset > 0 && message.contains("name"), "{err}");
    }

    #[test]
    fn billion_laughs_in_text_is_ignored_not_expanded() {
        let input = format!(
            "{LAUGHS}<testsuite><testcase name=\"t\"><system-out>&lol9;</system-out></testcase></testsuite>"
        );
        let r = parse_bounded(input).unwrap();
        assert_eq!(outcomes(&r), [("t", None, Outcome::Passed)]);
        assert_eq!(r.notes.len(), 1, "the DOCTYPE is noted: {:?}", r.notes);
    }

    #[test]
    fn errors_say_where() {
        let err = parse(b"<testsuite><testcase name=\"a\"></testsuite>").unwrap_err();
        assert!(matches!(err, ParseError::Xml { .. }), "{err}");

        let err = parse(b"<testsuite><testcase name=\"a\"/>").unwrap_err();
        assert!(err.to_string().contains("ends inside <testsuite>"), "{err}");

        let err = parse(b"<html><body/></html>").unwrap_err();
        assert!(matches!(err, ParseError::NotJunit { .. }), "{err}");

        let err = parse(b"<testsuite>\xff</testsuite>").unwrap_err();
        assert_eq!(err, ParseError::NotUtf8 { offset: 11 });
    }

    #[test]
    fn garbage_is_an_error() {
        for input in [
            &b""[..],
            b"hello world",
            b"<<<>>>",
            b"<testsuite",
            b"<testsuite><testcase name='&bogus;'/></testsuite>",
            b"<?xml version=\"1.0\"?>",
        ] {
            assert!(
                parse(input).is_err(),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn a_failures_message_attribute_and_text_are_its_words() {
        let r = parse(include_bytes!("../tests/fixtures/junit_pytest.xml")).unwrap();
        let said = crate::testing::messages(&r);
        let of = |name: &str| said.iter().find(|(t, _)| *t == name).map(|(_, m)| *m);
        let wrong = of("tests.test_ops.TestDivide.test_wrong").unwrap_or_default();
        assert!(
            wrong.starts_with("assert (7 / 2) == 3\nself = <test_ops.TestDivide object at "),
            "{wrong}"
        );
        let xml = br#"<testsuite><testcase name="a"><failure message="expected &lt;3&gt;">at a (x.js:1)&#10;<![CDATA[at <b>]]>&amp;</failure></testcase><testcase name="b"><skipped message="not here"/></testcase></testsuite>"#;
        let r = parse(xml).unwrap();
        assert_eq!(
            crate::testing::messages(&r),
            [("a", "expected <3>\nat a (x.js:1)\nat <b>&")]
        );
    }
}
