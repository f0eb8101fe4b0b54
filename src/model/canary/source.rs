//! The tests of a hidden test file, read from its source: where each test
//! function starts and ends, what it is named, the container it sits in (a
//! Python class, a Rust module, a JavaScript `describe`, the file), and the
//! integer literals of its
//! assertions that a mutant may change (docs/security.md, "Canaries").
//!
//! A reader per language, line-based with strings and comments skipped
//! (not a full grammar: what it gets wrong makes a copy or a mutant that
//! does not compile or does not fail, and certification at screening throws
//! that away; a file it cannot read gets no canary of this kind). Only the
//! literal an assertion *expects* is a site — the last argument of
//! `assertEqual`/`assert_eq!`, the right of `==` in a Python `assert`, of
//! `!=` in a Go `if`, a Go `want :=`, the second argument of JavaScript's
//! `assert.strictEqual`, the argument of `.toBe` — never an input, so a
//! mutant cannot
//! make a test run longer.
//!
//! A site must give a forger that reads the test nothing to pick its
//! original out of a window by ([`Site::also`], [`recomputable`]):
//!
//! - **Every occurrence goes with it.** The value written again in the
//!   test's messages (`t.Fatalf("… want 0")`, `"expected 42"`, the third
//!   argument of `assertEqual`), its comments, or another assertion's
//!   expected place is changed with the site in each mutant, so the copies
//!   differ from the original in all of them alike.
//! - **Never an input.** A value that also stands in the test's code
//!   anywhere else (an argument of the call under test, a variable's value)
//!   or inside one of its input strings (`parse("3 * 4") == [3, "*", 4]`)
//!   is no site: changing it there would change the input, and leaving it
//!   would name the original.
//! - **Not recomputable.** A value that is a simple function of the test's
//!   own integer inputs (negation, ±1, doubling, a square, the sum,
//!   difference, product, exact quotient or remainder of two), the length
//!   of an input string, or (a string) an input string, a part of one, or
//!   one upper- or lower-cased or reversed, is no site: a forger computes
//!   the candidates and keeps the member of the window among them. Except
//!   where those candidates crowd the value's neighbourhood (8 or more
//!   within a window's reach, as around the small values of
//!   `sub(5, 3) == 2`): keeping the members among them leaves half a
//!   window or more, a bit of its four, and the site keeps its window.

pub(crate) use super::block::{Also, Block, SealSite, Site, TestRef};
use super::expected::{
    go_expected, int_in, js_expected, python_expected, rust_expected, string_in,
};
use super::lex::{braced_code, code_chars, is_ident, js_code};
use super::readers::{braced, js, python};
use super::shape::Lang;

/// The test functions of `text`, in order.
pub(crate) fn blocks(lang: Lang, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = match lang {
        Lang::Unittest | Lang::Pytest => python(&lines),
        Lang::Go => braced(&lines, Lang::Go),
        Lang::Rust => braced(&lines, Lang::Rust),
        Lang::Js => js(&lines),
    };
    for b in &mut out {
        (b.sites, b.windows) = sites(lang, &lines[b.start..b.end], b.def_line - b.start);
    }
    out
}

/// The expected literals of a block's lines (`def_at`: the line of its
/// `def`/`fn`; sites are in the body after it): in the part of an
/// assertion that is its expected value, the first integer, else the
/// first plain string literal; and of them, those a window may go to.
fn sites(lang: Lang, block: &[&str], def_at: usize) -> (Vec<Site>, Vec<Site>) {
    let mut candidates = Vec::new();
    let mut expected_at = Vec::new();
    for (n, line) in block.iter().enumerate().skip(def_at + 1) {
        let code: String = match lang {
            Lang::Unittest | Lang::Pytest => code_chars(line).collect(),
            Lang::Js => js_code(line),
            _ => braced_code(line),
        };
        let expected = match lang {
            Lang::Unittest | Lang::Pytest => python_expected(&code),
            Lang::Go => go_expected(&code),
            Lang::Rust => rust_expected(&code),
            Lang::Js => js_expected(&code),
        };
        let Some((s, e)) = expected else { continue };
        let quotes: &[u8] = match lang {
            Lang::Unittest | Lang::Pytest | Lang::Js => b"\"'",
            _ => b"\"",
        };
        expected_at.push((n, s, e));
        if let Some((col, len)) =
            int_in(&code, s, e).or_else(|| string_in(line, &code, s, e, quotes))
        {
            candidates.push(Site {
                line: n,
                col,
                text: line[col..col + len].to_owned(),
                also: Vec::new(),
            });
        }
    }
    let body = Body {
        lang,
        lines: block,
        from: def_at + 1,
        expected: &expected_at,
    };
    let inputs = body.inputs();
    let mut out: Vec<Site> = Vec::new();
    for mut site in candidates.clone() {
        // A value written at another site's place goes with that site.
        let taken = out.iter().any(|o| {
            o.also
                .iter()
                .any(|a| (a.line, a.col) == (site.line, site.col))
        });
        if taken || recomputable(&site.text, &inputs) {
            continue;
        }
        let Some(also) = body.occurrences(&site) else {
            continue;
        };
        site.also = also;
        out.push(site);
    }
    (candidates, out)
}

