//! Where a test's assertion can be sealed: an assertion on one line that
//! compares a computed value with a literal read whole, whose value no
//! string or comment elsewhere in the test spells.

use crate::model::canary::block::SealSite;
use crate::model::canary::lex::top_level_args;
use crate::model::canary::lit::Lit;
use crate::model::canary::shape::Lang;
use crate::model::canary::source::{Part, parts};

/// The sealable assertions of a block's lines (`def_at`: the line of its
/// `def`/`fn`/`it(`; sites are after it, or on it for a one-line `it`).
pub(crate) fn sites(lang: Lang, block: &[&str], def_at: usize) -> Vec<SealSite> {
    let code: Vec<String> = block.iter().map(|l| code_of(lang, l)).collect();
    let mut out = Vec::new();
    for (n, line) in block.iter().enumerate().skip(def_at) {
        if n == def_at && lang != Lang::Js {
            continue;
        }
        let Some((actual, expected)) = site_in(lang, &code[n]) else {
            continue;
        };
        // A comment after the assertion is not part of its expected side.
        let expected = (expected.0, expected.1.min(comment_start(lang, line)));
        let (actual, expected) = (trim(line, actual), trim(line, expected));
        if actual.0 >= actual.1 {
            continue;
        }
        let text = &line[expected.0..expected.1];
        let Some(value) = Lit::parse(lang, text) else {
            continue;
        };
        let Some(scrub) = spelled_elsewhere(lang, block, n, expected, &value) else {
            continue;
        };
        out.push(SealSite {
            line: n,
            actual,
            expected,
            text: text.to_owned(),
            scrub,
        });
    }
    out
}

/// A line's code: strings and comments blanked, offsets kept.
fn code_of(lang: Lang, line: &str) -> String {
    let mut out = line.as_bytes().to_vec();
    for (part, from, to) in parts(lang, line) {
        if part != Part::Code {
            out[from..to].fill(b' ');
        }
    }
    // Only whole characters were blanked: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| " ".repeat(line.len()))
}

/// Where a line's trailing comment starts (its length when it has none).
fn comment_start(lang: Lang, line: &str) -> usize {
    parts(lang, line)
        .iter()
        .find(|(part, _, _)| *part == Part::Comment)
        .map_or(line.len(), |(_, from, _)| *from)
}

fn trim(line: &str, (s, e): (usize, usize)) -> (usize, usize) {
    let part = &line[s..e];
    let lead = part.len() - part.trim_start().len();
    (s + lead, s + part.trim_end().len())
}

/// Where a line of code holds a sealable assertion: the byte ranges of its
/// computed and expected sides.
type Sides = ((usize, usize), (usize, usize));

fn site_in(lang: Lang, code: &str) -> Option<Sides> {
    match lang {
        Lang::Unittest | Lang::Pytest => python_site(code),
        Lang::Js => js_site(code),
        Lang::Go => go_site(code),
        Lang::Rust => {
            let at = code.find("assert_eq!(")? + "assert_eq!(".len();
            let args = top_level_args(code, at)?;
            (args.len() >= 2 && statement_ends(code, args.last()?.1)).then(|| (args[0], args[1]))
        }
    }
}

/// Whether nothing but the call's close (and `;`) follows `at`, the end
/// of its last argument.
fn statement_ends(code: &str, at: usize) -> bool {
    let rest = code[at..].trim();
    matches!(rest, ")" | ");" | ")," | "))" | "));")
}

fn python_site(code: &str) -> Option<Sides> {
    for m in [".assertEqual(", ".assertEquals("] {
        if let Some(p) = code.find(m) {
            let args = top_level_args(code, p + m.len())?;
            let ok = (2..=3).contains(&args.len())
                && statement_ends(code, args.last()?.1)
                && code[..p].trim() == "self";
            return ok.then(|| (args[0], args[1]));
        }
    }
    let t = code.trim_start();
    let head = t.strip_prefix("assert ")?;
    let from = code.len() - head.len();
    let parts = top_level_split(code, from, code.len(), ",");
    let end = parts.first()?.1;
    if bracket_open(code) {
        return None;
    }
    let eqs = top_level_split(code, from, end, "==");
    let [(a0, a1), (e0, e1)] = eqs.as_slice() else {
        return None;
    };
    let actual = &code[*a0..*a1];
    let plain = !actual.split_whitespace().any(|w| {
        matches!(
            w,
            "not" | "and" | "or" | "in" | "is" | "if" | "else" | "lambda"
        )
    }) && !["<", ">", "!="].iter().any(|op| actual.contains(op));
    plain.then_some(((*a0, *a1), (*e0, *e1)))
}

