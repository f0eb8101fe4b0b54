//! What a canary looks like in each framework: its source shaped like the
//! file's own tests (the words of their names, the framework's test
//! function or method), its name in the report, and the seeded stream its
//! names and numbers come from.

use assay_report::{Canaries, Format};

use super::reading::Must;

/// The words of test names (`test_divide_by_zero`, `TestParseEmpty`),
/// lower case, without the `test` prefix, for canary names shaped like
/// the file's own.
pub(super) fn words_of(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let mut word = String::new();
        let mut flush = |w: &mut String| {
            let lw = w.to_ascii_lowercase();
            if lw.len() >= 2 && lw != "test" && !out.contains(&lw) {
                out.push(lw);
            }
            w.clear();
        };
        for ch in name.chars() {
            // `_`, digits, and (in a JavaScript title) spaces and
            // punctuation end a word.
            if !ch.is_ascii_alphabetic() {
                flush(&mut word);
            } else if ch.is_ascii_uppercase() && !word.is_empty() {
                flush(&mut word);
                word.push(ch);
            } else {
                word.push(ch);
            }
        }
        flush(&mut word);
    }
    for w in FALLBACK_WORDS {
        if out.len() >= 6 {
            break;
        }
        if !out.iter().any(|o| o == w) {
            out.push((*w).to_owned());
        }
    }
    out
}

pub(super) const FALLBACK_WORDS: &[&str] = &[
    "value", "result", "empty", "order", "input", "update", "check", "format", "count", "range",
    "basic", "case",
];

/// The expected value of a canary's assertion: right for a must-pass, one
/// off for a must-fail; the same shape either way.
pub(super) struct Sum {
    pub(super) a: u32,
    pub(super) b: u32,
    pub(super) expected: u32,
}

impl Sum {
    pub(super) fn new(rng: &mut Rng, must: Must) -> Sum {
        let a = 2 + (rng.next() % 90) as u32;
        let b = 2 + (rng.next() % 90) as u32;
        let off = if must == Must::Fail { 1 } else { 0 };
        Sum {
            a,
            b,
            expected: a + b + off,
        }
    }
}

/// The language of a hidden test file under a report format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lang {
    Unittest,
    Pytest,
    Go,
    Rust,
    /// JavaScript or TypeScript under jest, vitest, mocha or `node --test`.
    Js,
}

/// What the appended source must refer to.
pub(super) enum Shape {
    /// The expression that names `unittest.TestCase` in this file.
    TestCase(String),
    Plain,
    /// JavaScript: the test function the file calls (`it` or `test`) and
    /// its assertion, written as the file writes its own.
    Js {
        call: &'static str,
        check: JsCheck,
    },
}

/// How a JavaScript file asserts, so a canary asserts the same way (a
/// patched `expect` or `assert` reaches the canary too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum JsCheck {
    /// `expect(got).toBe(want)` (jest, vitest).
    Expect,
    /// `assert.strictEqual(got, want)` (node:assert, under mocha or `node --test`).
    StrictEqual,
    /// `assert.equal(got, want)`.
    Equal,
    /// A plain `throw` (a file whose assertion style is neither).
    Throw,
}

/// Whether `file` (a path's last part) is named like a JavaScript or
/// TypeScript test file: `*.test.*`, `*.spec.*`, or a script under a test
/// directory (`test/`, `tests/`, `__tests__/`).
pub(super) fn is_js_test(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    let ext = file.rsplit('.').next().unwrap_or("");
    let script = matches!(
        ext,
        "js" | "mjs" | "cjs" | "ts" | "mts" | "cts" | "jsx" | "tsx"
    );
    let named = file.contains(".test.") || file.contains(".spec.");
    let dirs = path.split('/').rev().skip(1);
    let under = dirs
        .into_iter()
        .any(|d| matches!(d, "test" | "tests" | "__tests__"));
    script && (named || under)
}

/// The titles of a JavaScript file's tests: the first string argument of
/// each `it(`, `test(` (and `.only`/`.skip` forms are left out: they are
/// not plain tests).
pub(super) fn js_titles(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let rest = t.strip_prefix("it(").or_else(|| t.strip_prefix("test("));
        let Some(rest) = rest else { continue };
        let rest = rest.trim_start();
        let Some(q) = rest
            .chars()
            .next()
            .filter(|c| matches!(c, '\'' | '"' | '`'))
        else {
            continue;
        };
        if let Some(end) = rest[1..].find(q) {
            let title = &rest[1..1 + end];
            if !title.is_empty() && !title.contains('\\') && !title.contains("${") {
                out.push(title.to_owned());
            }
        }
    }
    out
}