/// The part of a line a byte is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Code,
    /// A string or char literal, its quotes included.
    Str,
    Comment,
}

/// A line cut into code, string literals (quotes included) and its line
/// comment, as byte ranges in order.
pub(super) fn parts(lang: Lang, line: &str) -> Vec<(Part, usize, usize)> {
    let (quotes, comment): (&[u8], &str) = match lang {
        Lang::Unittest | Lang::Pytest => (b"\"'", "#"),
        Lang::Js => (b"\"'`", "//"),
        Lang::Go => (b"\"`", "//"),
        Lang::Rust => (b"\"", "//"),
    };
    let b = line.as_bytes();
    let mut out = Vec::new();
    let (mut from, mut k) = (0, 0);
    let code = |out: &mut Vec<(Part, usize, usize)>, from: usize, to: usize| {
        if to > from {
            out.push((Part::Code, from, to));
        }
    };
    while k < b.len() {
        if line[k..].starts_with(comment) {
            code(&mut out, from, k);
            out.push((Part::Comment, k, b.len()));
            return out;
        }
        // A Rust char literal (`'{'`), not a lifetime.
        let char_lit = lang == Lang::Rust && b[k] == b'\'' && b.get(k + 2) == Some(&b'\'');
        if char_lit || quotes.contains(&b[k]) {
            code(&mut out, from, k);
            let q = b[k];
            let mut j = k + 1;
            let mut escaped = false;
            while j < b.len() && !char_lit {
                if escaped {
                    escaped = false;
                } else if b[j] == b'\\' {
                    escaped = true;
                } else if b[j] == q {
                    break;
                }
                j += 1;
            }
            let end = if char_lit {
                k + 3
            } else {
                (j + 1).min(b.len())
            };
            out.push((Part::Str, k, end));
            (from, k) = (end, end);
            continue;
        }
        k += 1;
    }
    code(&mut out, from, b.len());
    out
}

/// The test's own inputs: the integer literals of its code and the bodies
/// of its strings that are neither expected values nor messages.
#[derive(Debug, Default)]
struct Inputs {
    ints: Vec<i64>,
    strings: Vec<String>,
}

/// A test's body as the site rules read it.
struct Body<'a> {
    lang: Lang,
    lines: &'a [&'a str],
    /// The body's first line (after the `def`/`fn`).
    from: usize,
    /// (line, start, end) of each assertion's expected value.
    expected: &'a [(usize, usize, usize)],
}