fn js_site(code: &str) -> Option<Sides> {
    for m in ["assert.strictEqual(", "assert.deepStrictEqual("] {
        if let Some(p) = code.find(m) {
            let args = top_level_args(code, p + m.len())?;
            let ok = (2..=3).contains(&args.len()) && statement_ends(code, args.last()?.1);
            return ok.then(|| (args[0], args[1]));
        }
    }
    for m in [".toBe(", ".toEqual(", ".toStrictEqual("] {
        if let Some(p) = code.find(m) {
            let args = top_level_args(code, p + m.len())?;
            if args.len() != 1 || !statement_ends(code, args[0].1) {
                return None;
            }
            // `expect(A)` right before the matcher.
            let close = p.checked_sub(1)?;
            (code.as_bytes()[close] == b')').then_some(())?;
            let open = matching_open(code, close)?;
            code[..open].trim_end().ends_with("expect").then_some(())?;
            return Some(((open + 1, close), args[0]));
        }
    }
    None
}

fn go_site(code: &str) -> Option<Sides> {
    let t = code.trim_start();
    if let Some(head) = t.strip_prefix("if ") {
        let from = code.len() - head.len();
        let brace = code.rfind(" {")?;
        if code[brace + 2..].trim() != "" {
            return None;
        }
        // `if v := f(); v != E {`: the condition after the `;`.
        let from = top_level_split(code, from, brace, ";").last()?.0;
        let cond = &code[from..brace];
        if cond.contains("&&") || cond.contains("||") || cond.contains("==") {
            return None;
        }
        let sides = top_level_split(code, from, brace, "!=");
        let [a, e] = sides.as_slice() else {
            return None;
        };
        let actual = &code[a.0..a.1];
        if actual.contains('<') || actual.contains('>') || actual.trim_start().starts_with('!') {
            return None;
        }
        return Some((*a, *e));
    }
    for m in ["assert.Equal(", "require.Equal("] {
        if let Some(p) = code.find(m) {
            let args = top_level_args(code, p + m.len())?;
            let ok = args.len() >= 3 && statement_ends(code, args.last()?.1);
            return ok.then(|| (args[2], args[1]));
        }
    }
    None
}

/// `code[from..to]` split at each top-level `sep` (outside brackets).
fn top_level_split(code: &str, from: usize, to: usize, sep: &str) -> Vec<(usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = from;
    let mut k = from;
    while k < to {
        match b[k] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ if depth == 0 && code[k..to].starts_with(sep) => {
                // `==` is not part of `!=`, `<=`, `>=` or `===`.
                let prev = k.checked_sub(1).map(|p| b[p]);
                let next = b.get(k + sep.len()).copied();
                let part_of_other = sep == "=="
                    && (matches!(prev, Some(b'!' | b'<' | b'>' | b'=')) || next == Some(b'='));
                if !part_of_other {
                    out.push((start, k));
                    k += sep.len();
                    start = k;
                    continue;
                }
            }
            _ => {}
        }
        k += 1;
    }
    out.push((start, to));
    out
}

fn bracket_open(code: &str) -> bool {
    let mut d = 0i32;
    for c in code.bytes() {
        match c {
            b'(' | b'[' | b'{' => d += 1,
            b')' | b']' | b'}' => d -= 1,
            _ => {}
        }
    }
    d != 0 || code.trim_end().ends_with('\\')
}