fn js_shape(text: &str) -> Option<Shape> {
    let calls = |f: &str| {
        text.lines()
            .any(|l| l.trim_start().starts_with(&format!("{f}(")))
    };
    let call = if calls("it") {
        "it"
    } else if calls("test") {
        "test"
    } else {
        return None;
    };
    let check = if text.contains("expect(") {
        JsCheck::Expect
    } else if text.contains("assert.strictEqual(") {
        JsCheck::StrictEqual
    } else if text.contains("assert.equal(") {
        JsCheck::Equal
    } else {
        JsCheck::Throw
    };
    Some(Shape::Js { call, check })
}

impl Lang {
    /// The language of a test file by its name alone (unittest and pytest
    /// read values alike).
    pub(super) fn by_path(path: &str) -> Option<Lang> {
        let ext = path.rsplit('.').next()?;
        match ext {
            "py" => Some(Lang::Pytest),
            "go" => Some(Lang::Go),
            "rs" => Some(Lang::Rust),
            "js" | "mjs" | "cjs" | "jsx" | "ts" | "tsx" | "mts" | "cts" => Some(Lang::Js),
            _ => None,
        }
    }

    /// The language of a hidden test file that carries the canaries of a
    /// `format` report (its row's [`Canaries`]).
    pub(super) fn of(format: Format, path: &str) -> Option<Lang> {
        let lang = match format.capabilities().canaries? {
            Canaries::Unittest => Lang::Unittest,
            Canaries::Pytest => Lang::Pytest,
            Canaries::Go => Lang::Go,
            Canaries::Rust => Lang::Rust,
            Canaries::Js => Lang::Js,
        };
        lang.holds(path).then_some(lang)
    }

    /// Whether `path` is named like a test file of this language.
    fn holds(self, path: &str) -> bool {
        let file = path.rsplit('/').next().unwrap_or(path);
        match self {
            Lang::Unittest | Lang::Pytest => {
                file.ends_with(".py") && (file.starts_with("test") || file.ends_with("_test.py"))
            }
            Lang::Go => file.ends_with("_test.go"),
            Lang::Rust => file.ends_with(".rs"),
            Lang::Js => is_js_test(path),
        }
    }

    /// Whether the file can carry a canary, and what the canary names.
    pub(super) fn shape(self, text: &str) -> Option<Shape> {
        match self {
            // A pytest file of unittest classes may run under a unittest
            // runner that collects no plain function (JUnit from xmlrunner):
            // its canaries are a class too, which pytest collects as well.
            Lang::Pytest if !text.contains("TestCase") => Some(Shape::Plain),
            Lang::Unittest | Lang::Pytest => {
                let line_starts = |p: &str| text.lines().any(|l| l.starts_with(p));
                if line_starts("import unittest") {
                    Some(Shape::TestCase("unittest.TestCase".into()))
                } else if text
                    .lines()
                    .any(|l| l.starts_with("from unittest import") && l.contains("TestCase"))
                {
                    Some(Shape::TestCase("TestCase".into()))
                } else {
                    Some(Shape::TestCase("__import__(\"unittest\").TestCase".into()))
                }
            }
            Lang::Go => {
                // Build constraints may keep the file out of the run; an
                // aliased or dot import names `testing` otherwise.
                let constrained = text
                    .lines()
                    .any(|l| l.starts_with("//go:build") || l.starts_with("// +build"));
                let imports_testing = text
                    .lines()
                    .any(|l| matches!(l.trim(), "\"testing\"" | "import \"testing\""));
                (!constrained && imports_testing).then_some(Shape::Plain)
            }
            Lang::Rust => {
                // A file compiled only under a feature or platform may not run.
                let gated = text.lines().any(|l| l.trim_start().starts_with("#![cfg"));
                (!gated && text.contains("#[test]")).then_some(Shape::Plain)
            }
            Lang::Js => js_shape(text),
        }
    }

    /// The names of the file's own tests.
    pub(super) fn test_names(self, text: &str) -> Vec<String> {
        if self == Lang::Js {
            return js_titles(text);
        }
        let mut out = Vec::new();
        let mut after_test_attr = false;
        for line in text.lines() {
            let t = line.trim_start();
            let name = match self {
                Lang::Unittest | Lang::Pytest => t
                    .strip_prefix("def test")
                    .or_else(|| t.strip_prefix("async def test"))
                    .map(|rest| format!("test{}", ident(rest))),
                Lang::Go => t
                    .strip_prefix("func Test")
                    .filter(|rest| rest.contains("*testing.T"))
                    .map(|rest| format!("Test{}", ident(rest))),
                Lang::Js => None,
                Lang::Rust => {
                    if t.starts_with("#[test]") {
                        after_test_attr = true;
                        None
                    } else if after_test_attr && !t.starts_with("#[") {
                        after_test_attr = false;
                        t.split("fn ").nth(1).map(|rest| ident(rest).to_owned())
                    } else {
                        None
                    }
                }
            };
            if let Some(n) = name.filter(|n| !n.is_empty()) {
                out.push(n);
            }
        }
        out
    }