impl Body<'_> {
    fn is_expected(&self, line: usize, s: usize, e: usize) -> bool {
        self.expected
            .iter()
            .any(|(l, es, ee)| *l == line && s >= *es && e <= *ee)
    }

    /// Whether the string at `s` of line `n` is a message: it follows an
    /// assertion's expected value on its line (`assertEqual(a, b, "msg")`,
    /// `assert a == b, "msg"`), or the line reports (`t.Fatalf`, `panic!`,
    /// `self.fail`, `print`).
    fn is_message(&self, n: usize, s: usize) -> bool {
        const REPORTS: &[&str] = &[
            "t.Fatal",
            "t.Error",
            "t.Log",
            "t.Skip",
            "panic!(",
            "println!(",
            "eprintln!(",
            "self.fail(",
            "print(",
            "console.log(",
            "new Error(",
            "fail(",
        ];
        let line = self.lines[n];
        self.expected.iter().any(|(l, _, e)| *l == n && s >= *e)
            || REPORTS.iter().any(|r| line[..s].contains(r))
    }

    fn body_lines(&self) -> impl Iterator<Item = (usize, &str)> {
        self.lines
            .iter()
            .enumerate()
            .skip(self.from)
            .map(|(n, l)| (n, *l))
    }

    fn inputs(&self) -> Inputs {
        let mut out = Inputs::default();
        for (n, line) in self.body_lines() {
            for (part, s, e) in parts(self.lang, line) {
                match part {
                    Part::Code => {
                        let mut k = s;
                        while let Some((col, len)) = int_in(line, k, e) {
                            if !self.is_expected(n, col, col + len)
                                && let Ok(v) = line[col..col + len].parse::<i64>()
                                && !out.ints.contains(&v)
                            {
                                out.ints.push(v);
                            }
                            k = col + len.max(1);
                        }
                    }
                    Part::Str if !self.is_expected(n, s, e) && !self.is_message(n, s) => {
                        let inner = line.get(s + 1..e.saturating_sub(1).max(s + 1));
                        if let Some(inner) = inner.filter(|i| !i.is_empty()) {
                            out.strings.push(inner.to_owned());
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// Every other place of the body that writes `site`'s value, or `None`
    /// when one of them is an input (then the site is not used).
    fn occurrences(&self, site: &Site) -> Option<Vec<Also>> {
        let string = site.text.starts_with(['"', '\'', '`']);
        let inner = if string {
            &site.text[1..site.text.len() - 1]
        } else {
            site.text.as_str()
        };
        let mut out = Vec::new();
        for (n, line) in self.body_lines() {
            for (part, s, e) in parts(self.lang, line) {
                let hits = match part {
                    Part::Code if !string => value_at(line, s, e, inner),
                    Part::Code => Vec::new(),
                    // A string site's own literal, written again whole.
                    Part::Str if string && line[s..e] == site.text => vec![s],
                    Part::Str | Part::Comment if string => line[s..e]
                        .match_indices(inner)
                        .map(|(k, _)| s + k)
                        .collect(),
                    Part::Str | Part::Comment => value_at(line, s, e, inner),
                };
                for at in hits {
                    if (n, at) == (site.line, site.col) {
                        continue;
                    }
                    let whole = string && part == Part::Str && at == s;
                    let len = if whole { site.text.len() } else { inner.len() };
                    let mutable = match part {
                        Part::Comment => true,
                        Part::Code => self.is_expected(n, at, at + len),
                        Part::Str if whole => {
                            self.is_expected(n, at, at + len) || self.is_message(n, s)
                        }
                        Part::Str => self.is_message(n, s),
                    };
                    if !mutable {
                        return None;
                    }
                    out.push(Also {
                        line: n,
                        col: at,
                        text: line[at..at + len].to_owned(),
                        body: string && !whole,
                    });
                }
            }
        }
        Some(out)
    }
}

/// Where the integer `value` stands alone in `line[s..e]`: not part of a
/// name, a longer number or a float.
fn value_at(line: &str, s: usize, e: usize, value: &str) -> Vec<usize> {
    let b = line.as_bytes();
    let alone = |c: Option<&u8>| !c.is_some_and(|c| is_ident(*c as char));
    line[s..e]
        .match_indices(value)
        .map(|(k, _)| s + k)
        .filter(|at| {
            let end = at + value.len();
            let before = at.checked_sub(1).map(|k| &b[k]);
            let float = b.get(end) == Some(&b'.') && b.get(end + 1).is_some_and(u8::is_ascii_digit);
            alone(before) && before != Some(&b'.') && alone(b.get(end)) && !float
        })
        .collect()
}

/// Whether a forger computes `value` from the test's own `inputs`
/// (the module's rule): then a window around it gives nothing away only
/// to one that does not.
fn recomputable(value: &str, inputs: &Inputs) -> bool {
    if let Ok(v) = value.parse::<i64>() {
        let c = int_candidates(inputs);
        // Where the candidates crowd around a small value (`sub(5, 3) ==
        // 2`: -5, -3, -2, 2, 3, 4, 5, 6, 8, 9, 10, 15 …), keeping the
        // window's members among them leaves a forger half a window or
        // more: at most one bit of the window's four, and the site stays.
        let near = c.range(v.saturating_sub(WINDOW_REACH)..=v.saturating_add(WINDOW_REACH));
        return c.contains(&v) && near.count() < CROWDED;
    }
    let body = value.get(1..value.len().saturating_sub(1)).unwrap_or("");
    inputs.strings.iter().any(|s| {
        s == body
            || s.contains(body)
            || (s.len() >= 2 && body.contains(s.as_str()))
            || s.to_uppercase() == body
            || s.to_lowercase() == body
            || s.chars().rev().collect::<String>() == body
    }) || inputs.ints.iter().any(|i| i.to_string() == body)
}

/// How far a window reaches from its right value.
const WINDOW_REACH: i64 = 15;
/// Candidates within a window's reach that leave a forger half a window.
const CROWDED: usize = 8;

/// The values a forger computes from a test's integer inputs.
fn int_candidates(inputs: &Inputs) -> std::collections::BTreeSet<i64> {
    /// Inputs read: a test with more literals than this gets none of its
    /// pairs beyond them.
    const MOST: usize = 12;
    let ints = &inputs.ints[..inputs.ints.len().min(MOST)];
    let mut out = std::collections::BTreeSet::new();
    for (i, &x) in ints.iter().enumerate() {
        out.extend([Some(x), x.checked_neg(), x.checked_add(1), x.checked_sub(1)]);
        out.extend([x.checked_mul(2), x.checked_mul(x)]);
        // Two inputs (two places; one value written twice counts).
        for &y in ints.iter().skip(i + 1).chain(&ints[..i]) {
            out.extend([x.checked_add(y), x.checked_sub(y), x.checked_mul(y)]);
            if y != 0 {
                out.insert(x.checked_rem(y));
                out.insert(x.checked_rem_euclid(y));
                if x.checked_rem(y) == Some(0) {
                    out.insert(x.checked_div(y));
                }
            }
        }
    }
    for s in &inputs.strings {
        out.insert(i64::try_from(s.chars().count()).ok());
    }
    out.into_iter().flatten().collect()
}

/// The plain string literals of `text` (no escape, no quote, no
/// formatting directive, a letter in each), each once: the real words and
/// phrases a string site's window is made of.
pub(crate) fn strings(lang: Lang, text: &str) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        for (part, s, e) in parts(lang, line) {
            if part != Part::Str || e < s + 2 {
                continue;
            }
            let inner = &line[s + 1..e - 1];
            let plain = !inner.is_empty()
                && inner.len() <= 80
                && inner.chars().any(char::is_alphabetic)
                && !inner.contains(['\\', '"', '\'', '`', '%', '{', '}', '$']);
            if plain && seen.insert(inner.to_owned()) {
                out.push(inner.to_owned());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNITTEST: &str = "import unittest\n\nfrom calc.ops import divide\n\n\nclass TestDivide(unittest.TestCase):\n    def setUp(self):\n        self.x = 1\n\n    def test_divide(self):\n        self.assertEqual(divide(6, 3), 2)\n\n    @unittest.skipIf(\n        False,\n        \"never\",\n    )\n    def test_divide_neg(self):\n        \"\"\"Docstring.\"\"\"\n        self.assertEqual(divide(-6, 3), -2)\n        self.assertTrue(True)\n\n\nclass Helper:\n    pass\n\n\ndef test_plain():\n    assert divide(4, 2) == 2\n    assert divide(4, 2) == 2.0\n";

    #[test]
    fn python_tests_are_found_with_their_decorators_classes_and_expected_literals() {
        let b = blocks(Lang::Unittest, UNITTEST);
        let names: Vec<&str> = b.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["test_divide", "test_divide_neg", "test_plain"]);
        let lines: Vec<&str> = UNITTEST.lines().collect();
        assert_eq!(b[0].class.as_deref(), Some("TestDivide"));
        assert_eq!(b[0].container, b[1].container);
        assert_eq!(b[2].class, None);
        assert!(
            lines[b[1].start]
                .trim_start()
                .starts_with("@unittest.skipIf(")
        );
        assert!(lines[b[1].end - 1].contains("assertTrue"));
        assert_eq!(
            &lines[b[1].def_line][b[1].name_col..b[1].name_col + 15],
            "test_divide_neg"
        );
        assert_eq!(b[0].sites.len(), 1);
        assert_eq!(b[0].sites[0].text, "2");
        assert_eq!(b[1].sites[0].text, "-2");
        // `2.0` is a float: not a site.
        assert_eq!(b[2].sites.len(), 1);
        let s = &b[2].sites[0];
        assert_eq!(&lines[b[2].start + s.line][s.col..s.col + 1], "2");
    }

    fn windows_of(lang: Lang, text: &str) -> Vec<Vec<String>> {
        blocks(lang, text)
            .iter()
            .map(|b| b.windows.iter().map(|s| s.text.clone()).collect())
            .collect()
    }

    #[test]
    fn a_window_site_takes_every_place_that_writes_its_value_with_it() {
        let go = "package calc\n\nimport \"testing\"\n\nfunc TestClamp(t *testing.T) {\n\tgot := Clamp(-5)\n\twant := 0 // clamped to 0\n\tif got != want {\n\t\tt.Fatalf(\"Clamp(-5) = %d, want 0\", got)\n\t}\n}\n";
        let b = blocks(Lang::Go, go);
        let site = &b[0].windows[0];
        assert_eq!(site.text, "0");
        let lines: Vec<&str> = go.lines().collect();
        let at: Vec<(&str, bool)> = site
            .also
            .iter()
            .map(|a| {
                let line = lines[b[0].start + a.line];
                (&line[a.col - 5..a.col + a.text.len()], a.body)
            })
            .collect();
        assert_eq!(at, [("d to 0", false), ("want 0", false)]);
        // A string site: its body in the message, its literal at another
        // assertion's expected place.
        let py = "def test_div():\n    with_msg = 1\n    assert err(1) == \"division by zero\", \"want division by zero\"\n    assert err(2) == \"division by zero\"\n";
        let b = blocks(Lang::Pytest, py);
        assert_eq!(
            b[0].windows.len(),
            1,
            "one site for the value written twice"
        );
        let texts: Vec<(&str, bool)> = b[0].windows[0]
            .also
            .iter()
            .map(|a| (a.text.as_str(), a.body))
            .collect();
        assert_eq!(
            texts,
            [("division by zero", true), ("\"division by zero\"", false)]
        );
    }

    #[test]
    fn a_value_that_is_an_input_or_echoes_one_or_is_computed_from_them_is_no_window() {
        // An input of the call under test.
        let go = "package calc\n\nimport \"testing\"\n\nfunc TestDiv(t *testing.T) {\n\tif got := Div(0, 5); got != 0 {\n\t\tt.Fatal(got)\n\t}\n}\n";
        assert_eq!(windows_of(Lang::Go, go), [Vec::<String>::new()]);
        assert_eq!(
            blocks(Lang::Go, go)[0].sites.len(),
            1,
            "still a site to seal"
        );
        // An echo of an input string.
        let py = "def test_parse():\n    assert parse(\"3 * 4\") == [3, \"*\", 4]\n\n\ndef test_word():\n    assert first(\"one two\") == \"one\"\n";
        assert_eq!(
            windows_of(Lang::Pytest, py),
            [Vec::<String>::new(), Vec::new()]
        );
        // A simple function of the inputs: a sum, a difference, a
        // product, a length; a value none of them gives stays.
        let ut = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(ops.add(20, 22), 42)\n\n    def test_b(self):\n        self.assertEqual(ops.sub(50, 8), 42)\n\n    def test_c(self):\n        self.assertEqual(ops.mul(40, 3), 120)\n\n    def test_d(self):\n        self.assertEqual(size(\"abcd\"), 4)\n\n    def test_e(self):\n        self.assertEqual(ops.clamp(-5), 0, \"clamp(-5) is 0\")\n\n    def test_f(self):\n        self.assertEqual(ops.sub(5, 3), 2)\n";
        let w = windows_of(Lang::Unittest, ut);
        assert_eq!(w[..4], [[""; 0]; 4].map(|_| Vec::<String>::new()));
        assert_eq!(w[4], ["0"]);
        // Small inputs crowd a small value with candidates (-5, -3, -2, 2,
        // 3, 4, 5, 6, 8, 9, 10, 15 around 2): a bit lost, the window kept.
        assert_eq!(w[5], ["2"]);
        let b = blocks(Lang::Unittest, ut);
        assert_eq!(b[4].windows[0].also.len(), 1, "the message's 0");
    }

    #[test]
    fn the_string_pool_is_the_plain_phrases_of_a_file() {
        let js = "it('adds (a, b)', () => {\n  assert.strictEqual(f('x\\n'), `t${1}`); // 'no'\n  assert.equal(g(\"%d\"), \"word\");\n});\n";
        assert_eq!(strings(Lang::Js, js), ["adds (a, b)", "word"]);
    }

    #[test]
    fn go_and_rust_tests_run_to_their_matching_brace() {
        let go = "package calc\n\nimport \"testing\"\n\nfunc helper() int { return 1 }\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(1, 2); got != 3 {\n\t\tt.Fatalf(\"got %d {\", got)\n\t}\n\twant := 7\n\t_ = want\n}\n\nfunc TestMain(m *testing.M) {}\n";
        let b = blocks(Lang::Go, go);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].name, "TestAdd");
        let lines: Vec<&str> = go.lines().collect();
        assert_eq!(lines[b[0].end - 1], "}");
        let texts: Vec<&str> = b[0].sites.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["3", "7"]);
        let helper = "package g\n\nimport \"testing\"\n\nfunc TestClamp(t *testing.T) {\n\tcheck(t, \"Clamp(-5, 0, 10)\", Clamp(-5, 0, 10), 0)\n\tassert.Equal(t, 4, Clamp(4, 0, 10))\n\tcheck(t, \"half\", Clamp(-1, -0.5, 0.5), -0.5)\n}\n";
        let b = blocks(Lang::Go, helper);
        let texts: Vec<&str> = b[0].sites.iter().map(|s| s.text.as_str()).collect();
        // A float expected: no site (the string is not what it expects).
        assert_eq!(texts, ["0", "4"]);
        let rust = "fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn adds() {\n        assert_eq!(add(1, 2), 3u32, \"sum {}\", '}');\n    }\n\n    #[test]\n    #[should_panic]\n    fn panics() {\n        assert_eq!(add(1, 2), 4);\n    }\n}\n";
        let b = blocks(Lang::Rust, rust);
        let names: Vec<&str> = b.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["adds"]);
        assert_eq!(b[0].sites[0].text, "3");
        assert_ne!(b[0].container, 0, "inside mod tests");
        let lines: Vec<&str> = rust.lines().collect();
        assert_eq!(lines[b[0].start].trim(), "#[test]");
        assert_eq!(lines[b[0].end - 1].trim(), "}");
    }

    #[test]
    fn javascript_tests_are_their_it_calls_titled_with_expected_arguments() {
        let js = "const { describe, it } = require('node:test');\nconst assert = require('node:assert');\n\ndescribe('calc', () => {\n  it('adds (a, b)', () => {\n    assert.strictEqual(add(2, 3), 5); // not ')'\n  });\n\n  describe('div', () => {\n    it(\"divides\", () => {\n      expect(div(7, 2)).toBe(3);\n      assert.deepStrictEqual(parts('a,b'), ['a', 'b']);\n    });\n  });\n});\n\ntest(`top ${level}`, () => {});\ntest('is top', () => {\n  assert.equal(f(), 'word');\n});\n";
        let b = blocks(Lang::Js, js);
        let names: Vec<&str> = b.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["adds (a, b)", "divides", "is top"]);
        let lines: Vec<&str> = js.lines().collect();
        assert_eq!(&lines[b[0].def_line][b[0].name_col..][..5], "adds ");
        assert_eq!(lines[b[0].end - 1], "  });");
        // Containers: the describe around each (its line), the file.
        assert_eq!(b.iter().map(|b| b.container).collect::<Vec<_>>(), [3, 8, 0]);
        let texts = |b: &Block| b.sites.iter().map(|s| s.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&b[0]), ["5"]);
        assert_eq!(texts(&b[1]), ["3", "'a'"]);
        assert_eq!(texts(&b[2]), ["'word'"]);
        // A string of other scripts before the literal: offsets are bytes.
        let wide = "it('reads ½', () => {\n  assert.strictEqual(parse('½ → x'), 12);\n});\n";
        let b = blocks(Lang::Js, wide);
        assert_eq!(b[0].name, "reads ½");
        let site = &b[0].sites[0];
        assert_eq!(site.text, "12");
        assert_eq!(&wide.lines().nth(site.line).unwrap()[site.col..][..2], "12");
    }
}