fn matching_open(code: &str, close: usize) -> Option<usize> {
    let b = code.as_bytes();
    let mut d = 0;
    for k in (0..=close).rev() {
        match b[k] {
            b')' => d += 1,
            b'(' => {
                d -= 1;
                if d == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Where a scalar of `value` stands in a string or comment of the test
/// outside the site's own literal: in a message (a failure message's
/// string, a comment) each place is scrubbed with the seal; anywhere else
/// (an input) the value is the test's own and the site is not sealed
/// (`None`).
fn spelled_elsewhere(
    lang: Lang,
    block: &[&str],
    at: usize,
    expected: (usize, usize),
    value: &Lit,
) -> Option<Vec<(usize, usize, usize)>> {
    let scalars: Vec<String> = value
        .scalars()
        .into_iter()
        .filter(|s| !s.trim().is_empty())
        .collect();
    let mut scrub = Vec::new();
    for (n, line) in block.iter().enumerate() {
        let code = code_of(lang, line);
        let messages = message_ranges(lang, &code);
        let comment = comment_start(lang, line);
        for s in &scalars {
            for (i, j) in token_places(line, s) {
                // Only what the code view blanked: strings and comments.
                let blanked = code.as_bytes()[i..j].iter().all(|c| *c == b' ');
                let own = n == at && i < expected.1 && j > expected.0;
                if !blanked || own {
                    continue;
                }
                let in_message = i >= comment || messages.iter().any(|(a, b)| i >= *a && j <= *b);
                if !in_message {
                    return None;
                }
                scrub.push((n, i, j));
            }
        }
    }
    scrub.sort_unstable();
    scrub.dedup();
    Some(scrub)
}

/// The byte ranges of a line's code that are failure messages: what a
/// test prints when it fails, never what it computes.
fn message_ranges(lang: Lang, code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let args_from = |out: &mut Vec<(usize, usize)>, at: usize, skip: usize| {
        let end =
            top_level_args(code, at).map_or(code.len(), |a| a.last().map_or(code.len(), |l| l.1));
        match top_level_args(code, at) {
            Some(args) => {
                if let (Some(first), Some(last)) = (args.get(skip), args.last()) {
                    out.push((first.0, last.1));
                }
            }
            None if skip == 0 => out.push((at, end)),
            None => {}
        }
    };
    let calls: &[(&str, usize)] = match lang {
        Lang::Unittest | Lang::Pytest => &[
            ("self.assertEqual(", 2),
            ("self.assertEquals(", 2),
            ("self.assertTrue(", 1),
            ("self.assertFalse(", 1),
            ("self.fail(", 0),
            ("print(", 0),
        ],
        Lang::Js => &[
            ("assert.strictEqual(", 2),
            ("assert.deepStrictEqual(", 2),
            ("assert.equal(", 2),
            ("assert.ok(", 1),
            ("assert(", 1),
            ("new Error(", 0),
            ("console.log(", 0),
        ],
        Lang::Go => &[
            (".Fatalf(", 0),
            (".Errorf(", 0),
            (".Fatal(", 0),
            (".Error(", 0),
            (".Logf(", 0),
            (".Log(", 0),
            (".Skipf(", 0),
            ("assert.Equal(", 3),
            ("require.Equal(", 3),
        ],
        Lang::Rust => &[
            ("assert_eq!(", 2),
            ("assert_ne!(", 2),
            ("assert!(", 1),
            ("panic!(", 0),
            ("println!(", 0),
            ("eprintln!(", 0),
        ],
    };
    for (call, skip) in calls {
        let mut from = 0;
        while let Some(p) = code[from..].find(call).map(|p| from + p) {
            args_from(&mut out, p + call.len(), *skip);
            from = p + call.len();
        }
    }
    // Python's `assert X, MSG`.
    if matches!(lang, Lang::Unittest | Lang::Pytest)
        && let Some(head) = code.trim_start().strip_prefix("assert ")
    {
        let from = code.len() - head.len();
        let parts = top_level_split(code, from, code.len(), ",");
        if parts.len() > 1 {
            out.push((parts[1].0, code.len()));
        }
    }
    out
}

/// The places `s` stands in `text` as a whole token.
fn token_places(text: &str, s: &str) -> Vec<(usize, usize)> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(s).map(|i| from + i) {
        let before = text[..i].chars().next_back();
        let after = text[i + s.len()..].chars().next();
        let edges = s.starts_with(|c: char| c.is_alphanumeric()) && word(before)
            || s.ends_with(|c: char| c.is_alphanumeric()) && word(after);
        if !edges {
            out.push((i, i + s.len()));
        }
        from = i + s.len().max(1);
    }
    out
}