    /// A test name built of `words`, in the language's convention.
    pub(super) fn name(self, words: &[&str]) -> String {
        match self {
            Lang::Unittest | Lang::Pytest => format!("test_{}", words.join("_")),
            Lang::Go => {
                let camel: String = words.iter().map(|w| capitalise(w)).collect();
                format!("Test{camel}")
            }
            Lang::Rust => words.join("_"),
            Lang::Js => words.join(" "),
        }
    }

    /// How the report names canary `name` (a method: under its class).
    pub(super) fn report_name(shape: &Shape, class: &str, name: &str) -> String {
        match shape {
            Shape::TestCase(_) => format!("{}.{name}", class_name(class)),
            Shape::Plain | Shape::Js { .. } => name.to_owned(),
        }
    }

    /// The source appended to the file: the canaries, in its framework.
    pub(super) fn source(
        self,
        shape: &Shape,
        first: &str,
        canaries: &[(String, Must, Sum)],
    ) -> String {
        let mut s = String::new();
        match (self, shape) {
            (Lang::Unittest | Lang::Pytest, Shape::TestCase(base)) => {
                s.push_str(&format!("\n\nclass {}({base}):\n", class_name(first)));
                for (i, (name, _, sum)) in canaries.iter().enumerate() {
                    if i > 0 {
                        s.push('\n');
                    }
                    s.push_str(&format!(
                        "    def {name}(self):\n        self.assertEqual({} + {}, {})\n",
                        sum.a, sum.b, sum.expected
                    ));
                }
            }
            (Lang::Pytest | Lang::Unittest, Shape::Plain | Shape::Js { .. }) => {
                for (name, _, sum) in canaries {
                    s.push_str(&format!(
                        "\n\ndef {name}():\n    assert {} + {} == {}\n",
                        sum.a, sum.b, sum.expected
                    ));
                }
            }
            (Lang::Go, _) => {
                for (name, _, sum) in canaries {
                    s.push_str(&format!(
                        "\nfunc {name}(t *testing.T) {{\n\tif got, want := {} + {}, {}; got != want {{\n\t\tt.Fatalf(\"got %d, want %d\", got, want)\n\t}}\n}}\n",
                        sum.a, sum.b, sum.expected
                    ));
                }
            }
            (Lang::Js, Shape::Js { call, check }) => {
                for (name, _, sum) in canaries {
                    let (a, b, want) = (sum.a, sum.b, sum.expected);
                    let body = match check {
                        JsCheck::Expect => format!("expect({a} + {b}).toBe({want});"),
                        JsCheck::StrictEqual => format!("assert.strictEqual({a} + {b}, {want});"),
                        JsCheck::Equal => format!("assert.equal({a} + {b}, {want});"),
                        JsCheck::Throw => format!(
                            "if ({a} + {b} !== {want}) throw new Error(`got ${{{a} + {b}}}, want {want}`);"
                        ),
                    };
                    s.push_str(&format!("\n{call}('{name}', () => {{\n  {body}\n}});\n"));
                }
            }
            (Lang::Js, _) => {}
            (Lang::Rust, _) => {
                for (name, _, sum) in canaries {
                    s.push_str(&format!(
                        "\n#[test]\nfn {name}() {{\n    assert_eq!({} + {}, {});\n}}\n",
                        sum.a, sum.b, sum.expected
                    ));
                }
            }
        }
        s
    }
}

/// `test_value_order` → `TestValueOrder`.
pub(super) fn class_name(name: &str) -> String {
    name.split('_')
        .filter(|w| !w.is_empty())
        .map(capitalise)
        .collect()
}

pub(super) fn capitalise(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

/// The identifier at the start of `s`.
pub(super) fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// A small deterministic stream over the run's random seed (blake3's XOF):
/// the names and numbers of one run's canaries.
pub(super) struct Rng(blake3::OutputReader);

impl Rng {
    pub(super) fn new(seed: [u8; 32]) -> Rng {
        Rng(blake3::Hasher::new_derive_key("assay canary v1")
            .update(&seed)
            .finalize_xof())
    }

    pub(super) fn next(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.0.fill(&mut b);
        u64::from_le_bytes(b)
    }

    /// Two or three distinct words of `pool`.
    pub(super) fn pick_words<'a>(&mut self, pool: &'a [String]) -> Vec<&'a str> {
        let n = 2 + (self.next() % 2) as usize;
        let mut out: Vec<&str> = Vec::new();
        while out.len() < n.min(pool.len()) {
            let w = pool[(self.next() % pool.len() as u64) as usize].as_str();
            if !out.contains(&w) {
                out.push(w);
            }
        }
        out
    }
}
