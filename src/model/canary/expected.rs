//! Where the expected literal of an assertion stands: the expected side of
//! each language's assertion forms, and the first integer or plain string
//! literal in it.

use super::lex::{is_ident, top_level_args};

/// The first integer literal of `code[s..e]` standing alone (not part of
/// a name or a float).
pub(super) fn int_in(code: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let b = code.as_bytes();
    let mut k = s;
    while k < e {
        let starts =
            b[k].is_ascii_digit() && (k == 0 || !(is_ident(b[k - 1] as char) || b[k - 1] == b'.'));
        if starts {
            let at = if k > 0 && b[k - 1] == b'-' { k - 1 } else { k };
            if let Some((col, len)) = literal_at(code, at) {
                let next = b.get(col + len).copied().unwrap_or(b' ');
                let suffix = SUFFIXES.iter().any(|x| code[col + len..].starts_with(x));
                if next != b'.' && (!is_ident(next as char) || suffix) && col + len <= e {
                    return Some((col, len));
                }
            }
            while k < e && b[k].is_ascii_alphanumeric() {
                k += 1;
            }
        }
        k += 1;
    }
    None
}

/// The first plain string literal of `raw[s..e]` (no prefix, no escape),
/// quotes included, holding a letter or digit a mutant can change.
pub(super) fn string_in(
    raw: &str,
    code: &str,
    s: usize,
    e: usize,
    quotes: &[u8],
) -> Option<(usize, usize)> {
    let b = raw.as_bytes();
    let mut k = s;
    while k < e.min(b.len()) {
        if quotes.contains(&b[k]) && code.as_bytes().get(k) == Some(&b' ') {
            let q = b[k];
            let close = raw[k + 1..].find(q as char)? + k + 1;
            let body = &raw[k + 1..close];
            let prefixed = k > 0 && is_ident(b[k - 1] as char);
            if !prefixed
                && !body.contains('\\')
                && body.is_ascii()
                && body.bytes().any(|c| c.is_ascii_alphanumeric())
            {
                return Some((k, close + 1 - k));
            }
            k = close + 1;
            continue;
        }
        k += 1;
    }
    None
}

/// An integer literal standing alone in `s[at..]` (after spaces): its
/// offset and length. A float, an identifier or an expression is none.
fn literal_at(s: &str, at: usize) -> Option<(usize, usize)> {
    let rest = &s[at..];
    let start = at + (rest.len() - rest.trim_start().len());
    let b = s.as_bytes();
    let mut k = start;
    if b.get(k) == Some(&b'-') {
        k += 1;
    }
    let digits = k;
    while b.get(k).is_some_and(u8::is_ascii_digit) {
        k += 1;
    }
    if k == digits || k - digits > 9 {
        return None;
    }
    // Leading zeros read as other bases or are errors.
    if b[digits] == b'0' && k - digits > 1 {
        return None;
    }
    Some((start, k - start))
}

/// Rust's integer suffixes, which stay where they are.
const SUFFIXES: &[&str] = &[
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
];

/// The byte range of the expected value of a Python assertion: the last
/// argument of `assertEqual`, the right of `==` in an `assert`.
pub(super) fn python_expected(code: &str) -> Option<(usize, usize)> {
    let t = code.trim_start();
    if let Some(at) = [
        "assertEqual(",
        "assertEquals(",
        "assertListEqual(",
        "assertDictEqual(",
    ]
    .iter()
    .find_map(|m| code.find(&format!(".{m}")).map(|p| p + m.len() + 1))
    {
        // A third argument is the message.
        let args = top_level_args(code, at)?;
        return matches!(args.len(), 2 | 3).then(|| args[1]);
    }
    if t.starts_with("assert ") {
        let eq = code.find(" == ")?;
        let end = code[eq..].find(',').map_or(code.len(), |c| eq + c);
        return Some((eq + 4, end));
    }
    None
}

/// Go: what `want :=` is given, or the right of `!=` in an `if`.
pub(super) fn go_expected(code: &str) -> Option<(usize, usize)> {
    let t = code.trim_start();
    for m in [
        "want := ",
        "want = ",
        "expected := ",
        "expected = ",
        "exp := ",
    ] {
        if let Some(rest) = t.strip_prefix(m) {
            return Some((code.len() - rest.len(), code.len()));
        }
    }
    if t.starts_with("if ") {
        let op = code.find(" != ")?;
        let end = code[op..].find('{').map(|b| op + b)?;
        return Some((op + 4, end));
    }
    // A helper given the test: `check(t, what, got, want)` expects its
    // last argument, testify's `assert.Equal(t, want, got)` its second.
    let callee: String = t
        .chars()
        .take_while(|c| is_ident(*c) || *c == '.')
        .collect();
    let rest = &t[callee.len()..];
    if !callee.is_empty() && rest.starts_with("(t, ") {
        let at = code.len() - rest.len() + 1;
        let args = top_level_args(code, at)?;
        let testify = callee.ends_with(".Equal") || callee.ends_with(".EqualValues");
        return if testify {
            args.get(1).copied()
        } else {
            args.last().copied()
        };
    }
    None
}

/// Rust: the second argument of `assert_eq!`.
pub(super) fn rust_expected(code: &str) -> Option<(usize, usize)> {
    let at = code.find("assert_eq!(")? + "assert_eq!(".len();
    let args = top_level_args(code, at)?;
    args.get(1).copied()
}

/// JavaScript: the expected argument of node:assert's `strictEqual`,
/// `equal`, `deepStrictEqual`, `deepEqual` (the second), or of jest's and
/// vitest's `toBe`, `toEqual`, `toStrictEqual` (the only one).
pub(super) fn js_expected(code: &str) -> Option<(usize, usize)> {
    for m in ["strictEqual(", "equal(", "deepStrictEqual(", "deepEqual("] {
        if let Some(p) = code.find(&format!("assert.{m}")) {
            let args = top_level_args(code, p + "assert.".len() + m.len())?;
            return (args.len() >= 2).then(|| args[1]);
        }
    }
    for m in [".toBe(", ".toEqual(", ".toStrictEqual("] {
        if let Some(p) = code.find(m) {
            let args = top_level_args(code, p + m.len())?;
            return (args.len() == 1).then(|| args[0]);
        }
    }
    None
}
